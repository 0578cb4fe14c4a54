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


def nvcc_check(entries, label, nvcc):
    """Compiles every .cu file of entries with nvcc; the number that failed."""
    jobs, seen = [], set()
    for e in entries:
        src = os.path.normpath(os.path.join(e["directory"], e["file"]))
        if not src.endswith(".cu") or src in seen:
            continue
        seen.add(src)
        args, out, i = shlex.split(e["command"]), [nvcc], 1
        while i < len(args):
            a = args[i]
            if a in ("-o", "-MF", "-MQ", "-MT", "-odir"):
                i += 2
                continue
            if a in ("-MD", "-MMD"):
                i += 1
                continue
            if a.startswith("-I") and toolkit_dir(e["directory"], a[2:]):
                i += 1
                continue
            if a == "-isystem" and i + 1 < len(args) and toolkit_dir(e["directory"], args[i + 1]):
                i += 2
                continue
            out.append(a)
            i += 1
        jobs.append((src, e["directory"], out + ["-o", os.devnull]))

    def run(job):
        return job[0], subprocess.run(job[2], cwd=job[1], capture_output=True, text=True)

    failed = []
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for src, r in pool.map(run, jobs):
            if r.returncode != 0:
                failed.append(src)
                sys.stdout.write(r.stdout + r.stderr)
    print("%s: %d CUDA files, %d failed%s" % (label, len(jobs), len(failed),
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
        return nvcc_check(entries, label, nvcc)
    seen, failed, placed = set(), [], 0
    for e in entries:
        src = os.path.normpath(os.path.join(e["directory"], e["file"]))
        if not src.endswith(".c") or src in seen:
            continue
        seen.add(src)
        args, out, i, here = shlex.split(e["command"]), [], 0, 0
        while i < len(args):
            a = args[i]
            if a in ("-o", "-MF", "-MQ", "-MT"):
                i += 2
                continue
            if a in ("-MD", "-MMD"):
                i += 1
                continue
            d = a[2:] if a.startswith("-I") and len(a) > 2 else None
            if a == "-isystem" and i + 1 < len(args):
                d = args[i + 1]
            if incs and toolkit_dir(e["directory"], d):
                # Named the way the build names the toolkit (the compiler
                # ignores -I for a dir that -isystem names too), so the
                # replacement headers are system headers wherever it is.
                for p in incs:
                    out += ["-I" + p] if a != "-isystem" else ["-isystem", p]
                here = 1
            out.append(a)
            i += 1
        placed += here
        if cc:
            if os.path.basename(out[0]) == "ccache":
                out = out[1:]
            out[0] = cc
        r = subprocess.run(out + ["-fsyntax-only", "-fdiagnostics-color=never"],
                           cwd=e["directory"], capture_output=True, text=True)
        if r.returncode != 0:
            failed.append(src)
            sys.stdout.write(r.stderr)
    print("%s: %d C files, %d failed%s" % (label, len(seen), len(failed),
                                           "".join("\n  " + f for f in failed)))
    if incs and placed == 0:
        print("%s: no file names the CUDA toolkit's include dir, so --include had no effect"
              % label)
        return 1
    return 1 if failed or not seen else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
