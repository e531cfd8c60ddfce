// For the GPU cases of tests/cuda: opens the cuda backend and checks that NVRTC is there.
#pragma once
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "target/cuda/codegen.h"

namespace opv::test {

// *cu = the cuda backend; returns why a GPU case must skip ("" when the device and NVRTC are both
// there): `if (std::string why = open_cuda(&cu); !why.empty()) GTEST_SKIP() << why;`
inline std::string open_cuda(std::unique_ptr<backend::Backend>* cu) {
  try {
    *cu = backend::create("cuda");
  } catch (const std::exception& e) {
    return std::string("no CUDA device: ") + e.what();
  }
  std::string why;
  if (!plan::cuda::nvrtc_available(&why)) return why;
  return "";
}

// Whether the device is cudasim (OPV_CUDA_DRIVER naming libopv_cudasim): launches one by one, a
// deterministic schedule.
inline bool on_cudasim() {
  const char* driver = std::getenv("OPV_CUDA_DRIVER");
  return driver && std::string(driver).find("cudasim") != std::string::npos;
}

// How many fresh inputs the bit-for-bit replay cases run: 3 on a GPU (a race shows as a result
// that moves between replays); 2 on cudasim, whose schedule is deterministic, so a third replay
// repeats the second's check at ~10 s of simulation each: the second still checks that the split
// counters reset.
inline int device_replays() { return on_cudasim() ? 2 : 3; }

}  // namespace opv::test
