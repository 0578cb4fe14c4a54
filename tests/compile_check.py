#!/usr/bin/env python3
"""Compiles every C file of a configured build once more, -fsyntax-only,
with its own flags (-Werror included) but another compiler or other CUDA
headers: what tests/toolkits.sh (CUDA 12's headers) and CI (a compiler for
aarch64, as on Grace Hopper) check with it. With --nvcc, every CUDA file
instead, with that nvcc and the build's own flags (its GPU architectures,
-Werror=all-warnings), the installed toolkit's include dirs left out so
that nvcc's own headers are used; the objects are not kept.

    compile_check.py BUILD_DIR LABEL [--cc COMPILER] [--include DIR]...
    compile_check.py BUILD_DIR LABEL --nvcc NVCC

--include DIRs go right before the installed CUDA toolkit's include dir,
each time and in the way the build names it (-I or -isystem), so their
headers win and are system headers where the toolkit's are. Prints
one line, "LABEL: N C files, M failed", after the failures' diagnostics;
exits 1 when any file failed (or none was found), else 0.
"""
import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def toolkit_dir(directory, d):
    return d and os.path.exists(os.path.join(directory, d, "cuda_runtime_api.h"))


def arguments(e, on_toolkit):
    """The compiler and arguments of compile command e without its outputs
    (-o, dependency files); each include option that names the installed
    toolkit's include dir (-Idir, or -isystem dir) is replaced by
    on_toolkit(option as a list)."""
    args, out, i = shlex.split(e["command"]), [], 0
    while i < len(args):
        a = args[i]
        skip = 2 if a in ("-o", "-MF", "-MQ", "-MT", "-odir") else 1 if a in ("-MD", "-MMD") else 0
        if skip:
            i += skip
            continue
        option = args[i:i + 2] if a == "-isystem" else [a]
        d = option[-1] if a == "-isystem" else a[2:] if a.startswith("-I") else None
        out += on_toolkit(option) if toolkit_dir(e["directory"], d) else option
        i += len(option)
    return out


def check(entries, label, suffix, kind, command_of):
    """Runs command_of(entry) for every file of entries ending in suffix,
    once each and in parallel; prints the failures' output and the count
    line. 1 when one failed or none was found, else 0."""
    jobs, seen = [], set()
    for e in entries:
        src = os.path.normpath(os.path.join(e["directory"], e["file"]))
        if src.endswith(suffix) and src not in seen:
            seen.add(src)
            jobs.append((src, e["directory"], command_of(e)))

    def run(job):
        return job[0], subprocess.run(job[2], cwd=job[1], capture_output=True, text=True)

    failed = []
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for src, r in pool.map(run, jobs):
            if r.returncode != 0:
                failed.append(src)
                sys.stdout.write(r.stdout + r.stderr)
    print("%s: %d %s files, %d failed%s" % (label, len(jobs), kind, len(failed),
                                            "".join("\n  " + f for f in failed)))
    return 1 if failed or not jobs else 0


def main(argv):
    if len(argv) < 3:
        print("usage: compile_check.py BUILD_DIR LABEL [--cc COMPILER] [--include DIR]... "
              "| --nvcc NVCC", file=sys.stderr)
        return 1
    builddir, label, cc, incs, nvcc = argv[1], argv[2], None, [], None
    rest = argv[3:]
    while rest:
        if rest[0] == "--cc" and len(rest) > 1:
            cc = rest[1]
        elif rest[0] == "--nvcc" and len(rest) > 1:
            nvcc = os.path.abspath(rest[1])
        elif rest[0] == "--include" and len(rest) > 1:
            incs.append(os.path.abspath(rest[1]))
        else:
            print("compile_check.py: unknown argument %r" % rest[0], file=sys.stderr)
            return 1
        rest = rest[2:]
    with open(os.path.join(builddir, "compile_commands.json")) as f:
        entries = json.load(f)
    if nvcc:
        # nvcc's own headers, not the installed toolkit's.
        return check(entries, label, ".cu", "CUDA",
                     lambda e: [nvcc] + arguments(e, lambda option: [])[1:] + ["-o", os.devnull])
    placed = []

    def before_toolkit(option):
        # Named the way the build names the toolkit (the compiler ignores -I
        # for a dir that -isystem names too), so the replacement headers are
        # system headers wherever the toolkit's are.
        placed.append(option)
        if option[0] == "-isystem":
            return [a for p in incs for a in ("-isystem", p)] + option
        return ["-I" + p for p in incs] + option

    def c_command(e):
        out = arguments(e, before_toolkit if incs else lambda option: option)
        if cc:
            if os.path.basename(out[0]) == "ccache":
                out = out[1:]
            out[0] = cc
        return out + ["-fsyntax-only", "-fdiagnostics-color=never"]

    rc = check(entries, label, ".c", "C", c_command)
    if incs and not placed:
        print("%s: no file names the CUDA toolkit's include dir, so --include had no effect"
              % label)
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
