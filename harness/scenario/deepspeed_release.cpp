#include "harness/scenario/deepspeed_release.h"

#include <array>
#include <sstream>

namespace trainrepro {
namespace {

const char* const kRemovedFeaturesIssue =
    " See https://github.com/deepspeedai/DeepSpeed/issues/8489.";

// runtime/config.py _reject_removed_config_keys in 0.19.8: every message is DeepSpeed's own.
std::vector<RemovedKey> removed_in_0_19_8() {
  const std::string see = kRemovedFeaturesIssue;
  return {
      {"", "nebula",
       "Nebula checkpointing has been removed. A leftover 'nebula' block would be ignored and "
       "checkpoints would silently fall back to local torch.save." +
           see},
      {"", "compression_training",
       "The DeepSpeed compression library has been removed. A leftover 'compression_training' "
       "block would be ignored and the model would train unquantized." +
           see},
      {"", "amp",
       "NVIDIA Apex AMP integration has been removed. Use DeepSpeed 'fp16', 'bf16', or "
       "'torch_autocast' instead." +
           see},
      {"", "quantize_training",
       "Mixture-of-Quantization (MoQ) / 'quantize_training' has been removed." + see},
      {"", "sparse_gradients",
       "Sparse compression of dense torch.nn.Embedding gradients has been removed. A leftover "
       "'sparse_gradients' flag would be ignored and those gradients would be reduced dense. "
       "Gradients from an embedding constructed with sparse=True are still reduced sparsely and "
       "need no config flag." +
           see},
      {"", "eigenvalue",
       "Eigenvalue-based Mixture-of-Quantization (MoQ) has been removed; the standalone "
       "'eigenvalue' configuration block is no longer supported." +
           see},
      {"", "sparse_attention",
       "DeepSpeed Sparse Attention has been removed; the 'sparse_attention' configuration block "
       "is no longer supported." +
           see},
      {"", "elasticity",
       "Elastic training has been removed; the 'elasticity' configuration block is no longer "
       "supported. Set train_batch_size / train_micro_batch_size_per_gpu / "
       "gradient_accumulation_steps directly."},
      {"", "graph_harvesting",
       "Graph harvesting has been removed; the 'graph_harvesting' configuration option is no "
       "longer supported." +
           see},
      {"", "curriculum_learning",
       "Legacy top-level 'curriculum_learning' has been removed. Use "
       "'data_efficiency.data_sampling.curriculum_learning' instead." +
           see},
      {"", "progressive_layer_drop",
       "Progressive Layer Dropping has been removed; the 'progressive_layer_drop' configuration "
       "block is no longer supported." +
           see},
      {"zero_optimization", "mics_shard_size",
       "MiCS ZeRO-3 sharding has been removed; 'zero_optimization.mics_shard_size' is no longer "
       "supported." +
           see},
      {"zero_optimization", "mics_hierarchical_params_gather",
       "MiCS ZeRO-3 sharding has been removed; 'zero_optimization.mics_hierarchical_params_gather' "
       "is no longer supported." +
           see},
      {"zero_optimization", "zeropp_loco_param",
       "LoCo-Zero++ has been removed; 'zero_optimization.zeropp_loco_param' is no longer "
       "supported. Remove this key to use standard ZeRO++ quantized gradients without LoCo error "
       "feedback." +
           see},
  };
}

// The field names and aliases of the pydantic models, listed from each release's own classes
// (model_fields) with the release installed: runtime/zero/config.py DeepSpeedZeroConfig,
// runtime/zero/offload_config.py, runtime/precision_config.py (0.19).
std::vector<std::string> zero_keys_common() {
  return {"allgather_bucket_size",
          "allgather_partitions",
          "contiguous_gradients",
          "cpu_offload",
          "cpu_offload_param",
          "cpu_offload_use_pin_memory",
          "elastic_checkpoint",
          "gather_16bit_weights_on_model_save",
          "ignore_unused_parameters",
          "legacy_stage1",
          "load_from_fp32_weights",
          "log_trace_cache_warnings",
          "max_live_parameters",
          "max_reuse_distance",
          "memory_efficient_linear",
          "model_persistence_threshold",
          "module_granularity_threshold",
          "offload_optimizer",
          "offload_param",
          "overlap_comm",
          "override_module_apply",
          "param_persistence_threshold",
          "pipeline_loading_checkpoint",
          "prefetch_bucket_size",
          "reduce_bucket_size",
          "reduce_scatter",
          "round_robin_gradients",
          "stage",
          "stage3_gather_16bit_weights_on_model_save",
          "stage3_gather_fp16_weights_on_model_save",
          "stage3_max_live_parameters",
          "stage3_max_reuse_distance",
          "stage3_model_persistence_threshold",
          "stage3_module_granularity_threshold",
          "stage3_param_persistence_threshold",
          "stage3_prefetch_bucket_size",
          "stage3_use_all_reduce_for_fetch_params",
          "sub_group_size",
          "use_all_reduce_for_fetch_params",
          "use_multi_rank_bucket_allreduce",
          "zero_hpz_partition_size",
          "zero_quantized_gradients",
          "zero_quantized_nontrainable_weights",
          "zero_quantized_weights"};
}

std::vector<std::string> with(std::vector<std::string> keys, std::vector<std::string> more) {
  keys.insert(keys.end(), more.begin(), more.end());
  return keys;
}

const std::vector<std::string> kOffloadParamKeys = {"buffer_count", "buffer_size", "device",
                                                    "max_in_cpu",   "nvme_path",   "pin_memory"};
const std::vector<std::string> kOffloadOptimizerKeys = {
    "buffer_count", "device",        "fast_init",      "nvme_path",
    "pin_memory",   "pipeline_read", "pipeline_write", "ratio"};

std::vector<ValidatedSection> validated_in_0_16_9() {
  return {{"/zero_optimization", "DeepSpeedZeroConfig",
           with(zero_keys_common(),
                {"mics_hierarchical_params_gather", "mics_shard_size", "zeropp_loco_param"})},
          {"/zero_optimization/offload_param", "DeepSpeedZeroConfig", kOffloadParamKeys},
          {"/zero_optimization/offload_optimizer", "DeepSpeedZeroConfig", kOffloadOptimizerKeys}};
}

std::vector<ValidatedSection> validated_in_0_19_8() {
  return {
      {"/zero_optimization", "DeepSpeedZeroConfig",
       with(zero_keys_common(),
            {"allgather_sequential", "compute_grad_norm", "enable_sanity_checks", "leaf_module",
             "parameter_alignment", "save_muon_momentum_buffer_in_memory",
             "stage3_allgather_sequential", "zenflow"})},
      {"/zero_optimization/offload_param", "DeepSpeedZeroConfig", kOffloadParamKeys},
      {"/zero_optimization/offload_optimizer", "DeepSpeedZeroConfig",
       with(kOffloadOptimizerKeys, {"cpuadam_cores_perc", "super_offload"})},
      {"/fp16",
       "DeepSpeedFP16Config",
       {"auto_cast", "consecutive_hysteresis", "enabled", "fp16_master_weights_and_grads",
        "hysteresis", "initial_scale_power", "loss_scale", "loss_scale_window", "min_loss_scale"}},
      {"/bf16",
       "DeepSpeedBF16Config",
       {"bf16_master_weights_and_grads", "bf16_optimizer_states", "check_grad_overflow", "enabled",
        "immediate_grad_update"}}};
}

std::vector<DeepSpeedRelease> make_releases() {
  DeepSpeedRelease v0_16;
  v0_16.version = "0.16.9";
  v0_16.gradient_clipping_default =
      gradient_clipping_default_of(v0_16.version);  // constants.py:215
  v0_16.direct_backward_hooked = false;             // runtime/engine.py has no output hooks
  v0_16.has_managed_gradient_accumulation = false;
  v0_16.bf16_without_zero_accumulates_in_fp32 = true;  // runtime/engine.py:1040-1044, 1356-1371
  v0_16.deepspeed_optimizer_names = {                  // runtime/config.py:75-88
                                     "adagrad",    "adam",       "adamw",       "lamb",
                                     "onebitadam", "onebitlamb", "zerooneadam", "muadam",
                                     "muadamw",    "musgd",      "lion"};
  v0_16.validated_sections = validated_in_0_16_9();

  DeepSpeedRelease v0_19;
  v0_19.version = "0.19.8";
  v0_19.gradient_clipping_default =
      gradient_clipping_default_of(v0_19.version);  // constants.py:203
  v0_19.direct_backward_hooked = true;             // runtime/engine.py:753-771, 3130, 3186 (0.18.3)
  v0_19.has_managed_gradient_accumulation = true;  // runtime/constants.py:79 (0.19.4)
  v0_19.bf16_without_zero_accumulates_in_fp32 = false;  // runtime/engine.py:1806-1810, 2313-2323
  v0_19.warmup_num_steps_validated = true;              // runtime/lr_schedules.py (0.19.3)
  v0_19.warmup_lr_max_defaults_to_optimizer_lr = true;  // runtime/lr_schedules.py (0.17.2, #7360)
  v0_19.cosine_progress_clamped = true;                 // runtime/lr_schedules.py (0.19.3)
  v0_16.cosine_construction_rate_first_group_only = true;  // fixed in 0.19.0 (#7969)
  v0_19.one_cycle_stair_counts_applied = true;  // runtime/lr_schedules.py _get_scale_factor
  v0_19.removed_keys = removed_in_0_19_8();     // runtime/config.py:80-141
  v0_19.deepspeed_optimizer_names = {
      // runtime/config.py:52-66
      "adagrad", "adam", "adamw", "lamb", "muadam", "muadamw", "musgd", "lion", "muon"};
  v0_19.validated_sections = validated_in_0_19_8();
  return {v0_16, v0_19};
}

// "0.16.4" -> "0.16"
std::string release_line(const std::string& version) {
  const size_t first = version.find('.');
  if (first == std::string::npos) return version;
  const size_t second = version.find('.', first + 1);
  return second == std::string::npos ? version : version.substr(0, second);
}

}  // namespace

const std::vector<DeepSpeedRelease>& known_deepspeed_releases() {
  static const std::vector<DeepSpeedRelease> releases = make_releases();
  return releases;
}

const DeepSpeedRelease& newest_deepspeed_release() { return known_deepspeed_releases().back(); }

const DeepSpeedRelease* find_deepspeed_release(const std::string& version, std::string& note) {
  note.clear();
  for (const DeepSpeedRelease& release : known_deepspeed_releases()) {
    if (release.version == version) return &release;
  }
  // Only the 0.16 line is read as one: within 0.19 the defaults moved release by release
  // (clipping in 0.19.3, managed accumulation in 0.19.4, removed keys in 0.19.7 and 0.19.8).
  const DeepSpeedRelease& oldest = known_deepspeed_releases().front();
  if (release_line(version) == release_line(oldest.version) &&
      version.size() > release_line(version).size()) {
    note = "DeepSpeed " + version + " is read with the semantics of " + oldest.version +
           ", the release of its line this harness was checked against";
    return &oldest;
  }
  return nullptr;
}

bool release_older(const std::string& a, const std::string& b) {
  auto numbers = [](const std::string& release) {
    std::array<int, 3> parts{};
    char dot1 = 0, dot2 = 0;
    std::istringstream in(release);
    in >> parts[0] >> dot1 >> parts[1] >> dot2 >> parts[2];
    return parts;
  };
  return numbers(a) < numbers(b);
}

double gradient_clipping_default_of(const std::string& version) {
  return release_older(version, "0.19.3") ? 0.0 : 1.0;
}

std::string describe_known_releases() {
  std::string text;
  const auto& releases = known_deepspeed_releases();
  for (size_t i = 0; i < releases.size(); ++i) {
    text += (i ? ", " : "") + releases[i].version;
    if (i == 0) text += " (also used for " + release_line(releases[i].version) + ".x)";
  }
  return text;
}

}  // namespace trainrepro
