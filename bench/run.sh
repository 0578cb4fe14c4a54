#!/usr/bin/env bash
# README's main command: installs meson if it is missing (Debian packages),
# builds cgr and runs cgr-bench's default suite on GPU 0. Extra arguments go
# to cgr-bench (for example --json bench.json).
set -eu
cd "$(dirname "$0")/.."
builddir=${CGR_BUILD_DIR:-build}
bash tests/build.sh
# The default suite, then W-chain again with programmatic dependent launch.
"$builddir/bench/cgr-bench" default --device 0 "$@"
exec "$builddir/bench/cgr-bench" chain --pdl --device 0
