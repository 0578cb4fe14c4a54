#!/usr/bin/env python3
"""Side-by-side comparison of cgr-bench and torch_peer.py results.

Both files use one simple common schema: a JSON object with a list under
"results" (a bare list is accepted too), each entry

    {"workload": "mlp", "B": 1, "mode": "graph",
     "wall_us": {"p50": 123.4, ...}, "busy_us": 100.0, ...}

where wall_us may also be a plain number (taken as the p50), busy_us may be
null or absent, and entries with an "error" key are shown as failed.
Only workloads present in both files are listed (--all lists every one).
Workload names are compared case-insensitively, with a leading "W-" dropped
and "_" read as "-" (so "W-mlp", "w_mlp" and "mlp" match); "batch" is accepted
for "B". cgr-bench marks its variants with "+" suffixes: "+drop" is the
dropout workload (torch's "mlp-dropout"), and any other suffix ("+pdl") is a
way of running the same workload, shown as its own row against the same
torch figures.

For every workload and B it prints p50 wall us of cgr's graph mode (and its
eager mode, if present), of torch eager and torch graph, GPU busy us, and two
ratios of p50 wall time:

    vs torch eager = torch eager / cgr graph
    vs torch graph = torch graph / cgr graph

so a ratio above 1 means cgr's replay is that many times faster.

Usage:
  python3 bench/peer/compare.py --torch torch_peer.json --cgr cgr_bench.json \\
      [--cgr more.json ...] [--cgr-mode graph] [--json comparison.json] [--markdown]

Exit status: 0 when at least one workload/B pair could be compared, 1 when
none could, 2 on unreadable input.
"""

import argparse
import json
import math
import sys


def norm_workload(name):
    """'W-mlp+pdl+drop' -> 'mlp-dropout+pdl'; 'W_cnn' -> 'cnn'."""
    w = str(name).strip().lower().replace("_", "-")
    if w.startswith("w-"):
        w = w[2:]
    base, *flags = w.split("+")
    if "drop" in flags:
        base += "-dropout"
    rest = [f for f in flags if f != "drop"]
    return "+".join([base] + rest)


def base_workload(w):
    """The torch workload a (normalized) cgr workload is compared with."""
    return w.split("+")[0]


def num_or_none(v):
    """v as a positive finite float, else None."""
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v > 0 else None


def p50_of(wall):
    """The p50 (or median) of a wall_us object, or a plain number."""
    return num_or_none(wall.get("p50", wall.get("median")) if isinstance(wall, dict) else wall)


