#!/usr/bin/env bash
# Shared by README's two commands (tests/run.sh, bench/run.sh): installs meson
# and ninja when missing or too old (tests/meson_tool.sh), then configures and
# builds cgr in ${CGR_BUILD_DIR:-build}. Extra arguments go to `meson setup`.
# Setup prints meson's summary (CUDA, arch, cuDNN, NCCL, CUPTI found); when
# it fails, its whole output.
set -eu
cd "$(dirname "$0")/.."
builddir=${CGR_BUILD_DIR:-build}

source tests/meson_tool.sh
cgr_need_build_tools
log=$(mktemp)
trap 'rm -f "$log"' EXIT
reconfigure=()
# A directory that holds a build tree is set up again; any other (none, an
# empty one, one whose first setup failed) from the start.
if [ -f "$builddir/meson-private/coredata.dat" ]; then
    reconfigure=(--reconfigure)
    # `meson setup --reconfigure` (meson 1.0 at least) keeps the compiler
    # arguments (c_args and the like) of the directory's first setup;
    # `meson configure` applies every option given.
    if [ $# -gt 0 ] && ! meson configure "$builddir" "$@" >"$log" 2>&1; then
        cat "$log" >&2
        echo "meson configure $builddir failed" >&2
        exit 1
    fi
fi
if ! meson setup ${reconfigure[@]+"${reconfigure[@]}"} "$builddir" "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "meson setup $builddir failed (its log: $builddir/meson-logs/meson-log.txt)" >&2
    exit 1
fi
# The summary block: from "cgr <version>" up to the line meson ends setup with.
awk '/^cgr [0-9]/ { show = 1 } /^Found ninja/ { show = 0 } show' "$log"
# Meson's own warnings (its summary's "warnings as errors" line is not one).
grep -E '^(WARNING|DEPRECATION)' "$log" >&2 || true
ninja -C "$builddir"
