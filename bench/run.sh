#!/usr/bin/env bash
# README's main command: installs meson if it is missing (Debian packages),
# builds cgr and runs cgr-bench's default suite on GPU 0. Extra arguments go
# to cgr-bench (for example --json bench.json).
set -eu
cd "$(dirname "$0")/.."
builddir=${CGR_BUILD_DIR:-build}

if ! command -v meson >/dev/null 2>&1 || ! command -v ninja >/dev/null 2>&1; then
    echo "bench/run.sh: installing meson and ninja from Debian's packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq meson ninja-build pkg-config >/dev/null
fi
if [ -d "$builddir" ]; then
    meson setup --reconfigure "$builddir" >/dev/null
else
    meson setup "$builddir" >/dev/null
fi
ninja -C "$builddir"
# The default suite, then W-chain again with programmatic dependent launch.
"$builddir/bench/cgr-bench" default --device 0 "$@"
exec "$builddir/bench/cgr-bench" chain --pdl --device 0
