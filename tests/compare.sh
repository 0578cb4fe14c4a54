#!/usr/bin/env bash
# Before/after comparison of cgr-bench figures: an old source tree against
# this one, built side by side and measured in turns on the same GPU, in one
# call on the GPU machine.
#
#   tests/compare.sh BASE_DIR [--quick] [--rounds N] [--newshape-runs K] [--new-build DIR]
#                    [--build-only]
#   tests/compare.sh --table DIR
#
# BASE_DIR is a plain source tree of the old commit. A remote GPU runner may
# get a copy of the working tree without its .git directory, so the old
# commit cannot be checked out there and travels as files instead. Make it in the
# repository root with:
#
#   rm -rf .base && mkdir .base
#   git archive REV | tar -x -C .base
#   git rev-parse --short REV >.base/.revision
#   grep -qxF .base/ .git/info/exclude || echo .base/ >>.git/info/exclude
#
# The .revision file is optional; it only names the old side in the table.
# The last line keeps .base/ out of `git status` without touching the
# tracked .gitignore. Because .base/ is then ignored by git, whatever copies
# the working tree to a GPU runner must be told to take it along if it
# leaves ignored files out. The source tree is about 2 MiB.
#
# What it does:
# 1. Builds the old tree in build-base and this tree in build-new (or in
#    --new-build DIR, which tests/gpu-check.sh passes as its build-gpu so
#    nothing is built twice), with -Dtests=false where the tree has that
#    option and only the bench/cgr-bench target. Both build directories sit
#    in this tree's root, where .gitignore's build-*/ covers them, so a
#    machine that keeps ignored files between calls rebuilds only what
#    changed. --build-only stops here (useful on a machine without a GPU).
# 2. Runs the two cgr-bench binaries in turns for each suite of a round,
#    the side that goes first alternating from one pair of runs to the
#    next (old, new; new, old; ...), so that neither side always runs on a
#    host the other has just warmed or disturbed: `chain` (W-chain at N = 10, 100, 1000), `newshape` (capture
#    + instantiate and capture + update of a new W-mlp shape), `serve
#    --quick` (W-serve; the full 10,000 requests take several times as long
#    as the 2,000 of --quick, and ten of them would not fit the time
#    budget) and `mlp --quick` (W-mlp at B = 1, which is the figure
#    compared; the full suite adds B = 8, 32 and 256). Each run writes
#    --json. Five rounds by default, three with --quick, or --rounds N.
#    Taking turns run by run means that a slow spell of the host or GPU
#    hits both sides alike instead of one side's whole batch. newshape runs
#    K times a side in each round (--newshape-runs K, default 3), the two
#    sides in turns as above, and the round's figure on each side is the median of its
#    K processes: a new shape's cost falls in a fast mode or one about
#    1.5 x slower for stretches about as long as a process
#    (docs/benchmarks.md, "A new shape's cost is bimodal by process"), so
#    one process a side and round would compare two draws of that mode
#    instead of the two trees.
# 3. Prints a table last: for each figure the median over the rounds on
#    each side, new/old, the paired ratio (the median over the rounds of
#    each round's new / old, which a slow spell of the host that lasts a
#    round cancels out of), and each side's spread, (max - min) / median
#    over its rounds. `--table DIR` prints the same table again from an unpacked
#    archive's runs/ directory.
#
# On an H200 host a round of the four suites on both sides should take about
# one to one and a half minutes, most of it W-chain's N = 1000 modes (ten
# modes of 1,050 steps of 1.2 to 4.8 ms on the new side, eleven on trees
# that still had the memcpy-node mode, eight on trees from before the PDL
# modes joined the chain suite), and the two builds one to two
# minutes, so the whole script takes about 8 to 9 minutes. A round is not started when
# the longest round so far says it would end more than CGR_COMPARE_BUDGET_S
# seconds after the start (default 540, so that it ends within 10 minutes);
# the table then says how many rounds ran. Both sides always have the same
# number of rounds.
#
# Suites or flags that one side's cgr-bench does not list in its --help are
# left out for that side (the table shows n/a and says why), so an old tree
# from before a suite existed still compares on the others. A run that exits
# 64 (bad command line) is not repeated in later rounds.
#
# Output goes to $OUT (default /tmp/cgr-compare): compare.txt (the table)
# and compare.tgz (runs/: every log, JSON file, the build logs, the GPU
# line and runs.tsv with each run's exit status and seconds). Only a few
# files come back from the GPU machine, hence the archive. The exit status
# is 0 when both sides built and every run exited 0, 1 otherwise, 64 for a
# bad command line.
set -u
here=$PWD
cd "$(dirname "$0")/.." || exit 1
root=$PWD

