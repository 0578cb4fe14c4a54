# Sourced (bash) by the scripts that run meson, README's two commands among
# them. cgr_need_build_tools makes sure of what configuring cgr needs. nvcc:
# where it is not on PATH, it takes the toolkit's in $CUDA_PATH, $CUDA_HOME
# or /usr/local/cuda. meson 1.0.1 or newer and ninja: it installs them from
# the distribution's packages when they are missing (cgr_apt_install, which
# says what to install where there is no apt-get), and where that meson is
# older (Ubuntu 22.04 ships 0.61), a newer one from PyPI into a virtual
# environment, .tools/meson in this checkout (git ignores it). Sourcing this
# puts that environment first on PATH whenever it exists, so every script of
# the checkout runs the same meson.

cgr_tools_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.tools/meson"
if [ -x "$cgr_tools_dir/bin/meson" ]; then
    PATH="$cgr_tools_dir/bin:$PATH"
fi

# 0 when the meson on PATH is 1.0.1 or newer.
cgr_meson_new_enough() {
    command -v meson >/dev/null 2>&1 || return 1
    python3 -c 'import sys
v = [int(x) for x in sys.argv[1].split(".")[:3] if x.isdigit()]
sys.exit(1 if v < [1, 0, 1] else 0)' "$(meson --version 2>/dev/null)"
}

# apt-get install of the packages named, saying so, or a message saying what
# to install by hand where there is no apt-get (another distribution).
cgr_apt_install() {
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "no apt-get here: install $* with this system's package manager" >&2
        return 1
    fi
    echo "installing $* from the distribution's packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# nvcc on PATH: NVIDIA's packages install the toolkit in /usr/local/cuda
# without putting its bin/ on PATH, and meson looks for nvcc only there.
cgr_find_nvcc() {
    command -v nvcc >/dev/null 2>&1 && return 0
    local d
    for d in "${CUDA_PATH:-}" "${CUDA_HOME:-}" /usr/local/cuda; do
        if [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then
            echo "nvcc is not on PATH: using $d/bin/nvcc"
            PATH="$d/bin:$PATH"
            return 0
        fi
    done
    echo "no nvcc on PATH, in \$CUDA_PATH, \$CUDA_HOME or /usr/local/cuda: install the CUDA" \
        "toolkit (12.0 or newer), or set CUDA_HOME to where it is" >&2
    return 1
}

# What configuring cgr needs: meson, ninja and nvcc.
cgr_need_build_tools() {
    cgr_find_nvcc || return 1
    if ! command -v meson >/dev/null 2>&1 || ! command -v ninja >/dev/null 2>&1; then
        if ! cgr_apt_install meson ninja-build pkg-config; then
            echo "(or meson 1.0.1 or newer and ninja: python3 -m pip install meson ninja)" >&2
            return 1
        fi
    fi
    cgr_meson_new_enough && return 0
    echo "meson $(meson --version) is older than the 1.0.1 cgr needs: installing meson from" \
        "PyPI into $cgr_tools_dir"
    if ! python3 -m venv --clear "$cgr_tools_dir" >/dev/null 2>&1; then
        # Debian and Ubuntu keep venv's pip bootstrap in a package of its own.
        cgr_apt_install python3-venv || return 1
        python3 -m venv --clear "$cgr_tools_dir"
    fi
    "$cgr_tools_dir/bin/python3" -m pip install -q 'meson>=1.0.1'
    PATH="$cgr_tools_dir/bin:$PATH"
    if ! cgr_meson_new_enough; then
        echo "meson from PyPI did not install into $cgr_tools_dir" >&2
        return 1
    fi
}
