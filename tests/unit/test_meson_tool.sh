#!/bin/bash
# tests/meson_tool.sh on fake programs: which meson versions it takes as new
# enough (1.0.1 and newer, release candidates included) and which it
# replaces with one from PyPI (older ones, and none at all), and that it
# finds an nvcc that is not on PATH in $CUDA_HOME. Needs no network:
# cgr_need_build_tools itself is not called.
#   test_meson_tool.sh PATH_TO_MESON_TOOL_SH
tool=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
source "$tool"
failed=0
for case in 0.61.2:no 0.64.0:no 1.0.0:no 1.0.1:yes 1.0.10:yes 1.3.2:yes 1.4.0rc1:yes 2.0:yes; do
    version=${case%%:*} want=${case##*:}
    mkdir -p "$tmp/$version"
    printf '#!/bin/sh\necho %s\n' "$version" >"$tmp/$version/meson"
    chmod +x "$tmp/$version/meson"
    got=no
    PATH="$tmp/$version:$PATH" cgr_meson_new_enough && got=yes
    if [ "$got" != "$want" ]; then
        echo "meson $version: new enough $got, expected $want"
        failed=1
    fi
done
# No meson on PATH at all: not new enough.
mkdir -p "$tmp/empty"
ln -s "$(command -v python3)" "$tmp/empty/python3"
ln -s "$(command -v dirname)" "$tmp/empty/dirname"
if PATH="$tmp/empty" cgr_meson_new_enough; then
    echo "no meson on PATH: new enough yes, expected no"
    failed=1
fi
# nvcc not on PATH: taken from $CUDA_HOME's bin/, and refused where none is found.
mkdir -p "$tmp/cuda/bin"
printf '#!/bin/sh\necho nvcc\n' >"$tmp/cuda/bin/nvcc"
chmod +x "$tmp/cuda/bin/nvcc"
found=$(PATH="$tmp/empty" CUDA_PATH="" CUDA_HOME="$tmp/cuda" "$BASH" -c \
    'source "$1" >/dev/null; cgr_find_nvcc >/dev/null && command -v nvcc' _ "$tool")
if [ "$found" != "$tmp/cuda/bin/nvcc" ]; then
    echo "nvcc in \$CUDA_HOME/bin: found '$found', expected $tmp/cuda/bin/nvcc"
    failed=1
fi
if [ ! -x /usr/local/cuda/bin/nvcc ] &&
    PATH="$tmp/empty" CUDA_PATH="" CUDA_HOME="" "$BASH" -c 'source "$1"; cgr_find_nvcc' _ "$tool" \
        2>/dev/null; then
    echo "no nvcc anywhere: cgr_find_nvcc succeeded"
    failed=1
fi
[ $failed = 0 ] && echo "meson_tool: 10 cases as expected"
exit $failed
