// Reference Conv against an independent formulation: explicit zero padding, im2col columns
// and a per-group matrix product, plus hand-computed cases.
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "reference_test_util.h"
#include "test_util.h"

namespace opv {
namespace {

using reftest::expect_near;
using reftest::f32;
using reftest::run1;

struct ConvCase {
  Shape x, w;
  int64_t group;
  std::vector<int64_t> strides, pads, dil;  // pads: top, left, bottom, right
  bool bias;
};

// Conv via a padded copy of x, im2col over (c, kh, kw) and a GEMM per group.
std::vector<double> conv_im2col(const Tensor& x, const Tensor& w, const Tensor* b, const ConvCase& k, Shape& out) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t M = w.shape()[0], CG = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3];
  const int64_t HP = H + k.pads[0] + k.pads[2], WP = W + k.pads[1] + k.pads[3];
  std::vector<double> xp(size_t(N * C * HP * WP), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t ww = 0; ww < W; ++ww)
          xp[size_t(((n * C + c) * HP + h + k.pads[0]) * WP + ww + k.pads[1])] = x.get_f64(((n * C + c) * H + h) * W + ww);
  const int64_t EKH = (KH - 1) * k.dil[0] + 1, EKW = (KW - 1) * k.dil[1] + 1;
  const int64_t OH = (HP - EKH) / k.strides[0] + 1, OW = (WP - EKW) / k.strides[1] + 1;
  out = {N, M, OH, OW};
  std::vector<double> y(size_t(N * M * OH * OW), 0.0);
  const int64_t MG = M / k.group, rows = CG * KH * KW;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < k.group; ++g) {
      // cols[r][p]: r = (c, kh, kw) within the group, p = output position.
      std::vector<double> cols(size_t(rows * OH * OW));
      for (int64_t c = 0; c < CG; ++c)
        for (int64_t i = 0; i < KH; ++i)
          for (int64_t j = 0; j < KW; ++j)
            for (int64_t oh = 0; oh < OH; ++oh)
              for (int64_t ow = 0; ow < OW; ++ow)
                cols[size_t(((c * KH + i) * KW + j) * OH * OW + oh * OW + ow)] =
                    xp[size_t(((n * C + g * CG + c) * HP + oh * k.strides[0] + i * k.dil[0]) * WP + ow * k.strides[1] +
                              j * k.dil[1])];
      for (int64_t m = 0; m < MG; ++m) {
        const int64_t mo = g * MG + m;
        for (int64_t p = 0; p < OH * OW; ++p) {
          double s = b ? b->get_f64(mo) : 0.0;
          for (int64_t r = 0; r < rows; ++r) s += w.get_f64(mo * rows + r) * cols[size_t(r * OH * OW + p)];
          y[size_t((n * M + mo) * OH * OW + p)] = s;
        }
      }
    }
  return y;
}

Attrs conv_attrs(const ConvCase& k) {
  Attrs a;
  a.set("group", k.group);
  a.set("strides", k.strides);
  a.set("pads", k.pads);
  a.set("dilations", k.dil);
  return a;
}

void check_case(const ConvCase& k, uint64_t seed) {
  Tensor x = test::random_f32(k.x, seed);
  Tensor w = test::random_f32(k.w, seed + 1);
  Tensor b = test::random_f32({k.w[0]}, seed + 2);
  Shape out;
  std::vector<double> want = conv_im2col(x, w, k.bias ? &b : nullptr, k, out);
  Tensor y = run1(OpKind::Conv, conv_attrs(k), {&x, &w, k.bias ? &b : nullptr}, DType::F32, out);
  expect_near(y, want, 1e-5, 1e-5);
}

TEST(ReferenceConv, HandComputed) {
  // 3x3 input 1..9, 2x2 kernel of ones, no padding: window sums.
  Tensor x = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  ConvCase k{{1, 1, 3, 3}, {1, 1, 2, 2}, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, false};
  expect_near(run1(OpKind::Conv, conv_attrs(k), {&x, &w}, DType::F32, {1, 1, 2, 2}), {12, 16, 24, 28}, 0, 0);
  // Padding only on the bottom and right (asymmetric): the extra row/column reads zeros.
  ConvCase k2{{1, 1, 3, 3}, {1, 1, 2, 2}, 1, {2, 2}, {0, 0, 1, 1}, {1, 1}, false};
  Tensor b = f32({1}, {0.5f});
  expect_near(run1(OpKind::Conv, conv_attrs(k2), {&x, &w, &b}, DType::F32, {1, 1, 2, 2}), {12.5, 9.5, 15.5, 9.5}, 0, 0);
}

