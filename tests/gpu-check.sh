#!/usr/bin/env bash
# One call on the GPU machine: build, run the unit/headers/gpu/bench suites,
# the gpu and bench suites again with programmatic dependent launch forced
# off and from PTX and under compute-sanitizer memcheck, and cgr-bench's
# default suite (W-chain plain and with PDL, interleaved, then W-mlp and
# W-cnn at B = 1). Logs go to $OUT (or /tmp/cgr-gpu-check); a short table is
# printed last and kept as $OUT/summary.txt: each part's status and its test
# counts, or cgr-bench's result line and, for the default suite, W-chain's
# cgr/raw per kernel. Exits 1 when any part that ran failed, else 0. Stopped
# by SIGTERM or SIGINT (a job's time limit, `timeout`), it still archives the
# logs and prints the table, the part it stopped in marked STOPPED and the
# parts after it skipped, and exits 143 or 130. An unknown option exits 2
# before anything runs.
#   tests/gpu-check.sh [--no-memcheck] [--no-bench] [--quick-bench] [--workloads] [--soak]
#                      [--sanitizers | --initcheck] [--shapes] [--ddp] [--base DIR]
#                      [--no-extra | --no-pdl-off | --no-ptx] [--force-ptx-jit] [--no-libs]
# --no-memcheck leaves out the memcheck pass, --no-bench the default suite;
# --quick-bench runs cgr-bench's default suite and those of --shapes, --ddp
# and --base with --quick.
# The two extra passes of the gpu and bench suites (about as long as the
# first each, plus a build for the second):
#   pdl-off  CGR_PDL=0: every launch that asks for PDL is a plain one, so the
#            suite proves the path older GPUs take (docs/runtime.md).
#   ptx-jit  a second build, build-gpu-ptx, with machine code only for an
#            architecture this GPU cannot run (sm_80 on compute capability
#            9.0 and newer, else sm_90) and PTX for its own (compute_90, or
#            compute_80): the driver compiles every kernel of cgr, its tests
#            and cgr-bench from PTX at load time, as on a GPU newer than the
#            build, while cuBLAS and cuDNN run their own machine code. Its
#            PDL follows the PTX (on from compute_90).
# --no-extra skips both, --no-pdl-off and --no-ptx one each. --force-ptx-jit
# adds the gpu and bench suites under CUDA_FORCE_PTX_JIT=1 on the first build
# (ptx-force): every module of the process then loads from PTX, cuBLAS's and
# cuDNN's too, which ship PTX only for their newest architecture (CUDA 13's
# libcublas: compute_120), so the tests that call them are expected to fail
# there; the other tests prove the build's own PTX. --no-libs adds a third
# build, build-gpu-nolibs, with -Dcudnn=disabled -Dnccl=disabled, and its gpu
# and bench suites (no-libs): the build a user without cuDNN or NCCL gets,
# whose cgr_ctx_cudnn and cgr_nccl.h calls answer CGR_STATUS_NOT_SUPPORTED
# (test lazy_load).
# --workloads also runs `cgr-bench mlp --profile` (W-mlp, all batch sizes and
# variants), `cgr-bench cnn --profile` (then once more, `--quick --trace`,
# for the trace alone: it keeps CUPTI attached, which slows what is timed
# after the first profiled pass) and the PyTorch peer script on the same
# GPU, and compares them. --soak runs `cgr-bench soak` (1,000,000 runs);
# --sanitizers adds the racecheck and initcheck setups, --initcheck
# initcheck alone (about a minute; racecheck takes most of ten). --shapes
# runs `cgr-bench serve --stats` (W-serve) and `cgr-bench newshape` (capture
# against update in place); --ddp runs `cgr-bench ddp --nproc 2` (2 GPUs; on
# a one-GPU host --nproc 1).
# --base DIR, after everything else, runs tests/compare.sh DIR against this
# tree's build-gpu: the old source tree DIR (tests/compare.sh says how to
# make it) built beside it and both cgr-bench binaries measured in turns,
# its table printed before the summary and kept as $OUT/compare.txt. It adds
# about 6 minutes (with --quick-bench, which it passes on as --quick, about
# 4), so in a job limited to 10 minutes leave out memcheck and the other
# long parts; CGR_COMPARE_BUDGET_S bounds its rounds. Then
# tests/replay_cpu.sh DIR times the host CPU of a replay submit of both
# libraries in one process (about 2 more minutes); its medians are appended
# to compare.txt.
set -u
here=$PWD
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/cgr-gpu-check}
mkdir -p "$OUT"
memcheck=1 bench=1 quick="" workloads=0 soak=0 sanitizers="" shapes=0 ddp=0 base=""
pdl_off=1 ptx=1 force_ptx=0 no_libs=0
while [ $# -gt 0 ]; do
    case "$1" in
    --no-memcheck) memcheck=0 ;;
    --no-bench) bench=0 ;;
    --quick-bench) quick="--quick" ;;
    --workloads) workloads=1 ;;
    --soak) soak=1 ;;
    --sanitizers) sanitizers="racecheck initcheck" ;;
    --initcheck) sanitizers="initcheck" ;;
    --shapes) shapes=1 ;;
    --ddp) ddp=1 ;;
    --no-extra) pdl_off=0 ptx=0 ;;
    --no-pdl-off) pdl_off=0 ;;
    --no-ptx) ptx=0 ;;
    --force-ptx-jit) force_ptx=1 ;;
    --no-libs) no_libs=1 ;;
    --base) shift; base=${1:-} ;;
    --base=*) base=${1#--base=} ;;
    *)
        # A mistyped option would otherwise leave its part out without a word.
        echo "gpu-check.sh: unknown option '$1'; the options are listed at the top of" \
            "tests/gpu-check.sh" >&2
        exit 2
        ;;
    esac
    shift
