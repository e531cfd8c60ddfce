// For the GPU cases of tests/cuda: opens the cuda backend and checks that NVRTC is there.
#pragma once
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

}  // namespace opv::test
