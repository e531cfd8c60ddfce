// Fused steps of the cpu backend: one prepared step for a group of consecutive plan calls,
// chosen at load when the calls match a pattern; everything else keeps one step per call.
//
//  * GEMV runs: a maximal run (>= 2) of consecutive Gemm calls with one input row (A is
//    1xK, transA=0, alpha=beta=1, constant B, constant bias or none, at most a Relu post-op),
//    e.g. openpilot's fifteen MLP heads. They run in ONE OpenMP region instead of one oneDNN
//    matmul each: the calls are put into levels (a call goes one level after every earlier
//    call of the run it depends on or whose memory it overlaps), each level's rows of all its
//    GEMVs are split over the threads by cost, and threads meet at a barrier between levels.
//    So the fourteen head GEMVs that read the same hidden vector are one pass over their
//    weights. Intermediates that only the run itself reads get private storage (the memory
//    planner lets them share arena bytes, which would serialise the levels). The weights are
//    read in place (row-major, as in the plan), so no packed copy is kept -- except that a
//    matrix whose every value is an fp16 value (an fp16 model's weights, widened to fp32 by the
//    compiler) is read from an fp16 copy of itself (AVX-512 with BW/VL): the same values, so the
//    same products and sums in the same order (bit-identical), from half the bytes. At batch 1
//    these GEMVs stream their weights from memory once per inference (the fixture's 15.5 MB of
//    fp32 took 1.0 ms of its 16 ms at one thread), so the bytes are their time.
//  * Input normalisation: Cast u8 -> f32 with per-channel/scalar Sub/Div/Mul/Add post-ops whose
//    only reader is a Reorder to NHWC become one pass that reads the uint8 NCHW image and writes
//    normalised NHWC floats. Bit-identical: the op chain of each (channel, value) is computed once
//    at load, with the same float operations in the same order, into a 256-entry table a
//    channel, and the pass looks elements up (16 pixels at a time with AVX-512 gathers).
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"
#include "core/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns inside its own _mm512_reduce_add_ps (an undefined-vector idiom): a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace opv::backend::cpu {
namespace {

struct Range {
  const char* lo = nullptr;
  const char* hi = nullptr;
  bool overlaps(const Range& o) const { return lo < o.hi && o.lo < hi; }
};
Range range_of(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  return {c, c + std::max<int64_t>(bytes, 1)};
}

// ---- GEMV runs ----------------------------------------------------------------------------

struct Gemv {
  const float* x = nullptr;
  const float* w = nullptr;  // transB: [N, K] row-major; else [K, N]
  const uint16_t* wh = nullptr;  // where set: w's values as fp16 (exact), read instead of w
  const float* b = nullptr;  // [N] or null
  float* y = nullptr;
  int64_t N = 0, K = 0;
  bool trans_b = true, relu = false;
  int level = 0;
};

bool simple_gemv(const plan::Plan& p, const std::vector<BufView>& views, size_t ci, Gemv& g) {
  const plan::Call& call = p.calls[ci];
  const plan::Kernel& k = p.kernels[size_t(call.kernel)];
  if (k.op != OpKind::Gemm || call.outputs.size() != 1 || call.inputs.size() < 2 || call.inputs.size() > 3) return false;
  if (call.inputs[0] < 0 || call.inputs[1] < 0) return false;
  const BufView &A = views[size_t(call.inputs[0])], &B = views[size_t(call.inputs[1])], &y = views[size_t(call.outputs[0])];
  const Attrs& at = k.attrs;
  if (at.i("transA", 0) != 0 || at.f("alpha", 1.0) != 1.0) return false;
  const bool tb = at.i("transB", 0) != 0;
  for (const BufView* v : {&A, &B, &y})
    if (v->dtype != DType::F32 || v->layout != plan::Layout::Linear || v->shape.size() != 2) return false;
  if (A.shape[0] != 1 || !B.is_const()) return false;
  const int64_t K = A.shape[1], N = tb ? B.shape[0] : B.shape[1];
  if ((tb ? B.shape[1] : B.shape[0]) != K || y.shape != Shape({1, N}) || K < 1 || N < 1) return false;
  const float* bias = nullptr;
  if (call.inputs.size() == 3 && call.inputs[2] >= 0) {
    const BufView& C = views[size_t(call.inputs[2])];
    if (at.f("beta", 1.0) != 1.0 || !C.is_const() || C.dtype != DType::F32 || numel(C.shape) != N) return false;
    if (!(C.shape == Shape({N}) || C.shape == Shape({1, N}))) return false;
    bias = static_cast<const float*>(C.ptr);
  }
  bool relu = false;
  if (k.post_ops.size() > 1) return false;
  if (k.post_ops.size() == 1) {
    if (k.post_ops[0].op != OpKind::Relu) return false;
    relu = true;
  }
  if (range_of(A.ptr, A.bytes).overlaps(range_of(y.ptr, y.bytes))) return false;
  g = Gemv{static_cast<const float*>(A.ptr), static_cast<const float*>(B.ptr), nullptr, bias, static_cast<float*>(y.ptr),
           N, K, tb, relu, 0};
  return true;
}

inline float finish_value(float acc, const float* b, int64_t n, bool relu) {
  float v = acc + (b ? b[n] : 0.f);
  return relu ? std::max(v, 0.f) : v;
}

// y[r] for r in [r0, r1) of a transB GEMV (rows of W contiguous).
void rows_scalar(const Gemv& g, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* w = g.w + r * g.K;
    float acc = 0.f;
    for (int64_t k = 0; k < g.K; ++k) acc += w[k] * g.x[k];
    g.y[r] = finish_value(acc, g.b, r, g.relu);
  }
}
// y[n] for n in [n0, n1) of a plain GEMV (W is [K, N]).
void cols_scalar(const Gemv& g, int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; ++n) {
    float acc = 0.f;
    for (int64_t k = 0; k < g.K; ++k) acc += g.x[k] * g.w[k * g.N + n];
    g.y[n] = finish_value(acc, g.b, n, g.relu);
  }
}

