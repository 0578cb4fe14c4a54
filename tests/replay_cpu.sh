#!/usr/bin/env bash
# Host CPU of one replay submit: the library of another source tree against
# this one's, in one process (tests/replay_cpu/main.c says how it measures).
#
#   tests/replay_cpu.sh BASE_DIR [--runs K] [--rounds R]
#
# BASE_DIR holds the other tree's sources (e.g. `git archive REV | tar -x
# -C BASE_DIR`). Builds both libraries (without tests, bench, cuDNN or
# NCCL, for this machine's GPU) and the program, then runs the program K
# times (default 4), the two libraries loaded in turns first, and prints
# each process's line and, per chain length, the medians over the
# processes. The builds go to build-replay-cpu/ in this tree, the logs to
# $OUT/replay-cpu (default /tmp/cgr-replay-cpu). Needs a GPU.
set -u -o pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
usage() { echo "usage: tests/replay_cpu.sh BASE_DIR [--runs K] [--rounds R]" >&2; exit 64; }
[ $# -ge 1 ] || usage
base="$(cd "$1" 2>/dev/null && pwd)" || usage
shift
runs=4 rounds=40
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs=${2:-}; shift ;;
    --rounds) rounds=${2:-}; shift ;;
    *) usage ;;
    esac
    shift
done
case "$runs$rounds" in "" | *[!0-9]*) usage ;; esac
[ "$runs" -ge 1 ] || usage

OUT=${OUT:-/tmp/cgr-replay-cpu}
work=$root/build-replay-cpu
logs=$OUT/replay-cpu
mkdir -p "$work" "$logs" || exit 1
nvcc=$(command -v nvcc) || { echo "replay_cpu.sh: nvcc not found" >&2; exit 1; }
cuda=$(dirname "$(dirname "$nvcc")")
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
case "$arch" in "" | *[!0-9]*) echo "replay_cpu.sh: no GPU found" >&2; exit 1 ;; esac

has_option() { grep -qE "^[[:space:]]*option\([[:space:]]*'$2'" "$1/meson_options.txt" 2>/dev/null; }

# build SIDE SRC: libcgr of SRC in $work/build-SIDE, for this GPU only.
build() {
    local side=$1 src=$2 dir=$work/build-$1 opts=(-Dgpu_arch="$arch" -Dtests=false -Dbench=false
                                                   -Dcudnn=disabled -Dnccl=disabled)
    has_option "$src" examples && opts+=(-Dexamples=disabled)
    has_option "$src" gpu_ptx && opts+=(-Dgpu_ptx=none)
    rm -rf "$dir"
    if ! { meson setup "${opts[@]}" "$dir" "$src" && ninja -C "$dir"; } >"$logs/build-$side.log" 2>&1; then
        echo "replay_cpu.sh: building $src failed; see $logs/build-$side.log" >&2
        tail -20 "$logs/build-$side.log" >&2
        return 1
    fi
}
build old "$base" && build new "$root" || exit 1

# The side of a header from before cgr_step_run took dims calls the old API.
api() { grep -q cgr_options_init_size "$1/lib/include/cgr/cgr.h" || echo -DSIDE_OLD_API=1; }
src=$root/tests/replay_cpu
cflags=(-std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$src" -I"$cuda/include")
{
    "$nvcc" -O2 -arch=sm_"$arch" -I"$src" -c "$src/kernel.cu" -o "$work/kernel.o" &&
    cc "${cflags[@]}" -c "$src/main.c" -o "$work/main.o" &&
    cc "${cflags[@]}" -DSIDE_NAME=side_old $(api "$base") -I"$base/lib/include" \
        -I"$work/build-old/lib/include" -c "$src/side.c" -o "$work/side_old.o" &&
    cc "${cflags[@]}" -DSIDE_NAME=side_new $(api "$root") -I"$root/lib/include" \
        -I"$work/build-new/lib/include" -c "$src/side.c" -o "$work/side_new.o" &&
    cc "$work"/{main,side_old,side_new,kernel}.o -L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" \
        -lcudart -lstdc++ -ldl -lm -o "$work/replay_cpu"
} >"$logs/build-program.log" 2>&1 || {
    echo "replay_cpu.sh: building the program failed:" >&2
    cat "$logs/build-program.log" >&2
    exit 1
}

status=0
: >"$logs/lines.txt"
for k in $(seq 1 "$runs"); do
    first=old
    [ $((k % 2)) -eq 0 ] && first=new
    echo "== process $k, $first library loaded first"
    if "$work/replay_cpu" --old "$work/build-old/lib/libcgr.so" --new "$work/build-new/lib/libcgr.so" \
        --first $first --rounds "$rounds" | tee "$logs/process-$k.txt"; then
        grep '^n=' "$logs/process-$k.txt" >>"$logs/lines.txt"
    else
        echo "replay_cpu.sh: process $k failed" >&2
        status=1
    fi
done
echo "== medians over $runs processes: host CPU of a submit, us"
python3 - "$logs/lines.txt" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split())
    rows.setdefault(int(f["n"]), []).append(f)
print("%6s %8s %8s %8s %8s %8s" % ("N", "raw", "old", "new", "new/old", "paired"))
for n in sorted(rows):
    med = lambda k: statistics.median(float(f[k]) for f in rows[n])
    print("%6d %8.3f %8.3f %8.3f %8.3f %8.3f" % (n, med("raw"), med("old"), med("new"),
                                                 med("new/old"), med("paired")))
PY
exit $status
