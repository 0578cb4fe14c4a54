#!/bin/sh
# Every CUDA, cuBLAS, cuDNN, NCCL, CUPTI and driver call has its status
# checked, or is written (void)call(...) where nothing can act on a failure
# (a release after the stream was synchronized, a best-effort query), so
# that a dropped status is always a decision a reader can see. Lists each
# statement that calls one of them and drops its result, as FILE:LINE, and
# fails on any.
#   test_status_checked.sh SOURCE_ROOT
exec python3 - "$1" <<'PY'
import os, re, sys

root = sys.argv[1]
folders = ["lib", "capture", "replay", "allocator", "comm", "bench", "examples", "tests"]
# A statement that starts with a call of the libraries' own names, directly
# or through one of cgr's tables of loaded functions (dynload.c, arena.c).
call = re.compile(r"^(?:[A-Za-z_]\w*(?:\(\))?(?:->|\.))?"
                  r"((?:cuda|cu|cublas|cudnn|nccl|cupti)[A-Z]\w*|vmm\.\w+)\s*\(")
# Calls that return nothing.
void_calls = {"cudaGridDependencySynchronize", "cudaTriggerProgrammaticLaunchCompletion",
              "cudnnGetLastErrorString"}
# Lines after which a new statement starts (a control line, a label, a block's edge).
control = re.compile(r"^(if|for|while|else|do|switch)\b|^(case\b.*|default\s*):$")


def code_lines(path):
    """The file's lines with comments blanked (strings are not parsed; cgr's
    sources keep comment markers out of them)."""
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return text.split("\n")


def drops_status(lines, i, col):
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


hits, files = [], 0
for folder in folders:
    for top, dirs, names in os.walk(os.path.join(root, folder)):
        dirs.sort()
        for name in sorted(names):
            if not name.endswith((".c", ".cu", ".h", ".cpp")):
                continue
            path = os.path.join(top, name)
            files += 1
            lines = code_lines(path)
            prev = ""
            for i, line in enumerate(lines):
                s = line.strip()
                if not s:
                    continue
                m = call.match(s)
                starts = (prev == "" or prev.endswith((";", "{", "}", ":"))
                          or (control.match(prev) and prev.endswith((")", "else", "do"))))
                paren = len(line) - len(line.lstrip()) + m.end() - 1 if m else 0
                if m and m.group(1) not in void_calls and starts and drops_status(lines, i, paren):
                    hits.append(f"{os.path.relpath(path, root)}:{i + 1}: {s}")
                prev = s
if files < 100:
    print(f"test_status_checked: only {files} source files under {root}: wrong root?")
    sys.exit(1)
for h in hits:
    print(h)
print(f"{files} files, {len(hits)} statements that drop a status without (void)")
sys.exit(1 if hits else 0)
PY