usage() {
    echo "usage: tests/compare.sh BASE_DIR [--quick] [--rounds N] [--newshape-runs K]" >&2
    echo "                        [--new-build DIR] [--build-only]" >&2
    echo "       tests/compare.sh --table DIR   (the table again, from an unpacked runs/)" >&2
    exit 64
}

# Absolute path of $1 as given relative to the caller's directory.
abspath() {
    case "$1" in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s\n' "$here/$1" ;;
    esac
}

# ---- the table, from a runs/ directory -----------------------------------
# The JSON field names come from cgr-bench's reporter (bench/report.c,
# bench/report_suites.c; docs/bench-json.md). Every lookup tolerates a
# missing field, so files from an older cgr-bench with a different layout
# give n/a instead of an error.
make_table() {
    python3 - "$1" <<'PYEOF'
import glob, json, os, re, statistics, sys

runs = sys.argv[1]

def load(side, suite):
    """Per-round JSON objects of one side and suite, as {round: [data, ...]}:
    SIDE-SUITE-R.json, or SIDE-SUITE-R.K.json for the K-th run of a suite
    that runs several times a round (newshape)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(runs, "%s-%s-*.json" % (side, suite)))):
        m = re.search(r"-(\d+)(?:\.\d+)?\.json$", path)
        if not m:
            continue
        try:
            with open(path) as f:
                out.setdefault(int(m.group(1)), []).append(json.load(f))
        except (OSError, ValueError):
            pass
    return out

def get(d, *keys):
    for k in keys:
        if isinstance(k, int):
            if not isinstance(d, list) or k >= len(d):
                return None
        elif not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d

def num(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

# Each metric: (label, suite, function of one round's JSON -> number or None).
def chain_entry(d, n):
    for c in get(d, "chain") or []:
        if get(c, "n_kernels") == n:
            return c
    return None

def chain_ratio(n):
    def f(d):
        c = chain_entry(d, n)
        if get(c, "modes", "cgr", "ok") is False or get(c, "modes", "graph", "ok") is False:
            return None
        return num(get(c, "ratios", "cgr_over_graph_per_kernel"))
    return f

def chain_host(n):
    def f(d):
        c = chain_entry(d, n)
        if get(c, "modes", "cgr", "ok") is False:
            return None
        return num(get(c, "modes", "cgr", "host_cpu_us", "median"))
    return f

# What cgr adds to a launch of the same kernels as a raw graph, both timed in
# the same process: each side's cgr-bench times its host CPU its own way, so
# this, not the absolute figure, is what compares across trees.
def chain_host_added(n):
    def f(d):
        c = chain_entry(d, n)
        if get(c, "modes", "cgr", "ok") is False or get(c, "modes", "graph", "ok") is False:
            return None
        cgr = num(get(c, "modes", "cgr", "host_cpu_us", "median"))
        raw = num(get(c, "modes", "graph", "host_cpu_us", "median"))
        return cgr - raw if cgr is not None and raw is not None else None
    return f

def ns_pair(d, path):
    for p in get(d, "pairs") or []:
        if get(p, "path") == path:
            return p
    return None

def ns_instantiate(path, k):
    def f(d):
        b = get(ns_pair(d, path), "buckets", k)
        if not get(b, "ran"):
            return None
        return num(get(b, "capture_instantiate_us", "median"))
    return f

def ns_update(path):
    def f(d):
        u = get(ns_pair(d, path), "update")
        if not get(u, "ran") or not get(u, "updates"):
            return None
        return num(get(u, "capture_update_us", "median"))
    return f

def serve_p50(bucket):
    def f(d):
        for b in get(d, "per_bucket") or []:
            if get(b, "bucket") == bucket:
                return num(get(b, "steady", "graph", "p50_us"))
        return None
    return f

def mlp_graph(workload, B):
    def f(d):
        for r in get(d, "results") or []:
            if (get(r, "workload") == workload and get(r, "B") == B
                    and get(r, "mode") == "graph" and get(r, "ok")):
                return num(get(r, "wall_us", "median"))
        return None
    return f

# Bucket numbers and newshape's pairs as the newest JSON files name them, so
# the rows follow the bench if those change.
def first_json(suite):
    for side in ("new", "old"):
        d = load(side, suite)
        if d:
            return d[min(d)][0]
    return None

# (label, suite, figure, decimals, diff): diff rows compare by new - old,
# since a ratio of two small differences says little.
metrics = []
for n in (10, 100, 1000):
    metrics.append(("W-chain N=%d cgr/raw graph per kernel" % n, "chain", chain_ratio(n), 3, 0))
for n in (10, 100, 1000):
    metrics.append(("W-chain N=%d host CPU us/replay, cgr" % n, "chain", chain_host(n), 2, 0))
for n in (10, 100, 1000):
    metrics.append(("W-chain N=%d host us/replay, cgr-raw (diff)" % n, "chain",
                    chain_host_added(n), 2, 1))
ns = first_json("newshape")
pairs = [(get(p, "path"), [get(b, "bucket") for b in get(p, "buckets") or []])
         for p in get(ns, "pairs") or []] or [("small-batch", [4, 8]), ("cuBLAS", [16, 32])]
for path, buckets in pairs:
    for k, b in enumerate(buckets):
        metrics.append(("newshape %s b%s capture+instantiate us" % (path, b), "newshape",
                        ns_instantiate(path, k), 1, 0))
for path, buckets in pairs:
    metrics.append(("newshape %s %s capture+update us" % (path, "<->".join(map(str, buckets))),
                    "newshape", ns_update(path), 1, 0))
sv = first_json("serve")
for b in [get(x, "bucket") for x in get(sv, "per_bucket") or []] or [1, 2, 4, 8, 16, 32, 64]:
    metrics.append(("W-serve p50 us, bucket %s" % b, "serve", serve_p50(b), 1, 0))
for w in ("W-mlp", "W-mlp+pdl"):
    metrics.append(("%s B=1 graph step us" % w, "mlp", mlp_graph(w, 1), 1, 0))

info = {}
try:
    with open(os.path.join(runs, "info.txt")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            info[k] = v
except OSError:
    pass

data = {(s, q): load(s, q) for s in ("old", "new") for q in ("chain", "newshape", "serve", "mlp")}

def device_name():
    for (side, suite), rounds in sorted(data.items()):
        for d in (d for ds in rounds.values() for d in ds):
            name = get(d, "device", "name") or get(d, "device_name")
            if name:
                return name
    return info.get("gpu") or "unknown"

def fmt(v, prec):
    return "%.*f" % (prec, v) if v is not None else "n/a"

def spread(vals, med, diff=0, prec=2):
    if len(vals) < 2 or (not med and not diff):
        return "-" if vals else "n/a"
    if diff:
        return "%.*f" % (prec, max(vals) - min(vals))
    return "%.1f%%" % (100.0 * (max(vals) - min(vals)) / abs(med))

print("== before/after: old = %s, new = %s ==" % (info.get("old", "old"), info.get("new", "new")))
print("device: %s; rounds: %s%s; medians over the rounds, spread = (max - min) / median"
      % (device_name(), info.get("rounds", "?"),
         " (stopped early: %s)" % info["stopped"] if info.get("stopped") else ""))
print("paired = median over the rounds of that round's new / old (its two runs ran one after "
      "the other); on (diff) rows both give new - old, and spread is max - min")
if info.get("newshape_runs", "1") != "1":
    print("newshape: each round's figure is the median of %s processes a side, run in turns"
          % info["newshape_runs"])
print("%-46s %9s %9s %8s %8s %8s %8s %5s" % ("figure", "old", "new", "new/old", "paired",
                                              "old spr", "new spr", "n"))
for label, suite, f, prec, diff in metrics:
    # A round's figure: its one run's, or the median of its runs' (newshape).
    by_round = {}
    for side in ("old", "new"):
        by_round[side] = {}
        for r, ds in data[(side, suite)].items():
            vs = [v for v in map(f, ds) if v is not None]
            if vs:
                by_round[side][r] = statistics.median(vs)
    vals = {s: [v for _, v in sorted(by_round[s].items())] for s in by_round}
    med = {s: statistics.median(v) if v else None for s, v in vals.items()}
    both = [r for r in sorted(by_round["old"]) if r in by_round["new"]]
    if diff:
        ratio = med["new"] - med["old"] if None not in (med["old"], med["new"]) else None
        per_round = [by_round["new"][r] - by_round["old"][r] for r in both]
        shown = lambda v: "%+.*f" % (prec, v) if v is not None else "n/a"
    else:
        ratio = med["new"] / med["old"] if med["old"] and med["new"] is not None else None
        per_round = [by_round["new"][r] / by_round["old"][r] for r in both
                     if by_round["old"][r]]
        shown = lambda v: fmt(v, 3)
    paired = statistics.median(per_round) if per_round else None
    print("%-46s %9s %9s %8s %8s %8s %8s %5s" % (
        label, fmt(med["old"], prec), fmt(med["new"], prec), shown(ratio), shown(paired),
        spread(vals["old"], med["old"], diff, prec), spread(vals["new"], med["new"], diff, prec),
        "%d/%d" % (len(vals["old"]), len(vals["new"]))))

notes = [line.rstrip("\n") for line in open(os.path.join(runs, "notes.txt"))] \
    if os.path.exists(os.path.join(runs, "notes.txt")) else []
try:
    with open(os.path.join(runs, "runs.tsv")) as f:
        bad = [l.split("\t") for l in f.read().splitlines() if l and l.split("\t")[3] != "0"]
    for side, suite, rnd, rc, secs in (b[:5] for b in bad if len(b) >= 5):
        why = {"2": "no usable CUDA device", "64": "bad command line"}.get(
            rc, "%s; its figures count where its JSON has them"
            % {"124": "timed out", "137": "killed"}.get(rc, "failed"))
        notes.append("%s %s round %s: exit %s (%s)" % (side, suite, rnd, rc, why))
except OSError:
    pass
if info.get("serve_quick") == "1":
    notes.append("W-serve ran with --quick (2,000 requests) in every round")
if info.get("mlp_quick") == "1":
    notes.append("W-mlp ran with --quick (B = 1 only, 200 steps after 20 warm-up)")
for n in notes:
    print("  note: " + n)
PYEOF
}

if [ "${1:-}" = "--table" ]; then
    [ $# -eq 2 ] && [ -d "$(abspath "$2")" ] || usage
    make_table "$(abspath "$2")"
    exit $?
fi

# ---- command line --------------------------------------------------------
base="" quick=0 rounds="" new_build="" build_only=0 ns_runs=3
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) quick=1 ;;
    --build-only) build_only=1 ;;
    --rounds) shift; rounds=${1:-} ;;
    --rounds=*) rounds=${1#--rounds=} ;;
    --newshape-runs) shift; ns_runs=${1:-} ;;
    --newshape-runs=*) ns_runs=${1#--newshape-runs=} ;;
    --new-build) shift; new_build=${1:-} ;;
    --new-build=*) new_build=${1#--new-build=} ;;
    -h | --help) usage ;;
    -*) echo "compare.sh: unknown option '$1'" >&2; usage ;;
    *) [ -z "$base" ] || usage; base=$1 ;;
    esac
    shift
done
[ -n "$base" ] || usage
case "$rounds" in
"") rounds=$([ $quick = 1 ] && echo 3 || echo 5) ;;
*[!0-9]* | 0) echo "compare.sh: --rounds needs a positive integer" >&2; usage ;;
esac
case "$ns_runs" in
"" | *[!0-9]* | 0) echo "compare.sh: --newshape-runs needs a positive integer" >&2; usage ;;
esac
base=$(abspath "$base")
if [ ! -f "$base/meson.build" ] || [ ! -f "$base/bench/main.c" ]; then
    echo "compare.sh: $base is not a cgr source tree (no meson.build or bench/main.c)" >&2
    exit 64
fi
owned_new=1
if [ -n "$new_build" ]; then
    owned_new=0
    case "$new_build" in /*) ;; *) new_build="$(abspath "$new_build")" ;; esac
else
    new_build=$root/build-new
fi
budget=${CGR_COMPARE_BUDGET_S:-540}

OUT=${OUT:-/tmp/cgr-compare}
mkdir -p "$OUT" || exit 1
runs=$OUT/runs
# Only what this script wrote before: a fresh runs/ so the archive holds this run alone.
rm -rf "$runs" "$OUT/compare.tgz" "$OUT/compare.txt"
mkdir -p "$runs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$runs/gpu.txt" 2>&1

old_name=$base
[ -s "$base/.revision" ] && old_name="$(head -c 40 "$base/.revision" | tr -d '\n') ($base)"
new_name="working tree"
if rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null); then
    git -C "$root" diff --quiet HEAD 2>/dev/null && new_name=$rev || new_name="$rev + working tree changes"
fi
{
    echo "old=$old_name"
    echo "new=$new_name"
    echo "gpu=$(sed -n 2p "$runs/gpu.txt" 2>/dev/null | cut -d, -f1)"
    echo "newshape_runs=$ns_runs"
} >"$runs/info.txt"
: >"$runs/notes.txt"
note() { echo "$*" >>"$runs/notes.txt"; }

# ---- builds ----------------------------------------------------------------
# The option names the tree declares (meson_options.txt, or meson.options in
# newer meson layouts), so -Dtests=false is passed only where it exists.
has_option() {
    cat "$1/meson_options.txt" "$1/meson.options" 2>/dev/null |
        grep -qE "^[[:space:]]*option\([[:space:]]*'$2'"
}

# The source directory a configured build directory was set up for.
configured_source() {
    python3 -c 'import json, os, sys
print(os.path.realpath(json.load(open(sys.argv[1]))["directories"]["source"]))' \
        "$1/meson-info/meson-info.json" 2>/dev/null
}

# build_tree SRC BUILDDIR OWNED LOG: configures (once) and builds cgr-bench.
# A directory this script owns is set up without tests and wiped when it was
# configured for another source tree; one that was handed in (build-gpu) is
# left with the options its owner chose.
build_tree() {
    local src=$1 dir=$2 owned=$3 log=$4 opts=()
    if [ -f "$dir/build.ninja" ]; then
        local was
        was=$(configured_source "$dir")
        if [ -n "$was" ] && [ "$was" != "$(realpath "$src")" ]; then
            if [ "$owned" = 1 ]; then
                echo "$dir was configured for $was: set up again for $src" >>"$log"
                rm -rf "$dir"
            else
                echo "compare.sh: $dir is configured for $was, not $src" | tee -a "$log" >&2
                return 1
            fi
        fi
    fi
    if [ ! -f "$dir/build.ninja" ]; then
        if [ "$owned" = 1 ]; then
            has_option "$src" tests && opts+=(-Dtests=false)
            has_option "$src" bench && opts+=(-Dbench=true)
        fi
        meson setup "${opts[@]}" "$dir" "$src" >>"$log" 2>&1 || return 1
    fi
    # Only the bench binary; a tree whose targets are named otherwise builds everything.
    if ! ninja -C "$dir" bench/cgr-bench >>"$log" 2>&1; then
        grep -q "unknown target" "$log" || return 1
        ninja -C "$dir" >>"$log" 2>&1 || return 1
    fi
    [ -x "$dir/bench/cgr-bench" ]
}

status=0
built=1
for side in old new; do
    if [ $side = old ]; then
        src=$base dir=$root/build-base owned=1
    else
        src=$root dir=$new_build owned=$owned_new
    fi
    t0=$SECONDS
    if build_tree "$src" "$dir" "$owned" "$runs/build-$side.log"; then
        echo "compare: $side tree built in $dir ($((SECONDS - t0)) s)"
    else
        echo "compare: building the $side tree ($src in $dir) FAILED:"
        tail -n 30 "$runs/build-$side.log"
        note "the $side tree did not build (runs/build-$side.log)"
        built=0
    fi
done
bin_old=$root/build-base/bench/cgr-bench
bin_new=$new_build/bench/cgr-bench

# ---- what each side's cgr-bench offers -------------------------------------
# Its --help lists the suites (two spaces, then the name, under "suites:")
# and the options; it needs no GPU.
for side in old new; do
    b=$([ $side = old ] && echo "$bin_old" || echo "$bin_new")
    [ -x "$b" ] && "$b" --help >"$runs/help-$side.txt" 2>&1
done
has_suite() {
    awk '/^suites:/ { s = 1; next } /^options:/ { s = 0 } s && /^  [a-z]/ { print $1 }' \
        "$runs/help-$1.txt" 2>/dev/null | grep -qx "$2"
}
has_flag() {
    grep -qE -- "(^|[^a-z-])$2([^a-z-]|$)" "$runs/help-$1.txt" 2>/dev/null
}

suites="chain newshape serve mlp"
# The flags each suite runs with besides --json; serve and mlp use --quick
# (see the header) when that side's cgr-bench has it.
suite_flags() {
    case "$2" in
    serve | mlp) has_flag "$1" --quick && echo --quick ;;
    esac
}
for s in serve mlp; do
    has_flag old --quick && has_flag new --quick && echo "${s}_quick=1" >>"$runs/info.txt"
done
declare -A skip
for side in old new; do
    # A --help without the "suites:" list is a layout this script does not
    # know: then every suite is tried, and one the binary rejects (exit 64)
    # is dropped after its first run.
    grep -q '^suites:' "$runs/help-$side.txt" 2>/dev/null || continue
    has_flag $side --json || note "the $side cgr-bench has no --json: its figures are in the logs only"
    for s in $suites; do
        if ! has_suite $side $s; then
            skip[$side.$s]=1
            note "the $side cgr-bench has no '$s' suite: left out on that side"
        fi
    done
done

if [ $built = 0 ]; then
    # One side alone compares nothing; its build log says what to fix.
    status=1
    rounds=0
    echo "rounds=0 (a tree did not build)" >>"$runs/info.txt"
elif [ $build_only = 1 ]; then
    echo "compare: --build-only: old $bin_old, new $bin_new"
    echo "rounds=0 (--build-only)" >>"$runs/info.txt"
    rounds=0
fi

# ---- rounds ------------------------------------------------------------------
# run_one SIDE SUITE TAG: one cgr-bench run with its log and JSON file,
# named SIDE-SUITE-TAG; TAG is the round, or ROUND.K for the K-th run of a
# suite that runs several times a round. Returns its exit status; runs.tsv
# gets side, suite, tag, status, seconds.
run_one() {
    local side=$1 suite=$2 r=$3 b src flags=() json=() limits=()
    b=$([ $side = old ] && echo "$bin_old" || echo "$bin_new")
    src=$([ $side = old ] && echo "$base" || echo "$root")
    read -r -a flags <<<"$(suite_flags $side $suite)"
    has_flag $side --json || [ ! -s "$runs/help-$side.txt" ] &&
        json=(--json "$runs/$side-$suite-$r.json")
    # A cgr-bench built without the tests finds no limits file beside it: name its tree's.
    has_flag $side --limits && [ -f "$src/bench/limits.txt" ] &&
        limits=(--limits "$src/bench/limits.txt")
    local t0=$SECONDS rc
    # cgr-bench has its own watchdog; this limit only guards against a hang it misses.
    timeout -k 10 300 "$b" "$suite" "${flags[@]}" "${json[@]}" "${limits[@]}" \
        >"$runs/$side-$suite-$r.log" 2>&1
    rc=$?
    printf '%s\t%s\t%s\t%s\t%s\n' $side $suite $r $rc $((SECONDS - t0)) >>"$runs/runs.tsv"
    return $rc
}

done_rounds=0
longest=0
for ((r = 1; r <= rounds; r++)); do
    if [ $r -gt 1 ] && [ $((SECONDS + longest)) -gt "$budget" ]; then
        echo "stopped=time budget, CGR_COMPARE_BUDGET_S=$budget" >>"$runs/info.txt"
        echo "compare: not starting round $r: it would end past ${budget} s"
        break
    fi
    t0=$SECONDS
    no_device=0
    for s in $suites; do
        runs_of=1
        [ $s = newshape ] && runs_of=$ns_runs
        for ((k = 1; k <= runs_of; k++)); do
            order="old new"
            [ $(((r + k) % 2)) = 1 ] && order="new old"
            for side in $order; do
                [ -n "${skip[$side.$s]:-}" ] && continue
                tag=$r
                [ $runs_of -gt 1 ] && tag=$r.$k
                run_one $side $s $tag
                rc=$?
                case $rc in
                0) ;;
                2) no_device=1 ;;
                64) skip[$side.$s]=1; status=1
                    note "the $side cgr-bench rejected the '$s' command line; not run again" ;;
                *) status=1 ;;
                esac
                echo "compare: round $tag $side $s: exit $rc ($(tail -n 1 "$runs/runs.tsv" | cut -f5) s)"
                [ $no_device = 1 ] && break 3
            done
        done
    done
    if [ $no_device = 1 ]; then
        echo "compare: cgr-bench found no usable CUDA device; no more rounds"
        note "no usable CUDA device: stopped in round $r"
        status=1
        break
    fi
    done_rounds=$r
    [ $((SECONDS - t0)) -gt $longest ] && longest=$((SECONDS - t0))
done
[ $rounds -gt 0 ] && echo "rounds=$done_rounds of $rounds" >>"$runs/info.txt"

# ---- table and archive -------------------------------------------------------
if [ $build_only = 1 ]; then
    echo "no figures: built only" >"$OUT/compare.txt"
else
    make_table "$runs" >"$OUT/compare.txt" 2>&1 || status=1
fi
# At most a few files come back from the GPU machine: everything but the
# table goes into one archive.
(cd "$OUT" && tar czf compare.tgz runs && rm -rf runs)
echo
cat "$OUT/compare.txt"
exit $status
