// Reference reductions and normalisations against direct loops and hand values.
#include <cmath>

#include "core/error.h"
#include "reference_test_util.h"
#include "test_util.h"

namespace opv {
namespace {

using reftest::expect_near;
using reftest::f32;
using reftest::i64;
using reftest::ints;
using reftest::run1;

Attrs reduce_attrs(std::vector<int64_t> axes, int64_t keep) {
  Attrs a;
  a.set("axes", axes);
  a.set("keepdims", keep);
  return a;
}

// is_reduce names exactly the Reduce* ops of ops.def (shape inference, set_batch and the reference
// dispatch route them by it).
TEST(ReferenceReduce, IsReduceIsTheReduceFamily) {
  int n = 0;
  for (size_t i = 0; i < size_t(OpKind::Count_); ++i) {
    const std::string name = op_name(OpKind(i));
    EXPECT_EQ(is_reduce(OpKind(i)), name.rfind("Reduce", 0) == 0) << name;
    n += is_reduce(OpKind(i));
  }
  EXPECT_EQ(n, 10);
}

TEST(ReferenceReduce, HandComputed) {
  // [2,3]: [[1,2,3],[4,5,6]]
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_near(run1(OpKind::ReduceSum, reduce_attrs({1}, 0), {&x}, DType::F32, {2}), {6, 15}, 0, 0);
  expect_near(run1(OpKind::ReduceSum, reduce_attrs({0}, 1), {&x}, DType::F32, {1, 3}), {5, 7, 9}, 0, 0);
  expect_near(run1(OpKind::ReduceMean, reduce_attrs({0, 1}, 0), {&x}, DType::F32, {}), {3.5}, 0, 0);
  expect_near(run1(OpKind::ReduceMax, reduce_attrs({1}, 1), {&x}, DType::F32, {2, 1}), {3, 6}, 0, 0);
  expect_near(run1(OpKind::ReduceMin, reduce_attrs({0}, 0), {&x}, DType::F32, {3}), {1, 2, 3}, 0, 0);
  EXPECT_THROW(run1(OpKind::ReduceSum, reduce_attrs({1}, 1), {&x}, DType::F32, {2}), Error);
}

TEST(ReferenceReduce, MiddleAxesAgainstLoops) {
  Tensor x = test::random_f32({2, 3, 4, 5}, 3);
  // Mean over axes 1 and 3, keepdims -> [2,1,4,1].
  std::vector<double> want;
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 4; ++h) {
      double s = 0;
      for (int c = 0; c < 3; ++c)
        for (int w = 0; w < 5; ++w) s += x.data<float>()[((n * 3 + c) * 4 + h) * 5 + w];
      want.push_back(s / 15);
    }
  expect_near(run1(OpKind::ReduceMean, reduce_attrs({1, 3}, 1), {&x}, DType::F32, {2, 1, 4, 1}), want, 1e-6, 1e-6);
  expect_near(run1(OpKind::ReduceMean, reduce_attrs({1, 3}, 0), {&x}, DType::F32, {2, 4}), want, 1e-6, 1e-6);
}

TEST(ReferenceReduce, Int64) {
  Tensor x = i64({2, 2}, {1, -7, 30, 4});
  EXPECT_EQ(ints(run1(OpKind::ReduceSum, reduce_attrs({0}, 0), {&x}, DType::I64, {2})), (std::vector<int64_t>{31, -3}));
  EXPECT_EQ(ints(run1(OpKind::ReduceMax, reduce_attrs({1}, 0), {&x}, DType::I64, {2})), (std::vector<int64_t>{1, 30}));
  EXPECT_EQ(ints(run1(OpKind::ReduceMin, reduce_attrs({0, 1}, 1), {&x}, DType::I64, {1, 1})), (std::vector<int64_t>{-7}));
}

TEST(ReferenceSoftmax, OverMiddleAxis) {
  Tensor x = test::random_f32({2, 3, 4}, 5, -5, 5);
  Attrs a;
  a.set("axis", int64_t(1));
  Tensor y = run1(OpKind::Softmax, a, {&x}, DType::F32, {2, 3, 4});
  std::vector<double> want(24);
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 4; ++k) {
      double s = 0;
      for (int c = 0; c < 3; ++c) s += std::exp(double(x.data<float>()[(n * 3 + c) * 4 + k]));
      for (int c = 0; c < 3; ++c) want[size_t((n * 3 + c) * 4 + k)] = std::exp(double(x.data<float>()[(n * 3 + c) * 4 + k])) / s;
    }
  expect_near(y, want, 1e-7, 1e-6);
  // Large logits do not overflow (max subtraction): softmax([1000, 1000]) = [0.5, 0.5].
  Tensor big = f32({2}, {1000, 1000});
  Attrs last;
  last.set("axis", int64_t(0));
  expect_near(run1(OpKind::Softmax, last, {&big}, DType::F32, {2}), {0.5, 0.5}, 0, 0);
}