done
# DIR is given relative to where the script was started, not to the tree's root.
case "$base" in "" | /*) ;; *) base=$here/$base ;; esac
b=build-gpu
declare -A result detail
# The summary's detail of a part: meson's counts from its log, or a
# cgr-bench log's result line and (for the default suite) W-chain's cgr/raw
# per kernel, the median of the rounds' own ratios, with the spread at N = 100.
counts() {
    awk '/^(Ok|Fail|Skipped|Timeout): / {
        w = $1 == "Fail:" ? "failed" : tolower(substr($1, 1, length($1) - 1))
        printf "%s%s %s", n++ ? ", " : "", $2, w }' "$1"
}
bench_detail() {
    local r chain
    r=$(grep -m1 '^result ' "$1" | sed 's/^result *//')
    chain=$(awk '$2 == "plain" && $3 == "cgr/raw" && $6 == "median" {
                sub(",", "", $7); v = v (v ? " / " : "") $7; if ($1 == "N=100") s = $12 }
            END { if (v) printf "; cgr/raw N=10/100/1000 %s, spread %s %%", v, s }' "$1")
    echo "${r:-no result}$chain"
}

# The end of every run, also of one a signal stops: the archive, the table
# and the exit status.
finish() {
    trap - TERM INT
    cp "$b/meson-logs/testlog.txt" "$OUT/" 2>/dev/null
    # Everything but the GPU line and the comparison's table goes into one
    # archive, so that a job runner that keeps only a few files of $OUT as
    # artifacts keeps all the logs.
    [ "${result[build]:-}" = ok ] && rm -f "$OUT/setup.log" "$OUT/build.log" "$OUT/test.log"
    tmp=$(mktemp /tmp/cgr-all.XXXXXX.tgz)
    (cd "$OUT" && tar czf "$tmp" --exclude gpu.txt --exclude compare.txt . &&
        find . -type f ! -name gpu.txt ! -name compare.txt -delete) &&
        mv "$tmp" "$OUT/all.tgz"
    if [ -n "$base" ]; then
        echo
        cat "$OUT/compare.txt" 2>/dev/null || echo "compare: no table (see compare.log in all.tgz)"
    fi
    # Also kept as $OUT/summary.txt: a stdout sent to a file under $OUT is
    # archived unfinished and deleted above, this table with it.
    keys="build tests pdl-off ptx-jit"
    [ $force_ptx = 1 ] && keys="$keys ptx-force"
    [ $no_libs = 1 ] && keys="$keys no-libs"
    keys="$keys memcheck racecheck initcheck soak shapes ddp bench torch"
    [ -n "$base" ] && keys="$keys compare replay-cpu"
    # The part a signal stopped reads STOPPED.
    [ -n "$stopped" ] && [ -n "$running" ] && [ -z "${result[$running]:-}" ] &&
        result[$running]=STOPPED
    {
        echo
        echo "== gpu-check summary =="
        cat "$OUT/gpu.txt"
        [ -n "$stopped" ] && echo "stopped by SIG$stopped${running:+ during '$running'}"
        for k in $keys; do
            printf '%-10s %-8s %s\n' "$k" "${result[$k]:-skipped}" "${detail[$k]:-}"
        done
    } | tee "$OUT/summary.txt"
    case "$stopped" in TERM) exit 143 ;; INT) exit 130 ;; esac
    # The status says whether every part that ran passed.
    for k in $keys; do
        [ "${result[$k]:-skipped}" = FAILED ] && exit 1
    done
    exit 0
}

