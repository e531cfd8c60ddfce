// Reference kernels added for ONNX conformance (issue 12): index reductions (ArgMax/ArgMin,
// TopK), per-axis normalisations (LogSoftmax, Hardmax, LpNorm, InstanceNorm, CumSum), Trilu,
// Einsum, ConvTranspose, GridSample, GatherElements and ScatterElements.
// Same conventions as the other families: floats computed in double and rounded once on store,
// integers in int64; every index read from a tensor is range-checked (an error, never UB).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "kernels/reference/common.h"

namespace opv::ref::detail {

namespace {

// outer x len x inner decomposition of a shape around one axis.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};
AxisSplit split_at(const Shape& s, int64_t axis) {
  AxisSplit r;
  for (int64_t d = 0; d < int64_t(s.size()); ++d) {
    if (d < axis) r.outer *= s[size_t(d)];
    else if (d == axis) r.len = s[size_t(d)];
    else r.inner *= s[size_t(d)];
  }
  return r;
}

void check_same_shape(const Args& a, const Tensor& x, const Tensor& y) {
  if (x.shape() != y.shape()) a.error("output shape ", shape_str(y.shape()), " differs from input ", shape_str(x.shape()));
}

// Ordering used by ArgMax/TopK: NaN compares greater than every number (onnxruntime/numpy).
bool greater_nan(double u, double v) {
  if (std::isnan(u)) return !std::isnan(v);
  if (std::isnan(v)) return false;
  return u > v;
}

}  // namespace

void run_arg_reduce(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  if (y.dtype() != DType::I64) a.unsupported("output must be i64");
  const int64_t axis = normalize_axis(a.attrs.i("axis", 0), x.rank());
  const AxisSplit sp = split_at(x.shape(), axis);
  if (sp.len <= 0) a.error("axis ", axis, " is empty");
  if (y.numel() != sp.outer * sp.inner) a.error("output has ", y.numel(), " elements, expected ", sp.outer * sp.inner);
  const bool last = a.attrs.i("select_last_index", 0) != 0;
  const bool is_max = a.op == OpKind::ArgMax;
  const std::vector<double> v = load_f64(x);
  std::vector<int64_t> r(size_t(y.numel()));
  for (int64_t o = 0; o < sp.outer; ++o)
    for (int64_t i = 0; i < sp.inner; ++i) {
      const double* base = v.data() + o * sp.len * sp.inner + i;
      int64_t best = 0;
      for (int64_t k = 1; k < sp.len; ++k) {
        const double c = base[k * sp.inner], b = base[best * sp.inner];
        const bool better = is_max ? greater_nan(c, b) : greater_nan(b, c);
        const bool tie = c == b || (std::isnan(c) && std::isnan(b));
        if (better || (last && tie)) best = k;
      }
      r[size_t(o * sp.inner + i)] = best;
    }
  store_i64(y, r);
}

void run_axis_norm(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  check_same_shape(a, x, y);
  if (!is_float(y.dtype())) a.unsupported("computes on floats");
  const int64_t axis = normalize_axis(a.attrs.i("axis", -1), x.rank());
  const AxisSplit sp = split_at(x.shape(), axis);
  std::vector<double> v = load_f64(x);
  const int64_t p = a.attrs.i("p", 2);
  for (int64_t o = 0; o < sp.outer; ++o)
    for (int64_t i = 0; i < sp.inner; ++i) {
      double* base = v.data() + o * sp.len * sp.inner + i;
      auto at = [&](int64_t k) -> double& { return base[k * sp.inner]; };
      if (a.op == OpKind::LogSoftmax) {
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < sp.len; ++k) mx = std::max(mx, at(k));
        double sum = 0;
        for (int64_t k = 0; k < sp.len; ++k) sum += std::exp(at(k) - mx);
        const double lse = mx + std::log(sum);
        for (int64_t k = 0; k < sp.len; ++k) at(k) -= lse;
      } else if (a.op == OpKind::Hardmax) {
        int64_t best = 0;
        for (int64_t k = 1; k < sp.len; ++k)
          if (at(k) > at(best)) best = k;
        for (int64_t k = 0; k < sp.len; ++k) at(k) = k == best ? 1.0 : 0.0;
      } else {  // LpNorm
        double n = 0;
        for (int64_t k = 0; k < sp.len; ++k) n += p == 1 ? std::fabs(at(k)) : at(k) * at(k);
        if (p == 2) n = std::sqrt(n);
        for (int64_t k = 0; k < sp.len; ++k) at(k) = n == 0 ? 0.0 : at(k) / n;
      }
    }
  store_f64(y, v);
}

