// Replays a capture (ir3/capture.h) kernel by kernel on the functional simulator: a simulated
// Adreno 630 for correctness, not a timing model. It is how we run real Mesa-compiled a630 code
// without an Adreno, and how rewritten kernels are checked against the originals.
//
// Steps: (1) allocate every capture buffer in the simulator's global memory (zero-filled);
// (2) run the setup once: copies (ONNX initializers from the caller, data.bin, buffer to
// buffer) and constant launches (weight layouts); (3) per inference: write the inputs, run the
// schedule's launches in order, read the outputs. A launch binds what the a630 driver would:
// the const file (buffer addresses and scalar args at the kernel's args offset, Mesa's
// immediates, the local size where the kernel reads it), textures t#i and IBOs as views of the
// bound buffers (RGBA16F/RGBA32F, pitch = width * texel), the work-group id and local id
// registers the kernel names, 64-fiber waves (THREAD64).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir3/capture.h"
#include "ir3/sim.h"

namespace opv::ir3 {

struct ReplayOptions {
  // Bytes of the ONNX initializer `name` (required when the setup copies initializers).
  std::function<std::vector<uint8_t>(const std::string& name)> initializer;
  // Called after each launch of the schedule (index, total, kernel name).
  std::function<void(size_t, size_t, const std::string&)> progress;
  // Instructions issued per wave before a launch is declared a runaway.
  uint64_t max_steps = 200'000'000;
  // Allocate the buffers but do not run the setup (validation fills them itself).
  bool skip_setup = false;
  // Debugging: trace lane `trace_lane` of work-group `trace_group` in every launch of kernel
  // `trace_kernel` (SimConfig::trace_group; -1: off).
  int trace_kernel = -1, trace_group = -1, trace_lane = 0;
};

struct ReplayStats {
  uint64_t launches = 0, instructions = 0, fiber_instructions = 0, waves = 0;
  uint64_t mad_f32 = 0, mad_f32_packed = 0;  // SimStats': mad.f32 elements issued, and in (rptN) groups
};

class Replayer {
 public:
  // Allocates the buffers and runs the setup. `code` overrides each kernel's code (same order
  // as capture.kernels; empty = the capture's own), for running rewritten kernels.
  Replayer(const Capture& capture, ReplayOptions opts, std::vector<std::vector<uint64_t>> code = {});

  // One inference: inputs by name (raw bytes of the capture's input tensors), outputs in the
  // capture's order (raw bytes).
  std::vector<std::vector<uint8_t>> run(const std::map<std::string, std::vector<uint8_t>>& inputs);

  // Runs one launch with the current memory (used by validation).
  SimStats launch(const CaptureLaunch& l);
  // Global memory of a buffer (for validation: fill inputs, read results).
  uint64_t address(int buffer) const { return addr_.at(buffer); }
  Simulator& sim() { return sim_; }
  const ReplayStats& stats() const { return stats_; }

 private:
  const Capture& cap_;
  ReplayOptions opts_;
  std::vector<std::vector<uint64_t>> code_;
  Simulator sim_;
  std::vector<uint64_t> addr_;
  ReplayStats stats_;
};

}  // namespace opv::ir3
