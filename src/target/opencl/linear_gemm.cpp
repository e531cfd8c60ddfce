/* Gemm and MatMul on Linear buffers (family "linear").
 *   1. describe(): both ops become one form — per batch, y[m,n] = alpha * sum_k A'(m,k) B'(k,n)
 *      (+ beta * C[m,n]) with A'(m,k) at a_batch + m*am + k*ak, B'(k,n) at b_batch + k*bk + n*bn.
 *      A MatMul whose B has no batch axes folds A's batch into M.
 *   2. GEMV (M == 1, no batch): K split across the lanes of a work-group (64 or 128, by K);
 *      work-group nb computes outputs 4nb..4nb+3, lane l sums k-blocks l, l+L, .. and a
 *      fixed-order local-memory tree adds the lanes' float4s; lane 0 runs the epilogue. On
 *      prepacked weights (F16 [N/4][K/4][4][4], one vload_half4 per k, a wave reads one
 *      contiguous range) with a packed F32 bias; unpacked weights are read with vector loads
 *      along k or n where contiguous, else element loads.
 *   3. Everything else (M > 1, batches): a register-tiled kernel, 4 rows x 4 columns per
 *      work-item (1 x 4 when M == 1), loads clamped into range (branch-free inner loop), stores
 *      guarded at the edges.
 *   4. gemm_pack_weights(): makes the packed constants for the GEMV path and regenerates.
 * Accumulation is fp32. Post-ops run per output element through emit_post_ops_linear.
 */
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "target/opencl/linear_internal.h"