#if defined(__x86_64__)
// 16 weights from fp32 (H = false) or from their fp16 copy (H = true; exact widening), at
// element offset `off` of the matrix; masked loads read nothing past the mask.
template <bool H>
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512 load_w(const Gemv& g, int64_t off) {
  if constexpr (H)
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.wh + off)));
  else
    return _mm512_loadu_ps(g.w + off);
}
template <bool H>
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512 load_w(const Gemv& g, int64_t off, __mmask16 m) {
  if constexpr (H)
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, g.wh + off));
  else
    return _mm512_maskz_loadu_ps(m, g.w + off);
}

template <bool H>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void rows_avx512(const Gemv& g, int64_t r0, int64_t r1) {
  const int64_t K = g.K, kv = K & ~int64_t(15);
  const __mmask16 tail = __mmask16((1u << (K - kv)) - 1u);
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    const int64_t o = r * K;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t k = 0; k < kv; k += 16) {
      const __m512 xv = _mm512_loadu_ps(g.x + k);
      a0 = _mm512_fmadd_ps(load_w<H>(g, o + k), xv, a0);
      a1 = _mm512_fmadd_ps(load_w<H>(g, o + K + k), xv, a1);
      a2 = _mm512_fmadd_ps(load_w<H>(g, o + 2 * K + k), xv, a2);
      a3 = _mm512_fmadd_ps(load_w<H>(g, o + 3 * K + k), xv, a3);
    }
    if (tail) {
      const __m512 xv = _mm512_maskz_loadu_ps(tail, g.x + kv);
      a0 = _mm512_fmadd_ps(load_w<H>(g, o + kv, tail), xv, a0);
      a1 = _mm512_fmadd_ps(load_w<H>(g, o + K + kv, tail), xv, a1);
      a2 = _mm512_fmadd_ps(load_w<H>(g, o + 2 * K + kv, tail), xv, a2);
      a3 = _mm512_fmadd_ps(load_w<H>(g, o + 3 * K + kv, tail), xv, a3);
    }
    g.y[r] = finish_value(_mm512_reduce_add_ps(a0), g.b, r, g.relu);
    g.y[r + 1] = finish_value(_mm512_reduce_add_ps(a1), g.b, r + 1, g.relu);
    g.y[r + 2] = finish_value(_mm512_reduce_add_ps(a2), g.b, r + 2, g.relu);
    g.y[r + 3] = finish_value(_mm512_reduce_add_ps(a3), g.b, r + 3, g.relu);
  }
  for (; r < r1; ++r) {
    const int64_t o = r * K;
    __m512 a = _mm512_setzero_ps();
    for (int64_t k = 0; k < kv; k += 16) a = _mm512_fmadd_ps(load_w<H>(g, o + k), _mm512_loadu_ps(g.x + k), a);
    if (tail) a = _mm512_fmadd_ps(load_w<H>(g, o + kv, tail), _mm512_maskz_loadu_ps(tail, g.x + kv), a);
    g.y[r] = finish_value(_mm512_reduce_add_ps(a), g.b, r, g.relu);
  }
}