TEST(ReferenceConv, AgainstIm2col) {
  const ConvCase cases[] = {
      {{1, 3, 7, 6}, {4, 3, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},         // same padding
      {{2, 4, 9, 8}, {6, 2, 3, 3}, 2, {2, 2}, {0, 1, 2, 0}, {1, 1}, true},         // groups, stride, asym pads
      {{1, 2, 10, 9}, {3, 2, 3, 2}, 1, {1, 2}, {2, 1, 2, 1}, {2, 3}, false},       // dilations, rect kernel
      {{1, 5, 8, 8}, {5, 1, 3, 3}, 5, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},         // depthwise
      {{1, 6, 5, 4}, {8, 6, 1, 1}, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, true},         // pointwise
      {{1, 3, 16, 15}, {4, 3, 7, 7}, 1, {2, 2}, {3, 3, 3, 3}, {1, 1}, true},       // 7x7 stride 2
      {{1, 4, 6, 6}, {4, 2, 3, 3}, 2, {3, 2}, {1, 0, 0, 1}, {2, 1}, true},         // everything at once
  };
  uint64_t seed = 100;
  for (const ConvCase& k : cases) {
    SCOPED_TRACE(shape_str(k.x) + " * " + shape_str(k.w));
    check_case(k, seed += 10);
  }
}

TEST(ReferenceConv, F16InOut) {
  ConvCase k{{1, 4, 6, 5}, {4, 2, 3, 3}, 2, {1, 1}, {1, 1, 1, 1}, {1, 1}, true};
  Tensor x = test::random_f32(k.x, 1).cast(DType::F16);
  Tensor w = test::random_f32(k.w, 2).cast(DType::F16);
  Tensor b = test::random_f32({4}, 3).cast(DType::F16);
  Shape out;
  std::vector<double> want = conv_im2col(x, w, &b, k, out);
  Tensor y = run1(OpKind::Conv, conv_attrs(k), {&x, &w, &b}, DType::F16, out);
  ASSERT_EQ(y.dtype(), DType::F16);
  // Exact math on the f16 inputs, rounded once to f16.
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(y.data<uint16_t>()[i], float_to_half(float(want[i]))) << i;
}

TEST(ReferenceConv, RejectsBadShapes) {
  ConvCase k{{1, 4, 6, 6}, {4, 2, 3, 3}, 2, {1, 1}, {1, 1, 1, 1}, {1, 1}, false};
  Tensor x = test::random_f32(k.x, 1);
  Tensor w = test::random_f32(k.w, 2);
  EXPECT_THROW(run1(OpKind::Conv, conv_attrs(k), {&x, &w}, DType::F32, {1, 4, 5, 6}), Error);
  k.group = 3;
  EXPECT_THROW(run1(OpKind::Conv, conv_attrs(k), {&x, &w}, DType::F32, {1, 4, 6, 6}), Error);
  Tensor xi = x.cast(DType::I64);
  k.group = 2;
  EXPECT_THROW(run1(OpKind::Conv, conv_attrs(k), {&xi, &w}, DType::F32, {1, 4, 6, 6}), Error);
}

TEST(ReferenceConv, ModelSizedRunsInSeconds) {
  // 1x24x128x256 -> 64 channels, 3x3 stride 2: about 0.1 GMAC.
  ConvCase k{{1, 24, 128, 256}, {64, 24, 3, 3}, 1, {2, 2}, {1, 1, 1, 1}, {1, 1}, true};
  Tensor x = test::random_f32(k.x, 5);
  Tensor w = test::random_f32(k.w, 6);
  Tensor b = test::random_f32({64}, 7);
  auto t0 = std::chrono::steady_clock::now();
  Tensor y = run1(OpKind::Conv, conv_attrs(k), {&x, &w, &b}, DType::F32, {1, 64, 64, 128});
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 10.0);
  // Spot-check a few outputs against a direct sum.
  for (int64_t probe : {int64_t(0), int64_t(12345), y.numel() - 1}) {
    const int64_t m = probe / (64 * 128), oh = probe / 128 % 64, ow = probe % 128;
    double s2 = b.data<float>()[m];
    for (int64_t c = 0; c < 24; ++c)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 3; ++j) {
          const int64_t ih = oh * 2 - 1 + i, iw = ow * 2 - 1 + j;
          if (ih < 0 || ih >= 128 || iw < 0 || iw >= 256) continue;
          s2 += double(w.data<float>()[((m * 24 + c) * 3 + i) * 3 + j]) * x.data<float>()[(c * 128 + ih) * 256 + iw];
        }
    EXPECT_NEAR(y.data<float>()[probe], s2, 1e-5 * (1 + std::fabs(s2)));
  }
}

}  // namespace
}  // namespace opv
