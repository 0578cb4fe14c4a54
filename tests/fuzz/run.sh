#!/usr/bin/env bash
# Builds the libFuzzer targets in their own build dir and runs each one for
# the given seconds (default 15, so about 45 s for the three; CI uses that).
#   bash tests/fuzz/run.sh [seconds per target]
# The targets start from copies of tests/fuzz/corpus_*, so the repository's
# seeds are never modified; what a run adds is kept in $CGR_FUZZ_WORK
# (default: a fresh temporary dir). Prints one summary line per target and
# exits non-zero when any target finds a crash, leak or timeout; the input
# that caused it is saved under build-fuzz/fuzz-artifacts/<time>/.
# CGR_FUZZ_BUILD_DIR names another build dir (relative to the repository
# root, or absolute) in place of build-fuzz.
set -eu
cd "$(dirname "$0")/../.."
secs=${1:-15}
builddir=${CGR_FUZZ_BUILD_DIR:-build-fuzz}
targets=(fuzz_validate fuzz_planner fuzz_srcline)

case $secs in
    '' | *[!0-9]*) echo "usage: $0 [seconds per target]" >&2; exit 2 ;;
esac

# libFuzzer comes with clang; Debian puts its runtime in libclang-rt-*-dev.
fuzzer_works() {
    command -v clang >/dev/null 2>&1 || return 1
    local probe
    probe=$(mktemp -d)
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
        >"$probe/probe.c"
    clang -fsanitize=fuzzer,address,undefined "$probe/probe.c" -o "$probe/probe" >/dev/null 2>&1
    local rc=$?
    rm -rf "$probe"
    return $rc
}
source tests/meson_tool.sh
if ! fuzzer_works; then
    cgr_apt_install clang libclang-rt-dev
    fuzzer_works || { echo "clang cannot build a libFuzzer target" >&2; exit 1; }
fi
cgr_need_build_tools

# CC only matters on the first setup: meson keeps the compiler afterwards.
# Assertions stay compiled in (b_ndebug=false): an input that breaks one of
# cgr's internal invariants is a finding like a crash.
if [ -d "$builddir" ]; then
    meson configure "$builddir" -Dfuzz=true -Dtests=true -Dbench=false -Db_ndebug=false \
        -Dwerror=true >/dev/null
else
    CC=clang meson setup "$builddir" -Dfuzz=true -Dtests=true -Dbench=false -Db_ndebug=false \
        -Dwerror=true >/dev/null
fi
buildlog=$(mktemp)
if ! ninja -C "$builddir" "${targets[@]/#/tests/fuzz/}" >"$buildlog" 2>&1; then
    cat "$buildlog"
    rm -f "$buildlog"
    exit 1
fi
rm -f "$buildlog"

work=${CGR_FUZZ_WORK:-$(mktemp -d)}
# One folder per run, so a saved crash input is never overwritten or mixed up.
case $builddir in
    /*) artifacts=$builddir ;;
    *) artifacts=$PWD/$builddir ;;
esac
artifacts="$artifacts/fuzz-artifacts/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$work" "$artifacts"
failed=0
for t in "${targets[@]}"; do
    corpus="$work/corpus_${t#fuzz_}"
    mkdir -p "$corpus"
    cp -r "tests/fuzz/corpus_${t#fuzz_}/." "$corpus/"
    log="$work/$t.log"
    set +e
    # -timeout: an input running 10 s is a hang. ASan's leak check is on by
    # default; a leak, like a crash or a broken invariant, ends the run with
    # the input saved under $artifacts.
    "$builddir/tests/fuzz/$t" -max_total_time="$secs" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$artifacts/$t-" "$corpus" >"$log" 2>&1
    rc=$?
    set -e
    # libFuzzer's last status line: "#N DONE cov: C ft: F corp: K/Sb ...".
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
    field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' <<<"$last"; }
    final() { awk -v k="stat::$1:" '$1 == k { print $2 }' "$log"; }
    crashes=$(find "$artifacts" -name "$t-*" | wc -l)
    took=$(awk '/^Done [0-9]+ runs in/ { print $5 " s" }' "$log")
    echo "$t: $(final number_of_executed_units) runs in ${took:-less than $secs s, stopped}" \
        "($(final average_exec_per_sec)/s)," \
        "cov $(field cov:), ft $(field ft:), corpus $(field corp: | cut -d/ -f1) inputs," \
        "$crashes crashes"
    if [ "$rc" -ne 0 ]; then
        failed=1
        echo "--- $t exited $rc; the end of its log ($log):"
        grep -v '^#[0-9]' "$log" | tail -n 40
        echo "--- saved input(s): $(find "$artifacts" -name "$t-*" | tr '\n' ' ')"
    fi
done
rmdir "$artifacts" 2>/dev/null || true
# Keep a failed run's logs and corpora for the investigation.
if [ -z "${CGR_FUZZ_WORK:-}" ] && [ "$failed" -eq 0 ]; then
    rm -rf "$work"
fi
exit $failed
