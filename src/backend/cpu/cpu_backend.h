// The fast CPU backend: oneDNN primitives for convolution, gemm/matmul, pooling and
// element-wise activations, own OpenMP loops for the glue ops, NHWC activations where the
// plan says so (see plan/layout_nhwc.cpp). Everything is prepared in load(); run() binds the
// caller's tensors (copied into backend-owned input buffers, outputs copied out) and executes
// the prepared steps in plan order on one oneDNN stream.
#pragma once
#include <memory>

#include "backend/backend.h"

namespace opv::backend {

// Options.threads: OpenMP threads for oneDNN and the own loops (0 = all cores).
std::unique_ptr<Backend> make_cpu_backend(const Options& opts);

}  // namespace opv::backend