TEST(ReferenceLayerNorm, AgainstLoops) {
  Tensor x = test::random_f32({2, 3, 4}, 6, -2, 3);
  Tensor scale = test::random_f32({3, 4}, 7);
  Tensor bias = test::random_f32({4}, 8);  // broadcasts over the normalised [3,4]
  Attrs a;
  a.set("axis", int64_t(1));
  a.set("epsilon", 1e-3);
  std::vector<double> want;
  for (int n = 0; n < 2; ++n) {
    double mean = 0, var = 0;
    for (int i = 0; i < 12; ++i) mean += x.data<float>()[n * 12 + i];
    mean /= 12;
    for (int i = 0; i < 12; ++i) var += std::pow(x.data<float>()[n * 12 + i] - mean, 2);
    var /= 12;
    for (int i = 0; i < 12; ++i)
      want.push_back((x.data<float>()[n * 12 + i] - mean) / std::sqrt(var + 1e-3) * scale.data<float>()[i] +
                     bias.data<float>()[i % 4]);
  }
  expect_near(run1(OpKind::LayerNorm, a, {&x, &scale, &bias}, DType::F32, {2, 3, 4}), want, 1e-5, 1e-5);
  // Without bias, last axis only: [1,2,3] -> mean 2, var 2/3.
  Tensor v = f32({1, 3}, {1, 2, 3});
  Tensor ones = f32({3}, {1, 1, 1});
  Attrs b;
  b.set("axis", int64_t(1));
  b.set("epsilon", 0.0);
  const double k = 1 / std::sqrt(2.0 / 3);
  expect_near(run1(OpKind::LayerNorm, b, {&v, &ones, nullptr}, DType::F32, {1, 3}), {-k, 0, k});
}

TEST(ReferenceBatchNorm, PerChannel) {
  Tensor x = test::random_f32({2, 3, 2, 2}, 9);
  Tensor scale = f32({3}, {1, 2, -1});
  Tensor bias = f32({3}, {0, 0.5, 1});
  Tensor mean = f32({3}, {0.1f, -0.2f, 0});
  Tensor var = f32({3}, {1, 4, 0.25f});
  Attrs a;
  a.set("epsilon", 0.0);
  std::vector<double> want;
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int s = 0; s < 4; ++s)
        want.push_back((x.data<float>()[(n * 3 + c) * 4 + s] - mean.data<float>()[c]) / std::sqrt(var.data<float>()[c]) *
                           scale.data<float>()[c] +
                       bias.data<float>()[c]);
  expect_near(run1(OpKind::BatchNorm, a, {&x, &scale, &bias, &mean, &var}, DType::F32, x.shape()), want, 1e-6, 1e-6);
  Tensor short_scale = f32({2}, {1, 1});
  EXPECT_THROW(run1(OpKind::BatchNorm, a, {&x, &short_scale, &bias, &mean, &var}, DType::F32, x.shape()), Error);
}

}  // namespace
}  // namespace opv
