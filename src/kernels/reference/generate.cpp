// Reference generator kernels (their output shape is on the output value):
// 1. Range: y[i] = start + i*delta for the y.numel() elements (int64 arithmetic for integer
//    outputs, double for floats); the element count is checked against
//    max(ceil((limit - start) / delta), 0).
// 2. ConstantOfShape: every element is attr `value_f` converted to the output dtype (attr
//    `dtype`, when present, must name that dtype). An optional shape input is ignored.
#include <cmath>

#include "kernels/reference/common.h"

namespace opv::ref::detail {

void run_range(const Args& a) {
  const Tensor& start = a.in(0);
  const Tensor& limit = a.in(1);
  const Tensor& delta = a.in(2);
  Tensor& y = a.out(0);
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1) a.error("start, limit and delta must be scalars");
  if (y.rank() != 1) a.error("output must be 1-D, got ", shape_str(y.shape()));
  const int64_t n = y.numel();
  if (is_int(y.dtype())) {
    const int64_t s = start.get_i64(0), l = limit.get_i64(0), d = delta.get_i64(0);
    if (d == 0) a.error("delta is 0");
    // ceil((l - s) / d) in integers.
    const int64_t span = l - s;
    int64_t count = span / d + ((span % d != 0 && ((span < 0) == (d < 0))) ? 1 : 0);
    count = std::max<int64_t>(count, 0);
    if (count != n) a.error("output has ", n, " elements but range(", s, ",", l, ",", d, ") has ", count);
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = s + i * d;
    store_i64(y, v);
    return;
  }
  if (is_float(y.dtype())) {
    const double s = start.get_f64(0), l = limit.get_f64(0), d = delta.get_f64(0);
    if (d == 0) a.error("delta is 0");
    const double steps = std::ceil((l - s) / d);
    if (!(std::fabs(steps) < 0x1p62)) a.error("range(", s, ",", l, ",", d, ") has no countable length");
    const int64_t count = std::max<int64_t>(int64_t(steps), 0);
    if (count != n) a.error("output has ", n, " elements but range(", s, ",", l, ",", d, ") has ", count);
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = s + double(i) * d;
    store_f64(y, v);
    return;
  }
  a.unsupported();
}

void run_constant_of_shape(const Args& a) {
  Tensor& y = a.out(0);
  if (a.attrs.has("dtype") && a.attrs.i("dtype") != int64_t(y.dtype()))
    a.error("attribute dtype=", a.attrs.i("dtype"), " does not match the output dtype ", dtype_name(y.dtype()));
  Tensor one(y.dtype(), {1});
  one.set_f64(0, a.attrs.f("value_f", 0.0));
  copy_elements(one, y, std::vector<int64_t>(size_t(y.numel()), 0));
}

}  // namespace opv::ref::detail
