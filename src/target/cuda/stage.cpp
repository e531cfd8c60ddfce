/* A run of FastViT blocks as one kernel on one thread-block cluster (part of plan pass
 * "cuda-codegen", codegen.h; compute_90+, Options::cluster and Options::fuse_stage):
 *   1. fuse_stage: consecutive blocks, each a depthwise pair call (RepMixer KxK -> the ConvFFN's
 *      KxK, codegen.cpp) followed by the ConvFFN on the pair's second output (the fused call of
 *      ffn.cpp, or fc1's and fc2's own 1x1 calls where that kernel does not take the layer) whose
 *      fc2 applies a binary op with the pair's first output (the residual), every intermediate
 *      read by the next call of the run alone, become one call (cuda_abi.h "FastViT stage").
 *      Off by default (Options::fuse_stage: slower on the H200, BENCHMARKS.md CUDA session 22).
 *   2. stage: that call's kernel (the comment above kStageRing describes it).
 * Invariant: the fused call computes what its members compute one after the other, every tensor
 * they store (the depthwise outputs, fc1's hidden activations, each block's output) rounded to
 * fp16 as the members store it; fc2's sums come in a different order (the cluster's hidden split,
 * added in rank order: deterministic), so the outputs match the members' to fp16 rounding, not
 * bit for bit.
 */
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "target/c_expr.h"
#include "target/cuda/codegen_internal.h"
#include "target/cuda/options.h"