template <bool H>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void cols_avx512(const Gemv& g, int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; n += 64) {
    const int64_t m = std::min<int64_t>(64, n1 - n);
    __mmask16 mk[4];
    for (int j = 0; j < 4; ++j) {
      const int64_t left = std::clamp<int64_t>(m - 16 * j, 0, 16);
      mk[j] = __mmask16(left == 16 ? 0xFFFFu : (1u << left) - 1u);
    }
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t k = 0; k < g.K; ++k) {
      const __m512 xv = _mm512_set1_ps(g.x[k]);
      const int64_t o = k * g.N + n;
      for (int j = 0; j < 4; ++j) a[j] = _mm512_fmadd_ps(load_w<H>(g, o + 16 * j, mk[j]), xv, a[j]);
    }
    for (int j = 0; j < 4; ++j) {
      if (g.b) a[j] = _mm512_add_ps(a[j], _mm512_maskz_loadu_ps(mk[j], g.b + n + 16 * j));
      if (g.relu) a[j] = _mm512_max_ps(a[j], _mm512_setzero_ps());
      _mm512_mask_storeu_ps(g.y + n + 16 * j, mk[j], a[j]);
    }
  }
}

// The fp16 copy of n fp32 values, or an empty vector when any of them is not an fp16 value
// (exactly: its round trip through fp16 gives the same bits; NaNs count as not).
__attribute__((target("avx512f,avx512bw,avx512vl"))) std::vector<uint16_t> exact_f16(const float* w, int64_t n) {
  std::vector<uint16_t> h(static_cast<size_t>(n));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(w + i);
    const __m256i hv = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 back = _mm512_cvtph_ps(hv);
    if (_mm512_cmpneq_epi32_mask(_mm512_castps_si512(back), _mm512_castps_si512(v)) != 0) return {};
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(h.data() + i), hv);
  }
  for (; i < n; ++i) {
    const uint16_t b = float_to_half(w[i]);
    const float back = half_to_float(b);
    if (std::memcmp(&back, w + i, 4) != 0) return {};
    h[size_t(i)] = b;
  }
  return h;
}
#endif

bool have_avx512() {
#if defined(__x86_64__)
  static const bool yes =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return yes;
#else
  return false;
#endif
}

void run_piece(const Gemv& g, int64_t r0, int64_t r1) {
#if defined(__x86_64__)
  if (have_avx512()) {
    if (g.trans_b)
      g.wh ? rows_avx512<true>(g, r0, r1) : rows_avx512<false>(g, r0, r1);
    else
      g.wh ? cols_avx512<true>(g, r0, r1) : cols_avx512<false>(g, r0, r1);
    return;
  }
#endif
  if (g.trans_b)
    rows_scalar(g, r0, r1);
  else
    cols_scalar(g, r0, r1);
}

struct Piece {
  int gemv;
  int64_t r0, r1;
};

