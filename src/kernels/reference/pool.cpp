// Reference pooling over x[N,C,H,W] (2-D windows) and global pooling over all axes >= 2.
// 1. Attributes: kernel (kh,kw), strides, pads (top,left,bottom,right), dilations; the
//    output size is read from y (ceil_mode was resolved by the importer) and each window
//    is clipped to the input.
// 2. MaxPool: maximum over the window's positions inside the input; padding is never a
//    candidate (a window with no position inside gives -inf).
// 3. AveragePool: sum over positions inside the input divided by the number of those
//    positions, or with count_include_pad=1 by the number of window positions inside the
//    padded extent [-top, H+bottom) x [-left, W+right).
#include <cmath>
#include <limits>

#include "kernels/reference/common.h"

namespace opv::ref::detail {

namespace {
struct Window {
  int64_t N, C, H, W, OH, OW, KH, KW, sh, sw, pt, pl, pb, pr, dh, dw;
};

Window read_window(const Args& a, const Tensor& x, const Tensor& y) {
  if (!is_float(x.dtype()) || !is_float(y.dtype())) a.unsupported("pooling computes on floats");
  if (x.rank() != 4 || y.rank() != 4) a.error("only 2-D pooling is supported: x", shape_str(x.shape()));
  std::vector<int64_t> k = a.attrs.ints("kernel");
  std::vector<int64_t> s = a.attrs.ints("strides", {1, 1});
  std::vector<int64_t> p = a.attrs.ints("pads", {0, 0, 0, 0});
  std::vector<int64_t> d = a.attrs.ints("dilations", {1, 1});
  if (k.size() != 2 || s.size() != 2 || p.size() != 4 || d.size() != 2)
    a.error("expects kernel[2] strides[2] pads[4] dilations[2], got ", a.attrs.str());
  Window w{x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3], y.shape()[2], y.shape()[3],
           k[0], k[1], s[0], s[1], p[0], p[1], p[2], p[3], d[0], d[1]};
  if (w.KH < 1 || w.KW < 1 || w.sh < 1 || w.sw < 1 || w.dh < 1 || w.dw < 1)
    a.error("kernel, strides and dilations must be >= 1: ", a.attrs.str());
  if (y.shape()[0] != w.N || y.shape()[1] != w.C)
    a.error("output shape ", shape_str(y.shape()), " does not match input ", shape_str(x.shape()));
  return w;
}
}  // namespace

void run_max_pool(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  const Window w = read_window(a, x, y);
  const std::vector<double> xv = load_f64(x);
  std::vector<double> yv(size_t(y.numel()));
  for (int64_t nc = 0; nc < w.N * w.C; ++nc) {
    const double* plane = xv.data() + nc * w.H * w.W;
    for (int64_t oh = 0; oh < w.OH; ++oh) {
      for (int64_t ow = 0; ow < w.OW; ++ow) {
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t kh = 0; kh < w.KH; ++kh) {
          const int64_t ih = oh * w.sh - w.pt + kh * w.dh;
          if (ih < 0 || ih >= w.H) continue;
          for (int64_t kw = 0; kw < w.KW; ++kw) {
            const int64_t iw = ow * w.sw - w.pl + kw * w.dw;
            if (iw < 0 || iw >= w.W) continue;
            const double v = plane[ih * w.W + iw];
            if (v > m || std::isnan(v)) m = v;
          }
        }
        yv[size_t((nc * w.OH + oh) * w.OW + ow)] = m;
      }
    }
  }
  store_f64(y, yv);
}

void run_average_pool(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  const Window w = read_window(a, x, y);
  const bool include_pad = a.attrs.i("count_include_pad", 0) != 0;
  const std::vector<double> xv = load_f64(x);
  std::vector<double> yv(size_t(y.numel()));
  for (int64_t nc = 0; nc < w.N * w.C; ++nc) {
    const double* plane = xv.data() + nc * w.H * w.W;
    for (int64_t oh = 0; oh < w.OH; ++oh) {
      for (int64_t ow = 0; ow < w.OW; ++ow) {
        double sum = 0;
        int64_t count = 0;
        for (int64_t kh = 0; kh < w.KH; ++kh) {
          const int64_t ih = oh * w.sh - w.pt + kh * w.dh;
          for (int64_t kw = 0; kw < w.KW; ++kw) {
            const int64_t iw = ow * w.sw - w.pl + kw * w.dw;
            const bool inside = ih >= 0 && ih < w.H && iw >= 0 && iw < w.W;
            const bool in_padded = ih >= -w.pt && ih < w.H + w.pb && iw >= -w.pl && iw < w.W + w.pr;
            if (inside) sum += plane[ih * w.W + iw];
            if (include_pad ? in_padded : inside) ++count;
          }
        }
        yv[size_t((nc * w.OH + oh) * w.OW + ow)] = count ? sum / double(count) : 0.0;
      }
    }
  }
  store_f64(y, yv);
}

void run_global_pool(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  if (!is_float(x.dtype()) || !is_float(y.dtype())) a.unsupported("global pooling computes on floats");
  if (x.rank() < 2) a.error("input must have rank >= 2, got ", shape_str(x.shape()));
  Shape expect = {x.shape()[0], x.shape()[1]};
  for (int64_t d = 2; d < x.rank(); ++d) expect.push_back(1);
  if (y.shape() != expect) a.error("output shape ", shape_str(y.shape()), " must be ", shape_str(expect));
  const int64_t NC = x.shape()[0] * x.shape()[1];
  const int64_t S = NC ? x.numel() / NC : 0;
  const std::vector<double> xv = load_f64(x);
  std::vector<double> yv(static_cast<size_t>(NC));
  const bool is_max = a.op == OpKind::GlobalMaxPool;
  for (int64_t i = 0; i < NC; ++i) {
    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t s = 0; s < S; ++s) {
      const double v = xv[size_t(i * S + s)];
      if (is_max)
        acc = (v > acc || std::isnan(v)) ? v : acc;
      else
        acc += v;
    }
    yv[size_t(i)] = is_max ? acc : (S ? acc / double(S) : 0.0);
  }
  store_f64(y, yv);
}

}  // namespace opv::ref::detail