namespace opv::plan::cuda::detail {

// ---- the stage kernel -------------------------------------------------------------------------
// One cluster of CL blocks per image runs every FastViT block of the run; the image's C x P
// activations never leave the cluster's shared memory between blocks. Block `rank` of the
// cluster owns channels c0 = rank * CC .. (CC = C / CL) and hidden channels h0 = rank * HPC ..
// (HPC = Hd / CL). Per FastViT block:
//   1. the depthwise pair on its own channels (depthwise: no other channel needed): the first
//      conv from Os (the block's input, own channels) into Ys (kept: the residual), the second
//      from Ys, each output rounded to fp16 as the pair's call stores it; the second conv's
//      outputs are written, 8 pixels (16 bytes) at a time, into row c of Xs in every block of
//      the cluster (st.shared::cluster), so each holds the whole C x P input of fc1; cluster
//      barrier;
//   2. fc1 for its hidden chunk and fc2 from that chunk, as the transposed GEMMs
//      H^T[P x HPC] = X^T W1^T and Y^T[P x C] += H^T W2^T on the tensor cores (mma.sync m16n8k16):
//      warp w takes pixels w * 16 .. + 15; X^T's fragments by ldmatrix.trans from Xs, W1's and
//      W2's from a ring of weight slabs (cp.async, NB - 1 slabs ahead, across the block
//      boundaries too); fc1's accumulators, after the bias, the post-ops and the fp16 rounding
//      (fc1's stored output), are fc2's A fragments in registers (no hidden tile in memory);
//      fc2's partial sums (fp32, all C outputs of the hidden chunk) go to Ps; cluster barrier;
//   3. its own channels' sums of the CL partials, added in rank order (ld.shared::cluster from
//      each block's Ps), then fc2's bias, the residual op with Ys, fc2's other post-ops, rounded
//      to fp16: the next block's input in Os, or, after the last block, the output in global
//      memory.
// Per FastViT block two cluster barriers (and one at the start: every block of the cluster is
// running before any writes a peer; one at the end: none leaves while a peer reads its Ps).
// Each block's small parameters (its depthwise weights and biases, its fc1 bias chunk, its fc2
// bias share) are copied with the block's first weight slab into one of two parameter areas.
// Shared memory (dynamic, kernel attr "cuda_smem"): Xs C x P fp16 (16-byte columns XOR-swizzled
// by the channel), Ps C x P fp32 (8-pixel groups XOR-swizzled by the output pair), the slab
// ring, Os and Ys CC x P fp16, two parameter areas.
constexpr int64_t kStageRing = 3;                     // weight slab buffers
constexpr int64_t kStageMaxSmem = 232448;             // sm_90's opt-in shared memory a block
constexpr int64_t kStageMaxWarps = 8;                 // a warp per 16 pixels; 255 registers a thread
constexpr int64_t kStageMaxK = 15;                    // largest depthwise kernel taken (taps unrolled)
constexpr int64_t kStageMaxBlocks = 64;               // FastViT blocks a call (kernel parameters)
static int64_t up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

struct StageShape {
  int64_t N = 0, C = 0, H = 0, W = 0, Hd = 0, K1 = 0, K2 = 0;  // given
  int64_t P = 0, CL = 0, CC = 0, HPC = 0, WP = 0, XM = 0, PXM = 0;
  int64_t LDW2 = 0, slab = 0;                                  // halves
  int64_t q_w3 = 0, q_b3 = 0, q_w7 = 0, q_b7 = 0, q_b1 = 0, q_b2 = 0, q_n = 0;  // parameter area (halves)
  int64_t off_x = 0, off_p = 0, off_r = 0, off_o = 0, off_y = 0, off_q = 0, smem = 0;  // bytes
};
// Cluster, warps and shared-memory layout of a stage (the given fields set), or false when the
// shapes do not fit this kernel.
static bool stage_size(StageShape* sh) {
  StageShape& s = *sh;
  s.P = s.H * s.W;
  if (s.N < 1 || s.C % 64 || s.W % 8 || s.P % 16 || s.P / 16 > kStageMaxWarps || s.P / 16 < 1 || s.K1 < 1 ||
      s.K2 < 1 || s.K1 % 2 == 0 || s.K2 % 2 == 0 || s.K1 > kStageMaxK || s.K2 > kStageMaxK)
    return false;
  // The widest cluster (at most 16 blocks, sm_90's non-portable limit) whose blocks own a multiple
  // of 8 channels (16-byte copies) and of 16 hidden channels (fc2's k-steps).
  s.CL = 0;
  for (int64_t cl = 16; cl >= 2 && !s.CL; --cl)
    if (s.C % (cl * 8) == 0 && s.Hd % (cl * 16) == 0) s.CL = cl;
  if (!s.CL) return false;
  s.CC = s.C / s.CL, s.HPC = s.Hd / s.CL, s.WP = s.P / 16;
  // Swizzle masks: the XOR must stay inside the row (its 16-byte columns, its 8-pixel groups).
  const int64_t cols = s.P / 8;
  s.XM = cols % 8 == 0 ? 7 : cols % 4 == 0 ? 3 : 1;
  s.PXM = cols % 4 == 0 ? 3 : 1;
  s.LDW2 = s.HPC + 8;  // W2 slab rows: HPC hidden + 8 (an odd number of 16-byte columns: no bank conflicts)
  s.slab = std::max(s.HPC * 64, 64 * s.LDW2);
  s.q_w3 = 0;
  s.q_b3 = s.q_w3 + up(s.CC * s.K1 * s.K1, 8);
  s.q_w7 = s.q_b3 + up(s.CC, 8);
  s.q_b7 = s.q_w7 + up(s.CC * s.K2 * s.K2, 8);
  s.q_b1 = s.q_b7 + up(s.CC, 8);
  s.q_b2 = s.q_b1 + up(s.HPC, 8);
  s.q_n = s.q_b2 + up(s.CC, 8);
  s.off_x = 0;
  s.off_p = up(s.off_x + s.C * s.P * 2, 128);
  s.off_r = up(s.off_p + s.C * s.P * 4, 128);
  s.off_o = up(s.off_r + kStageRing * s.slab * 2, 128);
  s.off_y = up(s.off_o + s.CC * s.P * 2, 128);
  s.off_q = up(s.off_y + s.CC * s.P * 2, 128);
  s.smem = s.off_q + 2 * s.q_n * 2;
  return s.smem <= kStageMaxSmem && s.N * s.C * s.P <= INT32_MAX / 4;
}

// One FastViT block of a run as the plan has it: the depthwise pair call, then either the fused
// ConvFFN call or fc1's and fc2's own calls (layers the ConvFFN kernel does not take).
struct StageBlock {
  size_t calls = 0;                 // 2 or 3
  int x = -1, out = -1;             // the block's input and output buffers
  int ops[8] = {-1, -1, -1, -1, -1, -1, -1, -1};  // W3, B3, W7, B7, W1, B1, W2, B2 (absent bias -1)
  std::vector<PostOp> dw1, dw2, fc1, fin;  // unary post-ops: the pair's two convs, fc1, fc2 after the residual op
  PostOp res;                       // fc2's binary op on the pair's first output
  std::string sig;                  // what two blocks of one run must share (shapes, biases present, post-ops)
  StageShape shape;
};
// Whether the (unfused) call c is a dense 1x1 conv (stride 1, no padding) of C -> M channels on x,
// its post-ops unary, except with `binary_first` a first binary op on its last input (slot 3 on).
static bool plain_1x1(const Plan& p, const Call& c, int x, int64_t C, int64_t M, bool binary_first) {
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  if (k.op != OpKind::Conv || !k.source.empty() || k.attrs.has("cl_batch") || c.outputs.size() != 1 ||
      c.inputs.size() < 2 || c.inputs[0] != x || c.inputs[1] < 0)
    return false;
  if (!conv1x1_tiled_ok(Ctx{p, c, k}) || k.attrs.ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1} ||
      p.buffers.at(size_t(c.inputs[1])).shape != Shape{M, C, 1, 1})
    return false;
  for (size_t q = 0; q < k.post_ops.size(); ++q) {
    const PostOp& po = k.post_ops[q];
    if (q == 0 && binary_first) {
      if (po.input < 3 || binary_expr(po.op, "a", "b").empty()) return false;
    } else if (po.input >= 0 || unary_expr(po, "v").empty()) {
      return false;
    }
  }
  return binary_first ? !k.post_ops.empty() && c.inputs.size() == size_t(k.post_ops[0].input) + 1
                      : c.inputs.size() <= 3;
}
// The FastViT block whose depthwise pair is call i, or false.
static bool stage_block(const Plan& p, const std::vector<int>& readers, size_t i, StageBlock* blk) {
  if (i + 1 >= p.calls.size()) return false;
  const Call& d = p.calls[i];
  const Kernel& dk = p.kernels.at(size_t(d.kernel));
  if (dk.attrs.i("cuda_dw_pair", 0) <= 0 || !dk.source.empty() || d.outputs.size() != 2 || d.inputs.size() != 5 ||
      d.inputs[0] < 0 || d.inputs[1] < 0 || d.inputs[3] < 0)
    return false;
  const std::vector<int64_t> dn = dk.attrs.ints("cuda_batch_post_ops");
  if (dn.size() != 2 || dn[0] < 0 || dn[1] < 0 || size_t(dn[0] + dn[1]) != dk.post_ops.size()) return false;
  for (const PostOp& po : dk.post_ops)
    if (po.input >= 0 || unary_expr(po, "v").empty()) return false;
  const int y1 = d.outputs[0], y2 = d.outputs[1];
  auto inner = [&](int b) { return readers.at(size_t(b)) == 1 && p.buffers.at(size_t(b)).kind == BufferKind::Intermediate; };
  if (!inner(y1) || !inner(y2)) return false;
  const Shape& xs = p.buffers.at(size_t(d.inputs[0])).shape;
  if (xs.size() != 4) return false;
  const Shape& w1s = p.buffers.at(size_t(d.inputs[3])).shape;  // (the pair's second weight, for K2)
  StageBlock b;
  StageShape& s = b.shape;
  s.N = xs[0], s.C = xs[1], s.H = xs[2], s.W = xs[3];
  b.x = d.inputs[0];
  b.ops[0] = d.inputs[1], b.ops[1] = d.inputs[2], b.ops[2] = d.inputs[3], b.ops[3] = d.inputs[4];
  b.dw1.assign(dk.post_ops.begin(), dk.post_ops.begin() + dn[0]);
  b.dw2.assign(dk.post_ops.begin() + dn[0], dk.post_ops.end());
  const Call& f = p.calls[i + 1];
  const Kernel& fk = p.kernels.at(size_t(f.kernel));
  std::vector<PostOp> fc2;  // fc2's post-ops, the residual op first
  if (fk.attrs.i("cuda_ffn", 0) > 0) {  // the fused ConvFFN: [X, W1, B1, W2, B2, residual]
    const std::vector<int64_t> fn = fk.attrs.ints("cuda_batch_post_ops");
    if (fk.attrs.i("cuda_ffn_dw", 0) != 0 || !fk.source.empty() || f.outputs.size() != 1 || f.inputs.size() != 6 ||
        fn.size() != 2 || fn[0] < 0 || fn[1] < 1 || size_t(fn[0] + fn[1]) != fk.post_ops.size() || f.inputs[0] != y2 ||
        f.inputs[5] != y1 || f.inputs[1] < 0 || f.inputs[3] < 0 || fk.post_ops[size_t(fn[0])].input != 5)
      return false;
    b.ops[4] = f.inputs[1], b.ops[5] = f.inputs[2], b.ops[6] = f.inputs[3], b.ops[7] = f.inputs[4];
    b.fc1.assign(fk.post_ops.begin(), fk.post_ops.begin() + fn[0]);
    fc2.assign(fk.post_ops.begin() + fn[0], fk.post_ops.end());
    b.out = f.outputs[0];
    b.calls = 2;
  } else {  // fc1's and fc2's own calls
    if (i + 2 >= p.calls.size() || f.inputs.size() < 2 || f.inputs[1] < 0) return false;
    const Call& g = p.calls[i + 2];
    const Shape& w1 = p.buffers.at(size_t(f.inputs[1])).shape;
    if (w1.size() != 4 || !plain_1x1(p, f, y2, s.C, w1[0], false) || !inner(f.outputs[0]) ||
        !plain_1x1(p, g, f.outputs[0], w1[0], s.C, true))
      return false;
    const Kernel& gk = p.kernels.at(size_t(g.kernel));
    if (g.inputs[size_t(gk.post_ops[0].input)] != y1) return false;
    auto in = [](const Call& c, size_t j) { return j < c.inputs.size() ? c.inputs[j] : -1; };
    b.ops[4] = f.inputs[1], b.ops[5] = in(f, 2), b.ops[6] = g.inputs[1], b.ops[7] = in(g, 2);
    b.fc1 = fk.post_ops;
    fc2 = gk.post_ops;
    b.out = g.outputs[0];
    b.calls = 3;
  }
  for (const PostOp& po : b.fc1)
    if (po.input >= 0 || unary_expr(po, "v").empty()) return false;
  if (fc2.empty() || fc2[0].input < 0 || binary_expr(fc2[0].op, "a", "b").empty()) return false;
  b.res = fc2[0];
  b.fin.assign(fc2.begin() + 1, fc2.end());
  for (const PostOp& po : b.fin)
    if (po.input >= 0 || unary_expr(po, "v").empty()) return false;
  // Every tensor fp16 and Linear (the kernel copies weights and biases as raw fp16 bytes).
  for (size_t c = i; c < i + b.calls; ++c)
    for (const std::vector<int>* ids : {&p.calls[c].inputs, &p.calls[c].outputs})
      for (int id : *ids)
        if (id >= 0 && (p.buffers.at(size_t(id)).dtype != DType::F16 || p.buffers.at(size_t(id)).layout != Layout::Linear))
          return false;
  const Shape& w3 = p.buffers.at(size_t(b.ops[0])).shape;
  const Shape& w1 = p.buffers.at(size_t(b.ops[4])).shape;
  const Shape& w2 = p.buffers.at(size_t(b.ops[6])).shape;
  if (w3.size() != 4 || w1s.size() != 4 || w1.size() != 4 || w2.size() != 4) return false;
  s.K1 = w3[2], s.K2 = w1s[2], s.Hd = w1[0];
  if (w3 != Shape{s.C, 1, s.K1, s.K1} || w1s != Shape{s.C, 1, s.K2, s.K2} || w1 != Shape{s.Hd, s.C, 1, 1} ||
      w2 != Shape{s.C, s.Hd, 1, 1} || p.buffers.at(size_t(y1)).shape != xs || p.buffers.at(size_t(y2)).shape != xs ||
      p.buffers.at(size_t(b.out)).shape != xs)
    return false;
  const int64_t bias_n[8] = {0, s.C, 0, s.C, 0, s.Hd, 0, s.C};
  for (int j = 1; j < 8; j += 2)
    if (b.ops[j] >= 0 && numel(p.buffers.at(size_t(b.ops[j])).shape) != bias_n[j]) return false;
  if (!stage_size(&s)) return false;
  std::ostringstream o;
  o << s.N << "," << s.C << "," << s.H << "," << s.W << "," << s.Hd << "," << s.K1 << "," << s.K2 << "|";
  for (int j = 1; j < 8; j += 2) o << (b.ops[j] >= 0);
  for (const std::vector<PostOp>* v : {&b.dw1, &b.dw2, &b.fc1, &b.fin}) {
    o << "|";
    for (const PostOp& po : *v) o << int(po.op) << "," << po.alpha << "," << po.beta << ";";
  }
  o << "|" << int(b.res.op) << "," << b.res.swapped;
  b.sig = o.str();
  *blk = std::move(b);
  return true;
}

