// Reference pooling: hand-computed windows, padding excluded from max, count_include_pad,
// dilations, and global pooling against direct sums.
#include <limits>

#include "core/error.h"
#include "reference_test_util.h"
#include "test_util.h"

namespace opv {
namespace {

using reftest::expect_near;
using reftest::f32;
using reftest::run1;

Attrs pool_attrs(std::vector<int64_t> kernel, std::vector<int64_t> strides, std::vector<int64_t> pads,
                 std::vector<int64_t> dil = {1, 1}) {
  Attrs a;
  a.set("kernel", kernel);
  a.set("strides", strides);
  a.set("pads", pads);
  a.set("dilations", dil);
  return a;
}

// 4x4 input 1..16 (row-major).
Tensor ramp(float sign = 1.f) {
  std::vector<float> v;
  for (int i = 1; i <= 16; ++i) v.push_back(sign * float(i));
  return f32({1, 1, 4, 4}, v);
}

TEST(ReferenceMaxPool, HandComputed) {
  Tensor x = ramp();
  expect_near(run1(OpKind::MaxPool, pool_attrs({2, 2}, {2, 2}, {0, 0, 0, 0}), {&x}, DType::F32, {1, 1, 2, 2}),
              {6, 8, 14, 16}, 0, 0);
  // 3x3 stride 1 with pad 1 on all sides: each output is the max of its clamped window.
  expect_near(run1(OpKind::MaxPool, pool_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}), {&x}, DType::F32, {1, 1, 4, 4}),
              {6, 7, 8, 8, 10, 11, 12, 12, 14, 15, 16, 16, 14, 15, 16, 16}, 0, 0);
}

TEST(ReferenceMaxPool, PaddingIsNeverTheMaximum) {
  Tensor x = ramp(-1.f);  // all negative: a zero pad would win if it were a candidate
  expect_near(run1(OpKind::MaxPool, pool_attrs({2, 2}, {2, 2}, {1, 1, 1, 1}), {&x}, DType::F32, {1, 1, 3, 3}),
              {-1, -2, -4, -5, -6, -8, -13, -14, -16}, 0, 0);
}

TEST(ReferenceMaxPool, DilationAndAsymmetricPads) {
  Tensor x = ramp();
  // kernel 2x2 dilation 2: taps (i, j), (i, j+2), (i+2, j), (i+2, j+2); pads top=0 left=1.
  Tensor y = run1(OpKind::MaxPool, pool_attrs({2, 2}, {1, 1}, {0, 1, 0, 0}, {2, 2}), {&x}, DType::F32, {1, 1, 2, 3});
  // Output (r, c) covers rows {r, r+2}, cols {c-1, c+1} (col -1 is padding).
  expect_near(y, {10, 11, 12, 14, 15, 16}, 0, 0);
}

TEST(ReferenceAveragePool, CountIncludePad) {
  Tensor x = ramp();
  Attrs a = pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1});
  // Windows centred on (0,0), (0,2), (2,0), (2,2).
  // (0,0): rows 0..1, cols 0..1 -> 1+2+5+6 = 14 over 4 valid / 9 with padding.
  // (0,2): rows 0..1, cols 1..3 -> 2+3+4+6+7+8 = 30 over 6 / 9.
  // (2,0): rows 1..3, cols 0..1 -> 5+6+9+10+13+14 = 57 over 6 / 9.
  // (2,2): rows 1..3, cols 1..3 -> 6+7+8+10+11+12+14+15+16 = 99 over 9 / 9.
  expect_near(run1(OpKind::AveragePool, a, {&x}, DType::F32, {1, 1, 2, 2}), {14 / 4., 30 / 6., 57 / 6., 99 / 9.});
  a.set("count_include_pad", int64_t(1));
  expect_near(run1(OpKind::AveragePool, a, {&x}, DType::F32, {1, 1, 2, 2}), {14 / 9., 30 / 9., 57 / 9., 99 / 9.});
  // Ceil-mode style output: windows reaching past the padded extent (here column 3, with
  // padded extent rows [0,4) x cols [0,3)) count only positions inside that extent.
  Attrs b = pool_attrs({2, 2}, {2, 2}, {0, 0, 1, 0});
  b.set("count_include_pad", int64_t(1));
  Tensor x3 = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_near(run1(OpKind::AveragePool, b, {&x3}, DType::F32, {1, 1, 2, 2}), {12 / 4., 9 / 2., 15 / 4., 9 / 2.});
}

TEST(ReferenceAveragePool, F16WithPostOp) {
  // F16 output with a fused residual add: pooled in double, added in float, rounded once.
  Tensor x = test::random_f32({1, 2, 4, 4}, 21).cast(DType::F16);
  Tensor r = test::random_f32({1, 2, 2, 2}, 22).cast(DType::F16);
  std::vector<PostOp> post(1);
  post[0].op = OpKind::Add;
  post[0].input = 1;
  Tensor y = run1(OpKind::AveragePool, pool_attrs({2, 2}, {2, 2}, {0, 0, 0, 0}), {&x, &r}, DType::F16, {1, 2, 2, 2}, post);
  for (int c = 0; c < 2; ++c)
    for (int oh = 0; oh < 2; ++oh)
      for (int ow = 0; ow < 2; ++ow) {
        double s = 0;
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j) s += x.get_f64((c * 4 + oh * 2 + i) * 4 + ow * 2 + j);
        const int o = (c * 2 + oh) * 2 + ow;
        const float want = float(s / 4) + float(r.get_f64(o));
        EXPECT_EQ(y.data<uint16_t>()[o], float_to_half(want)) << o;
      }
}

TEST(ReferenceGlobalPool, MeanAndMax) {
  Tensor x = test::random_f32({2, 3, 4, 5}, 9);
  std::vector<double> mean, mx;
  for (int nc = 0; nc < 6; ++nc) {
    double s = 0, m = -std::numeric_limits<double>::infinity();
    for (int i = 0; i < 20; ++i) {
      s += x.data<float>()[nc * 20 + i];
      m = std::max(m, double(x.data<float>()[nc * 20 + i]));
    }
    mean.push_back(s / 20);
    mx.push_back(m);
  }
  expect_near(run1(OpKind::GlobalAveragePool, {}, {&x}, DType::F32, {2, 3, 1, 1}), mean, 1e-6, 1e-6);
  expect_near(run1(OpKind::GlobalMaxPool, {}, {&x}, DType::F32, {2, 3, 1, 1}), mx, 0, 0);
  EXPECT_THROW(run1(OpKind::GlobalAveragePool, {}, {&x}, DType::F32, {2, 3, 1}), Error);
}

}  // namespace
}  // namespace opv
