# Paths and environment of the DeepSpeed oracle. Sourced after scripts/env.sh, not run.
TRAINREPRO_DEEPSPEED_VERSION=0.19.8
TRAINREPRO_DEEPSPEED_HOME=$TRAINREPRO_CACHE/deepspeed-$TRAINREPRO_DEEPSPEED_VERSION
TRAINREPRO_DEEPSPEED_SITE=$TRAINREPRO_DEEPSPEED_HOME/site   # deepspeed itself
TRAINREPRO_DEEPSPEED_DEPS=$TRAINREPRO_DEEPSPEED_HOME/deps   # its pure-Python dependencies
TRAINREPRO_DEEPSPEED_STAMP=$TRAINREPRO_DEEPSPEED_HOME/.trainrepro-complete

# What every oracle process runs with: the venv's torch, DeepSpeed from the cache, the CPU
# accelerator, DeepSpeed's JIT-compiled CPU ops kept in the same cache (not ~/.cache), and the
# pip-installed ninja on PATH for that compilation; one thread per process (ranks run side by
# side on small machines).
deepspeed_oracle_environment() {
  export PYTHONPATH=$TRAINREPRO_DEEPSPEED_SITE:$TRAINREPRO_DEEPSPEED_DEPS${PYTHONPATH:+:$PYTHONPATH}
  export PATH=$TRAINREPRO_DEEPSPEED_DEPS/bin:$PATH
  export DS_ACCELERATOR=cpu
  export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$TRAINREPRO_DEEPSPEED_HOME/torch_extensions}
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
  export TRAINREPRO_THREADS=${TRAINREPRO_THREADS:-1}
  export PYTHONDONTWRITEBYTECODE=1
}