void run_cumsum(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  check_same_shape(a, x, y);
  const int64_t axis = normalize_axis(a.attrs.i("axis", 0), x.rank());
  const AxisSplit sp = split_at(x.shape(), axis);
  const bool excl = a.attrs.i("exclusive", 0) != 0, rev = a.attrs.i("reverse", 0) != 0;
  auto scan = [&](auto& v, auto zero) {
    for (int64_t o = 0; o < sp.outer; ++o)
      for (int64_t i = 0; i < sp.inner; ++i) {
        auto* base = v.data() + o * sp.len * sp.inner + i;
        auto acc = zero;
        for (int64_t s = 0; s < sp.len; ++s) {
          const int64_t k = rev ? sp.len - 1 - s : s;
          auto cur = base[k * sp.inner];
          if (excl) {
            base[k * sp.inner] = acc;
            acc = decltype(zero)(acc + cur);
          } else {
            acc = decltype(zero)(acc + cur);
            base[k * sp.inner] = acc;
          }
        }
      }
  };
  if (is_float(y.dtype())) {
    std::vector<double> v = load_f64(x);
    scan(v, 0.0);
    store_f64(y, v);
  } else if (is_int(y.dtype())) {
    std::vector<int64_t> v = load_i64(x);
    std::vector<uint64_t> u(v.begin(), v.end());  // wrapping arithmetic
    scan(u, uint64_t(0));
    for (size_t i = 0; i < u.size(); ++i) v[i] = int64_t(u[i]);
    store_i64(y, v);
  } else {
    a.unsupported();
  }
}

void run_instance_norm(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  check_same_shape(a, x, y);
  if (!is_float(y.dtype())) a.unsupported("computes on floats");
  if (x.rank() < 3) a.error("input must have rank >= 3");
  const int64_t N = x.shape()[0], C = x.shape()[1];
  const int64_t S = N * C != 0 ? x.numel() / (N * C) : 0;
  const std::vector<double> sc = load_f64(a.in(1)), bi = load_f64(a.in(2));
  if (int64_t(sc.size()) != C || int64_t(bi.size()) != C) a.error("scale and bias must have ", C, " elements");
  const double eps = a.attrs.f("epsilon", 1e-5);
  std::vector<double> v = load_f64(x);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      double* p = v.data() + (n * C + c) * S;
      double mean = 0, var = 0;
      for (int64_t s = 0; s < S; ++s) mean += p[s];
      mean /= double(S);
      for (int64_t s = 0; s < S; ++s) var += (p[s] - mean) * (p[s] - mean);
      var /= double(S);
      const double k = sc[size_t(c)] / std::sqrt(var + eps);
      for (int64_t s = 0; s < S; ++s) p[s] = (p[s] - mean) * k + bi[size_t(c)];
    }
  store_f64(y, v);
}

void run_trilu(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  check_same_shape(a, x, y);
  check_same_dtype(a, x, y);
  if (x.rank() < 2) a.error("input must have rank >= 2");
  const int64_t M = x.shape()[size_t(x.rank() - 2)], N = x.shape()[size_t(x.rank() - 1)];
  const bool upper = a.attrs.i("upper", 1) != 0;
  const int64_t k = a.attrs.i("k", 0);
  const size_t es = dtype_size(x.dtype());
  if (x.numel() == 0) return;
  const uint8_t* px = static_cast<const uint8_t*>(x.raw());
  uint8_t* py = static_cast<uint8_t*>(y.raw());
  const int64_t mats = x.numel() / std::max<int64_t>(1, M * N);
  for (int64_t b = 0; b < mats; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const size_t off = size_t((b * M + i) * N + j) * es;
        // keep j - i >= k (upper) or j - i <= k (lower); compared without overflow
        const bool keep = upper ? (j - i >= k) : (j - i <= k);
        if (keep) std::memcpy(py + off, px + off, es);
        else std::memset(py + off, 0, es);
      }
}

