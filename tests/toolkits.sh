#!/usr/bin/env bash
# cgr builds with CUDA 12.0 and newer, while a machine has one toolkit. This
# compiles every C file of a configured build (library, tests, bench,
# examples; its compile_commands.json, with its flags, -Werror included)
# once more against the headers of CUDA 12.0, 12.4 and 12.9: the CUDA
# runtime's and CUPTI's of each release, cuBLAS's and NVTX's of 12.4 (their
# C API is the same across 12.x), fetched from NVIDIA's wheels on PyPI by
# tests/toolkit_headers.py. Those three releases cover each form of the
# calls that changed within CUDA 12 (lib/base/cuda_compat.h). The check is
# -fsyntax-only: it links nothing, and the .cu files, which need that
# release's nvcc, are not part of it.
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
    if ! python3 - "$builddir" "$v" "$work/$v/nvidia/cuda_runtime/include" \
        "$work/$v/nvidia/cuda_cupti/include" "$work/common/nvidia/cublas/include" \
        "$work/common/nvidia/nvtx/include" <<'EOF'; then
import json, os, shlex, subprocess, sys

builddir, version, incs = sys.argv[1], sys.argv[2], sys.argv[3:]
entries = json.load(open(os.path.join(builddir, "compile_commands.json")))
seen, failed = set(), []
for e in entries:
    src = os.path.normpath(os.path.join(e["directory"], e["file"]))
    if not src.endswith(".c") or src in seen:
        continue
    seen.add(src)
    args, out, i = shlex.split(e["command"]), [], 0
    while i < len(args):
        a = args[i]
        if a in ("-o", "-MF", "-MQ", "-MT"):
            i += 2
            continue
        if a in ("-MD", "-MMD"):
            i += 1
            continue
        # This release's headers go right before the installed toolkit's
        # include dir, wherever the build names it (-I or -isystem).
        d = a[2:] if a.startswith("-I") and len(a) > 2 else None
        if a == "-isystem" and i + 1 < len(args):
            d = args[i + 1]
        if d and os.path.exists(os.path.join(e["directory"], d, "cuda_runtime_api.h")):
            out += ["-I" + p for p in incs]
        out.append(a)
        i += 1
    r = subprocess.run(out + ["-fsyntax-only", "-fdiagnostics-color=never"],
                       cwd=e["directory"], capture_output=True, text=True)
    if r.returncode != 0:
        failed.append(src)
        sys.stdout.write(r.stderr)
print("CUDA %s: %d C files, %d failed%s" % (version, len(seen), len(failed),
      "".join("\n  " + f for f in failed)))
sys.exit(1 if failed or not seen else 0)
EOF
        failed=1
    fi
done
exit $failed
