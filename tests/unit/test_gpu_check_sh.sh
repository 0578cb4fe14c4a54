#!/bin/bash
# tests/gpu-check.sh against fake nvidia-smi, meson and ninja, in a copy of
# the script in an empty tree: a run that ends prints the table and exits
# by its parts' results; a failed suite reads FAILED and exits 1; a run
# that `timeout` stops while a suite runs still archives its logs and
# prints the table, that suite STOPPED and the parts after it skipped, and
# exits 143. An unknown option is refused before anything runs.
#   test_gpu_check_sh.sh PATH_TO_GPU_CHECK_SH
script=$1
command -v timeout >/dev/null || { echo "skipped: no timeout(1)"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/tree/tests"
cp "$script" "$tmp/tree/tests/gpu-check.sh"
cat >"$tmp/bin/nvidia-smi" <<'FAKE'
#!/bin/sh
case "$*" in
*--query-gpu=name*) echo "name, driver_version"; echo "Fake GPU, 1.0" ;;
*compute_cap*) echo 9.0 ;;
esac
exit 0
FAKE
# meson test: FAKE_TEST=ok prints meson's counts, fail fails one, hang waits.
cat >"$tmp/bin/meson" <<'FAKE'
#!/bin/sh
[ "$1" = test ] || exit 0
case "$FAKE_TEST" in
ok) printf 'Ok:                 3\nFail:               0\n' ;;
fail) printf 'Ok:                 2\nFail:               1\n'; exit 1 ;;
hang) sleep 30 ;;
esac
exit 0
FAKE
printf '#!/bin/sh\nexit 0\n' >"$tmp/bin/ninja"
chmod +x "$tmp/bin/nvidia-smi" "$tmp/bin/meson" "$tmp/bin/ninja"
path="$tmp/bin:/usr/bin:/bin"
failed=0

# expect NAME STATUS FAKE_TEST LINE...: run the script (under `timeout 3`
# for hang) with its first pass only, then compare its exit status and
# look for each LINE in summary.txt; the logs' archive all.tgz must exist.
expect() {
    local name=$1 want_status=$2 mode=$3 status out=$tmp/out.$1
    shift 3
    rm -rf "$out"
    if [ "$mode" = hang ]; then
        (cd "$tmp" && OUT=$out FAKE_TEST=$mode PATH=$path timeout --preserve-status 3 \
            bash tree/tests/gpu-check.sh --no-extra --no-memcheck --no-bench >"$tmp/log" 2>&1)
    else
        (cd "$tmp" && OUT=$out FAKE_TEST=$mode PATH=$path \
            bash tree/tests/gpu-check.sh --no-extra --no-memcheck --no-bench >"$tmp/log" 2>&1)
    fi
    status=$?
    local bad=""
    [ "$status" = "$want_status" ] || bad="exit status $status (expected $want_status)"
    for line in "$@"; do
        grep -qxE "$line" "$out/summary.txt" 2>/dev/null || bad="$bad; no line /$line/"
    done
    tar -tzf "$out/all.tgz" >/dev/null 2>&1 || bad="$bad; no archive all.tgz"
    if [ -n "$bad" ]; then
        echo "$name: $bad; summary and output:"
        sed 's/^/  /' "$out/summary.txt" "$tmp/log" 2>/dev/null
        failed=1
    fi
}

expect passed 0 ok "build +ok *" "tests +ok +3 ok, 0 failed" "memcheck +skipped *"
expect failed 1 fail "build +ok *" "tests +FAILED +2 ok, 1 failed"
expect stopped 143 hang "stopped by SIGTERM during 'tests'" "build +ok *" "tests +STOPPED *" \
    "memcheck +skipped *"
# A mistyped option stops the script before it builds anything.
(cd "$tmp" && OUT=$tmp/out.typo PATH=$path bash tree/tests/gpu-check.sh --initchek \
    >"$tmp/log" 2>&1)
status=$?
if [ "$status" != 2 ] || ! grep -q "unknown option '--initchek'" "$tmp/log" ||
    [ -e "$tmp/out.typo/summary.txt" ]; then
    echo "typo: exit status $status (expected 2, the option named, no table); output:"
    sed 's/^/  /' "$tmp/log"
    failed=1
fi
[ $failed = 0 ] && echo "PASS: a finished, a failed and a stopped run each end with their table;" \
    "an unknown option is refused"
exit $failed
