# Paths of the Hugging Face Trainer oracle (real_trainer.py). Sourced after scripts/env.sh and
# deepspeed_env.sh, not run. One cache per accelerate release, each with transformers 5.24.0:
#   $TRAINREPRO_CACHE/hf-trainer-<accelerate version>/{site,deps}
TRAINREPRO_HF_TRANSFORMERS_VERSION=5.24.0
TRAINREPRO_HF_ACCELERATE_DEFAULT=1.15.0
# torchvision for the watched torchvision classifier (tests/watch/scripts/model-resnet.py): the
# release built against the venv's torch 2.11.0, with pillow (torchvision imports it), in its own
# folder of the cache, on PYTHONPATH after the Trainer stack when installed.
TRAINREPRO_TORCHVISION_VERSION=0.26.0
TRAINREPRO_TORCHVISION_HOME=$TRAINREPRO_CACHE/torchvision-$TRAINREPRO_TORCHVISION_VERSION
TRAINREPRO_TORCHVISION_STAMP=$TRAINREPRO_TORCHVISION_HOME/.trainrepro-complete

# Sets the paths for accelerate release $1.
hf_trainer_paths() {
  TRAINREPRO_HF_ACCELERATE_VERSION=$1
  TRAINREPRO_HF_TRAINER_HOME=$TRAINREPRO_CACHE/hf-trainer-$1
  TRAINREPRO_HF_TRAINER_SITE=$TRAINREPRO_HF_TRAINER_HOME/site  # transformers and accelerate
  TRAINREPRO_HF_TRAINER_DEPS=$TRAINREPRO_HF_TRAINER_HOME/deps  # their pure-Python dependencies
  TRAINREPRO_HF_TRAINER_STAMP=$TRAINREPRO_HF_TRAINER_HOME/.trainrepro-complete
}

# The DeepSpeed oracle's environment, with transformers and accelerate first on PYTHONPATH.
hf_trainer_environment() {
  deepspeed_oracle_environment
  export PYTHONPATH=$TRAINREPRO_HF_TRAINER_SITE:$TRAINREPRO_HF_TRAINER_DEPS:$PYTHONPATH
  if [[ -f $TRAINREPRO_TORCHVISION_STAMP ]]; then
    export PYTHONPATH=$PYTHONPATH:$TRAINREPRO_TORCHVISION_HOME/site
  fi
  export HF_HUB_OFFLINE=1 TRANSFORMERS_NO_ADVISORY_WARNINGS=1 TOKENIZERS_PARALLELISM=false
  export HF_HOME=$TRAINREPRO_HF_TRAINER_HOME/hf-home
}
