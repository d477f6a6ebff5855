// Your own model as a TorchScript file (model "torchscript"): a module you traced or scripted in
// Python and saved with torch.jit.save (docs/your-own-bug.md). Read once when the
// scenario loads, to know its parameters' names (what "frozen" and the golden are keyed by) and
// to refuse what cannot run: no forward(inputs), no floating parameters, a file torch cannot load.
#pragma once
#include <string>

#include <torch/csrc/jit/api/module.h>

#include "harness/json/json_fields.h"
#include "models/model_zoo.h"

namespace trainrepro {

// The "options" of model "torchscript": {"file": path relative to the scenario's folder}.
ModelOptions read_torchscript_options(ObjectReader& options);

// Loads the module on the CPU with the graph executor's optimisations off, so that the graph
// runs op by op as recorded: no fusion changes a float32 run's arithmetic against its float64
// golden, and no profiling run allocates differently in the first steps. Throws
// std::runtime_error starting with `path`.
torch::jit::Module load_torchscript_module(const std::string& path);

}  // namespace trainrepro
