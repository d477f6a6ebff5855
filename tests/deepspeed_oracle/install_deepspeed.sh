#!/usr/bin/env bash
# Installs the real DeepSpeed (deepspeed==0.19.8 from PyPI) and its pure-Python dependencies
# into a cache outside the clone, next to the LibTorch venv, for the DeepSpeed oracle:
#   ${TRAINREPRO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trainrepro}/deepspeed-0.19.8/{site,deps}
# torch itself is not installed again: the oracle runs with the torch venv's python
# (scripts/bootstrap) and this folder on PYTHONPATH. The stamp file is written last, so an
# interrupted install is redone from scratch; a second run does nothing (under a second).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
source "$(dirname "${BASH_SOURCE[0]}")/deepspeed_env.sh"

[[ -f $TRAINREPRO_DEEPSPEED_STAMP ]] && exit 0
if [[ ! -f $TRAINREPRO_VENV/.trainrepro-complete ]]; then
  echo "install_deepspeed: the torch venv $TRAINREPRO_VENV is missing or incomplete; run scripts/bootstrap first" >&2
  exit 3
fi

mkdir -p "$TRAINREPRO_CACHE"
# Parallel CTest runs may all find the cache missing: one installs, the others wait for it.
exec 9>"$TRAINREPRO_CACHE/deepspeed-$TRAINREPRO_DEEPSPEED_VERSION.lock"
flock 9
[[ -f $TRAINREPRO_DEEPSPEED_STAMP ]] && exit 0

started=$SECONDS
echo "install_deepspeed: installing deepspeed==$TRAINREPRO_DEEPSPEED_VERSION into $TRAINREPRO_DEEPSPEED_HOME"
rm -rf "$TRAINREPRO_DEEPSPEED_HOME"
mkdir -p "$TRAINREPRO_DEEPSPEED_SITE" "$TRAINREPRO_DEEPSPEED_DEPS"
pip=("$TRAINREPRO_VENV/bin/python" -m pip install --quiet --no-cache-dir --progress-bar off
     --disable-pip-version-check)
# deepspeed's requirements/requirements.txt, less torch and numpy (the venv has both); none of
# these depends on torch.
"${pip[@]}" --target "$TRAINREPRO_DEEPSPEED_DEPS" einops hjson msgpack ninja "packaging>=20.0" \
    psutil py-cpuinfo "pydantic>=2.0.0" tqdm
# wheel and setuptools only serve building deepspeed's sdist, and are deleted after.
build_tools=$TRAINREPRO_DEEPSPEED_HOME/build-tools
"${pip[@]}" --target "$build_tools" wheel "setuptools<81"
# DeepSpeed ships only an sdist, whose setup.py imports torch: build it against the venv's torch
# (no build isolation, which would download torch again), with no ops precompiled (DS_BUILD_OPS=0;
# the CPU ops compile on first use, into TORCH_EXTENSIONS_DIR) and the CPU accelerator.
PYTHONPATH=$build_tools:$TRAINREPRO_DEEPSPEED_DEPS DS_BUILD_OPS=0 DS_ACCELERATOR=cpu \
    "${pip[@]}" --target "$TRAINREPRO_DEEPSPEED_SITE" --no-deps --no-build-isolation "deepspeed==$TRAINREPRO_DEEPSPEED_VERSION"
rm -rf "$build_tools"
PYTHONPATH=$TRAINREPRO_DEEPSPEED_SITE:$TRAINREPRO_DEEPSPEED_DEPS DS_ACCELERATOR=cpu \
    "$TRAINREPRO_VENV/bin/python" - <<PY
import deepspeed, torch
assert deepspeed.__version__ == "$TRAINREPRO_DEEPSPEED_VERSION", deepspeed.__version__
assert deepspeed.__file__.startswith("$TRAINREPRO_DEEPSPEED_SITE"), deepspeed.__file__
assert torch.__file__.startswith("$TRAINREPRO_VENV"), f"torch was installed again: {torch.__file__}"
PY
touch "$TRAINREPRO_DEEPSPEED_STAMP"
echo "install_deepspeed: done in $((SECONDS - started)) s"