FusedStep build_gemv_run(const FuseInfo& f, const std::vector<BufView>& views, size_t first, int threads) {
  const plan::Plan& p = f.plan;
  std::vector<Gemv> gs;
  size_t end = first;
  for (; end < p.calls.size(); ++end) {
    Gemv g;
    if (!simple_gemv(p, views, end, g)) break;
    gs.push_back(g);
  }
  if (gs.size() < 2) return {};
  // The fp16 copies of the matrices that hold fp16 values only (the header says why). Shared, so
  // the step function's copies keep the pointers that gs holds valid.
  auto halves = std::make_shared<std::vector<std::vector<uint16_t>>>();
#if defined(__x86_64__)
  if (have_avx512()) {
    halves->reserve(gs.size());
    for (Gemv& g : gs)
      if (std::vector<uint16_t> h = exact_f16(g.w, g.N * g.K); !h.empty()) {
        halves->push_back(std::move(h));
        g.wh = halves->back().data();
      }
  }
#endif

  // Private storage for intermediates read only inside the run.
  auto inside = [&](int c) { return c >= int(first) && c < int(end); };
  std::vector<int64_t> priv_off(p.buffers.size(), -1);
  int64_t priv_bytes = 0;
  for (size_t ci = first; ci < end; ++ci) {
    const int id = p.calls[ci].outputs[0];
    const plan::Buffer& b = p.buffers[size_t(id)];
    if (b.kind != plan::BufferKind::Intermediate || f.is_output[size_t(id)] || priv_off[size_t(id)] >= 0) continue;
    const auto& rd = f.readers[size_t(id)];
    if (rd.empty() || !std::all_of(rd.begin(), rd.end(), inside)) continue;
    priv_off[size_t(id)] = priv_bytes;
    priv_bytes += plan::align_up(b.bytes);
  }
  std::shared_ptr<float> priv;
  if (priv_bytes > 0) {
    priv.reset(static_cast<float*>(std::aligned_alloc(size_t(plan::kAlign), size_t(priv_bytes))),
               [](float* q) { std::free(q); });
    OPV_CHECK(priv, "cpu backend: out of memory allocating ", priv_bytes, " bytes for a GEMV run");
    std::memset(priv.get(), 0, size_t(priv_bytes));
  }
  auto where = [&](int id) -> char* {
    if (priv_off[size_t(id)] >= 0) return reinterpret_cast<char*>(priv.get()) + priv_off[size_t(id)];
    return static_cast<char*>(views[size_t(id)].ptr);
  };
  // Effective memory of each call: reads (A) and writes (y), after the redirection.
  std::vector<Range> rd(gs.size()), wr(gs.size());
  for (size_t i = 0; i < gs.size(); ++i) {
    const plan::Call& call = p.calls[first + i];
    const int a = call.inputs[0], y = call.outputs[0];
    gs[i].x = reinterpret_cast<const float*>(where(a));
    gs[i].y = reinterpret_cast<float*>(where(y));
    rd[i] = range_of(gs[i].x, gs[i].K * 4);
    wr[i] = range_of(gs[i].y, gs[i].N * 4);
  }
  // Levels: after every earlier call that this one reads from, writes over, or overwrites.
  int levels = 0;
  for (size_t i = 0; i < gs.size(); ++i) {
    int lv = 0;
    for (size_t j = 0; j < i; ++j)
      if (wr[j].overlaps(rd[i]) || wr[j].overlaps(wr[i]) || rd[j].overlaps(wr[i])) lv = std::max(lv, gs[j].level + 1);
    gs[i].level = lv;
    levels = std::max(levels, lv + 1);
  }
  // Per level, split the rows (transB) / column blocks of all its GEMVs over `threads` parts
  // of about equal cost (N*K multiply-adds), cut at multiples of 16 rows.
  const int T = std::max(1, threads);
  using Parts = std::vector<std::vector<Piece>>;
  std::vector<Parts> parts(static_cast<size_t>(levels), Parts(static_cast<size_t>(T)));
  for (int lv = 0; lv < levels; ++lv) {
    int64_t total = 0;
    for (const Gemv& g : gs)
      if (g.level == lv) total += g.N * g.K;
    int64_t done = 0;
    for (size_t i = 0; i < gs.size(); ++i) {
      const Gemv& g = gs[i];
      if (g.level != lv) continue;
      int64_t r = 0;
      while (r < g.N) {
        const int t = int(std::min<int64_t>(T - 1, done * T / std::max<int64_t>(total, 1)));
        // rows left until thread t's share ends
        const int64_t share_end = (int64_t(t) + 1) * total / T;
        int64_t take = (share_end - done + g.K - 1) / g.K;
        take = std::clamp<int64_t>((take + 15) / 16 * 16, 16, g.N - r);
        if (t == T - 1) take = g.N - r;
        parts[size_t(lv)][size_t(t)].push_back(Piece{int(i), r, r + take});
        r += take;
        done += take * g.K;
      }
    }
  }
  FusedStep s;
  s.calls = end - first;
  s.what = detail::concat(gs.size(), " GEMVs in ", levels, " levels, one OpenMP region");
  if (!halves->empty()) s.what += detail::concat(", ", halves->size(), " of the matrices read as fp16 (exact)");
  s.fn = [gs = std::move(gs), parts = std::move(parts), priv, halves, T] {
    (void)halves;
    auto work = [&](int t, int nt) {
      for (size_t lv = 0; lv < parts.size(); ++lv) {
        for (int q = t; q < T; q += nt)
          for (const Piece& pc : parts[lv][size_t(q)]) run_piece(gs[size_t(pc.gemv)], pc.r0, pc.r1);
        if (nt > 1 && lv + 1 < parts.size()) {
#pragma omp barrier
        }
      }
    };
    if (T == 1) {
      work(0, 1);
      return;
    }
#pragma omp parallel num_threads(T)
    work(omp_get_thread_num(), omp_get_num_threads());
  };
  return s;
}

// ---- input normalisation ------------------------------------------------------------------

