// Runs a capture (ir3/capture.h: real a630 kernels and their schedule) through a qcom Device:
// every capture buffer becomes a GPU object, every kernel's code an aligned slot of one code
// object, every launch a kernarg slot (const file, texture/IBO descriptors, samplers) written
// once; the per-inference schedule becomes ONE PM4 stream, built once and submitted per
// inference. The stream is lean: a preamble with the state no launch changes, then per launch
// only the registers that differ from the previous launch, CP_LOAD_STATE6 of its consts,
// descriptors and code, and CP_EXEC_CS.
//
// Barriers come from a byte-range analysis of the launches' arguments (CaptureArg reads/writes
// over [offset, offset+bytes) of a buffer): a CP_WAIT_FOR_IDLE goes before a launch only when
// it reads what a launch since the last barrier wrote (RAW), or writes what one read (WAR) or
// wrote (WAW); a CACHE_INVALIDATE is added when it samples, through a texture, bytes written by
// a launch since the last invalidate. PerDispatch is the conservative stream for comparison
// (WFI + CACHE_INVALIDATE before and CACHE_FLUSH_TS after every dispatch).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend/qcom/device.h"
#include "ir3/capture.h"

namespace opv::qcom {

enum class BarrierMode { Dependencies, PerDispatch };

struct StreamOptions {
  BarrierMode mode = BarrierMode::Dependencies;
  int drop_barrier = -1;  // tests: leave out the k-th dependency barrier of the inference stream
  // Build the inference stream only (inspect): no setup copies or launches, so no weights are
  // needed; run() then computes on unset buffers.
  bool skip_setup = false;
  // Bytes of an ONNX initializer (the setup copies weights from the model).
  std::function<std::vector<uint8_t>(const std::string&)> initializer;
};

struct StreamStats {
  uint64_t submissions = 0;  // per inference: always 1
  uint64_t dispatches = 0, packets = 0, bytes = 0;
  uint64_t barriers = 0;          // CP_WAIT_FOR_IDLE between dispatches (dependency edges)
  uint64_t cache_invalidates = 0; // CACHE_INVALIDATE between dispatches (texture edges)
  uint64_t cache_flushes = 0;     // CACHE_FLUSH_TS between dispatches (PerDispatch only)
  uint64_t raw_edges = 0, war_edges = 0, waw_edges = 0, texture_edges = 0;
  uint64_t fixed_packets = 0;     // preamble + epilogue (cache invalidate at start, WFI + flush at end)
};

class CaptureRunner {
 public:
  CaptureRunner(const ir3::Capture& cap, Device& dev, StreamOptions opts);
  ~CaptureRunner();
  CaptureRunner(const CaptureRunner&) = delete;
  CaptureRunner& operator=(const CaptureRunner&) = delete;

  // One inference: inputs by name (raw bytes), outputs in the capture's order. One submission.
  std::vector<std::vector<uint8_t>> run(const std::map<std::string, std::vector<uint8_t>>& inputs);

  const StreamStats& stats() const { return stats_; }              // the inference stream
  const std::vector<uint32_t>& stream() const { return stream_; }  // its dwords
  uint64_t setup_submissions() const { return setup_submissions_; }

 private:
  struct Slot;
  struct Builder;
  void build_slots();
  std::vector<uint32_t> build_stream(const std::vector<const ir3::CaptureLaunch*>& launches, bool inference,
                                     StreamStats* st);
  void submit_stream(const std::vector<uint32_t>& dw, GpuObject* obj);

  const ir3::Capture& cap_;
  Device& dev_;
  StreamOptions opts_;
  std::vector<GpuObject> bufs_;
  GpuObject code_, kernargs_, border_, pvt_, fence_, ib_;
  std::vector<uint64_t> code_off_;
  std::map<const ir3::CaptureLaunch*, size_t> slot_of_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> stream_;
  StreamStats stats_;
  uint64_t setup_submissions_ = 0;
  uint32_t fence_value_ = 0;
};

}  // namespace opv::qcom
