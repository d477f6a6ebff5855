# Paths shared by the scripts. Sourced, not run.
# LibTorch lives in a virtual environment outside the clone, keyed by version, so that
# every clone and every CI run on this machine reuses the same 4.6 GB install.
TRAINREPRO_TORCH_VERSION=2.11.0

# TRAINREPRO_OFFLINE as the C++ and Python sides read it: 1, true, yes (any case) on; unset,
# empty, 0, false, no off; anything else refused (exit 2). Normalised to 1 or 0 here, so that
# every script after this (and every test it starts) compares it with 1.
case ${TRAINREPRO_OFFLINE:-} in
  1|[Tt][Rr][Uu][Ee]|[Yy][Ee][Ss]) TRAINREPRO_OFFLINE=1 ;;
  ''|0|[Ff][Aa][Ll][Ss][Ee]|[Nn][Oo]) if [[ -n ${TRAINREPRO_OFFLINE+set} ]]; then TRAINREPRO_OFFLINE=0; fi ;;
  *) echo "TRAINREPRO_OFFLINE: expected 1, true or yes (on) or 0, false, no or empty (off); found \"${TRAINREPRO_OFFLINE:0:60}\"" >&2
     exit 2 ;;
esac

# The cache, as harness/files/install_locations.cpp finds it: TRAINREPRO_CACHE (an absolute path
# without ':'), else $XDG_CACHE_HOME/trainrepro (when absolute), else <home>/.cache/trainrepro,
# <home> from HOME or, unset (cron, systemd units), the password database: never a shared /tmp
# path. What it holds runs as you, so it must be yours: trainrepro_require_own_cache.
if [[ -n ${TRAINREPRO_CACHE:-} ]]; then
  if [[ $TRAINREPRO_CACHE != /* || $TRAINREPRO_CACHE == *:* ]]; then
    echo "TRAINREPRO_CACHE: expected an absolute path without ':' (a release's folders go onto a PYTHONPATH, which ':' splits); found \"${TRAINREPRO_CACHE:0:60}\"" >&2
    exit 2
  fi
elif [[ ${XDG_CACHE_HOME:-} == /* && ${XDG_CACHE_HOME:-} != *:* ]]; then
  TRAINREPRO_CACHE=$XDG_CACHE_HOME/trainrepro
else
  trainrepro_home=${HOME:-}
  [[ $trainrepro_home == /* ]] || trainrepro_home=$(getent passwd "$(id -u)" | cut -d: -f6)
  if [[ $trainrepro_home != /* ]]; then
    echo "the trainrepro cache: HOME is not set and user $(id -u) has no home folder in the password database; set TRAINREPRO_CACHE to a folder of your own (an absolute path)" >&2
    exit 3
  fi
  TRAINREPRO_CACHE=$trainrepro_home/.cache/trainrepro
fi
TRAINREPRO_VENV=$TRAINREPRO_CACHE/torch-$TRAINREPRO_TORCH_VERSION-venv
TRAINREPRO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TRAINREPRO_BUILD=${TRAINREPRO_BUILD:-$TRAINREPRO_ROOT/build}
# ccache with precompiled headers needs these sloppiness settings to get hits.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
# Paths inside the clone are rewritten relative to it, so every clone (and CI's fresh one)
# shares the same cache entries instead of recompiling LibTorch-heavy files from scratch.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$TRAINREPRO_ROOT}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

# Creates the cache (0700, missing parents too) when absent, then refuses it (exit 3) when another
# user owns it or its group or others may write it: the torch venv and the DeepSpeed releases in
# it run as you. trainrepro itself checks the same before using a release.
trainrepro_require_own_cache() {
  [[ -d $TRAINREPRO_CACHE ]] || (umask 077 && mkdir -p "$TRAINREPRO_CACHE")
  local owner mode
  read -r owner mode < <(stat -L -c '%u %a' "$TRAINREPRO_CACHE")
  if [[ $owner != "$(id -u)" ]]; then
    echo "$TRAINREPRO_CACHE (the trainrepro cache): owned by uid $owner, not by you (uid $(id -u)): the code it holds would run as you. Use a cache of your own (TRAINREPRO_CACHE=an absolute path), or remove this folder" >&2
    exit 3
  fi
  if (( 8#$mode & 8#022 )); then
    echo "$TRAINREPRO_CACHE (the trainrepro cache): writable by its group or others (mode $mode): another user could plant code there that runs as you. Run chmod go-w $TRAINREPRO_CACHE, or remove it" >&2
    exit 3
  fi
}

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