constexpr int64_t kNormTileC = 64;  // channels the vector form stages (more: the scalar loop)

// One image row: out[w * C + c] = lut[c * 256 + in[c * plane + w]] for w < W, c < C.
void norm_row_scalar(const uint8_t* in, int64_t plane, const float* lut, float* out, int64_t C, int64_t W) {
  for (int64_t w = 0; w < W; ++w)
    for (int64_t c = 0; c < C; ++c) out[w * C + c] = lut[size_t(c * 256 + in[c * plane + w])];
}

#if defined(__x86_64__)
// The same with AVX-512: 16 pixels at a time, each channel's 16 bytes widened and looked up with
// one gather into a [C][16] tile, then each pixel's C values gathered out of the tile and stored
// contiguously (the NCHW -> NHWC transpose).
__attribute__((target("avx512f,avx512bw,avx512vl"))) void norm_row_avx512(const uint8_t* in, int64_t plane,
                                                                           const float* lut, float* out, int64_t C,
                                                                           int64_t W) {
  alignas(64) float tile[kNormTileC * 16];
  const __m512i lanes16 = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(16));
  for (int64_t w0 = 0; w0 < W; w0 += 16) {
    const int64_t n = std::min<int64_t>(16, W - w0);
    const __mmask16 m = __mmask16(n == 16 ? 0xFFFFu : (1u << n) - 1u);
    for (int64_t c = 0; c < C; ++c) {
      const __m128i b = _mm_maskz_loadu_epi8(m, in + c * plane + w0);
      const __m512i idx = _mm512_add_epi32(_mm512_cvtepu8_epi32(b), _mm512_set1_epi32(int(c * 256)));
      _mm512_store_ps(tile + c * 16, _mm512_i32gather_ps(idx, lut, 4));
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c0 = 0; c0 < C; c0 += 16) {
        const int64_t k = std::min<int64_t>(16, C - c0);
        const __mmask16 mk = __mmask16(k == 16 ? 0xFFFFu : (1u << k) - 1u);
        const __m512i ix = _mm512_add_epi32(lanes16, _mm512_set1_epi32(int(c0 * 16 + i)));
        _mm512_mask_storeu_ps(out + (w0 + i) * C + c0, mk,
                              _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk, ix, tile, 4));
      }
  }
}
#endif

