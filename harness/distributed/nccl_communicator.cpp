// The NCCL backend of Communicator, for CUDA tensors: one rank per GPU, the NCCL unique id
// shared through MPI, collectives enqueued on the current CUDA stream.
#include <mpi.h>
#include <nccl.h>

#include <exception>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "harness/distributed/communicator.h"
#include "harness/distributed/mpi_session.h"

namespace trainrepro {
namespace {

void check(ncclResult_t result, const char* what) {
  if (result != ncclSuccess) {
    throw std::runtime_error(std::string("NCCL ") + what + ": " + ncclGetErrorString(result));
  }
}

ncclDataType_t nccl_type_of(const at::Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case at::kDouble:
      return ncclFloat64;
    case at::kFloat:
      return ncclFloat32;
    case at::kHalf:
      return ncclFloat16;
    case at::kBFloat16:
      return ncclBfloat16;
    case at::kLong:
      return ncclInt64;
    default:
      throw std::invalid_argument(std::string("NCCL communicator: unsupported dtype ") +
                                  c10::toString(tensor.scalar_type()));
  }
}

void require_cuda_contiguous(const at::Tensor& tensor, const char* what) {
  if (!tensor.is_cuda() || !tensor.is_contiguous()) {
    throw std::invalid_argument(std::string("NCCL communicator: ") + what +
                                " must be a contiguous CUDA tensor");
  }
}

void require_same_dtype(const at::Tensor& input, const at::Tensor& output, const char* what) {
  if (input.scalar_type() != output.scalar_type()) {
    throw std::invalid_argument(std::string("NCCL communicator: ") + what +
                                " input and output dtypes differ");
  }
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
    const int devices = static_cast<int>(at::cuda::device_count());
    if (devices == 0) throw std::runtime_error("NCCL communicator: no CUDA device");
    device_ = rank_ % devices;
    // This rank's GPU becomes the process's current device, where the loop puts its tensors.
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(device_));
    ncclUniqueId id;
    if (rank_ == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    check(ncclCommInitRank(&comm_, world_size_, id, rank_), "ncclCommInitRank");
  }
  // Leaving by an exception (a failed collective, a rank's error): abort, which never waits for
  // the other ranks, where destroy could wait forever on a collective a dead rank never joins.
  ~NcclCommunicator() override {
    if (comm_ == nullptr) return;
    if (std::uncaught_exceptions() > 0) {
      ncclCommAbort(comm_);
    } else {
      ncclCommDestroy(comm_);
    }
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  void all_reduce_sum(at::Tensor& tensor) override {
    require_cuda_contiguous(tensor, "all_reduce tensor");
    enqueued(ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), tensor.numel(), nccl_type_of(tensor),
                        ncclSum, comm_, stream()),
          "all_reduce");
    count_ring(bytes_of(tensor), 2);
  }

  void reduce_scatter_sum(const at::Tensor& input, at::Tensor& output) override {
    require_cuda_contiguous(input, "reduce_scatter input");
    require_cuda_contiguous(output, "reduce_scatter output");
    require_same_dtype(input, output, "reduce_scatter");
    // The same contract as the MPI backend: NCCL itself would read past a short input.
    if (input.numel() != output.numel() * world_size_) {
      throw std::invalid_argument("reduce_scatter: input must hold world_size output chunks");
    }
    enqueued(ncclReduceScatter(input.data_ptr(), output.data_ptr(), output.numel(),
                            nccl_type_of(input), ncclSum, comm_, stream()),
          "reduce_scatter");
    count_ring(bytes_of(input), 1);
  }

  void all_gather(const at::Tensor& input, at::Tensor& output) override {
    require_cuda_contiguous(input, "all_gather input");
    require_cuda_contiguous(output, "all_gather output");
    require_same_dtype(input, output, "all_gather");
    if (output.numel() != input.numel() * world_size_) {
      throw std::invalid_argument("all_gather: output must hold world_size input chunks");
    }
    enqueued(ncclAllGather(input.data_ptr(), output.data_ptr(), input.numel(), nccl_type_of(input),
                        comm_, stream()),
          "all_gather");
    count_ring(bytes_of(output), 1);
  }

  void broadcast(at::Tensor& tensor, int root) override {
    require_cuda_contiguous(tensor, "broadcast tensor");
    enqueued(ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), tensor.numel(), nccl_type_of(tensor),
                        root, comm_, stream()),
          "broadcast");
    if (rank_ == root) count_bytes(bytes_of(tensor));
  }

  void barrier() override {
    at::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_)).synchronize();
    MPI_Barrier(MPI_COMM_WORLD);
  }

 private:
  // A collective NCCL refused: abort this rank's communicator (its peers see the error or the
  // rank's exit, and mpirun ends them) rather than leave it half-used.
  void enqueued(ncclResult_t result, const char* what) {
    if (result == ncclSuccess) return;
    const std::string message = std::string("NCCL ") + what + ": " + ncclGetErrorString(result);
    ncclCommAbort(comm_);
    comm_ = nullptr;
    throw std::runtime_error(message);
  }

  cudaStream_t stream() const {
    return at::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_)).stream();
  }

  int rank_ = 0;
  int world_size_ = 1;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator() {
  ensure_mpi_initialized();
  return std::make_unique<NcclCommunicator>();
}

}  // namespace trainrepro
