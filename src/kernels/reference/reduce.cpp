// Reference reductions and normalisations, accumulated in double (int64 for integer Reduce*).
// 1. ReduceMean/Sum/Max/Min over attr `axes` (normalised, sorted) with keepdims: every input
//    element is folded into the output element it maps to (reduced axes contribute 0 offset).
// 2. Softmax over one axis: max-subtracted exponentials divided by their sum.
// 3. LayerNorm: mean and (population) variance over all axes >= axis, then scale and optional
//    bias (both broadcast to the normalised shape), epsilon inside the square root.
// 4. BatchNorm (inference): (x - mean) / sqrt(var + epsilon) * scale + bias per channel (axis 1).
#include <cmath>
#include <limits>

#include "kernels/reference/common.h"

namespace opv::ref::detail {

void run_reduce(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  const int64_t r = x.rank();
  std::vector<int64_t> axes = a.attrs.ints("axes");
  if (axes.empty())  // ONNX default: reduce over every axis
    for (int64_t d = 0; d < r; ++d) axes.push_back(d);
  const bool keep = a.attrs.i("keepdims", 1) != 0;
  std::vector<bool> reduced(size_t(r), false);
  for (int64_t ax : axes) reduced[size_t(normalize_axis(ax, r))] = true;
  Shape kept_shape;  // output shape with keepdims=1
  for (int64_t d = 0; d < r; ++d) kept_shape.push_back(reduced[size_t(d)] ? 1 : x.shape()[size_t(d)]);
  Shape expect;
  for (int64_t d = 0; d < r; ++d)
    if (keep || !reduced[size_t(d)]) expect.push_back(kept_shape[size_t(d)]);
  if (y.shape() != expect) a.error("output shape ", shape_str(y.shape()), " must be ", shape_str(expect));
  // Output offset of every input element.
  const std::vector<int64_t> ks = row_major_strides(kept_shape);
  AxisTables tables(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) {
    tables[size_t(d)].assign(size_t(x.shape()[size_t(d)]), 0);
    if (!reduced[size_t(d)])
      for (int64_t i = 0; i < x.shape()[size_t(d)]; ++i) tables[size_t(d)][size_t(i)] = i * ks[size_t(d)];
  }
  const std::vector<int64_t> dst = offsets_from_tables(x.shape(), tables);
  const int64_t count = y.numel() ? x.numel() / y.numel() : 0;
  const OpKind op = a.op;
  if (is_float(x.dtype()) && is_float(y.dtype())) {
    const double init = op == OpKind::ReduceMax   ? -std::numeric_limits<double>::infinity()
                        : op == OpKind::ReduceMin ? std::numeric_limits<double>::infinity()
                        : op == OpKind::ReduceProd ? 1.0
                                                  : 0.0;
    std::vector<double> acc(size_t(y.numel()), init);
    const std::vector<double> xv = load_f64(x);
    // ReduceLogSumExp: subtract the per-output maximum first (exp would overflow otherwise).
    std::vector<double> mx;
    if (op == OpKind::ReduceLogSumExp) {
      mx.assign(acc.size(), -std::numeric_limits<double>::infinity());
      for (size_t i = 0; i < xv.size(); ++i) mx[size_t(dst[i])] = std::max(mx[size_t(dst[i])], xv[i]);
      for (double& m : mx)
        if (!std::isfinite(m)) m = 0;
    }
    for (size_t i = 0; i < xv.size(); ++i) {
      double& t = acc[size_t(dst[i])];
      const double v = xv[i];
      switch (op) {
        case OpKind::ReduceMax: t = (v > t || std::isnan(v)) ? v : t; break;
        case OpKind::ReduceMin: t = (v < t || std::isnan(v)) ? v : t; break;
        case OpKind::ReduceProd: t *= v; break;
        case OpKind::ReduceL1: t += std::fabs(v); break;
        case OpKind::ReduceL2:
        case OpKind::ReduceSumSquare: t += v * v; break;
        case OpKind::ReduceLogSumExp: t += std::exp(v - mx[size_t(dst[i])]); break;
        default: t += v; break;
      }
    }
    if (op == OpKind::ReduceMean)
      for (double& v : acc) v = count ? v / double(count) : NAN;
    if (op == OpKind::ReduceL2)
      for (double& v : acc) v = std::sqrt(v);
    if (op == OpKind::ReduceLogSum)
      for (double& v : acc) v = std::log(v);
    if (op == OpKind::ReduceLogSumExp)
      for (size_t i = 0; i < acc.size(); ++i) acc[i] = std::log(acc[i]) + mx[i];
    store_f64(y, acc);
    return;
  }
  if (is_int(x.dtype()) && is_int(y.dtype())) {
    if (op == OpKind::ReduceL2 || op == OpKind::ReduceLogSum || op == OpKind::ReduceLogSumExp) {
      // Computed in floating point, then truncated to the integer output like onnxruntime.
      std::vector<double> acc(size_t(y.numel()), 0.0);
      const std::vector<double> xv = load_f64(x);
      for (size_t i = 0; i < xv.size(); ++i)
        acc[size_t(dst[i])] += op == OpKind::ReduceL2 ? xv[i] * xv[i] : op == OpKind::ReduceLogSum ? xv[i] : std::exp(xv[i]);
      for (double& v : acc) v = op == OpKind::ReduceL2 ? std::sqrt(v) : std::log(v);
      store_f64(y, acc);
      return;
    }
    const int64_t init = op == OpKind::ReduceMax   ? std::numeric_limits<int64_t>::min()
                         : op == OpKind::ReduceMin ? std::numeric_limits<int64_t>::max()
                         : op == OpKind::ReduceProd ? 1
                                                   : 0;
    std::vector<int64_t> acc(size_t(y.numel()), init);
    const std::vector<int64_t> xv = load_i64(x);
    for (size_t i = 0; i < xv.size(); ++i) {
      int64_t& t = acc[size_t(dst[i])];
      const int64_t v = xv[i];
      switch (op) {
        case OpKind::ReduceMax: t = std::max(t, v); break;
        case OpKind::ReduceMin: t = std::min(t, v); break;
        case OpKind::ReduceProd: t = int64_t(uint64_t(t) * uint64_t(v)); break;
        case OpKind::ReduceL1: t = int64_t(uint64_t(t) + uint64_t(v < 0 ? 0ull - uint64_t(v) : uint64_t(v))); break;
        case OpKind::ReduceSumSquare: t = int64_t(uint64_t(t) + uint64_t(v) * uint64_t(v)); break;
        default: t = int64_t(uint64_t(t) + uint64_t(v)); break;
      }
    }
    if (op == OpKind::ReduceMean) {
      if (count == 0) a.error("mean over an empty set");
      for (int64_t& v : acc) v /= count;
    }
    store_i64(y, acc);
    return;
  }
  a.unsupported();
}

void run_softmax(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  if (!is_float(x.dtype()) || !is_float(y.dtype())) a.unsupported("Softmax computes on floats");
  if (x.shape() != y.shape()) a.error("output shape ", shape_str(y.shape()), " differs from input ", shape_str(x.shape()));
  const int64_t axis = normalize_axis(a.attrs.i("axis", -1), x.rank());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[size_t(d)];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[size_t(d)];
  const int64_t len = x.rank() ? x.shape()[size_t(axis)] : 1;
  std::vector<double> v = load_f64(x);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      double* base = v.data() + o * len * inner + in;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < len; ++k) mx = std::max(mx, base[k * inner]);
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) {
        base[k * inner] = std::exp(base[k * inner] - mx);
        sum += base[k * inner];
      }
      for (int64_t k = 0; k < len; ++k) base[k * inner] /= sum;
    }
  }
  store_f64(y, v);
}

