// Which samples each rank feeds at each micro-step, and which samples an evaluation reads: the
// one rule that the training loop, the diagnosis and the tests share. Rank r of W takes the r-th
// micro-batch of every W consecutive ones, so the W ranks' micro-step m together cover the
// samples [m W MB, (m + 1) W MB), and W x MB x GAS consecutive samples make one golden batch.
#pragma once
#include <cstdint>

namespace trainrepro {

struct SampleRange {
  int64_t begin = 0;
  int64_t end = 0;  // exclusive
};

// Evaluation batches come from far beyond any training sample, so they never overlap.
constexpr int64_t kEvaluationFirstSample = int64_t{1} << 20;

struct SampleAssignment {
  int64_t micro_batch = 1;  // per rank
  int64_t world_size = 1;

  // The samples rank `rank` feeds at micro-step `micro_step`.
  SampleRange micro_batch_of(int64_t micro_step, int64_t rank) const {
    const int64_t begin = (micro_step * world_size + rank) * micro_batch;
    return {begin, begin + micro_batch};
  }

  // Every rank's samples of `micro_steps` micro-steps from `first_micro_step` on.
  SampleRange all_ranks(int64_t first_micro_step, int64_t micro_steps) const {
    const int64_t begin = first_micro_step * world_size * micro_batch;
    return {begin, begin + micro_steps * world_size * micro_batch};
  }

  // Batch `batch` of evaluation `evaluation_index`. Every rank evaluates the same samples, one
  // micro-batch (its own size) per batch.
  SampleRange evaluation_batch(int64_t evaluation_index, int64_t batch,
                               int64_t batches_per_evaluation) const {
    const int64_t begin =
        kEvaluationFirstSample + (evaluation_index * batches_per_evaluation + batch) * micro_batch;
    return {begin, begin + micro_batch};
  }
};

}  // namespace trainrepro
