// Error metrics of DESIGN.md: relative L2 error and max-abs error over max|ref|.
#pragma once
#include "core/tensor.h"

namespace opv {

struct ErrorMetrics {
  double rel_l2 = 0;       // ||out - ref|| / ||ref||
  double max_abs_rel = 0;  // max|out - ref| / max|ref|
  bool finite = true;      // false when out and ref disagree on any non-finite element
  int64_t nonfinite_mismatches = 0;  // elements where out or ref is NaN/Inf and they differ
  int64_t ref_nonfinite = 0;         // NaN/Inf elements in ref
};
// Shapes must match (element counts compared; throws opv::Error otherwise). A zero reference
// norm uses 1 as the denominator. Non-finite elements are left out of the norms; they must
// match exactly (NaN with NaN, Inf with Inf of the same sign) or `finite` is false and both
// metrics are infinite. Callers that cannot accept non-finite references (verify) check
// ref_nonfinite.
ErrorMetrics compare(const Tensor& out, const Tensor& ref);

}  // namespace opv
