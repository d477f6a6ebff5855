// The collectives ZeRO needs, behind one interface with two real backends: Open MPI for CPU
// tensors, NCCL for CUDA tensors (one rank per GPU). Each backend also counts the bytes this
// rank sends, as the ring algorithms the ZeRO paper assumes would send them, so traffic can be
// compared with the paper's formulas.
#pragma once
#include <cstdint>
#include <memory>

#include <ATen/Tensor.h>

namespace trainrepro {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // In place: every rank ends with the elementwise sum.
  virtual void all_reduce_sum(at::Tensor& tensor) = 0;
  // `input` holds world_size equal chunks; rank r receives the sum of every rank's chunk r.
  virtual void reduce_scatter_sum(const at::Tensor& input, at::Tensor& output) = 0;
  // Every rank's `input` (equal sizes), concatenated in rank order into `output`.
  virtual void all_gather(const at::Tensor& input, at::Tensor& output) = 0;
  virtual void broadcast(at::Tensor& tensor, int root) = 0;
  virtual void barrier() = 0;

  // Bytes this rank handed to collectives, counted by the ring model ((N-1)/N of each buffer per
  // pass): what DeepSpeed's collectives would move, not a measurement of the wire.
  int64_t ring_bytes() const { return ring_bytes_; }
  // Wall seconds this rank spent blocked in collectives (Open MPI; NCCL only enqueues work on a
  // stream, so its calls are not timed).
  double collective_seconds() const { return collective_seconds_; }

 protected:
  // Ring algorithms: all-reduce sends 2(N-1)/N of the buffer, reduce-scatter and all-gather
  // (N-1)/N, a broadcast root the buffer once.
  void count_ring(int64_t buffer_bytes, int64_t passes) {
    const int64_t n = world_size();
    if (n > 1) ring_bytes_ += passes * buffer_bytes * (n - 1) / n;
  }
  void count_bytes(int64_t bytes) { ring_bytes_ += bytes; }
  static int64_t bytes_of(const at::Tensor& tensor) { return static_cast<int64_t>(tensor.nbytes()); }
  void add_collective_seconds(double seconds) { collective_seconds_ += seconds; }

 private:
  int64_t ring_bytes_ = 0;
  double collective_seconds_ = 0.0;
};

// MPI must be initialised (see mpi_session.h). Tensors must be contiguous CPU float32/float64.
std::unique_ptr<Communicator> make_mpi_communicator();

// One rank per GPU: rank r uses CUDA device r % devices; the NCCL unique id travels over MPI.
std::unique_ptr<Communicator> make_nccl_communicator();

}  // namespace trainrepro
