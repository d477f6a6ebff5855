// Your TorchScript module as a zoo model: its parameters are registered in a module tree that
// mirrors the file's (same tensors, same dotted names), so the engine, ZeRO stages 0-2, the
// optimizer and the golden treat it exactly like a built-in model; forward runs the file's graph.
#pragma once
#include <memory>
#include <stdexcept>

#include "models/model_zoo.h"
#include "models/zoo_model.h"

namespace trainrepro {

// Your module cannot give what the data needs (its forward fails, or returns the wrong shape):
// the scenario's input is wrong, not the harness, so callers report it as bad input (exit 2).
struct UserModelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Loads the module; its weights are the file's, cast later by build_model like any model's.
std::shared_ptr<ZooModel> make_torchscript_model(const TorchScriptOptions& options);

}  // namespace trainrepro
