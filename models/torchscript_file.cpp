#include "models/torchscript_file.h"

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>  // tryToGraphFunction(Node*)
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/csrc/jit/serialization/import.h>

#include "models/user_file_path.h"

namespace trainrepro {
namespace {

// torch's messages carry a C++ backtrace after the first line; the first line says it.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The names a plain module tree gives the parameters (each module's own first, then its
// children's, depth first), which is the order Python's named_parameters() gives and what the
// engine walks; a scripted module that lists them otherwise could not be mirrored.
// A tensor shared by two modules (GPT-2's tied embedding and head) is one parameter, named
// where it is met first, as Python's named_parameters() deduplicates it; C++'s does not.
void mirrored_order(const torch::jit::Module& module, const std::string& prefix,
                    std::set<const c10::TensorImpl*>& seen, std::vector<std::string>& names) {
  for (const auto& parameter : module.named_parameters(/*recurse=*/false)) {
    if (seen.insert(parameter.value.unsafeGetTensorImpl()).second) {
      names.push_back(prefix + parameter.name);
    }
  }
  for (const auto& child : module.named_children()) {
    mirrored_order(child.value, prefix + child.name + ".", seen, names);
  }
}

// Counts nodes (conversions, factories) whose dtype argument is a floating dtype fixed in the
// graph, recursing into blocks; `first` gets the first one's source line or node text.
void count_fixed_dtypes(torch::jit::Block* block, int64_t& count, std::string& first) {
  for (torch::jit::Node* node : block->nodes()) {
    for (torch::jit::Block* inner : node->blocks()) count_fixed_dtypes(inner, count, first);
    // A submodule's forward (or a scripted function) is another graph: walk it where called.
    if (node->kind() == c10::prim::CallMethod || node->kind() == c10::prim::CallFunction) {
      if (torch::jit::GraphFunction* callee = torch::jit::tryToGraphFunction(node)) {
        count_fixed_dtypes(callee->graph()->block(), count, first);
      }
      continue;
    }
    const auto& arguments = node->maybeSchema() ? node->schema().arguments()
                                                : std::vector<c10::Argument>{};
    for (size_t i = 0; i < arguments.size() && i < node->inputs().size(); ++i) {
      if (arguments[i].name() != "dtype") continue;
      const std::optional<c10::IValue> value = torch::jit::toIValue(node->inputs()[i]);
      if (!value || !value->isInt()) continue;
      const auto type = static_cast<at::ScalarType>(value->toInt());
      if (!at::isFloatingType(type)) continue;
      if (count++ == 0) {
        std::string where = node->sourceRange().str();
        first = std::string(node->kind().toQualString()) + " to " + c10::toString(type) +
                (where.empty() ? "" : " (" + first_line(where) + ")");
      }
    }
  }
}

std::string fixed_dtype_conversions(const torch::jit::Module& module) {
  int64_t count = 0;
  std::string first;
  count_fixed_dtypes(module.get_method("forward").graph()->block(), count, first);
  return count == 0 ? "" : std::to_string(count) + " place(s), first " + first;
}

}  // namespace

torch::jit::Module load_torchscript_module(const std::string& path) {
  torch::jit::setGraphExecutorOptimize(false);
  try {
    torch::jit::Module module = torch::jit::load(path, at::kCPU);
    return module;
  } catch (const std::exception& failure) {
    throw std::runtime_error(path + ": not a TorchScript module torch.jit.load can read: " +
                             first_line(failure.what()));
  }
}

ModelOptions read_torchscript_options(ObjectReader& options) {
  const UserFile file =
      read_user_file(options, "file", "a TorchScript module saved with torch.jit.save");
  torch::jit::Module module;
  try {
    module = load_torchscript_module(file.path);
  } catch (const std::exception& failure) {
    options.fail("file", failure.what());
  }
  const auto forward = module.find_method("forward");
  // One argument besides self: the batch's inputs.
  if (!forward || forward->function().getSchema().arguments().size() != 2) {
    options.fail("file", file.path + ": expected a module whose forward takes one argument (the "
                                     "inputs) and returns the outputs, found " +
                             (forward ? "forward" + c10::toString(forward->function().getSchema())
                                      : std::string("no forward method")));
  }
  TorchScriptOptions model;
  model.file = file.as_written;
  model.path = file.path;
  model.sha256 = file.sha256;
  std::set<const c10::TensorImpl*> seen;
  for (const auto& parameter : module.named_parameters(/*recurse=*/true)) {
    if (!seen.insert(parameter.value.unsafeGetTensorImpl()).second) continue;  // tied: once
    if (!parameter.value.is_floating_point()) {
      options.fail("file", file.path + ": parameter \"" + parameter.name + "\" is " +
                               std::string(c10::toString(parameter.value.scalar_type())) +
                               "; only floating parameters train");
    }
    model.parameter_names.push_back(parameter.name);
    model.parameter_count += parameter.value.numel();
  }
  if (model.parameter_names.empty()) {
    options.fail("file", file.path + ": the module has no parameters to train");
  }
  model.fixed_dtype_conversions = fixed_dtype_conversions(module);
  std::vector<std::string> mirrored;
  std::set<const c10::TensorImpl*> mirrored_seen;
  mirrored_order(module, "", mirrored_seen, mirrored);
  if (mirrored != model.parameter_names) {
    options.fail("file", file.path + ": the module lists its parameters in an order a module "
                                     "tree cannot give (a submodule's before its parent's own)");
  }
  return model;
}

}  // namespace trainrepro
