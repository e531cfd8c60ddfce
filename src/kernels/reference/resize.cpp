// Reference Resize (ONNX semantics), output shape read from y.
// 1. Per axis, every output coordinate is mapped to an input coordinate by the coordinate
//    transformation mode (attr `coord`, default half_pixel) using the axis scale (attr
//    `scales`, default out/in): half_pixel, half_pixel_symmetric, pytorch_half_pixel,
//    align_corners, asymmetric, tf_crop_and_resize (attr `roi` = starts then ends, default
//    0..1; coordinates outside the input give `extrapolation_value`).
// 2. nearest: the coordinate is rounded by nearest_mode (round_prefer_floor default,
//    round_prefer_ceil, floor, ceil) and clamped; done on all axes, dtype-agnostic copy.
// 3. linear: bilinear over the last two axes (the others must keep their size); neighbours
//    are clamped to the input, weights are the fractional parts; computed in double.
#include <algorithm>
#include <cmath>

#include "kernels/reference/common.h"

namespace opv::ref::detail {

namespace {

struct Axis {
  int64_t len_in, len_out;
  double scale, roi_start, roi_end;
};

// Evaluated in float (the half_pixel_symmetric sum in double), in the operation order of
// onnxruntime's CPU Resize: nearest rounding is discontinuous, so coordinates must round
// exactly as the reference runtime's do (e.g. 3 / 0.6f is 5.0f in float, 4.99999998 in double).
float original_coord(const Args& a, const std::string& mode, const Axis& ax, int64_t o) {
  const float x = float(o), s = float(ax.scale);
  const float in = float(ax.len_in), out = float(ax.len_out);
  const float rs = float(ax.roi_start), re = float(ax.roi_end);
  if (mode == "half_pixel") return (x + 0.5f) / s - 0.5f;
  if (mode == "half_pixel_symmetric") {
    const float output_width = s * in;
    const float adjustment = out / output_width;
    const float center = in / 2;
    const float offset = center * (1 - adjustment);
    return float(double(offset) + (double(x) + 0.5) / double(s) - 0.5);  // this sum in double
  }
  if (mode == "pytorch_half_pixel") return ax.len_out > 1 ? (x + 0.5f) / s - 0.5f : 0.0f;
  if (mode == "align_corners") return ax.len_out > 1 ? x * (in - 1) / (out - 1) : 0.0f;
  if (mode == "asymmetric") return x / s;
  if (mode == "tf_crop_and_resize")
    return ax.len_out > 1 ? rs * (in - 1) + (x * (re - rs) * (in - 1)) / (out - 1) : 0.5f * (rs + re) * (in - 1);
  a.error("unknown coordinate transformation mode '", mode, "'");
}

// A whole-valued coordinate as an index; NaN and values beyond +-2^62 (hostile scales or roi) are
// kept in range, where the plain cast is undefined. Callers clamp the index to the axis.
int64_t index_of(double v) {
  if (!(v == v)) return 0;
  return int64_t(std::clamp(v, -0x1p62, 0x1p62));
}

int64_t nearest_index(const Args& a, const std::string& mode, float x) {
  const float fl = std::floor(x);
  const bool half = x - fl == 0.5f;
  if (mode == "round_prefer_floor") return index_of(half ? fl : std::round(x));
  if (mode == "round_prefer_ceil") return index_of(half ? fl + 1 : std::round(x));
  if (mode == "floor") return index_of(fl);
  if (mode == "ceil") return index_of(std::ceil(x));
  a.error("unknown nearest_mode '", mode, "'");
}

}  // namespace

void run_resize(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  const int64_t r = x.rank();
  if (y.rank() != r) a.error("output rank ", y.rank(), " differs from input rank ", r);
  const std::string mode = a.attrs.s("mode", "nearest");
  const std::string coord = a.attrs.s("coord", "half_pixel");
  const std::string nearest_mode = a.attrs.s("nearest_mode", "round_prefer_floor");
  const bool tf_crop = coord == "tf_crop_and_resize";
  const double extrapolation = a.attrs.f("extrapolation_value", 0.0);
  std::vector<double> scales = a.attrs.floats("scales");
  std::vector<double> roi = a.attrs.floats("roi");
  if (!scales.empty() && int64_t(scales.size()) != r) a.error("scales has ", scales.size(), " entries for rank ", r);
  if (!roi.empty() && int64_t(roi.size()) != 2 * r) a.error("roi has ", roi.size(), " entries for rank ", r);
  std::vector<Axis> axes;
  for (int64_t d = 0; d < r; ++d) {
    Axis ax{x.shape()[size_t(d)], y.shape()[size_t(d)], 0, 0, 1};
    ax.scale = scales.empty() ? (ax.len_in ? double(ax.len_out) / double(ax.len_in) : 1.0) : scales[size_t(d)];
    if (!(ax.scale > 0)) a.error("scale ", ax.scale, " on axis ", d, " must be positive");
    if (!roi.empty()) {
      ax.roi_start = roi[size_t(d)];
      ax.roi_end = roi[size_t(d + r)];
    }
    axes.push_back(ax);
  }

  if (mode == "nearest") {
    const std::vector<int64_t> st = row_major_strides(x.shape());
    AxisTables tables(static_cast<size_t>(r));
    for (int64_t d = 0; d < r; ++d) {
      const Axis& ax = axes[size_t(d)];
      for (int64_t o = 0; o < ax.len_out; ++o) {
        const float c = original_coord(a, coord, ax, o);
        if (tf_crop && (c < 0 || c > float(ax.len_in - 1))) {
          tables[size_t(d)].push_back(-1);
          continue;
        }
        const int64_t i = std::clamp<int64_t>(nearest_index(a, nearest_mode, c), 0, ax.len_in - 1);
        tables[size_t(d)].push_back(i * st[size_t(d)]);
      }
    }
    Tensor pad(y.dtype(), {1});
    pad.set_f64(0, extrapolation);
    check_same_dtype(a, x, y);
    copy_elements(x, y, offsets_from_tables(y.shape(), tables), &pad);
    return;
  }
  if (mode != "linear") a.error("unknown mode '", mode, "'");
  if (!is_float(x.dtype()) || !is_float(y.dtype())) a.unsupported("linear resize computes on floats");
  if (r < 2) a.error("linear resize needs rank >= 2");
  for (int64_t d = 0; d < r - 2; ++d)
    if (axes[size_t(d)].len_in != axes[size_t(d)].len_out)
      a.error("linear resize is bilinear over the last two axes; axis ", d, " changes size ",
              axes[size_t(d)].len_in, " -> ", axes[size_t(d)].len_out);
  // Per output row/column of the last two axes: neighbours and weight of the second one;
  // `outside` marks tf_crop_and_resize extrapolation.
  struct Tap {
    int64_t i0, i1;
    double w;
    bool outside;
  };
  auto taps = [&](const Axis& ax) {
    std::vector<Tap> t;
    for (int64_t o = 0; o < ax.len_out; ++o) {
      double c = double(original_coord(a, coord, ax, o));
      const bool outside = tf_crop && (c < 0 || c > double(ax.len_in - 1));
      c = c == c ? std::clamp(c, 0.0, double(ax.len_in - 1)) : 0.0;  // NaN (hostile scales or roi): 0
      const int64_t i0 = int64_t(std::floor(c));
      const int64_t i1 = std::min(i0 + 1, ax.len_in - 1);
      t.push_back({i0, i1, c - double(i0), outside});
    }
    return t;
  };
  const Axis& ah = axes[size_t(r - 2)];
  const Axis& aw = axes[size_t(r - 1)];
  if ((ah.len_in == 0 || aw.len_in == 0) && y.numel() > 0) a.error("cannot interpolate an empty input");
  const std::vector<Tap> th = taps(ah), tw = taps(aw);
  const int64_t planes = y.numel() ? y.numel() / (ah.len_out * aw.len_out) : 0;
  const std::vector<double> xv = load_f64(x);
  std::vector<double> yv(size_t(y.numel()));
  for (int64_t p = 0; p < planes; ++p) {
    const double* src = xv.data() + p * ah.len_in * aw.len_in;
    double* dst = yv.data() + p * ah.len_out * aw.len_out;
    for (int64_t oh = 0; oh < ah.len_out; ++oh) {
      const Tap& h = th[size_t(oh)];
      for (int64_t ow = 0; ow < aw.len_out; ++ow) {
        const Tap& w = tw[size_t(ow)];
        double v;
        if (h.outside || w.outside) {
          v = extrapolation;
        } else {
          const double top = src[h.i0 * aw.len_in + w.i0] * (1 - w.w) + src[h.i0 * aw.len_in + w.i1] * w.w;
          const double bot = src[h.i1 * aw.len_in + w.i0] * (1 - w.w) + src[h.i1 * aw.len_in + w.i1] * w.w;
          v = top * (1 - h.w) + bot * h.w;
        }
        dst[oh * aw.len_out + ow] = v;
      }
    }
  }
  store_f64(y, yv);
}

}  // namespace opv::ref::detail
