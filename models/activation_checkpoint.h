// Activation checkpointing as a user's model does it: each block's forward runs without keeping
// anything for backward but the block's input, and backward runs the block again to get what it
// needs (deepspeed.checkpointing.checkpoint, torch.utils.checkpoint). The zoo's models run their
// blocks through ZooModel::run_block(), which comes here when the loop's habit asks for it.
#pragma once
#include <functional>
#include <vector>

#include <ATen/Tensor.h>

#include "models/checkpointing_choice.h"

namespace trainrepro {

using BlockForward = std::function<at::Tensor(const at::Tensor& input)>;

// The block's output for `input`, checkpointed as `mode` says (not `none`). `block` is called
// again during backward, with grad mode on, on a copy of `input` detached from its history; it
// must compute the same function both times (no randomness: the zoo's models have no dropout).
at::Tensor checkpointed(ActivationCheckpointing mode, BlockForward block, const at::Tensor& input);

}  // namespace trainrepro
