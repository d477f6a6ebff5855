// Which DeepSpeed settings make DeepSpeed 0.19.8 act outside the run, each flag read as
// DeepSpeed reads it; what a pasted public config leaves off is never listed.
#include <gtest/gtest.h>

#include "harness/scenario/settings_acting_outside_the_run.h"

namespace trainrepro {
namespace {

std::vector<std::string> pointers(const char* config_text) {
  std::vector<std::string> found;
  for (const auto& setting : settings_acting_outside_the_run(nlohmann::json::parse(config_text))) {
    found.push_back(setting.pointer);
  }
  return found;
}

using Pointers = std::vector<std::string>;

TEST(SettingsOutsideTheRun, PublicConfigsThatLeaveThemOffAreNotListed) {
  // Baichuan2's and MiniCPM's disabled flops profiler, LMFlow's comms logger, LLaMA-Factory's
  // monitor_config (a key DeepSpeed does not read), monitors switched off or left "auto".
  EXPECT_EQ(pointers(R"({"flops_profiler": {"enabled": false, "profile_step": 1,
                          "output_file": null},
                         "comms_logger": {"enabled": true, "verbose": true},
                         "monitor_config": {"enabled": true, "csv_monitor": {"enabled": true}},
                         "tensorboard": {"enabled": false, "output_path": "/somewhere"},
                         "csv_monitor": {"enabled": "auto"}, "wandb": {"enabled": 0},
                         "comet": {"enabled": "false"}, "wall_clock_breakdown": true})"),
            Pointers{});
}

TEST(SettingsOutsideTheRun, FlopsProfilerPrintingToStdoutIsNotListed) {
  EXPECT_EQ(pointers(R"({"flops_profiler": {"enabled": true, "profile_step": 1}})"), Pointers{});
  EXPECT_EQ(pointers(R"({"flops_profiler": {"enabled": true, "output_file": ""}})"), Pointers{});
}

TEST(SettingsOutsideTheRun, FlopsProfilerOutputFileIsListedWhenTheProfilerRuns) {
  EXPECT_EQ(pointers(R"({"flops_profiler": {"enabled": true, "output_file": "/x/.bashrc"}})"),
            Pointers{"/flops_profiler/output_file"});
  // A dict section: Python's truth, so the string "false" turns it on.
  EXPECT_EQ(pointers(R"({"flops_profiler": {"enabled": "false", "output_file": "f"}})"),
            Pointers{"/flops_profiler/output_file"});
  // Autotuning turns the profiler on by itself.
  EXPECT_EQ(pointers(R"({"autotuning": {"enabled": true}, "flops_profiler": {"output_file": "f"}})"),
            (Pointers{"/flops_profiler/output_file", "/autotuning/enabled"}));
}

TEST(SettingsOutsideTheRun, AutotuningWritesInTheCurrentFolderByDefault) {
  const auto found =
      settings_acting_outside_the_run(nlohmann::json::parse(R"({"autotuning": {"enabled": 1}})"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].pointer, "/autotuning/enabled");
  EXPECT_NE(found[0].effect.find("autotuning_metric.json in the current folder"),
            std::string::npos);
}

TEST(SettingsOutsideTheRun, MonitorsAreReadAsPydanticBools) {
  EXPECT_EQ(pointers(R"({"tensorboard": {"enabled": "yes"}})"), Pointers{"/tensorboard/enabled"});
  EXPECT_EQ(pointers(R"({"csv_monitor": {"enabled": "On"}})"), Pointers{"/csv_monitor/enabled"});
  EXPECT_EQ(pointers(R"({"wandb": {"enabled": 1}})"), Pointers{"/wandb/enabled"});
  EXPECT_EQ(pointers(R"({"comet": {"enabled": true}})"), Pointers{"/comet/enabled"});
  EXPECT_EQ(pointers(R"({"tensorboard": {"enabled": "auto"}})"), Pointers{});
}

TEST(SettingsOutsideTheRun, MonitorWithoutOutputPathNamesTheCurrentFolder) {
  const auto found = settings_acting_outside_the_run(
      nlohmann::json::parse(R"({"csv_monitor": {"enabled": true}})"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].effect.find("\"DeepSpeedJobName\" in the current folder"), std::string::npos);
  const auto absolute = settings_acting_outside_the_run(nlohmann::json::parse(
      R"({"tensorboard": {"enabled": true, "output_path": "logs", "job_name": "/etc/x"}})"));
  ASSERT_EQ(absolute.size(), 1u);
  EXPECT_NE(absolute[0].effect.find("\"/etc/x\""), std::string::npos);
}

TEST(SettingsOutsideTheRun, AutocastImportsOnlyWhenEnabledAndNotTorchNn) {
  EXPECT_EQ(pointers(R"({"torch_autocast": {"enabled": true,
                          "lower_precision_safe_modules": ["this.Nothing"]}})"),
            Pointers{"/torch_autocast/lower_precision_safe_modules"});
  EXPECT_EQ(pointers(R"({"torch_autocast": {"enabled": false,
                          "lower_precision_safe_modules": ["this.Nothing"]}})"),
            Pointers{});
  // DeepSpeed's own default list: torch.nn is imported already.
  EXPECT_EQ(pointers(R"({"torch_autocast": {"enabled": true, "lower_precision_safe_modules":
                          ["torch.nn.Linear", "torch.nn.modules.conv.Conv2d"]}})"),
            Pointers{});
  EXPECT_EQ(pointers(R"({"torch_autocast": {"enabled": true, "lower_precision_safe_modules":
                          ["torch.nn.Linear", "torch.nnx.Linear"]}})"),
            Pointers{"/torch_autocast/lower_precision_safe_modules"});
}

TEST(SettingsOutsideTheRun, NvmePathIsListedOnlyWithTheNvmeDevice) {
  EXPECT_EQ(pointers(R"({"zero_optimization": {"stage": 3, "offload_optimizer":
                          {"device": "cpu", "nvme_path": "/local_nvme"}}})"),
            Pointers{});
  EXPECT_EQ(pointers(R"({"zero_optimization": {"stage": 3,
                          "offload_optimizer": {"device": "nvme", "nvme_path": "/n"},
                          "offload_param": {"device": "nvme", "nvme_path": ""}}})"),
            (Pointers{"/zero_optimization/offload_optimizer/nvme_path",
                      "/zero_optimization/offload_param/nvme_path"}));
}

TEST(SettingsOutsideTheRun, NotAnObjectListsNothing) {
  EXPECT_EQ(pointers("[]"), Pointers{});
  EXPECT_EQ(pointers(R"({"tensorboard": true, "flops_profiler": [1]})"), Pointers{});
}

}  // namespace
}  // namespace trainrepro