FusedStep build_input_norm(const FuseInfo& f, std::vector<BufView>& views, size_t first, int threads) {
  const plan::Plan& p = f.plan;
  if (first + 1 >= p.calls.size()) return {};
  const plan::Call &cc = p.calls[first], &rc = p.calls[first + 1];
  const plan::Kernel &ck = p.kernels[size_t(cc.kernel)], &rk = p.kernels[size_t(rc.kernel)];
  if (ck.op != OpKind::Cast || rk.op != OpKind::Reorder || cc.outputs.size() != 1 || rc.outputs.size() != 1 ||
      cc.inputs.empty() || cc.inputs[0] < 0 || rc.inputs.size() != 1 || rc.inputs[0] != cc.outputs[0])
    return {};
  const int mid = cc.outputs[0];
  if (f.is_output[size_t(mid)] || f.readers[size_t(mid)] != std::vector<int>{int(first + 1)}) return {};
  const BufView &x = views[size_t(cc.inputs[0])], &m = views[size_t(mid)], &y = views[size_t(rc.outputs[0])];
  if (x.dtype != DType::U8 || m.dtype != DType::F32 || y.dtype != DType::F32 || x.shape.size() != 4 ||
      x.shape != m.shape || m.shape != y.shape || x.layout != plan::Layout::Linear ||
      m.layout != plan::Layout::Linear || y.layout != plan::Layout::NHWC)
    return {};
  // A round_to attribute (fp16 storage) is the identity on uint8 values.
  if (ck.attrs.has("round_to") && ck.attrs.i("round_to") != int64_t(DType::F16)) return {};
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  struct Op {
    OpKind op;
    bool swapped;
    std::vector<float> v;  // per channel
  };
  std::vector<Op> ops;
  for (const PostOp& po : ck.post_ops) {
    if (po.op != OpKind::Sub && po.op != OpKind::Div && po.op != OpKind::Mul && po.op != OpKind::Add) return {};
    if (po.input < 0 || size_t(po.input) >= cc.inputs.size() || cc.inputs[size_t(po.input)] < 0) return {};
    const BufView& o = views[size_t(cc.inputs[size_t(po.input)])];
    if (!o.is_const() || o.dtype != DType::F32 || o.layout != plan::Layout::Linear || o.shape.size() > 4) return {};
    Shape pad(4 - o.shape.size(), 1);
    pad.insert(pad.end(), o.shape.begin(), o.shape.end());
    if (pad[0] != 1 || pad[2] != 1 || pad[3] != 1 || (pad[1] != 1 && pad[1] != C)) return {};
    Op op{po.op, po.swapped, std::vector<float>(size_t(C))};
    const float* src = static_cast<const float*>(o.ptr);
    for (int64_t c = 0; c < C; ++c) op.v[size_t(c)] = src[pad[1] == 1 ? 0 : c];
    ops.push_back(std::move(op));
  }
  FusedStep s;
  s.calls = 2;
  s.what = "uint8 NCHW -> normalised f32 NHWC in one pass";
  const uint8_t* xs = static_cast<const uint8_t*>(x.ptr);
  float* ys = static_cast<float*>(y.ptr);
  // The memory planner may put the NHWC result over the uint8 image (dead once the Cast ran);
  // a single pass needs both at once, so the result then gets its own storage, which every
  // later reader sees through the (mutable) views.
  std::shared_ptr<float> own;
  if (range_of(x.ptr, x.bytes).overlaps(range_of(y.ptr, y.bytes))) {
    const int yid = rc.outputs[0];
    if (y.kind != plan::BufferKind::Intermediate || f.is_output[size_t(yid)]) return {};
    own.reset(static_cast<float*>(std::aligned_alloc(size_t(plan::kAlign), size_t(plan::align_up(y.bytes)))),
              [](float* q) { std::free(q); });
    OPV_CHECK(own, "cpu backend: out of memory allocating ", y.bytes, " bytes for the input pass");
    std::memset(own.get(), 0, size_t(y.bytes));
    ys = own.get();
    views[size_t(yid)].ptr = ys;
    s.what += " (result in its own storage: the plan overlaps it with the image)";
  }
  // A uint8 input has 256 values a channel: the op chain of every (channel, value) is computed
  // once here, in the same float operations and order, so the pass is a table lookup an element
  // (bit-identical to applying the chain element by element) written straight in NHWC order.
  std::vector<float> lut(size_t(C) * 256);
  for (int64_t c = 0; c < C; ++c)
    for (int v = 0; v < 256; ++v) {
      float r = float(v);
      for (const Op& op : ops) {
        const float k = op.v[size_t(c)];
        switch (op.op) {
          case OpKind::Sub: r = op.swapped ? k - r : r - k; break;
          case OpKind::Div: r = op.swapped ? k / r : r / k; break;
          case OpKind::Mul: r = r * k; break;
          default: r = r + k; break;
        }
      }
      lut[size_t(c * 256 + v)] = r;
    }
  const int T = std::max(1, threads);
  bool vec = false;
#if defined(__x86_64__)
  vec = C <= kNormTileC && have_avx512();
#endif
  s.fn = [=, own = std::move(own), lut = std::move(lut)] {
    (void)own;
#pragma omp parallel for collapse(2) num_threads(T) schedule(static) if (T > 1)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t h = 0; h < H; ++h) {
        float* out = ys + (n * H + h) * W * C;
        const uint8_t* in = xs + (n * C * H + h) * W;  // channel c's row at in + c * H * W
#if defined(__x86_64__)
        if (vec) {
          norm_row_avx512(in, H * W, lut.data(), out, C, W);
          continue;
        }
#endif
        norm_row_scalar(in, H * W, lut.data(), out, C, W);
      }
  };
  return s;
}

}  // namespace

FuseInfo::FuseInfo(const plan::Plan& p) : plan(p), readers(p.buffers.size()), is_output(p.buffers.size(), false) {
  for (size_t ci = 0; ci < p.calls.size(); ++ci)
    for (int id : p.calls[ci].inputs)
      if (id >= 0 && size_t(id) < readers.size() &&
          (readers[size_t(id)].empty() || readers[size_t(id)].back() != int(ci)))
        readers[size_t(id)].push_back(int(ci));
  for (int id : p.outputs)
    if (id >= 0 && size_t(id) < is_output.size()) is_output[size_t(id)] = true;
}

FusedStep build_fused_step(const FuseInfo& f, std::vector<BufView>& views, size_t first, int threads) {
  if (FusedStep s = build_input_norm(f, views, first, threads); s.calls) return s;
  if (FusedStep s = build_gemv_run(f, views, first, threads); s.calls) return s;
  return {};
}

}  // namespace opv::backend::cpu
