#!/usr/bin/env python3
"""Rules of cgr's sources that no compiler checks (docs/contributing.md),
one per unit test:

    source_rules.py RULE SOURCE_ROOT

line_length     C, C++ and CUDA lines are at most 100 characters: a reader
                with two files side by side, or a review tool's diff, sees
                whole lines.
status_checked  Every CUDA, cuBLAS, cuDNN, NCCL, CUPTI and driver call has
                its status checked, or is written (void)call(...) where
                nothing can act on a failure (lib/base/check.h says when),
                so that a dropped status is always a decision a reader can
                see. In the library, the bench, the tests and the examples.
library_quiet   The library prints only through its logger (lib/core/core.c,
                at cgr_options.log_level) and stops a process only at its
                own bug in a build with assertions (CGR_BUG, lib/base/error.c).

Lists each place that breaks the rule as FILE:LINE and exits 1 when there
is one; the last line counts what was read.
"""
import os
import re
import sys

LIBRARY = ["lib", "capture", "replay", "allocator", "comm"]
EVERYTHING = LIBRARY + ["bench", "examples", "tests"]


def sources(root, folders, kinds):
    for folder in folders:
        for top, dirs, names in os.walk(os.path.join(root, folder)):
            dirs.sort()
            for name in sorted(names):
                if name.endswith(kinds):
                    path = os.path.join(top, name)
                    yield os.path.relpath(path, root), open(path, encoding="utf-8").read()


def without_comments(text):
    """text with its comments blanked, lines kept (strings are not parsed:
    cgr's sources keep comment markers out of them)."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def line_length(root):
    hits, n = [], 0
    for rel, text in sources(root, EVERYTHING, (".c", ".h", ".cu", ".cuh", ".cpp", ".h.in")):
        n += 1
        for i, line in enumerate(text.split("\n"), 1):
            if len(line) > 100:
                hits.append("%s:%d: %d characters" % (rel, i, len(line)))
    return hits, n


# A statement that starts with a call of the libraries' own names, directly
# or through one of cgr's tables of loaded functions (dynload.c, arena.c).
CALL = re.compile(r"^(?:[A-Za-z_]\w*(?:\(\))?(?:->|\.))?"
                  r"((?:cuda|cu|cublas|cudnn|nccl|cupti)[A-Z]\w*|vmm\.\w+)\s*\(")
# Calls that return nothing.
VOID_CALLS = {"cudaGridDependencySynchronize", "cudaTriggerProgrammaticLaunchCompletion",
              "cudnnGetLastErrorString"}
# Lines after which a new statement starts: a control line, a label.
CONTROL = re.compile(r"^(if|for|while|else|do|switch)\b|^(case\b.*|default\s*):$")


def whole_statement(lines, i, col):
    """Whether the call whose '(' is at lines[i][col] is all of its statement."""
    depth, seen = 0, False
    for line in lines[i:]:
        for ch in line[col:]:
            if seen and depth == 0:
                if ch.isspace():
                    continue
                return ch == ";"
            if ch == "(":
                depth, seen = depth + 1, True
            elif ch == ")":
                depth -= 1
        col = 0
    return False


def status_checked(root):
    hits, n = [], 0
    for rel, text in sources(root, EVERYTHING, (".c", ".h", ".cu", ".cpp")):
        n += 1
        lines, prev = without_comments(text).split("\n"), ""
        for i, line in enumerate(lines):
            s = line.strip()
            if not s:
                continue
            m = CALL.match(s)
            starts = (prev == "" or prev.endswith((";", "{", "}", ":"))
                      or (CONTROL.match(prev) and prev.endswith((")", "else", "do"))))
            paren = len(line) - len(line.lstrip()) + m.end() - 1 if m else 0
            if m and m.group(1) not in VOID_CALLS and starts and whole_statement(lines, i, paren):
                hits.append("%s:%d: %s drops its status (write (void) if that is meant)"
                            % (rel, i + 1, m.group(1)))
            prev = s
    return hits, n


ALLOWED_STOPS = {"lib/core/core.c": 1, "lib/base/error.c": 2}  # the logger; CGR_BUG
STOPS = re.compile(r"\b(printf|puts|putchar|perror|exit|_exit|_Exit|quick_exit|abort)\s*\("
                   r"|\b(fprintf|fputs|fputc|fwrite|vfprintf)\s*\([^;]*\b(stdout|stderr)\b")


def library_quiet(root):
    found, n = {}, 0
    for rel, text in sources(root, LIBRARY, (".c", ".h", ".cu")):
        n += 1
        for i, line in enumerate(without_comments(text).split("\n"), 1):
            if STOPS.search(line):
                found.setdefault(rel, []).append("%s:%d: %s" % (rel, i, line.strip()))
    hits = []
    for rel, places in found.items():
        if len(places) != ALLOWED_STOPS.get(rel):
            hits += places
    for rel, want in ALLOWED_STOPS.items():
        if len(found.get(rel, [])) != want:
            hits.append("%s: %d calls that print or stop, expected %d"
                        % (rel, len(found.get(rel, [])), want))
    return hits, n


RULES = {"line_length": line_length, "status_checked": status_checked,
         "library_quiet": library_quiet}


def main(argv):
    if len(argv) != 3 or argv[1] not in RULES:
        print("usage: source_rules.py %s SOURCE_ROOT" % "|".join(RULES), file=sys.stderr)
        return 2
    hits, n = RULES[argv[1]](argv[2])
    for h in hits:
        print(h)
    if n < 50:
        print("%s: only %d source files under %s: wrong root?" % (argv[1], n, argv[2]))
        return 1
    print("%s: %d files, %d places that break the rule" % (argv[1], n, len(hits)))
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