void fuse_stage(Plan& p) {
  if (plan_sm(p) < 90) return;
  const std::vector<int> readers = reader_counts(p);
  std::vector<Call> calls;
  for (size_t i = 0; i < p.calls.size();) {
    std::vector<StageBlock> run;
    size_t next = i;  // the call after the run
    for (StageBlock blk; run.size() < size_t(kStageMaxBlocks) && stage_block(p, readers, next, &blk);) {
      if (!run.empty()) {  // chained: this block reads the previous block's output, which nothing else reads
        const int prev = run.back().out;
        if (blk.sig != run[0].sig || blk.x != prev || readers.at(size_t(prev)) != 1 ||
            p.buffers.at(size_t(prev)).kind != BufferKind::Intermediate)
          break;
      }
      next += blk.calls;
      run.push_back(std::move(blk));
    }
    if (run.empty()) {
      calls.push_back(p.calls[i++]);
      continue;
    }
    const StageBlock& b0 = run[0];
    const StageShape& sh = b0.shape;
    Kernel k = p.kernels.at(size_t(p.calls[i].kernel));
    k.name = "stage_" + std::to_string(sh.C) + "_" + std::to_string(sh.Hd) + "_dw" + std::to_string(sh.K1) + "x" +
             std::to_string(sh.K1) + "_" + std::to_string(sh.K2) + "x" + std::to_string(sh.K2) + "_x" +
             std::to_string(run.size()) + "_f16";
    // Post-ops: the pair's, fc1's, then fc2's after the residual op (which moves to attrs: its
    // operand is no input of the fused call).
    k.post_ops = b0.dw1;
    for (const std::vector<PostOp>* v : {&b0.dw2, &b0.fc1, &b0.fin}) k.post_ops.insert(k.post_ops.end(), v->begin(), v->end());
    k.attrs.erase("cuda_dw_pair");
    k.attrs.set("cuda_batch_post_ops", std::vector<int64_t>{int64_t(b0.dw1.size()), int64_t(b0.dw2.size()),
                                                              int64_t(b0.fc1.size()), int64_t(b0.fin.size())});
    k.attrs.set("cuda_stage", int64_t(run.size()));
    k.attrs.set("cuda_stage_res", int64_t(b0.res.op));
    k.attrs.set("cuda_stage_res_swapped", int64_t(b0.res.swapped ? 1 : 0));
    k.attrs.set("cl_batch", int64_t(next - i));
    Call f;
    f.inputs = {b0.x};
    for (const StageBlock& b : run) f.inputs.insert(f.inputs.end(), std::begin(b.ops), std::end(b.ops));
    f.outputs = {run.back().out};
    f.label = p.calls[i].label + " .. " + p.calls[next - 1].label;
    f.kernel = int(p.kernels.size());
    p.kernels.push_back(std::move(k));
    calls.push_back(std::move(f));
    i = next;
  }
  p.calls = std::move(calls);
}

