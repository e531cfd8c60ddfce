/* Single depthwise convs of target "cuda" over many planes (part of plan pass "cuda-codegen",
 * codegen.h): the planes form of one depthwise conv of any stride, padding and channel multiplier
 * (FastViT's downsampling 7x7 stride 2, the stem's 3x3 stride 2), where a batched artifact gives
 * it many output planes.
 *   1. dw_planes_shape: whether a call takes the form, and its block (planes a block, outputs of a
 *      row a thread, the staged tiles' sizes).
 *   2. dw_planes: that call's kernel.
 * Invariant: every output sums the same taps in the same order as the generic conv's thread per
 * output (kh, then kw, fmaf from 0; then the bias, then the post-ops). The taps the generic conv
 * skips (outside the map) are zeros here: fmaf(0, w, acc) is acc for finite w (acc is never -0),
 * so both give the same bytes.
 */
#include <algorithm>
#include <climits>
#include <cstdint>
#include <sstream>
#include <string>

#include "target/c_expr.h"
#include "target/cuda/codegen_internal.h"
#include "target/cuda/options.h"

namespace opv::plan::cuda::detail {

// The generic conv gives a thread one output: a 7x7 tap is a global load (L1) each, 49 an output,
// and its grid is sized by outputs alone. The batch-32 artifact's three 7x7 stride-2 downsamples
// took 0.073 ms and the stem's 3x3 stride 2 0.036 of the batch's 1.08 ms of kernels on the H100
// (session 27 run 56), for ~60 MB of traffic (~20 us at HBM speed). Where there are at least twice
// TuneKey::DwPairBlocks output planes, a block takes PB whole output planes (a power of two
// dividing them), stages each plane's input rows once (16-byte loads where fp16 rows are a
// multiple of 8 wide; zero outside the map) and its taps into shared memory, rows padded to 4
// floats, and a thread computes R = 8 or 4 adjacent outputs of a row (TuneKey::DwR at most, 4 by
// default; below 4 every call keeps the generic conv): a tap row's (R - 1) * stride + k inputs and
// its k taps come as float4s (a 7x7 stride 2 at R = 4: 4 + 2 reads a row for 4 outputs, not 7
// global loads each). fp16 outputs are stored R at a time (8 or 16 bytes). A channel multiplier
// m > 1 (output channel o reads input channel o / m) stages an input plane once per output plane.
// H100, session 28: with a row of R a thread and the map's columns staged from column pads[1]
// (scalar stores 8 floats apart: 8-way bank conflicts) the 7x7s took 0.064 ms, at 96 % of the
// L1/shared-memory pipe (run 57); with the staged columns from a multiple of 4 (float4 stores) and
// register tiles of up to TuneKey::DwRows rows (dw_tile_acc: each staged row read once for every
// output row it serves) 0.046 ms (run 58; 0.052 with a row a thread).
constexpr int64_t kDwPlanesSmemBytes = 40 << 10;
constexpr int kDwPlanesThreads = 256;
constexpr int64_t kDwPlanesMinStrips = 128;  // strips of R a block at least (else the generic conv)

struct DwPlanesShape {
  bool ok = false;
  int64_t PB = 1, R = 4, RH = 1, threads = kDwPlanesThreads;
  int64_t KH = 0, KW = 0, XH = 0, XW = 0, WA = 0, LP = 0, off = 0;
  // Shared-memory bytes of a block: PB planes' input rows, taps and bias.
  int64_t smem() const { return PB * (XH * XW + KH * WA + 1) * 4; }
};

namespace {
int64_t pad4(int64_t n) { return (n + 3) / 4 * 4; }
}  // namespace

std::string dw_tile_acc(const DwTile& t) {
  const int64_t NX = t.nx(), NL = (t.RH - 1) * t.sy + t.KH;
  std::ostringstream b;
  b << "    float acc[" << t.RH << "][" << t.R << "];\n"
    << "#pragma unroll\n    for (int ty_ = 0; ty_ < " << t.RH << "; ++ty_)\n"
    << "#pragma unroll\n      for (int u = 0; u < " << t.R << "; ++u) acc[ty_][u] = 0.0f;\n"
    << "#pragma unroll\n    for (int tl_ = 0; tl_ < " << NL << "; ++tl_) {  // source rows, each read once\n"
    << "      float xr[" << NX << "];\n"
    << "#pragma unroll\n      for (int j = 0; j < " << NX / 4 << "; ++j) *(float4*)&xr[4 * j] = *(const float4*)&" << t.src
    << "[(" << t.row0 << " + tl_) * " << t.sw << " + " << t.col0 << " + 4 * j];\n"
    << "#pragma unroll\n      for (int ty_ = 0; ty_ < " << t.RH << "; ++ty_) {\n"
    << "        const int kh = tl_ - ty_ * " << t.sy << ";  // output row ty_'s tap row\n"
    << "        if (kh < 0 || kh >= " << t.KH << ") continue;\n"
    << "        float wr[" << t.ws << "];\n"
    << "#pragma unroll\n        for (int j = 0; j < " << t.ws / 4 << "; ++j) *(float4*)&wr[4 * j] = *(const float4*)&" << t.w
    << "[kh * " << t.ws << " + 4 * j];\n"
    << "#pragma unroll\n        for (int u = 0; u < " << t.R << "; ++u)\n"
    << "#pragma unroll\n          for (int kw = 0; kw < " << t.KW << "; ++kw) acc[ty_][u] = fmaf(xr[" << t.off << " + u * "
    << t.sx << " + kw], wr[kw], acc[ty_][u]);\n"
    << "      }\n    }\n";
  return b.str();
}

PlanesBlock planes_block(int64_t planes, int64_t strips, int64_t target, int64_t plane_bytes, int64_t smem_cap,
                         int64_t max_threads, int64_t min_strips) {
  PlanesBlock b;
  while (b.PB * strips < max_threads && planes / (b.PB * 2) >= target && planes % (b.PB * 2) == 0 &&
         2 * b.PB * plane_bytes <= smem_cap)
    b.PB *= 2;
  if (b.PB * strips >= min_strips && b.PB * plane_bytes <= smem_cap)
    b.threads = std::min<int64_t>(max_threads, (b.PB * strips + kWarp - 1) / kWarp * kWarp);
  return b;
}

std::string dw_tile_values(int64_t R, const std::string& bias, const PostOp* first, size_t n) {
  std::string e = "      float v[" + std::to_string(R) + "];\n#pragma unroll\n      for (int u = 0; u < " + std::to_string(R) +
                  "; ++u) {\n        float vv = acc[ty_][u]" + (bias.empty() ? std::string() : " + " + bias) + ";\n";
  for (size_t q = 0; q < n; ++q) e += "        vv = " + unary_expr(first[q], "vv") + ";\n";
  return e + "        v[u] = vv;\n      }\n";
}

std::string dw_tile_store(DType dt, int64_t R, const std::string& name, const std::string& at) {
  const std::string r = std::to_string(R);
  if (dt != DType::F16) return "#pragma unroll\n      for (int j = 0; j < " + r + "; ++j) " + store(dt, name, at + " + j", "v[j]") + "\n";
  const std::string vt = R == 8 ? "uint4" : "uint2";
  return "      {\n        __align__(16) unsigned short hv[" + r + "];\n#pragma unroll\n        for (int j = 0; j < " + r +
         "; ++j) hv[j] = opv_f2h(v[j]);\n        *(" + vt + "*)(" + name + " + " + at + ") = *(const " + vt + "*)hv;\n      }\n";
}

DwPlanesShape dw_planes_shape(const Plan& p, const Call& c) {
  DwPlanesShape s;
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  if (k.op != OpKind::Conv || c.outputs.size() != 1 || c.inputs.size() < 2 || c.inputs[0] < 0 ||
      c.inputs[1] < 0 || k.attrs.i("cl_batch", 0) > 0)
    return s;
  for (const PostOp& po : k.post_ops)
    if (po.input >= 0 || unary_expr(po, "v").empty()) return s;
  const Buffer& X = p.buffers.at(size_t(c.inputs[0]));
  const Buffer& W = p.buffers.at(size_t(c.inputs[1]));
  const Buffer& Y = p.buffers.at(size_t(c.outputs[0]));
  if (X.shape.size() != 4 || W.shape.size() != 4 || Y.shape.size() != 4 || !is_float(X.dtype) || !is_float(W.dtype) ||
      !is_float(Y.dtype) || X.layout != Layout::Linear || Y.layout != Layout::Linear)
    return s;
  const int64_t N = X.shape[0], C = X.shape[1], M = Y.shape[1], OH = Y.shape[2], OW = Y.shape[3];
  if (k.attrs.i("group", 1) != C || C < 1 || M % C || W.shape[0] != M || W.shape[1] != 1 || Y.shape[0] != N) return s;
  const auto st = k.attrs.ints("strides", {1, 1}), pd = k.attrs.ints("pads", {0, 0, 0, 0});
  if (st.size() != 2 || pd.size() != 4 || k.attrs.ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1}) return s;
  for (int64_t v : st)
    if (v < 1 || v > 2) return s;
  for (int64_t v : pd)
    if (v < 0) return s;
  if (c.inputs.size() > 2 && c.inputs[2] >= 0 && numel(p.buffers.at(size_t(c.inputs[2])).shape) != M) return s;
  if (numel(X.shape) > INT32_MAX / 2 || numel(Y.shape) > INT32_MAX / 2) return s;  // the kernel's int indices
  const int64_t target = tune_target(p, TuneKey::DwPairBlocks), rmax = tune_target(p, TuneKey::DwR),
                rhmax = tune_target(p, TuneKey::DwRows);
  const int64_t planes = N * M;
  if (planes < 2 * target || OH < 1 || OW < 1) return s;
  s.KH = W.shape[2], s.KW = W.shape[3];
  // Staged columns from LP before the map's first (pads[1] rounded up to 4 floats: a staged row's
  // map columns start 16-byte aligned, stored as float4s); a strip's source columns from a multiple
  // of 4 (R * stride is), its taps' from off = LP - pads[1] into its registers.
  s.LP = pad4(pd[1]), s.off = s.LP - pd[1];
  s.WA = pad4(s.KW);
  s.XH = (OH - 1) * st[0] + s.KH;  // every row an output reads, input rows from -pads[0]
  for (const int64_t r : {8, 4}) {
    if (r > rmax || OW % r) continue;
    for (const int64_t rh : {4, 2, 1}) {
      if (rh > rhmax || OH % rh) continue;
      DwPlanesShape v = s;
      v.R = r, v.RH = rh;
      const DwTile t{"", "", "", "", 0, 0, v.KH, v.KW, st[0], st[1], v.off, r, rh};
      v.XW = pad4(std::max({v.LP + X.shape[3], v.off + (OW - 1) * st[1] + v.KW, (OW - r) * st[1] + t.nx()}));
      const PlanesBlock pb = planes_block(planes, OH / rh * (OW / r), target, v.smem(), kDwPlanesSmemBytes,
                                          kDwPlanesThreads, kDwPlanesMinStrips);
      if (!pb.threads) continue;
      v.PB = pb.PB, v.threads = pb.threads, v.ok = true;
      return v;
    }
  }
  return s;
}

