#!/usr/bin/env bash
# cgr builds with CUDA 12.0 and newer, while a machine has one toolkit. This
# compiles every C file of a configured build (library, tests, bench,
# examples; its compile_commands.json, with its flags, -Werror included)
# once more against the headers of CUDA 12.0, 12.4 and 12.9: the CUDA
# runtime's and CUPTI's of each release, cuBLAS's and NVTX's of 12.4 (their
# C API is the same across 12.x), fetched from NVIDIA's wheels on PyPI by
# tests/toolkit_headers.py; and against those of CUDA 13.5, cuDNN 9.28 and
# NCCL 2.32, the newest releases checked, where a declaration cgr uses could
# have been deprecated or changed since the toolkit it is built with here. The three CUDA 12
# releases cover each form of the calls that changed within CUDA 12
# (lib/base/cuda_compat.h). The C files are checked -fsyntax-only; the .cu
# files are compiled by CUDA 13.5's nvcc, which its wheels hold (CUDA 12's
# hold no nvcc, so no CUDA 12 compiler checks them). Nothing is linked.
#   tests/toolkits.sh [BUILD_DIR]      (default: $CGR_BUILD_DIR, else build)
# Exits 0 when every file compiled against every release, 1 when one did
# not, 77 when PyPI cannot be reached.
set -eu
cd "$(dirname "$0")/.."
builddir=${1:-${CGR_BUILD_DIR:-build}}
if [ ! -f "$builddir/compile_commands.json" ]; then
    echo "toolkits.sh: $builddir is not a configured build (no compile_commands.json);" \
        "run tests/build.sh first" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fetch() {
    local rc=0
    python3 tests/toolkit_headers.py "$@" || rc=$?
    [ $rc = 0 ] || exit $rc
}
fetch "$work/common" nvidia-cublas-cu12==12.4.5.8 nvidia-nvtx-cu12==12.4.127

failed=0
for v in 12.0.146 12.4.127 12.9.79; do
    fetch "$work/$v" nvidia-cuda-runtime-cu12==$v nvidia-cuda-cupti-cu12==$v
    r=$work/$v/nvidia
    python3 tests/compile_check.py "$builddir" "CUDA $v" \
        --include "$r/cuda_runtime/include" --include "$r/cuda_cupti/include" \
        --include "$work/common/nvidia/cublas/include" \
        --include "$work/common/nvidia/nvtx/include" || failed=1
done
# CUDA 13's wheels put every component's headers in one folder; cuDNN's and
# NCCL's of their newest releases come with it.
fetch "$work/13.5" nvidia-cuda-runtime==13.5.37 nvidia-cuda-cupti==13.5.25 \
    nvidia-nvtx==13.5.25 nvidia-cublas==13.10.0.20 nvidia-cudnn-cu13==9.28.1.4 \
    nvidia-nccl-cu13==2.32.6
python3 tests/compile_check.py "$builddir" "CUDA 13.5.37, cuDNN 9.28.1, NCCL 2.32.6" \
    --include "$work/13.5/nvidia/cu13/include" --include "$work/13.5/nvidia/cudnn/include" \
    --include "$work/13.5/nvidia/nccl/include" || failed=1
# CUDA 13's wheels also hold its nvcc (with its front end and CCCL's
# headers): every CUDA file compiled by it, for the build's architectures.
fetch --all "$work/nvcc" nvidia-cuda-nvcc==13.5.37 nvidia-cuda-crt==13.5.37 \
    nvidia-nvvm==13.5.37 nvidia-cuda-runtime==13.5.37 nvidia-cuda-cccl==13.3.5.0.6
python3 tests/compile_check.py "$builddir" "nvcc 13.5.37" \
    --nvcc "$work/nvcc/nvidia/cu13/bin/nvcc" || failed=1
exit $failed
