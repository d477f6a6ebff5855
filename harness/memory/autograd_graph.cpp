#include "harness/memory/autograd_graph.h"

#include <unordered_set>

#include <torch/csrc/autograd/function.h>

namespace trainrepro {

int64_t count_autograd_nodes(const std::vector<at::Tensor>& roots) {
  std::unordered_set<const torch::autograd::Node*> seen;
  std::vector<const torch::autograd::Node*> pending;
  for (const at::Tensor& root : roots) {
    if (!root.defined()) continue;
    const torch::autograd::Node* node = root.grad_fn().get();
    if (node != nullptr && seen.insert(node).second) pending.push_back(node);
  }
  while (!pending.empty()) {
    const torch::autograd::Node* node = pending.back();
    pending.pop_back();
    for (const torch::autograd::Edge& edge : node->next_edges()) {
      const torch::autograd::Node* next = edge.function.get();
      if (next != nullptr && seen.insert(next).second) pending.push_back(next);
    }
  }
  return static_cast<int64_t>(seen.size());
}

}  // namespace trainrepro
