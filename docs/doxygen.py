#!/usr/bin/env python3
"""Builds cgr's API reference and fails on anything undocumented.

Usage: doxygen.py DOXYGEN DOXYFILE XML_DIR

Runs DOXYGEN on DOXYFILE (docs/Doxyfile.in, configured by meson) and fails
when doxygen fails or prints anything on stderr, which is where its warnings
go: an undocumented symbol, a broken reference, a setting this doxygen does
not know. Doxygen does not warn about an enumerator without a doc comment,
so the XML it writes into XML_DIR is read as well: every enumerator, and
every member and compound it lists, must have a description.

Exit status: 0 when the reference is complete, 1 otherwise.
"""
import os
import subprocess
import sys
import xml.etree.ElementTree as ET


def described(elem):
    """True when elem has a non-empty brief or detailed description."""
    for tag in ("briefdescription", "detaileddescription"):
        d = elem.find(tag)
        if d is not None and "".join(d.itertext()).strip():
            return True
    return False


def where(elem):
    loc = elem.find("location")
    if loc is None:
        return "?"
    return "%s:%s" % (loc.get("file", "?"), loc.get("line", "?"))


def undocumented(xml_dir):
    """Lines naming what the reference lists without a description."""
    problems = []
    index = ET.parse(os.path.join(xml_dir, "index.xml")).getroot()
    for c in index.findall("compound"):
        kind = c.get("kind")
        # Pages and directories are prose and folders, not symbols.
        if kind not in ("file", "struct", "union"):
            continue
        root = ET.parse(os.path.join(xml_dir, c.get("refid") + ".xml")).getroot()
        for cd in root.findall("compounddef"):
            name = cd.findtext("compoundname")
            if kind != "file" and not described(cd):
                problems.append("%s: %s %s has no description" % (where(cd), kind, name))
            for m in cd.iter("memberdef"):
                mname = m.findtext("name")
                if not described(m):
                    problems.append("%s: %s %s in %s has no description"
                                    % (where(m), m.get("kind"), mname, name))
                for e in m.findall("enumvalue"):
                    if not described(e):
                        problems.append("%s: enumerator %s of enum %s (declared there) "
                                        "has no description"
                                        % (where(m), e.findtext("name"), mname))
    return problems


def main(argv):
    if len(argv) != 4:
        print("usage: doxygen.py DOXYGEN DOXYFILE XML_DIR", file=sys.stderr)
        return 1
    doxygen, doxyfile, xml_dir = argv[1:]
    run = subprocess.run([doxygen, doxyfile], stderr=subprocess.PIPE,
                         universal_newlines=True)
    sys.stderr.write(run.stderr)
    if run.returncode != 0 or run.stderr.strip():
        print("doxygen.py: doxygen %s (every warning counts as a failure)"
              % ("failed with status %d" % run.returncode if run.returncode else "warned"),
              file=sys.stderr)
        return 1
    problems = undocumented(xml_dir)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("doxygen.py: %d undocumented symbol(s) in the API reference" % len(problems),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
