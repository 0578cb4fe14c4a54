#!/usr/bin/env bash
# README's main command: installs meson if it is missing or too old
# (tests/meson_tool.sh), builds cgr and runs cgr-bench's default suite on
# GPU 0. Extra arguments go to cgr-bench (for example --json bench.json).
set -eu
cd "$(dirname "$0")/.."
builddir=${CGR_BUILD_DIR:-build}
bash tests/build.sh
# The default suite (W-chain plain and with programmatic dependent launch,
# then W-mlp and W-cnn at small batch, the modes of each comparison
# interleaved in rounds); it ends with the checks and one summary table.
exec "$builddir/bench/cgr-bench" default --device 0 "$@"
