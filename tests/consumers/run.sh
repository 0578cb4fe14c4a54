#!/usr/bin/env bash
# Installs cgr into a temporary prefix and builds tests/consumers/consumer.c
# against it the ways other projects do, running each program it builds:
#   - pkg-config, shared: `pkg-config --cflags --libs cgr`, also with
#     README's example (examples/train_step.c) and README's command line;
#   - pkg-config, static: `pkg-config --static --cflags --libs cgr`, on a
#     copy of the prefix moved elsewhere with the shared library removed (a
#     static-only install; the move checks that cgr.pc is relocatable);
#   - CMake: find_package(cgr CONFIG REQUIRED) with cgr::cgr and
#     cgr::cgr_static, on the prefix and on the moved copy; a request for a
#     version this cgr does not satisfy must fail, and so must a CUDA
#     toolkit of another major version than cgr was built with;
#   - meson: cgr's source tree as a subproject, through dependency('cgr'),
#     with its tests and bench left out.
# No program may need libcudnn or libnccl (readelf, ldd). Without a GPU the
# programs get CGR_STATUS_NO_DEVICE, which passes. cmake and pkg-config are
# installed from Debian's packages when missing. The library is built in
# ${CGR_BUILD_DIR:-build-consumers}.
set -eu
cd "$(dirname "$0")/../.."
src=$PWD
builddir=${CGR_BUILD_DIR:-build-consumers}
cc=${CC:-cc}

source tests/meson_tool.sh
if ! command -v cmake >/dev/null 2>&1 || ! command -v pkg-config >/dev/null 2>&1; then
    cgr_apt_install cmake pkg-config
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgr-consumers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
moved=$tmp/moved

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# Runs a command quietly; on failure shows its output and stops.
quiet() {
    local log=$tmp/last.log
    if ! "$@" >"$log" 2>&1; then
        cat "$log" >&2
        fail "$*"
    fi
}

# Neither linked (readelf) nor loaded at start-up through libcgr (ldd).
no_cudnn_nccl() {
    if readelf -d "$1" | grep -E 'NEEDED.*(libcudnn|libnccl)' >&2; then
        fail "$1 links cuDNN or NCCL"
    fi
    if ldd "$1" | grep -E 'libcudnn|libnccl' >&2; then
        fail "$1 loads cuDNN or NCCL when it starts"
    fi
}

links_libcgr() {
    readelf -d "$1" | grep -q 'NEEDED.*libcgr\.so'
}

run() {
    local out
    out=$("$1") || fail "$1 exited with status $?"
    echo "   $out"
}

echo "== cgr installed into a temporary prefix =="
CGR_BUILD_DIR=$builddir bash tests/build.sh --prefix "$prefix" -Dtests=false -Dbench=false
source tests/meson_tool.sh # the meson that build.sh used
quiet meson install -C "$builddir" --quiet

pc=$(find "$prefix" -name cgr.pc)
[ -n "$pc" ] || fail "no cgr.pc under $prefix"
cmake_config=$(find "$prefix" -name cgrConfig.cmake)
[ -n "$cmake_config" ] || fail "no cgrConfig.cmake under $prefix"
for f in "$pc" "$cmake_config"; do
    if grep -n -e site-packages -e "$prefix" -e "$src" "$f" >&2; then
        fail "$f names a path of this build (not relocatable)"
    fi
done
grep -q -- '-lstdc++' "$pc" || fail "cgr.pc: no -lstdc++ for the static library"
version=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --modversion cgr)

echo "== pkg-config, shared library =="
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
warn=(-std=c11 -Wall -Wextra -Werror)
# shellcheck disable=SC2046 # pkg-config's output is a list of words
quiet "$cc" "${warn[@]}" tests/consumers/consumer.c $(pkg-config --cflags cgr) \
    -o "$tmp/pc-shared" $(pkg-config --libs cgr) -Wl,-rpath,"$(pkg-config --variable=libdir cgr)"
links_libcgr "$tmp/pc-shared" || fail "pc-shared does not link libcgr.so"
no_cudnn_nccl "$tmp/pc-shared"
run "$tmp/pc-shared"
# README's example calls cuBLAS and the CUDA runtime itself, and links them
# with README's command line: their -l flags must find the toolkit's library
# folder through cgr.pc, not through a default path of this machine.
cuda_lib=$(pkg-config --variable=cuda_home cgr)/lib64
# shellcheck disable=SC2046
if ! "$cc" "${warn[@]}" examples/train_step.c $(pkg-config --cflags --libs cgr) \
    -lcublas -lcudart -lm -o "$tmp/pc-train-step" \
    -Wl,-rpath,"$(pkg-config --variable=libdir cgr)" -Wl,--verbose >"$tmp/pc-link.log" 2>&1; then
    grep -v '^attempt to open' "$tmp/pc-link.log" | tail -n 20 >&2
    fail "README's command line did not build examples/train_step.c"
fi
grep -q "open $cuda_lib/libcublas.so succeeded" "$tmp/pc-link.log" ||
    fail "README's command line found libcublas.so elsewhere than $cuda_lib (cgr.pc's Libs)"
