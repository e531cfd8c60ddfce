// Error metrics of DESIGN.md: relative L2 error and max-abs error over max|ref|.
#pragma once
#include "core/tensor.h"

namespace opv {

struct ErrorMetrics {
  double rel_l2 = 0;       // ||out - ref|| / ||ref||
  double max_abs_rel = 0;  // max|out - ref| / max|ref|
  bool finite = true;      // false when out has NaN/Inf where ref does not
};
// Shapes must match (element counts compared; throws opv::Error otherwise). A zero reference
// norm uses 1 as the denominator.
ErrorMetrics compare(const Tensor& out, const Tensor& ref);

}  // namespace opv
