#!/usr/bin/env bash
# Installs transformers==5.23.0 (and what it needs) into a cache outside the clone, next to the
# LibTorch venv, for the tests that trace a Hugging Face GPT-2 built from a config (no weights
# are downloaded) and for scenarios/user-models/generate.py:
#   ${TRAINREPRO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trainrepro}/transformers-5.23.0
# torch is not installed again: use the torch venv's python with this folder on PYTHONPATH
# (tests/user_models/transformers_env.sh). The stamp is written last, so an interrupted install
# is redone; a second run does nothing. Prints the folder to put on PYTHONPATH.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
source "$(dirname "${BASH_SOURCE[0]}")/transformers_env.sh"

if [[ ! -f $TRAINREPRO_TRANSFORMERS_STAMP ]]; then
  if [[ ! -f $TRAINREPRO_VENV/.trainrepro-complete ]]; then
    echo "install_transformers: the torch venv $TRAINREPRO_VENV is missing or incomplete; run scripts/bootstrap first" >&2
    exit 3
  fi
  mkdir -p "$TRAINREPRO_CACHE"
  # Parallel CTest runs may all find it missing: one installs, the others wait.
  exec 9>"$TRAINREPRO_TRANSFORMERS_HOME.lock"
  flock 9
  if [[ ! -f $TRAINREPRO_TRANSFORMERS_STAMP ]]; then
    echo "install_transformers: installing transformers==$TRAINREPRO_TRANSFORMERS_VERSION into $TRAINREPRO_TRANSFORMERS_HOME" >&2
    rm -rf "$TRAINREPRO_TRANSFORMERS_HOME"
    "$TRAINREPRO_VENV/bin/python" -m pip install --quiet --no-cache-dir --progress-bar off \
        --disable-pip-version-check --target "$TRAINREPRO_TRANSFORMERS_HOME" \
        "transformers==$TRAINREPRO_TRANSFORMERS_VERSION" >&2
    # numpy and safetensors come with it; the venv's own (torch's) must win, so drop the copies.
    PYTHONPATH=$TRAINREPRO_TRANSFORMERS_HOME "$TRAINREPRO_VENV/bin/python" - <<PY >&2
import torch, transformers
assert transformers.__version__ == "$TRAINREPRO_TRANSFORMERS_VERSION", transformers.__version__
assert torch.__file__.startswith("$TRAINREPRO_VENV"), f"torch was installed again: {torch.__file__}"
PY
    touch "$TRAINREPRO_TRANSFORMERS_STAMP"
  fi
fi
echo "$TRAINREPRO_TRANSFORMERS_HOME"