// PTX helpers of the stage kernel beyond kMmaHelpers / kClusterHelpers.
static const char* kStageHelpers = R"(__device__ __forceinline__ unsigned opv_pack2(float lo, float hi) {
  return (unsigned)opv_f2h(lo) | ((unsigned)opv_f2h(hi) << 16);
}
// 8 outputs (row r, columns x0 .. x0 + 7) of a K x K stride-1 'same' depthwise conv over one H x W
// fp16 plane x with fp16 weights w (K * K): taps in the order kh, then kw, fmaf from 0, zero
// outside the map (the depthwise pair's order; each input row read once for all 8), then the
// bias and the post-ops `po`, as 8 fp16 values.
template <int K, int H, int W, class Po>
__device__ __forceinline__ uint4 opv_dw_row8(const unsigned short* x, const unsigned short* w, int r, int x0, float bias, Po po) {
  float acc[8];
#pragma unroll
  for (int u = 0; u < 8; ++u) acc[u] = 0.0f;
#pragma unroll
  for (int kh = 0; kh < K; ++kh) {
    const int ih = r + kh - (K - 1) / 2;
    const bool rok = ih >= 0 && ih < H;
    float xr[8 + K - 1];
#pragma unroll
    for (int j = 0; j < 8 + K - 1; ++j) {
      const int iw = x0 - (K - 1) / 2 + j;
      xr[j] = rok && iw >= 0 && iw < W ? opv_h2f(x[ih * W + iw]) : 0.0f;
    }
#pragma unroll
    for (int kw = 0; kw < K; ++kw) {
      const float wv = opv_h2f(w[kh * K + kw]);
#pragma unroll
      for (int u = 0; u < 8; ++u) acc[u] = fmaf(xr[u + kw], wv, acc[u]);
    }
  }
  return make_uint4(opv_pack2(po(acc[0] + bias), po(acc[1] + bias)), opv_pack2(po(acc[2] + bias), po(acc[3] + bias)),
                    opv_pack2(po(acc[4] + bias), po(acc[5] + bias)), opv_pack2(po(acc[6] + bias), po(acc[7] + bias)));
}
)";

