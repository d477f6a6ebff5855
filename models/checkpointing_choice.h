// How the user's model checkpoints its blocks: the vocabulary the scenario format shares with the
// models, without LibTorch (the scenario loader builds without it; see tests/fuzz).
#pragma once

namespace trainrepro {

enum class ActivationCheckpointing {
  none,  // autograd keeps every intermediate until backward (no checkpointing)
  // deepspeed.checkpointing.checkpoint / torch.utils.checkpoint(use_reentrant=True): an autograd
  // function of the block's *inputs*. When no input requires grad its output has no history,
  // so backward never reaches the block and the block's parameters get no gradient.
  reentrant,
  // deepspeed.checkpointing.non_reentrant_checkpoint / torch.utils.checkpoint(use_reentrant=
  // False): the block is recorded whether or not its input requires grad, so its parameters get
  // the gradients they would get without checkpointing.
  non_reentrant,
};

}  // namespace trainrepro
