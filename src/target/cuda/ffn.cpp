/* The fused ConvFFN of target "cuda" (part of plan pass "cuda-codegen", codegen.h):
 *   1. fuse_ffn: a dense fp16 1x1 conv (fc1, unary post-ops) whose output only the next call reads,
 *      followed by a dense fp16 1x1 conv on it (fc2), becomes one call (cuda_abi.h "ConvFFN")
 *      where ffn_size fits it and it gives enough blocks.
 *   2. ffn: that call's kernel (the comment below describes it).
 * Invariant: the fused call computes what fc1 then fc2 compute, with fc1's output rounded to fp16
 * as its stored tensor would be; the hidden-split sums are added in split order (deterministic).
 */
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "target/c_expr.h"
#include "target/cuda/codegen_internal.h"

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
// Plan form: one call, output = fc2's, inputs = [X, W1, B1, W2, B2, fc2's inputs from slot 3 on]
// (absent bias -1); kernel = fc1's with "cl_batch" = 2, "cuda_ffn" = 1, post-ops = fc1's then
// fc2's (operand slots j -> j + 2), "cuda_batch_post_ops" = their counts.
constexpr int64_t kFfnBN = 16, kFfnHC = 64, kFfnTargetBlocks = 96, kFfnMinBlocks = 24;
constexpr int64_t kFfnMaxReduceBytes = 192 << 10;  // the last block's partials at most
// float4 loads per thread in flight in the last block's reduction: 24 up to run 8 (stage 2's 12
// partials in 4 dependent batches), 48 from run 10 (2 batches; 192 registers, no spills with sm_90)
constexpr int64_t kFfnReduceInFlight = 48;
constexpr int64_t kFfnSmemBytes = (48 << 10) - 256;  // static shared memory (48 KB without opt-in)
constexpr int64_t kFfnSlabBytes = 64 * 64 * 2, kFfnMaxSlabs = 6;  // a slab buffer: 64 rows x 128 bytes
struct FfnShape {
  int64_t N = 0, Cin = 0, Hd = 0, Cout = 0, P = 0, OW = 0;  // given
  int64_t PT = 0, NC = 0, CPB = 0, S = 0, SK1 = 0, NB = 0;   // ffn_size
  int64_t blocks() const { return N * PT * S; }
};
// Pixel tiles, hidden split and slab ring of a ConvFFN (the given fields set), or false when it
// does not fit this kernel.
static bool ffn_size(FfnShape* sh) {
  FfnShape& s = *sh;
  s.SK1 = std::min<int64_t>(s.Cin, 64);
  if (s.Cin % 16 || s.Cin % s.SK1 || s.Hd % kFfnHC || s.Cout % 64) return false;
  const int64_t fixed = (s.Cin + kFfnHC) * (kFfnBN + 8) * 2;  // X and hidden tiles
  s.PT = (s.P + kFfnBN - 1) / kFfnBN;
  s.NC = s.Hd / kFfnHC;
  const int64_t tiles = s.N * s.PT;
  const int64_t s0 = std::clamp<int64_t>((kFfnTargetBlocks + tiles - 1) / tiles, 1, s.NC);
  s.CPB = (s.NC + s0 - 1) / s0;
  s.S = (s.NC + s.CPB - 1) / s.CPB;
  while (s.S > 1 && s.S * s.Cout * kFfnBN * 4 > kFfnMaxReduceBytes) {
    ++s.CPB;
    s.S = (s.NC + s.CPB - 1) / s.CPB;
  }
  const int64_t slabs = s.CPB * (s.Cin / s.SK1 + s.Cout / 64);  // of the block with the most chunks
  s.NB = std::min<int64_t>({kFfnMaxSlabs, (kFfnSmemBytes - fixed) / kFfnSlabBytes, slabs + 1});
  return s.NB >= 2;
}
// The fused shape of fc1 call a and fc2 call b, or false.
static bool ffn_shape(const Plan& p, const Call& a, const Call& b, const std::vector<int>& readers, FfnShape* sh) {
  if (plan_sm(p) < 80) return false;
  const Kernel& ka = p.kernels.at(size_t(a.kernel));
  const Kernel& kb = p.kernels.at(size_t(b.kernel));
  for (const auto* cc : {&a, &b}) {
    const Kernel& k = p.kernels.at(size_t(cc->kernel));
    if (k.op != OpKind::Conv || !k.source.empty() || k.attrs.i("cl_batch", 0) > 0 || cc->outputs.size() != 1 ||
        cc->inputs.size() < 2 || cc->inputs[0] < 0 || cc->inputs[1] < 0)
      return false;
    const Ctx x{p, *cc, k};
    if (!conv1x1_tiled_ok(x) || x.in(0).dtype != DType::F16 || x.in(1).dtype != DType::F16 ||
        x.out().dtype != DType::F16 || x.out().layout != Layout::Linear || x.in(0).layout != Layout::Linear)
      return false;
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
  FfnShape s;
  s.N = xs[0], s.Cin = xs[1], s.Hd = p.buffers.at(size_t(hid)).shape[1], s.Cout = ys[1], s.P = xs[2] * xs[3];
  s.OW = xs[3];
  if (s.N * s.Cin * s.P > INT32_MAX / 2 || s.N * s.Hd * s.P > INT32_MAX / 2 || s.N * s.Cout * s.P > INT32_MAX / 2 ||
      !ffn_size(&s))
    return false;
  if (s.blocks() < kFfnMinBlocks) return false;  // too few blocks: the two tiled launches are faster
  *sh = s;
  return true;
}
void fuse_ffn(Plan& p) {
  if (plan_sm(p) < 80) return;
  const std::vector<int> readers = reader_counts(p);
  fuse_pairs(p, [&](const Call& a, const Call& b, Kernel* k, Call* f) {
    FfnShape sh;
    if (!ffn_shape(p, a, b, readers, &sh)) return false;
    const Kernel& akern = p.kernels.at(size_t(a.kernel));
    const Kernel& bkern = p.kernels.at(size_t(b.kernel));
    *k = akern;
    k->name = "ffn_" + std::to_string(sh.Cin) + "_" + std::to_string(sh.Hd) + "_" + std::to_string(sh.Cout) + "_f16";
    for (PostOp po : bkern.post_ops) {
      if (po.input >= 0) po.input += 2;
      k->post_ops.push_back(po);
    }
    k->attrs.set("cl_batch", int64_t(2));
    k->attrs.set("cuda_ffn", int64_t(1));
    k->attrs.set("cuda_batch_post_ops", std::vector<int64_t>{int64_t(akern.post_ops.size()), int64_t(bkern.post_ops.size())});
    f->outputs = b.outputs;
    auto in = [](const Call& c, size_t j) { return j < c.inputs.size() ? c.inputs[j] : -1; };
    f->inputs = {a.inputs[0], a.inputs[1], in(a, 2), b.inputs[1], in(b, 2)};
    for (size_t j = 3; j < b.inputs.size(); ++j) f->inputs.push_back(b.inputs[j]);
    return true;
  });
}
Generated ffn(const Plan& p, const Call& c) {
  Generated gen;
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  const std::vector<int64_t> npo = k.attrs.ints("cuda_batch_post_ops");
  if (c.outputs.size() != 1 || c.inputs.size() < 5 || npo.size() != 2 || c.inputs[0] < 0 || c.inputs[1] < 0 ||
      c.inputs[3] < 0 || size_t(npo[0] + npo[1]) != k.post_ops.size())
    return gen.why = "ConvFFN call out of shape", gen;
  auto buf = [&](size_t j) -> const Buffer& { return p.buffers.at(size_t(c.inputs[j])); };
  const Buffer& Y = p.buffers.at(size_t(c.outputs[0]));
  FfnShape s;
  s.N = buf(0).shape[0], s.Cin = buf(0).shape[1], s.P = buf(0).shape[2] * buf(0).shape[3], s.OW = buf(0).shape[3];
  s.Hd = buf(1).shape[0], s.Cout = Y.shape[1];
  // The same sizing as ffn_shape (re-derived: the plan keeps no shape of the hidden tensor).
  if (!ffn_size(&s)) return gen.why = "ConvFFN shape does not fit the kernel", gen;
  // fc2's post-ops on the fused call (operand slots already moved).
  Kernel k2 = k;
  k2.post_ops.assign(k.post_ops.begin() + npo[0], k.post_ops.end());
  const Ctx x2{p, c, k2};
  if (std::string why; !post_ops_ok(x2, &why)) return gen.why = why, gen;
  const int64_t TILE = s.Cout * kFfnBN;
  // float4s of every partial a thread loads at once in the last block's reduction (at most
  // kFfnReduceInFlight: the fc2 accumulators are dead by then; a divisor of TILE / 512, which is
  // even: Cout % 64 == 0)
  int64_t nvb = std::max<int64_t>(1, std::min<int64_t>(TILE / 512, kFfnReduceInFlight / std::max<int64_t>(s.S, 1)));
  while ((TILE / 512) % nvb) --nvb;
  std::ostringstream b;
  b << "  // ConvFFN: " << s.Cin << " -> " << s.Hd << " -> " << s.Cout << " channels over " << s.P << " pixels, "
    << kFfnBN << " pixels x " << kFfnHC << " hidden a step, hidden split " << s.S << " x " << s.CPB << " chunks, "
    << s.NB << " weight slab buffers\n"
    << "  constexpr int BN = " << kFfnBN << ", HC = " << kFfnHC << ", LDX = BN + 8, LDG = BN + 8;\n"
    << "  constexpr int CIN = " << s.Cin << ", HD = " << s.Hd << ", COUT = " << s.Cout << ", P = " << s.P
    << ", S = " << s.S << ", CPB = " << s.CPB << ", NC = " << s.NC << ";\n"
    << "  constexpr int SK1 = " << s.SK1 << ", NS1 = CIN / SK1, NS2 = COUT / 64, NSL = NS1 + NS2, NB = " << s.NB
    << ", TILE = COUT * BN;\n"
    << "  __shared__ __align__(16) unsigned short Xs[CIN * LDX];\n"
    << "  __shared__ __align__(16) unsigned short Gs[HC * LDG];\n"
    << "  __shared__ __align__(128) unsigned short Ws[NB][64 * 64];  // slab ring: 64 rows x 128 bytes, swizzled\n"
    << "  __shared__ int last_;\n  (void)last_; (void)TILE;\n"
    << "  const opv_idx tile = blockIdx.x / S;\n"
    << "  const int sp = (int)(blockIdx.x % S);\n"
    << "  const opv_idx p0 = (tile % " << s.PT << ") * BN, n = tile / " << s.PT << ";\n"
    << "  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;\n"
    << "  const unsigned short* Xg = in0 + n * (opv_idx)(CIN * P);\n"
    << "  const int c_beg = sp * CPB, c_end = c_beg + CPB < NC ? c_beg + CPB : NC;\n"
    << "  const int nsteps = (c_end - c_beg) * NSL;\n"
    // Slab q of the block's sequence into ring buffer q % NB (nothing past the last slab).
    << "  auto issue = [&](int q) {\n"
    << "    if (q >= nsteps) return;\n"
    << "    const int h0 = (c_beg + q / NSL) * HC, j = q % NSL;\n"
    << "    unsigned short* dst = Ws[q % NB];\n"
    << "    if (j < NS1) {  // W1 rows h0.., input channels j * SK1..\n"
    << "#pragma unroll\n      for (int e = tid; e < 64 * (SK1 / 8); e += 128) {\n"
    << "        const int r = e / (SK1 / 8), cc = e % (SK1 / 8);\n"
    << "        opv_cp16(dst + r * 64 + ((cc ^ (r & 7)) * 8), in1 + (opv_idx)(h0 + r) * CIN + j * SK1 + cc * 8, true);\n"
    << "      }\n"
    << "    } else {  // W2 rows (j - NS1) * 64.., hidden channels h0..\n"
    << "#pragma unroll\n      for (int e = tid; e < 64 * 8; e += 128) {\n"
    << "        const int r = e >> 3, cc = e & 7;\n"
    << "        opv_cp16(dst + r * 64 + ((cc ^ (r & 7)) * 8), in3 + (opv_idx)((j - NS1) * 64 + r) * HD + h0 + cc * 8, true);\n"
    << "      }\n"
    << "    }\n"
    << "  };\n"
    // A fragment (16 rows from `row0`, 16 columns from `col`) of a swizzled slab.
    << "  auto lda = [&](unsigned* r, const unsigned short* slab, int row0, int col) {\n"
    << "    const int row = row0 + (lane & 15), cc = (col >> 3) + (lane >> 4);\n"
    << "    opv_ldsm4(r, slab + row * 64 + ((cc ^ (row & 7)) * 8));\n"
    << "  };\n";
  if (s.P % 8 == 0)
    b << "  for (int e = tid; e < CIN * BN / 8; e += 128) {\n"
      << "    const int r = e / (BN / 8), pp = (e % (BN / 8)) * 8;\n"
      << "    const opv_idx q = p0 + pp;\n"
      << "    const bool ok = q < P;\n"
      << "    opv_cp16(Xs + r * LDX + pp, ok ? Xg + r * P + q : Xg, ok);\n  }\n";
  else
    b << "  for (int e = tid; e < CIN * BN; e += 128) {\n"
      << "    const int r = e / BN, pp = e % BN;\n"
      << "    const opv_idx q = p0 + pp;\n"
      << "    Xs[r * LDX + pp] = q < P ? Xg[r * P + q] : (unsigned short)0;\n  }\n";
  // Groups: the first holds X and slab 0; then one per slab (empty past the last), so before
  // slab q is used `wait_group NB - 2` leaves only slabs q+1 .. q+NB-2 in flight.
  b << "#pragma unroll\n  for (int q = 0; q < NB - 1; ++q) {\n"
    << "    issue(q);\n    asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n  }\n"
    << "  float acc2[NS2][2][4];\n"
    << "#pragma unroll\n  for (int a = 0; a < NS2; ++a)\n#pragma unroll\n    for (int c = 0; c < 2; ++c)\n#pragma unroll\n"
    << "      for (int r = 0; r < 4; ++r) acc2[a][c][r] = 0.0f;\n"
    << "  int q = 0;  // the slab in use\n"
    << "  auto next_slab = [&]() -> const unsigned short* {\n"
    << "    asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(NB - 2) : \"memory\");\n"
    << "    __syncthreads();  // slab q landed for every thread; buffer (q - 1) % NB is free\n"
    << "    issue(q + NB - 1);\n"
    << "    asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n"
    << "    return Ws[q++ % NB];\n"
    << "  };\n"
    << "#pragma unroll 1\n  for (int ch = c_beg; ch < c_end; ++ch) {\n"
    << "    const int h0 = ch * HC;\n"
    << "    float acc1[2][4];\n"
    << "#pragma unroll\n    for (int c = 0; c < 2; ++c)\n#pragma unroll\n      for (int r = 0; r < 4; ++r) acc1[c][r] = 0.0f;\n"
    << "#pragma unroll\n    for (int j = 0; j < NS1; ++j) {\n"
    << "      const unsigned short* w = next_slab();\n"
    << "#pragma unroll\n      for (int kk = 0; kk < SK1 / 16; ++kk) {\n"
    << "        unsigned a[4], r[4];\n"
    << "        lda(a, w, warp * 16, kk * 16);\n"
    << "        opv_ldsm4t(r, Xs + (j * SK1 + kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LDX + (lane >> 4) * 8);\n"
    << "        const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};\n"
    << "        opv_mma(acc1[0], a, b0);\n"
    << "        opv_mma(acc1[1], a, b1);\n"
    << "      }\n    }\n";
  // fc1's epilogue: bias, post-ops, fp16 into the hidden tile (the previous chunk's fc2 finished
  // reading it: every thread passed this chunk's first next_slab barrier since).
  b << "#pragma unroll\n    for (int nt = 0; nt < 2; ++nt)\n#pragma unroll\n      for (int r = 0; r < 4; ++r) {\n"
    << "        const int hl = warp * 16 + g + (r >> 1) * 8;\n"
    << "        float v = acc1[nt][r]"
    << (c.inputs[2] >= 0 ? " + " + load(buf(2).dtype, "in2", "h0 + hl") : std::string()) << ";\n";
  for (int64_t q = 0; q < npo[0]; ++q) b << "        v = " << unary_expr(k.post_ops[size_t(q)], "v") << ";\n";
  b << "        Gs[hl * LDG + nt * 8 + 2 * t + (r & 1)] = opv_f2h(v);\n      }\n"
    // fc2: the first W2 slab's barrier also publishes the hidden tile.
    << "    unsigned gb[4][4];\n"
    << "#pragma unroll\n    for (int j = 0; j < NS2; ++j) {\n"
    << "      const unsigned short* w = next_slab();\n"
    << "      if (j == 0) {\n"
    << "#pragma unroll\n        for (int kk = 0; kk < 4; ++kk)\n"
    << "          opv_ldsm4t(gb[kk], Gs + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LDG + (lane >> 4) * 8);\n"
    << "      }\n"
    << "#pragma unroll\n      for (int kk = 0; kk < 4; ++kk) {\n"
    << "        unsigned a[4];\n"
    << "        lda(a, w, warp * 16, kk * 16);\n"
    << "        const unsigned b0[2] = {gb[kk][0], gb[kk][1]}, b1[2] = {gb[kk][2], gb[kk][3]};\n"
    << "        opv_mma(acc2[j][0], a, b0);\n"
    << "        opv_mma(acc2[j][1], a, b1);\n"
    << "      }\n    }\n"
    << "  }\n"
    << "  asm volatile(\"cp.async.wait_group 0;\" ::: \"memory\");\n";
  std::ostringstream epi;
  epi << "      const opv_idx o0 = n, o1 = m, o2 = q / " << I(s.OW) << ", o3 = q % " << I(s.OW) << ";\n"
      << "      (void)o0; (void)o1; (void)o2; (void)o3;\n"
      << "      float v = sum" << (c.inputs[4] >= 0 ? " + " + load(buf(4).dtype, "in4", "m") : std::string()) << ";\n"
      << post_ops(x2) << "      " << store(Y.dtype, "out0", "(n * COUT + m) * P + q", "v") << "\n";
  if (s.S == 1) {
    b << "#pragma unroll\n  for (int mt = 0; mt < NS2; ++mt)\n#pragma unroll\n    for (int nt = 0; nt < 2; ++nt)\n"
      << "#pragma unroll\n      for (int r = 0; r < 4; ++r) {\n"
      << "    const opv_idx m = mt * 64 + warp * 16 + g + (r >> 1) * 8, q = p0 + nt * 8 + 2 * t + (r & 1);\n"
      << "    if (q < P) {\n      const float sum = acc2[mt][nt][r];\n"
      << epi.str() << "    }\n  }\n";
  } else {
    gen.source = "__device__ __align__(16) float opv_ws[" + I(s.N * s.PT * s.S * TILE) + "];  // hidden-split partial tiles\n" +
                 "__device__ __forceinline__ float4 opv_ldcg4(const float* p) {\n"
                 "  float4 v; asm volatile(\"ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];\" : \"=f\"(v.x), \"=f\"(v.y), \"=f\"(v.z), \"=f\"(v.w) : \"l\"(p));\n"
                 "  return v;\n}\n" +
                 "__device__ unsigned int opv_cnt[" + I(s.N * s.PT) + "];  // partials written per tile (0 between launches)\n";
    // Partials in fragment order: float4 j of thread tid is acc2[j / 2][j % 2][0..3], stored at
    // [j][tid] (a warp writes 512 contiguous bytes); the last block's thread tid reads its own
    // fragments' partials back and runs the epilogue at the fragments' coordinates.
    b << "  float* wsp = opv_ws + (tile * S + sp) * TILE;\n"
      << "#pragma unroll\n  for (int mt = 0; mt < NS2; ++mt)\n#pragma unroll\n    for (int nt = 0; nt < 2; ++nt)\n"
      << "      *(float4*)(wsp + ((mt * 2 + nt) * 128 + tid) * 4) = "
         "make_float4(acc2[mt][nt][0], acc2[mt][nt][1], acc2[mt][nt][2], acc2[mt][nt][3]);\n"
      << "  __threadfence();\n  __syncthreads();\n"
      << "  if (tid == 0) last_ = atomicAdd(&opv_cnt[tile], 1u) == (unsigned)(S - 1);\n"
      << "  __syncthreads();\n  if (!last_) return;\n  __threadfence();\n"
      << "  const float* wst = opv_ws + tile * S * TILE;\n"
      // Every partial of NVB float4s per thread loaded before any is added (one wait per batch).
      << "  constexpr int NV = TILE / 512, NVB = " << nvb << ";\n"
      << "#pragma unroll 1\n  for (int j0 = 0; j0 < NV; j0 += NVB) {\n"
      << "    float4 pv[S][NVB];\n"
      << "#pragma unroll\n    for (int sq = 0; sq < S; ++sq)\n#pragma unroll\n      for (int jj = 0; jj < NVB; ++jj)\n"
      << "        pv[sq][jj] = opv_ldcg4(wst + sq * TILE + ((j0 + jj) * 128 + tid) * 4);\n"
      << "#pragma unroll\n    for (int jj = 0; jj < NVB; ++jj) {\n"
      << "      float4 t4 = pv[0][jj];\n"
      << "#pragma unroll\n      for (int sq = 1; sq < S; ++sq) {\n"
      << "        t4.x += pv[sq][jj].x; t4.y += pv[sq][jj].y; t4.z += pv[sq][jj].z; t4.w += pv[sq][jj].w;\n      }\n"
      << "      const float t4v[4] = {t4.x, t4.y, t4.z, t4.w};\n"
      << "      const int mt = (j0 + jj) >> 1, nt = (j0 + jj) & 1;\n"
      << "#pragma unroll\n      for (int r = 0; r < 4; ++r) {\n"
      << "    const opv_idx m = mt * 64 + warp * 16 + g + (r >> 1) * 8, q = p0 + nt * 8 + 2 * t + (r & 1);\n"
      << "    if (q < P) {\n"
      << "      const float sum = t4v[r];\n"
      << epi.str() << "    }\n      }\n    }\n  }\n"
      << "  if (tid == 0) opv_cnt[tile] = 0u;\n";
  }
  const std::string workspace = gen.source;
  std::string params = std::string(c_type(Y.dtype)) + "* __restrict__ out0";
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (c.inputs[j] >= 0) params += std::string(", const ") + c_type(buf(j).dtype) + "* __restrict__ in" + std::to_string(j);
  gen.entry = "opv_" + k.name;
  std::ostringstream src;
  src << "// generated by opvision src/target/cuda/codegen.cpp (kernel " << k.name
      << ", ConvFFN fc1 -> fc2 in one launch) -- do not edit\n"
      << kPrelude << "typedef int opv_idx;  // every index of this kernel fits an int\n"
      << kMmaHelpers << workspace << "extern \"C\" __global__ void __launch_bounds__(128) " << gen.entry << "(" << params
      << ") {\n"
      << b.str() << "}\n";
  gen.source = src.str();
  gen.global = {s.blocks() * 128, 0, 0};
  gen.local = {128, 0, 0};
  return gen;
}

}  // namespace opv::plan::cuda::detail