namespace opv::plan::cl::lin {

namespace {

constexpr int64_t kMaxIndex = int64_t(1) << 31;  // kernels index with 32-bit ints
constexpr int64_t kUnroll = 4;                   // GEMV k-blocks per loop step

struct GemmDesc {
  int64_t M = 0, N = 0, K = 0;
  Shape batch;                      // output batch axes (empty: one matrix)
  std::vector<int64_t> a_bstr, b_bstr;  // batch strides (elements) of A and B
  int64_t am = 0, ak = 0, bk = 0, bn = 0;
  double alpha = 1.0, beta = 1.0;
  bool has_c = false;
  int64_t csm = 0, csn = 0;         // C broadcast strides over [M,N]
  bool packed_w = false, packed_bias = false;
  bool ta = false, tb = false;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool is_packed_weights(const Buffer& b, int64_t K, int64_t N) {
  return b.layout == Layout::PackedWeight && b.kind == BufferKind::Constant && b.dtype == DType::F16 &&
         ends_with(b.name, std::string("@") + kPackGemvWeights) &&
         b.shape == Shape{div_up(N, kBlock), div_up(K, kBlock), kBlock, kBlock};
}

bool is_packed_bias(const Buffer& b, int64_t N) {
  return b.layout == Layout::PackedWeight && b.kind == BufferKind::Constant && b.dtype == DType::F32 &&
         ends_with(b.name, std::string("@") + kPackGemvBias) && b.shape == Shape{div_up(N, kBlock) * kBlock};
}

bool linear_float(const Buffer& b) { return b.layout == Layout::Linear && is_float_dt(b.dtype); }

// Fills d from the call; false when the call is outside what the kernels handle.
bool describe(const Plan& p, const Call& c, const Kernel& k, GemmDesc& d) {
  if (c.outputs.size() != 1 || !has_in(c, 0) || !has_in(c, 1)) return false;
  const Buffer& y = out_buf(p, c);
  const Buffer& A = in_buf(p, c, 0);
  const Buffer& B = in_buf(p, c, 1);
  if (!linear_float(y) || !linear_float(A)) return false;
  if (numel(y.shape) >= kMaxIndex || numel(A.shape) >= kMaxIndex || numel(B.shape) >= kMaxIndex) return false;
  const bool b_packed = B.layout == Layout::PackedWeight;
  if (!b_packed && !linear_float(B)) return false;
  if (k.op == OpKind::Gemm) {
    if (A.shape.size() != 2 || y.shape.size() != 2) return false;
    d.ta = k.attrs.i("transA", 0) != 0;
    d.tb = k.attrs.i("transB", 0) != 0;
    d.alpha = k.attrs.f("alpha", 1.0);
    d.beta = k.attrs.f("beta", 1.0);
    d.M = d.ta ? A.shape[1] : A.shape[0];
    d.K = d.ta ? A.shape[0] : A.shape[1];
    d.N = y.shape[1];
    if (y.shape[0] != d.M) return false;
    if (!b_packed) {
      if (B.shape.size() != 2) return false;
      const int64_t kb = d.tb ? B.shape[1] : B.shape[0], nb = d.tb ? B.shape[0] : B.shape[1];
      if (kb != d.K || nb != d.N) return false;
    }
    d.am = d.ta ? 1 : d.K;
    d.ak = d.ta ? d.M : 1;
    d.bk = d.tb ? 1 : d.N;
    d.bn = d.tb ? d.K : 1;
    if (has_in(c, 2)) {
      const Buffer& C = in_buf(p, c, 2);
      d.has_c = true;
      if (C.layout == Layout::PackedWeight) {
        if (!is_packed_bias(C, d.N)) return false;
        d.packed_bias = true;
      } else {
        if (!linear_float(C) || !broadcasts_to(C.shape, y.shape)) return false;
        std::vector<int64_t> cs = broadcast_strides(C.shape, y.shape);
        d.csm = cs[0];
        d.csn = cs[1];
      }
    }
  } else {
    Shape sa = A.shape;
    if (sa.empty()) return false;
    if (sa.size() == 1) sa.insert(sa.begin(), 1);
    d.K = sa.back();
    if (b_packed) {
      // Only the GEMV form is ever packed: A [.., 1, K] with no batch, B 2-D.
      d.N = y.shape.empty() ? 0 : y.shape.back();
      if (d.N == 0 || numel(y.shape) != d.N || numel(sa) != d.K) return false;
      d.M = 1;
      d.bk = d.N;
      d.bn = 1;
    } else {
      Shape sb = B.shape;
      if (sb.empty()) return false;
      const bool drop_n = sb.size() == 1;
      if (drop_n) sb.push_back(1);
      if (sb[sb.size() - 2] != d.K) return false;
      d.N = sb.back();
      d.M = sa[sa.size() - 2];
      const Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
      if (numel(bb) == 1) {
        d.M *= numel(ba);  // A's batch rows are contiguous rows of one [M*batch, K] matrix
      } else {
        // Output batch = broadcast of both; read from the output's leading axes.
        const size_t nbatch = std::max(ba.size(), bb.size());
        const size_t out_tail = y.shape.size() >= nbatch ? y.shape.size() - nbatch : 0;
        if (out_tail > 2) return false;
        d.batch.assign(y.shape.begin(), y.shape.begin() + int64_t(nbatch));
        if (!broadcasts_to(ba, d.batch) || !broadcasts_to(bb, d.batch)) return false;
        d.a_bstr = broadcast_strides(ba, d.batch);
        d.b_bstr = broadcast_strides(bb, d.batch);
        for (int64_t& s : d.a_bstr) s *= d.M * d.K;
        for (int64_t& s : d.b_bstr) s *= d.K * d.N;
      }
      if (numel(y.shape) != numel(d.batch) * d.M * d.N) return false;
      d.am = d.K;
      d.ak = 1;
      d.bk = d.N;
      d.bn = 1;
    }
  }
  if (b_packed) {
    if (!is_packed_weights(B, d.K, d.N) || d.M != 1 || !d.batch.empty()) return false;
    d.packed_w = true;
  }
  if (d.packed_bias && !d.packed_w) return false;
  if (d.M <= 0 || d.N <= 0 || d.K <= 0) return false;
  return true;
}

std::string flt(double v) { return float_literal(v); }

// "v = ALPHA * acc (+ BETA * c)" for one output element.
std::string epilogue_value(const GemmDesc& d, const std::string& acc, const std::string& cval) {
  std::string v = d.alpha == 1.0 ? acc : flt(d.alpha) + " * " + acc;
  if (!cval.empty()) v += " + " + (d.beta == 1.0 ? cval : flt(d.beta) + " * " + cval);
  return v;
}

// Four consecutive elements of a float/half buffer as float4 (vector load when contiguous).
std::string load4(DType dt, const std::string& name, const std::string& off) {
  if (dt == DType::F16) return "vload_half4(0, " + name + " + " + off + ")";
  return "vload4(0, " + name + " + " + off + ")";
}

// Lanes of a GEMV work-group: a multiple of the 64-wide Adreno wave; the wider group once a
// 64-lane group would leave each lane more than kLaneBlocks k-blocks to stream.
constexpr int64_t kWave = 64;
constexpr int64_t kWideLanes = 128;
constexpr int64_t kLaneBlocks = 8;
static_assert(kWave % (kBlock * kBlock) == 0 && kWideLanes % (kBlock * kBlock) == 0,
              "the lane tree reduces by 4 per level down to 2 or 4 partial sums");

int64_t gemv_lanes(int64_t K) { return div_up(K, kBlock) > kWave * kLaneBlocks ? kWideLanes : kWave; }

// How a GEMV lane reads its weights.
enum class WRead {
  Packed,  // packed F16 blocks: vload_half4 per k gives 4 outputs' weights
  Row,     // B'(k, 4nb..4nb+3) contiguous (bn == 1, N % 4 == 0): one vector per k
  Col,     // B'(4kb..4kb+3, n) contiguous (bk == 1): one vector per output column
  Scalar,  // anything else: element loads, columns clamped into range
};

// GEMV (M == 1, no batch) with K split across the L lanes of a work-group: work-group nb computes
// outputs 4nb..4nb+3; lane l accumulates k-blocks l, l+L, l+2L, .. (all lanes of a round read
// neighbouring blocks), then a fixed-order tree in local memory sums the L partial float4s and
// lane 0 applies alpha/beta/bias/post-ops and stores. No atomics: bit-identical across runs.
std::string gemv_ksplit(const Plan& p, const Call& c, const Kernel& k, const GemmDesc& d, int64_t L,
                        std::string* name) {
  const Buffer& A = in_buf(p, c, 0);
  const Buffer& B = in_buf(p, c, 1);
  const Buffer& y = out_buf(p, c);
  auto I = [](int64_t v) { return std::to_string(v); };
  auto times = [&](const std::string& var, int64_t s) {
    return s == 0 ? std::string("0") : (s == 1 ? var : "(" + var + ") * " + I(s));
  };
  static const char* kLn[] = {"s0", "s1", "s2", "s3"};
  const int64_t K4 = div_up(d.K, kBlock), KF = d.K / kBlock, KT = d.K % kBlock;
  const int64_t R = KF / L, KR = KF % L;  // full rounds of L blocks; blocks of the partial round
  WRead mode = WRead::Scalar;
  if (d.packed_w)
    mode = WRead::Packed;
  else if (d.bk == 1)
    mode = WRead::Col;
  else if (d.bn == 1 && d.N % kBlock == 0)
    mode = WRead::Row;
  std::string b;
  b += "  const int g = get_global_id(0);\n";
  b += "  const int nb = g / " + I(L) + ";  /* output tile: outputs 4nb .. 4nb+3 */\n";
  b += "  const int lid = g - nb * " + I(L) + ";\n";
  if (mode == WRead::Packed) b += "  const __global half* w = in1 + nb * " + I(K4 * kBlock * kBlock) + ";\n";
  if (mode == WRead::Col || mode == WRead::Scalar)
    for (int64_t j = 0; j < kBlock; ++j)
      b += "  const int n" + I(j) + " = min(nb * 4 + " + I(j) + ", " + I(d.N - 1) + ");\n";
  // Weights of the 4 tile outputs at row k, as a float4 over n.
  auto wrow = [&](const std::string& kx) {
    if (mode == WRead::Row) return load4(B.dtype, "in1", times(kx, d.bk) + " + nb * 4");
    std::string r = "(float4)(";
    for (int64_t j = 0; j < kBlock; ++j)
      r += (j ? ", " : "") + cl_load(B.dtype, "in1", times(kx, d.bk) + " + " + times("n" + I(j), d.bn));
    return r + ")";
  };
  // Four accumulators: per k lane of a block (over n), or per output column (over k) for Col.
  b += "  float4 acc0 = (float4)(0.0f), acc1 = (float4)(0.0f), acc2 = (float4)(0.0f), acc3 = (float4)(0.0f);\n";
  // Blocks kb0 + q*L, q < u: every load of the step is issued before its mads.
  auto step = [&](const std::string& kb0, int64_t u, const std::string& ind) {
    std::string r;
    for (int64_t q = 0; q < u; ++q) {
      const std::string Q = I(q), kbq = q == 0 ? "(" + kb0 + ")" : "(" + kb0 + " + " + I(q * L) + ")";
      r += ind + "const float4 x" + Q + " = " + load4(A.dtype, "in0", kbq + " * 4") + ";\n";
      if (mode == WRead::Packed)
        r += ind + "const __global half* wb" + Q + " = w + " + kbq + " * " + I(kBlock * kBlock) + ";\n";
      for (int64_t l = 0; l < kBlock; ++l) {
        const std::string L_ = I(l);
        std::string e;
        if (mode == WRead::Packed)
          e = "vload_half4(" + L_ + ", wb" + Q + ")";
        else if (mode == WRead::Col)
          e = load4(B.dtype, "in1", times("n" + L_, d.bn) + " + " + kbq + " * 4");
        else
          e = wrow(kbq + " * 4 + " + L_);
        r += ind + "const float4 w" + Q + L_ + " = " + e + ";\n";
      }
    }
    for (int64_t q = 0; q < u; ++q)
      for (int64_t l = 0; l < kBlock; ++l) {
        const std::string Q = I(q), L_ = I(l);
        if (mode == WRead::Col)
          r += ind + "acc" + L_ + " += x" + Q + " * w" + Q + L_ + ";\n";
        else
          r += ind + "acc" + L_ + " += x" + Q + "." + kLn[l] + " * w" + Q + L_ + ";\n";
      }
    return r;
  };
  if (R > 0) {
    const int64_t U = std::min(kUnroll, R), RU = R / U * U;
    if (RU == U) {
      b += "  {\n" + step("lid", U, "    ") + "  }\n";
    } else {
      b += "  for (int r = 0; r < " + I(RU) + "; r += " + I(U) + ") {\n";
      b += step("lid + r * " + I(L), U, "    ");
      b += "  }\n";
    }
    if (R > RU) b += "  {\n" + step("lid + " + I(RU * L), R - RU, "    ") + "  }\n";
  }
  if (KR > 0) b += "  if (lid < " + I(KR) + ") {\n" + step("lid + " + I(R * L), 1, "    ") + "  }\n";
  if (mode == WRead::Col)
    b += "  float4 s = (float4)((acc0.s0 + acc0.s1) + (acc0.s2 + acc0.s3),\n"
         "                      (acc1.s0 + acc1.s1) + (acc1.s2 + acc1.s3),\n"
         "                      (acc2.s0 + acc2.s1) + (acc2.s2 + acc2.s3),\n"
         "                      (acc3.s0 + acc3.s1) + (acc3.s2 + acc3.s3));\n";
  else
    b += "  float4 s = (acc0 + acc1) + (acc2 + acc3);\n";
  if (KT > 0) {
    // The last K % 4 rows: one lane (the first without a block in the partial round).
    b += "  if (lid == " + I(KR) + ") {\n";
    for (int64_t t = 0; t < KT; ++t) {
      const std::string kx = I(KF * kBlock + t);
      const std::string wv = mode == WRead::Packed ? "vload_half4(" + I(t) + ", w + " + I(KF * kBlock * kBlock) + ")"
                                                   : wrow(kx);
      b += "    s += " + cl_load(A.dtype, "in0", kx) + " * " + wv + ";\n";
    }
    b += "  }\n";
  }
  // Fixed-order 4-ary tree over the lanes (one barrier per level), lane 0 adds the last <= 4.
  b += "  red[lid] = s;\n  barrier(CLK_LOCAL_MEM_FENCE);\n";
  int64_t left = L;
  for (; left > kBlock; left /= kBlock) {
    const int64_t h = left / kBlock;
    b += "  if (lid < " + I(h) + ") red[lid] = (red[lid] + red[lid + " + I(h) + "]) + (red[lid + " + I(2 * h) +
         "] + red[lid + " + I(3 * h) + "]);\n  barrier(CLK_LOCAL_MEM_FENCE);\n";
  }
  b += "  if (lid != 0) return;\n";
  b += left == kBlock ? "  const float4 acc = (red[0] + red[1]) + (red[2] + red[3]);\n"
                      : "  const float4 acc = red[0] + red[1];\n";
  if (d.packed_bias) b += "  const float4 bias = vload4(nb, in2);\n";
  const std::string post = emit_post_ops_linear(p, c, k);
  // With N a multiple of 4 and a float output the four results leave as one vector store.
  const int64_t N4 = div_up(d.N, kBlock);
  const bool vec_store = d.N % kBlock == 0 && is_float_dt(y.dtype);
  for (int64_t j = 0; j < kBlock; ++j) {
    const bool guard = (N4 - 1) * kBlock + j >= d.N;  // lane j of the last tile may be padding
    const std::string J = I(j);
    std::string cval;
    const std::string n = "(nb * 4 + " + J + ")";
    if (d.packed_bias)
      cval = std::string("bias.") + kLn[j];
    else if (d.has_c)
      cval = cl_load(in_buf(p, c, 2).dtype, "in2", d.csn == 0 ? "0" : (d.csn == 1 ? n : n + " * " + I(d.csn)));
    std::string inner;
    if (!cval.empty() && guard) {
      // The bias of a padding lane may lie past the end of C: read it inside the guard.
      inner += "    v" + J + " = " + epilogue_value(d, std::string("acc.") + kLn[j], cval) + ";\n";
      b += "  float v" + J + " = 0.0f;\n";
    } else {
      b += "  float v" + J + " = " + epilogue_value(d, std::string("acc.") + kLn[j], cval) + ";\n";
    }
    if (!post.empty()) inner += "    float v = v" + J + ";\n    const long i = " + n + ";\n" + post + "    v" + J + " = v;\n";
    if (!vec_store) inner += "    " + cl_store(y.dtype, "out0", n, "v" + J) + "\n";
    if (inner.empty()) continue;
    b += guard ? "  if (" + n + " < " + I(d.N) + ") {\n" + inner + "  }\n" : "  {\n" + inner + "  }\n";
  }
  if (vec_store) {
    const std::string v4 = "(float4)(v0, v1, v2, v3)";
    b += y.dtype == DType::F16 ? "  vstore_half4_rte(" + v4 + ", nb, out0);\n" : "  vstore4(" + v4 + ", nb, out0);\n";
  }
  const std::string flags = std::string(d.packed_bias ? "_bias" : "") + (d.has_c && !d.packed_bias ? "_c" : "") +
                            (d.alpha != 1.0 || d.beta != 1.0 ? "_ab" : "") + "_ks" + I(L);
  if (mode == WRead::Packed) {
    *name = "cl_gemv_k" + I(d.K) + "_n" + I(d.N) + "_w16" + flags + "_" + dtype_name(A.dtype) + "_" +
            dtype_name(y.dtype) + post_ops_suffix(k.post_ops);
  } else {
    static const char* kMode[] = {"", "_brow", "_bcol", "_bscalar"};
    *name = std::string(k.op == OpKind::Gemm ? "cl_gemm" : "cl_matmul") + "_m1_n" + I(d.N) + "_k" + I(d.K) +
            (d.ta ? "_ta" : "") + (d.tb ? "_tb" : "") + kMode[int(mode)] + flags + "_" + dtype_name(A.dtype) + "_" +
            dtype_name(B.dtype) + "_" + dtype_name(y.dtype) + post_ops_suffix(k.post_ops);
  }
  return b;
}

std::string gemm_tiled(const Plan& p, const Call& c, const Kernel& k, const GemmDesc& d, int64_t TM,
                       std::string* name) {
  const Buffer& A = in_buf(p, c, 0);
  const Buffer& B = in_buf(p, c, 1);
  const Buffer& y = out_buf(p, c);
  const int64_t NB = div_up(d.N, kBlock), MB = div_up(d.M, TM), BATCH = numel(d.batch);
  auto I = [](int64_t v) { return std::to_string(v); };
  auto times = [&](const std::string& var, int64_t s) {
    return s == 0 ? std::string("0") : (s == 1 ? var : var + " * " + I(s));
  };
  std::string b;
  b += "  const int nb = get_global_id(0);\n  const int g1 = get_global_id(1);\n";
  b += "  if (nb >= " + I(NB) + " || g1 >= " + I(MB * BATCH) + ") return;\n";
  if (BATCH > 1) {
    b += "  const int bt = g1 / " + I(MB) + ";\n  const int mb = g1 - bt * " + I(MB) + ";\n";
    Addressing ad{d.batch, {0, 0}, {d.a_bstr, d.b_bstr}};
    ad = collapse(ad);
    b += "  const int aoff = " + offset_expr(ad, 0, "bt") + ";\n";
    b += "  const int boff = " + offset_expr(ad, 1, "bt") + ";\n";
  } else {
    b += "  const int bt = 0;\n  const int mb = g1;\n  const int aoff = 0;\n  const int boff = 0;\n";
  }
  for (int64_t r = 0; r < TM; ++r)
    b += "  const int m" + I(r) + " = min(mb * " + I(TM) + " + " + I(r) + ", " + I(d.M - 1) + ");\n";
  // B row reads: one vector load when the 4 columns are contiguous and never run past N.
  const bool vec_b = d.bn == 1 && d.N % kBlock == 0;
  if (!vec_b)
    for (int64_t j = 0; j < kBlock; ++j)
      b += "  const int n" + I(j) + " = min(nb * 4 + " + I(j) + ", " + I(d.N - 1) + ");\n";
  for (int64_t r = 0; r < TM; ++r) b += "  float4 acc" + I(r) + " = (float4)(0.0f);\n";
  b += "  for (int k = 0; k < " + I(d.K) + "; ++k) {\n";
  const std::string krow = "boff + " + times("k", d.bk);
  if (vec_b) {
    b += "    const float4 bv = " + load4(B.dtype, "in1", krow + " + nb * 4") + ";\n";
  } else {
    b += "    const float4 bv = (float4)(";
    for (int64_t j = 0; j < kBlock; ++j)
      b += (j ? ", " : "") + cl_load(B.dtype, "in1", krow + " + " + times("n" + I(j), d.bn));
    b += ");\n";
  }
  for (int64_t r = 0; r < TM; ++r)
    b += "    acc" + I(r) + " += " +
         cl_load(A.dtype, "in0", "aoff + " + times("m" + I(r), d.am) + " + " + times("k", d.ak)) + " * bv;\n";
  b += "  }\n";
  const std::string post = emit_post_ops_linear(p, c, k);
  static const char* kLane[] = {"s0", "s1", "s2", "s3"};
  for (int64_t r = 0; r < TM; ++r) {
    for (int64_t j = 0; j < kBlock; ++j) {
      b += "  {\n    const int m = mb * " + I(TM) + " + " + I(r) + ";\n    const int n = nb * 4 + " + I(j) + ";\n";
      std::string cval;
      if (d.has_c) {
        std::string off = times("m", d.csm) + " + " + times("n", d.csn);
        cval = cl_load(in_buf(p, c, 2).dtype, "in2", off);
      }
      std::string inner = "      float v = " + epilogue_value(d, "acc" + I(r) + "." + kLane[j], cval) + ";\n";
      inner += "      const long i = (long)bt * " + I(d.M * d.N) + " + m * " + I(d.N) + " + n;\n" + post;
      inner += "      " + cl_store(y.dtype, "out0", "i", "v") + "\n";
      b += "    if (m < " + I(d.M) + " && n < " + I(d.N) + ") {\n" + inner + "    }\n  }\n";
    }
  }
  std::string nm = std::string(k.op == OpKind::Gemm ? "cl_gemm" : "cl_matmul") + "_m" + I(d.M) + "_n" + I(d.N) +
                   "_k" + I(d.K);
  if (BATCH > 1) nm += "_b" + dims_str(d.batch);
  nm += std::string(d.ta ? "_ta" : "") + (d.tb ? "_tb" : "") + (d.has_c ? "_c" : "") +
        (d.alpha != 1.0 || d.beta != 1.0 ? "_ab" : "") + "_t" + I(TM) + "x4_" + dtype_name(A.dtype) + "_" +
        dtype_name(B.dtype) + "_" + dtype_name(y.dtype) + post_ops_suffix(k.post_ops);
  *name = nm;
  return b;
}

}  // namespace

bool gemm_supports(const Plan& p, const Call& c, const Kernel& k) {
  GemmDesc d;
  if (!describe(p, c, k, d)) return false;
  return post_ops_linear_ok(p, c, k);
}

KernelDesc gemm_generate(const Plan& p, const Call& c, Kernel& k) {
  GemmDesc d;
  OPV_CHECK(describe(p, c, k, d), "linear codegen: call '", c.label, "' is not a supported Gemm/MatMul");
  std::string name, body;
  if (d.M == 1 && d.batch.empty()) {
    const int64_t L = gemv_lanes(d.K);
    body = gemv_ksplit(p, c, k, d, L, &name);
    if (d.packed_w) k.attrs.set("cl_pack", std::string(kPackGemvWeights));
    return finish(p, c, k, name, "", body, "-cl-mad-enable", {L * div_up(d.N, kBlock), 1, 0},
                  {{"float4", "red", L}}, {L, 1, 0});
  }
  OPV_CHECK(!d.packed_w, "linear codegen: call '", c.label, "' has packed weights but is not a GEMV");
  const int64_t TM = d.M > 1 ? kBlock : 1;
  body = gemm_tiled(p, c, k, d, TM, &name);
  return finish(p, c, k, name, "", body, "-cl-mad-enable",
                {div_up(d.N, kBlock), div_up(d.M, TM) * numel(d.batch), 0});
}

bool gemm_pack_weights(Plan& p, int call, const Options& o) {
  {
    const Call& c = p.calls.at(size_t(call));
    const Kernel& k = p.kernels.at(size_t(c.kernel));
    if (k.attrs.s("cl_family") != kFamilyName) return false;
    GemmDesc d;
    if (!describe(p, c, k, d) || d.packed_w || d.M != 1 || !d.batch.empty()) return false;
    const Buffer& B = in_buf(p, c, 1);
    if (B.kind != BufferKind::Constant || B.layout != Layout::Linear || B.shape.size() != 2) return false;
    for (const PostOp& po : k.post_ops)
      if (po.input == 1 || po.input == 2) return false;  // operands we would replace
  }
  Call& c = p.calls.at(size_t(call));
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  GemmDesc d;
  describe(p, c, k, d);
  const int64_t K4 = div_up(d.K, kBlock), N4 = div_up(d.N, kBlock);
  auto value_at = [&](const Buffer& buf, const uint8_t* data, int64_t idx) -> float {
    if (buf.dtype == DType::F16) {
      uint16_t h;
      std::memcpy(&h, data + idx * 2, 2);
      return half_to_float(h);
    }
    float f;
    std::memcpy(&f, data + idx * 4, 4);
    return f;
  };
  // Weights: block (nb, kb) holds B'(4kb+kk, 4nb+nn) at [kk][nn].
  const int wsrc = c.inputs[1];
  std::vector<uint16_t> w(size_t(K4 * N4 * kBlock * kBlock), 0);
  {
    const Buffer& B = p.buffers.at(size_t(wsrc));
    const uint8_t* data = p.constant_data(wsrc);
    for (int64_t kk = 0; kk < d.K; ++kk)
      for (int64_t n = 0; n < d.N; ++n) {
        const size_t at = size_t(((n / kBlock * K4 + kk / kBlock) * kBlock + kk % kBlock) * kBlock + n % kBlock);
        w[at] = float_to_half(value_at(B, data, kk * d.bk + n * d.bn));
      }
  }
  std::vector<uint8_t> wbytes(w.size() * 2);
  std::memcpy(wbytes.data(), w.data(), wbytes.size());
  const int wid = add_packed_constant(p, wsrc, kPackGemvWeights, DType::F16, {N4, K4, kBlock, kBlock}, wbytes);
  // Bias: a constant C that varies along n only (or not at all) becomes F32 [N4*4].
  int bid = -1;
  if (d.has_c && d.csm == 0 && p.buffers.at(size_t(c.inputs[2])).kind == BufferKind::Constant) {
    const int csrc = c.inputs[2];
    const Buffer& C = p.buffers.at(size_t(csrc));
    const uint8_t* data = p.constant_data(csrc);
    std::vector<float> bias(size_t(N4 * kBlock), 0.f);
    for (int64_t n = 0; n < d.N; ++n) bias[size_t(n)] = value_at(C, data, n * d.csn);
    std::vector<uint8_t> bbytes(bias.size() * 4);
    std::memcpy(bbytes.data(), bias.data(), bbytes.size());
    bid = add_packed_constant(p, csrc, kPackGemvBias, DType::F32, {N4 * kBlock}, bbytes);
  }
  p.calls[size_t(call)].inputs[1] = wid;
  if (bid >= 0) p.calls[size_t(call)].inputs[2] = bid;
  regenerate(p, call, o);
  // Calls of identical shape share one kernel again (regenerate gave this call its own copy).
  Call& rc = p.calls[size_t(call)];
  const Kernel& mine = p.kernels[size_t(rc.kernel)];
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const Kernel& o = p.kernels[i];
    if (int(i) == rc.kernel || o.source != mine.source || o.entry != mine.entry || o.options != mine.options ||
        o.name != mine.name || o.op != mine.op || !(o.attrs == mine.attrs) || !(o.post_ops == mine.post_ops))
      continue;
    rc.kernel = int(i);
    break;
  }
  return true;
}

}  // namespace opv::plan::cl::lin
