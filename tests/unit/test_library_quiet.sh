#!/bin/sh
# The library never prints, exits or aborts unless asked (docs/contributing.md,
# "Errors"): it writes to stdout or stderr only through its logger (lib/core/core.c,
# at cgr_options.log_level) and stops a process only at cgr's own bug in a build
# with assertions (CGR_BUG, lib/base/error.c). Lists every other call that would,
# as FILE:LINE, and fails on any.
#   test_library_quiet.sh SOURCE_ROOT
exec python3 - "$1" <<'PY'
import os, re, sys

root = sys.argv[1]
allowed = {"lib/core/core.c": 1, "lib/base/error.c": 2}  # the logger; CGR_BUG's print and abort
bad = re.compile(r"\b(printf|puts|putchar|perror|exit|_exit|_Exit|quick_exit|abort)\s*\("
                 r"|\b(fprintf|fputs|fputc|fwrite|vfprintf)\s*\([^;]*\b(stdout|stderr)\b")
hits, seen, files = [], {}, 0
for folder in ["lib", "capture", "replay", "allocator", "comm"]:
    for top, dirs, names in os.walk(os.path.join(root, folder)):
        dirs.sort()
        for name in sorted(names):
            if not name.endswith((".c", ".cu", ".h")):
                continue
            path = os.path.join(top, name)
            rel = os.path.relpath(path, root)
            files += 1
            text = open(path, encoding="utf-8").read()
            text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text,
                          flags=re.S)
            for n, line in enumerate(text.split("\n"), 1):
                if bad.search(line):
                    seen[rel] = seen.get(rel, 0) + 1
                    hits.append(f"{rel}:{n}: {line.strip()}")
if files < 50:
    print(f"test_library_quiet: only {files} library files under {root}: wrong root?")
    sys.exit(1)
failed = [h for h in hits if seen[h.split(":")[0]] != allowed.get(h.split(":")[0])]
for rel, n in allowed.items():
    if seen.get(rel, 0) != n:
        failed.append(f"{rel}: {seen.get(rel, 0)} calls that print or stop, expected {n}")
for h in failed:
    print(h)
print(f"{files} files, {len(hits)} calls that print or stop, {len(failed)} not allowed")
sys.exit(1 if failed else 0)
PY
