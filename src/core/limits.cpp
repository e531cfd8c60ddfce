#include "core/limits.h"

#include "core/error.h"

namespace opv {

namespace {
Limits& process_limits() {
  static Limits lim;
  return lim;
}
}  // namespace

const Limits& default_limits() { return process_limits(); }

void set_default_limits(const Limits& lim) {
  OPV_CHECK(lim.max_tensor_elems > 0 && lim.max_tensor_bytes > 0, "tensor limits must be positive (got ",
            lim.max_tensor_elems, " elements, ", lim.max_tensor_bytes, " bytes)");
  process_limits() = lim;
}

void check_tensor_limits(DType dt, const Shape& s, const std::string& what, const Limits& lim) {
  int64_t n = 1;
  for (int64_t d : s) {
    OPV_CHECK(d >= 0, what, ": shape ", shape_str(s), " has a negative dim");
    if (__builtin_mul_overflow(n, d, &n) || n > lim.max_tensor_elems) {
      // Report the element count when it is representable, else just the shape.
      fail(what, ": tensor ", dtype_name(dt), shape_str(s), " has more than ", lim.max_tensor_elems,
           " elements (the per-tensor limit)");
    }
  }
  // Each dim on its own, too: an empty tensor (a dim 0 before the others) has no elements, but
  // kernels still build per-axis tables of its dims (a fuzzed Slice to [0, 2^28] asked for 2 GiB).
  for (int64_t d : s)
    if (d > lim.max_tensor_elems)
      fail(what, ": tensor ", dtype_name(dt), shape_str(s), " has a dim of ", d, ", more than the per-tensor limit of ",
           lim.max_tensor_elems, " elements");
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, int64_t(dtype_size(dt)), &bytes) || bytes > lim.max_tensor_bytes)
    fail(what, ": tensor ", dtype_name(dt), shape_str(s), " needs ", n, " elements x ", dtype_size(dt),
         " bytes, more than the per-tensor limit of ", lim.max_tensor_bytes, " bytes");
}

}  // namespace opv