void run_topk(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& vals = a.out(0);
  Tensor& idx = a.out(1);
  if (idx.dtype() != DType::I64 || vals.dtype() != x.dtype()) a.unsupported();
  const int64_t axis = normalize_axis(a.attrs.i("axis", -1), x.rank());
  const AxisSplit sp = split_at(x.shape(), axis);
  const int64_t k = a.attrs.i("k", 0);
  if (k < 0 || k > sp.len) a.error("k = ", k, " out of range");
  if (vals.numel() != sp.outer * k * sp.inner || idx.numel() != vals.numel()) a.error("output sizes do not match k");
  const bool largest = a.attrs.i("largest", 1) != 0;
  const std::vector<double> v = load_f64(x);
  std::vector<int64_t> vi = is_int(x.dtype()) ? load_i64(x) : std::vector<int64_t>{};
  std::vector<double> ov(size_t(vals.numel()));
  std::vector<int64_t> oi(size_t(vals.numel())), oiv(size_t(vals.numel()));
  std::vector<int64_t> order(size_t(sp.len));
  for (int64_t o = 0; o < sp.outer; ++o)
    for (int64_t i = 0; i < sp.inner; ++i) {
      auto val = [&](int64_t e) { return v[size_t((o * sp.len + e) * sp.inner + i)]; };
      std::iota(order.begin(), order.end(), 0);
      // Stable: equal values keep the lower index first (ONNX).
      std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
        return largest ? greater_nan(val(p), val(q)) : greater_nan(val(q), val(p));
      });
      for (int64_t r = 0; r < k; ++r) {
        const size_t dst = size_t((o * k + r) * sp.inner + i);
        const int64_t e = order[size_t(r)];
        ov[dst] = val(e);
        oi[dst] = e;
        if (!vi.empty()) oiv[dst] = vi[size_t((o * sp.len + e) * sp.inner + i)];
      }
    }
  if (is_int(x.dtype())) store_i64(vals, oiv);
  else store_f64(vals, ov);
  store_i64(idx, oi);
}

void run_einsum(const Args& a) {
  // Parse "t0,t1,...->out" (explicit, validated by shape inference).
  const std::string eq = a.attrs.s("equation", "");
  const size_t arrow = eq.find("->");
  if (arrow == std::string::npos) a.error("equation '", eq, "' must be explicit");
  const std::string out = eq.substr(arrow + 2);
  std::vector<std::string> terms;
  {
    std::string lhs = eq.substr(0, arrow);
    size_t st = 0;
    while (true) {
      size_t c = lhs.find(',', st);
      terms.push_back(lhs.substr(st, c == std::string::npos ? std::string::npos : c - st));
      if (c == std::string::npos) break;
      st = c + 1;
    }
  }
  if (terms.size() != a.ins.size()) a.error("equation has ", terms.size(), " operands for ", a.ins.size(), " inputs");
  // Every distinct subscript becomes one loop; output subscripts first.
  std::string letters = out;
  for (const std::string& t : terms)
    for (char ch : t)
      if (letters.find(ch) == std::string::npos) letters.push_back(ch);
  const size_t L = letters.size();
  std::vector<int64_t> extent(L, 1);
  std::vector<std::vector<double>> vals;
  std::vector<std::vector<int64_t>> stride(terms.size(), std::vector<int64_t>(L, 0));
  for (size_t i = 0; i < terms.size(); ++i) {
    const Tensor& t = a.in(i);
    if (int64_t(terms[i].size()) != t.rank()) a.error("operand ", i, " rank does not match '", terms[i], "'");
    vals.push_back(load_f64(t));
    const std::vector<int64_t> rs = row_major_strides(t.shape());
    for (size_t d = 0; d < terms[i].size(); ++d) {
      const size_t l = letters.find(terms[i][d]);
      const int64_t e = t.shape()[d];
      if (e != 1) {
        if (extent[l] != 1 && extent[l] != e) a.error("subscript '", terms[i][d], "' has extents ", extent[l], " and ", e);
        extent[l] = e;
        stride[i][l] += rs[d];  // repeated subscripts (diagonals) add their strides
      }
    }
  }
  Tensor& y = a.out(0);
  int64_t out_n = 1;
  for (size_t l = 0; l < out.size(); ++l) out_n *= extent[l];
  if (y.numel() != out_n) a.error("output has ", y.numel(), " elements, expected ", out_n);
  int64_t total = 1;
  for (size_t l = 0; l < L; ++l) total = checked_mul(total, extent[l], "einsum iteration space");
  std::vector<double> acc(size_t(out_n), 0.0);
  std::vector<int64_t> idx(L, 0);
  const bool ints = is_int(y.dtype());
  std::vector<int64_t> acci(ints ? size_t(out_n) : 0, 0);
  std::vector<std::vector<int64_t>> ivals;
  if (ints)
    for (size_t i = 0; i < terms.size(); ++i) ivals.push_back(load_i64(a.in(i)));
  for (int64_t it = 0; it < total; ++it) {
    int64_t o = 0;
    for (size_t l = 0; l < out.size(); ++l) o = o * extent[l] + idx[l];
    if (ints) {
      uint64_t prod = 1;
      for (size_t i = 0; i < terms.size(); ++i) {
        int64_t off = 0;
        for (size_t l = 0; l < L; ++l) off += idx[l] * stride[i][l];
        prod *= uint64_t(ivals[i][size_t(off)]);
      }
      acci[size_t(o)] = int64_t(uint64_t(acci[size_t(o)]) + prod);
    } else {
      double prod = 1;
      for (size_t i = 0; i < terms.size(); ++i) {
        int64_t off = 0;
        for (size_t l = 0; l < L; ++l) off += idx[l] * stride[i][l];
        prod *= vals[i][size_t(off)];
      }
      acc[size_t(o)] += prod;
    }
    for (size_t l = L; l-- > 0;) {
      if (++idx[l] < extent[l]) break;
      idx[l] = 0;
    }
  }
  if (ints) store_i64(y, acci);
  else store_f64(y, acc);
}

