#!/usr/bin/env bash
# README's main command: installs meson if it is missing (Debian packages),
# builds cgr and runs cgr-bench's default suite on GPU 0. Extra arguments go
# to cgr-bench (for example --json bench.json).
set -eu
cd "$(dirname "$0")/.."
builddir=${CGR_BUILD_DIR:-build}
bash tests/build.sh
# The default suite (W-chain, staging, W-mlp and W-cnn at small batch); it
# ends with one summary table. `cgr-bench chain --pdl` repeats W-chain with
# programmatic dependent launch.
exec "$builddir/bench/cgr-bench" default --device 0 "$@"
