// Where trainrepro finds what it did not compile in: the Python whose torch built it, and the
// cache outside any clone (the torch venv, DeepSpeed releases) that scripts/env.sh also uses.
#pragma once
#include <string>

namespace trainrepro {

// TRAINREPRO_TORCH_PYTHON when set and not empty, else the Python this build's LibTorch came
// from (scripts/build passes it to CMake).
std::string torch_python_executable();

// TRAINREPRO_CACHE, else $XDG_CACHE_HOME/trainrepro, else $HOME/.cache/trainrepro.
std::string trainrepro_cache_directory();

}  // namespace trainrepro
