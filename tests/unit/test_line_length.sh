#!/bin/sh
# The C, C++ and CUDA sources keep to 100 characters a line (docs/contributing.md):
# a reader with two files side by side, or a review tool's diff, sees whole
# lines. Lists every longer line as FILE:LINE: LENGTH and fails on any.
#   test_line_length.sh SOURCE_ROOT
exec python3 - "$1" <<'PY'
import os, sys

root = sys.argv[1]
folders = ["lib", "capture", "replay", "allocator", "comm", "bench", "tests", "examples"]
kinds = (".c", ".h", ".cu", ".cuh", ".cpp", ".h.in")
checked, long_lines = 0, 0
for folder in folders:
    for top, dirs, files in os.walk(os.path.join(root, folder)):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(kinds):
                continue
            path = os.path.join(top, name)
            checked += 1
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    width = len(line.rstrip("\n"))
                    if width > 100:
                        print(f"{os.path.relpath(path, root)}:{n}: {width} characters")
                        long_lines += 1
if checked < 100:
    print(f"test_line_length: only {checked} source files under {root}: wrong root?")
    sys.exit(1)
print(f"{checked} files, {long_lines} lines over 100 characters")
sys.exit(1 if long_lines else 0)
PY