void run_conv_transpose(const Args& a) {
  const Tensor& x = a.in(0);
  const Tensor& w = a.in(1);
  const Tensor* b = a.opt(2);
  Tensor& y = a.out(0);
  if (!is_float(x.dtype()) || !is_float(y.dtype())) a.unsupported("computes on floats");
  if (x.rank() != 4 || w.rank() != 4 || y.rank() != 4) a.error("input, weight and output must be 4-D");
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t G = a.attrs.i("group", 1);
  const int64_t Mg = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3];
  const int64_t M = y.shape()[1], OH = y.shape()[2], OW = y.shape()[3];
  if (G < 1 || C % G != 0 || w.shape()[0] != C || M != Mg * G || y.shape()[0] != N) a.error("shapes do not agree");
  const auto st = a.attrs.ints("strides", {1, 1}), pd = a.attrs.ints("pads", {0, 0, 0, 0}),
             dl = a.attrs.ints("dilations", {1, 1});
  if (st.size() != 2 || pd.size() != 4 || dl.size() != 2) a.error("strides/pads/dilations have the wrong length");
  const std::vector<double> xv = load_f64(x), wv = load_f64(w);
  const std::vector<double> bv = b ? load_f64(*b) : std::vector<double>{};
  if (b && int64_t(bv.size()) != M) a.error("bias must have ", M, " elements");
  std::vector<double> yv(size_t(y.numel()), 0.0);
  const int64_t Cg = C / G;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t c = 0; c < Cg; ++c) {
        const int64_t ci = g * Cg + c;
        for (int64_t ih = 0; ih < H; ++ih)
          for (int64_t iw = 0; iw < W; ++iw) {
            const double xval = xv[size_t(((n * C + ci) * H + ih) * W + iw)];
            if (xval == 0) continue;
            for (int64_t m = 0; m < Mg; ++m) {
              const int64_t mo = g * Mg + m;
              for (int64_t kh = 0; kh < KH; ++kh) {
                const int64_t oh = ih * st[0] + kh * dl[0] - pd[0];
                if (oh < 0 || oh >= OH) continue;
                for (int64_t kw = 0; kw < KW; ++kw) {
                  const int64_t ow = iw * st[1] + kw * dl[1] - pd[1];
                  if (ow < 0 || ow >= OW) continue;
                  yv[size_t(((n * M + mo) * OH + oh) * OW + ow)] +=
                      xval * wv[size_t(((ci * Mg + m) * KH + kh) * KW + kw)];
                }
              }
            }
          }
      }
  if (b)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t s = 0; s < OH * OW; ++s) yv[size_t((n * M + m) * OH * OW + s)] += bv[size_t(m)];
  store_f64(y, yv);
}

