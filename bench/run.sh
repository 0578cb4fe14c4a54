#!/usr/bin/env bash
# README's main command: installs meson and ninja if they are missing or too
# old and builds cgr in ${CGR_BUILD_DIR:-build} (tests/build.sh), then runs
# cgr-bench's default suite on GPU 0. Extra arguments go to cgr-bench as
# options (for example --json bench.json, or --device 1, which overrides
# the 0); a suite name among them is refused, the suite being the default.
set -eu
cd "$(dirname "$0")/.."
builddir=${CGR_BUILD_DIR:-build}
bash tests/build.sh
# The default suite (W-chain plain and with programmatic dependent launch,
# then W-mlp and W-cnn at B = 1, the modes of each comparison interleaved in
# rounds); it ends with the checks and one summary table.
exec "$builddir/bench/cgr-bench" default --device 0 "$@"
