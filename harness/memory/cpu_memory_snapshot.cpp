#include "harness/memory/cpu_memory_snapshot.h"

#include <algorithm>

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/serialization/pickle.h>

namespace trainrepro {
namespace {

using c10::IValue;
using Dict = c10::impl::GenericDict;
using List = c10::impl::GenericList;

Dict new_dict() { return Dict(c10::StringType::get(), c10::AnyType::get()); }
List new_list() { return List(c10::AnyType::get()); }

// CUDA's allocator rounds to 512 bytes; positions are spaced the same way so the viewer's
// layout looks like what it knows.
int64_t rounded(int64_t bytes) { return (std::max<int64_t>(bytes, 1) + 511) / 512 * 512; }

List frames_of(int64_t birth_step) {
  Dict frame = new_dict();
  frame.insert("filename", "trainrepro (CPU tensors)");
  frame.insert("line", birth_step);
  frame.insert("name", "allocated in optimizer step " + std::to_string(birth_step));
  List frames = new_list();
  frames.push_back(frame);
  return frames;
}

}  // namespace

std::string cpu_memory_snapshot_pickle(const std::vector<LiveAllocation>& live) {
  std::vector<LiveAllocation> by_birth = live;
  std::stable_sort(by_birth.begin(), by_birth.end(),
                   [](const LiveAllocation& a, const LiveAllocation& b) {
                     return a.birth_step < b.birth_step;
                   });
  List segments = new_list();
  List trace = new_list();
  int64_t address = 0;
  for (const LiveAllocation& allocation : by_birth) {
    const int64_t size = rounded(allocation.bytes);
    Dict block = new_dict();
    block.insert("address", address);
    block.insert("size", size);
    block.insert("requested_size", allocation.bytes);
    block.insert("state", "active_allocated");
    block.insert("frames", frames_of(allocation.birth_step));
    List blocks = new_list();
    blocks.push_back(block);

    Dict segment = new_dict();
    segment.insert("device", int64_t{0});
    segment.insert("address", address);
    segment.insert("total_size", size);
    segment.insert("allocated_size", size);
    segment.insert("active_size", size);
    segment.insert("requested_size", allocation.bytes);
    segment.insert("stream", int64_t{0});
    segment.insert("segment_type", size >= (1 << 20) ? "large" : "small");
    segment.insert("segment_pool_id", c10::ivalue::Tuple::create({int64_t{0}, int64_t{0}}));
    segment.insert("is_expandable", false);
    segment.insert("frames", new_list());
    segment.insert("blocks", blocks);
    segments.push_back(segment);

    // The timeline: each survivor's allocation, in the order of the steps that made them
    // (time_us is the step: the viewer only orders by it).
    Dict event = new_dict();
    event.insert("action", "alloc");
    event.insert("addr", address);
    event.insert("size", size);
    event.insert("stream", int64_t{0});
    event.insert("time_us", allocation.birth_step);
    event.insert("frames", frames_of(allocation.birth_step));
    trace.push_back(event);
    address += size;
  }
  List device_traces = new_list();
  device_traces.push_back(trace);
  Dict snapshot = new_dict();
  snapshot.insert("segments", segments);
  snapshot.insert("device_traces", device_traces);
  const std::vector<char> bytes = torch::jit::pickle(IValue(snapshot));
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace trainrepro