namespace {

// Reflects coordinate v into [lo, hi] (ONNX GridSample reflection padding).
double reflect(double v, double lo, double hi) {
  const double span = hi - lo;
  if (span <= 0) return lo;
  if (v >= lo && v <= hi) return v;
  double d = v < lo ? lo - v : v - hi;
  const double flips = std::floor(d / span);
  const double rem = d - flips * span;
  if (v < lo) return (int64_t(flips) % 2 == 0) ? lo + rem : hi - rem;
  return (int64_t(flips) % 2 == 0) ? hi - rem : lo + rem;
}

double cubic_weight(double t, int which) {  // A = -0.75 (ONNX GridSample)
  const double A = -0.75;
  double x;
  switch (which) {
    case 0: x = t + 1; return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    case 1: x = t; return ((A + 2) * x - (A + 3)) * x * x + 1;
    case 2: x = 1 - t; return ((A + 2) * x - (A + 3)) * x * x + 1;
    default: x = 2 - t; return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  }
}

}  // namespace

void run_grid_sample(const Args& a) {
  const Tensor& x = a.in(0);
  const Tensor& grid = a.in(1);
  Tensor& y = a.out(0);
  if (!is_float(x.dtype()) || !is_float(grid.dtype()) || !is_float(y.dtype())) a.unsupported("computes on floats");
  if (x.rank() != 4 || grid.rank() != 4 || y.rank() != 4) a.error("input, grid and output must be 4-D");
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t OH = grid.shape()[1], OW = grid.shape()[2];
  if (grid.shape()[0] != N || grid.shape()[3] != 2 || y.shape() != Shape{N, C, OH, OW}) a.error("shapes do not agree");
  const std::string mode = a.attrs.s("mode", "linear"), pad = a.attrs.s("padding", "zeros");
  const bool ac = a.attrs.i("align_corners", 0) != 0;
  const std::vector<double> xv = load_f64(x), gv = load_f64(grid);
  std::vector<double> yv(size_t(y.numel()));
  auto unnorm = [&](double c, int64_t size) {
    return ac ? (c + 1) / 2.0 * double(size - 1) : ((c + 1) * double(size) - 1) / 2.0;
  };
  // Sampling borders: [-0.5, size-0.5] or, with align_corners, [0, size-1].
  auto lo_of = [&](int64_t) { return ac ? 0.0 : -0.5; };
  auto hi_of = [&](int64_t size) { return ac ? double(size - 1) : double(size) - 0.5; };
  // A denormalised coordinate outside the borders is clamped (border) or reflected (reflection).
  auto coord = [&](double g, int64_t size) {
    double v = unnorm(g, size);
    if (mode == "nearest") v = std::nearbyint(v);
    const double lo = lo_of(size), hi = hi_of(size);
    if (v < lo || v > hi) {
      if (pad == "border") v = std::clamp(v, 0.0, double(size - 1));
      else if (pad == "reflection") v = reflect(v, lo, hi);
    }
    return v;
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const double* plane = xv.data() + (n * C + c) * H * W;
      auto tap = [&](int64_t i, int64_t size) -> int64_t {  // -1: a zero-padding tap
        if (pad == "zeros") return (i >= 0 && i < size) ? i : -1;
        if (pad == "reflection") i = int64_t(reflect(double(i), lo_of(size), hi_of(size)));
        return std::clamp<int64_t>(i, 0, size - 1);
      };
      auto pixel = [&](int64_t r, int64_t q) -> double {
        r = tap(r, H);
        q = tap(q, W);
        if (r < 0 || q < 0) return 0.0;
        return plane[r * W + q];
      };
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const double* g = gv.data() + ((n * OH + oh) * OW + ow) * 2;
          const double gx = coord(g[0], W), gy = coord(g[1], H);
          double r = 0;
          if (mode == "nearest") {
            r = pixel(int64_t(gy), int64_t(gx));
          } else if (mode == "linear") {
            const double fx = std::floor(gx), fy = std::floor(gy);
            const double dx = gx - fx, dy = gy - fy;
            const int64_t x0 = int64_t(fx), y0 = int64_t(fy);
            r = pixel(y0, x0) * (1 - dx) * (1 - dy) + pixel(y0, x0 + 1) * dx * (1 - dy) +
                pixel(y0 + 1, x0) * (1 - dx) * dy + pixel(y0 + 1, x0 + 1) * dx * dy;
          } else {  // cubic
            const double fx = std::floor(gx), fy = std::floor(gy);
            const double dx = gx - fx, dy = gy - fy;
            const int64_t x0 = int64_t(fx) - 1, y0 = int64_t(fy) - 1;
            for (int i = 0; i < 4; ++i) {
              double row = 0;
              for (int j = 0; j < 4; ++j) row += pixel(y0 + i, x0 + j) * cubic_weight(dx, j);
              r += row * cubic_weight(dy, i);
            }
          }
          yv[size_t(((n * C + c) * OH + oh) * OW + ow)] = r;
        }
    }
  store_f64(y, yv);
}

