// Reference matrix products, accumulated in double and rounded once to the output dtype.
// Gemm: y[M,N] = alpha * A' * B' + beta * C, A' = transA ? A^T : A, B' likewise, C (optional)
//   broadcast to [M,N].
// MatMul: numpy semantics — 1-D a is promoted to [1,K] and b to [K,1] (the inserted axis is
//   removed from the result), leading batch axes broadcast against each other.
#include "kernels/reference/common.h"

namespace opv::ref::detail {

namespace {
void check_float(const Args& a) {
  for (const Tensor* t : a.ins)
    if (t && !is_float(t->dtype())) a.unsupported("matrix products compute on float tensors");
  if (!is_float(a.out(0).dtype())) a.unsupported("matrix products compute on float tensors");
}

// out[M,N] += A[M,K] * B[K,N] with row strides; A element (m,k) at a[m*am + k*ak].
void matmul_block(const double* A, int64_t am, int64_t ak, const double* B, int64_t bk, int64_t bn,
                  int64_t M, int64_t K, int64_t N, double* out) {
  for (int64_t m = 0; m < M; ++m) {
    double* row = out + m * N;
    for (int64_t k = 0; k < K; ++k) {
      const double av = A[m * am + k * ak];
      const double* brow = B + k * bk;
      for (int64_t n = 0; n < N; ++n) row[n] += av * brow[n * bn];
    }
  }
}
}  // namespace

void run_gemm(const Args& a) {
  check_float(a);
  const Tensor& A = a.in(0);
  const Tensor& B = a.in(1);
  const Tensor* C = a.opt(2);
  Tensor& y = a.out(0);
  if (A.rank() != 2 || B.rank() != 2) a.error("A and B must be 2-D, got ", shape_str(A.shape()), " and ", shape_str(B.shape()));
  const bool ta = a.attrs.i("transA", 0) != 0, tb = a.attrs.i("transB", 0) != 0;
  const double alpha = a.attrs.f("alpha", 1.0), beta = a.attrs.f("beta", 1.0);
  const int64_t M = ta ? A.shape()[1] : A.shape()[0], K = ta ? A.shape()[0] : A.shape()[1];
  const int64_t KB = tb ? B.shape()[1] : B.shape()[0], N = tb ? B.shape()[0] : B.shape()[1];
  if (K != KB) a.error("inner dimensions differ: A'", K, " vs B'", KB, " (", a.attrs.str(), ")");
  if (y.shape() != Shape{M, N}) a.error("output shape ", shape_str(y.shape()), " must be ", shape_str({M, N}));
  const std::vector<double> av = load_f64(A), bv = load_f64(B);
  std::vector<double> acc(size_t(M * N), 0.0);
  // A'(m,k) = ta ? A[k,m] : A[m,k]; B'(k,n) = tb ? B[n,k] : B[k,n].
  matmul_block(av.data(), ta ? 1 : K, ta ? M : 1, bv.data(), tb ? 1 : N, tb ? K : 1, M, K, N, acc.data());
  for (double& v : acc) v *= alpha;
  if (C) {
    std::vector<int64_t> oc = broadcast_offsets(C->shape(), y.shape());
    const std::vector<double> cv = load_f64(*C);
    for (size_t i = 0; i < acc.size(); ++i) acc[i] += beta * cv[size_t(oc[i])];
  }
  store_f64(y, acc);
}

void run_matmul(const Args& a) {
  check_float(a);
  const Tensor& A = a.in(0);
  const Tensor& B = a.in(1);
  Tensor& y = a.out(0);
  if (A.rank() < 1 || B.rank() < 1) a.error("operands must have rank >= 1");
  Shape sa = A.shape(), sb = B.shape();
  const bool drop_m = sa.size() == 1, drop_n = sb.size() == 1;
  if (drop_m) sa.insert(sa.begin(), 1);
  if (drop_n) sb.push_back(1);
  const int64_t M = sa[sa.size() - 2], K = sa.back(), KB = sb[sb.size() - 2], N = sb.back();
  if (K != KB) a.error("inner dimensions differ: ", shape_str(A.shape()), " x ", shape_str(B.shape()));
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  const Shape batch = broadcast_shapes(batch_a, batch_b);
  Shape expect = batch;
  if (!drop_m) expect.push_back(M);
  if (!drop_n) expect.push_back(N);
  if (y.shape() != expect) a.error("output shape ", shape_str(y.shape()), " must be ", shape_str(expect));
  const std::vector<int64_t> boa = broadcast_offsets(batch_a, batch), bob = broadcast_offsets(batch_b, batch);
  const std::vector<double> av = load_f64(A), bv = load_f64(B);
  std::vector<double> acc(size_t(y.numel()), 0.0);
  for (size_t bi = 0; bi < boa.size(); ++bi)
    matmul_block(av.data() + boa[bi] * M * K, K, 1, bv.data() + bob[bi] * K * N, N, 1, M, K, N,
                 acc.data() + int64_t(bi) * M * N);
  store_f64(y, acc);
}

}  // namespace opv::ref::detail
