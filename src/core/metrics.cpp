#include "core/metrics.h"

#include <algorithm>
#include <cmath>

namespace opv {

ErrorMetrics compare(const Tensor& out, const Tensor& ref) {
  OPV_CHECK(out.numel() == ref.numel(), "cannot compare ", shape_str(out.shape()), " with reference ",
            shape_str(ref.shape()));
  double diff2 = 0, ref2 = 0, max_diff = 0, max_ref = 0;
  ErrorMetrics m;
  for (int64_t i = 0; i < out.numel(); ++i) {
    double o = out.get_f64(i), r = ref.get_f64(i);
    if (!std::isfinite(o) || !std::isfinite(r)) {
      if (!std::isfinite(r)) ++m.ref_nonfinite;
      // Non-finite elements match only exactly: NaN with NaN, +Inf with +Inf, -Inf with -Inf.
      bool same = (std::isnan(o) && std::isnan(r)) || (std::isinf(o) && std::isinf(r) && (o > 0) == (r > 0));
      if (!same) {
        m.finite = false;
        ++m.nonfinite_mismatches;
      }
      continue;
    }
    double d = o - r;
    diff2 += d * d;
    ref2 += r * r;
    max_diff = std::max(max_diff, std::fabs(d));
    max_ref = std::max(max_ref, std::fabs(r));
  }
  m.rel_l2 = std::sqrt(diff2) / (ref2 > 0 ? std::sqrt(ref2) : 1.0);
  m.max_abs_rel = max_diff / (max_ref > 0 ? max_ref : 1.0);
  if (!m.finite) m.rel_l2 = m.max_abs_rel = INFINITY;
  return m;
}

}  // namespace opv
