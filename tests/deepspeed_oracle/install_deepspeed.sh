#!/usr/bin/env bash
# Installs the real DeepSpeed (deepspeed==0.19.8 from PyPI) and its pure-Python dependencies
# into a cache outside the clone, next to the LibTorch venv, for the DeepSpeed oracle:
#   ${TRAINREPRO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trainrepro}/deepspeed-0.19.8/{site,deps}
# torch itself is not installed again: the oracle runs with the torch venv's python
# (scripts/bootstrap) and this folder on PYTHONPATH. The stamp file is written last, so an
# interrupted install is redone from scratch; a second run does nothing (under a second); parallel
# CTest runs that all find it missing wait for the one that installs (a lock beside the folder).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
source "$(dirname "${BASH_SOURCE[0]}")/deepspeed_env.sh"

[[ -f $TRAINREPRO_DEEPSPEED_STAMP ]] && exit 0
if [[ ! -f $TRAINREPRO_VENV/.trainrepro-complete ]]; then
  echo "install_deepspeed: the torch venv $TRAINREPRO_VENV is missing or incomplete; run scripts/bootstrap first" >&2
  exit 3
fi

# One installer for every release (the one `run --engine deepspeed==VERSION` runs, compiled in):
# the release's requirements less torch and numpy into deps/, its sdist built against the venv's
# torch with no ops precompiled into site/, an import check, then the stamp.
"$TRAINREPRO_VENV/bin/python" "$TRAINREPRO_ROOT/python/trainrepro_worker/install_release.py" \
    "$TRAINREPRO_DEEPSPEED_VERSION" "$TRAINREPRO_DEEPSPEED_HOME"
