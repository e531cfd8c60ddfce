// The limits policy for untrusted inputs (models, artifacts, arrays): how large one tensor may
// be. Import (shape inference of every value, initializers, graph inputs), artifact loading
// (every buffer) and the .npy/.npz readers apply it, so a hostile file is refused with a
// message before anything of that size is allocated.
//
// Defaults: 2^28 elements and 1 GiB per tensor — far above openpilot's driving_vision network
// (largest tensor < 2^22 elements) and far below what would exhaust a device. The process-wide
// limits (default_limits()) start there; the CLI sets them from its global options
// (`opvision --max-tensor-elems N --max-tensor-bytes N <command>`), and everything that takes no
// explicit Limits (import, artifact loading, .npy/.npz reading) applies them. A library caller
// may instead pass its own (ImportOptions::limits, check_tensor_limits' last argument).
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

// The process-wide limits (initially Limits{}), and a setter that refuses non-positive values.
const Limits& default_limits();
void set_default_limits(const Limits& lim);

// Throws opv::Error "<what>: tensor <dtype><shape> has N elements, more than the limit M" (or
// bytes) when a tensor of this type and shape breaks `lim`; also on negative dims / overflow, and
// on any single dim above the element limit (even when another dim is 0).
void check_tensor_limits(DType dt, const Shape& s, const std::string& what, const Limits& lim = default_limits());

}  // namespace opv