# Without a GPU it exits 77 (skipped), as in the gpu suite.
rc=0
out=$("$tmp/pc-train-step") || rc=$?
[ $rc = 0 ] || [ $rc = 77 ] || fail "examples/train_step.c exited with status $rc: $out"
echo "   train_step (README's command line): $out"

echo "== pkg-config --static, on a moved copy of the prefix without libcgr.so =="
cp -a "$prefix" "$moved"
find "$moved" -name 'libcgr.so*' -delete
PKG_CONFIG_PATH=$(dirname "$(find "$moved" -name cgr.pc)")
[ "$(realpath "$(pkg-config --variable=prefix cgr)")" = "$(realpath "$moved")" ] ||
    fail "cgr.pc in $moved does not point at its own prefix"
# shellcheck disable=SC2046
quiet "$cc" "${warn[@]}" tests/consumers/consumer.c $(pkg-config --static --cflags cgr) \
    -o "$tmp/pc-static" $(pkg-config --static --libs cgr)
! links_libcgr "$tmp/pc-static" || fail "pc-static links libcgr.so"
no_cudnn_nccl "$tmp/pc-static"
run "$tmp/pc-static"

echo "== CMake: find_package(cgr ${version%.*} CONFIG REQUIRED) =="
cuda_home=$(pkg-config --variable=cuda_home cgr)
unset PKG_CONFIG_PATH
cmake_build() { # build dir, prefix, more options
    local dir=$1 at=$2
    shift 2
    quiet cmake -S tests/consumers/cmake -B "$dir" -DCMAKE_PREFIX_PATH="$at" \
        -DCUDAToolkit_ROOT="$cuda_home" -DCMAKE_BUILD_TYPE=Release "$@"
    quiet cmake --build "$dir"
}
cmake_build "$tmp/cmake" "$prefix" -DCGR_WANT_VERSION="${version%.*}"
links_libcgr "$tmp/cmake/consumer" || fail "cgr::cgr is not the shared library"
! links_libcgr "$tmp/cmake/consumer_static" || fail "cgr::cgr_static links libcgr.so"
for exe in consumer consumer_static; do
    no_cudnn_nccl "$tmp/cmake/$exe"
    run "$tmp/cmake/$exe"
done
echo "   the moved copy (cgr::cgr is the static library there):"
cmake_build "$tmp/cmake-moved" "$moved"
! links_libcgr "$tmp/cmake-moved/consumer" || fail "moved: cgr::cgr links libcgr.so"
run "$tmp/cmake-moved/consumer"
if cmake -S tests/consumers/cmake -B "$tmp/cmake-newer" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCGR_WANT_VERSION=99.0 >"$tmp/newer.log" 2>&1; then
    fail "find_package(cgr 99.0) accepted cgr $version"
fi
grep -q 'with requested version' "$tmp/newer.log" ||
    { cat "$tmp/newer.log" >&2; fail "find_package(cgr 99.0) failed for another reason"; }
echo "   find_package(cgr 99.0) refuses cgr $version"
# A toolkit of another CUDA major version than cgr's: a stand-in whose nvcc
# says 12.4 or 14.0 (whichever cgr was not built with), with the real
# toolkit's headers and libraries, which is all FindCUDAToolkit looks at.
cuda_major=$("$cuda_home/bin/nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
other=12.4
[ "$cuda_major" != 12 ] || other=14.0
fake=$tmp/cuda-$other
mkdir -p "$fake/bin"
printf '#!/bin/sh\necho "Cuda compilation tools, release %s, V%s.0"\n' "$other" "$other" \
    >"$fake/bin/nvcc"
chmod +x "$fake/bin/nvcc"
ln -s "$cuda_home/include" "$fake/include"
ln -s "$cuda_home/lib64" "$fake/lib64"
if cmake -S tests/consumers/cmake -B "$tmp/cmake-other-cuda" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCUDAToolkit_ROOT="$fake" >"$tmp/other-cuda.log" 2>&1; then
    fail "find_package(cgr) accepted CUDA $other for a cgr built with CUDA $cuda_major"
fi
grep -q "cgr was built with CUDA $cuda_major" "$tmp/other-cuda.log" ||
    { cat "$tmp/other-cuda.log" >&2; fail "find_package(cgr) with CUDA $other failed for another reason"; }
echo "   find_package(cgr) refuses CUDA $other for a cgr built with CUDA $cuda_major"

echo "== meson: cgr as a subproject, dependency('cgr') =="
proj=$tmp/meson-consumer
mkdir -p "$proj/subprojects"
cp tests/consumers/meson/meson.build tests/consumers/consumer.c "$proj/"
ln -s "$src" "$proj/subprojects/cgr"
quiet meson setup "$tmp/meson-build" "$proj" --force-fallback-for=cgr
quiet ninja -C "$tmp/meson-build"
for d in tests bench; do
    [ ! -e "$tmp/meson-build/subprojects/cgr/$d" ] || fail "the subproject built its $d"
done
links_libcgr "$tmp/meson-build/consumer" || fail "meson consumer does not link libcgr.so"
no_cudnn_nccl "$tmp/meson-build/consumer"
run "$tmp/meson-build/consumer"

echo "consumers: pkg-config (shared, static, moved), CMake (cgr::cgr, cgr::cgr_static," \
    "moved, version check, CUDA check) and a meson subproject built and ran"
