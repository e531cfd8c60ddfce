/* The squeeze-excitation gate of target "cuda" as one launch (part of plan pass "cuda-codegen",
 * codegen.h; Options::fuse_se, on by default):
 *   1. fuse_se: four consecutive calls
 *        R   a mean over the whole map (ReduceMean over axes {2, 3} with keepdims, or
 *            GlobalAveragePool) of an fp16 NCHW X [N, C, H, W], no post-ops;
 *        F1  a dense fp16 1x1 conv on R's output (a 1x1 map), unary post-ops (ReLU);
 *        F2  a dense fp16 1x1 conv on F1's output, unary post-ops (Sigmoid), output [N, C, 1, 1];
 *        M   Mul of X and F2's output (either order), unary post-ops (GELU), output X's shape;
 *      where R's, F1's and F2's outputs are each read only by the next call, become one call
 *      (cuda_abi.h "SE gate"), provided F1 and F2 each take a kernel form that se_gate repeats
 *      exactly (below); any other case keeps the four calls.
 *   2. se_gate: that call's kernel. A block of kSeThreads threads takes image n and kSeRows
 *      channels of the gate: it pools all C channels of its image, computes all of F1's outputs,
 *      its kSeRows of F2's, and scales its channels of X. Every block pools and computes F1 again
 *      (a few hundred KB from L2 a block; no inter-block communication, so no workspace, counter
 *      or co-residency assumption). From compute_90 (Options::cluster), where F1 is a GEMV and an
 *      image has 2..kSeMaxCluster blocks, the image's blocks are one thread-block cluster instead:
 *      each pools only its own gate channels and computes ceil(Hd / blocks) of F1's rows, storing
 *      both into every block's shared memory (st.shared::cluster; a cluster barrier after each),
 *      so a block reads its slice of X and 1/blocks of W1 rather than all of both.
 * Numerics (the invariant): the fused call's outputs are bit-identical to the four calls':
 *   - R: per channel the H*W elements added in float in row-major order from 0.0f, divided by
 *     the float literal H*W, rounded to fp16 (reduce() in codegen.cpp; 16-byte loads where H*W
 *     % 8 == 0 change no order);
 *   - F1/F2: the form their own call would get (the plan records it, kernel attr
 *     "cuda_se_forms"): 1 = GEMV (conv1x1_gemv: lane l sums channels l*8 + 256j, j = 0.., with
 *     opv_dot8, then opv_warp_sum; lane 0's total), 2 = tensor cores (conv1x1_mma with one tile
 *     column and no split-K: per K group wk of mma_shape's WK, an mma.sync m16n8k16 chain over
 *     stage st, step ks at channels st*KC + wk*(KC/WK) + ks*16, zeros past K, the groups' results
 *     added in order 0..WK-1; the same instruction on the same row and column gives the same
 *     float); then + bias, the call's post-ops, rounded to fp16 (as each stored output is);
 *   - M: X * gate in float (fp16 values), the post-ops, rounded to fp16 (elementwise()).
 * Plan form: one call, output = M's, inputs = [X, W1, B1, W2, B2] (absent bias -1); kernel = R's
 * with "cuda_se" = 1, "cl_batch" = 4, "cuda_se_forms" = [F1's, F2's], post-ops = F1's, F2's, M's,
 * "cuda_batch_post_ops" = their counts.
 */
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "plan/layout.h"
#include "target/c_expr.h"
#include "target/cuda/codegen_internal.h"