void run_layer_norm(const Args& a) {
  const Tensor& x = a.in(0);
  const Tensor& scale = a.in(1);
  const Tensor* bias = a.opt(2);
  Tensor& y = a.out(0);
  if (!is_float(x.dtype()) || !is_float(y.dtype()) || !is_float(scale.dtype()) || (bias && !is_float(bias->dtype())))
    a.unsupported("LayerNorm computes on floats");
  if (x.shape() != y.shape()) a.error("output shape ", shape_str(y.shape()), " differs from input ", shape_str(x.shape()));
  const int64_t axis = normalize_axis(a.attrs.i("axis", -1), x.rank());
  const double eps = a.attrs.f("epsilon", 1e-5);
  const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
  const int64_t inner = numel(norm_shape);
  const int64_t outer = inner ? x.numel() / inner : 0;
  const std::vector<int64_t> so = broadcast_offsets(scale.shape(), norm_shape);
  const std::vector<int64_t> bo = bias ? broadcast_offsets(bias->shape(), norm_shape) : std::vector<int64_t>{};
  const std::vector<double> sv = load_f64(scale);
  const std::vector<double> bv = bias ? load_f64(*bias) : std::vector<double>{};
  std::vector<double> v = load_f64(x);
  for (int64_t o = 0; o < outer; ++o) {
    double* row = v.data() + o * inner;
    double mean = 0;
    for (int64_t i = 0; i < inner; ++i) mean += row[i];
    mean /= double(inner);
    double var = 0;
    for (int64_t i = 0; i < inner; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= double(inner);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < inner; ++i) {
      double r = (row[i] - mean) * inv * sv[size_t(so[size_t(i)])];
      if (bias) r += bv[size_t(bo[size_t(i)])];
      row[i] = r;
    }
  }
  store_f64(y, v);
}

void run_batch_norm(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  for (const Tensor* t : a.ins)
    if (t && !is_float(t->dtype())) a.unsupported("BatchNorm computes on floats");
  if (!is_float(y.dtype())) a.unsupported("BatchNorm computes on floats");
  if (x.shape() != y.shape()) a.error("output shape ", shape_str(y.shape()), " differs from input ", shape_str(x.shape()));
  if (x.rank() < 2) a.error("input must have rank >= 2, got ", shape_str(x.shape()));
  const int64_t N = x.shape()[0], C = x.shape()[1];
  const int64_t S = (N * C != 0) ? x.numel() / (N * C) : 0;
  const char* names[] = {"scale", "bias", "mean", "var"};
  std::vector<std::vector<double>> p;
  for (size_t i = 0; i < 4; ++i) {
    const Tensor& t = a.in(i + 1);
    if (t.numel() != C) a.error(names[i], " has ", t.numel(), " elements, expected ", C);
    p.push_back(load_f64(t));
  }
  const double eps = a.attrs.f("epsilon", 1e-5);
  std::vector<double> v = load_f64(x);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      const double k = p[0][size_t(c)] / std::sqrt(p[3][size_t(c)] + eps);
      double* plane = v.data() + (n * C + c) * S;
      for (int64_t s = 0; s < S; ++s) plane[s] = (plane[s] - p[2][size_t(c)]) * k + p[1][size_t(c)];
    }
  }
  store_f64(y, v);
}

}  // namespace opv::ref::detail