# A signal stops the part that runs (its processes get it too when sent to
# the process group, as `timeout` does); the trap runs as soon as it ends.
stopped="" running=""
trap 'stopped=TERM; finish' TERM
trap 'stopped=INT; finish' INT

# build_tree KEY SUFFIX DIR WHAT [MESON_OPTION...]: sets up and builds DIR,
# warnings as errors as in CI, logging to setup$SUFFIX.log and
# build$SUFFIX.log; when that fails, marks KEY failed, shows the logs' tails
# and returns 1.
build_tree() {
    local key=$1 suffix=$2 dir=$3 what=$4
    shift 4
    running=$key
    meson setup "$dir" -Dwerror=true "$@" >"$OUT/setup$suffix.log" 2>&1 &&
        ninja -C "$dir" >"$OUT/build$suffix.log" 2>&1 && return 0
    result[$key]=FAILED
    echo "-- $dir ($what) did not build:"
    tail -n 30 "$OUT/setup$suffix.log" "$OUT/build$suffix.log"
    return 1
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$OUT/gpu.txt" 2>&1
build_tree build "" "$b" "the default build" && result[build]=ok
grep -A4 "^cgr" "$OUT/setup.log" | tail -4

if [ "${result[build]}" = ok ]; then
    running=tests
    meson test -C "$b" --print-errorlogs --suite unit --suite headers --suite gpu --suite bench \
        >"$OUT/test.log" 2>&1 && result[tests]=ok || result[tests]=FAILED
    detail[tests]=$(counts "$OUT/test.log")
    grep -E "^ *[0-9]+/[0-9]+ " "$OUT/test.log"
    grep -hE "^(zero_copy_max|PASS|cycle|bad_)" "$b/meson-logs/testlog.txt" | cut -c1-300
    # The extra passes (see the top): each its own log and meson test log.
    # extra_pass KEY LOGNAME BUILD [VAR=VALUE]: the gpu suite of BUILD.
    extra_pass() {
        local key=$1 name=$2 dir=$3
        shift 3
        running=$key
        env "$@" meson test -C "$dir" --print-errorlogs --suite gpu --suite bench --logbase "testlog-$name" \
            >"$OUT/test-$name.log" 2>&1 && result[$key]=ok || result[$key]=FAILED
        detail[$key]=$(counts "$OUT/test-$name.log")
        echo "-- gpu suite, $key ($dir${*:+, $*}):"
        grep -E "^ *[0-9]+/[0-9]+ " "$OUT/test-$name.log" | grep -vE " OK | SKIP " | head -20
        grep -E "^(Ok|Fail|Skipped|Timeout): " "$OUT/test-$name.log" | tr -s ' ' | paste -sd ' '
        grep -h "^PASS: .*PDL" "$dir/meson-logs/testlog-$name.txt" 2>/dev/null | cut -c1-200
        cp "$dir/meson-logs/testlog-$name.txt" "$OUT/" 2>/dev/null
    }
    if [ $pdl_off = 1 ]; then
        extra_pass pdl-off pdl-off "$b" CGR_PDL=0
    fi
    if [ $ptx = 1 ]; then
        # Machine code this GPU cannot load, PTX it can compile.
        cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i 0 2>/dev/null | head -1)
        if [ "${cc%%.*}" -ge 9 ] 2>/dev/null; then sass=80 ptx_arch=90; else sass=90 ptx_arch=80; fi
        bp=build-gpu-ptx
        if build_tree ptx-jit -ptx "$bp" "sm_$sass + PTX compute_$ptx_arch" \
            -Dgpu_arch=$sass -Dgpu_ptx=$ptx_arch; then
            echo "-- $bp: machine code sm_$sass only, PTX compute_$ptx_arch"
            if command -v cuobjdump >/dev/null 2>&1; then
                cuobjdump --list-elf --list-ptx "$bp/lib/libcgr.so" >"$OUT/fatbin-ptx.txt" 2>&1
                echo "-- $bp/lib/libcgr.so holds:"; sort -u "$OUT/fatbin-ptx.txt" | head -8
            fi
            extra_pass ptx-jit ptx "$bp"
        fi
    fi
    if [ $force_ptx = 1 ]; then
        extra_pass ptx-force ptx-force "$b" CUDA_FORCE_PTX_JIT=1
    fi
    if [ $no_libs = 1 ]; then
        build_tree no-libs -nolibs build-gpu-nolibs "without cuDNN and NCCL" \
            -Dcudnn=disabled -Dnccl=disabled && extra_pass no-libs nolibs build-gpu-nolibs
    fi
    if [ $memcheck = 1 ]; then
        running=memcheck
        meson test -C "$b" --setup memcheck --suite gpu --suite bench --print-errorlogs \
            >"$OUT/memcheck.log" 2>&1 && result[memcheck]=ok || result[memcheck]=FAILED
        detail[memcheck]=$(counts "$OUT/memcheck.log")
        grep -E "^ *[0-9]+/[0-9]+ |ERROR SUMMARY" "$OUT/memcheck.log" | head -20
    fi
    if [ -n "$sanitizers" ]; then
        for tool in $sanitizers; do
            running=$tool
            meson test -C "$b" --setup $tool --suite gpu --suite bench --print-errorlogs \
                >"$OUT/$tool.log" 2>&1 && result[$tool]=ok || result[$tool]=FAILED
            detail[$tool]=$(counts "$OUT/$tool.log")
            grep -E "^ *[0-9]+/[0-9]+ " "$OUT/$tool.log" | head -20
        done
    fi
    if [ $soak = 1 ] && [ -x "$b/bench/cgr-bench" ]; then
        running=soak
        "$b/bench/cgr-bench" soak --json "$OUT/soak.json" >"$OUT/soak.log" 2>&1 \
            && result[soak]=ok || result[soak]=FAILED
        detail[soak]=$(grep -m1 '^soak: growth' "$OUT/soak.log" | sed 's/.*host RSS/host RSS/')
        tail -n 20 "$OUT/soak.log"
    fi
    if [ $bench = 1 ] && [ -x "$b/bench/cgr-bench" ]; then
        running=bench
        "$b/bench/cgr-bench" default $quick --json "$OUT/bench.json" >"$OUT/bench.log" 2>&1 \
            && result[bench]=ok || result[bench]=FAILED
        detail[bench]=$(bench_detail "$OUT/bench.log")
        tail -n 40 "$OUT/bench.log"
    fi
    if [ $shapes = 1 ] && [ -x "$b/bench/cgr-bench" ]; then
        running=shapes
        "$b/bench/cgr-bench" serve --stats $quick --json "$OUT/bench-serve.json" \
            >"$OUT/bench-serve.log" 2>&1 && result[shapes]=ok || result[shapes]=FAILED
        tail -n 40 "$OUT/bench-serve.log"
        "$b/bench/cgr-bench" newshape $quick --json "$OUT/bench-newshape.json" \
            >"$OUT/bench-newshape.log" 2>&1 || result[shapes]=FAILED
        detail[shapes]="serve $(bench_detail "$OUT/bench-serve.log"); newshape $(bench_detail "$OUT/bench-newshape.log")"
        tail -n 20 "$OUT/bench-newshape.log"
    fi
    if [ $ddp = 1 ] && [ -x "$b/bench/cgr-bench" ]; then
        running=ddp
        # Two ranks where the host has two GPUs; one rank (a one-rank
        # communicator: the same code path, collectives that copy) otherwise.
        gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
        nproc=$([ "$gpus" -ge 2 ] && echo 2 || echo 1)
        "$b/bench/cgr-bench" ddp --nproc $nproc $quick --json "$OUT/bench-ddp.json" \
            >"$OUT/bench-ddp.log" 2>&1 && result[ddp]=ok || result[ddp]=FAILED
        detail[ddp]="$nproc rank(s): $(bench_detail "$OUT/bench-ddp.log")"
        tail -n 30 "$OUT/bench-ddp.log"
    fi
    if [ $workloads = 1 ] && [ -x "$b/bench/cgr-bench" ]; then
        running=bench
        "$b/bench/cgr-bench" mlp --profile --json "$OUT/bench-mlp.json" \
            >"$OUT/bench-mlp.log" 2>&1 || result[bench]=FAILED
        grep -A14 "==== cgr-bench summary" "$OUT/bench-mlp.log"
        "$b/bench/cgr-bench" cnn --profile --json "$OUT/bench-cnn.json" \
            >"$OUT/bench-cnn.log" 2>&1 || result[bench]=FAILED
        "$b/bench/cgr-bench" cnn --quick --trace "$OUT/trace.json" >"$OUT/bench-trace.log" 2>&1 \
            || result[bench]=FAILED
        grep -A6 "==== cgr-bench summary" "$OUT/bench-cnn.log"
        running=torch
        PYTHONUNBUFFERED=1 python3 bench/peer/torch_peer.py --workload mlp,mlp-dropout,cnn \
            --json "$OUT/torch.json" >"$OUT/torch.log" 2>&1 && result[torch]=ok || result[torch]=FAILED
        python3 bench/peer/compare.py --torch "$OUT/torch.json" --cgr "$OUT/bench-mlp.json" \
            --cgr "$OUT/bench-cnn.json" 2>&1 | tail -n 20
    fi
    if [ -n "$base" ]; then
        # Last, so the comparison's GPU time never delays the checks above.
        # Its own files go to $OUT/compare and into all.tgz with the rest;
        # the table stays outside the archive.
        running=compare
        OUT="$OUT/compare" bash tests/compare.sh "$base" --new-build "$b" $quick \
            >"$OUT/compare.log" 2>&1 && result[compare]=ok || result[compare]=FAILED
        grep "^compare: " "$OUT/compare.log" | grep -v ": exit 0 (" | tail -n 20
        mv "$OUT/compare/compare.txt" "$OUT/compare.txt" 2>/dev/null
        # Host CPU per replay of the two libraries, timed in one process.
        running=replay-cpu
        OUT="$OUT/compare" bash tests/replay_cpu.sh "$base" >"$OUT/replay-cpu.log" 2>&1 &&
            result[replay-cpu]=ok || result[replay-cpu]=FAILED
        sed -n '/^== medians/,$p' "$OUT/replay-cpu.log" >>"$OUT/compare.txt"
    fi
elif [ -n "$base" ]; then
    result[compare]=FAILED
    result[replay-cpu]=FAILED
fi
finish
