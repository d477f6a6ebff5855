#!/usr/bin/env bash
# Installs the real Hugging Face Trainer stack for the Trainer oracle (real_trainer.py):
# transformers==5.24.0 and accelerate==VERSION (default 1.15.0; 1.7.0 for the scenarios of the
# release before the explicit boundary) from PyPI into a cache outside the clone,
#   ${TRAINREPRO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trainrepro}/hf-trainer-VERSION/{site,deps}
# and DeepSpeed 0.19.8 through install_deepspeed.sh. torch is not installed again (accelerate
# requires it: installed without dependencies, its others listed here), nothing goes into the
# user's Python: the oracle runs the torch venv's python with these folders on PYTHONPATH
# (hf_trainer_env.sh). The stamp is written last, so an interrupted install is redone; a second
# run does nothing. Also torchvision (hf_trainer_env.sh says where and why).   Usage: install_hf_trainer.sh [ACCELERATE_VERSION]...
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../../scripts/env.sh"
source "$here/deepspeed_env.sh"
source "$here/hf_trainer_env.sh"

if [[ ! -f $TRAINREPRO_VENV/.trainrepro-complete ]]; then
  echo "install_hf_trainer: the torch venv $TRAINREPRO_VENV is missing or incomplete; run scripts/bootstrap first" >&2
  exit 3
fi
"$here/install_deepspeed.sh"

install_release() {
  hf_trainer_paths "$1"
  [[ -f $TRAINREPRO_HF_TRAINER_STAMP ]] && return 0
  mkdir -p "$TRAINREPRO_CACHE"
  exec 9>"$TRAINREPRO_HF_TRAINER_HOME.lock"
  flock 9
  if [[ ! -f $TRAINREPRO_HF_TRAINER_STAMP ]]; then
    local started=$SECONDS
    echo "install_hf_trainer: transformers==$TRAINREPRO_HF_TRANSFORMERS_VERSION accelerate==$1 into $TRAINREPRO_HF_TRAINER_HOME"
    rm -rf "$TRAINREPRO_HF_TRAINER_HOME"
    mkdir -p "$TRAINREPRO_HF_TRAINER_SITE" "$TRAINREPRO_HF_TRAINER_DEPS"
    local pip=("$TRAINREPRO_VENV/bin/python" -m pip install --quiet --no-cache-dir --progress-bar off
               --disable-pip-version-check)
    "${pip[@]}" --target "$TRAINREPRO_HF_TRAINER_SITE" --no-deps \
        "transformers==$TRAINREPRO_HF_TRANSFORMERS_VERSION" "accelerate==$1"
    # Their requirements less torch, numpy and safetensors (the venv has them); none of these
    # depends on torch.
    "${pip[@]}" --target "$TRAINREPRO_HF_TRAINER_DEPS" "huggingface-hub>=1.31.0,<3.0" \
        "regex>=2025.10.22" "tokenizers>=0.23.1,<0.24.0" typer "pyyaml>=5.1" "tqdm>=4.60" \
        "packaging>=20.0" psutil
    PYTHONPATH=$TRAINREPRO_HF_TRAINER_SITE:$TRAINREPRO_HF_TRAINER_DEPS:$TRAINREPRO_DEEPSPEED_SITE:$TRAINREPRO_DEEPSPEED_DEPS \
        DS_ACCELERATOR=cpu "$TRAINREPRO_VENV/bin/python" - <<PY
import accelerate, deepspeed, torch, transformers
assert transformers.__version__ == "$TRAINREPRO_HF_TRANSFORMERS_VERSION", transformers.__version__
assert accelerate.__version__ == "$1", accelerate.__version__
assert torch.__file__.startswith("$TRAINREPRO_VENV"), f"torch was installed again: {torch.__file__}"
from transformers import Trainer, TrainingArguments  # noqa: F401 (imports the integration)
PY
    touch "$TRAINREPRO_HF_TRAINER_STAMP"
    echo "install_hf_trainer: done in $((SECONDS - started)) s"
  fi
  exec 9>&-
}

# torchvision for the watched torchvision classifier, without dependencies (torch and numpy are
# the venv's) but pillow, which torchvision imports.
install_torchvision() {
  [[ -f $TRAINREPRO_TORCHVISION_STAMP ]] && return 0
  mkdir -p "$TRAINREPRO_CACHE"
  exec 9>"$TRAINREPRO_TORCHVISION_HOME.lock"
  flock 9
  if [[ ! -f $TRAINREPRO_TORCHVISION_STAMP ]]; then
    echo "install_hf_trainer: torchvision==$TRAINREPRO_TORCHVISION_VERSION into $TRAINREPRO_TORCHVISION_HOME"
    rm -rf "$TRAINREPRO_TORCHVISION_HOME"
    mkdir -p "$TRAINREPRO_TORCHVISION_HOME/site"
    "$TRAINREPRO_VENV/bin/python" -m pip install --quiet --no-cache-dir --progress-bar off \
        --disable-pip-version-check --target "$TRAINREPRO_TORCHVISION_HOME/site" --no-deps \
        "torchvision==$TRAINREPRO_TORCHVISION_VERSION" pillow
    PYTHONPATH=$TRAINREPRO_TORCHVISION_HOME/site "$TRAINREPRO_VENV/bin/python" - <<PY
import torch, torchvision
assert torchvision.__version__.split("+")[0] == "$TRAINREPRO_TORCHVISION_VERSION", torchvision.__version__
assert torch.__file__.startswith("$TRAINREPRO_VENV"), f"torch was installed again: {torch.__file__}"
torchvision.models.resnet18(num_classes=4)
PY
    touch "$TRAINREPRO_TORCHVISION_STAMP"
  fi
  exec 9>&-
}

for version in "${@:-$TRAINREPRO_HF_ACCELERATE_DEFAULT}"; do
  install_release "$version"
done
install_torchvision
