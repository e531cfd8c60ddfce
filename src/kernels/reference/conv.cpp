// Reference 2-D convolution: x[N,C,H,W] * w[M,C/group,kh,kw] (+ bias[M]) -> y[N,M,OH,OW].
// 1. Attributes: group, strides (sh,sw), pads (top,left,bottom,right), dilations (dh,dw);
//    the output spatial size is read from y and checked against the formula.
// 2. For each (n, m) the output plane is accumulated in double: for every input channel of
//    m's group and every kernel tap, the valid output column range is computed once so the
//    innermost loop has no bounds checks (padding contributes zero).
// 3. Bias is added, the plane is rounded once to y's dtype.
#include "kernels/reference/common.h"

namespace opv::ref::detail {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
}  // namespace

void run_conv(const Args& a) {
  const Tensor& x = a.in(0);
  const Tensor& w = a.in(1);
  const Tensor* bias = a.opt(2);
  Tensor& y = a.out(0);
  if (!is_float(x.dtype()) || !is_float(w.dtype()) || !is_float(y.dtype()) || (bias && !is_float(bias->dtype())))
    a.unsupported("Conv computes on float tensors");
  if (x.rank() != 4 || w.rank() != 4 || y.rank() != 4)
    a.error("only 2-D convolution is supported: x", shape_str(x.shape()), " w", shape_str(w.shape()), " y",
            shape_str(y.shape()));
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t M = w.shape()[0], CG = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3];
  const int64_t group = a.attrs.i("group", 1);
  std::vector<int64_t> strides = a.attrs.ints("strides", {1, 1});
  std::vector<int64_t> pads = a.attrs.ints("pads", {0, 0, 0, 0});
  std::vector<int64_t> dil = a.attrs.ints("dilations", {1, 1});
  if (strides.size() != 2 || pads.size() != 4 || dil.size() != 2)
    a.error("expects strides[2], pads[4], dilations[2], got ", a.attrs.str());
  if (group < 1 || C % group != 0 || M % group != 0 || C / group != CG)
    a.error("group=", group, " does not fit x", shape_str(x.shape()), " and w", shape_str(w.shape()));
  const int64_t sh = strides[0], sw = strides[1], dh = dil[0], dw = dil[1];
  const int64_t pt = pads[0], pl = pads[1], pb = pads[2], pr = pads[3];
  if (sh < 1 || sw < 1 || dh < 1 || dw < 1) a.error("strides and dilations must be >= 1: ", a.attrs.str());
  // Checked: pads and dilations come from a loaded (untrusted) plan; a tampered artifact with
  // huge pads overflowed here before the shape check below (found by fuzz_opv).
  auto out_dim = [&](int64_t in, int64_t p0, int64_t p1, int64_t d, int64_t k, int64_t s) {
    const int64_t span = checked_sub(checked_add(checked_add(in, p0, "conv"), p1, "conv"),
                                     checked_add(checked_mul(d, k - 1, "conv"), 1, "conv"), "conv");
    return span / s + 1;
  };
  const int64_t OH = out_dim(H, pt, pb, dh, KH, sh);
  const int64_t OW = out_dim(W, pl, pr, dw, KW, sw);
  if (y.shape() != Shape{N, M, OH, OW})
    a.error("output shape ", shape_str(y.shape()), " does not match the computed ", shape_str({N, M, OH, OW}));
  if (bias && bias->numel() != M) a.error("bias has ", bias->numel(), " elements, expected ", M);

  const std::vector<double> xv = load_f64(x), wv = load_f64(w);
  const std::vector<double> bv = bias ? load_f64(*bias) : std::vector<double>(size_t(M), 0.0);
  std::vector<double> yv(size_t(y.numel()));
  const int64_t MG = M / group;
  // Valid output columns for each kernel column: 0 <= ow*sw - pl + kw*dw < W.
  std::vector<int64_t> ow_lo(static_cast<size_t>(KW)), ow_hi(static_cast<size_t>(KW));
  for (int64_t kw = 0; kw < KW; ++kw) {
    int64_t off = kw * dw - pl;
    ow_lo[size_t(kw)] = std::max<int64_t>(0, ceil_div(-off, sw));
    ow_hi[size_t(kw)] = std::min<int64_t>(OW, ceil_div(W - off, sw));
  }
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t m = 0; m < M; ++m) {
      const int64_t g = m / MG;
      double* plane = yv.data() + (n * M + m) * OH * OW;
      for (int64_t c = 0; c < CG; ++c) {
        const double* xin = xv.data() + (n * C + g * CG + c) * H * W;
        const double* wk = wv.data() + (m * CG + c) * KH * KW;
        for (int64_t kh = 0; kh < KH; ++kh) {
          for (int64_t kw = 0; kw < KW; ++kw) {
            const double wt = wk[kh * KW + kw];
            const int64_t lo = ow_lo[size_t(kw)], hi = ow_hi[size_t(kw)];
            for (int64_t oh = 0; oh < OH; ++oh) {
              const int64_t ih = oh * sh - pt + kh * dh;
              if (ih < 0 || ih >= H) continue;
              const int64_t base = ih * W + kw * dw - pl;  // + ow*sw stays inside the row
              double* out = plane + oh * OW;
              for (int64_t ow = lo; ow < hi; ++ow) out[ow] += wt * xin[base + ow * sw];
            }
          }
        }
      }
      for (int64_t i = 0; i < OH * OW; ++i) plane[i] += bv[size_t(m)];
    }
  }
  store_f64(y, yv);
}

}  // namespace opv::ref::detail
