// The Open MPI backend of Communicator, for CPU tensors.
#include <mpi.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "harness/distributed/communicator.h"
#include "harness/distributed/mpi_session.h"

namespace trainrepro {
namespace {

MPI_Datatype mpi_type_of(const at::Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case at::kDouble:
      return MPI_DOUBLE;
    case at::kFloat:
      return MPI_FLOAT;
    case at::kLong:
      return MPI_INT64_T;
    case at::kHalf:
    case at::kBFloat16:
      return MPI_UINT16_T;  // moved bit for bit; sums go through widened_sum
    default:
      throw std::invalid_argument(std::string("MPI communicator: unsupported dtype ") +
                                  c10::toString(tensor.scalar_type()));
  }
}

void require_cpu_contiguous(const at::Tensor& tensor, const char* what) {
  if (!tensor.device().is_cpu() || !tensor.is_contiguous()) {
    throw std::invalid_argument(std::string("MPI communicator: ") + what +
                                " must be a contiguous CPU tensor");
  }
}

// MPI has no 16-bit float types: fp16 and bf16 are summed in float32 and rounded once into the
// tensor (NCCL sums them natively; the two can differ in the last bit of a sum).
bool is_16_bit_float(const at::Tensor& tensor) {
  return tensor.scalar_type() == at::kHalf || tensor.scalar_type() == at::kBFloat16;
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
  }
  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  void all_reduce_sum(at::Tensor& tensor) override {
    require_cpu_contiguous(tensor, "all_reduce tensor");
    at::Tensor summed = is_16_bit_float(tensor) ? tensor.to(at::kFloat) : tensor;
    timed([&] {
      MPI_Allreduce(MPI_IN_PLACE, summed.data_ptr(), static_cast<int>(summed.numel()),
                    mpi_type_of(summed), MPI_SUM, MPI_COMM_WORLD);
    });
    if (is_16_bit_float(tensor)) tensor.copy_(summed);
    count_ring(bytes_of(tensor), 2);
  }

  void reduce_scatter_sum(const at::Tensor& input, at::Tensor& output) override {
    require_cpu_contiguous(input, "reduce_scatter input");
    require_cpu_contiguous(output, "reduce_scatter output");
    if (input.numel() != output.numel() * world_size_) {
      throw std::invalid_argument("reduce_scatter: input must hold world_size output chunks");
    }
    const bool widened = is_16_bit_float(input);
    const at::Tensor summands = widened ? input.to(at::kFloat) : input;
    at::Tensor sum = widened ? at::empty(output.sizes(), output.options().dtype(at::kFloat)) : output;
    timed([&] {
      MPI_Reduce_scatter_block(summands.data_ptr(), sum.data_ptr(),
                               static_cast<int>(sum.numel()), mpi_type_of(summands), MPI_SUM,
                               MPI_COMM_WORLD);
    });
    if (widened) output.copy_(sum);
    count_ring(bytes_of(input), 1);
  }

  void all_gather(const at::Tensor& input, at::Tensor& output) override {
    require_cpu_contiguous(input, "all_gather input");
    require_cpu_contiguous(output, "all_gather output");
    if (output.numel() != input.numel() * world_size_) {
      throw std::invalid_argument("all_gather: output must hold world_size input chunks");
    }
    timed([&] {
      MPI_Allgather(input.data_ptr(), static_cast<int>(input.numel()), mpi_type_of(input),
                    output.data_ptr(), static_cast<int>(input.numel()), mpi_type_of(output),
                    MPI_COMM_WORLD);
    });
    count_ring(bytes_of(output), 1);
  }

  void broadcast(at::Tensor& tensor, int root) override {
    require_cpu_contiguous(tensor, "broadcast tensor");
    timed([&] {
      MPI_Bcast(tensor.data_ptr(), static_cast<int>(tensor.numel()), mpi_type_of(tensor), root,
                MPI_COMM_WORLD);
    });
    if (rank_ == root) count_bytes(bytes_of(tensor));
  }

  void barrier() override {
    timed([&] { MPI_Barrier(MPI_COMM_WORLD); });
  }

 private:
  // Runs one blocking MPI call and adds its wall time to collective_seconds().
  template <typename Call>
  void timed(Call&& call) {
    const auto start = std::chrono::steady_clock::now();
    call();
    add_collective_seconds(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }

  int rank_ = 0;
  int world_size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() {
  ensure_mpi_initialized();
  return std::make_unique<MpiCommunicator>();
}

}  // namespace trainrepro