void run_gather_scatter_elements(const Args& a) {
  const Tensor& x = a.in(0);
  const Tensor& ind = a.in(1);
  Tensor& y = a.out(0);
  const int64_t r = x.rank();
  const int64_t axis = normalize_axis(a.attrs.i("axis", 0), r);
  if (ind.rank() != r) a.error("indices must have the rank of the data");
  const std::vector<int64_t> idx = load_i64(ind);
  const std::vector<int64_t> xs = row_major_strides(x.shape());
  const Shape& is = ind.shape();
  const int64_t ext = x.shape()[size_t(axis)];
  // Data offset addressed by every indices element.
  std::vector<int64_t> off(idx.size());
  std::vector<int64_t> pos(size_t(r), 0);
  for (size_t e = 0; e < idx.size(); ++e) {
    int64_t v = idx[e];
    if (v < -ext || v >= ext) a.error("index ", v, " out of range for axis ", axis, " of extent ", ext);
    if (v < 0) v += ext;
    int64_t o = 0;
    for (int64_t d = 0; d < r; ++d) {
      const int64_t p = d == axis ? v : pos[size_t(d)];
      if (p >= x.shape()[size_t(d)]) a.error("indices shape ", shape_str(is), " exceeds the data ", shape_str(x.shape()));
      o += p * xs[size_t(d)];
    }
    off[e] = o;
    for (int64_t d = r; d-- > 0;) {
      if (++pos[size_t(d)] < is[size_t(d)]) break;
      pos[size_t(d)] = 0;
    }
  }
  if (a.op == OpKind::GatherElements) {
    check_same_dtype(a, x, y);
    if (y.shape() != is) a.error("output shape must equal the indices shape");
    copy_elements(x, y, off);
    return;
  }
  const Tensor& upd = a.in(2);
  check_same_dtype(a, x, y);
  check_same_shape(a, x, y);
  if (upd.shape() != is) a.error("updates must have the indices shape");
  const std::string red = a.attrs.s("reduction", "none");
  auto combine = [&](auto cur, auto u) {
    if (red == "add") return decltype(cur)(cur + u);
    if (red == "mul") return decltype(cur)(cur * u);
    if (red == "max") return std::max(cur, decltype(cur)(u));
    if (red == "min") return std::min(cur, decltype(cur)(u));
    return decltype(cur)(u);
  };
  if (is_float(x.dtype())) {
    std::vector<double> v = load_f64(x);
    const std::vector<double> u = load_f64(upd);
    for (size_t e = 0; e < off.size(); ++e) v[size_t(off[e])] = combine(v[size_t(off[e])], u[e]);
    store_f64(y, v);
  } else {
    std::vector<int64_t> v = load_i64(x);
    const std::vector<int64_t> u = load_i64(upd);
    for (size_t e = 0; e < off.size(); ++e) v[size_t(off[e])] = combine(v[size_t(off[e])], u[e]);
    store_i64(y, v);
  }
}

}  // namespace opv::ref::detail
