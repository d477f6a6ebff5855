// Two builds measured in turns: `perf compare` confirms a suspected regression by running the
// baseline's and the current build's `perf run` side by side as two workers that take turns, one
// round of repetitions each (A, B, B, A, A, B, …), so both builds see the same moments of a
// shared machine. Measured here: the same build's judged step moves 4-10 % between two `perf run`
// processes a few seconds apart (the machine's state, not memory layout: it stays with address
// randomisation off), and only 1-2 % between two copies measured in turns in one process.
//
// The protocol is two inherited pipes: a worker (`perf run --take-turns`) writes one byte to
// file descriptor 4 when it is ready to measure, then reads one byte from file descriptor 3
// before each round and writes one to 4 after it, and after its last round waits for the end of
// file on 3 before it writes its results and exits, so that neither worker's start or exit runs
// beside the other's measurements.
#pragma once
#include <string>
#include <sys/types.h>
#include <vector>

namespace trainrepro {

// The worker's side: waits for its turn, says when its round is done.
class TurnTaker {
 public:
  static constexpr int kTurnInput = 3;
  static constexpr int kTurnDone = 4;
  // Throws std::runtime_error when the coordinator has gone (end of file on kTurnInput).
  void wait_for_turn();
  void end_turn();
  // After the last round: until the coordinator closes the turns.
  void wait_for_the_end();

 private:
  bool said_ready_ = false;
};

// The coordinator's side: one worker process whose rounds it starts one at a time.
class TurnWorker {
 public:
  // Starts `arguments` (the executable first) in `working_directory` (when not empty), its
  // output in `log`. Throws std::runtime_error when it cannot start.
  // A worker silent for `answer_seconds` (start-up, or one round) is stopped and counts as dead:
  // a hung build must not hang a nightly job.
  TurnWorker(std::vector<std::string> arguments, const std::string& working_directory,
             std::string log, double answer_seconds = 1800.0);
  ~TurnWorker();
  TurnWorker(const TurnWorker&) = delete;
  TurnWorker& operator=(const TurnWorker&) = delete;

  // Waits until the worker is ready to measure; false when it has died or went silent.
  bool wait_until_ready();
  // Lets the worker run one round and waits until it is done; false when the worker has died or
  // went silent.
  bool take_turn();
  // Tells the worker no more turns come, waits for it; "" when it exited 0 or 1 (measured; 1:
  // a scaling expectation missed, not what is judged here), else why not, with its output.
  std::string finish();
  const std::string& log() const { return log_; }

 private:
  pid_t pid_ = -1;
  int turn_fd_ = -1;  // the coordinator writes the turn here
  int done_fd_ = -1;  // and reads the end of the round here
  std::string executable_;
  std::string log_;
  double answer_seconds_;
  bool silent_ = false;  // stopped for not answering in time

  bool wait_for_answer();
};

}  // namespace trainrepro
