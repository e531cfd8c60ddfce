/* The depthwise pair of target "cuda" (part of plan pass "cuda-codegen", codegen.h):
 *   1. fuse_dw_pairs: a stride-1 'same' depthwise conv immediately followed by another on its
 *      output (FastViT's RepMixer 3x3, then the ConvFFN's 7x7) becomes one call (cuda_abi.h).
 *   2. dw_pair: that call's kernel, in one of two forms (dw_pair_shape): a block per band of one
 *      plane (the band form), or several whole planes a block with register tiles of up to 4 rows
 *      of R = 4 or 8 outputs a thread read as float4s (the planes form, where the planes are many:
 *      batched artifacts; dw_tile_acc, shared with dw_planes.cpp).
 * Invariant: both forms compute every output from the same taps in the same order (kh, then kw,
 * fmaf from 0; the first conv's output rounded to the storage type before the second reads it),
 * so they give the same bytes.
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

// ---- depthwise pairs (RepMixer token mixer -> ConvFFN conv) ----------------------------------
// A stride-1 'same' depthwise conv immediately followed by another on its output (FastViT: the
// reparameterised 3x3 token mixer, then the ConvFFN's 7x7) runs as one launch: a block per band
// of BH rows of one (image, channel) plane stages the input rows the band needs (its rows, the
// second conv's halo and the first's, zero outside the map) in shared memory, computes the first
// conv on the band and the second conv's halo rows (written out for the band's own rows: later
// calls read it too, the residual) into a second bordered tile, rounded to the storage type as a
// separate call would store it, then the second conv of the band's rows from that. Planes are cut
// into bands (of at least kDwPairMinBandRows rows, towards TuneKey::DwPairBlocks blocks) only where
// there are few planes: the halo rows' first conv is computed by both bands beside them.
// Input rows are staged with 16-byte loads where fp16 rows are a multiple of 8 wide (4-byte loads
// where even), and a thread computes R = 4 (2) adjacent outputs of a row where the width allows
// and the band has R x 256 outputs or more (so no thread goes idle; not yet timed on a GPU):
// each row of taps is read from shared memory once into registers for all R (a 7x7: 10 reads for
// 4 outputs, not 49 per output), every output's taps still summed in the order kh, then kw.
// Plan form: one call, outputs [first's, second's], inputs [X, W1, B1, W2, B2] (absent bias -1);
// kernel = the first's with "cl_batch" = 2 (two calls in one launch: validate.cpp checks the
// form's shapes no further), "cuda_dw_pair" = 1, post-ops = first's then second's (unary only),
// "cuda_batch_post_ops" = their counts.
constexpr int64_t kDwPairSmemBytes = 40 << 10;
constexpr int kDwPairThreads = 256;
// Up to run 16 a block per whole plane: the fixture's stage 0 (64 planes of 32 x 64) left half of
// the H200's 132 SMs idle, 8.5 us a call traced (run 16). Run 17 (H200, traced): stage 0 in 4
// bands of 8 rows 7.3 us a call; stage 1 (128 planes of 16 x 32) in 2 bands 6.5 us against 5.9
// whole: with about a block per SM already the halo rows cost more than the blocks gain, so only
// layers of fewer than half TuneKey::DwPairBlocks (256) planes are cut.
constexpr int64_t kDwPairMinBandRows = 8;
// Rows per band of a depthwise pair over `planes` planes of H rows, towards `target` blocks
// (TuneKey::DwPairBlocks, 256 by default).
int64_t dw_pair_band_rows(int64_t planes, int64_t H, int64_t target) {
  if (planes * 2 >= target) return H;
  const int64_t want = (target + planes - 1) / std::max<int64_t>(planes, 1);
  const int64_t bands = std::clamp<int64_t>(want, 1, std::max<int64_t>(1, H / kDwPairMinBandRows));
  return (H + bands - 1) / bands;
}
// The planes form. The band form gives each thread one output (R = 2-4 only where a band has
// R x 256 outputs): a 7x7 output then costs 49 shared-memory reads of inputs and 49 of taps, and
// where the planes are small and many (the batch-32 artifact: 8192 planes of 8 x 16 in stage 2,
// half of each 256-thread block idle in the second conv) the pairs are bound by those reads (0.343
// of the batch's 1.29 ms of kernels on the H100, session 26 run 52). Where there are at least twice
// TuneKey::DwPairBlocks whole planes, a block takes PB of them (a power of two dividing the planes,
// up to the blocks' target) and a thread R = 8 or 4 adjacent outputs of a row (TuneKey::DwPairR at
// most, 4 by default): rows padded to a multiple of 4 floats, so a tap row's R + k - 1 inputs and
// its k taps come as float4s (a 7x7 at R = 4: 3 + 2 reads a row for 4 outputs, not 14 for one).
// Taken where the block still has kDwPairMinStrips strips of R; the summation order is the band
// form's. H100, session 27 run 53, the batch-32 artifact's 12 pairs: 0.224 ms at R = 4, 0.240 at
// R = 8, 0.346 in the band form (profiled); 1.27-1.33 ms a batch with 4 in flight against
// 1.40-1.45. Session 28: that form ran at 92 % of the L1/shared-memory pipe (ncu, run 57); with
// register tiles of up to TuneKey::DwRows rows a thread (each staged row read once for the output
// rows it serves) and the staged rows stored as float4s from a multiple of 4 floats, 0.193 ms
// (run 58; 0.234 with aligned staging and a row a thread).
constexpr int64_t kDwPairMinStrips = 128;
// A depthwise pair's block: band rows and bands a plane, planes a block, outputs of a row a thread.
struct DwPairShape {
  int64_t BH = 0, NBAND = 1, PB = 1, R = 1, threads = kDwPairThreads;
  bool planes = false;  // the planes form (float4 rows)
  int64_t W = 0, ka = 0, kb = 0;
  int64_t RHa = 1, RHb = 1;  // the planes form: output rows a thread of the first conv and of the second
  int64_t pad(int64_t n) const { return planes ? (n + 3) / 4 * 4 : n; }
  // The planes form's staged rows start their map columns at a multiple of 4 floats (stored as
  // float4s): the first conv's input at LA = pad(ka / 2) (the band form: at ka / 2), its rows at
  // LB = pad(kb / 2); a strip reads its source columns from a multiple of 4, its taps' from the
  // offset LA - ka / 2 (LB - kb / 2) into its registers (tile_a, tile_b).
  int64_t LA() const { return pad((ka - 1) / 2); }
  int64_t LB() const { return pad((kb - 1) / 2); }
  DwTile tile_a() const { return DwTile{"", "", "", "", 0, 0, ka, ka, 1, 1, LA() - (ka - 1) / 2, R, RHa}; }
  DwTile tile_b() const { return DwTile{"", "", "", "", 0, 0, kb, kb, 1, 1, LB() - (kb - 1) / 2, R, RHb}; }
  // Floats a row: the staged input rows, the first conv's rows, the two tap tables.
  int64_t xw() const {
    return planes ? pad(std::max(LA() + W + (ka - 1) / 2, W - R + tile_a().nx())) : W + ka - 1;
  }
  int64_t tw() const {
    return planes ? pad(std::max(LB() + W + (kb - 1) / 2, W - R + tile_b().nx())) : W + kb - 1;
  }
  int64_t wa() const { return pad(ka); }
  int64_t wb() const { return pad(kb); }
  int64_t xh() const { return BH + ka - 1 + kb - 1; }
  int64_t th() const { return BH + kb - 1; }
  // Shared-memory bytes of a block (the planes form also keeps the PB planes' biases there).
  int64_t smem() const {
    return PB * (xh() * xw() + th() * tw() + ka * wa() + kb * wb() + (planes ? 2 : 0)) * 4;
  }
};
DwPairShape dw_pair_shape(const Plan& p, int64_t planes, int64_t H, int64_t W, int64_t ka, int64_t kb) {
  const int64_t target = tune_target(p, TuneKey::DwPairBlocks), rmax = tune_target(p, TuneKey::DwPairR),
                rhmax = tune_target(p, TuneKey::DwRows);
  DwPairShape s;
  s.W = W, s.ka = ka, s.kb = kb;
  s.BH = dw_pair_band_rows(planes, H, target);
  s.NBAND = (H + s.BH - 1) / s.BH;
  if (s.NBAND == 1 && planes >= 2 * target)
    for (const int64_t r : {8, 4}) {
      if (r > rmax || W % r) continue;
      // Rows a thread: up to dw_rows (4) of the second conv dividing H, as many or fewer of the
      // first dividing its H + kb - 1 rows; fewer where the block would have too few strips.
      for (const int64_t rh : {4, 2, 1}) {
        if (rh > rhmax || H % rh) continue;
        DwPairShape v = s;
        v.planes = true, v.R = r, v.RHb = rh;
        for (const int64_t ra : {4, 2, 1})
          if (ra <= rh && (H + kb - 1) % ra == 0) {
            v.RHa = ra;
            break;
          }
        const PlanesBlock pb =
            planes_block(planes, H / rh * (W / r), target, v.smem(), kDwPairSmemBytes, kDwPairThreads, kDwPairMinStrips);
        if (!pb.threads) continue;
        v.PB = pb.PB, v.threads = pb.threads;
        return v;
      }
    }
  // The band form: R only where the band's second-conv outputs still give every thread a strip
  // (no thread that the one-output form keeps busy is left idle; small late-stage planes keep 1).
  for (const int64_t r : {4, 2})
    if (s.R == 1 && W % r == 0 && s.BH * W / r >= kDwPairThreads) s.R = r;
  return s;
}
void fuse_dw_pairs(Plan& p) {
  fuse_pairs(p, [&](const Call& a, const Call& b, Kernel* k, Call* f) {
    const int64_t ka = dw_same_size(p, a);
    const int64_t kb = ka ? dw_same_size(p, b) : 0;
    if (!kb) return false;
    const Shape& xs = p.buffers.at(size_t(a.inputs[0])).shape;
    const int64_t H = xs[2], W = xs[3];
    if (b.inputs[0] != a.outputs[0] || dw_pair_shape(p, xs[0] * xs[1], H, W, ka, kb).smem() > kDwPairSmemBytes) return false;
    const Kernel& akern = p.kernels.at(size_t(a.kernel));
    const Kernel& bkern = p.kernels.at(size_t(b.kernel));
    *k = akern;
    k->name = "dwpair_" + std::to_string(ka) + "x" + std::to_string(ka) + "_" + std::to_string(kb) + "x" +
              std::to_string(kb) + "_" + dtype_name(p.buffers.at(size_t(b.outputs[0])).dtype);
    k->post_ops.insert(k->post_ops.end(), bkern.post_ops.begin(), bkern.post_ops.end());
    k->attrs.set("cl_batch", int64_t(2));
    k->attrs.set("cuda_dw_pair", int64_t(1));
    k->attrs.set("cuda_batch_post_ops", std::vector<int64_t>{int64_t(akern.post_ops.size()), int64_t(bkern.post_ops.size())});
    f->outputs = {a.outputs[0], b.outputs[0]};
    auto in = [](const Call& c, size_t j) { return j < c.inputs.size() ? c.inputs[j] : -1; };
    f->inputs = {a.inputs[0], a.inputs[1], in(a, 2), b.inputs[1], in(b, 2)};
    return true;
  });
}
Generated dw_pair(const Plan& p, const Call& c) {
  Generated gen;
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  const std::vector<int64_t> npo = k.attrs.ints("cuda_batch_post_ops");
  if (c.outputs.size() != 2 || c.inputs.size() != 5 || npo.size() != 2 || c.inputs[0] < 0 || c.inputs[1] < 0 ||
      c.inputs[3] < 0 || size_t(npo[0] + npo[1]) != k.post_ops.size())
    return gen.why = "depthwise pair call out of shape", gen;
  const Buffer& X = p.buffers.at(size_t(c.inputs[0]));
  const Buffer& T = p.buffers.at(size_t(c.outputs[0]));
  const Buffer& U = p.buffers.at(size_t(c.outputs[1]));
  const int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], W = X.shape[3], HW = H * W;
  const int64_t ka = p.buffers.at(size_t(c.inputs[1])).shape[2], kb = p.buffers.at(size_t(c.inputs[3])).shape[2];
  const DwPairShape sh = dw_pair_shape(p, N * C, H, W, ka, kb);
  if (sh.smem() > kDwPairSmemBytes) return gen.why = "depthwise pair too large", gen;
  const int64_t BH = sh.BH, NBAND = sh.NBAND, PB = sh.PB, R = sh.R, NT = sh.threads;
  const bool pf = sh.planes;
  // xs: input rows R0 - hb - ha .. (XH rows of XW floats, the map's columns from ha); ts: first-conv
  // rows R0 - hb .. (TH rows of TW floats, the map's from hb); R0 = the band's first row (the
  // planes form: 0, and plane pl's rows from pl * XH, pl * TH).
  const int64_t ha = (ka - 1) / 2, hb = (kb - 1) / 2, XW = sh.xw(), XH = sh.xh(), TW = sh.tw(), TH = sh.th(),
                WA = sh.wa(), WB = sh.wb(), LA = sh.LA(), LB = sh.LB();
  auto dtype_of = [&](size_t j) { return p.buffers.at(size_t(c.inputs[j])).dtype; };
  // V: input elements a thread stages at once (fp16 rows of W % 8 == 0: 16-byte loads; W even: 4
  // bytes); R: outputs of one row a thread computes (W % R == 0), its taps' inputs read once from
  // shared memory into registers and used by all R (7x7: 10 reads for 4 outputs, not 49 each).
  const int64_t V = X.dtype != DType::F16 ? 1 : W % 8 == 0 ? 8 : W % 2 == 0 ? 2 : 1;
  std::ostringstream b;
  b << "  // " << V << " input elements a staging load, " << R << " outputs of a row a thread";
  if (pf) {
    b << ", " << PB << " planes a block (float4 rows), " << sh.RHa << " and " << sh.RHb << " rows a thread\n"
      << "  __shared__ __align__(16) float xs[" << PB * XH * XW << "], ts[" << PB * TH * TW << "], wa[" << PB * ka * WA
      << "], wb[" << PB * kb * WB << "];\n"
      << "  __shared__ float ba[" << PB << "], bb[" << PB << "];\n"
      << "  const opv_idx plane0 = (opv_idx)blockIdx.x * " << PB << ";\n"
      << "  constexpr int R0 = 0;\n";
  } else {
    b << "\n  __shared__ float xs[" << XH * XW << "], ts[" << TH * TW << "], wa[" << ka * ka << "], wb[" << kb * kb << "];\n"
      << "  const opv_idx plane = blockIdx.x / " << NBAND << ", c = plane % " << I(C) << ";\n"
      << "  const int R0 = (int)(blockIdx.x % " << NBAND << ") * " << BH << ";\n";
  }
  b << "  const int tid = threadIdx.x;\n";
  // The weight prologue (kEntryOpenLate): with the taps and biases plan Constants they are loaded
  // before the wait for the kernels before this one, the input rows after it.
  bool late = true;
  for (size_t j : {1, 2, 3, 4}) late &= weight_input(p, c, j);
  // Staged row rr's plane (the planes form: rr counts the block's planes' rows).
  const std::string row_plane = pf ? "    const opv_idx plane = plane0 + rr / " + std::to_string(XH) + ";\n" : "";
  const std::string row_in_plane = pf ? "rr % " + std::to_string(XH) : "rr";
  std::ostringstream xl;  // the input rows' staging
  if (V == 1) {
    xl << block_steps(PB * XH * XW, NT, "  ")
      << (pf ? "    const int rr = e / " + std::to_string(XW) + ";\n" + row_plane : std::string())
      << "    const int r = R0 - " << hb + ha << " + " << (pf ? row_in_plane : "e / " + std::to_string(XW)) << ", q = e % "
      << XW << " - " << LA << ";\n"
      << "    xs[e] = (r >= 0 && r < " << H << " && q >= 0 && q < " << W << ") ? "
      << load(X.dtype, "in0", "plane * " + I(HW) + " + r * " + I(W) + " + q") << " : 0.0f;\n  }\n";
  } else {
    // The map's columns of each staged row V at a time (zero rows outside the map), the border columns zero.
    const std::string vt = V == 8 ? "uint4" : "unsigned";
    xl << block_steps(PB * XH * (W / V), NT, "  ")
      << "    const int rr = e / " << W / V << ", q = (e % " << W / V << ") * " << V
      << (pf ? ";\n" + row_plane + "    const int r = R0 - " : ", r = R0 - ") << hb + ha << " + " << row_in_plane << ";\n"
      << "    __align__(16) unsigned short hv[" << V << "];\n"
      << "    if (r >= 0 && r < " << H << ") *(" << vt << "*)hv = *(const " << vt << "*)(in0 + plane * " << I(HW) << " + r * "
      << I(W) << " + q);\n";
    if (pf) {  // from column LA + q, a multiple of 4: V / 4 float4s (V = 2: a float2)
      const std::string ft = V == 8 ? "float4" : "float2";
      const int64_t fw = V == 8 ? 4 : 2;
      xl << "    __align__(16) float fv[" << V << "];\n"
         << "#pragma unroll\n    for (int j = 0; j < " << V << "; ++j) fv[j] = r >= 0 && r < " << H << " ? opv_h2f(hv[j]) : 0.0f;\n"
         << "#pragma unroll\n    for (int j = 0; j < " << V / fw << "; ++j) *(" << ft << "*)&xs[rr * " << XW << " + " << LA
         << " + q + " << fw << " * j] = *(const " << ft << "*)&fv[" << fw << " * j];\n  }\n";
    } else {
      xl << "#pragma unroll\n    for (int j = 0; j < " << V << "; ++j) xs[rr * " << XW << " + " << LA << " + q + j] = r >= 0 && r < "
         << H << " ? opv_h2f(hv[j]) : 0.0f;\n  }\n";
    }
    if (XW > W)
      xl << block_steps(PB * XH * (XW - W), NT, "  ")
        << "    const int rr = e / " << XW - W << ", j = e % " << XW - W << ";\n"
        << "    xs[rr * " << XW << " + (j < " << LA << " ? j : " << W << " + j)] = 0.0f;\n  }\n";
  }
  if (!late) b << xl.str();
  b << block_steps(PB * TH * TW, NT, "  ")
    << "    const int q = e % " << TW << " - " << LB << ";\n"
    << "    if (q < 0 || q >= " << W << ") ts[e] = 0.0f;\n  }\n";
  if (pf) {
    // PB planes' taps, each tap row padded to WA (WB) floats with zeros; the biases.
    auto taps = [&](const char* dst, int slot, int64_t kk, int64_t ws) {
      b << block_steps(PB * kk * ws, NT, "  ")
        << "    const int pl = e / " << kk * ws << ", kh = e % " << kk * ws << " / " << ws << ", kw = e % " << ws << ";\n"
        << "    " << dst << "[e] = kw < " << kk << " ? "
        << load(dtype_of(size_t(slot)), "in" + std::to_string(slot),
                "((plane0 + pl) % " + I(C) + ") * " + I(kk * kk) + " + kh * " + I(kk) + " + kw")
        << " : 0.0f;\n  }\n";
    };
    taps("wa", 1, ka, WA);
    taps("wb", 3, kb, WB);
    for (int slot : {2, 4})
      if (c.inputs[size_t(slot)] >= 0)
        b << "  for (int e = tid; e < " << PB << "; e += " << NT << ") " << (slot == 2 ? "ba" : "bb") << "[e] = "
          << load(dtype_of(size_t(slot)), "in" + std::to_string(slot), "(plane0 + e) % " + I(C)) << ";\n";
  } else {
    b << "  for (int e = tid; e < " << ka * ka << "; e += " << kDwPairThreads << ") wa[e] = "
      << load(dtype_of(1), "in1", "c * " + I(ka * ka) + " + e") << ";\n"
      << "  for (int e = tid; e < " << kb * kb << "; e += " << kDwPairThreads << ") wb[e] = "
      << load(dtype_of(3), "in3", "c * " + I(kb * kb) + " + e") << ";\n";
    // The biases into registers before the first barrier: read after it, each was a global-memory
    // round trip after a bar.sync in the SASS (the load does not move above one). No measurable
    // change on the H100 (run 32: the warps' instruction chains are the time), kept as the
    // shorter path.
    for (int slot : {2, 4})
      if (c.inputs[size_t(slot)] >= 0)
        b << "  const float bias" << slot << " = " << load(dtype_of(size_t(slot)), "in" + std::to_string(slot), "c") << ";\n";
  }
  if (late) b << "  OPV_KERNEL_ENTRY();  // the taps and biases above are weights: no kernel writes them\n" << xl.str();
  b << "  __syncthreads();\n";
  // The band form's R outputs (tile row i, columns q0 .. q0 + R - 1) of a conv over `src` (sw floats
  // a row; output column q's kh-th row of taps is src row i + kh, columns q .. q + kk - 1) with taps
  // `w` (kk floats a row): each tap row's R + kk - 1 inputs into registers, then every output's taps
  // in the order kh, then kw (fmaf from 0, as a thread per output sums them), the bias, the
  // post-ops: v[r].
  auto conv_acc = [&](const std::string& src, int64_t kk, int64_t sw, const std::string& w, const std::string& bias,
                      int64_t po_from, int64_t po_n) {
    b << "    float acc[" << R << "];\n"
      << "#pragma unroll\n    for (int u = 0; u < " << R << "; ++u) acc[u] = 0.0f;\n"
      << "#pragma unroll\n    for (int kh = 0; kh < " << kk << "; ++kh) {\n"
      << "      float xr[" << R + kk - 1 << "];\n"
      << "#pragma unroll\n      for (int j = 0; j < " << R + kk - 1 << "; ++j) xr[j] = " << src << "[(i + kh) * " << sw
      << " + q0 + j];\n"
      << "#pragma unroll\n      for (int u = 0; u < " << R << "; ++u)\n"
      << "#pragma unroll\n        for (int kw = 0; kw < " << kk << "; ++kw) acc[u] = fmaf(xr[u + kw], " << w << "[kh * " << kk
      << " + kw], acc[u]);\n"
      << "    }\n"
      << "    float v[" << R << "];\n"
      << "#pragma unroll\n    for (int u = 0; u < " << R << "; ++u) {\n"
      << "      float vv = acc[u]" << (bias.empty() ? std::string() : " + " + bias) << ";\n";
    for (int64_t q = po_from; q < po_from + po_n; ++q) b << "      vv = " << unary_expr(k.post_ops[size_t(q)], "vv") << ";\n";
    b << "      v[u] = vv;\n    }\n";
  };
  auto bias_of = [&](int slot) {
    if (c.inputs[size_t(slot)] < 0) return std::string();
    return pf ? std::string(slot == 2 ? "ba" : "bb") + "[pl]" : "bias" + std::to_string(slot);
  };
  // Strip e's plane pl of the block and that plane's tiles (the planes form), over `rows` rows.
  auto strip_plane = [&](int64_t rows) -> std::string {
    if (!pf) return "";
    const std::string n = std::to_string(rows * (W / R));
    return "    const int pl = e / " + n + ";\n    const opv_idx plane = plane0 + pl;\n" +
           "    const float* xp = xs + pl * " + std::to_string(XH * XW) + ";\n" + "    float* tp = ts + pl * " +
           std::to_string(TH * TW) + ";\n" + "    const float* wap = wa + pl * " + std::to_string(ka * WA) + ";\n" +
           "    const float* wbp = wb + pl * " + std::to_string(kb * WB) + ";\n";
  };
  const int64_t NS = W / R;  // strips of R outputs a row
  const std::string ts_value = T.dtype == DType::F16 ? "opv_h2f(opv_f2h(v[j]))" : "v[j]";
  if (pf) {
    // The planes form: register tiles of RHa (RHb) rows x R outputs (dw_tile_acc); ts's rows from
    // column LB, so a strip's R first-conv values go to ts as float4s.
    const int64_t SA = TH / sh.RHa * NS, SB = H / sh.RHb * NS;
    auto values = [&](const std::string& bias, int64_t po_from, int64_t po_n) {
      return dw_tile_values(R, bias, k.post_ops.data() + po_from, size_t(po_n));
    };
    // The first conv on ts's rows (T row r = i - hb; zero outside the map), stored for the map's rows.
    DwTile ta = sh.tile_a();
    ta.src = "xp", ta.w = "wap", ta.row0 = "i0", ta.col0 = "q0", ta.sw = XW, ta.ws = WA;
    b << block_steps(PB * SA, NT, "  ") << strip_plane(TH / sh.RHa) << "    const int i0 = e % " << SA << " / " << NS
      << " * " << sh.RHa << ", q0 = (e % " << NS << ") * " << R << ";\n"
      << dw_tile_acc(ta) << "#pragma unroll\n    for (int ty_ = 0; ty_ < " << sh.RHa << "; ++ty_) {\n"
      << "      const int r = i0 + ty_ - " << hb << ";\n"
      << "      float* trow = tp + (i0 + ty_) * " << TW << " + " << LB << " + q0;\n"
      << "      if (r < 0 || r >= " << H << ") {\n"
      << "#pragma unroll\n        for (int j = 0; j < " << R / 4 << "; ++j) *(float4*)&trow[4 * j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);\n"
      << "        continue;\n      }\n"
      << values(bias_of(2), 0, npo[0]) << dw_tile_store(T.dtype, R, "out0", "plane * " + I(HW) + " + r * " + I(W) + " + q0")
      << "      __align__(16) float tv[" << R << "];  // what the second conv reads: the stored value\n"
      << "#pragma unroll\n      for (int j = 0; j < " << R << "; ++j) tv[j] = " << ts_value << ";\n"
      << "#pragma unroll\n      for (int j = 0; j < " << R / 4 << "; ++j) *(float4*)&trow[4 * j] = *(const float4*)&tv[4 * j];\n"
      << "    }\n  }\n";
    b << "  __syncthreads();\n"
      << "  OPV_PDL_TRIGGER();  // the second conv is left: the next kernel may be launched\n";
    // The second conv (map row i0 + ty_: ts rows i0 + ty_ .. + kb - 1).
    DwTile tb = sh.tile_b();
    tb.src = "tp", tb.w = "wbp", tb.row0 = "i0", tb.col0 = "q0", tb.sw = TW, tb.ws = WB;
    b << block_steps(PB * SB, NT, "  ") << strip_plane(H / sh.RHb) << "    const int i0 = e % " << SB << " / " << NS
      << " * " << sh.RHb << ", q0 = (e % " << NS << ") * " << R << ";\n"
      << dw_tile_acc(tb) << "#pragma unroll\n    for (int ty_ = 0; ty_ < " << sh.RHb << "; ++ty_) {\n"
      << values(bias_of(4), npo[0], npo[1])
      << dw_tile_store(U.dtype, R, "out1", "plane * " + I(HW) + " + (i0 + ty_) * " + I(W) + " + q0") << "    }\n  }\n";
  } else {
    // The first conv on ts's rows (T row r = R0 - hb + i; zero outside the map), stored for the band's rows.
    b << block_steps(TH * NS, NT, "  ")
      << "    const int i = e / " << NS << ", q0 = (e % " << NS << ") * " << R << ", r = R0 - " << hb << " + i;\n"
      << "    if (r < 0 || r >= " << H << ") {\n"
      << "#pragma unroll\n      for (int j = 0; j < " << R << "; ++j) ts[i * " << TW << " + q0 + j + " << hb << "] = 0.0f;\n"
      << "      continue;\n    }\n";
    conv_acc("xs", ka, XW, "wa", bias_of(2), 0, npo[0]);
    b << "#pragma unroll\n    for (int j = 0; j < " << R << "; ++j) {\n"
      << "      if (r >= R0 && r < R0 + " << BH << ") "
      << store(T.dtype, "out0", "plane * " + I(HW) + " + r * " + I(W) + " + q0 + j", "v[j]") << "\n"
      << "      ts[i * " << TW << " + q0 + j + " << hb << "] = " << ts_value
      << ";  // what the second conv reads: the stored value\n    }\n  }\n";
    b << "  __syncthreads();\n";
    // The second conv on the band's rows (row R0 + i: ts rows i .. i + kb - 1).
    b << "  OPV_PDL_TRIGGER();  // the second conv is left: the next kernel may be launched\n"
      << "  const int nout = (" << H << " - R0 < " << BH << " ? " << H << " - R0 : " << BH << ") * " << NS << ";\n"
      << block_steps(BH * NS, kDwPairThreads, "  ") << "    if (e >= nout) break;  // the map's last band is shorter\n"
      << "    const int i = e / " << NS << ", q0 = (e % " << NS << ") * " << R << ";\n";
    conv_acc("ts", kb, TW, "wb", bias_of(4), npo[0], npo[1]);
    b << "#pragma unroll\n    for (int j = 0; j < " << R << "; ++j) "
      << store(U.dtype, "out1", "plane * " + I(HW) + " + (R0 + i) * " + I(W) + " + q0 + j", "v[j]") << "\n  }\n";
  }
  std::string params = std::string(c_type(T.dtype)) + "* __restrict__ out0, " + c_type(U.dtype) + "* __restrict__ out1";
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (c.inputs[j] >= 0)
      params += input_param(p, c, j, c_type(dtype_of(j)));
  gen.entry = "opv_" + k.name;
  std::ostringstream src;
  src << "// generated by opvision src/target/cuda/dw_pair.cpp (kernel " << k.name
      << ", two depthwise convs in one launch) -- do not edit\n"
      << kPrelude << "typedef int opv_idx;  // every index of this kernel fits an int\n"
      << "extern \"C\" __global__ void __launch_bounds__(" << NT << ") " << gen.entry << "(" << params
      << (late ? kEntryOpenLate : kEntryOpen) << b.str() << "}\n";
  gen.source = src.str();
  gen.global = {N * C * NBAND / PB * NT, 0, 0};
  gen.local = {NT, 0, 0};
  return gen;
}

}  // namespace opv::plan::cuda::detail
