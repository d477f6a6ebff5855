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

# The Python whose torch builds trainrepro (its LibTorch, its CMake files, its NCCL), printed on
# stdout; nothing when there is none yet (then scripts/bootstrap installs one):
#   1. TRAINREPRO_TORCH_PYTHON, when set (a GPU machine's own Python: nothing is downloaded);
#   2. the virtual environment scripts/bootstrap installs, when it is complete;
#   3. the python3 on PATH, when it has torch $TRAINREPRO_TORCH_VERSION built for CUDA 13.
# A Python that is named but unusable is an error (exit 3): never silently another torch.
trainrepro_torch_python() {
  local check='import sys, torch
version = torch.__version__.split("+")[0]
if version != sys.argv[1] or not (torch.version.cuda or "").startswith("13."):
    sys.exit(f"torch {torch.__version__} (CUDA {torch.version.cuda}), not {sys.argv[1]} built for CUDA 13")'
  if [[ -n ${TRAINREPRO_TORCH_PYTHON:-} ]]; then
    local why
    if ! why=$("$TRAINREPRO_TORCH_PYTHON" -c "$check" "$TRAINREPRO_TORCH_VERSION" 2>&1); then
      echo "TRAINREPRO_TORCH_PYTHON=$TRAINREPRO_TORCH_PYTHON cannot build trainrepro: ${why##*$'\n'}" >&2
      return 3
    fi
    echo "$TRAINREPRO_TORCH_PYTHON"
  elif [[ -f $TRAINREPRO_VENV/.trainrepro-complete ]]; then
    echo "$TRAINREPRO_VENV/bin/python"
  elif command -v python3 > /dev/null && python3 -c "$check" "$TRAINREPRO_TORCH_VERSION" 2> /dev/null; then
    command -v python3
  fi
}

# The gpu-kit (scripts/gpu-kit: Debian's C++ libraries and Open MPI as .deb files, carried to a
# machine without network or our packages). Used offline only: scripts/bootstrap unpacks it into
# gpu-kit/prefix, and its tools and libraries then come first; OPAL_PREFIX tells Open MPI where
# it lives now. TRAINREPRO_KIT_PREFIX names another such prefix (its usr/ level).
if [[ -z ${TRAINREPRO_KIT_PREFIX:-} && ${TRAINREPRO_OFFLINE:-0} == 1 && -d $TRAINREPRO_ROOT/gpu-kit/debs ]]; then
  TRAINREPRO_KIT_PREFIX=$TRAINREPRO_ROOT/gpu-kit/prefix/usr
fi
if [[ -n ${TRAINREPRO_KIT_PREFIX:-} ]]; then
  export TRAINREPRO_KIT_PREFIX
  export PATH=$TRAINREPRO_KIT_PREFIX/bin:$PATH
  export LD_LIBRARY_PATH=$TRAINREPRO_KIT_PREFIX/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export OPAL_PREFIX=$TRAINREPRO_KIT_PREFIX
fi
