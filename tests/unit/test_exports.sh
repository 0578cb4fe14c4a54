#!/bin/sh
# What libcgr gives a program to link against, read from the built files
# with nm (binutils):
#   - libcgr.so exports exactly the functions the public headers declare
#     with CGR_API: an internal helper that leaks out, or a declared
#     function compiled without CGR_API, fails here rather than in a user's
#     link;
#   - every global symbol libcgr.a defines is in cgr's namespace (cgr_...,
#     or a CUDA kernel whose mangled name holds cgr__), so a static link
#     cannot collide with a program's own names. The exceptions are NVTX's
#     header-only implementation, whose weak symbols every module that
#     includes it defines alike and the linker merges by design, and names
#     reserved to the compiler (__..., sanitizer and C++ runtime helpers).
# Needs no GPU.
#   test_exports.sh LIBCGR_SO LIBCGR_A HEADER...
so=$1 a=$2
shift 2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0

# CGR_API declarations: the name is the identifier before the first '('.
sed -n 's/^CGR_API[^(]*[^A-Za-z0-9_(]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' "$@" | sort -u \
    >"$tmp/declared"
if [ ! -s "$tmp/declared" ]; then
    echo "no CGR_API declaration found in $*"
    exit 1
fi

nm -D --defined-only "$so" >"$tmp/so.nm" || exit 1
awk '$2 ~ /^[TWiVDBR]$/ && $3 !~ /^_[A-Z_]/ { print $3 }' "$tmp/so.nm" | sort -u >"$tmp/exported"
if ! cmp -s "$tmp/declared" "$tmp/exported"; then
    echo "libcgr.so's exports differ from the headers' CGR_API declarations"
    echo "(< declared, not exported; > exported, not declared):"
    diff "$tmp/declared" "$tmp/exported" | grep '^[<>]'
    failed=1
fi

nm -g --defined-only "$a" >"$tmp/a.nm" 2>/dev/null || exit 1
awk 'NF == 3 {
        kind = $2; name = $3
        if (name ~ /^cgr_/ || (name ~ /^_Z/ && name ~ /cgr__/)) next
        if (kind ~ /^[WV]$/ && name ~ /^(nvtx|InitializeInjectionNvtx)/) next
        if (name ~ /^__/ || name ~ /^DW\.ref\.__/) next
        print name " (" kind ")"
    }' "$tmp/a.nm" | sort -u >"$tmp/outside"
if [ -s "$tmp/outside" ]; then
    echo "libcgr.a defines global symbols outside cgr's namespace:"
    cat "$tmp/outside"
    failed=1
fi

n=$(wc -l <"$tmp/declared")
[ $failed = 0 ] && echo "exports: $n functions, as declared; libcgr.a's globals in cgr's namespace"
exit $failed
