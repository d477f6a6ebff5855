// Who decides the accumulation boundary of a Hugging Face Trainer run under DeepSpeed, release by
// release. The Trainer (transformers 5.24.0) runs its own loop: it counts the micro-batches of
// each window itself and hands accelerate a GradientAccumulationPlugin of num_steps 1; whether
// DeepSpeed hears of that window depends on the accelerate release. Each rule cites the file and
// function it was read from (paths inside the releases' wheels); the code is restated, not copied.
#pragma once
#include <string>
#include <vector>

namespace trainrepro {

inline constexpr const char* kNewestAccelerateRelease = "1.15.0";
// The first release whose DeepSpeedEngineWrapper passes the Trainer's boundary to DeepSpeed.
inline constexpr const char* kAccelerateExplicitBoundarySince = "1.8.0";

// What the transformers release trainrepro follows does in its loop (trainer.py), with the
// release each behaviour arrived in:
// - Trainer.create_accelerator_and_postprocess sets GradientAccumulationPlugin num_steps to 1
//   ("The Trainer handles GAS itself"), and _inner_training_loop sets
//   accelerator.gradient_state._set_sync_gradients(do_sync_step) before every micro-batch,
//   do_sync_step being true every args.gradient_accumulation_steps-th micro-batch (and at the end
//   of the epoch): the Trainer drives sync_gradients itself from 4.47.0.
// - Trainer.training_step divides the loss by current_gradient_accumulation_steps (the window's
//   micro-batches) unless it was normalised by num_items_in_batch, and under DeepSpeed calls
//   accelerator.backward(loss, scale_wrt_gas=False), so DeepSpeed's engine.backward does not
//   divide again: from 4.49.0 (PR #35808).
inline constexpr const char* kTrainerDrivesSyncSince = "4.47.0";
inline constexpr const char* kTrainerScaleWrtGasOffSince = "4.49.0";

struct AccelerateRelease {
  std::string version;
  // utils/deepspeed.py DeepSpeedEngineWrapper.backward. From 1.8.0 it takes sync_gradients
  // (Accelerator.backward passes the GradientState's), calls
  // engine.set_gradient_accumulation_boundary(is_boundary=sync_gradients) before
  // engine.backward, and engine.step() only when sync_gradients is true. Before 1.8.0 it calls
  // engine.backward then engine.step() after every micro-batch, and DeepSpeed's own micro-step
  // counter against its gradient_accumulation_steps decides the boundary.
  bool passes_explicit_boundary = false;
};

// Oldest first; the last is the default.
const std::vector<AccelerateRelease>& known_accelerate_releases();
const AccelerateRelease& newest_accelerate_release();
// nullptr for a release the table does not know.
const AccelerateRelease* find_accelerate_release(const std::string& version);
// "1.7.0, 1.8.0, 1.15.0", for error messages.
std::string describe_known_accelerate_releases();

}  // namespace trainrepro
