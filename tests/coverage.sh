#!/usr/bin/env bash
# Which lines of the library the tests run: builds the tree with gcc's
# --coverage in ${CGR_BUILD_DIR:-build-cov}, runs the named meson suites
# (default: unit, headers and gpu; the gpu suite skips itself without a
# GPU), then prints tests/coverage.py's table of the library's C files and
# writes the lines never run to $OUT/uncovered.txt ($OUT defaults to the
# build directory). Each call counts its own run: it removes the counts of
# earlier ones first.
#   tests/coverage.sh [SUITE...]
# The unit test `exports` is left out here: gcov's runtime adds symbols of
# its own to libcgr. A failing test is reported and the table still printed;
# the exit status is the suites' (1 when any test failed).
set -u
cd "$(dirname "$0")/.."
builddir=${CGR_BUILD_DIR:-build-cov}
out=${OUT:-$builddir}
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(unit headers gpu)

# nvcc links the CUDA programs, and meson's b_coverage does not reach it: -lgcov does.
# CGR_COVERAGE: forked W-ddp ranks write their counts before _exit (bench/ddp/boot.c).
CGR_BUILD_DIR=$builddir bash tests/build.sh -Dbuildtype=debug -Dc_args='--coverage -DCGR_COVERAGE' \
    -Dc_link_args=--coverage -Dcpp_link_args=--coverage -Dcuda_link_args=-lgcov || exit 1

mkdir -p "$out"
find "$builddir" -name '*.gcda' -delete
# The suites' tests, from meson's own record (--list prints differently from one meson to another).
tests=()
while read -r name; do
    tests+=("$name")
done < <(python3 - "$builddir/meson-info/intro-tests.json" "${suites[@]}" <<'PY'
import json, sys
wanted = set(sys.argv[2:])
for t in json.load(open(sys.argv[1])):
    if t["name"] != "exports" and any(s.split(":")[-1] in wanted for s in t["suite"]):
        print(t["name"])
PY
)
if [ ${#tests[@]} -eq 0 ]; then
    echo "coverage: no test in suites ${suites[*]}" >&2
    exit 1
fi
meson test -C "$builddir" --print-errorlogs "${tests[@]}" >"$out/coverage-tests.log" 2>&1
status=$?
grep -E "^(Ok|Fail|Skipped|Timeout): " "$out/coverage-tests.log" | tr -s ' ' | paste -sd ' '
[ $status = 0 ] || grep -E " FAIL | TIMEOUT " "$out/coverage-tests.log" | head -20
python3 tests/coverage.py "$builddir" --uncovered "$out/uncovered.txt" || exit 1
echo "lines never run: $out/uncovered.txt"
exit $status