def load(path, label):
    try:
        with open(path, "r", encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        sys.stderr.write("compare.py: cannot read %s file %s: %s\n" % (label, path, exc))
        sys.exit(2)
    results = doc.get("results") if isinstance(doc, dict) else doc
    if not isinstance(results, list):
        sys.stderr.write("compare.py: %s file %s has no \"results\" list\n" % (label, path))
        sys.exit(2)
    table = {}
    skipped = 0
    for r in results:
        if not isinstance(r, dict) or "workload" not in r or "mode" not in r:
            skipped += 1
            continue
        B = r.get("B", r.get("batch"))
        try:
            B = int(B)
        except (TypeError, ValueError):
            skipped += 1
            continue
        key = (norm_workload(r["workload"]), B, str(r["mode"]).strip().lower())
        table[key] = {
            "p50": None if "error" in r else p50_of(r.get("wall_us")),
            "busy": None if "error" in r else num_or_none(r.get("busy_us")),
            # cgr-bench only: the union of the kernel intervals (PDL overlaps them)
            "busy_u": None if "error" in r else num_or_none(r.get("busy_union_us")),
            "error": r.get("error"),
        }
    if skipped:
        sys.stderr.write("compare.py: %s: skipped %d entries without workload/B/mode\n"
                         % (path, skipped))
    meta = doc if isinstance(doc, dict) else {}
    return table, meta


def ratio(num, den):
    if num is None or den is None:
        return None
    return num / den


def fmt(v, width, spec="%.1f"):
    if v is None:
        return "-".rjust(width)
    return (spec % v).rjust(width)


def build_rows(cgr, torch, cgr_mode, cgr_eager_mode, t_eager_mode, t_graph_mode, show_all):
    pairs = {(w, b) for (w, b, _) in list(cgr) + list(torch)}
    if not show_all:
        # Only workloads that both runs measured (cgr-bench also has W-chain etc.).
        torch_names = {w for (w, _, _) in torch}
        pairs = {(w, b) for (w, b, _) in cgr if base_workload(w) in torch_names}
    pairs = sorted(pairs)
    rows = []
    for w, b in pairs:
        cg = cgr.get((w, b, cgr_mode), {})
        ce = cgr.get((w, b, cgr_eager_mode), {})
        te = torch.get((base_workload(w), b, t_eager_mode), {})
        tg = torch.get((base_workload(w), b, t_graph_mode), {})
        errors = []
        for name, e in (("cgr " + cgr_mode, cg), ("cgr " + cgr_eager_mode, ce),
                        ("torch " + t_eager_mode, te), ("torch " + t_graph_mode, tg)):
            if e.get("error"):
                errors.append("%s: %s" % (name, e["error"]))
        rows.append({
            "workload": w,
            "B": b,
            "cgr_graph_p50": cg.get("p50"),
            "cgr_eager_p50": ce.get("p50"),
            "torch_eager_p50": te.get("p50"),
            "torch_graph_p50": tg.get("p50"),
            "cgr_graph_busy": cg.get("busy"),
            "cgr_graph_busy_u": cg.get("busy_u"),
            "torch_eager_busy": te.get("busy"),
            "torch_graph_busy": tg.get("busy"),
            "cgr_vs_torch_eager": ratio(te.get("p50"), cg.get("p50")),
            "cgr_vs_torch_graph": ratio(tg.get("p50"), cg.get("p50")),
            "cgr_overhead": ratio(cg.get("p50"), cg.get("busy")),
            "cgr_overhead_u": ratio(cg.get("p50"), cg.get("busy_u")),
            "torch_graph_overhead": ratio(tg.get("p50"), tg.get("busy")),
            "errors": errors,
        })
    return rows


COLUMNS = [
    # header, key, width, format
    ("workload", "workload", 16, None),
    ("B", "B", 5, None),
    ("cgr graph", "cgr_graph_p50", 10, "%.1f"),
    ("cgr eager", "cgr_eager_p50", 10, "%.1f"),
    ("torch eager", "torch_eager_p50", 11, "%.1f"),
    ("torch graph", "torch_graph_p50", 11, "%.1f"),
    ("vs t.eager", "cgr_vs_torch_eager", 10, "%.2fx"),
    ("vs t.graph", "cgr_vs_torch_graph", 10, "%.2fx"),
    ("cgr busy", "cgr_graph_busy", 9, "%.1f"),
    ("cgr busy-u", "cgr_graph_busy_u", 10, "%.1f"),
    ("t.graph busy", "torch_graph_busy", 12, "%.1f"),
    ("cgr wall/busy", "cgr_overhead", 13, "%.2f"),
    ("cgr wall/busy-u", "cgr_overhead_u", 15, "%.2f"),
    ("t.graph wall/busy", "torch_graph_overhead", 17, "%.2f"),
]


def print_text(rows, out):
    head = " ".join(h.rjust(wd) if i > 0 else h.ljust(wd)
                    for i, (h, _, wd, _) in enumerate(COLUMNS))
    out.write("p50 wall us per step; ratios = torch p50 / cgr graph p50 (> 1: cgr faster)\n"
              "busy: sum of kernel and memcpy durations; busy-u: their union on the timeline\n")
    out.write(head + "\n" + "-" * len(head) + "\n")
    for r in rows:
        cells = []
        for i, (_, key, wd, spec) in enumerate(COLUMNS):
            v = r[key]
            if spec is None:
                cells.append(str(v).ljust(wd) if i == 0 else str(v).rjust(wd))
            else:
                cells.append(fmt(v, wd, spec))
        out.write(" ".join(cells) + "\n")
        for e in r["errors"]:
            out.write("    ! %s\n" % e)


def print_markdown(rows, out):
    out.write("| " + " | ".join(h for h, _, _, _ in COLUMNS) + " |\n")
    out.write("|" + "|".join(" --- " for _ in COLUMNS) + "|\n")
    for r in rows:
        cells = []
        for _, key, _, spec in COLUMNS:
            v = r[key]
            cells.append(str(v) if spec is None else (spec % v if v is not None else "-"))
        out.write("| " + " | ".join(cells) + " |\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description="Compare cgr-bench and torch_peer.py results.")
    ap.add_argument("--torch", required=True, help="torch_peer.py JSON")
    ap.add_argument("--cgr", required=True, action="append",
                    help="cgr-bench JSON (common schema); may be given more than once")
    ap.add_argument("--cgr-mode", default="graph", help="cgr's replay mode name (default graph)")
    ap.add_argument("--cgr-eager-mode", default="eager", help="cgr's eager mode name (default eager)")
    ap.add_argument("--torch-eager-mode", default="eager")
    ap.add_argument("--torch-graph-mode", default="graph")
    ap.add_argument("--workload", default=None, help="only these workloads (comma list)")
    ap.add_argument("--json", default=None, help="write the comparison rows to this file")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table instead")
    ap.add_argument("--all", action="store_true",
                    help="also list workloads that only one of the two runs has")
    args = ap.parse_args(argv)

    torch_t, torch_meta = load(args.torch, "torch")
    cgr_t, cgr_meta = {}, {}
    for path in args.cgr:
        t, m = load(path, "cgr")
        cgr_t.update(t)
        cgr_meta = cgr_meta or m
    if args.workload:
        keep = {norm_workload(w) for w in args.workload.split(",") if w.strip()}
        torch_t = {k: v for k, v in torch_t.items() if k[0] in keep}
        cgr_t = {k: v for k, v in cgr_t.items() if base_workload(k[0]) in keep}

    td, cd = torch_meta.get("device"), cgr_meta.get("device")
    # cgr-bench writes the device as an object; torch_peer.py as its name.
    if isinstance(td, dict):
        td = td.get("name")
    if isinstance(cd, dict):
        cd = cd.get("name")
    if td or cd:
        print("devices: torch %s; cgr %s" % (td or "?", cd or "?"))
        if td and cd and str(td).strip() != str(cd).strip():
            sys.stderr.write("compare.py: warning: the two runs report different devices\n")

    rows = build_rows(cgr_t, torch_t, args.cgr_mode.lower(), args.cgr_eager_mode.lower(),
                      args.torch_eager_mode.lower(), args.torch_graph_mode.lower(), args.all)
    if args.markdown:
        print_markdown(rows, sys.stdout)
    else:
        print_text(rows, sys.stdout)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"torch": args.torch, "cgr": args.cgr, "rows": rows}, f, indent=2)
            f.write("\n")
    compared = sum(1 for r in rows
                   if r["cgr_vs_torch_eager"] is not None or r["cgr_vs_torch_graph"] is not None)
    if compared == 0:
        sys.stderr.write("compare.py: no workload/B pair has both a cgr %r result and a torch "
                         "result\n" % args.cgr_mode)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
