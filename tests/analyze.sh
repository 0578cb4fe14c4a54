#!/usr/bin/env bash
# clang's static analyzer over the library's C files (lib, capture, replay,
# allocator, comm), with the flags of a configured build: a leak, a NULL
# dereference, a use of freed memory or an uninitialized read on a path the
# tests do not take. CI has no GPU, so the host code around CUDA calls (the
# capture and replay paths) runs under no sanitizer there; this reads it.
# The va_list checker is left out: it reports every va_list that a helper
# receives as uninitialized. Give it a build with assertions compiled in
# (-Db_ndebug=false): the invariants they state are what it should assume.
#   tests/analyze.sh [BUILD_DIR]      (default: $CGR_BUILD_DIR, else build)
# Exits 0 when the analyzer reports nothing, 1 otherwise.
set -eu
cd "$(dirname "$0")/.."
builddir=${1:-${CGR_BUILD_DIR:-build}}
if [ ! -f "$builddir/compile_commands.json" ]; then
    echo "analyze.sh: $builddir is not a configured build; run tests/build.sh first" >&2
    exit 1
fi
# Every library C file is in every build (nothing of the library is optional).
mapfile -t files < <(find lib capture replay allocator comm -name '*.c' | sort)
out=$(clang-tidy -p "$builddir" --quiet \
    -checks='-*,clang-analyzer-*,-clang-analyzer-security.insecureAPI.*,-clang-analyzer-valist.*' \
    "${files[@]}" 2>&1) && rc=0 || rc=$?
if [ "$rc" != 0 ]; then
    # Not a report: clang-tidy could not analyze (a compile error, no such build).
    printf '%s\n' "$out"
    echo "analyze.sh: clang-tidy failed (exit $rc)" >&2
    exit 1
fi
found=$(grep -c ": warning: " <<<"$out" || true)
if [ "$found" != 0 ]; then
    grep -v "^[0-9]* warnings\? generated\|^Suppressed" <<<"$out"
fi
echo "clang static analyzer: ${#files[@]} library files, $found reports"
[ "$found" = 0 ]
