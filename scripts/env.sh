# Paths shared by the scripts. Sourced, not run.
# LibTorch lives in a virtual environment outside the clone, keyed by version, so that
# every clone and every CI run on this machine reuses the same 4.6 GB install.
TRAINREPRO_TORCH_VERSION=2.11.0
TRAINREPRO_CACHE=${TRAINREPRO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trainrepro}
TRAINREPRO_VENV=$TRAINREPRO_CACHE/torch-$TRAINREPRO_TORCH_VERSION-venv
TRAINREPRO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TRAINREPRO_BUILD=${TRAINREPRO_BUILD:-$TRAINREPRO_ROOT/build}
# ccache with precompiled headers needs these sloppiness settings to get hits.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
# Paths inside the clone are rewritten relative to it, so every clone (and CI's fresh one)
# shares the same cache entries instead of recompiling LibTorch-heavy files from scratch.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$TRAINREPRO_ROOT}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
