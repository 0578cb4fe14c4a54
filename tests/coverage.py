#!/usr/bin/env python3
"""Line coverage of the library's sources, from a build made by tests/coverage.sh.

Reads every .gcda file under BUILD with gcov's JSON output (gcc 9 or newer),
adds up the counts of each source line over all objects that compiled it (the
shared and static library, and the unit tests that compile a module on its
own), and prints one row per file of lib/, capture/, replay/, allocator/ and
comm/: lines run, lines gcov counts, the share. With --uncovered FILE it also
writes the lines never run, as ranges per file ("replay/run.c: 40-42, 97"),
which is where a new test would start. CUDA files (.cu) are not counted: nvcc
compiles them without gcov.
"""
import argparse
import collections
import json
import os
import subprocess
import sys

LAYERS = ("lib", "capture", "replay", "allocator", "comm")


def gcov_json(directory, names):
    """The JSON documents gcov prints for the .gcda files `names` in `directory`."""
    out = subprocess.run(["gcov", "--json-format", "--stdout"] + names, cwd=directory,
                         capture_output=True, text=True)
    if out.returncode != 0:
        # One object's data (say, left from before a rebuild) should not hide the rest.
        print(f"coverage: gcov failed in {directory}, left out: {out.stderr.strip()[:300]}",
              file=sys.stderr)
    for line in out.stdout.splitlines():
        if line.strip():
            yield json.loads(line)


def collect(build, root):
    """{source relative to root: {line: count}} over every .gcda under build."""
    counts = collections.defaultdict(lambda: collections.defaultdict(int))
    for directory, _, files in os.walk(build):
        names = sorted(f for f in files if f.endswith(".gcda"))
        if not names:
            continue
        for doc in gcov_json(directory, names):
            base = doc.get("current_working_directory", directory)
            for f in doc["files"]:
                path = os.path.realpath(os.path.join(base, f["file"]))
                rel = os.path.relpath(path, root)
                if rel.split(os.sep)[0] not in LAYERS:
                    continue
                for ln in f["lines"]:
                    counts[rel][ln["line_number"]] += ln["count"]
    return counts


def ranges(numbers):
    """[3, 4, 5, 9] -> "3-5, 9"."""
    out, start, prev = [], None, None
    for n in numbers + [None]:
        if start is not None and n == prev + 1:
            prev = n
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = n
    return ", ".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", help="the coverage build directory")
    ap.add_argument("--uncovered", metavar="FILE", help="write the lines never run here")
    args = ap.parse_args()
    root = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
    counts = collect(args.build, root)
    if not counts:
        sys.exit(f"coverage: no .gcda data for the library under {args.build}: "
                 "build it with tests/coverage.sh and run a suite first")
    rows, total_run, total = [], 0, 0
    for rel in sorted(counts):
        lines = counts[rel]
        run = sum(1 for c in lines.values() if c > 0)
        rows.append((rel, run, len(lines)))
        total_run += run
        total += len(lines)
    width = max(len(r[0]) for r in rows)
    for rel, run, n in rows:
        print(f"{rel:<{width}}  {run:5d} / {n:5d}  {100.0 * run / n:5.1f} %")
    print(f"{'all':<{width}}  {total_run:5d} / {total:5d}  {100.0 * total_run / total:5.1f} %")
    if args.uncovered:
        with open(args.uncovered, "w") as f:
            for rel in sorted(counts):
                never = sorted(n for n, c in counts[rel].items() if c == 0)
                if never:
                    f.write(f"{rel}: {ranges(never)}\n")


if __name__ == "__main__":
    main()
