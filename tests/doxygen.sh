#!/usr/bin/env bash
# Builds the API reference (docs/api.md) and fails on any doxygen warning,
# such as a public symbol without a doc comment. Installs doxygen from
# Debian's packages when it is missing, configures ${CGR_BUILD_DIR:-build}
# when it is not yet (extra arguments go to `meson setup` then), and runs
# its `docs` target; the HTML lands in BUILDDIR/docs/api/html. CI runs it
# (.ci/run).
set -eu
cd "$(dirname "$0")/.."
builddir=${CGR_BUILD_DIR:-build}

source tests/meson_tool.sh
if ! command -v doxygen >/dev/null 2>&1; then
    cgr_apt_install doxygen
fi
cgr_need_build_tools
echo "doxygen $(doxygen --version)"

# The docs target exists only when setup found doxygen: a build directory
# configured before doxygen was installed is configured again.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
setup=()
if [ ! -f "$builddir/meson-private/coredata.dat" ]; then
    setup=(meson setup "$builddir" "$@")
elif [ ! -f "$builddir/docs/Doxyfile" ]; then
    setup=(meson setup --reconfigure "$builddir" "$@")
fi
if [ ${#setup[@]} -gt 0 ] && ! "${setup[@]}" >"$log" 2>&1; then
    cat "$log" >&2
    echo "meson setup $builddir failed (its log: $builddir/meson-logs/meson-log.txt)" >&2
    exit 1
fi
if [ ! -f "$builddir/docs/Doxyfile" ]; then
    echo "meson did not find doxygen, so $builddir has no docs target" >&2
    exit 1
fi

# docs/doxygen.py fails on any warning and on an undocumented enumerator.
if ! ninja -C "$builddir" docs >"$log" 2>&1; then
    cat "$log" >&2
    echo "the API reference has warnings (above); every public symbol needs a doc comment" >&2
    exit 1
fi
echo "API reference: $builddir/docs/api/html/index.html, no warnings"
