// The model states one rank holds — parameters, gradients, optimizer states — measured from the
// tensors the engine keeps, and what the ZeRO paper (Rajbhandari et al. 2020, section 5) says a
// rank should hold and send at each stage, generalised to the element sizes in use.
#pragma once
#include <cstdint>
#include <vector>

#include <ATen/Tensor.h>

namespace trainrepro {

struct ModelStateBytes {
  int64_t parameters = 0;
  int64_t gradients = 0;
  int64_t optimizer_states = 0;
  int64_t total() const { return parameters + gradients + optimizer_states; }
};

// Bytes of the distinct storages behind `tensors` (views of one buffer count once; a released
// stage-3 parameter counts 0).
int64_t storage_bytes(const std::vector<at::Tensor>& tensors);

// Bytes per parameter element: P for parameters, G for gradients, K for optimizer states
// (fp32 Adam: 4, 4, 8; fp32 SGD with momentum: 4, 4, 4).
struct BytesPerParameter {
  int64_t parameters = 4;
  int64_t gradients = 4;
  int64_t optimizer_states = 8;
};

// The elements a stage holds after padding, from the parameters' shapes alone (never from the
// engine, so a wrong engine cannot hide behind its own count): stage 0 none; stages 1-2 one flat
// buffer padded to a multiple of N; stage 3 each parameter padded to a multiple of N.
int64_t padded_numel_from_shapes(int64_t zero_stage, int64_t world_size,
                                 const std::vector<int64_t>& parameter_numels);

// Stage 0: P+G+K; stage 1: P+G+K/N; stage 2: P+(G+K)/N; stage 3: (P+G+K)/N, times `numel`
// (pass the padded count to account for padding).
ModelStateBytes expected_model_states(int64_t zero_stage, int64_t world_size, int64_t numel,
                                      const BytesPerParameter& bytes);

// Bytes one rank sends per optimizer step with ring collectives: stages 0 and 1 reduce and
// gather the model once per step (2Ψ(N-1)/N); stage 2 reduce-scatters every micro-step and
// gathers once ((GAS+1)Ψ(N-1)/N); stage 3 gathers parameters for forward and for backward and
// reduce-scatters every micro-step (3·GAS·Ψ(N-1)/N, the paper's 1.5x at GAS 1). Ψ in bytes.
// `recomputed_bytes`: the parameters of checkpointed blocks, which stage 3 gathers once more
// per micro-step for the recomputation in backward. Frozen parameters (requires_grad false) are
// neither reduced nor, at stages 1-2, gathered; stage 3 gathers them for every forward
// (`frozen_bytes`) and for the backward of units whose output carries autograd history
// (`frozen_backward_bytes`). `parameter_bytes` counts the trainable parameters only.
struct FrozenParameterBytes {
  int64_t forward = 0;
  int64_t backward = 0;
};
// Stage 3's persistent parameters (stage3_param_persistence_threshold), in bytes after padding:
// never gathered for a forward or backward, gathered once after every step instead. The
// recomputed and frozen bytes above count only the others.
struct PersistentParameterBytes {
  int64_t trainable = 0;
  int64_t frozen = 0;
  // Gathered once more per step by the next forward, after the loop's own GatheredParameters
  // partitioned them (a loop that reads the whole parameters after each step).
  int64_t regathered_after_the_loop = 0;
};
// `scalar_reductions`: 8-byte values all-reduced in the step (the squared gradient norm and
// fp16's overflow count, where gradients are partitioned), each 2·8(N-1)/N bytes: nothing beside
// a model, but a tenth of the traffic of a model of 100 parameters.
int64_t expected_ring_bytes_per_step(int64_t zero_stage, int64_t world_size, int64_t gas,
                                     int64_t parameter_bytes, int64_t recomputed_bytes = 0,
                                     FrozenParameterBytes frozen = {},
                                     int64_t scalar_reductions = 0,
                                     PersistentParameterBytes persistent = {});

// Stage 3: whether DeepSpeed keeps a parameter of `numel` elements whole on every rank.
bool persistent_at_stage_3(int64_t numel, int64_t param_persistence_threshold);

}  // namespace trainrepro
