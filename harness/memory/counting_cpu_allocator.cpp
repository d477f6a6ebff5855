#include "harness/memory/counting_cpu_allocator.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

namespace trainrepro {
namespace {

// Higher than LibTorch's own registration, so ours wins while installed.
constexpr uint8_t kPriority = 100;

// Every allocation carries its bookkeeping in a header just before the tensor's bytes: the real
// allocation (freed when the header is destroyed), its size and birth step, and links into the
// list of live allocations. Keeping it inline costs no allocation of its own, and leaves the
// tensor's pointer as its own context, which kernels that call raw_allocate() require.
struct Header {
  c10::DataPtr real;
  int64_t bytes = 0;
  int64_t birth_step = 0;
  bool harness = false;
  Header* previous = nullptr;
  Header* next = nullptr;
};
// A multiple of LibTorch's 64-byte CPU alignment, so the tensor's bytes stay aligned.
constexpr size_t kHeaderBytes = 128;
static_assert(sizeof(Header) <= kHeaderBytes, "the header must fit before the data");

thread_local bool in_harness_scope = false;

class Counter final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) override {
    c10::DataPtr real = base_->allocate(bytes + kHeaderBytes);
    char* block = static_cast<char*>(real.get());
    auto* header =
        new (block) Header{std::move(real), static_cast<int64_t>(bytes),
                           current_step_.load(std::memory_order_relaxed), in_harness_scope};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (header->harness) {
        stats_.harness_live_bytes += header->bytes;
      } else {
        header->next = head_;
        if (head_) head_->previous = header;
        head_ = header;
        stats_.live_bytes += header->bytes;
        stats_.live_allocations += 1;
        stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.live_bytes);
      }
    }
    void* data = block + kHeaderBytes;
    return {data, data, &Counter::release, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &Counter::release; }

  void copy_data(void* destination, const void* source, size_t count) const override {
    default_copy_data(destination, source, count);
  }

  static void release(void* data) {
    instance().forget(reinterpret_cast<Header*>(static_cast<char*>(data) - kHeaderBytes));
  }

  static Counter& instance() {
    // Never destroyed: tensors may outlive any scope, and their deleters point here.
    static Counter* counter = new Counter();
    return *counter;
  }

  void set_base(c10::Allocator* base) { base_ = base; }
  CpuAllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak_bytes = stats_.live_bytes;
  }
  void set_current_step(int64_t step) { current_step_.store(step, std::memory_order_relaxed); }
  std::vector<LiveAllocation> live() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<LiveAllocation> result;
    result.reserve(static_cast<size_t>(stats_.live_allocations));
    for (Header* h = head_; h; h = h->next) result.push_back({h->bytes, h->birth_step});
    return result;
  }

 private:
  void forget(Header* header) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (header->harness) {
        stats_.harness_live_bytes -= header->bytes;
      } else {
        if (header->previous) header->previous->next = header->next;
        if (header->next) header->next->previous = header->previous;
        if (head_ == header) head_ = header->next;
        stats_.live_bytes -= header->bytes;
        stats_.live_allocations -= 1;
      }
    }
    c10::DataPtr real = std::move(header->real);
    header->~Header();
    // `real` frees the whole block, header included, as it goes out of scope.
  }

  c10::Allocator* base_ = nullptr;
  std::mutex mutex_;
  Header* head_ = nullptr;
  CpuAllocatorStats stats_;
  std::atomic<int64_t> current_step_{0};
};

bool is_installed = false;

}  // namespace

void CountingCpuAllocator::install() {
  if (is_installed) return;
  Counter::instance().set_base(c10::GetDefaultCPUAllocator());
  c10::SetCPUAllocator(&Counter::instance(), kPriority);
  is_installed = true;
}

void CountingCpuAllocator::uninstall() {
  if (!is_installed) return;
  c10::SetCPUAllocator(c10::GetDefaultCPUAllocator(), kPriority);
  is_installed = false;
}

bool CountingCpuAllocator::installed() { return is_installed; }
CpuAllocatorStats CountingCpuAllocator::stats() { return Counter::instance().stats(); }
void CountingCpuAllocator::reset_peak() { Counter::instance().reset_peak(); }
void CountingCpuAllocator::set_current_step(int64_t step) {
  Counter::instance().set_current_step(step);
}
std::vector<LiveAllocation> CountingCpuAllocator::live_allocations() {
  return Counter::instance().live();
}

CountingCpuAllocator::HarnessScope::HarnessScope() : outer_(in_harness_scope) {
  in_harness_scope = true;
}
CountingCpuAllocator::HarnessScope::~HarnessScope() { in_harness_scope = outer_; }

}  // namespace trainrepro
