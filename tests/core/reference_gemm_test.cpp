// Reference Gemm and MatMul: hand-computed products, and random cases against a naive
// triple loop over explicitly transposed / broadcast operands.
#include "core/error.h"
#include "reference_test_util.h"
#include "test_util.h"

namespace opv {
namespace {

using reftest::expect_near;
using reftest::f32;
using reftest::run1;

// Row-major [r,c] -> [c,r].
Tensor transpose2(const Tensor& t) {
  const int64_t r = t.shape()[0], c = t.shape()[1];
  Tensor o(DType::F32, {c, r});
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) o.data<float>()[j * r + i] = t.data<float>()[i * c + j];
  return o;
}

TEST(ReferenceGemm, HandComputed) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4});
  Tensor b = f32({2, 2}, {5, 6, 7, 8});
  expect_near(run1(OpKind::Gemm, {}, {&a, &b}, DType::F32, {2, 2}), {19, 22, 43, 50}, 0, 0);
  Attrs at;
  at.set("transA", int64_t(1));
  at.set("alpha", 2.0);
  at.set("beta", -1.0);
  Tensor c = f32({2}, {1, 10});  // broadcast over rows
  // A^T = [[1,3],[2,4]]; A^T B = [[26,30],[38,44]]; *2 - c.
  expect_near(run1(OpKind::Gemm, at, {&a, &b, &c}, DType::F32, {2, 2}), {51, 50, 75, 78}, 0, 0);
}

TEST(ReferenceGemm, TransposeCombinationsAndBias) {
  const int64_t M = 5, K = 7, N = 3;
  Tensor A = test::random_f32({M, K}, 1);
  Tensor B = test::random_f32({K, N}, 2);
  const Shape c_shapes[] = {{}, {N}, {M, 1}, {M, N}};
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const Shape& cs : c_shapes) {
        SCOPED_TRACE("transA=" + std::to_string(ta) + " transB=" + std::to_string(tb) + " C" + shape_str(cs));
        Tensor C = test::random_f32(cs, 3);
        Attrs at;
        at.set("transA", int64_t(ta));
        at.set("transB", int64_t(tb));
        at.set("alpha", 0.75);
        at.set("beta", 1.5);
        Tensor a_in = ta ? transpose2(A) : A;
        Tensor b_in = tb ? transpose2(B) : B;
        std::vector<double> want;
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k) s += double(A.data<float>()[m * K + k]) * B.data<float>()[k * N + n];
            int64_t ci = cs.empty() ? 0 : cs.size() == 1 ? n : cs[1] == 1 ? m : m * N + n;
            want.push_back(0.75 * s + 1.5 * C.data<float>()[ci]);
          }
        expect_near(run1(OpKind::Gemm, at, {&a_in, &b_in, &C}, DType::F32, {M, N}), want, 1e-6, 1e-6);
      }
  Tensor bad = test::random_f32({6, N}, 4);
  EXPECT_THROW(run1(OpKind::Gemm, {}, {&A, &bad}, DType::F32, {M, N}), Error);
}

// Naive numpy matmul on shapes already promoted to rank >= 2 with broadcast batch shape.
std::vector<double> naive_matmul(const Tensor& a, const Shape& sa, const Tensor& b, const Shape& sb, const Shape& batch) {
  const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  std::vector<double> out;
  std::vector<int64_t> idx(batch.size(), 0);
  const int64_t nb = numel(batch);
  auto batch_offset = [&](const Shape& s) {
    // Offset of the matrix in an operand whose batch dims are right-aligned to `batch`.
    int64_t off = 0;
    const size_t nbd = s.size() - 2;
    for (size_t d = 0; d < nbd; ++d) {
      const size_t bd = d + (batch.size() - nbd);
      off = off * s[d] + (s[d] == 1 ? 0 : idx[bd]);
    }
    return off;
  };
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t rem = bi;
    for (int64_t d = int64_t(batch.size()) - 1; d >= 0; --d) {
      idx[size_t(d)] = rem % batch[size_t(d)];
      rem /= batch[size_t(d)];
    }
    const int64_t oa = batch_offset(sa) * M * K, ob = batch_offset(sb) * K * N;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += a.get_f64(oa + m * K + k) * b.get_f64(ob + k * N + n);
        out.push_back(s);
      }
  }
  return out;
}

TEST(ReferenceMatMul, BatchBroadcast) {
  struct Case {
    Shape a, b, batch, y;
  };
  const Case cases[] = {
      {{2, 1, 3, 4}, {3, 4, 5}, {2, 3}, {2, 3, 3, 5}},
      {{4, 6}, {2, 6, 3}, {2}, {2, 4, 3}},
      {{2, 3, 4, 6}, {2, 3, 6, 2}, {2, 3}, {2, 3, 4, 2}},
      {{1, 5, 7}, {7, 1}, {1}, {1, 5, 1}},
  };
  uint64_t seed = 20;
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.a) + " x " + shape_str(c.b));
    Tensor a = test::random_f32(c.a, ++seed), b = test::random_f32(c.b, ++seed);
    expect_near(run1(OpKind::MatMul, {}, {&a, &b}, DType::F32, c.y), naive_matmul(a, c.a, b, c.b, c.batch), 1e-6, 1e-6);
  }
}

TEST(ReferenceMatMul, OneDimensionalPromotion) {
  Tensor v = f32({3}, {1, 2, 3});
  Tensor m = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  expect_near(run1(OpKind::MatMul, {}, {&v, &m}, DType::F32, {2}), {22, 28}, 0, 0);  // [3]x[3,2] -> [2]
  Tensor mt = f32({2, 3}, {1, 3, 5, 2, 4, 6});
  expect_near(run1(OpKind::MatMul, {}, {&mt, &v}, DType::F32, {2}), {22, 28}, 0, 0);  // [2,3]x[3] -> [2]
  expect_near(run1(OpKind::MatMul, {}, {&v, &v}, DType::F32, {}), {14}, 0, 0);       // dot -> scalar
  Tensor bm = f32({2, 3, 1}, {1, 0, 0, 0, 0, 1});
  expect_near(run1(OpKind::MatMul, {}, {&v, &bm}, DType::F32, {2, 1}), {1, 3}, 0, 0);  // batched vec x mat
  EXPECT_THROW(run1(OpKind::MatMul, {}, {&v, &v}, DType::F32, {1}), Error);
  EXPECT_THROW(run1(OpKind::MatMul, {}, {&m, &m}, DType::F32, {3, 2}), Error);
}

TEST(ReferenceMatMul, F16AccumulatesInDouble) {
  // 1 + 4096 * 2^-12 terms: an f16 accumulator would stall at 1; the result is exactly 2.
  const int64_t K = 4097;
  Tensor a(DType::F16, {1, K}), b(DType::F16, {K, 1});
  for (int64_t k = 0; k < K; ++k) {
    a.data<uint16_t>()[k] = float_to_half(k == 0 ? 1.f : 1.f / 4096);
    b.data<uint16_t>()[k] = float_to_half(1.f);
  }
  Tensor y = run1(OpKind::MatMul, {}, {&a, &b}, DType::F16, {1, 1});
  EXPECT_EQ(half_to_float(y.data<uint16_t>()[0]), 2.f);
}

}  // namespace
}  // namespace opv
