// The autograd graph a set of tensors keeps alive, counted in nodes. A tensor kept across steps
// with its grad_fn keeps every node of the graph that made it, on the host heap, even after
// backward() freed the saved activations: the measure of "the graph is kept" that needs no
// inference from the heap's size.
#pragma once
#include <cstdint>
#include <vector>

#include <ATen/Tensor.h>

namespace trainrepro {

// Distinct autograd nodes reachable from the roots' grad_fn (each node counted once, the
// leaves' gradient accumulators included).
int64_t count_autograd_nodes(const std::vector<at::Tensor>& roots);

}  // namespace trainrepro
