#!/usr/bin/env bash
# README's test command: installs meson if it is missing or too old
# (tests/meson_tool.sh), builds cgr and runs the unit, headers, gpu and bench
# suites (bench: the benchmark's workloads, W-mlp and W-cnn, against float64
# references).
# Without a usable GPU the gpu and bench tests report "skipped" (exit 77);
# everything else must pass. The build treats warnings as errors
# (-Dwerror=true); extra arguments go to meson setup after it, so
# -Dwerror=false turns that off.
set -eu
cd "$(dirname "$0")/.."
builddir=${CGR_BUILD_DIR:-build}
bash tests/build.sh -Dwerror=true "$@"
source tests/meson_tool.sh # the meson that build.sh used

out=$(mktemp)
set +e
meson test -C "$builddir" --print-errorlogs --suite unit --suite headers --suite gpu --suite bench | tee "$out"
rc=${PIPESTATUS[0]}
set -e
# One plain summary line from meson's own counts.
count() { awk -v k="$1" '$1 == k { print $2 }' "$out" | tail -n 1; }
ok=$(count Ok:); fail=$(count Fail:); timeout=$(count Timeout:); skip=$(count Skipped:)
echo "${ok:-0} passed, $(( ${fail:-0} + ${timeout:-0} )) failed, ${skip:-0} skipped"
rm -f "$out"
exit $rc
