// The limits policy for untrusted inputs (models, artifacts, arrays): how large one tensor may
// be. Import (shape inference of every value, initializers, graph inputs), artifact loading
// (every buffer) and the .npy/.npz readers apply it, so a hostile file is refused with a
// message before anything of that size is allocated.
//
// Defaults: 2^28 elements and 1 GiB per tensor — far above openpilot's driving_vision network
// (largest tensor < 2^22 elements) and far below what would exhaust a device. A caller that
// needs more passes its own Limits (ImportOptions::limits); the defaults live only here.
#pragma once
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/shape.h"

namespace opv {

struct Limits {
  int64_t max_tensor_elems = int64_t(1) << 28;
  int64_t max_tensor_bytes = int64_t(1) << 30;
};

// Throws opv::Error "<what>: tensor <dtype><shape> has N elements, more than the limit M" (or
// bytes) when a tensor of this type and shape breaks `lim`; also on negative dims / overflow.
void check_tensor_limits(DType dt, const Shape& s, const std::string& what, const Limits& lim = Limits{});

}  // namespace opv
