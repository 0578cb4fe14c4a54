#!/usr/bin/env bash
# Shared by README's two commands (tests/run.sh, bench/run.sh): installs meson
# and ninja from Debian's packages when missing, then configures and builds
# cgr in ${CGR_BUILD_DIR:-build}. Extra arguments go to `meson setup`.
set -eu
cd "$(dirname "$0")/.."
builddir=${CGR_BUILD_DIR:-build}

if ! command -v meson >/dev/null 2>&1 || ! command -v ninja >/dev/null 2>&1; then
    echo "installing meson and ninja from Debian's packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq meson ninja-build pkg-config >/dev/null
fi
if [ -d "$builddir" ]; then
    meson setup --reconfigure "$builddir" "$@" >/dev/null
else
    meson setup "$builddir" "$@" >/dev/null
fi
ninja -C "$builddir"
