#!/usr/bin/env bash
# Which lines of the library the tests run: builds the tree with gcc's
# --coverage in ${CGR_BUILD_DIR:-build-cov}, runs the named meson suites
# (default: unit, headers and gpu; the gpu suite skips itself without a
# GPU), then prints tests/coverage.py's table of the library's C files and
# writes the lines never run to $OUT/uncovered.txt ($OUT defaults to the
# build directory). Counts add up over runs: remove the build directory to
# start again.
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
CGR_BUILD_DIR=$builddir bash tests/build.sh -Dbuildtype=debug -Dc_args=--coverage \
    -Dc_link_args=--coverage -Dcpp_link_args=--coverage -Dcuda_link_args=-lgcov || exit 1

mkdir -p "$out"
tests=()
for s in "${suites[@]}"; do
    while read -r name; do
        [ "$name" = exports ] || tests+=("$name")
    done < <(meson test -C "$builddir" --list --suite "$s" 2>/dev/null | sed 's/^cgr:[^ ]* \/ //')
done
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
