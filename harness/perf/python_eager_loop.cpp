#include "harness/perf/python_eager_loop.h"

#include <ATen/Parallel.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "harness/files/install_locations.h"

namespace trainrepro {
namespace {

// The same work as reference_loops.cpp's hand-written loop: GAS micro-batches, each loss a mean
// over its items divided by GAS, backward, then the config's gradient clipping, one optimizer
// step and zero_grad(set_to_none).
constexpr const char* kProgram = R"PY(
import json, sys, time
import torch
spec = json.loads(sys.argv[1])
torch.set_num_threads(spec["threads"])
torch.manual_seed(0)
device = torch.device(spec["device"])
dtype = torch.float64 if spec["float64"] else torch.float32
activation = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "gelu": torch.nn.GELU}[spec["activation"]]
dims = spec["dims"]
layers = []
for i in range(len(dims) - 1):
    layers.append(torch.nn.Linear(dims[i], dims[i + 1]))
    if i + 2 < len(dims):
        layers.append(activation())
model = torch.nn.Sequential(*layers).to(device=device, dtype=dtype)
o = spec["optimizer"]
if o["kind"] == "sgd":
    optimizer = torch.optim.SGD(model.parameters(), lr=o["lr"], momentum=o["momentum"],
                                weight_decay=o["weight_decay"])
else:
    make = torch.optim.AdamW if o["decoupled"] else torch.optim.Adam
    optimizer = make(model.parameters(), lr=o["lr"], betas=(o["beta1"], o["beta2"]),
                     eps=o["eps"], weight_decay=o["weight_decay"], foreach=False)
gas, micro = spec["gas"], spec["micro"]
inputs = [torch.randn(micro, dims[0], device=device, dtype=dtype) for _ in range(gas)]
if spec["classes"]:
    targets = [torch.randint(0, dims[-1], (micro,), device=device) for _ in range(gas)]
    loss_of = lambda out, t: torch.nn.functional.cross_entropy(out, t)
else:
    targets = [torch.randn(micro, dims[-1], device=device, dtype=dtype) for _ in range(gas)]
    loss_of = lambda out, t: (out - t).square().mean(dim=1).mean()
def step():
    for x, t in zip(inputs, targets):
        (loss_of(model(x), t) / gas).backward()
    if spec["clip"] > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), spec["clip"])
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
def sync():
    if device.type == "cuda":
        torch.cuda.synchronize()
for _ in range(spec["warmup"]):
    step()
sync()
times, cpu = [], time.process_time()
for _ in range(spec["measured"]):
    start = time.perf_counter()
    step()
    sync()
    times.append(time.perf_counter() - start)
times.sort()
middle = len(times) // 2
median = times[middle] if len(times) % 2 else (times[middle - 1] + times[middle]) / 2
print(json.dumps({"median_step": median, "cpu": time.process_time() - cpu}))
)PY";

// Single quotes for /bin/sh: every ' becomes '\''.
std::string shell_quoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

std::optional<std::string> python_eager_unsupported(const Scenario& scenario, const Plan& plan) {
  if (!std::holds_alternative<MlpOptions>(scenario.model.options)) {
    return "the Python eager loop is written for the \"mlp\" model only";
  }
  if (!std::holds_alternative<ClassificationData>(scenario.data.options) &&
      !std::holds_alternative<RegressionData>(scenario.data.options)) {
    return "the Python eager loop takes generated feature data (classification, regression) only";
  }
  const OptimizerKind kind = plan.optimizer.kind;
  if (kind != OptimizerKind::sgd && kind != OptimizerKind::adam && kind != OptimizerKind::adamw) {
    return "the Python eager loop builds torch.optim SGD, Adam or AdamW only";
  }
  if (plan.precision != Precision::fp32) return "the Python eager loop trains in fp32 or float64";
  return std::nullopt;
}

PerfRepetition measure_python_eager_loop(const Scenario& scenario, const Plan& plan) {
  const auto& mlp = std::get<MlpOptions>(scenario.model.options);
  const char* activations[] = {"relu", "gelu", "tanh"};
  const char* activation = mlp.activation == Activation::relu   ? activations[0]
                           : mlp.activation == Activation::gelu ? activations[1]
                                                                : activations[2];
  const OptimizerConfig& optimizer = plan.optimizer;
  const nlohmann::json spec = {
      {"threads", at::get_num_threads()},
      {"device", plan.device == Device::cuda ? "cuda" : "cpu"},
      {"float64", plan.dtype == EngineDtype::float64},
      {"activation", activation},
      {"dims", mlp.dims},
      {"classes", std::holds_alternative<ClassificationData>(scenario.data.options)},
      {"gas", plan.batch.gradient_accumulation_steps},
      {"micro", plan.batch.micro_batch_per_gpu},
      {"warmup", scenario.performance->warmup_steps},
      {"measured", scenario.performance->measured_steps},
      {"clip", plan.gradient_clipping},
      {"optimizer",
       {{"kind", optimizer.kind == OptimizerKind::sgd ? "sgd" : "adam"},
        {"decoupled",
         optimizer.kind == OptimizerKind::adamw ||
             (optimizer.kind == OptimizerKind::adam && optimizer.decoupled_weight_decay)},
        {"lr", optimizer.lr},
        {"beta1", optimizer.beta1},
        {"beta2", optimizer.beta2},
        {"eps", optimizer.eps},
        {"momentum", optimizer.momentum},
        {"weight_decay", optimizer.weight_decay}}}};
  const std::string command = shell_quoted(torch_python_executable()) + " -c " +
                              shell_quoted(kProgram) + " " + shell_quoted(spec.dump()) + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot start " + torch_python_executable());
  std::string output;
  std::array<char, 4096> chunk{};
  size_t read = 0;
  while ((read = std::fread(chunk.data(), 1, chunk.size(), pipe)) > 0)
    output.append(chunk.data(), read);
  const int status = ::pclose(pipe);
  const std::string last_line = output.substr(
      output.find_last_of('{') == std::string::npos ? output.size() : output.find_last_of('{'));
  const nlohmann::json times = nlohmann::json::parse(last_line, nullptr, false);
  if (status != 0 || times.is_discarded() || !times.contains("median_step")) {
    throw std::runtime_error("the Python eager loop (" + torch_python_executable() +
                             ", TRAINREPRO_TORCH_PYTHON to choose another) failed:\n" + output);
  }
  PerfRepetition repetition;
  const auto steps = static_cast<double>(scenario.performance->measured_steps);
  repetition.step_seconds = times["median_step"].get<double>();
  repetition.cpu_step_seconds = times["cpu"].get<double>() / steps;
  repetition.samples_per_second =
      static_cast<double>(plan.batch.gradient_accumulation_steps * plan.batch.micro_batch_per_gpu) /
      repetition.step_seconds;
  return repetition;
}

}  // namespace trainrepro
