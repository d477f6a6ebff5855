#include "harness/worker/worker_sets.h"

#include <stdexcept>

#include "harness/distributed/rank_launcher.h"
#include "harness/json/printable.h"

namespace trainrepro {
namespace {

std::string set_key(const DeepSpeedPython& python, int world_size) {
  std::string key = python.versions.engine + '\0' + std::to_string(world_size);
  for (const std::string& part : python.command) key += '\0' + part;
  return key;
}

std::string with_output(const std::string& what, const ServedAnswer& answer) {
  return what + "; its output:\n" + printable_output_tail(answer.output);
}

}  // namespace

WorkerTrace WorkerSets::train(const DeepSpeedPython& python, nlohmann::json job,
                              int timeout_seconds, const std::vector<std::string>& parameter_names,
                              const std::vector<at::Tensor>& initial_parameters,
                              const std::string& named) {
  const int world_size = job.value("world_size", 1);
  const std::string key = set_key(python, world_size);
  std::unique_ptr<WorkerSet>& slot = sets_[key];
  // A set whose rank died between two jobs has ended: this job is not its failure.
  if (slot && !slot->running()) slot.reset();
  if (!slot) {
    try {
      slot = std::make_unique<WorkerSet>(python.command, world_size, python.versions.engine);
      ++started_;
    } catch (const std::runtime_error& error) {
      sets_.erase(key);
      throw WorkerTraceError("the " + worker_title(python) +
                             " worker set could not start: " + error.what() +
                             " (--fresh-workers starts new ranks for each scenario instead)");
    }
  }
  WorkerSet& set = *slot;
  ++jobs_;
  const bool expect_memory = job.value("memory", false);
  const ServedAnswer answer = set.serve(std::move(job), timeout_seconds);
  const std::string job_name = "job " + std::to_string(set.jobs_handed_over()) +
                               " of its served set" + (named.empty() ? "" : " (" + named + ")");
  // A failed set is ended here, before the error is reported: the next scenario starts anew.
  auto drop_and_fail = [&](const std::string& what) -> WorkerTrace {
    ended_early_.push_back(what);
    sets_.erase(key);
    throw WorkerTraceError(with_output(what, answer));
  };
  const std::string worker = worker_title(python);
  switch (answer.status) {
    case ServedAnswer::Status::stopped: {
      const int signal = answer.stopped_by_signal;
      close_all();  // end_by_signal does not return: every set first
      end_by_signal(signal);
    }
    case ServedAnswer::Status::timed_out:
      return drop_and_fail("the " + worker + " worker did not finish within " +
                           std::to_string(timeout_seconds) +
                           " s (--rank-timeout) and its set of ranks was killed (" + job_name +
                           "; the next scenario starts a new set)");
    case ServedAnswer::Status::set_ended:
      return drop_and_fail("the " + worker + " worker set ended without answering " + job_name +
                           " (exit code " + std::to_string(answer.exit_code) + ")");
    case ServedAnswer::Status::ranks_died:
      return drop_and_fail("a rank of the " + worker + " worker set died during " + job_name +
                           " (the set's answer: " + answer.answer + ")");
    case ServedAnswer::Status::no_trace:
      return drop_and_fail("no rank of the " + worker + " worker set wrote a trace for " +
                           job_name + " (the set's answer: " + answer.answer + ")");
    case ServedAnswer::Status::answered:
      break;
  }
  WorkerTrace trace;
  try {
    trace = read_worker_trace(answer.prefix, parameter_names, initial_parameters, expect_memory);
  } catch (const WorkerTraceError& error) {
    return drop_and_fail(std::string(error.what()) + " (" + job_name + ")");
  }
  set.remove_job_folder(set.jobs_handed_over());
  // A job that did not train, or left something behind, retired the set (serving.py): its
  // ranks are exiting, and the next scenario needs new ones.
  if (answer.retired) {
    ended_early_.push_back("retired after " + job_name + ": " + answer.answer);
    sets_.erase(key);
  }
  return trace;
}

std::string WorkerSets::summary() const {
  std::string text = "worker sets: " + std::to_string(jobs_) + " scenario(s) handed to " +
                     std::to_string(started_) +
                     " set(s) of worker ranks (--fresh-workers: new ranks for every scenario)";
  for (const std::string& why : ended_early_) text += "\n  a set ended early: " + why;
  return text;
}

}  // namespace trainrepro