bool dw_planes_ok(const Plan& p, const Call& c) { return dw_planes_shape(p, c).ok; }

Generated dw_planes(const Plan& p, const Call& c) {
  Generated gen;
  const DwPlanesShape sh = dw_planes_shape(p, c);
  if (!sh.ok) return gen.why = "depthwise conv out of the planes form's shapes", gen;
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  const Buffer& X = p.buffers.at(size_t(c.inputs[0]));
  const Buffer& Y = p.buffers.at(size_t(c.outputs[0]));
  const bool bias = c.inputs.size() > 2 && c.inputs[2] >= 0;
  const auto st = k.attrs.ints("strides", {1, 1}), pd = k.attrs.ints("pads", {0, 0, 0, 0});
  const int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], Wd = X.shape[3], M = Y.shape[1], OH = Y.shape[2],
                OW = Y.shape[3], MULT = M / C;
  const int64_t PB = sh.PB, R = sh.R, RH = sh.RH, NT = sh.threads, KH = sh.KH, KW = sh.KW, XH = sh.XH, XW = sh.XW,
                WA = sh.WA, LP = sh.LP, NS = OW / R, S = OH / RH * NS;
  auto dtype_of = [&](size_t j) { return p.buffers.at(size_t(c.inputs[j])).dtype; };
  // V: input elements a thread stages at once (fp16 rows of W % 8 == 0: 16-byte loads; even: 4 bytes).
  const int64_t V = X.dtype != DType::F16 ? 1 : Wd % 8 == 0 ? 8 : Wd % 2 == 0 ? 2 : 1;
  std::ostringstream b;
  b << "  // depthwise " << KH << "x" << KW << " stride " << st[0] << "x" << st[1] << ", channel multiplier " << MULT
    << ": " << PB << " output planes a block, " << RH << " x " << R << " outputs a thread (float4 rows), " << V
    << " input elements a staging load\n"
    << "  __shared__ __align__(16) float xs[" << PB * XH * XW << "], wt[" << PB * KH * WA << "];\n"
    << (bias ? "  __shared__ float bs[" + std::to_string(PB) + "];\n" : std::string())
    << "  const opv_idx plane0 = (opv_idx)blockIdx.x * " << PB << ";\n"
    << "  const int tid = threadIdx.x;\n";
  // The taps (rows padded to WA floats with zeros) and biases: with both plan Constants, loaded
  // before the wait for the kernels before this one (kEntryOpenLate), the input rows after it.
  const bool late = weight_input(p, c, 1) && weight_input(p, c, 2);
  b << block_steps(PB * KH * WA, NT, "  ") << "    const int pl = e / " << KH * WA << ", kh = e % " << KH * WA << " / "
    << WA << ", kw = e % " << WA << ";\n"
    << "    wt[e] = kw < " << KW << " ? "
    << load(dtype_of(1), "in1", "((plane0 + pl) % " + I(M) + ") * " + I(KH * KW) + " + kh * " + I(KW) + " + kw")
    << " : 0.0f;\n  }\n";
  if (bias)
    b << "  for (int e = tid; e < " << PB << "; e += " << NT << ") bs[e] = "
      << load(dtype_of(2), "in2", "(plane0 + e) % " + I(M)) << ";\n";
  if (late) b << "  OPV_KERNEL_ENTRY();  // the taps and biases above are weights: no kernel writes them\n";
  // Staged row rr of the block (plane pl = rr / XH): input row rr % XH - pads[0] of the input plane
  // under output plane plane0 + pl; column j of a row is input column j - LP.
  const std::string in_plane = "    const opv_idx op = plane0 + rr / " + std::to_string(XH) + ", ip = op / " + I(M) +
                               " * " + I(C) + " + op % " + I(M) + " / " + I(MULT) + ";\n    const int r = rr % " +
                               std::to_string(XH) + " - " + std::to_string(pd[0]) + ";\n";
  if (V == 1) {
    b << block_steps(PB * XH * XW, NT, "  ") << "    const int rr = e / " << XW << ", q = e % " << XW << " - " << LP
      << ";\n"
      << in_plane << "    xs[e] = (r >= 0 && r < " << H << " && q >= 0 && q < " << Wd << ") ? "
      << load(X.dtype, "in0", "ip * " + I(H * Wd) + " + r * " + I(Wd) + " + q") << " : 0.0f;\n  }\n";
  } else {
    // The map's columns of each staged row V at a time (zero rows outside the map) as V / 4 float4s
    // (V = 2: a float2) from a multiple of 4 (LP and q are), the other columns zero.
    const std::string vt = V == 8 ? "uint4" : "unsigned", ft = V == 8 ? "float4" : "float2";
    b << block_steps(PB * XH * (Wd / V), NT, "  ") << "    const int rr = e / " << Wd / V << ", q = (e % " << Wd / V
      << ") * " << V << ";\n"
      << in_plane << "    __align__(16) unsigned short hv[" << V << "];\n"
      << "    __align__(16) float fv[" << V << "];\n"
      << "    if (r >= 0 && r < " << H << ") *(" << vt << "*)hv = *(const " << vt << "*)(in0 + ip * " << I(H * Wd)
      << " + r * " << I(Wd) << " + q);\n"
      << "#pragma unroll\n    for (int j = 0; j < " << V << "; ++j) fv[j] = r >= 0 && r < " << H
      << " ? opv_h2f(hv[j]) : 0.0f;\n"
      << "#pragma unroll\n    for (int j = 0; j < " << (V == 8 ? 2 : 1) << "; ++j) *(" << ft << "*)&xs[rr * " << XW
      << " + " << LP << " + q + " << (V == 8 ? 4 : 2) << " * j] = *(const " << ft << "*)&fv[" << (V == 8 ? 4 : 2)
      << " * j];\n  }\n";
    if (XW > Wd)
      b << block_steps(PB * XH * (XW - Wd), NT, "  ") << "    const int rr = e / " << XW - Wd << ", j = e % " << XW - Wd
        << ";\n"
        << "    xs[rr * " << XW << " + (j < " << LP << " ? j : " << Wd << " + j)] = 0.0f;\n  }\n";
  }
  b << "  __syncthreads();\n"
    << "  OPV_PDL_TRIGGER();  // the inputs are staged: the next kernel may be launched\n";
  // Strip e: plane pl's output rows i0 .. i0 + RH - 1, columns q0 .. q0 + R - 1; output row i0 + ty_'s
  // tap row kh reads staged row (i0 + ty_) * stride + kh.
  b << block_steps(PB * S, NT, "  ") << "    const int pl = e / " << S << ", i0 = e % " << S << " / " << NS << " * " << RH
    << ", q0 = (e % " << NS << ") * " << R << ";\n"
    << "    const float* xp = xs + pl * " << XH * XW << ";\n"
    << "    const float* wp = wt + pl * " << KH * WA << ";\n";
  DwTile t{"xp", "wp", "i0 * " + std::to_string(st[0]), "q0 * " + std::to_string(st[1]), XW, WA, KH, KW, st[0], st[1],
           sh.off, R, RH};
  b << dw_tile_acc(t);
  const std::string at = "(plane0 + pl) * " + I(OH * OW) + " + (i0 + ty_) * " + I(OW) + " + q0";
  b << "#pragma unroll\n    for (int ty_ = 0; ty_ < " << RH << "; ++ty_) {\n"
    << dw_tile_values(R, bias ? "bs[pl]" : "", k.post_ops.data(), k.post_ops.size())
    << dw_tile_store(Y.dtype, R, "out0", at) << "    }\n  }\n";
  std::string params = std::string(c_type(Y.dtype)) + "* __restrict__ out0";
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (c.inputs[j] >= 0) params += input_param(p, c, j, c_type(dtype_of(j)));
  gen.entry = entry_name(k.name);
  std::ostringstream src;
  src << "// generated by opvision src/target/cuda/dw_planes.cpp (kernel " << k.name
      << ", a depthwise conv over many planes) -- do not edit\n"
      << kPrelude << "typedef int opv_idx;  // every index of this kernel fits an int\n"
      << "extern \"C\" __global__ void __launch_bounds__(" << NT << ") " << gen.entry << "(" << params
      << (late ? kEntryOpenLate : kEntryOpen) << b.str() << "}\n";
  gen.source = src.str();
  gen.global = {N * M / PB * NT, 0, 0};
  gen.local = {NT, 0, 0};
  return gen;
}

}  // namespace opv::plan::cuda::detail
