#!/bin/sh
# tests/compare.sh --table on runs/ directories made up here: the per-round
# figure of a suite that ran several processes a side (newshape) is their
# median, a process without the figure is left out of it, and an archive
# from before that layout (one newshape file a round) reads as it did. The
# values are chosen so that the mean, the first or the last process would
# each give another row. Needs no GPU; python3 writes the files and
# compare.sh's table needs it anyway.
#   test_compare_table.sh PATH_TO_COMPARE_SH
compare=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0

python3 - "$tmp" <<'EOF' || exit 1
import json, os, sys

root = sys.argv[1]

def newshape(b16, ran=True):
    bucket = lambda b, v: {"bucket": b, "ran": ran, "capture_instantiate_us": {"median": v}}
    return {"device": {"name": "test GPU"},
            "pairs": [{"path": "cuBLAS", "buckets": [bucket(16, b16), bucket(32, b16 + 1)],
                       "update": {"ran": ran, "updates": 30,
                                  "capture_update_us": {"median": b16 / 2}}}]}

def chain(ratio):
    mode = {"ok": True, "host_cpu_us": {"median": 3.0}}
    return {"chain": [{"n_kernels": 10, "ratios": {"cgr_over_graph_per_kernel": ratio},
                       "modes": {"cgr": mode, "graph": mode}}]}

def write(d, name, obj):
    with open(os.path.join(root, d, name), "w") as f:
        json.dump(obj, f)

# Three newshape processes a side in each of two rounds; medians of the
# rounds: old 300 and 320, new 160 and 220.
os.mkdir(os.path.join(root, "three"))
runs = {"old": [[200, 300, 310], [330, 320, 210]], "new": [[150, 160, 200], [140, 230, 220]]}
for side, rounds in runs.items():
    for r, values in enumerate(rounds, 1):
        write("three", "%s-chain-%d.json" % (side, r), chain(1.1 if side == "old" else 1.03))
        for k, v in enumerate(values, 1):
            write("three", "%s-newshape-%d.%d.json" % (side, r, k), newshape(v))
with open(os.path.join(root, "three", "info.txt"), "w") as f:
    f.write("old=a\nnew=b\nrounds=2 of 2\nnewshape_runs=3\n")

# Round 2's middle new process has no figure: that round's new median is 180.
os.mkdir(os.path.join(root, "missing"))
for side, rounds in runs.items():
    for r, values in enumerate(rounds, 1):
        for k, v in enumerate(values, 1):
            gone = side == "new" and r == 2 and k == 2
            write("missing", "%s-newshape-%d.%d.json" % (side, r, k), newshape(v, not gone))
with open(os.path.join(root, "missing", "info.txt"), "w") as f:
    f.write("old=a\nnew=b\nrounds=2 of 2\nnewshape_runs=3\n")

# The layout of older archives: one newshape file a round.
os.mkdir(os.path.join(root, "one"))
for side, values in {"old": [300, 320], "new": [160, 220]}.items():
    for r, v in enumerate(values, 1):
        write("one", "%s-newshape-%d.json" % (side, r), newshape(v))
with open(os.path.join(root, "one", "info.txt"), "w") as f:
    f.write("old=a\nnew=b\nrounds=2 of 2\n")
EOF

# table DIR: the table of the made-up runs in DIR.
table() {
    bash "$compare" --table "$tmp/$1"
}
# row DIR LABEL EXPECTED: the table's row LABEL, from its old column on, must be EXPECTED.
row() {
    line=$(table "$1" | grep -F "$2")
    got=$(printf '%s\n' "${line#"$2"}" | tr -s ' ' | sed 's/^ //')
    if [ "$got" != "$3" ]; then
        echo "FAILED: $1: '$2' reads '$got', expected '$3'"
        failed=1
    fi
}
# has DIR TEXT, lacks DIR TEXT: the table of DIR must, or must not, hold TEXT.
has() {
    table "$1" | grep -F "$2" >/dev/null || {
        echo "FAILED: $1: no line with '$2'"
        failed=1
    }
}
lacks() {
    ! table "$1" | grep -F "$2" >/dev/null || {
        echo "FAILED: $1: a line with '$2'"
        failed=1
    }
}

# figure: old, new, new/old, paired (median of 160/300 and 220/320), spreads, rounds
row three "newshape cuBLAS b16 capture+instantiate us" "310.0 190.0 0.613 0.610 6.5% 31.6% 2/2"
row three "newshape cuBLAS 16<->32 capture+update us" "155.0 95.0 0.613 0.610 6.5% 31.6% 2/2"
row three "W-chain N=10 cgr/raw graph per kernel" "1.100 1.030 0.936 0.936 0.0% 0.0% 2/2"
has three "each round's figure is the median of 3 processes a side"
has three "device: test GPU"
row missing "newshape cuBLAS b16 capture+instantiate us" "310.0 170.0 0.548 0.548 6.5% 11.8% 2/2"
row one "newshape cuBLAS b16 capture+instantiate us" "310.0 190.0 0.613 0.610 6.5% 31.6% 2/2"
lacks one "median of"
[ $failed = 0 ] && echo "PASS: compare.sh's table, one and three processes a round"
exit $failed
