#!/usr/bin/env python3
"""Per-kernel timeline of the replays in a cgr-bench --trace file.

Each trace process (pid) holds the profiled replays of one graph, for
example one W-serve bucket. The kernels are split into replays of equal
length (the kernel count divided by --replays), and for each position in
the replay it prints medians over the replays of:
  dur    the kernel's recorded duration (with PDL it includes the wait
         for the kernel before it);
  start  its start, from the replay's first kernel's start;
  gap    its start minus the previous kernel's end (negative: overlap);
  end+   the end minus the previous kernel's end, i.e. what the kernel
         adds to the replay's span.
Then the replay's span (first start to last end).

    python3 bench/prof/trace_steps.py trace.json [--replays 50]
"""
import argparse
import json
import statistics
import sys


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--replays", type=int, default=50)
    a = ap.parse_args()
    with open(a.trace) as f:
        ev = json.load(f)["traceEvents"]
    names = {}
    by_pid = {}
    for e in ev:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            names[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "X" and e.get("cat") in ("kernel", "memcpy", "memset"):
            by_pid.setdefault(e["pid"], []).append(e)
    for pid in sorted(by_pid):
        ks = sorted(by_pid[pid], key=lambda e: float(e["ts"]))
        n = len(ks) // a.replays
        if n == 0 or len(ks) % a.replays:
            print(f"{names.get(pid, pid)}: {len(ks)} records, not {a.replays} equal replays")
            continue
        print(f"\n{names.get(pid, pid)}: {n} kernels per replay, {a.replays} replays")
        print(f"  {'#':>2} {'dur':>6} {'start':>6} {'gap':>6} {'end+':>6}  kernel")
        spans = []
        cols = [[[] for _ in range(4)] for _ in range(n)]
        for r in range(a.replays):
            rep = ks[r * n:(r + 1) * n]
            t0 = float(rep[0]["ts"])
            prev_end = None
            for i, e in enumerate(rep):
                ts, du = float(e["ts"]), float(e["dur"])
                cols[i][0].append(du)
                cols[i][1].append(ts - t0)
                if prev_end is not None:
                    cols[i][2].append(ts - prev_end)
                    cols[i][3].append(ts + du - prev_end)
                prev_end = ts + du if prev_end is None else max(prev_end, ts + du)
            spans.append(prev_end - t0)
        for i in range(n):
            d, s, g, p = (med(c) for c in cols[i])
            name = ks[i]["name"][:70]
            print(f"  {i:>2} {d:6.2f} {s:6.2f} {g:6.2f} {p:6.2f}  {name}")
        print(f"  span p50 {med(spans):.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
