#!/usr/bin/env python3
"""Asks whether unit tests notice a change to the code they test.

    python3 tests/mutate.py [--build DIR] [--most N] SOURCE TEST...

Each mutant turns one comparison or logical operator of SOURCE around
(< and <=, > and >=, == and !=, && and ||) or moves a +1 or -1 by one; the
build dir's TEST executables (paths below DIR, such as tests/test_planner)
are rebuilt with ninja and run. A mutant survives when it compiles and
every TEST still exits 0. Comments, string literals and preprocessor lines
are left alone. SOURCE is restored when the script ends, however it ends.

A survivor is a place to look, not a verdict: some mutants compute the same
as the code (a tie broken the other way, a bound no input reaches), and an
out-of-bounds read may pass here and fail under the ASan build that CI runs
(pass --build build-asan). The rest are behaviour no test pins down.
Prints one line per survivor and a count; exits 1 when any survived.
"""
import argparse
import os
import re
import subprocess
import sys

SWAPS = [
    (r"(?<![<>=!-])<(?![<=])", "<="),
    (r"<=", "<"),
    (r"(?<![<>=!-])>(?![>=])", ">="),
    (r">=", ">"),
    (r"==", "!="),
    (r"!=", "=="),
    (r"&&", "||"),
    (r"\|\|", "&&"),
    (r"(?<!\+)\+ 1\b", "+ 2"),
    (r"(?<!-)- 1\b", "- 2"),
]


def code_spans(line, in_comment):
    """The parts of a line outside comments and string and character literals, and
    whether a block comment is still open at its end."""
    spans, start, i, quote = [], 0, 0, None
    while i < len(line):
        if in_comment:
            end = line.find("*/", i)
            if end < 0:
                return spans, True
            in_comment, i = False, end + 2
            start = i
            continue
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote, start = None, i + 1
        elif c in "\"'":
            spans.append((start, i))
            quote = c
        elif line.startswith("//", i):
            break
        elif line.startswith("/*", i):
            spans.append((start, i))
            in_comment = True
            i += 2
            continue
        i += 1
    if not quote and not in_comment:
        spans.append((start, i))
    return spans, in_comment


def mutants(text):
    in_comment = False
    for n, line in enumerate(text.split("\n")):
        spans, open_after = code_spans(line, in_comment)
        skip = not in_comment and line.lstrip().startswith("#")
        in_comment = open_after
        if skip:
            continue
        for a, b in spans:
            for pattern, repl in SWAPS:
                for m in re.finditer(pattern, line[a:b]):
                    yield n, a + m.start(), a + m.end(), repl


def run(cmd, timeout):
    # Only the exit status counts; a mutant that loops printing must not fill memory.
    try:
        return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return -1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="meson build dir (default: build)")
    ap.add_argument("--most", type=int, default=0, help="try at most N mutants (0: all)")
    ap.add_argument("--lines", metavar="A-B",
                    help="mutate only lines A to B of SOURCE (1-based, inclusive), say a "
                    "function just changed")
    ap.add_argument("source")
    ap.add_argument("tests", nargs="+")
    args = ap.parse_args()

    with open(args.source) as f:
        original = f.read()
    lines = original.split("\n")
    first, last = 1, len(lines)
    if args.lines:
        try:
            first, last = (int(x) for x in args.lines.split("-"))
        except ValueError:
            sys.exit(f"mutate: --lines takes A-B, two line numbers, not '{args.lines}'")
    targets = [os.path.normpath(t) for t in args.tests]
    if run(["ninja", "-C", args.build] + targets, 600) != 0:
        sys.exit(f"mutate: the unchanged tree does not build {' '.join(targets)}")
    for t in targets:
        if run([os.path.join(args.build, t)], 120) != 0:
            sys.exit(f"mutate: {t} fails before any mutant")

    tried, survived = 0, []
    try:
        for n, a, b, repl in mutants(original):
            if not first <= n + 1 <= last:
                continue
            if args.most and tried == args.most:
                break
            changed = lines[n][:a] + repl + lines[n][b:]
            with open(args.source, "w") as f:
                f.write("\n".join(lines[:n] + [changed] + lines[n + 1 :]))
            if run(["ninja", "-C", args.build] + targets, 600) != 0:
                continue  # does not compile: no mutant
            tried += 1
            if all(run([os.path.join(args.build, t)], 120) == 0 for t in targets):
                survived.append(f"{args.source}:{n + 1}: {lines[n].strip()}  ->  {changed.strip()}")
    finally:
        with open(args.source, "w") as f:
            f.write(original)
        run(["ninja", "-C", args.build] + targets, 600)
    for s in survived:
        print(s)
    print(f"mutate: {args.source}: {tried} mutants, {len(survived)} survived")
    sys.exit(1 if survived else 0)


if __name__ == "__main__":
    main()
