// The reference backend: runs a plan lowered for target "reference" with the reference
// kernels (kernels/reference.h), one tensor per buffer. It is the oracle the other backends
// are compared to; it is deliberately simple (no arena, no layouts other than Linear).
#pragma once
#include <memory>

#include "backend/backend.h"

namespace opv::backend {

std::unique_ptr<Backend> make_reference_backend(const Options& opts);

}  // namespace opv::backend