Generated stage(const Plan& p, const Call& c) {
  Generated gen;
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  const int64_t NBLK = k.attrs.i("cuda_stage", 0);
  const std::vector<int64_t> npo = k.attrs.ints("cuda_batch_post_ops");
  const int64_t res_op = k.attrs.i("cuda_stage_res", -1);
  if (NBLK < 1 || NBLK > kStageMaxBlocks || c.outputs.size() != 1 || c.inputs.size() != size_t(1 + 8 * NBLK) ||
      npo.size() != 4 || npo[0] < 0 || npo[1] < 0 || npo[2] < 0 || npo[3] < 0 ||
      size_t(npo[0] + npo[1] + npo[2] + npo[3]) != k.post_ops.size())
    return gen.why = "stage call out of shape", gen;
  if (res_op < 0 || res_op > 255 || binary_expr(OpKind(res_op), "a", "b").empty())
    return gen.why = "stage: the residual op is not a binary element-wise op", gen;
  for (const PostOp& po : k.post_ops)
    if (po.input >= 0 || unary_expr(po, "v").empty()) return gen.why = "stage: a post-op is not unary", gen;
  for (int b : c.inputs)
    if (b >= 0 && (p.buffers.at(size_t(b)).dtype != DType::F16 || p.buffers.at(size_t(b)).layout != Layout::Linear))
      return gen.why = "stage: every tensor must be fp16 and Linear", gen;
  const Buffer& X = p.buffers.at(size_t(c.inputs[0]));
  const Buffer& Y = p.buffers.at(size_t(c.outputs[0]));
  if (X.shape.size() != 4 || Y.shape != X.shape || Y.dtype != DType::F16 || Y.layout != Layout::Linear)
    return gen.why = "stage: input and output must be fp16 NCHW of one shape", gen;
  StageShape s;
  s.N = X.shape[0], s.C = X.shape[1], s.H = X.shape[2], s.W = X.shape[3];
  auto slot = [&](int64_t b, int j) { return c.inputs[size_t(1 + 8 * b + j)]; };
  for (int64_t b = 0; b < NBLK; ++b)
    for (int j : {0, 2, 4, 6})
      if (slot(b, j) < 0) return gen.why = "stage: a weight is absent", gen;
  const Shape& w3 = p.buffers.at(size_t(slot(0, 0))).shape;
  const Shape& w7 = p.buffers.at(size_t(slot(0, 2))).shape;
  const Shape& w1 = p.buffers.at(size_t(slot(0, 4))).shape;
  if (w3.size() != 4 || w7.size() != 4 || w1.size() != 4) return gen.why = "stage: weights out of shape", gen;
  s.K1 = w3[2], s.K2 = w7[2], s.Hd = w1[0];
  if (!stage_size(&s)) return gen.why = "stage: shapes do not fit the kernel", gen;
  // Every block's weights of the shapes block 0 has; biases present in all blocks or none.
  const Shape want[8] = {{s.C, 1, s.K1, s.K1}, {s.C}, {s.C, 1, s.K2, s.K2}, {s.C}, {s.Hd, s.C, 1, 1}, {s.Hd}, {s.C, s.Hd, 1, 1}, {s.C}};
  for (int64_t b = 0; b < NBLK; ++b)
    for (int j = 0; j < 8; ++j) {
      const int id = slot(b, j);
      if ((id >= 0) != (slot(0, j) >= 0)) return gen.why = "stage: biases present in some blocks only", gen;
      if (id >= 0 && (j % 2 == 0 ? p.buffers.at(size_t(id)).shape != want[j] : numel(p.buffers.at(size_t(id)).shape) != numel(want[j])))
        return gen.why = "stage: block " + std::to_string(b) + " operand " + std::to_string(j) + " out of shape", gen;
    }
  const bool hb[4] = {slot(0, 1) >= 0, slot(0, 3) >= 0, slot(0, 5) >= 0, slot(0, 7) >= 0};  // b3, b7, b1, b2
  // The kernel's parameter names of block operand j (absent: nullptr), in a per-slot array.
  std::ostringstream ptrs;
  const char* names[8] = {"W3", "B3", "W7", "B7", "W1", "B1", "W2", "B2"};
  for (int j = 0; j < 8; ++j) {
    ptrs << "  const unsigned short* const " << names[j] << "[NBLK] = {";
    for (int64_t b = 0; b < NBLK; ++b)
      ptrs << (b ? ", " : "") << (slot(b, j) >= 0 ? "in" + std::to_string(1 + 8 * b + j) : std::string("nullptr"));
    ptrs << "};\n";
  }
  auto unary_fn = [&](const char* name, int64_t from, int64_t count) {
    std::string f = std::string("  auto ") + name + " = [](float v) {\n";
    for (int64_t q = from; q < from + count; ++q) f += "    v = " + unary_expr(k.post_ops[size_t(q)], "v") + ";\n";
    return f + "    return v;\n  };\n";
  };
  const bool swapped = k.attrs.i("cuda_stage_res_swapped", 0) != 0;
  std::ostringstream b;
  b << "  // " << NBLK << " FastViT block(s): " << s.C << " channels over " << s.H << " x " << s.W << " pixels, hidden "
    << s.Hd << ", depthwise " << s.K1 << "x" << s.K1 << " then " << s.K2 << "x" << s.K2 << "; a cluster of " << s.CL
    << " blocks an image (" << s.CC << " channels, " << s.HPC << " hidden each), " << s.WP << " warps, "
    << s.smem << " bytes of shared memory\n"
    << "  constexpr int NBLK = " << NBLK << ", C = " << s.C << ", H = " << s.H << ", W = " << s.W << ", P = " << s.P
    << ", HD = " << s.Hd << ", K1 = " << s.K1 << ", K2 = " << s.K2 << ";\n"
    << "  constexpr int CL = " << s.CL << ", CC = " << s.CC << ", HPC = " << s.HPC << ", NT = " << s.WP * 32
    << ", XM = " << s.XM << ", PXM = " << s.PXM << ";\n"
    << "  constexpr int NB = " << kStageRing << ", NS1 = C / 64, NS2 = C / 64, NSL = NS1 + NS2, NSTEPS = NBLK * NSL, LDW2 = "
    << s.LDW2 << ", SLABH = " << s.slab << ";\n"
    << "  constexpr int Q_W3 = " << s.q_w3 << ", Q_B3 = " << s.q_b3 << ", Q_W7 = " << s.q_w7 << ", Q_B7 = " << s.q_b7
    << ", Q_B1 = " << s.q_b1 << ", Q_B2 = " << s.q_b2 << ", PARH = " << s.q_n << ";\n"
    << "  constexpr bool HB3 = " << hb[0] << ", HB7 = " << hb[1] << ", HB1 = " << hb[2] << ", HB2 = " << hb[3] << ";\n"
    << "  extern __shared__ __align__(128) unsigned char opv_dsmem[];\n"
    << "  unsigned short* const Xs = (unsigned short*)(opv_dsmem + " << s.off_x << ");  // fc1's input, C x P, swizzled\n"
    << "  float* const Ps = (float*)(opv_dsmem + " << s.off_p << ");  // fc2's partial sums, C x P, swizzled\n"
    << "  unsigned short* const Rs = (unsigned short*)(opv_dsmem + " << s.off_r << ");  // weight slab ring\n"
    << "  unsigned short* const Os = (unsigned short*)(opv_dsmem + " << s.off_o << ");  // the block's input, own channels\n"
    << "  unsigned short* const Ys = (unsigned short*)(opv_dsmem + " << s.off_y << ");  // first depthwise output, own channels\n"
    << "  unsigned short* const Qs = (unsigned short*)(opv_dsmem + " << s.off_q << ");  // two parameter areas\n"
    << ptrs.str()
    << unary_fn("po_dw1", 0, npo[0]) << unary_fn("po_dw2", npo[0], npo[1]) << unary_fn("po_fc1", npo[0] + npo[1], npo[2])
    << unary_fn("po_out", npo[0] + npo[1] + npo[2], npo[3])
    << "  auto res_op = [](float v, float r) { return " << (swapped ? binary_expr(OpKind(res_op), "r", "v") : binary_expr(OpKind(res_op), "v", "r"))
    << "; };\n"
    << R"(  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int rank = (int)(blockIdx.x % CL);
  const opv_idx n = blockIdx.x / CL;
  const int c0 = rank * CC, h0 = rank * HPC;
  // Block bk's parameters (its own channels' depthwise weights and biases, its hidden chunk's fc1
  // bias, its channels' fc2 bias) into parameter area bk & 1.
  auto issue_params = [&](int bk) {
    unsigned short* d = Qs + (bk & 1) * PARH;
    for (int e = tid; e < CC * K1 * K1 / 8; e += NT) opv_cp16(d + Q_W3 + e * 8, W3[bk] + c0 * (K1 * K1) + e * 8, true);
    for (int e = tid; e < CC * K2 * K2 / 8; e += NT) opv_cp16(d + Q_W7 + e * 8, W7[bk] + c0 * (K2 * K2) + e * 8, true);
    if (HB3) for (int e = tid; e < CC / 8; e += NT) opv_cp16(d + Q_B3 + e * 8, B3[bk] + c0 + e * 8, true);
    if (HB7) for (int e = tid; e < CC / 8; e += NT) opv_cp16(d + Q_B7 + e * 8, B7[bk] + c0 + e * 8, true);
    if (HB1) for (int e = tid; e < HPC / 8; e += NT) opv_cp16(d + Q_B1 + e * 8, B1[bk] + h0 + e * 8, true);
    if (HB2) for (int e = tid; e < CC / 8; e += NT) opv_cp16(d + Q_B2 + e * 8, B2[bk] + c0 + e * 8, true);
  };
  // Slab q of the run into ring buffer q % NB: per block NS1 slabs of W1 (the hidden chunk's HPC
  // rows x 64 input channels, 128-byte rows, 16-byte columns XOR-swizzled by the row), then NS2 of
  // W2 (64 output rows x the chunk's HPC hidden channels, rows of LDW2); with a block's first slab
  // its parameters.
  auto issue = [&](int q) {
    if (q >= NSTEPS) return;
    const int bk = q / NSL, j = q % NSL;
    unsigned short* dst = Rs + (q % NB) * SLABH;
    if (j == 0) issue_params(bk);
    if (j < NS1) {
      const unsigned short* w = W1[bk] + (opv_idx)h0 * C + j * 64;
#pragma unroll
      for (int e = tid; e < HPC * 8; e += NT) {
        const int r = e >> 3, cc = e & 7;
        opv_cp16(dst + r * 64 + ((cc ^ (r & 7)) << 3), w + (opv_idx)r * C + cc * 8, true);
      }
    } else {
      const unsigned short* w = W2[bk] + (opv_idx)((j - NS1) * 64) * HD + h0;
#pragma unroll
      for (int e = tid; e < 64 * (HPC / 8); e += NT) {
        const int r = e / (HPC / 8), cc = e % (HPC / 8);
        opv_cp16(dst + r * LDW2 + cc * 8, w + (opv_idx)r * HD + cc * 8, true);
      }
    }
  };
  {  // the run's input, own channels (contiguous rows), with the first slab's group
    const unsigned short* x = in0 + (n * C + c0) * (opv_idx)P;
    for (int e = tid; e < CC * P / 8; e += NT) opv_cp16(Os + e * 8, x + e * 8, true);
  }
#pragma unroll
  for (int q = 0; q < NB - 1; ++q) {
    issue(q);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  opv_cluster_sync();  // every block of the cluster runs before any writes into a peer
  int q = 0;  // the slab in use
  auto next_slab = [&]() -> const unsigned short* {
    asm volatile("cp.async.wait_group %0;" :: "n"(NB - 2) : "memory");
    __syncthreads();  // slab q landed for every thread; buffer (q - 1) % NB is free
    issue(q + NB - 1);
    asm volatile("cp.async.commit_group;" ::: "memory");
    return Rs + (q++ % NB) * SLABH;
  };
  const int p0 = warp * 16;  // the warp's pixels in fc1 and fc2
#pragma unroll 1
  for (int bk = 0; bk < NBLK; ++bk) {
    const unsigned short* Q = Qs + (bk & 1) * PARH;
    // The block's first slab group holds its parameters (and, for block 0, the input).
    asm volatile("cp.async.wait_group %0;" :: "n"(NB - 2) : "memory");
    __syncthreads();
    // 1a. the first depthwise conv, own channels: Os -> Ys (8 pixels of a row a thread, then the
    // bias and the post-ops, as the pair).
    for (int e = tid; e < CC * H * (W / 8); e += NT) {
      const int c = e / (H * (W / 8)), r = (e / (W / 8)) % H, x0 = (e % (W / 8)) * 8;
      const float bias = HB3 ? opv_h2f(Q[Q_B3 + c]) : 0.0f;
      *(uint4*)(Ys + c * P + r * W + x0) = opv_dw_row8<K1, H, W>(Os + c * P, Q + Q_W3 + c * (K1 * K1), r, x0, bias, po_dw1);
    }
    __syncthreads();
    // 1b. the second depthwise conv from Ys into row c0 + c of every block's Xs.
    for (int e = tid; e < CC * H * (W / 8); e += NT) {
      const int c = e / (H * (W / 8)), r = (e / (W / 8)) % H, x0 = (e % (W / 8)) * 8;
      const float bias = HB7 ? opv_h2f(Q[Q_B7 + c]) : 0.0f;
      const uint4 v = opv_dw_row8<K2, H, W>(Ys + c * P, Q + Q_W7 + c * (K2 * K2), r, x0, bias, po_dw2);
      const int ch = c0 + c, col = (r * W + x0) >> 3;
      const unsigned short* dst = Xs + ch * P + ((col ^ (ch & XM)) << 3);
#pragma unroll 4
      for (int sq = 0; sq < CL; ++sq) opv_st_cluster4(opv_cluster_addr(dst, sq), v);
    }
    opv_cluster_sync();  // every block's share of fc1's input is in every block
    // 2a. fc1 for the hidden chunk: H^T[16 pixels x HPC] of the warp.
    float acc1[HPC / 8][4];
#pragma unroll
    for (int a = 0; a < HPC / 8; ++a)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc1[a][r] = 0.0f;
#pragma unroll 1
    for (int j = 0; j < NS1; ++j) {
      const unsigned short* w = next_slab();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        unsigned a[4];
        {
          const int ch = j * 64 + kk * 16 + (lane & 7) + ((lane >> 4) << 3), col = (p0 >> 3) + ((lane >> 3) & 1);
          opv_ldsm4t(a, Xs + ch * P + ((col ^ (ch & XM)) << 3));
        }
#pragma unroll
        for (int np = 0; np < HPC / 16; ++np) {
          unsigned bf[4];
          const int row = np * 16 + (lane & 7) + ((lane >> 4) << 3), cc = kk * 2 + ((lane >> 3) & 1);
          opv_ldsm4(bf, w + row * 64 + ((cc ^ (row & 7)) << 3));
          const unsigned b0[2] = {bf[0], bf[1]}, b1[2] = {bf[2], bf[3]};
          opv_mma(acc1[2 * np], a, b0);
          opv_mma(acc1[2 * np + 1], a, b1);
        }
      }
    }
    // 2b. fc1's bias and post-ops, rounded to fp16: fc2's A fragments (k-step s: n-tiles 2s, 2s + 1).
    unsigned ha[HPC / 16][4];
#pragma unroll
    for (int s = 0; s < HPC / 16; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int nt = 2 * s + h, hid = nt * 8 + 2 * t;
        const float bb0 = HB1 ? opv_h2f(Q[Q_B1 + hid]) : 0.0f, bb1 = HB1 ? opv_h2f(Q[Q_B1 + hid + 1]) : 0.0f;
        ha[s][2 * h] = opv_pack2(po_fc1(acc1[nt][0] + bb0), po_fc1(acc1[nt][1] + bb1));
        ha[s][2 * h + 1] = opv_pack2(po_fc1(acc1[nt][2] + bb0), po_fc1(acc1[nt][3] + bb1));
      }
    // 2c. fc2's partial sums from the hidden chunk: Y^T[16 pixels x 64 outputs] a slab, into Ps.
#pragma unroll 1
    for (int j = 0; j < NS2; ++j) {
      const unsigned short* w = next_slab();
      float acc2[8][4];
#pragma unroll
      for (int a = 0; a < 8; ++a)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc2[a][r] = 0.0f;
#pragma unroll
      for (int s = 0; s < HPC / 16; ++s)
#pragma unroll
        for (int np = 0; np < 4; ++np) {
          unsigned bf[4];
          const int row = np * 16 + (lane & 7) + ((lane >> 4) << 3), col = s * 16 + ((lane >> 3) & 1) * 8;
          opv_ldsm4(bf, w + row * LDW2 + col);
          const unsigned b0[2] = {bf[0], bf[1]}, b1[2] = {bf[2], bf[3]};
          opv_mma(acc2[2 * np], ha[s], b0);
          opv_mma(acc2[2 * np + 1], ha[s], b1);
        }
#pragma unroll
      for (int a = 0; a < 8; ++a)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int o = j * 64 + a * 8 + 2 * t + (r & 1), px = p0 + g + (r >> 1) * 8;
          Ps[o * P + (px ^ (((o >> 1) & PXM) << 3))] = acc2[a][r];
        }
    }
    opv_cluster_sync();  // every block's partial sums visible to the cluster
    // 3. own channels: the CL partials added in rank order, fc2's bias, the residual op with the
    // first depthwise output, the other post-ops, rounded to fp16.
    const bool last = bk == NBLK - 1;
    for (int e = tid; e < CC * P / 4; e += NT) {
      const int c = e / (P / 4), x4 = (e % (P / 4)) * 4, o = c0 + c;
      const unsigned short* src = (const unsigned short*)(Ps + o * P + (x4 ^ (((o >> 1) & PXM) << 3)));
      float4 pv[CL];
#pragma unroll
      for (int sq = 0; sq < CL; ++sq) pv[sq] = opv_ld_cluster4(opv_cluster_addr(src, sq));
      float4 sum = pv[0];
#pragma unroll
      for (int sq = 1; sq < CL; ++sq) {
        sum.x += pv[sq].x; sum.y += pv[sq].y; sum.z += pv[sq].z; sum.w += pv[sq].w;
      }
      const float bias = HB2 ? opv_h2f(Q[Q_B2 + c]) : 0.0f;
      const float sv[4] = {sum.x, sum.y, sum.z, sum.w};
      float v[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) v[i] = po_out(res_op(sv[i] + bias, opv_h2f(Ys[c * P + x4 + i])));
      const uint2 pk = make_uint2(opv_pack2(v[0], v[1]), opv_pack2(v[2], v[3]));
      if (last)
        *(uint2*)(out0 + (n * C + o) * (opv_idx)P + x4) = pk;
      else
        *(uint2*)(Os + c * P + x4) = pk;
    }
  }
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  opv_cluster_exit();  // no block leaves while a peer may still read its partial sums
)";
  std::string params = "unsigned short* __restrict__ out0";
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (c.inputs[j] >= 0) params += input_param(p, c, j, "unsigned short");
  gen.entry = "opv_" + k.name;
  std::ostringstream src;
  src << "// generated by opvision src/target/cuda/stage.cpp (kernel " << k.name
      << ", FastViT blocks on one thread-block cluster an image) -- do not edit\n"
      << kPrelude << "typedef int opv_idx;  // every index of this kernel fits an int\n"
      << kMmaHelpers << kClusterHelpers << kStageHelpers << "extern \"C\" __global__ void __cluster_dims__(" << s.CL
      << ", 1, 1) __launch_bounds__(" << s.WP * 32 << ", 1) " << gen.entry << "(" << params << kEntryOpen << b.str() << "}\n";
  gen.source = src.str();
  gen.global = {s.N * s.CL * s.WP * 32, 0, 0};
  gen.local = {s.WP * 32, 0, 0};
  gen.smem = s.smem;
  return gen;
}

}  // namespace opv::plan::cuda::detail
