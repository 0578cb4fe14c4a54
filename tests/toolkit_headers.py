#!/usr/bin/env python3
"""Fetches the C headers of NVIDIA's CUDA wheels from PyPI, for
tests/toolkits.sh: the headers of another CUDA toolkit than the installed
one, without installing it. With --all, every file of the wheels instead
(CUDA 13's nvcc, its front end and its headers make a compiler that runs
from DEST/nvidia/cu13/bin/nvcc).

    toolkit_headers.py [--all] DEST PACKAGE==VERSION...

Each package's manylinux x86_64 wheel is found through PyPI's JSON API, and
every file under nvidia/<component>/include/ is written below DEST with its
path in the wheel. A wheel of up to 64 MiB is downloaded whole and checked
against PyPI's sha256; from a larger one (cuBLAS's is about 350 MiB) only
the zip directory and the header members are read, with HTTP range
requests, each member checked against its CRC-32 by zipfile (where the
server does not answer range requests, the whole wheel is downloaded).

Exit status: 0 when every package's headers were written; 77 when PyPI
cannot be reached at all (nothing to test against); 1 on any other error.
"""
import hashlib
import io
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
import zipfile

WHOLE_MAX = 64 << 20
TIMEOUT = 60


def fetch(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
        return r.status, r.read()


class RangeFile(io.RawIOBase):
    """A remote file read through HTTP range requests: what zipfile needs to
    read a wheel's directory and a few members without the rest."""

    def __init__(self, url, size):
        super().__init__()
        self.url, self.size, self.pos = url, size, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = base + offset
        return self.pos

    def readinto(self, buf):
        if self.pos >= self.size or len(buf) == 0:
            return 0
        end = min(self.pos + len(buf), self.size) - 1
        status, data = fetch(self.url, {"Range": "bytes=%d-%d" % (self.pos, end)})
        if status != 206:
            raise OSError("%s: a range request got HTTP %d" % (self.url, status))
        buf[: len(data)] = data
        self.pos += len(data)
        return len(data)


def wheel_of(package, version):
    """The wheel's PyPI entry, its url made absolute (a mirror may give a relative one)."""
    index = "https://pypi.org/pypi/%s/json" % package
    _, body = fetch(index)
    releases = json.loads(body)["releases"]
    if version not in releases:
        raise OSError("%s has no release %s on PyPI" % (package, version))
    files = [f for f in releases[version]
             if f["packagetype"] == "bdist_wheel" and "manylinux" in f["filename"]
             and "x86_64" in f["filename"]]
    if not files:
        raise OSError("%s %s has no manylinux x86_64 wheel on PyPI" % (package, version))
    info = dict(files[0])
    info["url"] = urllib.parse.urljoin(index, info["url"])
    return info


def ranges_work(url):
    """Whether the server answers a range request with just that range (reads at
    most those bytes either way)."""
    req = urllib.request.Request(url, headers={"Range": "bytes=0-3"})
    with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
        return r.status == 206 and len(r.read(5)) == 4


def open_wheel(info, whole):
    if whole or info["size"] <= WHOLE_MAX or not ranges_work(info["url"]):
        _, data = fetch(info["url"])
        digest = hashlib.sha256(data).hexdigest()
        if digest != info["digests"]["sha256"]:
            raise OSError("%s: sha256 %s, PyPI says %s"
                          % (info["filename"], digest, info["digests"]["sha256"]))
        return zipfile.ZipFile(io.BytesIO(data))
    raw = RangeFile(info["url"], info["size"])
    return zipfile.ZipFile(io.BufferedReader(raw, buffer_size=1 << 16))


def main(argv):
    every = len(argv) > 1 and argv[1] == "--all"
    if every:
        argv = argv[:1] + argv[2:]
    if len(argv) < 3 or any("==" not in a for a in argv[2:]):
        print("usage: toolkit_headers.py [--all] DEST PACKAGE==VERSION...", file=sys.stderr)
        return 1
    dest = argv[1]
    try:
        fetch("https://pypi.org/simple/")
    except (urllib.error.URLError, OSError) as e:
        print("skipped: cannot reach pypi.org (%s)" % e)
        return 77
    for spec in argv[2:]:
        package, version = spec.split("==", 1)
        try:
            info = wheel_of(package, version)
            with open_wheel(info, every) as z:
                names = [n for n in z.namelist()
                         if (every or "/include/" in n) and not n.endswith("/")
                         and n.startswith("nvidia/") and not n.endswith(".py")]
                if not names:
                    raise OSError("%s has no headers" % info["filename"])
                for n in names:
                    path = os.path.join(dest, n)
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "wb") as f:
                        f.write(z.read(n))
                    mode = z.getinfo(n).external_attr >> 16
                    if mode & 0o111:
                        os.chmod(path, 0o755)
            print("%s %s: %d %s" % (package, version, len(names), "files" if every else "headers"))
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as e:
            print("%s: %s" % (spec, e), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
