/* The depthwise pair of target "cuda" (part of plan pass "cuda-codegen", codegen.h):
 *   1. fuse_dw_pairs: a stride-1 'same' depthwise conv immediately followed by another on its
 *      output (FastViT's RepMixer 3x3, then the ConvFFN's 7x7) becomes one call (cuda_abi.h).
 *   2. dw_pair: that call's kernel, in one of two forms (dw_pair_shape): a block per band of one
 *      plane (the band form), or several whole planes a block with R = 4 or 8 outputs of a row a
 *      thread read as float4s (the planes form, where the planes are many: batched artifacts).
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
// Shared-memory bytes of a depthwise pair's block: the staged input rows, the first conv's tile,
// both weights.
int64_t dw_pair_smem(int64_t BH, int64_t W, int64_t ka, int64_t kb) {
  return ((BH + ka - 1 + kb - 1) * (W + ka - 1) + (BH + kb - 1) * (W + kb - 1) + ka * ka + kb * kb) * 4;
}
void fuse_dw_pairs(Plan& p) {
  fuse_pairs(p, [&](const Call& a, const Call& b, Kernel* k, Call* f) {
    const int64_t ka = dw_same_size(p, a);
    const int64_t kb = ka ? dw_same_size(p, b) : 0;
    if (!kb) return false;
    const Shape& xs = p.buffers.at(size_t(a.inputs[0])).shape;
    const int64_t H = xs[2], W = xs[3];
    const int64_t bytes = dw_pair_smem(dw_pair_band_rows(xs[0] * xs[1], H, tune_target(p, TuneKey::DwPairBlocks)), W, ka, kb);
    if (b.inputs[0] != a.outputs[0] || bytes > kDwPairSmemBytes) return false;
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
  const int64_t BH = dw_pair_band_rows(N * C, H, tune_target(p, TuneKey::DwPairBlocks)), NBAND = (H + BH - 1) / BH;
  if (dw_pair_smem(BH, W, ka, kb) > kDwPairSmemBytes) return gen.why = "depthwise pair too large", gen;
  // xs: input rows R0 - hb - ha .. (XH rows, W + 2 ha columns); ts: first-conv rows R0 - hb .. (TH
  // rows, W + 2 hb columns); R0 = the band's first row.
  const int64_t ha = (ka - 1) / 2, hb = (kb - 1) / 2, XW = W + 2 * ha, XH = BH + 2 * hb + 2 * ha, TW = W + 2 * hb,
                TH = BH + 2 * hb;
  auto dtype_of = [&](size_t j) { return p.buffers.at(size_t(c.inputs[j])).dtype; };
  // V: input elements a thread stages at once (fp16 rows of W % 8 == 0: 16-byte loads; W even: 4
  // bytes); R: outputs of one row a thread computes (W % R == 0), its taps' inputs read once from
  // shared memory into registers and used by all R (7x7: 10 reads for 4 outputs, not 49 each).
  const int64_t V = X.dtype != DType::F16 ? 1 : W % 8 == 0 ? 8 : W % 2 == 0 ? 2 : 1;
  // R only where the band's second-conv outputs still give every thread a strip: no thread that
  // the one-output form keeps busy is left idle (the small late-stage planes keep R = 1).
  int64_t R = 1;
  for (const int64_t r : {4, 2})
    if (R == 1 && W % r == 0 && BH * W / r >= kDwPairThreads) R = r;
  std::ostringstream b;
  b << "  // " << V << " input elements a staging load, " << R << " outputs of a row a thread\n"
    << "  __shared__ float xs[" << XH * XW << "], ts[" << TH * TW << "], wa[" << ka * ka << "], wb[" << kb * kb << "];\n"
    << "  const opv_idx plane = blockIdx.x / " << NBAND << ", c = plane % " << I(C) << ";\n"
    << "  const int R0 = (int)(blockIdx.x % " << NBAND << ") * " << BH << ";\n"
    << "  const int tid = threadIdx.x;\n";
  // The weight prologue (kEntryOpenLate): with the taps and biases plan Constants they are loaded
  // before the wait for the kernels before this one, the input rows after it.
  bool late = true;
  for (size_t j : {1, 2, 3, 4}) late &= weight_input(p, c, j);
  std::ostringstream xl;  // the input rows' staging
  if (V == 1) {
    xl << block_steps(XH * XW, kDwPairThreads, "  ")
      << "    const int r = R0 - " << hb + ha << " + e / " << XW << ", q = e % " << XW << " - " << ha << ";\n"
      << "    xs[e] = (r >= 0 && r < " << H << " && q >= 0 && q < " << W << ") ? "
      << load(X.dtype, "in0", "plane * " + I(HW) + " + r * " + I(W) + " + q") << " : 0.0f;\n  }\n";
  } else {
    // The map's columns of each staged row V at a time (zero rows outside the map), the border columns zero.
    const std::string vt = V == 8 ? "uint4" : "unsigned";
    xl << block_steps(XH * (W / V), kDwPairThreads, "  ")
      << "    const int rr = e / " << W / V << ", q = (e % " << W / V << ") * " << V << ", r = R0 - " << hb + ha << " + rr;\n"
      << "    __align__(16) unsigned short hv[" << V << "];\n"
      << "    if (r >= 0 && r < " << H << ") *(" << vt << "*)hv = *(const " << vt << "*)(in0 + plane * " << I(HW) << " + r * "
      << I(W) << " + q);\n"
      << "#pragma unroll\n    for (int j = 0; j < " << V << "; ++j) xs[rr * " << XW << " + " << ha << " + q + j] = r >= 0 && r < " << H
      << " ? opv_h2f(hv[j]) : 0.0f;\n  }\n";
    if (ha > 0)
      xl << block_steps(XH * 2 * ha, kDwPairThreads, "  ")
        << "    const int rr = e / " << 2 * ha << ", j = e % " << 2 * ha << ";\n"
        << "    xs[rr * " << XW << " + (j < " << ha << " ? j : " << W << " + j)] = 0.0f;\n  }\n";
  }
  if (!late) b << xl.str();
  b << block_steps(TH * TW, kDwPairThreads, "  ")
    << "    const int q = e % " << TW << " - " << hb << ";\n"
    << "    if (q < 0 || q >= " << W << ") ts[e] = 0.0f;\n  }\n"
    << "  for (int e = tid; e < " << ka * ka << "; e += " << kDwPairThreads << ") wa[e] = "
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
  if (late) b << "  OPV_KERNEL_ENTRY();  // the taps and biases above are weights: no kernel writes them\n" << xl.str();
  b << "  __syncthreads();\n";
  // R outputs (tile row i, columns q0 .. q0 + R - 1) of a conv over `src` (sw floats a row; output
  // column q's kh-th row of taps is src row i + kh, columns q .. q + kk - 1): each tap row's R + kk
  // - 1 inputs into registers, then every output's taps in the order kh, then kw (fmaf from 0, as a
  // thread per output sums them), the bias, the post-ops: v[r].
  auto conv_acc = [&](const std::string& src, int64_t kk, int64_t sw, const std::string& w, int bias_slot,
                      int64_t po_from, int64_t po_n) {
    b << "    float acc[" << R << "];\n"
      << "#pragma unroll\n    for (int u = 0; u < " << R << "; ++u) acc[u] = 0.0f;\n"
      << "#pragma unroll\n    for (int kh = 0; kh < " << kk << "; ++kh) {\n"
      << "      float xr[" << R + kk - 1 << "];\n"
      << "#pragma unroll\n      for (int j = 0; j < " << R + kk - 1 << "; ++j) xr[j] = " << src << "[(i + kh) * " << sw << " + q0 + j];\n"
      << "#pragma unroll\n      for (int u = 0; u < " << R << "; ++u)\n"
      << "#pragma unroll\n        for (int kw = 0; kw < " << kk << "; ++kw) acc[u] = fmaf(xr[u + kw], " << w << "[kh * " << kk
      << " + kw], acc[u]);\n"
      << "    }\n"
      << "    float v[" << R << "];\n"
      << "#pragma unroll\n    for (int u = 0; u < " << R << "; ++u) {\n"
      << "      float vv = acc[u]"
      << (c.inputs[size_t(bias_slot)] >= 0 ? " + bias" + std::to_string(bias_slot) : std::string())
      << ";\n";
    for (int64_t q = po_from; q < po_from + po_n; ++q) b << "      vv = " << unary_expr(k.post_ops[size_t(q)], "vv") << ";\n";
    b << "      v[u] = vv;\n    }\n";
  };
  const int64_t NS = W / R;  // strips of R outputs a row
  // The first conv on ts's rows (T row r = R0 - hb + i; zero outside the map), stored for the band's rows.
  b << block_steps(TH * NS, kDwPairThreads, "  ")
    << "    const int i = e / " << NS << ", q0 = (e % " << NS << ") * " << R << ", r = R0 - " << hb << " + i;\n"
    << "    if (r < 0 || r >= " << H << ") {\n"
    << "#pragma unroll\n      for (int j = 0; j < " << R << "; ++j) ts[i * " << TW << " + q0 + j + " << hb << "] = 0.0f;\n"
    << "      continue;\n    }\n";
  conv_acc("xs", ka, XW, "wa", 2, 0, npo[0]);
  b << "#pragma unroll\n    for (int j = 0; j < " << R << "; ++j) {\n"
    << "      if (r >= R0 && r < R0 + " << BH << ") "
    << store(T.dtype, "out0", "plane * " + I(HW) + " + r * " + I(W) + " + q0 + j", "v[j]") << "\n"
    << "      ts[i * " << TW << " + q0 + j + " << hb << "] = " << (T.dtype == DType::F16 ? "opv_h2f(opv_f2h(v[j]))" : "v[j]")
    << ";  // what the second conv reads: the stored value\n    }\n  }\n"
    << "  __syncthreads();\n";
  // The second conv on the band's rows (row R0 + i: ts rows i .. i + kb - 1).
  b << "  OPV_PDL_TRIGGER();  // the second conv is left: the next kernel may be launched\n"
    << "  const int nout = (" << H << " - R0 < " << BH << " ? " << H << " - R0 : " << BH << ") * " << NS << ";\n"
    << block_steps(BH * NS, kDwPairThreads, "  ") << "    if (e >= nout) break;  // the map's last band is shorter\n"
    << "    const int i = e / " << NS << ", q0 = (e % " << NS << ") * " << R << ";\n";
  conv_acc("ts", kb, TW, "wb", 4, npo[0], npo[1]);
  b << "#pragma unroll\n    for (int j = 0; j < " << R << "; ++j) "
    << store(U.dtype, "out1", "plane * " + I(HW) + " + (R0 + i) * " + I(W) + " + q0 + j", "v[j]") << "\n  }\n";
  std::string params = std::string(c_type(T.dtype)) + "* __restrict__ out0, " + c_type(U.dtype) + "* __restrict__ out1";
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (c.inputs[j] >= 0)
      params += std::string(", const ") + c_type(dtype_of(j)) + "* __restrict__ in" + std::to_string(j);
  gen.entry = "opv_" + k.name;
  std::ostringstream src;
  src << "// generated by opvision src/target/cuda/codegen.cpp (kernel " << k.name
      << ", two depthwise convs in one launch) -- do not edit\n"
      << kPrelude << "typedef int opv_idx;  // every index of this kernel fits an int\n"
      << "extern \"C\" __global__ void __launch_bounds__(" << kDwPairThreads << ") " << gen.entry << "(" << params
      << (late ? kEntryOpenLate : kEntryOpen) << b.str() << "}\n";
  gen.source = src.str();
  gen.global = {N * C * NBAND * kDwPairThreads, 0, 0};
  gen.local = {kDwPairThreads, 0, 0};
  return gen;
}


}  // namespace opv::plan::cuda::detail
