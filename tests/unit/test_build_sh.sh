#!/bin/bash
# tests/build.sh against a fake meson and ninja that record their calls. A
# directory that is not a build tree (none yet, or one whose first setup
# failed) is set up from the start; a build tree is set up again, and the
# options given reach `meson configure` first, since meson 1.0's `setup
# --reconfigure` keeps the compiler arguments of the first setup; a failed
# configure stops the script before setup.
#   test_build_sh.sh PATH_TO_BUILD_SH
script=$1
if [ -x "$(dirname "$script")/../.tools/meson/bin/meson" ]; then
    echo "skipped: the checkout's .tools/meson comes first on PATH, not the fake meson"
    exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
cat >"$tmp/bin/meson" <<'FAKE'
#!/bin/sh
if [ "$1" = --version ]; then echo 1.3.0; exit 0; fi
echo "meson $*" >>"$CALLS"
if [ "$1" = configure ] && [ -n "$FAIL_CONFIGURE" ]; then exit 1; fi
exit 0
FAKE
printf '#!/bin/sh\necho "ninja $*" >>"$CALLS"\n' >"$tmp/bin/ninja"
printf '#!/bin/sh\n' >"$tmp/bin/nvcc"
chmod +x "$tmp/bin/meson" "$tmp/bin/ninja" "$tmp/bin/nvcc"
export CALLS=$tmp/calls
b=$tmp/build
# The fakes first; python3 (which judges meson's version) from wherever it is.
path="$tmp/bin:$(dirname "$(command -v python3)"):/usr/bin:/bin"
failed=0

# expect NAME STATUS CALLS [ARG...]: run build.sh with the ARGs on $b as it
# is now and compare its exit status and the calls (one a line) it made.
expect() {
    local name=$1 want_status=$2 want_calls=$3 status
    shift 3
    : >"$CALLS"
    PATH=$path CGR_BUILD_DIR=$b bash "$script" "$@" >"$tmp/out" 2>&1
    status=$?
    if [ "$status" != "$want_status" ] || [ "$(cat "$CALLS")" != "$want_calls" ]; then
        echo "$name: exit status $status (expected $want_status), calls:"
        sed 's/^/  /' "$CALLS"
        echo "expected:"
        printf '%s\n' "$want_calls" | sed 's/^/  /'
        echo "output:"
        sed 's/^/  /' "$tmp/out"
        failed=1
    fi
}

expect "no directory" 0 "meson setup $b -Dx=1
ninja -C $b" -Dx=1
mkdir -p "$b/meson-private"
expect "a directory whose first setup failed" 0 "meson setup $b -Dx=1
ninja -C $b" -Dx=1
touch "$b/meson-private/coredata.dat"
expect "a build tree, no options" 0 "meson setup --reconfigure $b
ninja -C $b"
expect "a build tree, new options" 0 "meson configure $b -Dc_args=-DX -Dx=2
meson setup --reconfigure $b -Dc_args=-DX -Dx=2
ninja -C $b" -Dc_args=-DX -Dx=2
FAIL_CONFIGURE=1 expect "a build tree whose configure fails" 1 "meson configure $b -Dx=3" -Dx=3
exit $failed