namespace opv::plan::cuda::detail {

constexpr int kSeThreads = 512;                          // 16 warps a block
constexpr int kSeWarps = kSeThreads / kWarp;
constexpr int64_t kSeRows = 128;                         // gate channels (F2 outputs) a block
constexpr int64_t kSeSmemBytes = 40 << 10;               // pooled + hidden vectors + gate, at most
constexpr int64_t kSeXVectors = 4;                      // M's prefetched 16-byte vectors a thread, at most
constexpr int kSeGemv = 1, kSeMma = 2;                   // member forms ("cuda_se_forms")
constexpr int64_t kSeMaxCluster = 8;                     // blocks an image as one cluster, at most

// The form the 1x1 conv call `c` on a 1x1 map gets in generate() (kSeGemv, kSeMma with one
// tile column and no split-K), or 0 when it is neither (the fusion then leaves the calls alone).
static int se_fc_form(const Plan& p, const Call& c) {
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  if (k.op != OpKind::Conv || !k.source.empty() || k.attrs.i("cl_batch", 0) > 0 || c.outputs.size() != 1 ||
      c.inputs.size() < 2 || c.inputs.size() > 3 || c.inputs[0] < 0 || c.inputs[1] < 0)
    return 0;
  Ctx x{p, c, k};
  x.sm = plan_sm(p);
  if (!conv1x1_tiled_ok(x)) return 0;
  const Shape& xs = x.in(0).shape;
  if (xs[2] != 1 || xs[3] != 1 || x.in(0).dtype != DType::F16 || x.in(1).dtype != DType::F16 ||
      x.out().dtype != DType::F16 || nhwc_stored(x.out()))
    return 0;
  if (x.has(2) && !is_float(x.in(2).dtype)) return 0;
  for (const PostOp& po : k.post_ops)
    if (po.input >= 0 || unary_expr(po, "v").empty()) return 0;
  if (numel(x.out().shape) <= kSplitMaxOutputs && conv1x1_gemv_ok(x)) return kSeGemv;
  if (!conv1x1_mma_ok(x)) return 0;
  return mma_shape(xs[0], x.out().shape[1], 1, xs[1], false, tune_spec(TuneKey::MmaBlocks).dflt).S == 1 ? kSeMma : 0;
}

static bool se_mean_ok(const Plan& p, const Call& r) {
  const Kernel& k = p.kernels.at(size_t(r.kernel));
  if (!k.source.empty() || k.attrs.i("cl_batch", 0) > 0 || !k.post_ops.empty() || r.outputs.size() != 1 ||
      r.inputs.size() != 1 || r.inputs[0] < 0)
    return false;
  if (k.op == OpKind::ReduceMean) {
    std::vector<int64_t> axes = k.attrs.ints("axes");
    std::sort(axes.begin(), axes.end());
    if (axes != std::vector<int64_t>{2, 3}) return false;
  } else if (k.op != OpKind::GlobalAveragePool) {
    return false;
  }
  const Buffer& X = p.buffers.at(size_t(r.inputs[0]));
  const Buffer& Y = p.buffers.at(size_t(r.outputs[0]));
  return X.shape.size() == 4 && X.dtype == DType::F16 && Y.dtype == DType::F16 &&
         (X.layout == Layout::Linear || layout_free(X.shape)) && !nhwc_stored(Y) &&
         Y.shape == Shape{X.shape[0], X.shape[1], 1, 1} && numel(X.shape) > 0 && numel(X.shape) < INT32_MAX / 2;
}

// Whether the SE call of plan p over C channels with F1 form `f1` runs as a cluster (se_gate()).
static bool se_cluster(const Plan& p, int64_t C, int64_t f1) {
  const int64_t MB = (C + kSeRows - 1) / kSeRows;
  return plan_sm(p) >= 90 && Options::from_meta(p.meta).cluster && f1 == kSeGemv && MB >= 2 && MB <= kSeMaxCluster;
}

void fuse_se(Plan& p) {
  if (plan_sm(p) < 80) return;  // the tensor-core form of F1/F2 needs compute_80 (GEMV-only SEs stay apart too)
  const std::vector<int> readers = reader_counts(p);
  auto only_next = [&](int b) {
    return b >= 0 && readers.at(size_t(b)) == 1 && p.buffers.at(size_t(b)).kind == BufferKind::Intermediate;
  };
  std::vector<Call> calls;
  for (size_t i = 0; i < p.calls.size(); ++i) {
    bool ok = i + 3 < p.calls.size() && se_mean_ok(p, p.calls[i]);
    int f1 = 0, f2 = 0;
    if (ok) {
      const Call &r = p.calls[i], &a = p.calls[i + 1], &b = p.calls[i + 2], &m = p.calls[i + 3];
      const Kernel& mk = p.kernels.at(size_t(m.kernel));
      const Buffer& X = p.buffers.at(size_t(r.inputs[0]));
      f1 = se_fc_form(p, a);
      f2 = f1 ? se_fc_form(p, b) : 0;
      ok = f2 && a.inputs[0] == r.outputs[0] && only_next(r.outputs[0]) && b.inputs[0] == a.outputs[0] &&
           only_next(a.outputs[0]) && only_next(b.outputs[0]) &&
           p.buffers.at(size_t(b.outputs[0])).shape == p.buffers.at(size_t(r.outputs[0])).shape;
      ok = ok && mk.op == OpKind::Mul && mk.source.empty() && mk.attrs.i("cl_batch", 0) == 0 && m.inputs.size() == 2 &&
           m.outputs.size() == 1 &&
           ((m.inputs[0] == r.inputs[0] && m.inputs[1] == b.outputs[0]) ||
            (m.inputs[1] == r.inputs[0] && m.inputs[0] == b.outputs[0]));
      if (ok) {
        const Buffer& Y = p.buffers.at(size_t(m.outputs[0]));
        ok = Y.shape == X.shape && Y.dtype == DType::F16 && (Y.layout == Layout::Linear || layout_free(Y.shape));
        for (const PostOp& po : mk.post_ops) ok = ok && po.input < 0 && !unary_expr(po, "v").empty();
        const int64_t C = X.shape[1], Hd = p.buffers.at(size_t(a.outputs[0])).shape[1];
        ok = ok && (C + Hd + kSeRows) * 2 + 64 <= kSeSmemBytes;
      }
    }
    if (!ok) {
      calls.push_back(p.calls[i]);
      continue;
    }
    const Call &r = p.calls[i], &a = p.calls[i + 1], &b = p.calls[i + 2], &m = p.calls[i + 3];
    const Kernel &ka = p.kernels.at(size_t(a.kernel)), &kb = p.kernels.at(size_t(b.kernel)),
                 &km = p.kernels.at(size_t(m.kernel));
    Kernel k = p.kernels.at(size_t(r.kernel));
    const Shape& xs = p.buffers.at(size_t(r.inputs[0])).shape;
    k.name = "se_gate_" + std::to_string(xs[1]) + "_" + std::to_string(p.buffers.at(size_t(a.outputs[0])).shape[1]) +
             "_" + std::to_string(xs[2] * xs[3]) + "_f16";
    k.post_ops = ka.post_ops;
    k.post_ops.insert(k.post_ops.end(), kb.post_ops.begin(), kb.post_ops.end());
    k.post_ops.insert(k.post_ops.end(), km.post_ops.begin(), km.post_ops.end());
    k.attrs.set("cl_batch", int64_t(4));
    k.attrs.set("cuda_se", int64_t(1));
    k.attrs.set("cuda_se_forms", std::vector<int64_t>{f1, f2});
    k.attrs.set("cuda_batch_post_ops", std::vector<int64_t>{int64_t(ka.post_ops.size()), int64_t(kb.post_ops.size()),
                                                            int64_t(km.post_ops.size())});
    auto in = [](const Call& c, size_t j) { return j < c.inputs.size() ? c.inputs[j] : -1; };
    Call f;
    f.inputs = {r.inputs[0], a.inputs[1], in(a, 2), b.inputs[1], in(b, 2)};
    f.outputs = m.outputs;
    f.label = r.label + "+" + a.label + "+" + b.label + "+" + m.label;
    f.kernel = int(p.kernels.size());
    p.kernels.push_back(std::move(k));
    calls.push_back(std::move(f));
    i += 3;
  }
  p.calls = std::move(calls);
}

// ---- the SE gate's neighbours in its launch (TuneKey::SeFold, opt-in: 1 V and F, 2 D too) -------
// FastViT's final conv is a MobileOne block: a depthwise conv (channel multiplier 2 in the
// fixture), the SE gate, GELU; a 1x1 conv (the fixture's summarize) and a Flatten follow: five
// launches of a few microseconds each at batch 1, on a 4 x 8 map. Each block of the cluster SE
// owns kSeRows gate channels of one image; neither neighbour needs more than that:
//   D  the depthwise conv whose output only the SE reads (any kernel size, stride, padding,
//      dilation and channel multiplier; unary post-ops): each block computes its own channels of
//      it into shared memory, the generic conv's sum (kh, then kw, fmaf from 0 over the taps
//      inside the map, then + bias, the post-ops, rounded to fp16): the bytes D's call stores;
//   V  the dense 1x1 conv that alone reads the SE's output (unary post-ops): each block multiplies
//      its scaled channels (kept in shared memory, rounded to fp16 as the SE's call stores them)
//      into a partial [Cout x H*W] in float (fmaf over its channels in order from 0), and block r
//      of the cluster adds the MB partials of its share of the outputs in rank order, + bias, the
//      post-ops, fp16; a different summation order from V's own call (deterministic);
//   F  with V: a Reshape of V's output that only it reads (the fixture's Flatten): the fused call
//      writes F's output, the same bytes in the same order.
// Plan form: the SE call's inputs, then D's W and B (D's input replaces X in slot 0), then V's W
// and B (absent bias -1); kernel attrs "cuda_se_dw" / "cuda_se_proj" = 1 where taken, "cuda_se_dw"
// holding D's attrs as "cuda_se_dw_*" (strides, pads, dilations); post-ops F1's, F2's, M's, D's,
// V's ("cuda_batch_post_ops" five counts).
constexpr int64_t kSeDwMaxTaps = 49;                // D's taps at most (unrolled)
constexpr int64_t kSeFoldSmemBytes = 46 << 10;      // the fused block's static shared memory at most
// Row pitch (fp16 elements) of the block's channels of X in shared memory: an odd number of
// 4-byte words where H*W is a multiple of 4, so the pool's thread-a-channel reads meet no conflict.
static int64_t se_pitch(int64_t HW) { return HW % 4 == 0 ? HW + 2 : HW; }
// Input channels of D a block stages (its kSeRows output channels read at most this many).
static int64_t se_dw_channels(int64_t cin, int64_t cm) { return std::min(cin, (kSeRows + cm - 1) / cm + 1); }
// Static shared memory of a folded block: the gate's vectors, its channels of X, V's partial
// (vo outputs a pixel) and D's staged input (dw_in halves).
static int64_t se_fold_smem(int64_t C, int64_t Hd, int64_t HW, int64_t vo, int64_t dw_in) {
  return (C + Hd + kSeRows) * 2 + kSeRows * se_pitch(HW) * 2 + vo * HW * 4 + dw_in * 2 + 64;
}

static bool se_dw_ok(const Plan& p, const Call& d, int x, const std::vector<int>& readers) {
  const Kernel& k = p.kernels.at(size_t(d.kernel));
  if (k.op != OpKind::Conv || !k.source.empty() || k.attrs.has("cl_batch") || d.outputs.size() != 1 ||
      d.outputs[0] != x || d.inputs.size() < 2 || d.inputs.size() > 3 || d.inputs[0] < 0 || d.inputs[1] < 0 ||
      readers.at(size_t(x)) != 1 || p.buffers.at(size_t(x)).kind != BufferKind::Intermediate)
    return false;
  for (const PostOp& po : k.post_ops)
    if (po.input >= 0 || unary_expr(po, "v").empty()) return false;
  const Buffer& I = p.buffers.at(size_t(d.inputs[0]));
  const Buffer& W = p.buffers.at(size_t(d.inputs[1]));
  const Buffer& Y = p.buffers.at(size_t(x));
  if (I.shape.size() != 4 || W.shape.size() != 4 || I.dtype != DType::F16 || W.dtype != DType::F16 ||
      !(I.layout == Layout::Linear || layout_free(I.shape)) || numel(I.shape) <= 0 || numel(I.shape) >= INT32_MAX / 2)
    return false;
  const int64_t Cin = I.shape[1], C = Y.shape[1];
  if (Y.shape[0] != I.shape[0] || Cin <= 0 || k.attrs.i("group", 1) != Cin || W.shape[0] != C || W.shape[1] != 1 ||
      C % Cin != 0 || W.shape[2] * W.shape[3] > kSeDwMaxTaps)
    return false;
  const std::vector<int64_t> st = k.attrs.ints("strides", {1, 1}), dl = k.attrs.ints("dilations", {1, 1}),
                             pd = k.attrs.ints("pads", {0, 0, 0, 0});
  if (st.size() != 2 || dl.size() != 2 || pd.size() != 4 || st[0] < 1 || st[1] < 1 || dl[0] < 1 || dl[1] < 1) return false;
  for (int64_t v : pd)
    if (v < 0) return false;
  for (int a = 0; a < 2; ++a)
    if ((I.shape[size_t(2 + a)] + pd[size_t(a)] + pd[size_t(a + 2)] - dl[size_t(a)] * (W.shape[size_t(2 + a)] - 1) - 1) /
                st[size_t(a)] + 1 != Y.shape[size_t(2 + a)])
      return false;
  if (d.inputs.size() > 2 && d.inputs[2] >= 0) {
    const Buffer& B = p.buffers.at(size_t(d.inputs[2]));
    if (numel(B.shape) != C || !is_float(B.dtype)) return false;
  }
  return true;
}

static bool se_proj_ok(const Plan& p, const Call& v, int y, const std::vector<int>& readers) {
  const Kernel& k = p.kernels.at(size_t(v.kernel));
  if (k.op != OpKind::Conv || !k.source.empty() || k.attrs.has("cl_batch") || v.outputs.size() != 1 ||
      v.inputs.size() < 2 || v.inputs.size() > 3 || v.inputs[0] != y || v.inputs[1] < 0 ||
      readers.at(size_t(y)) != 1 || p.buffers.at(size_t(y)).kind != BufferKind::Intermediate)
    return false;
  for (const PostOp& po : k.post_ops)
    if (po.input >= 0 || unary_expr(po, "v").empty()) return false;
  Ctx x{p, v, k};
  x.sm = plan_sm(p);
  if (!conv1x1_tiled_ok(x) || x.in(1).dtype != DType::F16 || x.out().dtype != DType::F16 ||
      !(x.out().layout == Layout::Linear || layout_free(x.out().shape)))
    return false;
  if (x.has(2) && (!is_float(x.in(2).dtype) || numel(x.in(2).shape) != x.out().shape[1])) return false;
  return true;
}

// A Reshape of `b` (which only it reads) to the same bytes: the fused call may write its output.
static bool se_view_ok(const Plan& p, const Call& f, int b, const std::vector<int>& readers) {
  const Kernel& k = p.kernels.at(size_t(f.kernel));
  if (k.op != OpKind::Reshape || !k.source.empty() || !k.post_ops.empty() || f.outputs.size() != 1 ||
      f.inputs.empty() || f.inputs[0] != b || readers.at(size_t(b)) != 1 ||
      p.buffers.at(size_t(b)).kind != BufferKind::Intermediate)
    return false;
  for (size_t j = 1; j < f.inputs.size(); ++j)  // a shape operand, if any, is a constant
    if (f.inputs[j] >= 0 && p.buffers.at(size_t(f.inputs[j])).kind != BufferKind::Constant) return false;
  const Buffer& X = p.buffers.at(size_t(b));
  const Buffer& Y = p.buffers.at(size_t(f.outputs[0]));
  return Y.dtype == X.dtype && numel(Y.shape) == numel(X.shape) && (Y.layout == Layout::Linear || layout_free(Y.shape));
}

void fold_se_ends(Plan& p) {
  const int64_t mode = tune_target(p, TuneKey::SeFold);  // 1: V (and F); 2: D too
  if (mode == 0) return;
  const std::vector<int> readers = reader_counts(p);
  std::vector<Call> calls;
  for (size_t i = 0; i < p.calls.size(); ++i) {
    const Call& s = p.calls[i];
    const Kernel& sk = p.kernels.at(size_t(s.kernel));
    const std::vector<int64_t> forms = sk.attrs.ints("cuda_se_forms");
    const bool is_se = sk.attrs.i("cuda_se", 0) > 0 && sk.source.empty() && !sk.attrs.has("cuda_se_dw") &&
                       !sk.attrs.has("cuda_se_proj") &&
                       s.inputs.size() == 5 && s.inputs[0] >= 0 && s.inputs[1] >= 0 && s.outputs.size() == 1 &&
                       forms.size() == 2 && sk.attrs.ints("cuda_batch_post_ops").size() == 3 &&
                       p.buffers.at(size_t(s.inputs[0])).shape.size() == 4 &&
                       p.buffers.at(size_t(s.inputs[1])).shape.size() == 4;
    if (!is_se || !se_cluster(p, p.buffers.at(size_t(s.inputs[0])).shape[1], forms[0])) {
      calls.push_back(s);
      continue;
    }
    const Shape& xs = p.buffers.at(size_t(s.inputs[0])).shape;
    const int64_t C = xs[1], HW = xs[2] * xs[3], Hd = p.buffers.at(size_t(s.inputs[1])).shape[0];
    int64_t dw_in = 0;  // D's input halves a block stages
    bool dw = mode >= 2 && !calls.empty() && se_dw_ok(p, calls.back(), s.inputs[0], readers);
    if (dw) {
      const Shape& is = p.buffers.at(size_t(calls.back().inputs[0])).shape;
      dw_in = se_dw_channels(is[1], C / is[1]) * is[2] * is[3];
      dw = se_fold_smem(C, Hd, HW, 0, dw_in) <= kSeFoldSmemBytes;
      if (!dw) dw_in = 0;
    }
    const bool proj = i + 1 < p.calls.size() && se_proj_ok(p, p.calls[i + 1], s.outputs[0], readers) &&
                      se_fold_smem(C, Hd, HW, p.buffers.at(size_t(p.calls[i + 1].outputs[0])).shape[1], dw_in) <=
                          kSeFoldSmemBytes;
    const bool view = proj && i + 2 < p.calls.size() && se_view_ok(p, p.calls[i + 2], p.calls[i + 1].outputs[0], readers);
    if (!dw && !proj) {  // (each taken neighbour's shared memory was checked above)
      calls.push_back(s);
      continue;
    }
    Kernel k = sk;
    Call f = s;
    std::vector<int64_t> npo = k.attrs.ints("cuda_batch_post_ops");
    auto in = [](const Call& c, size_t j) { return j < c.inputs.size() ? c.inputs[j] : -1; };
    if (dw) {
      const Call d = calls.back();
      calls.pop_back();
      const Kernel& dk = p.kernels.at(size_t(d.kernel));
      f.inputs[0] = d.inputs[0];
      f.inputs.push_back(d.inputs[1]);
      f.inputs.push_back(in(d, 2));
      k.post_ops.insert(k.post_ops.end(), dk.post_ops.begin(), dk.post_ops.end());
      npo.push_back(int64_t(dk.post_ops.size()));
      k.attrs.set("cuda_se_dw", int64_t(1));
      k.attrs.set("cuda_se_dw_strides", dk.attrs.ints("strides", {1, 1}));
      k.attrs.set("cuda_se_dw_pads", dk.attrs.ints("pads", {0, 0, 0, 0}));
      k.attrs.set("cuda_se_dw_dilations", dk.attrs.ints("dilations", {1, 1}));
      f.label = d.label + "+" + f.label;
      k.name = "dw" + std::to_string(p.buffers.at(size_t(d.inputs[1])).shape[2]) + "x" +
               std::to_string(p.buffers.at(size_t(d.inputs[1])).shape[3]) + "_" + k.name;
    } else {
      npo.push_back(0);
    }
    if (proj) {
      const Call& v = p.calls[i + 1];
      const Kernel& vk = p.kernels.at(size_t(v.kernel));
      f.inputs.push_back(v.inputs[1]);
      f.inputs.push_back(in(v, 2));
      k.post_ops.insert(k.post_ops.end(), vk.post_ops.begin(), vk.post_ops.end());
      npo.push_back(int64_t(vk.post_ops.size()));
      k.attrs.set("cuda_se_proj", int64_t(1));
      f.outputs = view ? p.calls[i + 2].outputs : v.outputs;
      f.label += "+" + v.label + (view ? "+" + p.calls[i + 2].label : std::string());
      k.name += "_1x1_" + std::to_string(p.buffers.at(size_t(v.outputs[0])).shape[1]);
    } else {
      npo.push_back(0);
    }
    k.attrs.set("cuda_batch_post_ops", npo);
    k.attrs.set("cl_batch", int64_t(4 + (dw ? 1 : 0) + (proj ? 1 : 0) + (view ? 1 : 0)));
    f.kernel = int(p.kernels.size());
    p.kernels.push_back(std::move(k));
    calls.push_back(std::move(f));
    i += (proj ? 1 : 0) + (view ? 1 : 0);
  }
  p.calls = std::move(calls);
}

// The code of one 1x1 conv member on the block's vector `src` (fp16 in shared memory, K long):
// rows [rbase, rbase + rows) of the M outputs (rows < M), each + bias (param `bias`, "" none),
// post-ops `po`, rounded to fp16 into dst[row - rbase]. The weights the warp needs go into
// registers (`pre`, emitted at the kernel's start, so their loads overlap the pool's) where they
// take at most kSePrefetchRegs a thread; `body` computes from them (else loads them itself).
// With `cl` > 0 (the GEMV form only) row m goes to dst[m] in every block of the cluster instead:
// lane j (j < cl; after the warp sum every lane holds it) stores it into block j.
constexpr int64_t kSePrefetchRegs = 64;
struct SeFc {
  std::string pre, body;
};
static SeFc se_fc(int form, const std::string& tag, int64_t M, int64_t K, int64_t N, const std::string& w,
                  const std::string& bias, DType bias_dt, const std::vector<PostOp>& po, const std::string& src,
                  const std::string& dst, const std::string& rbase, int64_t rows, int64_t cl = 0) {
  std::string epi = "        float v = s" + (bias.empty() ? std::string() : " + " + load(bias_dt, bias, "m")) + ";\n";
  for (const PostOp& q : po) epi += "        v = " + unary_expr(q, "v") + ";\n";
  epi += cl > 0 ? "        opv_st_cluster2(opv_cluster_addr(&" + dst + "[m], (unsigned)lane), opv_f2h(v));\n"
                : "        " + dst + "[m - (" + rbase + ")] = opv_f2h(v);\n";
  std::ostringstream pre, s;
  const std::string wa = tag + "w";  // the prefetched weights
  if (form == kSeGemv) {  // conv1x1_gemv's lanes, steps and warp sum
    const int64_t rpw = (rows + kSeWarps - 1) / kSeWarps, its = (K + 8 * kWarp - 1) / (8 * kWarp);
    if (rpw * its * 4 <= kSePrefetchRegs) {
      pre << "  opv_u4 " << wa << "[" << rpw << "][" << its << "];  // " << tag << ": this warp's rows, this lane's 8-channel steps\n"
          << "#pragma unroll\n  for (int j = 0; j < " << rpw << "; ++j)\n"
          << "#pragma unroll\n    for (int it = 0; it < " << its << "; ++it) {\n"
          << "      const int o = warp + j * " << kSeWarps << ", m = " << rbase << " + o, kk = lane * 8 + it * " << 8 * kWarp << ";\n"
          << "      " << wa << "[j][it] = (o < " << rows << " && m < " << M << " && kk < " << K << ") ? *(const opv_u4*)(" << w
          << " + m * " << K << " + kk) : opv_u4{0u, 0u, 0u, 0u};\n    }\n";
      s << "#pragma unroll\n  for (int j = 0; j < " << rpw << "; ++j) {\n"
        << "    const int o = warp + j * " << kSeWarps << ", m = " << rbase << " + o;\n"
        << "    if (o >= " << rows << " || m >= " << M << ") break;\n"
        << "    float acc = 0.0f;\n"
        << "#pragma unroll\n    for (int it = 0; it < " << its << "; ++it)\n"
        << "      if (lane * 8 + it * " << 8 * kWarp << " < " << K << ") acc = opv_dot8(*(const opv_u4*)(" << src
        << " + lane * 8 + it * " << 8 * kWarp << "), " << wa << "[j][it], acc);\n";
    } else {
      s << "  for (int o = warp; o < " << rows << "; o += " << kSeWarps << ") {\n"
        << "    const int m = " << rbase << " + o;\n"
        << "    if (m >= " << M << ") break;\n"
        << "    float acc = 0.0f;\n"
        << "    for (int kk = lane * 8; kk < " << K << "; kk += " << 8 * kWarp << ")\n"
        << "      acc = opv_dot8(*(const opv_u4*)(" << src << " + kk), *(const opv_u4*)(" << w << " + m * " << K
        << " + kk), acc);\n";
    }
    s << "    acc = opv_warp_sum(acc);\n"
      << "    if (lane " << (cl > 0 ? "< " + std::to_string(cl) : std::string("== 0")) << ") {\n      const float s = acc;\n  " << epi
      << "    }\n  }\n";
    return {pre.str(), s.str()};
  }
  // conv1x1_mma's chains for one pixel column (no split-K): this warp's 16-row groups
  const MmaShape sh = mma_shape(N, M, 1, K, false, tune_spec(TuneKey::MmaBlocks).dflt);
  const int64_t nst = (K + sh.KC - 1) / sh.KC, steps = sh.KC / sh.WK / 16, ng = (rows + 15) / 16;
  const int64_t qpw = (ng + kSeWarps - 1) / kSeWarps;
  const bool fetch = qpw * sh.WK * nst * steps * 4 <= kSePrefetchRegs;
  const std::string wv = tag + "wv";
  pre << "  auto " << wv << " = [&](int m, int k) -> unsigned { return (m < " << M << " && k < " << K << ") ? (unsigned)" << w
      << "[m * " << K << " + k] : 0u; };\n";
  // A fragment j (0..3) of rows mb.., channels k.. (k = the step's first + 2t): conv1x1_mma's ldmatrix registers
  auto frag = [&](const std::string& dst4) {
    return "          " + dst4 + "[0] = " + wv + "(mb + g, k) | (" + wv + "(mb + g, k + 1) << 16);\n" +
           "          " + dst4 + "[1] = " + wv + "(mb + g + 8, k) | (" + wv + "(mb + g + 8, k + 1) << 16);\n" +
           "          " + dst4 + "[2] = " + wv + "(mb + g, k + 8) | (" + wv + "(mb + g, k + 9) << 16);\n" +
           "          " + dst4 + "[3] = " + wv + "(mb + g + 8, k + 8) | (" + wv + "(mb + g + 8, k + 9) << 16);\n";
  };
  const std::string kexpr = "st * " + std::to_string(sh.KC) + " + wk * " + std::to_string(sh.KC / sh.WK) + " + ks * 16 + 2 * (lane & 3)";
  if (fetch) {
    pre << "  unsigned " << wa << "[" << qpw << "][" << sh.WK << "][" << nst * steps << "][4];  // " << tag
        << ": A fragments of this warp's 16-row groups\n"
        << "#pragma unroll\n  for (int qi = 0; qi < " << qpw << "; ++qi) {\n"
        << "    const int q = warp + qi * " << kSeWarps << ", mb = q < " << ng << " ? " << rbase << " + q * 16 : " << M
        << ", g = lane >> 2;\n"
        << "#pragma unroll\n    for (int wk = 0; wk < " << sh.WK << "; ++wk)\n"
        << "#pragma unroll\n      for (int st = 0; st < " << nst << "; ++st)\n"
        << "#pragma unroll\n        for (int ks = 0; ks < " << steps << "; ++ks) {\n"
        << "          const int k = " << kexpr << ";\n"
        << frag(wa + "[qi][wk][st * " + std::to_string(steps) + " + ks]") << "        }\n  }\n";
  }
  s << "#pragma unroll\n  for (int qi = 0; qi < " << qpw << "; ++qi) {\n"
    << "    const int q = warp + qi * " << kSeWarps << ", mb = " << rbase << " + q * 16;\n"
    << "    if (q >= " << ng << " || mb >= " << M << ") break;\n"
    << "    const int g = lane >> 2, t = lane & 3;\n"
    << "    auto hv = [&](int k) -> unsigned { return k < " << K << " ? (unsigned)" << src << "[k] : 0u; };\n"
    << "    float s0 = 0.0f, s1 = 0.0f;  // rows mb + g, mb + g + 8: the K groups' sums in order\n"
    << "#pragma unroll\n    for (int wk = 0; wk < " << sh.WK << "; ++wk) {\n"
    << "      float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n"
    << "#pragma unroll\n      for (int st = 0; st < " << nst << "; ++st)\n"
    << "#pragma unroll\n        for (int ks = 0; ks < " << steps << "; ++ks) {\n"
    << "          const int k = " << kexpr << ";\n"
    << "          unsigned b[2];\n";
  if (fetch) {
    s << "          const unsigned* a = " << wa << "[qi][wk][st * " << steps << " + ks];\n";
  } else {
    s << "          unsigned a[4];\n" << frag("a");
  }
  s << "          b[0] = hv(k) | (hv(k + 1) << 16);  // every column: the vector (column 0's sums are the call's)\n"
    << "          b[1] = hv(k + 8) | (hv(k + 9) << 16);\n"
    << "          opv_mma(c, a, b);\n"
    << "        }\n"
    << "      if (wk == 0) s0 = c[0], s1 = c[2]; else s0 += c[0], s1 += c[2];\n"
    << "    }\n"
    << "    if (t == 0) {\n"
    << "      for (int h = 0; h < 2; ++h) {\n"
    << "        const int m = mb + g + h * 8;\n"
    << "        if (m >= " << M << ") break;\n"
    << "        const float s = h ? s1 : s0;\n"
    << epi << "      }\n    }\n  }\n";
  return {pre.str(), s.str()};
}

Generated se_gate(const Plan& p, const Call& c) {
  Generated gen;
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  const std::vector<int64_t> npo = k.attrs.ints("cuda_batch_post_ops");
  const std::vector<int64_t> forms = k.attrs.ints("cuda_se_forms");
  const bool dw = k.attrs.i("cuda_se_dw", 0) > 0, proj = k.attrs.i("cuda_se_proj", 0) > 0;
  const size_t ndw = dw ? 5 : 0, nproj = proj ? 5 + (dw ? 2 : 0) : 0;  // slots of D's W and V's W
  const bool folded = dw || proj;
  int64_t npo_sum = 0;
  for (int64_t n : npo) npo_sum += n;
  if (c.outputs.size() != 1 || c.inputs.size() != size_t(5 + (dw ? 2 : 0) + (proj ? 2 : 0)) || c.inputs[0] < 0 ||
      c.inputs[1] < 0 || c.inputs[3] < 0 || (dw && c.inputs[ndw] < 0) || (proj && c.inputs[nproj] < 0) ||
      npo.size() != (folded ? 5u : 3u) || forms.size() != 2 || size_t(npo_sum) != k.post_ops.size())
    return gen.why = "SE gate call out of shape", gen;
  for (int64_t n : npo)
    if (n < 0) return gen.why = "SE gate call out of shape", gen;
  auto buf = [&](size_t j) -> const Buffer& { return p.buffers.at(size_t(c.inputs[j])); };
  const Buffer& Y = p.buffers.at(size_t(c.outputs[0]));
  // X: the gate's input [N, C, H, W] (with D: D's output, computed here from D's input)
  Shape xs = buf(0).shape;
  std::vector<int64_t> dst, dpd, ddl;
  if (dw) {
    const Shape& is = buf(0).shape;
    const Shape& ws = buf(ndw).shape;
    dst = k.attrs.ints("cuda_se_dw_strides", {1, 1}), dpd = k.attrs.ints("cuda_se_dw_pads", {0, 0, 0, 0});
    ddl = k.attrs.ints("cuda_se_dw_dilations", {1, 1});
    if (is.size() != 4 || ws.size() != 4 || ws[1] != 1 || is[1] <= 0 || ws[0] % is[1] != 0 || dst.size() != 2 ||
        dpd.size() != 4 || ddl.size() != 2 || dst[0] < 1 || dst[1] < 1 || ddl[0] < 1 || ddl[1] < 1 ||
        ws[2] * ws[3] > kSeDwMaxTaps || buf(ndw).dtype != DType::F16 || buf(0).dtype != DType::F16 ||
        (c.inputs[ndw + 1] >= 0 && numel(buf(ndw + 1).shape) != ws[0]))
      return gen.why = "SE gate: depthwise conv out of shape", gen;
    xs = {is[0], ws[0], (is[2] + dpd[0] + dpd[2] - ddl[0] * (ws[2] - 1) - 1) / dst[0] + 1,
          (is[3] + dpd[1] + dpd[3] - ddl[1] * (ws[3] - 1) - 1) / dst[1] + 1};
    if (xs[2] <= 0 || xs[3] <= 0) return gen.why = "SE gate: depthwise conv out of shape", gen;
  }
  int64_t VO = 0;  // V's output channels
  if (proj) {
    const Shape& vs = buf(nproj).shape;
    if (vs.size() != 4 || vs[1] != xs[1] || vs[2] != 1 || vs[3] != 1 || buf(nproj).dtype != DType::F16 ||
        (c.inputs[nproj + 1] >= 0 && numel(buf(nproj + 1).shape) != vs[0]))
      return gen.why = "SE gate: 1x1 conv out of shape", gen;
    VO = vs[0];
  }
  if (xs.size() != 4 || (proj ? numel(Y.shape) != xs[0] * VO * xs[2] * xs[3] : Y.shape != xs) ||
      (!dw && buf(0).dtype != DType::F16) || Y.dtype != DType::F16 || buf(1).shape.size() != 4 ||
      buf(3).shape.size() != 4 || buf(1).shape[1] != xs[1] || buf(3).shape[0] != xs[1] ||
      buf(3).shape[1] != buf(1).shape[0])
    return gen.why = "SE gate call out of shape", gen;
  const int64_t N = xs[0], C = xs[1], HW = xs[2] * xs[3], Hd = buf(1).shape[0];
  for (size_t j = 0; j < 2; ++j) {
    const int64_t K = j ? Hd : C;
    if (forms[j] == kSeGemv ? K % 8 != 0 : forms[j] != kSeMma) return gen.why = "SE gate member form", gen;
  }
  for (const PostOp& po : k.post_ops)
    if (po.input >= 0 || unary_expr(po, "v").empty()) return gen.why = "SE gate: post-op not unary", gen;
  auto range = [&](int64_t from, int64_t n) {
    return std::vector<PostOp>(k.post_ops.begin() + from, k.post_ops.begin() + from + n);
  };
  const int64_t MB = (C + kSeRows - 1) / kSeRows;  // blocks an image
  // The image's blocks as one thread-block cluster (compute_90+, Options::cluster, F1 a GEMV): each
  // pools only its own gate channels and computes HPB of F1's rows, and stores both into every
  // block's shared memory (distributed shared memory), instead of every block pooling all C
  // channels and computing all of F1; the same sums in the same order, so the same bytes.
  const bool cluster = se_cluster(p, C, forms[0]);
  const int64_t HPB = (Hd + MB - 1) / MB;  // F1 rows a block of the cluster
  if (folded && !cluster) return gen.why = "SE gate: a folded neighbour needs the cluster form", gen;
  const int64_t CM = dw ? C / buf(0).shape[1] : 1, SIC = dw ? se_dw_channels(buf(0).shape[1], CM) : 0;
  const int64_t IHW = dw ? buf(0).shape[2] * buf(0).shape[3] : 0;
  if (folded && se_fold_smem(C, Hd, HW, VO, SIC * IHW) > kSeFoldSmemBytes)
    return gen.why = "SE gate: folded neighbours too large", gen;
  const int64_t LD = se_pitch(HW);  // row pitch of the block's channels of X in shared memory (folded)
  std::ostringstream b;
  b << "  // SE gate: mean over " << HW << " pixels of " << C << " channels -> 1x1 to " << Hd << " (form " << forms[0]
    << ") -> 1x1 to " << C << " (form " << forms[1] << ") -> scale; " << kSeRows << " gate channels a block\n"
    << "  __shared__ __align__(16) unsigned short sq[" << C << "];  // the pooled vector (fp16, as R's output)\n"
    << "  __shared__ __align__(16) unsigned short sh[" << Hd << "];  // F1's output (fp16)\n"
    << "  __shared__ __align__(16) unsigned short sg[" << kSeRows << "];  // this block's gate channels (fp16)\n"
    << "  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;\n"
    << "  const int n = blockIdx.x / " << MB << ", r0 = (blockIdx.x % " << MB << ") * " << kSeRows << ";\n"
    << "  const int nch = " << C << " - r0 < " << kSeRows << " ? " << C << " - r0 : " << kSeRows << ";  // this block's gate channels\n"
    << "  (void)lane; (void)nch;\n";
  if (dw)
    b << "  const unsigned short* dn = in0 + n * " << numel(buf(0).shape) / N << ";  // the depthwise conv's input\n";
  else
    b << "  const unsigned short* xn = in0 + n * " << C * HW << ";\n";
  if (proj)
    b << "  unsigned short* vn = out0 + n * " << VO * HW << ";  // the 1x1 conv's output\n"
      << "  __shared__ __align__(16) float sp[" << VO * HW << "];  // this block's partial of the 1x1 conv (its channels)\n";
  else
    b << "  unsigned short* yn = out0 + n * " << C * HW << ";\n";
  if (folded)
    b << "  __shared__ __align__(16) unsigned short xs_[" << kSeRows * LD << "];  // this block's channels of X, row pitch " << LD
      << "\n";
  if (dw)
    b << "  __shared__ __align__(16) unsigned short xin_[" << SIC * IHW << "];  // the depthwise conv's input channels of this block\n"
      << "  const int ic0 = r0 / " << CM << ", nic = (r0 + nch - 1) / " << CM << " - ic0 + 1;\n";
  if (cluster)
    b << "  const int r1 = (blockIdx.x % " << MB << ") * " << HPB << ";  // this block's rows of F1\n"
      << "  asm volatile(\"barrier.cluster.arrive.relaxed.aligned;\" ::: \"memory\");  // waited on before the first stores into peers\n";
  // The members' weights into registers first (their loads overlap the pool's)
  const SeFc f1 = se_fc(int(forms[0]), "f1", Hd, C, N, "in1", c.inputs[2] >= 0 ? "in2" : "",
                        c.inputs[2] >= 0 ? buf(2).dtype : DType::F32, range(0, npo[0]), "sq", "sh", cluster ? "r1" : "0",
                        cluster ? HPB : Hd, cluster ? MB : 0);
  const SeFc f2 = se_fc(int(forms[1]), "f2", C, Hd, N, "in3", c.inputs[4] >= 0 ? "in4" : "",
                        c.inputs[4] >= 0 ? buf(4).dtype : DType::F32, range(npo[0], npo[1]), "sh", "sg", "r0", kSeRows);
  std::ostringstream xpre;  // M's prefetch (below)
  std::string v_pre;        // V's weight prefetch (below)
  const size_t pre_at = size_t(b.tellp());
  b << f1.pre << f2.pre;
  if (dw) {  // 0. D: this block's channels of X, the generic conv's sum in its order
    const Shape& is = buf(0).shape;
    const Shape& ws = buf(ndw).shape;
    const int64_t KH = ws[2], KW = ws[3], IH = is[2], IW = is[3], OW = xs[3];
    // its input channels staged once (16-byte loads where a channel is whole vectors)
    if (IHW % 8 == 0)
      b << "  for (int e = tid; e < nic * " << IHW / 8 << "; e += " << kSeThreads << ")\n"
        << "    ((opv_u4*)xin_)[e] = ((const opv_u4*)(dn + ic0 * " << IHW << "))[e];\n";
    else
      b << "  for (int e = tid; e < nic * " << IHW << "; e += " << kSeThreads << ") xin_[e] = dn[ic0 * " << IHW << " + e];\n";
    b << "  __syncthreads();\n"
      << "  for (int e = tid; e < nch * " << HW << "; e += " << kSeThreads << ") {\n"
      << "    const int cl = e / " << HW << ", q = e - cl * " << HW << ", oh = q / " << OW << ", ow = q - oh * " << OW
      << ", oc = r0 + cl;\n"
      << "    const unsigned short* xp = xin_ + (oc / " << CM << " - ic0) * " << IHW << ";\n"
      << "    const unsigned short* wp = in" << ndw << " + oc * " << KH * KW << ";\n"
      << "    float acc = 0.0f;\n"
      << "#pragma unroll\n    for (int kh = 0; kh < " << KH << "; ++kh) {\n"
      << "      const int ih = oh * " << dst[0] << " - " << dpd[0] << " + kh * " << ddl[0] << ";\n"
      << "      if (ih < 0 || ih >= " << IH << ") continue;\n"
      << "#pragma unroll\n      for (int kw = 0; kw < " << KW << "; ++kw) {\n"
      << "        const int iw = ow * " << dst[1] << " - " << dpd[1] << " + kw * " << ddl[1] << ";\n"
      << "        if (iw < 0 || iw >= " << IW << ") continue;\n"
      << "        acc = fmaf(opv_h2f(xp[ih * " << IW << " + iw]), opv_h2f(wp[kh * " << KW << " + kw]), acc);\n"
      << "      }\n    }\n";
    if (c.inputs[ndw + 1] >= 0) b << "    acc += " << load(buf(ndw + 1).dtype, "in" + std::to_string(ndw + 1), "oc") << ";\n";
    b << "    float v = acc;\n";
    for (const PostOp& po : range(npo[0] + npo[1] + npo[2], npo[3])) b << "    v = " << unary_expr(po, "v") << ";\n";
    b << "    xs_[cl * " << LD << " + q] = opv_f2h(v);\n  }\n  __syncthreads();\n";
  }
  // 1. R: per channel, row-major order from 0.0f
  if (cluster)  // this block's channels, a thread each (kSeRows <= kSeThreads)
    b << "  {\n  const int c = r0 + tid;\n  float acc = 0.0f;\n  if (tid < nch) {\n";
  else
    b << "  for (int c = tid; c < " << C << "; c += " << kSeThreads << ") {\n    float acc = 0.0f;\n";
  if (dw) {
    b << "    for (int q = 0; q < " << HW << "; ++q) acc += opv_h2f(xs_[tid * " << LD << " + q]);\n";
  } else if (HW % 8 == 0) {
    b << "    for (int q = 0; q < " << HW << "; q += 8) {\n"
      << "      const opv_u4 u = *(const opv_u4*)(xn + c * " << HW << " + q);\n"
      << "      const unsigned e[4] = {u.x, u.y, u.z, u.w};\n"
      << "#pragma unroll\n      for (int j = 0; j < 4; ++j) {\n"
      << "        acc += opv_h2f((unsigned short)(e[j] & 0xffffu));\n"
      << "        acc += opv_h2f((unsigned short)(e[j] >> 16));\n      }\n    }\n";
  } else {
    b << "    for (int q = 0; q < " << HW << "; ++q) acc += opv_h2f(xn[c * " << HW << " + q]);\n";
  }
  if (cluster) {
    b << "  }\n  opv_cluster_wait();  // every block of the cluster is running\n"
      << "  if (tid < nch) {\n    const unsigned short h = opv_f2h(acc / " << float_literal(double(HW)) << ");\n"
      << "#pragma unroll\n    for (unsigned r = 0; r < " << MB << "; ++r) opv_st_cluster2(opv_cluster_addr(&sq[c], r), h);\n  }\n  }\n"
      << "  opv_cluster_sync();  // the pooled vector in every block\n";
  } else {
    b << "    sq[c] = opv_f2h(acc / " << float_literal(double(HW)) << ");\n  }\n  __syncthreads();\n";
  }
  // 2. F1: all Hd outputs of the image (cluster: this block's HPB, into every block); 3. F2: this
  // block's gate channels
  b << f1.body << (cluster ? "  opv_cluster_sync();  // F1's outputs in every block\n" : "  __syncthreads();\n") << f2.body
    << "  __syncthreads();\n";
  // 4. M: this block's channels of X times the gate (X's slice prefetched as 16-byte vectors at
  // the start where H*W % 8 == 0 and it takes at most kSeXVectors a thread)
  const std::vector<PostOp> mpo = range(npo[0] + npo[1], npo[2]);
  const int64_t xvec = (kSeRows * HW / 8 + kSeThreads - 1) / kSeThreads;
  if (folded) {  // X from shared memory (D) or global; with V the result back into shared memory
    b << "  for (int e = tid; e < nch * " << HW << "; e += " << kSeThreads << ") {\n"
      << "    const int cl = e / " << HW << ", q = e - cl * " << HW << ";\n"
      << "    float v = ((opv_h2f(" << (dw ? "xs_[cl * " + std::to_string(LD) + " + q]" : "xn[r0 * " + std::to_string(HW) + " + e]")
      << ")) * (opv_h2f(sg[cl])));\n";
    for (const PostOp& po : mpo) b << "    v = " << unary_expr(po, "v") << ";\n";
    b << "    " << (proj ? "xs_[cl * " + std::to_string(LD) + " + q]" : "yn[r0 * " + std::to_string(HW) + " + e]")
      << " = opv_f2h(v);\n  }\n";
    if (proj) {  // 5. V: this block's partial over its channels (tensor cores), then its share of the outputs
      const int64_t MT = (VO + 15) / 16, NT = (HW + 7) / 8, KS = kSeRows / 16;
      const bool pre_a = MT * NT <= kSeWarps;  // a tile a warp at most: its A fragments prefetched
      b << "  __syncthreads();\n"
        << "  for (int t = warp; t < " << MT * NT << "; t += " << kSeWarps << ") {\n"
        << "    const int mb = (t / " << NT << ") * 16, nb = (t % " << NT << ") * 8, g = lane >> 2, tq = lane & 3;\n"
        << "    auto xb = [&](int k, int q) -> unsigned { return (k < nch && q < " << HW << ") ? (unsigned)xs_[k * " << LD
        << " + q] : 0u; };\n"
        << "    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n"
        << "#pragma unroll\n    for (int ks = 0; ks < " << KS << "; ++ks) {\n"
        << "      const int k = ks * 16 + 2 * tq;\n";
      const std::string frag_a =
          "        va[ks][0] = vw(mb + g, k) | (vw(mb + g, k + 1) << 16);\n"
          "        va[ks][1] = vw(mb + g + 8, k) | (vw(mb + g + 8, k + 1) << 16);\n"
          "        va[ks][2] = vw(mb + g, k + 8) | (vw(mb + g, k + 9) << 16);\n"
          "        va[ks][3] = vw(mb + g + 8, k + 8) | (vw(mb + g + 8, k + 9) << 16);\n";
      if (!pre_a) b << "      unsigned va[" << KS << "][4];  // this step's A fragment (va[ks])\n" << frag_a;
      b << "      const unsigned bb[2] = {xb(k, nb + g) | (xb(k + 1, nb + g) << 16), xb(k + 8, nb + g) | (xb(k + 9, nb + g) << 16)};\n"
        << "      opv_mma(acc, va[ks], bb);\n    }\n"
        << "#pragma unroll\n    for (int h = 0; h < 4; ++h) {\n"
        << "      const int o = mb + g + (h >> 1) * 8, q = nb + 2 * tq + (h & 1);\n"
        << "      if (o < " << VO << " && q < " << HW << ") sp[o * " << HW << " + q] = acc[h];\n    }\n  }\n"
        << "  opv_cluster_sync();  // every block's partial visible to the cluster\n";
      std::ostringstream vpre;  // V's A fragments: weights, loaded with the gate's at the start
      vpre << "  auto vw = [&](int m, int k) -> unsigned { return (m < " << VO << " && k < nch) ? (unsigned)in" << nproj
           << "[m * " << C << " + r0 + k] : 0u; };\n";
      if (pre_a)
        vpre << "  unsigned va[" << KS << "][4];  // V: this warp's A fragments (its tile's 16 rows, the block's channels)\n"
             << "  if (warp < " << MT * NT << ") {\n"
             << "    const int mb = (warp / " << NT << ") * 16, g = lane >> 2, tq = lane & 3;\n"
             << "#pragma unroll\n    for (int ks = 0; ks < " << KS << "; ++ks) {\n"
             << "      const int k = ks * 16 + 2 * tq;\n"
             << frag_a << "    }\n  }\n";
      v_pre = vpre.str();
      // the MB partials of this block's share, in rank order (4 outputs a thread where they align)
      const int64_t total = VO * HW, vec = total % 4 == 0 ? 4 : 1;
      const int64_t QB = ((total + MB - 1) / MB + vec - 1) / vec * vec;
      const std::vector<PostOp> vpo = range(npo[0] + npo[1] + npo[2] + npo[3], npo[4]);
      b << "  {\n  const int lo = (blockIdx.x % " << MB << ") * " << QB << ";\n"
        << "  for (int e0 = lo + tid * " << vec << "; e0 < lo + " << QB << " && e0 < " << total << "; e0 += " << kSeThreads * vec
        << ") {\n";
      if (vec == 4) {
        b << "    float4 s4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);\n"
          << "    float4 pv[" << MB << "];\n"
          << "#pragma unroll\n    for (unsigned r = 0; r < " << MB << "; ++r) pv[r] = opv_ld_cluster4(opv_cluster_addr(&sp[e0], r));\n"
          << "#pragma unroll\n    for (unsigned r = 0; r < " << MB << "; ++r) s4.x += pv[r].x, s4.y += pv[r].y, s4.z += pv[r].z, s4.w += pv[r].w;\n"
          << "    const float sv[4] = {s4.x, s4.y, s4.z, s4.w};\n";
      } else {
        b << "    float pv[" << MB << "];\n"
          << "#pragma unroll\n    for (unsigned r = 0; r < " << MB << "; ++r) pv[r] = opv_ld_cluster1(opv_cluster_addr(&sp[e0], r));\n"
          << "    float sv[1] = {0.0f};\n"
          << "#pragma unroll\n    for (unsigned r = 0; r < " << MB << "; ++r) sv[0] += pv[r];\n";
      }
      b << "#pragma unroll\n    for (int j = 0; j < " << vec << "; ++j) {\n"
        << "      const int e = e0 + j;\n"
        << "      float v = sv[j]" << (c.inputs[nproj + 1] >= 0 ? " + " + load(buf(nproj + 1).dtype, "in" + std::to_string(nproj + 1), "e / " + std::to_string(HW)) : std::string()) << ";\n";
      for (const PostOp& po : vpo) b << "      v = " << unary_expr(po, "v") << ";\n";
      b << "      vn[e] = opv_f2h(v);\n    }\n  }\n  }\n"
        << "  opv_cluster_exit();  // no block leaves while a peer may read its partial\n";
    }
  } else if (HW % 8 == 0 && xvec <= kSeXVectors) {
    b << "#pragma unroll\n  for (int j = 0; j < " << xvec << "; ++j) {\n"
      << "    const int e8 = (tid + j * " << kSeThreads << ") * 8;\n"
      << "    if (e8 >= nch * " << HW << ") break;\n"
      << "    const unsigned e[4] = {xv[j].x, xv[j].y, xv[j].z, xv[j].w};\n"
      << "    unsigned r[4];\n"
      << "#pragma unroll\n    for (int q = 0; q < 8; ++q) {\n"
      << "      const unsigned short xh = (unsigned short)((q & 1) ? e[q >> 1] >> 16 : e[q >> 1] & 0xffffu);\n"
      << "      float v = ((opv_h2f(xh)) * (opv_h2f(sg[(e8 + q) / " << HW << "])));\n";
    for (const PostOp& po : mpo) b << "      v = " << unary_expr(po, "v") << ";\n";
    b << "      const unsigned h = opv_f2h(v);\n"
      << "      if (q & 1) r[q >> 1] |= h << 16; else r[q >> 1] = h;\n    }\n"
      << "    *(opv_u4*)(yn + r0 * " << HW << " + e8) = opv_u4{r[0], r[1], r[2], r[3]};\n  }\n";
    xpre << "  opv_u4 xv[" << xvec << "];  // this thread's 8-element vectors of the block's slice of X\n"
         << "#pragma unroll\n  for (int j = 0; j < " << xvec << "; ++j) {\n"
         << "    const int e8 = (tid + j * " << kSeThreads << ") * 8;\n"
         << "    xv[j] = e8 < nch * " << HW << " ? *(const opv_u4*)(xn + r0 * " << HW << " + e8) : opv_u4{0u, 0u, 0u, 0u};\n  }\n";
  } else {
    b << "  for (int e = tid; e < nch * " << HW << "; e += " << kSeThreads << ") {\n"
      << "    const int o = r0 * " << HW << " + e;\n"
      << "    float v = ((opv_h2f(xn[o])) * (opv_h2f(sg[e / " << HW << "])));\n";
    for (const PostOp& po : mpo) b << "    v = " << unary_expr(po, "v") << ";\n";
    b << "    yn[o] = opv_f2h(v);\n  }\n";
  }
  std::string body = b.str();
  body.insert(pre_at, xpre.str() + v_pre);
  std::string params = "unsigned short* __restrict__ out0";
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (c.inputs[j] >= 0) params += input_param(p, c, j, c_type(buf(j).dtype));
  gen.entry = "opv_" + k.name;
  std::ostringstream src;
  src << "// generated by opvision src/target/cuda/se.cpp (kernel " << k.name
      << ", SE gate: " << (dw ? "depthwise conv -> " : "") << "mean pool -> 1x1 -> 1x1 -> scale"
      << (proj ? " -> 1x1" : "") << " in one launch) -- do not edit\n"
      << kPrelude << "typedef int opv_idx;  // every index of this kernel fits an int\n"
      << kDot8 << kMmaHelpers << (cluster ? kClusterHelpers : "")
      << (proj ? "__device__ __forceinline__ float opv_ld_cluster1(unsigned a) {\n  float v;\n"
                 "  asm volatile(\"ld.shared::cluster.f32 %0, [%1];\" : \"=f\"(v) : \"r\"(a) : \"memory\");\n  return v;\n}\n"
               : "")
      << "extern \"C\" __global__ void "
      << (cluster ? "__cluster_dims__(" + std::to_string(MB) + ", 1, 1) " : std::string()) << "__launch_bounds__(" << kSeThreads
      << ") " << gen.entry
      << "(" << params << kEntryOpen
      << body << "}\n";
  gen.source = src.str();
  gen.global = {N * MB * kSeThreads, 0, 0};
  gen.local = {kSeThreads, 0, 0};
  return gen;
}

}  // namespace opv::plan::cuda::detail
