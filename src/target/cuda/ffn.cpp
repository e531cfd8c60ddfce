/* The fused ConvFFN of target "cuda" (part of plan pass "cuda-codegen", codegen.h):
 *   1. fuse_ffn: a dense fp16 1x1 conv (fc1, unary post-ops) whose output only the next call reads,
 *      followed by a dense fp16 1x1 conv on it (fc2), becomes one call (cuda_abi.h "ConvFFN")
 *      where ffn_size fits it and it gives enough blocks; with_dw (Options::fuse_ffn_dw) takes
 *      only the triples whose fc1 reads a stride-1 'same' depthwise conv that nothing else reads
 *      (FastViT's ConvFFN: 7x7 -> fc1 -> GELU -> fc2 -> residual) and merges that conv too.
 *   2. ffn: that call's kernel (the comment below describes it).
 * NCHW or NHWC (both calls' X and Y in one layout; the depthwise conv only with NCHW).
 * Invariant: the fused call computes what its members compute one after the other, with the
 * depthwise conv's and fc1's outputs rounded to fp16 as their stored tensors would be (the
 * depthwise taps summed in the order the depthwise pair kernel sums them); the hidden-split sums
 * are added in split order (deterministic).
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

// ---- ConvFFN: fc1 -> unary post-ops (GELU) -> fc2 in one launch ---------------------------------
// A dense fp16 1x1 conv (fc1, unary post-ops) whose output only the next call reads, a dense fp16
// 1x1 conv on it (fc2, any post-ops on other operands: the residual Add), runs as one tensor-core
// kernel (plan arch compute_80+) that keeps the hidden activations on chip: a block of 4 warps
// takes kFfnBN pixels of one image and kFfnHC hidden channels at a time: the X tile [Cin x BN]
// sits in shared memory; the weights stream through shared memory as 64-row "slabs" (fc1: 64
// hidden rows x SK1 input channels of W1; fc2: 64 output rows x the chunk's 64 hidden channels of
// W2), in a ring of NB slab buffers filled with 16-byte cp.async NB-1 slabs ahead of the one in
// use (one pipeline over every slab of the block's chunks: W1's, then W2's, then the next
// chunk's); rows are 128 bytes with the 16-byte columns XOR-swizzled by the row, so ldmatrix
// phases hit distinct banks. Per chunk warp w computes hidden rows w*16.. (A fragments from the
// slab with ldmatrix, X with ldmatrix.trans), adds the bias, runs fc1's post-ops, rounds to fp16
// (as fc1's stored output would be) into a shared [HC x BN] tile; then for every W2 slab j warp w
// accumulates output rows j*64 + w*16.. from that tile. Layers with few pixel tiles also split the
// hidden chunks over S blocks, each writing its fp32 partial [Cout x BN] to a module workspace; the
// last block of a tile (counter, as the split-K 1x1s) adds the partials in split order and runs the
// epilogue (bias, fc2's post-ops).
// (Up to 7cbe0a5 the W1/W2 fragments came straight from global memory: 4-byte loads, half of
// every 32-byte sector used, at most 8 k-steps in flight; ffn_256 14.5 us a call traced.)
// With a depthwise conv (KxK, stride 1, 'same') before fc1 ("cuda_ffn_dw" = K; unsplit layers
// only, kFfnDwMaxSplit) the block does not copy its X tile: while the first slabs are in flight it
// computes the conv's outputs of the tile (where the map's width is a multiple of BN a half-warp
// per channel, lane j on pixel j, the taps shuffled between lanes from one coalesced read of each
// input row; else a thread per output; zero outside the map), adds the bias, runs the conv's
// post-ops and stores them into the X tile rounded to fp16, as the conv's own call would have
// stored them; the first slab's barrier publishes the tile.
// Plan form: one call, output = fc2's, inputs = [X, W1, B1, W2, B2, fc2's inputs from slot 3 on]
// (absent bias -1); kernel = fc1's with "cl_batch" = 2, "cuda_ffn" = 1, post-ops = fc1's then
// fc2's (operand slots j -> j + 2), "cuda_batch_post_ops" = their counts. With the depthwise
// conv: inputs = [its X, W1, B1, W2, B2, its W, its B, fc2's inputs from slot 3 on], fc2's operand
// slots j -> j + 4, "cl_batch" = 3, "cuda_ffn_dw" = K, post-ops = the conv's, fc1's, fc2's.
// The hidden split aims at TuneKey::FfnBlocks blocks (96 by default: pixel tiles x S).
constexpr int64_t kFfnBN = 16, kFfnHC = 64, kFfnMinBlocks = 24;
constexpr int64_t kFfnMaxReduceBytes = 192 << 10;  // the last block's partials at most
// float4 loads per thread in flight in the last block's reduction: 24 up to run 8 (stage 2's 12
// partials in 4 dependent batches), 48 from run 10 (2 batches; 192 registers, no spills with sm_90)
constexpr int64_t kFfnReduceInFlight = 48;
constexpr int64_t kFfnSmemBytes = (48 << 10) - 256;  // static shared memory (48 KB without opt-in)
constexpr int64_t kFfnSlabBytes = 64 * 64 * 2, kFfnMaxSlabs = 6;  // a slab buffer: 64 rows x 128 bytes
// Layers whose pixel tiles split their hidden chunks over S > 1 blocks keep the depthwise conv
// apart: every block of a tile would compute the tile's depthwise outputs again (run 14 on the
// H200, with the split stages folded: ffn_256 36.5 us a call traced against 12 + 5 apart).
constexpr int64_t kFfnDwMaxSplit = 1;
constexpr int64_t kFfnDwMaxK = 15;  // largest depthwise kernel taken (its taps unrolled)
constexpr int64_t kFfnMaxUnrolledSlabs = 32;  // a block's slab steps unrolled at most (ffn())
// Split layers as one thread-block cluster per pixel tile (Options::cluster, compute_90+): at most
// this many blocks a cluster (8 is the portable limit; the backend opts the wider ones in).
constexpr int64_t kFfnMaxCluster = 16;
// The deep ring (TuneKey::FfnRing): where the static 48 KB holds only two slab buffers (wide
// layers: 512 input channels leave 20 KB beside the X tile), a block has one slab in flight while
// it uses the other, so every slab step waits a full L2 round trip (the batch-32 artifact's ffn_512,
// 192 slabs a block: 108 us a call on the H100, session 26 run 50). Such blocks take up to ffn_ring
// buffers in dynamic shared memory (kernel attr "cuda_smem"), within the block limit of the plan's
// architecture (99 KB from compute_80: sm_86/sm_89's; 227 KB from compute_90) less
// kFfnSmemReserve for the kernel's static rest: ffn_512 53 us a call with 10 (run 51). Rings of 4
// or more stay static: with 10 buffers the batch-32 ffn_256 was 9 % slower (two blocks an SM
// where four fit; its time is the L2 traffic of its weights, re-read by each of 256 pixel tiles)
// and ffn_128 unchanged (run 51); the batch-1 fixture's rings are 4-5. Where a block's chunk loop
// is not unrolled the deep ring is cut to a divisor of a chunk's slabs (ffn_size; the batch-32
// ffn_256 and ffn_512: 8), so each slab's buffer is a compile-time one (session 30).
constexpr int64_t kFfnShallowRing = 2;
// Wide pixel tiles (TuneKey::FfnBn): a block of BN = 16 pixels streams every weight slab for 16
// pixels, so where the pixel tiles are many (the batch-32 artifact's stages 0 and 1: 4,096 and
// 1,024 tiles) the slabs' L2 traffic and their barriers are paid per 16 pixels. Where a layer has
// kFfnWideMinTilesPerBlock x TuneKey::FfnBlocks tiles of BN = 64 (32) pixels, an unsplit NCHW
// block without the depthwise conv takes BN = 64 (32) pixels: a warp holds BN / 8 n-tiles of
// accumulators (fc2's NS2 x BN / 8 x 4 at most kFfnWideMaxAcc floats) and each A fragment of a
// slab meets BN / 8 mma.sync. Every output is summed in the same order: bit-identical. Wide tiles
// with a ring in dynamic shared memory where the static one would hold two slabs (the batch-32
// ffn_256 at 32 pixels, ffn_128 at 64, 4 or 6 buffers) were slower on the H100: ffn_256 0.213 ms
// against 0.193 with 16-pixel tiles, ffn_128 0.095 against 0.073 (session 28 run 57), so those keep
// the static ring's tiles on 4 warps. On 8 warps (TuneKey::FfnWarps, 8 by default) warp w computes
// rows (w & 3) * 16 of every slab for pixel half w >> 2 (BN / 16 n-tiles a warp): as many warps a
// tile as before, half the tiles, so half the slab traffic; such tiles may take the deep ring, and
// with clusters also split their hidden chunks (the cluster form's partial tile in the ring).
// Session 29 runs 61-62 (H100, batch 32, ms a batch's calls): ffn_256 at 64 pixels split 2 ways
// 0.190 against 0.196 with 16 unsplit, ffn_512 at 32 split 3 ways 0.078 against 0.107 (16, split 2
// ways); but ffn_256 at 32 pixels unsplit (a block an SM) 0.227, and ffn_64 0.123 against 0.084 and
// ffn_128 0.083 against 0.074 where 8 warps replaced the 4-warp wide tiles, and the batch-1
// ffn_64 (48 KB of weights: little slab traffic to save) 8 us a call at 64 pixels split 3 ways
// against 7 unsplit at 16 (run 63). So 4 warps are tried first, and 8 only as a cluster split of a
// layer with at least kFfnWideSplitMinWeights of weights (ffn_256: 768 KB; the fixture's batch-1
// artifact keeps its kernels).
constexpr int64_t kFfnWideMinTilesPerBlock = 4, kFfnWideMaxAcc = 64, kFfnWideMinRing = 3;
constexpr int64_t kFfnWideSplitMinWeights = 256 << 10;  // W1 + W2 bytes of a layer with 8-warp wide tiles
constexpr int64_t kFfnSmemReserve = 1 << 10;
constexpr int64_t kSmSmemBytes = 228 << 10;  // sm_90's shared memory an SM (227 KB a block at most)
static int64_t ffn_smem_cap(const Plan& p) { return plan_sm(p) >= 90 ? 227 << 10 : 99 << 10; }
struct FfnShape {
  int64_t N = 0, Cin = 0, Hd = 0, Cout = 0, P = 0, OW = 0;  // given
  int64_t PT = 0, NC = 0, CPB = 0, S = 0, SK1 = 0, NB = 0;   // ffn_size
  bool deep = false;  // the ring is in dynamic shared memory (ffn_size: the deep ring)
  bool dw = false, nhwc = false;  // given: the depthwise conv inside, channels-last (no wide tiles)
  int64_t BN = kFfnBN;            // pixels a tile (ffn_size: wide tiles)
  bool w8 = false;                // ffn_size: wide tiles on 8 warps (TuneKey::FfnWarps)
  int64_t blocks() const { return N * PT * S; }
  int64_t chunk_slabs() const { return Cin / SK1 + Cout / 64; }  // NSL: W1 then W2 slabs of a hidden chunk
  int64_t slabs() const { return CPB * chunk_slabs(); }  // slab steps of a block with CPB chunks
  int64_t fixed_bytes() const { return (Cin + kFfnHC) * (BN + 8) * 2; }  // X and hidden tiles
  int64_t dynamic_bytes() const { return deep ? NB * kFfnSlabBytes : 0; }
  // The given sizes from X's logical shape [N, Cin, H, W], the hidden and the output channels.
  static FfnShape of(const Shape& x, int64_t hidden, int64_t cout) {
    FfnShape s;
    s.N = x[0], s.Cin = x[1], s.Hd = hidden, s.Cout = cout, s.P = x[2] * x[3], s.OW = x[3];
    return s;
  }
};
// Pixel tiles, hidden split and slab ring of a ConvFFN in plan p (the given fields set; the
// plan's tune targets and architecture), or false when it does not fit this kernel.
static bool ffn_size(const Plan& p, FfnShape* sh) {
  const int64_t target_blocks = tune_target(p, TuneKey::FfnBlocks), ring = tune_target(p, TuneKey::FfnRing);
  FfnShape& s = *sh;
  s.SK1 = std::min<int64_t>(s.Cin, 64);
  if (s.Cin % 16 || s.Cin % s.SK1 || s.Hd % kFfnHC || s.Cout % 64) return false;
  s.BN = kFfnBN;
  s.w8 = false;
  // Wide tiles: on 4 warps (the rule above), else on 8 where ffn_warps allows them (each warp half
  // the tile's pixels), with clusters (compute_90) only, for layers of at least
  // kFfnWideSplitMinWeights bytes of weights: at least kFfnMinBlocks tiles, fewer than the block
  // target, each splitting its hidden chunks over a cluster that keeps the partial tile in the ring.
  const bool ask8 = tune_target(p, TuneKey::FfnWarps) == 8;
  const bool cl = plan_sm(p) >= 90 && Options::from_meta(p.meta).cluster;
  for (const bool w8 : {false, true}) {
    if ((w8 && !ask8) || s.dw || s.nhwc || s.BN != kFfnBN) continue;
    for (const int64_t bn : {64, 32}) {
      FfnShape w = s;
      w.BN = bn;
      const int64_t tiles = s.N * ((s.P + bn - 1) / bn);
      const int64_t acc = s.Cout / 64 * (bn / (w8 ? 16 : 8)) * 4;  // fc2's accumulators a thread
      const int64_t static_ring = (kFfnSmemBytes - w.fixed_bytes()) / kFfnSlabBytes;
      const int64_t deep_ring = std::min(ring, (ffn_smem_cap(p) - kFfnSmemReserve - w.fixed_bytes()) / kFfnSlabBytes);
      // 8 warps may take the deep ring (dynamic shared memory); 4 keep the static one (session 28)
      const int64_t nb = w8 && static_ring <= kFfnShallowRing ? std::max(static_ring, deep_ring) : static_ring;
      const bool split = w8 && cl && (s.Cin + s.Cout) * s.Hd * 2 >= kFfnWideSplitMinWeights && tiles < target_blocks &&
                         (target_blocks + tiles - 1) / tiles <= kFfnMaxCluster && s.Cout * bn * 4 <= nb * kFfnSlabBytes;
      if (bn > tune_target(p, TuneKey::FfnBn) || (w8 ? !split : tiles < kFfnWideMinTilesPerBlock * target_blocks) ||
          tiles < kFfnMinBlocks || acc > kFfnWideMaxAcc || nb < kFfnWideMinRing || w.fixed_bytes() > kFfnSmemBytes)
        continue;
      s.BN = bn;
      s.w8 = w8;
      break;
    }
  }
  const int64_t fixed = s.fixed_bytes();
  s.PT = (s.P + s.BN - 1) / s.BN;
  s.NC = s.Hd / kFfnHC;
  const int64_t tiles = s.N * s.PT;
  // A cluster split keeps to TuneKey::FfnClusterMax blocks (8, the portable size): a wider cluster needs
  // that many free SMs in one GPC for one block each, and where they are not there the hardware
  // puts two of its blocks on one SM (session 36, H100: of ffn_256's eight 12-block clusters seven
  // found 12 SMs, the eighth ran on SMs shared with other blocks, ~1.6 us of each call; 6-block
  // clusters of 2 chunks a block: 0.1588 against 0.1610 ms, 5 of 5 rounds).
  const int64_t s_cap = cl && !s.w8 ? tune_target(p, TuneKey::FfnClusterMax) : s.NC;
  const int64_t s0 = std::clamp<int64_t>((target_blocks + tiles - 1) / tiles, 1, std::min(s.NC, s_cap));
  s.CPB = (s.NC + s0 - 1) / s0;
  s.S = (s.NC + s.CPB - 1) / s.CPB;
  // The slab ring of the block with the most chunks (CPB): at most as many buffers as its slabs
  // and one, static, or the deep ring where the static one holds two at most.
  const int64_t deep_cap = (ffn_smem_cap(p) - kFfnSmemReserve - fixed) / kFfnSlabBytes;
  int64_t deep = 0;  // the deep ring's buffers for this CPB
  const auto set_ring = [&] {
    s.NB = std::min<int64_t>({kFfnMaxSlabs, (kFfnSmemBytes - fixed) / kFfnSlabBytes, s.slabs() + 1});
    deep = std::min<int64_t>({ring, deep_cap, s.slabs() + 1});
    s.deep = s.NB <= kFfnShallowRing && deep > s.NB;
    if (s.deep) s.NB = deep;
  };
  // The last block of a split adds at most kFfnMaxReduceBytes of partials: more chunks a block
  // until the split fits. Cluster splits add through distributed shared memory instead, each block
  // a share: the wide split, and (TuneKey::FfnClusterSlabs, opt-in) a split of at most
  // kFfnMaxCluster blocks at compute_90 whose ring holds its partial tile and whose blocks stream
  // at most ffn_cluster_slabs slabs (ffn_cluster; with 32 the fixture's stage 3 at batch 1 fuses:
  // 2 pixel tiles x 12 blocks of 32 slabs, where fc1 and fc2 run as two split-K launches of 96 and
  // 128 blocks; session 32).
  const int64_t cluster_slabs = tune_target(p, TuneKey::FfnClusterSlabs);
  set_ring();
  while (s.S > 1 && !(s.w8 && s.BN > kFfnBN) && s.S * s.Cout * s.BN * 4 > kFfnMaxReduceBytes &&
         !(cl && s.S <= kFfnMaxCluster && s.slabs() <= cluster_slabs && s.Cout * s.BN * 4 <= s.NB * kFfnSlabBytes)) {
    ++s.CPB;
    s.S = (s.NC + s.CPB - 1) / s.CPB;
    set_ring();
  }
  // (8-warp wide tiles of wide layers may leave no static slab buffer: their ring is the deep one)
  if (fixed > kFfnSmemBytes || (s.NB < 2 && !(s.w8 && deep >= kFfnWideMinRing))) return false;
  // Resident slabs (TuneKey::FfnResident): a block of at most ffn_resident slab steps holds all of
  // them at once, NB = slabs + 1 buffers in dynamic shared memory, so the weight prologue issues
  // every slab before the wait for the kernels before (the batch-1 fixture's ConvFFNs: 6-8 slabs a
  // block) and the main loop never refills the ring. Only where the blocks are about one wave (at
  // most twice the block target): a block an SM, so the larger shared memory costs no occupancy.
  if (s.NB < s.slabs() + 1 && s.slabs() <= tune_target(p, TuneKey::FfnResident) && s.slabs() + 1 <= deep_cap &&
      s.slabs() <= kFfnMaxUnrolledSlabs && s.blocks() <= 2 * target_blocks) {
    s.deep = true;
    s.NB = s.slabs() + 1;
  }
  // A deep ring whose chunk loop stays a loop (ffn(): slots_fixed) holds a divisor of a chunk's slabs,
  // where the cluster form's partial tile still fits it: then slab j of every chunk has ring buffer
  // j % NB, known to the compiler (session 30: ffn_256 at batch 32 spent ~850 integer
  // instructions a chunk against 128 mma.sync, most on the ring's run-time q / NSL, q % 10).
  if (s.deep && s.NC % s.CPB == 0 && s.slabs() > kFfnMaxUnrolledSlabs) {
    int64_t nb = s.NB;
    while (s.chunk_slabs() % nb) --nb;
    if (nb >= kFfnWideMinRing && (s.S == 1 || s.Cout * s.BN * 4 <= nb * kFfnSlabBytes)) s.NB = nb;
  }
  return true;
}
// Warps a block of the fused kernel, unless the kernel's attr "cuda_ffn_warps" says (4 or 8): 8
// where the hidden chunks are split over blocks (S > 1: few pixel tiles, the last block of a tile
// adds the partials) or ffn_size put wide tiles on 8 warps, else 4. With 8, warp w computes rows (w & 3) * 16 of every slab for the
// pixel half w >> 2: two warps a scheduler to hide each other's ldmatrix/mma latency, half the
// accumulators a thread, and the last block's reduction over twice the threads (stage 2's twelve
// partials in one batch of loads, not two). The same fragments meet the same mma.sync in the same
// order, so the outputs are the 4-warp kernel's bit for bit.
static int64_t ffn_warps(const FfnShape& s) { return s.S > 1 || s.w8 ? 8 : 4; }
// The fused shape of fc1 call a and fc2 call b (with the depthwise conv before a inside: dw), or false.
static bool ffn_shape(const Plan& p, const Call& a, const Call& b, const std::vector<int>& readers, bool dw, FfnShape* sh) {
  if (plan_sm(p) < 80) return false;
  const Kernel& ka = p.kernels.at(size_t(a.kernel));
  const Kernel& kb = p.kernels.at(size_t(b.kernel));
  if (a.inputs.empty() || a.inputs[0] < 0) return false;
  const bool nhwc = nhwc_stored(p.buffers.at(size_t(a.inputs[0])));
  for (const auto* cc : {&a, &b}) {
    const Kernel& k = p.kernels.at(size_t(cc->kernel));
    if (k.op != OpKind::Conv || !k.source.empty() || k.attrs.i("cl_batch", 0) > 0 || cc->outputs.size() != 1 ||
        cc->inputs.size() < 2 || cc->inputs[0] < 0 || cc->inputs[1] < 0)
      return false;
    const Ctx x{p, *cc, k};
    if (!conv1x1_tiled_ok(x) || x.in(0).dtype != DType::F16 || x.in(1).dtype != DType::F16 ||
        x.out().dtype != DType::F16)
      return false;
    // Both calls NCHW, or both NHWC (the pass "cuda-layout"), never mixed.
    for (const Buffer* bb : {&x.in(0), &x.out()})
      if ((bb->layout != Layout::Linear && bb->layout != Layout::NHWC) || nhwc_stored(*bb) != nhwc) return false;
    if (cc->inputs.size() > 2 && cc->inputs[2] >= 0 && !is_float(x.in(2).dtype)) return false;
  }
  const int hid = a.outputs[0];
  if (b.inputs[0] != hid || readers.at(size_t(hid)) != 1 || p.buffers.at(size_t(hid)).kind != BufferKind::Intermediate)
    return false;
  for (const PostOp& po : ka.post_ops)
    if (po.input >= 0 || unary_expr(po, "v").empty()) return false;
  for (const PostOp& po : kb.post_ops)
    if (po.input >= 0 && po.input < 3) return false;
  const Shape& xs = p.buffers.at(size_t(a.inputs[0])).shape;
  const Shape& ys = p.buffers.at(size_t(b.outputs[0])).shape;
  FfnShape s = FfnShape::of(xs, p.buffers.at(size_t(hid)).shape[1], ys[1]);
  s.nhwc = nhwc;
  s.dw = dw;
  if (s.N * s.Cin * s.P > INT32_MAX / 2 || s.N * s.Hd * s.P > INT32_MAX / 2 || s.N * s.Cout * s.P > INT32_MAX / 2 ||
      !ffn_size(p, &s))
    return false;
  if (s.blocks() < kFfnMinBlocks) return false;  // too few blocks: the two tiled launches are faster
  *sh = s;
  return true;
}
void fuse_ffn(Plan& p, bool with_dw) {
  if (plan_sm(p) < 80) return;
  const std::vector<int> readers = reader_counts(p);
  std::vector<Call> calls;
  for (size_t i = 0; i < p.calls.size(); ++i) {
    const size_t i1 = i + (with_dw ? 1 : 0);  // fc1
    FfnShape sh;
    bool ok = i1 + 1 < p.calls.size() && ffn_shape(p, p.calls[i1], p.calls[i1 + 1], readers, with_dw, &sh);
    int64_t K = 0;
    if (ok && with_dw) {  // a depthwise conv whose output only fc1 reads (NCHW: dw_same_size)
      const Call& d = p.calls[i];
      K = dw_same_size(p, d);
      ok = K > 0 && K <= kFfnDwMaxK && sh.S <= kFfnDwMaxSplit && p.calls[i1].inputs[0] == d.outputs[0] &&
           readers.at(size_t(d.outputs[0])) == 1 && p.buffers.at(size_t(d.outputs[0])).kind == BufferKind::Intermediate;
    }
    if (!ok) {
      calls.push_back(p.calls[i]);
      continue;
    }
    const Call& a = p.calls[i1];
    const Call& b = p.calls[i1 + 1];
    const Kernel& akern = p.kernels.at(size_t(a.kernel));
    const Kernel& bkern = p.kernels.at(size_t(b.kernel));
    Kernel k = akern;
    Call f;
    auto in = [](const Call& c, size_t j) { return j < c.inputs.size() ? c.inputs[j] : -1; };
    k.name = "ffn_" + std::to_string(sh.Cin) + "_" + std::to_string(sh.Hd) + "_" + std::to_string(sh.Cout) +
             (with_dw ? "_dw" + std::to_string(K) + "x" + std::to_string(K) : std::string()) + "_f16" +
             (nhwc_stored(p.buffers.at(size_t(a.inputs[0]))) ? "_nhwc" : "");
    std::vector<int64_t> npo{int64_t(akern.post_ops.size()), int64_t(bkern.post_ops.size())};
    f.inputs = {a.inputs[0], a.inputs[1], in(a, 2), b.inputs[1], in(b, 2)};
    f.label = a.label + "+" + b.label;
    if (with_dw) {
      const Call& d = p.calls[i];
      const Kernel& dkern = p.kernels.at(size_t(d.kernel));
      k.post_ops = dkern.post_ops;  // unary (dw_same_size)
      k.post_ops.insert(k.post_ops.end(), akern.post_ops.begin(), akern.post_ops.end());
      npo.insert(npo.begin(), int64_t(dkern.post_ops.size()));
      f.inputs[0] = d.inputs[0];
      f.inputs.push_back(d.inputs[1]);
      f.inputs.push_back(in(d, 2));
      f.label = d.label + "+" + f.label;
      k.attrs.set("cuda_ffn_dw", K);
    }
    const int shift = int(f.inputs.size()) - 3;  // fc2's operand slots 3.. follow the weights
    for (PostOp po : bkern.post_ops) {
      if (po.input >= 0) po.input += shift;
      k.post_ops.push_back(po);
    }
    k.attrs.set("cl_batch", int64_t(npo.size()));
    k.attrs.set("cuda_ffn", int64_t(1));
    k.attrs.set("cuda_batch_post_ops", npo);
    f.outputs = b.outputs;
    for (size_t j = 3; j < b.inputs.size(); ++j) f.inputs.push_back(b.inputs[j]);
    f.kernel = int(p.kernels.size());
    p.kernels.push_back(std::move(k));
    calls.push_back(std::move(f));
    i = i1 + 1;
  }
  p.calls = std::move(calls);
}
// ---- the depthwise pair inside the ConvFFN ------------------------------------------------------
// FastViT's block is a depthwise pair (the RepMixer's KA x KA, then the ConvFFN's KB x KB on its
// output, dw_pair.cpp) and the fused ConvFFN on the pair's second output whose fc2 adds the pair's
// first (the residual): at batch 1 two launches of a few microseconds each, mostly latency. With
// Options::ffn_pair the pair runs inside the ConvFFN kernel, before its main loop:
//   1. every block computes the pair for its tile's BN pixels on its share of the channels (the
//      cluster form: rank sp takes CPR = ceil(CIN / S) channels; unsplit layers: all of them): it
//      stages the input rows the tile needs (the tile's rows, KB's halo and KA's, zero outside the
//      map), the first conv over the tile and KB's halo (zero outside the map, rounded to the
//      first output's fp16 as the pair's call stores it), then the second conv at the tile's
//      pixels into its X tile, rounded to fp16 as the pair stores it; channels in batches of CB
//      that fit kFfnPairScratch bytes of dynamic shared memory;
//   2. the cluster form stores its channels' rows of the X tile into every other block of the
//      cluster (st.shared::cluster, 16 bytes a store; after a cluster barrier that the kernel's
//      first instruction arrived at, so every peer is running) and a cluster barrier publishes them;
//   3. fc2's residual operand (the pair's first output at (n, m, q)) is the first conv computed
//      again at that pixel from the input, in the same tap order, where the epilogue loads its
//      operands (before the main loop in both forms where they fit registers).
// Every value is the pair's and the ConvFFN's bit for bit (the same taps in the same order, the
// same roundings, the same hidden split). The first conv runs on about (TR + 2 DB) x (XC + 2 DB)
// pixels a tile for BN outputs (stage 2 of the fixture: 7 x 22 for 16), cheap beside a launch.
constexpr int64_t kFfnPairScratch = 64 << 10;  // dynamic shared memory for the pair's staging, at most
struct FfnPairGeom {
  int64_t KA = 0, KB = 0, H = 0, W = 0;
  bool row = false;     // W % BN == 0: a tile is BN columns of one row
  int64_t TR = 0, XC = 0;  // rows and columns of the tile's bounding box (XC = W where tiles span rows)
  int64_t CPR = 0, CB = 0;  // channels a block, a batch
  int64_t AR() const { return TR + (KB - 1); }
  int64_t AC() const { return XC + (KB - 1); }
  int64_t IR() const { return AR() + (KA - 1); }
  int64_t IC() const { return AC() + (KA - 1); }
  int64_t taps() const { return KA * KA + KB * KB + 2; }  // a channel's taps and both biases
  int64_t channel_floats() const { return IR() * IC() + AR() * AC() + taps(); }
  int64_t bytes() const { return CB * channel_floats() * 4; }
};
// The pair's geometry in a ConvFFN of shape s (the channel batches within `budget` bytes, at most
// kFfnPairScratch; CB = 0 where not even one channel fits).
static FfnPairGeom ffn_pair_geom(const FfnShape& s, int64_t H, int64_t ka, int64_t kb, bool cluster, int64_t budget) {
  FfnPairGeom g;
  g.KA = ka, g.KB = kb, g.H = H, g.W = s.OW;
  g.row = s.OW % s.BN == 0;
  g.TR = g.row ? 1 : std::min<int64_t>(H, s.BN % s.OW == 0 ? s.BN / s.OW : (s.BN - 1 + s.OW - 1) / s.OW + 1);
  g.XC = g.row ? s.BN : s.OW;
  g.CPR = cluster ? (s.Cin + s.S - 1) / s.S : s.Cin;
  const int64_t cap = std::min(budget, kFfnPairScratch) / (g.channel_floats() * 4);  // channels that fit
  if (cap < 1) return g;
  const int64_t rounds = (g.CPR + cap - 1) / cap;
  g.CB = (g.CPR + rounds - 1) / rounds;
  return g;
}
// Whether a ConvFFN of shape s splits its hidden chunks over a cluster by default (ffn()'s rule).
static bool ffn_can_cluster(const Plan& p, const FfnShape& s) {
  return s.S > 1 && s.S <= kFfnMaxCluster && s.Cout * s.BN * 4 <= s.NB * kFfnSlabBytes && plan_sm(p) >= 90;
}
// Shared memory of a ConvFFN block (static and dynamic) with `scratch` more dynamic bytes.
static int64_t ffn_smem_total(const FfnShape& s, int64_t scratch) {
  return s.fixed_bytes() + (s.deep ? 0 : s.NB * kFfnSlabBytes) + s.dynamic_bytes() + scratch + kFfnSmemReserve;
}
// Bytes the pair's staging may take in plan p's blocks beside the ConvFFN's own.
static int64_t ffn_pair_budget(const Plan& p, const FfnShape& s) { return ffn_smem_cap(p) - ffn_smem_total(s, 0); }
void fuse_ffn_pairs(Plan& p, FfnPairMode mode) {
  if (mode == FfnPairMode::Off || plan_sm(p) < 80) return;
  const std::vector<int> readers = reader_counts(p);
  const bool cl_opt = Options::from_meta(p.meta).cluster;
  fuse_pairs(p, [&](const Call& d, const Call& f, Kernel* k, Call* out) {
    const Kernel& dk = p.kernels.at(size_t(d.kernel));
    const Kernel& fk = p.kernels.at(size_t(f.kernel));
    if (dk.op != OpKind::Conv || dk.attrs.i("cuda_dw_pair", 0) != 1 || !dk.source.empty() || d.outputs.size() != 2 ||
        d.inputs.size() != 5 || d.inputs[1] < 0 || d.inputs[3] < 0)
      return false;
    if (fk.op != OpKind::Conv || fk.attrs.i("cuda_ffn", 0) != 1 || fk.attrs.has("cuda_ffn_dw") ||
        fk.attrs.has("cuda_ffn_pair") || !fk.source.empty() || f.outputs.size() != 1 || f.inputs.size() < 6)
      return false;
    const int o0 = d.outputs[0], o1 = d.outputs[1];
    if (f.inputs[0] != o1 || readers.at(size_t(o1)) != 1 || readers.at(size_t(o0)) != 1) return false;
    for (int b : {o0, o1})
      if (p.buffers.at(size_t(b)).kind != BufferKind::Intermediate || p.buffers.at(size_t(b)).dtype != DType::F16) return false;
    // the residual: the one operand slot of fc2 that reads the pair's first output, used by a binary post-op
    int res = -1;
    for (size_t j = 5; j < f.inputs.size(); ++j)
      if (f.inputs[j] == o0) res = int(j);
    bool used = false;
    for (const PostOp& po : fk.post_ops) used |= po.input == res;
    if (res < 0 || !used) return false;
    const Buffer& X = p.buffers.at(size_t(f.inputs[0]));
    if (X.shape.size() != 4 || nhwc_stored(X) || p.buffers.at(size_t(d.inputs[0])).shape != X.shape) return false;
    FfnShape s = FfnShape::of(X.shape, p.buffers.at(size_t(f.inputs[1])).shape[0], p.buffers.at(size_t(f.outputs[0])).shape[1]);
    if (!ffn_size(p, &s) || s.BN != kFfnBN || s.w8) return false;
    const bool cluster = ffn_can_cluster(p, s) && cl_opt;
    if (!(cluster || (s.S == 1 && mode == FfnPairMode::All))) return false;
    const int64_t ka = p.buffers.at(size_t(d.inputs[1])).shape[2], kb = p.buffers.at(size_t(d.inputs[3])).shape[2];
    if (ka > kFfnDwMaxK || kb > kFfnDwMaxK) return false;
    if (ffn_pair_geom(s, X.shape[2], ka, kb, cluster, ffn_pair_budget(p, s)).CB < 1) return false;
    const std::vector<int64_t> dn = dk.attrs.ints("cuda_batch_post_ops"), fn = fk.attrs.ints("cuda_batch_post_ops");
    if (dn.size() != 2 || fn.size() != 2) return false;
    *k = fk;
    const size_t at = k->name.rfind("_f16");
    const std::string dws = "_dw" + std::to_string(ka) + "x" + std::to_string(ka) + "_" + std::to_string(kb) + "x" + std::to_string(kb);
    k->name = at == std::string::npos ? k->name + dws : k->name.substr(0, at) + dws + k->name.substr(at);
    k->post_ops = dk.post_ops;  // the pair's (unary), then fc1's and fc2's
    for (PostOp po : fk.post_ops) {
      if (po.input >= 0) po.input += 4;  // fc2's operand slots move past the pair's weights
      k->post_ops.push_back(po);
    }
    k->attrs.set("cl_batch", int64_t(4));
    k->attrs.set("cuda_batch_post_ops", std::vector<int64_t>{dn[0], dn[1], fn[0], fn[1]});
    k->attrs.set("cuda_ffn_pair", std::vector<int64_t>{ka, kb});
    k->attrs.set("cuda_ffn_res", int64_t(res + 4));
    out->inputs = {d.inputs[0], f.inputs[1], f.inputs[2], f.inputs[3], f.inputs[4],
                   d.inputs[1], d.inputs[2], d.inputs[3], d.inputs[4]};
    for (size_t j = 5; j < f.inputs.size(); ++j) out->inputs.push_back(int(j) == res ? d.inputs[0] : f.inputs[j]);
    out->outputs = f.outputs;
    return true;
  });
}
Generated ffn(const Plan& p, const Call& c) {
  Generated gen;
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  const std::vector<int64_t> npo = k.attrs.ints("cuda_batch_post_ops");
  const int64_t DK = k.attrs.i("cuda_ffn_dw", 0);  // the depthwise conv's kernel size (0: none)
  const std::vector<int64_t> PK = k.attrs.ints("cuda_ffn_pair");  // the depthwise pair's kernel sizes (none: no pair)
  const bool PAIR = !PK.empty();
  const size_t nw = DK ? 7 : PAIR ? 9 : 5;          // slots before fc2's other operands
  const size_t nmem = DK ? 3u : PAIR ? 4u : 2u;     // members: [dw,] [pair's two,] fc1, fc2
  int64_t npo_sum = 0;
  for (int64_t v : npo) npo_sum += v;
  if (c.outputs.size() != 1 || c.inputs.size() < nw || npo.size() != nmem || c.inputs[0] < 0 || c.inputs[1] < 0 ||
      c.inputs[3] < 0 || (DK && c.inputs[5] < 0) || (PAIR && (DK || PK.size() != 2 || c.inputs[5] < 0 || c.inputs[7] < 0)) ||
      size_t(npo_sum) != k.post_ops.size())
    return gen.why = "ConvFFN call out of shape", gen;
  // Post-op ranges: the depthwise conv's (the pair's two convs': [0, poa), [poa, po1)) [0, po1),
  // fc1's [po1, po2), fc2's [po2, end).
  const int64_t poa = PAIR ? npo[0] : 0, po1 = DK ? npo[0] : PAIR ? npo[0] + npo[1] : 0, po2 = po1 + npo[nmem - 2];
  // The unary post-ops [lo, hi) on `float v`, a statement each at `indent` (checked unary below).
  auto unary_ops = [&](int64_t lo, int64_t hi, const std::string& indent) {
    std::string o;
    for (int64_t q = lo; q < hi; ++q) o += indent + "v = " + unary_expr(k.post_ops[size_t(q)], "v") + ";\n";
    return o;
  };
  auto buf = [&](size_t j) -> const Buffer& { return p.buffers.at(size_t(c.inputs[j])); };
  const Buffer& Y = p.buffers.at(size_t(c.outputs[0]));
  if (buf(0).shape.size() != 4 || buf(1).shape.size() != 4 || Y.shape.size() != 4)
    return gen.why = "ConvFFN call out of shape", gen;
  FfnShape s = FfnShape::of(buf(0).shape, buf(1).shape[0], Y.shape[1]);
  s.dw = DK > 0, s.nhwc = nhwc_stored(buf(0));
  // The same sizing as ffn_shape (re-derived: the plan keeps no shape of the hidden tensor).
  if (!ffn_size(p, &s)) return gen.why = "ConvFFN shape does not fit the kernel", gen;
  // NHWC (X and Y channels-last): X's tile is staged [BN][CIN] (pixel rows of 16-byte chunks) and
  // read with plain ldmatrix as fc1's B fragments; the output is stored [pixel][channel].
  const bool nhwc = nhwc_stored(buf(0));
  if (nhwc != nhwc_stored(Y) || (nhwc && DK)) return gen.why = "ConvFFN layouts differ (or NHWC with a depthwise conv)", gen;
  if (DK && (DK % 2 == 0 || DK > kFfnDwMaxK || buf(5).shape != Shape{s.Cin, 1, DK, DK} ||
             (c.inputs[6] >= 0 && numel(buf(6).shape) != s.Cin) || !is_float(buf(0).dtype) || !is_float(buf(5).dtype) ||
             (c.inputs[6] >= 0 && !is_float(buf(6).dtype))))
    return gen.why = "ConvFFN depthwise conv out of shape", gen;
  for (int64_t q = 0; q < po2; ++q)
    if (unary_expr(k.post_ops[size_t(q)], "v").empty()) return gen.why = "ConvFFN: fc1 post-op not unary", gen;
  // fc2's post-ops on the fused call (operand slots already moved).
  Kernel k2 = k;
  k2.post_ops.assign(k.post_ops.begin() + po2, k.post_ops.end());
  const Ctx x2{p, c, k2};
  if (std::string why; !post_ops_ok(x2, &why)) return gen.why = why, gen;
  // The depthwise pair inside (the comment above kFfnPairScratch): its weights [Cin, 1, K, K], its
  // biases Cin floats, fc2's residual operand (slot "cuda_ffn_res", X's buffer in the call)
  // computed again from X.
  const int64_t RES = PAIR ? k.attrs.i("cuda_ffn_res", -1) : -1;
  std::map<int, std::string> res_expr;
  if (PAIR) {
    const int64_t ka = PK[0], kb = PK[1];
    auto bias_ok = [&](size_t j) { return c.inputs[j] < 0 || (numel(buf(j).shape) == s.Cin && is_float(buf(j).dtype)); };
    if (nhwc || ka % 2 == 0 || kb % 2 == 0 || ka > kFfnDwMaxK || kb > kFfnDwMaxK || buf(5).shape != Shape{s.Cin, 1, ka, ka} ||
        buf(7).shape != Shape{s.Cin, 1, kb, kb} || !bias_ok(6) || !bias_ok(8) || !is_float(buf(0).dtype) ||
        !is_float(buf(5).dtype) || !is_float(buf(7).dtype) || RES < int64_t(nw) || RES >= int64_t(c.inputs.size()) ||
        c.inputs[size_t(RES)] != c.inputs[0])
      return gen.why = "ConvFFN depthwise pair out of shape", gen;
    res_expr[int(RES)] = "opv_res(o0, o1, o2, o3)";
  }
  const std::map<int, std::string>* computed = PAIR ? &res_expr : nullptr;
  const int64_t TILE = s.Cout * s.BN;
  // The split's partials through a cluster (kernel attr "cuda_ffn_cluster" 0/1 overrides the
  // default: compute_90+ and Options::cluster): the S blocks of a tile are one cluster, each keeps
  // its partial tile in its slab ring (TILE floats must fit) and sums a share of the tile from all S.
  const bool can_cluster = ffn_can_cluster(p, s);
  const int64_t cl_attr = k.attrs.i("cuda_ffn_cluster", can_cluster && Options::from_meta(p.meta).cluster ? 1 : 0);
  if (cl_attr != 0 && cl_attr != 1) return gen.why = "ConvFFN: cuda_ffn_cluster must be 0 or 1", gen;
  if (cl_attr == 1 && !can_cluster)
    return gen.why = "ConvFFN: cuda_ffn_cluster needs a hidden split of 2-16 blocks, compute_90 and the partial tile within the slab ring", gen;
  const bool cluster = cl_attr == 1;
  if (PAIR && (s.BN != kFfnBN || !(cluster || s.S == 1)))
    return gen.why = "ConvFFN: the depthwise pair inside needs 16-pixel tiles, unsplit or split over a cluster", gen;
  const FfnPairGeom pg =
      PAIR ? ffn_pair_geom(s, buf(0).shape[2], PK[0], PK[1], cluster, ffn_pair_budget(p, s)) : FfnPairGeom{};
  if (PAIR && pg.CB < 1)
    return gen.why = "ConvFFN: the depthwise pair's staging does not fit shared memory", gen;
  // The push form of the cluster's sum (TuneKey::ClusterPush, kClusterPushHelpers): each block
  // pushes every peer's share of its partial into that peer's receive buffer (dynamic shared
  // memory after the ring and the pair's staging: [S][PER] float4s) with st.async, counted by the
  // peer's mbarrier, where that buffer is at most kClusterPushMaxBytes and fits the block's shared
  // memory (the default since session 33: ffn_256 7.0 against 7.6 us a call under ncu on the H200).
  const int64_t per = (s.Cout * s.BN / 4 + s.S - 1) / s.S;  // PER: float4s of a block's share
  const int64_t pair_bytes = PAIR ? (pg.bytes() + 15) / 16 * 16 : 0;
  const bool push = cluster && tune_target(p, TuneKey::ClusterPush) == 1 && s.S * per * 16 <= kClusterPushMaxBytes &&
                    ffn_smem_total(s, pair_bytes + s.S * per * 16) <= ffn_smem_cap(p);
  const std::string rs_off = std::to_string(s.dynamic_bytes() + pair_bytes);
  // Warps a block (kernel attr "cuda_ffn_warps", else ffn_warps' choice): 4, each on 16 rows of a
  // slab and both 8-pixel halves of the tile, or 8, warp w on rows (w & 3) * 16 and pixel half w >> 2.
  const int64_t WARPS = k.attrs.i("cuda_ffn_warps", ffn_warps(s));
  if (WARPS != 4 && WARPS != 8) return gen.why = "ConvFFN: cuda_ffn_warps must be 4 or 8", gen;
  const bool w8 = WARPS == 8;
  if (s.BN != kFfnBN && ((s.S > 1 && !w8) || DK || nhwc))
    return gen.why = "ConvFFN: wide pixel tiles need the NCHW form without the depthwise conv (split: on 8 warps)", gen;
  const int64_t NT = WARPS * 32;                        // threads a block
  const std::string nts = std::to_string(NT);
  const std::string wrow = w8 ? "wr" : "warp";          // the warp's 16-row group of a slab
  // float4s of every partial a thread loads at once in the last block's reduction (at most
  // kFfnReduceInFlight: the fc2 accumulators are dead by then; a divisor of TILE / (4 NT), a whole
  // number: Cout % 64 == 0)
  const int64_t NVT = TILE / (4 * NT);
  int64_t nvb = std::max<int64_t>(1, std::min<int64_t>(NVT, kFfnReduceInFlight / std::max<int64_t>(s.S, 1)));
  while (NVT % nvb) --nvb;
  // The slab schedule: where every block has the same CPB chunks (NC % CPB == 0) their count is a
  // constant, and up to kFfnMaxUnrolledSlabs slabs the chunk loop is unrolled too: every slab's
  // index is then known to the compiler, so its ring buffer, its W1/W2 choice and its source rows
  // are resolved at compile time instead of by each thread for each slab (integer division,
  // remainders and branches: most of a warp's ~1,200 instructions in ffn_256, run 42's profile).
  const bool fixed_chunks = s.NC % s.CPB == 0;
  const bool unroll_chunks = fixed_chunks && s.slabs() <= kFfnMaxUnrolledSlabs;
  std::ostringstream b;
  b << "  // ConvFFN: " << s.Cin << " -> " << s.Hd << " -> " << s.Cout << " channels over " << s.P << " pixels, "
    << s.BN << " pixels x " << kFfnHC << " hidden a step, hidden split " << s.S << " x " << s.CPB << " chunks, "
    << s.NB << " weight slab buffers" << (s.deep ? " (deep ring: dynamic shared memory)" : "")
    << (w8 ? ", 8 warps (rows (w & 3) * 16, pixel half w >> 2)" : "") << "\n"
    << "  constexpr int BN = " << s.BN << ", HC = " << kFfnHC << ", LDX = BN + 8, LDG = BN + 8;\n"
    << "  constexpr int CIN = " << s.Cin << ", HD = " << s.Hd << ", COUT = " << s.Cout << ", P = " << s.P
    << ", S = " << s.S << ", CPB = " << s.CPB << ", NC = " << s.NC << ";\n"
    << "  constexpr int SK1 = " << s.SK1 << ", NS1 = CIN / SK1, NS2 = COUT / 64, NSL = NS1 + NS2, NB = " << s.NB
    << ", TILE = COUT * BN;\n"
    << (nhwc ? "  constexpr int LDXN = CIN + 8;  // NHWC: Xs[pixel][channel]\n  __shared__ __align__(16) unsigned short Xs[BN * LDXN];\n"
             : "  __shared__ __align__(16) unsigned short Xs[CIN * LDX];\n")
    << "  __shared__ __align__(16) unsigned short Gs[HC * LDG];\n"
    << (s.deep || PAIR || push ? "  extern __shared__ __align__(128) unsigned char opv_dsmem[];\n" : "")
    << (push ? "  __shared__ __align__(8) unsigned long long rbar_;  // counts the bytes of this block's share the cluster pushed\n"
               "  float4* const Rs = (float4*)(opv_dsmem + " + rs_off + ");  // [S][PER]: the S partials of this block's share\n"
             : "")
    << (s.deep ? "  unsigned short (*const Ws)[64 * 64] = (unsigned short (*)[64 * 64])opv_dsmem;  // slab ring (dynamic): 64 rows x 128 bytes, swizzled\n"
               : "  __shared__ __align__(128) unsigned short Ws[NB][64 * 64];  // slab ring: 64 rows x 128 bytes, swizzled\n")
    << "  __shared__ int last_;\n  (void)last_; (void)TILE;\n"
    << "  const opv_idx tile = blockIdx.x / S;\n"
    << "  const int sp = (int)(blockIdx.x % S);\n"
    << "  const opv_idx p0 = (tile % " << s.PT << ") * BN, n = tile / " << s.PT << ";\n"
    << "  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;\n"
    << (w8 ? "  const int wr = warp & 3, wn = warp >> 2;  // the warp's 16 rows of a slab, its " + std::to_string(s.BN / 2) + "-pixel half\n" : "")
    << (DK || PAIR ? "" : "  const unsigned short* Xg = in0 + n * (opv_idx)(CIN * P);\n")
    << (fixed_chunks ? "  const int c_beg = sp * CPB;  // every block has CPB chunks (NC % CPB == 0)\n"
                       "  constexpr int nsteps = CPB * NSL;\n"
                     : "  const int c_beg = sp * CPB, c_end = c_beg + CPB < NC ? c_beg + CPB : NC;\n"
                       "  const int nsteps = (c_end - c_beg) * NSL;\n")
    // Slab j of the block's chunk cq into ring buffer `buf` (nothing past the last chunk); slab q
    // of the block's sequence is slab q % NSL of chunk q / NSL, into buffer q % NB.
    << "  auto issue_at = [&](int cq, int j, int buf) {\n"
    << "    if (cq * NSL >= nsteps) return;\n"
    << "    const int h0 = (c_beg + cq) * HC;\n"
    << "    unsigned short* dst = Ws[buf];\n"
    << "    if (j < NS1) {  // W1 rows h0.., input channels j * SK1..\n"
    << block_steps(64 * (s.SK1 / 8), NT, "      ")
    << "        const int r = e / (SK1 / 8), cc = e % (SK1 / 8);\n"
    << "        opv_cp16(dst + r * 64 + ((cc ^ (r & 7)) * 8), in1 + (opv_idx)(h0 + r) * CIN + j * SK1 + cc * 8, true);\n"
    << "      }\n"
    << "    } else {  // W2 rows (j - NS1) * 64.., hidden channels h0..\n"
    << block_steps(64 * 8, NT, "      ")
    << "        const int r = e >> 3, cc = e & 7;\n"
    << "        opv_cp16(dst + r * 64 + ((cc ^ (r & 7)) * 8), in3 + (opv_idx)((j - NS1) * 64 + r) * HD + h0 + cc * 8, true);\n"
    << "      }\n"
    << "    }\n"
    << "  };\n"
    << "  auto issue = [&](int q) { issue_at(q / NSL, q % NSL, q % NB); };\n"
    // A fragment (16 rows from `row0`, 16 columns from `col`) of a swizzled slab.
    << "  auto lda = [&](unsigned* r, const unsigned short* slab, int row0, int col) {\n"
    << "    const int row = row0 + (lane & 15), cc = (col >> 3) + (lane >> 4);\n"
    << "    opv_ldsm4(r, slab + row * 64 + ((cc ^ (row & 7)) * 8));\n"
    << "  };\n";
  // The weight prologue (kEntryOpenLate): with W1 and W2 plan Constants the first slabs are issued
  // before the wait for the kernels before this one, X after it.
  const bool late = weight_input(p, c, 1) && weight_input(p, c, 3);
  // Groups: the first holds X and slab 0; then one per slab (empty past the last), so before
  // slab q is used `wait_group NB - 2` leaves only slabs q+1 .. q+NB-2 in flight. With the weight
  // prologue X's cp.async group comes last, and the kernel waits for every group once before the
  // first slab; with ffn_x_regs (TuneKey::FfnXRegs) X's tile is staged through registers instead
  // (every 16-byte load a thread issued before its first store into Xs), so X is no cp.async
  // group: the wait for X is a wait for X alone, and each slab is waited for where it is used (the
  // first slab's barrier publishes Xs).
  bool x_async = !DK && !PAIR && (nhwc || s.P % 8 == 0);
  // X's 16-byte pieces: piece e's pixel pp (and channel row r or column cc), source and destination
  const int64_t x_vecs = nhwc ? s.BN * (s.Cin / 8) : s.Cin * s.BN / 8;
  const std::string x_at = nhwc ? "    const int pp = e / (CIN / 8), cc = (e % (CIN / 8)) * 8;\n"
                                : "    const int r = e / (BN / 8), pp = (e % (BN / 8)) * 8;\n";
  const std::string x_src = nhwc ? "Xg + q * CIN + cc" : "Xg + r * P + q";
  const std::string x_dst = nhwc ? "Xs + pp * LDXN + cc" : "Xs + r * LDX + pp";
  std::ostringstream xl;  // X's staging
  if (DK || PAIR) {
    ;  // X is computed below, while the first slabs are in flight
  } else if (x_async && late && tune_target(p, TuneKey::FfnXRegs) == 1 && (x_vecs + NT - 1) / NT <= kMaxBlockSteps) {
    // (block_steps unrolls i_ over the pieces up to kMaxBlockSteps a thread: xv_[i_] is a register)
    xl << "  uint4 xv_[" << (x_vecs + NT - 1) / NT << "];  // X's tile through registers (ffn_x_regs)\n"
       << block_steps(x_vecs, NT, "  ") << x_at << "    const opv_idx q = p0 + pp;\n"
       << "    xv_[i_] = q < P ? *(const uint4*)(" << x_src << ") : make_uint4(0u, 0u, 0u, 0u);\n  }\n"
       << block_steps(x_vecs, NT, "  ") << x_at << "    *(uint4*)(" << x_dst << ") = xv_[i_];\n  }\n";
    x_async = false;
  } else if (x_async) {
    xl << block_steps(x_vecs, NT, "  ") << x_at << "    const opv_idx q = p0 + pp;\n"
       << "    const bool ok = q < P;\n"
       << "    opv_cp16(" << x_dst << ", ok ? " << x_src << " : Xg, ok);\n  }\n";
  } else {
    xl << "  for (int e = tid; e < CIN * BN; e += " << nts << ") {\n"
       << "    const int r = e / BN, pp = e % BN;\n"
       << "    const opv_idx q = p0 + pp;\n"
       << "    Xs[r * LDX + pp] = q < P ? Xg[r * P + q] : (unsigned short)0;\n  }\n";
  }
  if (push) b << cluster_push_start(per);  // before the barrier below
  // The first half of the barrier before the first store into a peer (the pair's phase 2, the push)
  if ((PAIR && cluster) || push)
    b << "  opv_cluster_arrive_relaxed();  // this block is running" << (push ? ", its mbarrier made" : "") << "\n";
  if (!late) b << xl.str();
  b << "#pragma unroll\n  for (int q = 0; q < NB - 1; ++q) {\n"
    << "    issue(q);\n    asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n  }\n";
  if (late) {
    b << "  OPV_KERNEL_ENTRY();  // the slabs above are weights: no kernel writes them\n" << xl.str();
    if (x_async) b << "  asm volatile(\"cp.async.commit_group;\\n\\tcp.async.wait_group 0;\" ::: \"memory\");\n";
  }
  if (DK) {
    // The depthwise conv's outputs of the tile into Xs (the kernel comment): taps in the depthwise
    // pair kernel's order (kh, then kw; fmaf from 0, zero outside the map), then the bias.
    const int64_t H = buf(0).shape[2], W = s.OW;
    const DType xd = buf(0).dtype, wd = buf(5).dtype;
    const std::string bias = c.inputs[6] >= 0 ? " + " + load(buf(6).dtype, "in6", "ch") : std::string();
    const std::string po = unary_ops(0, po1, "      ");
    b << "  {  // depthwise " << DK << "x" << DK << " of in0 into Xs\n"
      << "    constexpr int DK = " << DK << ", DH = " << (DK - 1) / 2 << ", H = " << H << ", W = " << W << ";\n";
    if (W % kFfnBN == 0) {
      // The tile is BN pixels of one row: a half-warp per channel, lane j on pixel j. Each input
      // row is read once, as two coalesced loads a lane (columns c0 - DH + j and that + 16), and
      // the taps come from the neighbouring lanes by shuffles; lane kw < DK holds the row's weight kw.
      static_assert(kFfnBN == 16, "a half-warp per tile row");
      b << "    const int j = lane & 15;\n"
        << "    const int r = (int)(p0 / W), c0 = (int)(p0 % W);\n"
        << "    float x0[DK], x1[DK], wl[DK];  // a channel's input rows and weight rows, one element a lane\n"
        << "    auto fetch = [&](int ch) {\n"
        << "      const opv_idx xc = (n * CIN + ch) * (opv_idx)P;\n"
        << "#pragma unroll\n      for (int kh = 0; kh < DK; ++kh) {\n"
        << "        const int ih = r + kh - DH, iw0 = c0 - DH + j, iw1 = iw0 + 16;\n"
        << "        const bool rok = ih >= 0 && ih < H;\n"
        << "        x0[kh] = rok && iw0 >= 0 && iw0 < W ? " << load(xd, "in0", "xc + ih * W + iw0") << " : 0.0f;\n"
        << "        x1[kh] = rok && j < DK - 1 && iw1 < W ? " << load(xd, "in0", "xc + ih * W + iw1") << " : 0.0f;\n"
        << "        wl[kh] = j < DK ? " << load(wd, "in5", "ch * (DK * DK) + kh * DK + j") << " : 0.0f;\n"
        << "      }\n    };\n"
        // Every read of a channel is in flight before the previous channel's taps are summed (one
        // memory latency per channel, not one per row).
        << "    int ch = warp * 2 + (lane >> 4);\n"
        << "    fetch(ch);\n"
        << "    for (; ch < CIN; ch += " << 2 * WARPS << ") {  // CIN % 16 == 0: the warp stays whole\n"
        << "      float y0[DK], y1[DK], wr[DK];\n"
        << "#pragma unroll\n      for (int kh = 0; kh < DK; ++kh) y0[kh] = x0[kh], y1[kh] = x1[kh], wr[kh] = wl[kh];\n"
        << "      if (ch + " << 2 * WARPS << " < CIN) fetch(ch + " << 2 * WARPS << ");\n"
        << "      float acc = 0.0f;\n"
        << "#pragma unroll\n      for (int kh = 0; kh < DK; ++kh)\n"
        << "#pragma unroll\n        for (int kw = 0; kw < DK; ++kw) {\n"
        << "          const float a = __shfl_sync(0xffffffffu, y0[kh], (j + kw) & 15, 16);\n"
        << "          const float e = __shfl_sync(0xffffffffu, y1[kh], (j + kw) & 15, 16);\n"
        << "          const float wv = __shfl_sync(0xffffffffu, wr[kh], kw, 16);\n"
        << "          acc = fmaf(j + kw < 16 ? a : e, wv, acc);\n"
        << "        }\n"
        << "      float v = acc" << bias << ";\n"
        << po << "      Xs[ch * LDX + j] = opv_f2h(v);\n"
        << "    }\n";
    } else {
      // A thread per output pixel (pixels fastest across the lanes); the tile may span rows.
      b << "    for (int e = tid; e < CIN * BN; e += " << nts << ") {\n"
        << "      const int ch = e / BN, pp = e % BN;\n"
        << "      const opv_idx q = p0 + pp;\n"
        << "      float acc = 0.0f;\n"
        << "      if (q < P) {\n"
        << "        const int r = (int)(q / W), c0 = (int)(q % W);\n"
        << "        const opv_idx xc = (n * CIN + ch) * (opv_idx)P;\n"
        << "#pragma unroll\n        for (int kh = 0; kh < DK; ++kh) {\n"
        << "          const int ih = r + kh - DH;\n"
        << "          const bool rok = ih >= 0 && ih < H;\n"
        << "#pragma unroll\n          for (int kw = 0; kw < DK; ++kw) {\n"
        << "            const int iw = c0 - DH + kw;\n"
        << "            const float xv = rok && iw >= 0 && iw < W ? " << load(xd, "in0", "xc + ih * W + iw") << " : 0.0f;\n"
        << "            acc = fmaf(xv, " << load(wd, "in5", "ch * (DK * DK) + kh * DK + kw") << ", acc);\n"
        << "          }\n        }\n      }\n"
        << "      float v = acc" << bias << ";\n"
        << po << "      Xs[ch * LDX + pp] = q < P ? opv_f2h(v) : (unsigned short)0;\n"
        << "    }\n";
    }
    b << "  }\n";
  }
  std::ostringstream pair_code;  // the pair's X tile (emitted before the main loop, after the epilogue's prefetch)
  if (PAIR) {
    const DType xd = buf(0).dtype;
    const int64_t H = pg.H, W = pg.W;
    // fc2's residual at output (n_, c_, y, x): the pair's first conv there, as its call stores it.
    b << "  auto opv_res = [&](opv_idx n_, opv_idx c_, opv_idx y, opv_idx x) -> float {  // the pair's first output at (n_, c_, y, x)\n"
      << "    const opv_idx xc = (n_ * " << I(s.Cin) << " + c_) * (opv_idx)" << I(s.P) << ";\n"
      << "    float acc = 0.0f;\n"
      << "#pragma unroll\n    for (int kh = 0; kh < " << pg.KA << "; ++kh) {\n"
      << "      const opv_idx ih = y + kh - " << (pg.KA - 1) / 2 << ";\n"
      << "      const bool rok = ih >= 0 && ih < " << H << ";\n"
      << "#pragma unroll\n      for (int kw = 0; kw < " << pg.KA << "; ++kw) {\n"
      << "        const opv_idx iw = x + kw - " << (pg.KA - 1) / 2 << ";\n"
      << "        const float xv = rok && iw >= 0 && iw < " << W << " ? " << load(xd, "in0", "xc + ih * " + I(W) + " + iw") << " : 0.0f;\n"
      << "        acc = fmaf(xv, " << load(buf(5).dtype, "in5", "c_ * " + I(pg.KA * pg.KA) + " + kh * " + I(pg.KA) + " + kw") << ", acc);\n"
      << "      }\n    }\n"
      << "    float v = acc" << (c.inputs[6] >= 0 ? " + " + load(buf(6).dtype, "in6", "c_") : std::string()) << ";\n"
      << unary_ops(0, poa, "    ")
      << "    return opv_h2f(opv_f2h(v));\n  };\n";
    const int64_t NWTS = pg.taps();
    // `dst`[e] = `value` for e < `count` (`decl` declares what value reads from e): every thread's
    // LB loads of a round in flight at once, then their stores.
    auto staged = [&](const std::string& count, const std::string& dst, const std::string& decl, const std::string& value) {
      return "      for (int e0 = tid; e0 < " + count + "; e0 += LB * " + nts + ") {\n"
             "        float v[LB];\n"
             "#pragma unroll\n        for (int u = 0; u < LB; ++u) {\n"
             "          const int e = e0 + u * " + nts + ";\n"
             "          " + decl + "\n"
             "          v[u] = e >= " + count + " ? 0.0f\n               : " + value + ";\n"
             "        }\n"
             "#pragma unroll\n        for (int u = 0; u < LB; ++u)\n"
             "          if (e0 + u * " + nts + " < " + count + ") " + dst + "[e0 + u * " + nts + "] = v[u];\n"
             "      }\n";
    };
    pair_code
      << "  {  // the depthwise pair (" << pg.KA << "x" << pg.KA << ", then " << pg.KB << "x" << pg.KB
      << ") of this block's channels at the tile's pixels into Xs\n"
      << "    constexpr int KA = " << pg.KA << ", KB = " << pg.KB << ", H = " << H << ", W = " << W << ", TR = " << pg.TR
      << ", XC = " << pg.XC << ", CB = " << pg.CB << ", NWTS = " << NWTS << ";\n"
      << "    constexpr int AR = TR + KB - 1, AC = XC + KB - 1, IR = AR + KA - 1, IC = AC + KA - 1;\n"
      << "    float* const sI = (float*)(opv_dsmem + " << s.dynamic_bytes() << ");  // [CB][IR][IC] the input, zero outside the map\n"
      << "    float* const sA = sI + CB * IR * IC;  // [CB][AR][AC] the first conv, rounded as stored; zero outside the map\n"
      << "    float* const sW = sA + CB * AR * AC;  // [CB][NWTS] both convs' taps, then their biases\n"
      << "    const int y0 = (int)(p0 / W), x0 = " << (pg.row ? "(int)(p0 % W)" : "0") << ";  // the tile's box\n"
      << "    const int ay0 = y0 - (KB - 1) / 2, ax0 = x0 - (KB - 1) / 2, iy0 = ay0 - (KA - 1) / 2, ix0 = ax0 - (KA - 1) / 2;\n"
      << (cluster ? "    const int ch_lo = sp * " + std::to_string(pg.CPR) + ", ch_hi = ch_lo + " + std::to_string(pg.CPR) +
                        " < CIN ? ch_lo + " + std::to_string(pg.CPR) + " : CIN;  // this rank's channels\n"
                  : "    constexpr int ch_lo = 0, ch_hi = CIN;\n")
      << "    const opv_idx xb = n * (opv_idx)(CIN * P);\n"
      << "#pragma unroll 1\n    for (int cb = ch_lo; cb < ch_hi; cb += CB) {\n"
      << "      const int nch = ch_hi - cb < CB ? ch_hi - cb : CB;\n"
      << "      constexpr int LB = 8;\n"
      << staged("nch * (IR * IC)", "sI",
                "const int ci = e / (IR * IC), y = iy0 + e % (IR * IC) / IC, x = ix0 + e % IC;",
                "y >= 0 && y < H && x >= 0 && x < W ? " + load(xd, "in0", "xb + (cb + ci) * (opv_idx)P + y * W + x") + " : 0.0f")
      << staged("nch * NWTS", "sW", "const int ch = cb + e / NWTS, j = e % NWTS;",
                "j < KA * KA ? " + load(buf(5).dtype, "in5", "ch * (KA * KA) + j") +
                    "\n               : j < KA * KA + KB * KB ? " + load(buf(7).dtype, "in7", "ch * (KB * KB) + j - KA * KA") +
                    "\n               : j == NWTS - 2 ? " + (c.inputs[6] >= 0 ? load(buf(6).dtype, "in6", "ch") : std::string("0.0f")) +
                    "\n               : " + (c.inputs[8] >= 0 ? load(buf(8).dtype, "in8", "ch") : std::string("0.0f")))
      << "      __syncthreads();\n"
      // the first conv over the tile's box and the second conv's halo: a thread a column of AR
      // outputs, each input row read once into registers for the outputs it serves
      << "      for (int e = tid; e < nch * AC; e += " << nts << ") {\n"
      << "        const int ci = e / AC, cc = e % AC, x = ax0 + cc;\n"
      << "        const float* xi = sI + ci * (IR * IC) + cc;\n"
      << "        const float* w = sW + ci * NWTS;\n"
      << "        float wa[KA * KA];\n"
      << "#pragma unroll\n        for (int j = 0; j < KA * KA; ++j) wa[j] = w[j];\n"
      << "        float acc[AR];\n"
      << "#pragma unroll\n        for (int rr = 0; rr < AR; ++rr) acc[rr] = 0.0f;\n"
      << "#pragma unroll\n        for (int ir = 0; ir < IR; ++ir) {\n"
      << "          float xr[KA];\n"
      << "#pragma unroll\n          for (int kw = 0; kw < KA; ++kw) xr[kw] = xi[ir * IC + kw];\n"
      << "#pragma unroll\n          for (int kh = 0; kh < KA; ++kh)  // output row ir - kh takes this row as its tap row kh\n"
      << "            if (ir - kh >= 0 && ir - kh < AR)\n"
      << "#pragma unroll\n              for (int kw = 0; kw < KA; ++kw) acc[ir - kh] = fmaf(xr[kw], wa[kh * KA + kw], acc[ir - kh]);\n"
      << "        }\n"
      << "#pragma unroll\n        for (int rr = 0; rr < AR; ++rr) {\n"
      << "          const int y = ay0 + rr;\n"
      << "          float v = acc[rr]" << (c.inputs[6] >= 0 ? " + w[NWTS - 2]" : "") << ";\n"
      << unary_ops(0, poa, "          ")
      << "          sA[ci * (AR * AC) + rr * AC + cc] = y >= 0 && y < H && x >= 0 && x < W ? opv_h2f(opv_f2h(v)) : 0.0f;  // as stored\n"
      << "        }\n"
      << "      }\n"
      << "      __syncthreads();\n"
      // the second conv at the tile's pixels
      << "      for (int e = tid; e < nch * BN; e += " << nts << ") {\n"
      << "        const int ci = e / BN, pp = e % BN;\n"
      << "        const opv_idx q = p0 + pp;\n"
      << "        unsigned short h = 0;\n"
      << "        if (q < P) {\n"
      << "          const int y = (int)(q / W), x = (int)(q % W);\n"
      << "          const float* a = sA + ci * (AR * AC) + (y - y0) * AC + (x - x0);\n"
      << "          const float* w = sW + ci * NWTS + KA * KA;\n"
      << "          float acc = 0.0f;\n"
      << "#pragma unroll\n          for (int kh = 0; kh < KB; ++kh)\n"
      << "#pragma unroll\n            for (int kw = 0; kw < KB; ++kw) acc = fmaf(a[kh * AC + kw], w[kh * KB + kw], acc);\n"
      << "          float v = acc" << (c.inputs[8] >= 0 ? " + sW[ci * NWTS + NWTS - 1]" : "") << ";\n"
      << unary_ops(poa, po1, "          ")
      << "          h = opv_f2h(v);\n"
      << "        }\n"
      << "        Xs[(cb + ci) * LDX + pp] = h;\n"
      << "      }\n"
      << "      __syncthreads();  // the staging is free again; this batch's rows of Xs are written\n"
      << "    }\n";
    if (cluster)
      pair_code
          << "    // this rank's rows of Xs into every other block of the cluster, 16 bytes a store\n"
          << "    opv_cluster_wait();  // every block of the cluster is running (the arrive at the kernel's start)\n"
          << "    constexpr int V = BN / 8;  // 16-byte pieces a row\n"
          << "    const int nrow = ch_hi - ch_lo;\n"
          << "    for (int e = tid; e < (S - 1) * nrow * V; e += " << nts << ") {\n"
          << "      const int pr = e / (nrow * V), ch = ch_lo + e % (nrow * V) / V, j = e % V;\n"
          << "      const unsigned short* src = Xs + ch * LDX + j * 8;\n"
          << "      opv_st_cluster4(opv_cluster_addr(src, (unsigned)(pr < sp ? pr : pr + 1)), *(const uint4*)src);\n"
          << "    }\n"
          << "    opv_cluster_sync();  // every rank's rows in every block's Xs\n";
    pair_code << "  }\n";
  }
  // Per warp: NWT n-tiles of 8 pixels (4 warps: both halves of the tile; 8 warps: half wn), the
  // pixel column of n-tile nt (`col`), and the B fragments' ldmatrix (x4: both halves; x2: one).
  // With 8 warps on wide tiles (BN > 16) a warp has BN / 16 n-tiles from pixel BN / 2 * wn (pix0).
  const int64_t NWT = s.BN / (w8 ? 16 : 8), NP = NWT / 2;  // NP: pairs of n-tiles a warp loads with one ldmatrix x4
  const bool one_nt = NWT == 1;  // 8 warps on 16-pixel tiles: one n-tile a warp, its B fragments by ldmatrix x2
  const std::string pix0 = w8 && !one_nt ? " + wn * " + std::to_string(s.BN / 2) : "";
  const std::string nwt = std::to_string(NWT), col = one_nt ? "wn * 8" : "nt * 8" + pix0;
  // The accumulator (mt, nt) of float4 j of a thread's fragments: j / NWT, j % NWT.
  auto frag_of = [&](const std::string& j0) {
    const std::string j = j0.find(' ') == std::string::npos ? j0 : "(" + j0 + ")";
    return one_nt ? "      const int mt = " + j + ";\n"
              : NWT == 2 ? "      const int mt = " + j + " >> 1, nt = " + j + " & 1;\n"
                         : "      const int mt = " + j + " / " + nwt + ", nt = " + j + " % " + nwt + ";\n";
  };
  // fc2's epilogue at output (m, q): the bias, fc2's post-ops, the store. With `pf` (an index into
  // the prefetch registers) the bias and the post-ops' operands come from registers that
  // `prefetch` loaded before the final barrier or the main loop, not from global memory after it.
  const std::string coords = "      const opv_idx o0 = n, o1 = m, o2 = q / " + I(s.OW) + ", o3 = q % " + I(s.OW) +
                             ";\n      (void)o0; (void)o1; (void)o2; (void)o3;\n";
  const bool has_b2 = c.inputs[4] >= 0;
  // A thread's fragments r = 0, 1 (and 2, 3) are pixels q, q + 1 of one output row: in NCHW with
  // an even pixel count both exist together and the pair is one 4-byte (fp16) or 8-byte (fp32)
  // store. The even fragment's value waits in `pv_` (declared before each fragment loop by
  // `pair_decl`) for the odd one's store. Half the store instructions (session 30: the 2-byte
  // stores of the batch-32 ConvFFNs stalled on the LSU queue).
  const bool pair = !nhwc && s.P % 2 == 0 && (Y.dtype == DType::F16 || Y.dtype == DType::F32);
  const std::string pair_decl =
      !pair ? "" : Y.dtype == DType::F16 ? "      unsigned short pv_ = 0;\n" : "      float pv_ = 0.0f;\n";
  auto epilogue = [&](const std::string& pf) {
    const std::string ops = coords + "      float v = sum" +
                            (has_b2 ? " + " + (pf.empty() ? load(buf(4).dtype, "in4", "m") : "pfb[" + pf + "]") : std::string()) +
                            ";\n" + post_ops_split(x2, pf, computed).ops;
    if (!pair)
      return ops + "      " + store(Y.dtype, "out0", nhwc ? "(n * P + q) * COUT + m" : "(n * COUT + m) * P + q", "v") + "\n";
    return ops + (Y.dtype == DType::F16
                      ? "      if (r & 1) *(unsigned*)(out0 + (n * COUT + m) * P + q - 1) = (unsigned)pv_ | (unsigned)opv_f2h(v) << 16;\n"
                        "      else pv_ = opv_f2h(v);\n"
                      : "      if (r & 1) *(float2*)(out0 + (n * COUT + m) * P + q - 1) = make_float2(pv_, v);\n"
                        "      else pv_ = v;\n");
  };
  // The prefetch registers' declaration ([dims] each) and their loads at (m, q), index pf.
  const int nops = post_ops_split(x2, "", computed).operands, npf = nops + (has_b2 ? 1 : 0);
  auto prefetch_decl = [&](const std::string& dims) { return prefetch_decls(nops, has_b2, dims); };
  auto prefetch = [&](const std::string& pf) {
    return coords + (has_b2 ? "      pfb[" + pf + "] = " + load(buf(4).dtype, "in4", "m") + ";\n" : std::string()) +
           post_ops_split(x2, pf, computed).loads;
  };
  const std::string mq = "    const opv_idx m = mt * 64 + " + wrow + " * 16 + g + (r >> 1) * 8, q = p0 + " + col + " + 2 * t + (r & 1);\n";
  std::ostringstream epi;
  epi << epilogue("");
  // Unsplit layers (S == 1) run the epilogue on their own accumulators right after the main loop:
  // where the operands of all of them fit 32 registers, they are loaded before the loop.
  const bool pf1 = s.S == 1 && npf > 0 && s.Cout / 64 * NWT * 4 * npf <= 32;
  if (pf1)
    b << prefetch_decl("[NS2][" + nwt + "][4]")
      << "#pragma unroll\n  for (int mt = 0; mt < NS2; ++mt)\n#pragma unroll\n    for (int nt = 0; nt < " << nwt << "; ++nt)\n"
      << "#pragma unroll\n      for (int r = 0; r < 4; ++r) {\n"
      << mq << "    if (q < P) {\n" << prefetch("mt][nt][r") << "    }\n  }\n";
  // The cluster form's last sum: the tile's TILE / 4 float4s in S contiguous shares of PER =
  // ceil(TILE / 4 / S), float4 f summed by block (rank) f / PER, its thread (f % PER) % NT, at the
  // coordinates of fragment j = f / NT of thread ft = f % NT. (Until session 32 block f / NT summed
  // NT float4s in a row: stage 2's 1,024 float4s went to 4 of its 12 blocks, each loading 48 KB
  // from its peers while the other 8 waited at the exit barrier.) Where each thread sums at most
  // one float4 (PER <= NT), the epilogue's operands of that float4 are
  // loaded here, before the main loop: loaded after it, the first cluster barrier's release
  // waited for them (a global-memory round trip on every split layer's critical path).
  const std::string frag_of_j = frag_of("j");
  const std::string frag_coords =
      "      const int warp = ft >> 5, lane = ft & 31, g = lane >> 2, t = lane & 3;\n" +
      std::string(w8 ? "      const int wr = warp & 3, wn = warp >> 2;\n" : "") + frag_of_j;
  const bool pf_cluster = cluster && npf > 0 && per <= NT;  // cluster: S > 1
  if (pf_cluster)
    b << prefetch_decl("[4]")
      << "  if (tid < " << per << " && sp * " << per << " + tid < TILE / 4) {  // the epilogue's operands of this thread's float4\n"
      << "    const int f = sp * " << per << " + tid, j = f / " << nts << ", ft = f % " << nts << ";\n"
      << frag_coords
      << "#pragma unroll\n      for (int r = 0; r < 4; ++r) {\n"
      << mq << "    if (q < P) {\n" << prefetch("r") << "    }\n      }\n  }\n";
  b << pair_code.str();
  // With ffn_fc2_chains 2 (TuneKey::FfnFc2Chains) fc2's odd k-steps accumulate into acc2b, added
  // to acc2 after the main loop: each mma waits on the one two k-steps before (another order).
  const bool fc2_chains2 = tune_target(p, TuneKey::FfnFc2Chains) == 2;
  const std::string acc2_at = fc2_chains2 ? "(kk & 1 ? acc2b : acc2)" : "acc2";
  b << "  float acc2[NS2][" << nwt << "][4];\n";
  if (fc2_chains2) b << "  float acc2b[NS2][" << nwt << "][4];  // fc2's odd k-steps (ffn_fc2_chains)\n";
  b << "#pragma unroll\n  for (int a = 0; a < NS2; ++a)\n#pragma unroll\n    for (int c = 0; c < " << nwt << "; ++c)\n#pragma unroll\n"
    << "      for (int r = 0; r < 4; ++r) acc2[a][c][r] = " << (fc2_chains2 ? "acc2b[a][c][r] = " : "") << "0.0f;\n"
    << "  int q = 0;  // the slab in use\n"
    << "  auto next_slab = [&]() -> const unsigned short* {\n"
    << "    asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(NB - 2) : \"memory\");\n"
    << "    __syncthreads();  // slab q landed for every thread; buffer (q - 1) % NB is free\n"
    << "    issue(q + NB - 1);\n"
    << "    asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n"
    << "    return Ws[q++ % NB];\n"
    << "  };\n";
  // Where the chunk loop stays a loop with a fixed chunk count and NB divides NSL, slab j of chunk
  // cq (j from the unrolled slab loops) has its buffer and the slab it refills at compile time.
  const bool slots_fixed = fixed_chunks && !unroll_chunks && s.chunk_slabs() % s.NB == 0;
  if (slots_fixed)
    b << "  auto next_slab_at = [&](int cq, int j) -> const unsigned short* {\n"
      << "    asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(NB - 2) : \"memory\");\n"
      << "    __syncthreads();  // slab j landed for every thread; buffer (j - 1) % NB is free\n"
      << "    issue_at(cq + (j + NB - 1) / NSL, (j + NB - 1) % NSL, (j + NB - 1) % NB);\n"
      << "    asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n"
      << "    return Ws[j % NB];\n"
      << "  };\n";
  b
    << (fixed_chunks ? std::string(unroll_chunks ? "#pragma unroll\n" : "#pragma unroll 1\n") +
                           "  for (int cq = 0; cq < CPB; ++cq) {\n    const int ch = c_beg + cq;\n"
                     : "#pragma unroll 1\n  for (int ch = c_beg; ch < c_end; ++ch) {\n")
    << "    const int h0 = ch * HC;\n";
  // fc1's bias for this thread's two hidden rows of the chunk, loaded before the chunk's slab
  // barriers: read in the epilogue, after them, each was a global-memory round trip after a
  // bar.sync (a load does not move above one; no measurable change on the H100, run 32).
  if (c.inputs[2] >= 0)
    b << "    const float b1v[2] = {" << load(buf(2).dtype, "in2", "h0 + " + wrow + " * 16 + g") << ", "
      << load(buf(2).dtype, "in2", "h0 + " + wrow + " * 16 + g + 8") << "};\n";
  // With ffn_fc1_chains 2 (TuneKey::FfnFc1Chains) a slab's even and odd k-steps accumulate apart,
  // each mma waiting on the one two k-steps before instead of the one before (a slab's chain of
  // dependent mma.sync halves), summed before the bias: another summation order.
  const bool fc1_chains2 = tune_target(p, TuneKey::FfnFc1Chains) == 2;
  const std::string acc1_at = fc1_chains2 ? "acc1[kk & 1]" : "acc1";
  if (fc1_chains2)
    b << "    float acc1[2][" << nwt << "][4];  // even and odd k-steps apart (ffn_fc1_chains)\n"
      << "#pragma unroll\n    for (int c = 0; c < " << nwt << "; ++c)\n#pragma unroll\n      for (int r = 0; r < 4; ++r) "
         "acc1[0][c][r] = acc1[1][c][r] = 0.0f;\n";
  else
    b << "    float acc1[" << nwt << "][4];\n"
      << "#pragma unroll\n    for (int c = 0; c < " << nwt << "; ++c)\n#pragma unroll\n      for (int r = 0; r < 4; ++r) acc1[c][r] = 0.0f;\n";
  b
    << "#pragma unroll\n    for (int j = 0; j < NS1; ++j) {\n"
    << (slots_fixed ? "      const unsigned short* w = next_slab_at(cq, j);\n" : "      const unsigned short* w = next_slab();\n")
    << "#pragma unroll\n      for (int kk = 0; kk < SK1 / 16; ++kk) {\n";
  if (!one_nt) {
    b << "        unsigned a[4];\n"
      << "        lda(a, w, " << wrow << " * 16, kk * 16);\n"
      << "#pragma unroll\n        for (int np = 0; np < " << NP << "; ++np) {  // n-tiles 2 np, 2 np + 1\n"
      << "          unsigned r[4];\n"
      << (nhwc ? "          opv_ldsm4(r, Xs + ((lane & 7) + (lane >> 4) * 8 + np * 16" + pix0 + ") * LDXN + j * SK1 + kk * 16 + ((lane >> 3) & 1) * 8);\n"
               : "          opv_ldsm4t(r, Xs + (j * SK1 + kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LDX + (lane >> 4) * 8 + np * 16" + pix0 + ");\n")
      << "          const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};\n"
      << "          opv_mma(" << acc1_at << "[2 * np], a, b0);\n"
      << "          opv_mma(" << acc1_at << "[2 * np + 1], a, b1);\n"
      << "        }\n";
  } else {  // the x4 form's fragments of n-tile wn: r[2 wn], r[2 wn + 1]
    b << "        unsigned a[4], r[2];\n"
      << "        lda(a, w, wr * 16, kk * 16);\n"
      << (nhwc ? "        opv_ldsm2(r, Xs + ((lane & 7) + wn * 8) * LDXN + j * SK1 + kk * 16 + ((lane >> 3) & 1) * 8);\n"
               : "        opv_ldsm2t(r, Xs + (j * SK1 + kk * 16 + (lane & 15)) * LDX + wn * 8);\n")
      << "        opv_mma(" << acc1_at << "[0], a, r);\n";
  }
  b << "      }\n    }\n";
  // fc1's epilogue: bias, post-ops, fp16 into the hidden tile (the previous chunk's fc2 finished
  // reading it: every thread passed this chunk's first next_slab barrier since).
  b << "#pragma unroll\n    for (int nt = 0; nt < " << nwt << "; ++nt)\n#pragma unroll\n      for (int r = 0; r < 4; ++r) {\n"
    << "        const int hl = " << wrow << " * 16 + g + (r >> 1) * 8;\n"
    << (fc1_chains2 ? "        float v = (acc1[0][nt][r] + acc1[1][nt][r])" : "        float v = acc1[nt][r]")
    << (c.inputs[2] >= 0 ? " + b1v[r >> 1]" : "") << ";\n";
  b << unary_ops(po1, po2, "        ");
  b << "        Gs[hl * LDG + " << col << " + 2 * t + (r & 1)] = opv_f2h(v);\n      }\n"
    // fc2: the first W2 slab's barrier also publishes the hidden tile.
    << "    unsigned gb[4][" << (one_nt ? 2 : 4 * NP) << "];\n"
    << "#pragma unroll\n    for (int j = 0; j < NS2; ++j) {\n"
    << (slots_fixed ? "      const unsigned short* w = next_slab_at(cq, NS1 + j);\n" : "      const unsigned short* w = next_slab();\n")
    << "      if (j == 0) {\n"
    << "#pragma unroll\n        for (int kk = 0; kk < 4; ++kk)\n"
    << (one_nt ? "          opv_ldsm2t(gb[kk], Gs + (kk * 16 + (lane & 15)) * LDG + wn * 8);\n"
           : "#pragma unroll\n          for (int np = 0; np < " + std::to_string(NP) +
                 "; ++np) opv_ldsm4t(gb[kk] + 4 * np, Gs + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LDG + (lane >> 4) * 8 + np * 16" + pix0 + ");\n")
    << "      }\n"
    << "#pragma unroll\n      for (int kk = 0; kk < 4; ++kk) {\n"
    << "        unsigned a[4];\n"
    << "        lda(a, w, " << wrow << " * 16, kk * 16);\n"
    << (one_nt ? "        opv_mma(" + acc2_at + "[j][0], a, gb[kk]);\n"
           : "#pragma unroll\n        for (int np = 0; np < " + std::to_string(NP) + "; ++np) {\n"
             "          const unsigned b0[2] = {gb[kk][4 * np], gb[kk][4 * np + 1]}, b1[2] = {gb[kk][4 * np + 2], gb[kk][4 * np + 3]};\n"
             "          opv_mma(" + acc2_at + "[j][2 * np], a, b0);\n"
             "          opv_mma(" + acc2_at + "[j][2 * np + 1], a, b1);\n"
             "        }\n")
    << "      }\n    }\n"
    << "  }\n";
  if (fc2_chains2)
    b << "#pragma unroll\n  for (int a = 0; a < NS2; ++a)\n#pragma unroll\n    for (int c = 0; c < " << nwt
      << "; ++c)\n#pragma unroll\n      for (int r = 0; r < 4; ++r) acc2[a][c][r] += acc2b[a][c][r];  // the two chains\n";
  b << "  OPV_PDL_TRIGGER();  // the main loop is done: the next kernel may be launched\n"
    << "  asm volatile(\"cp.async.wait_group 0;\" ::: \"memory\");\n";
  // The block's partial tile in fragment order from `dst` (float4 j of thread tid is acc2[j / NWT]
  // [j % NWT][0..3], stored at [j][tid]: a warp writes 512 contiguous bytes), as both split forms
  // store it.
  auto store_partial = [&](const std::string& dst) {
    b << "#pragma unroll\n  for (int mt = 0; mt < NS2; ++mt)\n#pragma unroll\n    for (int nt = 0; nt < " << nwt << "; ++nt)\n"
      << "      *(float4*)(" << dst << " + ((mt * " << nwt << " + nt) * " << nts << " + tid) * 4) = "
         "make_float4(acc2[mt][nt][0], acc2[mt][nt][1], acc2[mt][nt][2], acc2[mt][nt][3]);\n";
  };
  // The cluster forms' last sum: block sp's share, float4s f = sp * PER + e, each the sum
  // `sum_lines` computes into t4 (in split order: the workspace form's sums bit for bit), then the
  // epilogue at the coordinates of f's fragment (j = f / NT of thread f % NT).
  auto share_sum = [&](const std::string& sum_lines) {
    b << "#pragma unroll 1\n  for (int e = tid; e < " << per << "; e += " << nts << ") {  // this block's share of the tile\n"
      << "    const int f = sp * " << per << " + e;\n"
      << "    if (f >= TILE / 4) break;\n"
      << sum_lines
      << "    const float t4v[4] = {t4.x, t4.y, t4.z, t4.w};\n"
      << "    const int j = f / " << nts << ", ft = f % " << nts << ";\n"
      << "    {  // the coordinates of thread ft's fragment j\n"
      << frag_coords << pair_decl
      << "#pragma unroll\n      for (int r = 0; r < 4; ++r) {\n"
      << mq
      << "    if (q < P) {\n"
      << "      const float sum = t4v[r];\n"
      << (pf_cluster ? epilogue("r") : epi.str()) << "    }\n      }\n    }\n  }\n";
  };
  if (push) {
    // Float4 f = (mt NWT + nt) NT + tid of the tile (as store_partial orders them) goes to block
    // o = f / PER, row sp of its receive buffer; the block then waits for its mbarrier's phase
    // (all S rows of its share landed) and sums its S rows.
    gen.source = std::string(kClusterHelpers) + kClusterPushHelpers;
    b << (PAIR ? "" : "  opv_cluster_wait();  // every peer's mbarrier made (the arrive at the kernel's start)\n")
      << "#pragma unroll\n  for (int mt = 0; mt < NS2; ++mt)\n#pragma unroll\n    for (int nt = 0; nt < " << nwt << "; ++nt) {\n"
      << "      opv_push4(Rs, &rbar_, (mt * " << nwt << " + nt) * " << nts << " + tid, sp, " << per << ",\n"
      << "                make_float4(acc2[mt][nt][0], acc2[mt][nt][1], acc2[mt][nt][2], acc2[mt][nt][3]));\n"
      << "    }\n"
      << "  opv_mbar_wait(&rbar_, 0);  // every block's row of this block's share landed\n";
    share_sum("    float4 t4 = Rs[e];\n"
              "#pragma unroll\n    for (int sq = 1; sq < S; ++sq) {\n"
              "      const float4 v = Rs[sq * " + std::to_string(per) + " + e];\n"
              "      t4.x += v.x; t4.y += v.y; t4.z += v.z; t4.w += v.w;\n    }\n");
  } else if (cluster) {
    // The tile's S blocks are one cluster (rank = sp, blockIdx.x % S). Each stores its partial in
    // fragment order into its own slab ring (float4 j of thread tid at [j][tid], as the workspace
    // form stores it); after a cluster barrier every block sums its share of the tile's float4s
    // from all S rings (ld.shared::cluster); a second barrier keeps every ring alive until all
    // have read it.
    gen.source = kClusterHelpers;
    b << "  __syncthreads();  // every warp is done with the slabs: the ring holds the partial now\n"
      << "  float* red = (float*)&Ws[0][0];\n";
    store_partial("red");
    b << "  opv_cluster_sync();  // every block's partial visible to the cluster\n"
      << "  unsigned peer[S];  // the S rings' addresses in the cluster's shared window\n"
      << "#pragma unroll\n  for (int sq = 0; sq < S; ++sq) peer[sq] = opv_cluster_addr(red, sq);\n";
    share_sum("    float4 pv[S];\n"
              "#pragma unroll\n    for (int sq = 0; sq < S; ++sq) pv[sq] = opv_ld_cluster4(peer[sq] + (unsigned)f * 16u);\n"
              "    float4 t4 = pv[0];\n"
              "#pragma unroll\n    for (int sq = 1; sq < S; ++sq) {\n"
              "      t4.x += pv[sq].x; t4.y += pv[sq].y; t4.z += pv[sq].z; t4.w += pv[sq].w;\n    }\n");
    b << "  opv_cluster_exit();  // no block leaves while a peer may still read its ring\n";
  } else if (s.S == 1) {
    b << "#pragma unroll\n  for (int mt = 0; mt < NS2; ++mt)\n#pragma unroll\n    for (int nt = 0; nt < " << nwt << "; ++nt) {\n"
      << pair_decl << "#pragma unroll\n      for (int r = 0; r < 4; ++r) {\n"
      << mq
      << "    if (q < P) {\n      const float sum = acc2[mt][nt][r];\n"
      << (pf1 ? epilogue("mt][nt][r") : epi.str()) << "    }\n  }\n  }\n";
  } else {
    gen.source = "__device__ __align__(16) float opv_ws[" + I(s.N * s.PT * s.S * TILE) + "];  // hidden-split partial tiles\n" +
                 "__device__ __forceinline__ float4 opv_ldcg4(const float* p) {\n"
                 "  float4 v; asm volatile(\"ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];\" : \"=f\"(v.x), \"=f\"(v.y), \"=f\"(v.z), \"=f\"(v.w) : \"l\"(p));\n"
                 "  return v;\n}\n" +
                 "__device__ unsigned int opv_cnt[" + I(s.N * s.PT) + "];  // partials written per tile (0 between launches)\n";
    // Partials in fragment order (store_partial); the last block's thread tid reads its own
    // fragments' partials back and runs the epilogue at the fragments' coordinates.
    b << "  float* wsp = opv_ws + (tile * S + sp) * TILE;\n";
    store_partial("wsp");
    b << "  __threadfence();\n  __syncthreads();\n"
      << "  if (tid == 0) last_ = atomicAdd(&opv_cnt[tile], 1u) == (unsigned)(S - 1);\n"
      << "  __syncthreads();\n  if (!last_) return;\n  __threadfence();\n"
      << "  const float* wst = opv_ws + tile * S * TILE;\n"
      // Every partial of NVB float4s per thread loaded before any is added (one wait per batch).
      << "  constexpr int NV = TILE / " << 4 * NT << ", NVB = " << nvb << ";\n"
      << "#pragma unroll 1\n  for (int j0 = 0; j0 < NV; j0 += NVB) {\n"
      << "    float4 pv[S][NVB];\n"
      << "#pragma unroll\n    for (int sq = 0; sq < S; ++sq)\n#pragma unroll\n      for (int jj = 0; jj < NVB; ++jj)\n"
      << "        pv[sq][jj] = opv_ldcg4(wst + sq * TILE + ((j0 + jj) * " << nts << " + tid) * 4);\n"
      << "#pragma unroll\n    for (int jj = 0; jj < NVB; ++jj) {\n"
      << "      float4 t4 = pv[0][jj];\n"
      << "#pragma unroll\n      for (int sq = 1; sq < S; ++sq) {\n"
      << "        t4.x += pv[sq][jj].x; t4.y += pv[sq][jj].y; t4.z += pv[sq][jj].z; t4.w += pv[sq][jj].w;\n      }\n"
      << "      const float t4v[4] = {t4.x, t4.y, t4.z, t4.w};\n"
      << frag_of("j0 + jj") << pair_decl
      << "#pragma unroll\n      for (int r = 0; r < 4; ++r) {\n"
      << mq
      << "    if (q < P) {\n"
      << "      const float sum = t4v[r];\n"
      << epi.str() << "    }\n      }\n    }\n  }\n"
      << "  if (tid == 0) opv_cnt[tile] = 0u;\n";
  }
  std::string workspace = gen.source;
  if (one_nt)  // ldmatrix .x2: one n-tile's B fragment (threads 0-15 give the row addresses)
    workspace =
        "__device__ __forceinline__ void opv_ldsm2(unsigned* r, const unsigned short* p) {\n"
        "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\" : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(opv_smem(p)) : \"memory\");\n"
        "}\n"
        "__device__ __forceinline__ void opv_ldsm2t(unsigned* r, const unsigned short* p) {\n"
        "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\" : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(opv_smem(p)) : \"memory\");\n"
        "}\n" +
        workspace;
  std::string params = std::string(c_type(Y.dtype)) + "* __restrict__ out0";
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (c.inputs[j] >= 0) params += input_param(p, c, j, c_type(buf(j).dtype));
  gen.entry = "opv_" + k.name;
  std::ostringstream src;
  src << "// generated by opvision src/target/cuda/codegen.cpp (kernel " << k.name
      << (DK ? ", ConvFFN depthwise -> fc1 -> fc2 in one launch" : ", ConvFFN fc1 -> fc2 in one launch")
      << (cluster ? ", the hidden split's blocks one cluster" : "") << ") -- do not edit\n"
      << kPrelude << "typedef int opv_idx;  // every index of this kernel fits an int\n"
      << kMmaHelpers << workspace << "extern \"C\" __global__ void "
      << (cluster ? "__cluster_dims__(" + std::to_string(s.S) + ", 1, 1) " : std::string()) << "__launch_bounds__(" << NT
      << ") " << gen.entry << "(" << params
      << (late ? kEntryOpenLate : kEntryOpen)
      << b.str() << "}\n";
  gen.source = src.str();
  gen.global = {s.blocks() * NT, 0, 0};
  gen.local = {NT, 0, 0};
  gen.smem = s.dynamic_bytes() + (push ? pair_bytes + s.S * per * 16 : PAIR ? pg.bytes() : 0);
  if (cluster && plan_sm(p) >= 90 && tune_target(p, TuneKey::FfnSmAlone) == 1 &&
      s.blocks() <= 2 * tune_target(p, TuneKey::FfnBlocks)) {
    const int64_t total = ffn_smem_total(s, gen.smem - s.dynamic_bytes());
    // (total counts kFfnSmemReserve once; the block's own bytes are to pass half the SM's by that much)
    if (total <= kSmSmemBytes / 2 + kFfnSmemReserve) gen.smem += kSmSmemBytes / 2 + 2 * kFfnSmemReserve - total;
  }
  return gen;
}

}  // namespace opv::plan::cuda::detail
