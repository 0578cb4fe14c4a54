#!/bin/bash
# tests/meson_tool.sh's version test, on fake meson programs: which versions
# it takes as new enough (1.0.1 and newer, release candidates included) and
# which it replaces with one from PyPI (older ones, and none at all). Needs
# no network: cgr_need_build_tools itself is not called.
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
if PATH="$tmp/empty" cgr_meson_new_enough; then
    echo "no meson on PATH: new enough yes, expected no"
    failed=1
fi
[ $failed = 0 ] && echo "meson_tool: 9 cases as expected"
exit $failed
