// Helpers for the reference-kernel tests (tests/core/reference_*_test.cpp): run one op on
// freshly allocated outputs and compare tensors element-wise.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/half.h"
#include "core/tensor.h"
#include "kernels/reference.h"

namespace opv::reftest {

// Runs `op` with the given inputs (nullptr = absent) into one output of dtype/shape.
inline Tensor run1(OpKind op, const Attrs& attrs, const std::vector<const Tensor*>& ins, DType dt,
                   const Shape& shape, const std::vector<PostOp>& post = {}) {
  Tensor y(dt, shape);
  std::vector<Tensor*> outs{&y};
  ref::run({op, attrs, post}, ins, outs);
  return y;
}

inline Tensor f32(const Shape& s, const std::vector<float>& v) { return Tensor::from_f32(s, v); }

inline Tensor i64(const Shape& s, const std::vector<int64_t>& v) {
  Tensor t(DType::I64, s);
  EXPECT_EQ(int64_t(v.size()), t.numel());
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

inline Tensor boolean(const Shape& s, const std::vector<int>& v) {
  Tensor t(DType::Bool, s);
  for (size_t i = 0; i < v.size(); ++i) t.data<uint8_t>()[i] = v[i] ? 1 : 0;
  return t;
}

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_f64(i));
  return v;
}

inline std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_i64(i));
  return v;
}

// Element-wise |got - want| <= atol + rtol*|want|.
inline void expect_near(const Tensor& got, const std::vector<double>& want, double atol = 1e-5,
                        double rtol = 1e-5) {
  ASSERT_EQ(got.numel(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    double g = got.get_f64(int64_t(i));
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g)) << "element " << i;
      continue;
    }
    EXPECT_NEAR(g, want[i], atol + rtol * std::fabs(want[i])) << "element " << i;
  }
}

}  // namespace opv::reftest
