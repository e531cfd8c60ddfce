// The fast CPU backend: oneDNN primitives for convolution, gemm/matmul, pooling and
// element-wise activations, own OpenMP loops for the glue ops, NHWC activations where the
// plan says so (see plan/layout_nhwc.cpp). Everything is prepared in load(); run() binds the
// caller's tensors (copied into backend-owned input buffers, outputs copied out) and executes
// the prepared steps in plan order on one oneDNN stream.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace opv::backend {

// Options.threads: OpenMP threads for oneDNN and the own loops (0 = all cores).
std::unique_ptr<Backend> make_cpu_backend(const Options& opts);

// How the cpu backend runs a call: a oneDNN primitive, one of its own loops (both "native"),
// or the reference kernel (the fallback for rare ops and operand combinations, with copies
// that convert NHWC buffers to and from row-major around it).
enum class CallImpl : uint8_t { OneDnn, Own, Reference };
const char* call_impl_name(CallImpl i);  // "native-onednn", "native-loop", "reference"

struct CallPath {
  std::string label, op, kernel;
  CallImpl impl = CallImpl::Reference;
  std::string why;  // for Reference: why the native steps declined
};

// Loads `plan` into a cpu backend (one thread, else `opts`) and reports, per plan call in order,
// the path load() chose for it. For `opvision inspect`.
std::vector<CallPath> cpu_call_paths(const plan::Plan& plan, const Options& opts = {});

}  // namespace opv::backend
