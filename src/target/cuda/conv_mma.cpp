/* Dense KxK fp16 convolutions on the tensor cores (target "cuda", compute_80+; part of plan pass
 * "cuda-codegen", codegen.h): the stem's 3x3 stride-2 conv and any dense conv the 1x1 families do
 * not take, as an implicit GEMM (D[channel][pixel] = W[channel][k] x im2col[k][pixel], k = (c, kh,
 * kw) in W's own order) with mma.sync m16n8k16, fp32 accumulators.
 *
 * A block of 4 warps computes MG (16, 32 or 64; TuneKey::ConvMmaBlocks) output channels of BP = 32 consecutive output
 * pixels of one output row, warp w the 8 pixels w * 8.. of them for all MG channels:
 *   - X: the KH input rows under that row segment, every input channel, staged once into shared
 *     memory (xs[(c * KH + kh) * CW + col], zero outside the map: padding), with 16-byte cp.async
 *     where X's rows are a multiple of 8 halves wide (whole chunks in or out of the map), else
 *     element loads. The im2col matrix is never built: B's fragment element (k, pixel) is
 *     xs[offs[k] + base(pixel)], offs a per-block table of k's (c, kh, kw) offsets (k past K: a
 *     zeroed row after the tile, so the padding steps multiply zeros, never input values).
 *   - W: the block's MG rows of K weights, staged once as [MG][Kp + 8] halves (Kp = K rounded up
 *     to 16, zero past K; the 8 extra halves keep ldmatrix's eight rows in distinct banks), read
 *     as A fragments with ldmatrix.
 *   - the epilogue: bias (loaded before the main loop), the kernel's post-ops, the store, at each
 *     accumulator's (channel, pixel).
 * Numerics: every product of fp16 values is exact in fp32 and summed in fp32 in the tensor cores'
 * order (not conv_multi's): within the fp32 tolerance of the reference, not bit-identical to it.
 * (Not the same as the implicit GEMM tried on the 1x1 tiles on 2026-12-03 (codegen.cpp): that one
 * gathered every im2col element from global memory per tile, 30 us against 17 for the stem.)
 */
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>

#include "target/cuda/codegen_internal.h"
#include "target/cuda/options.h"

namespace opv::plan::cuda::detail {

namespace {
constexpr int64_t kBP = 32;                           // output pixels a block (8 a warp)
constexpr int64_t kSmemBytes = (48 << 10) - 256;     // static shared memory (48 KB without opt-in)
// Row blocks (TuneKey::ConvMmaRows): every block stages its MG rows of weights (the stem: 64 x 216
// halves, 28 KB) for 32 pixels, so where the row segments are many (the batch-32 artifact's stem:
// 8,192 blocks, 230 MB of weight staging a call) a block takes RB = 4 (2) output rows of its 32
// columns, undilated convs only: the input rows under them staged once (KH + (RB - 1) * sh a
// channel), each A fragment meeting RB mma.sync, RB x MT x 4 accumulators a thread. Taken where
// the blocks stay at least TuneKey::ConvMmaBlocks / kRowBlocksDiv (until session 35: 4 x the
// target, batch-32 stems only; the batch-1 stem's 256 blocks of a row, two an SM of an H100, took
// 8.2 us of the replayed inference, its 128 blocks of two rows 5.4 us, and four rows on 64 blocks
// 7.5 us: `bench --replay-prefixes`, BENCHMARKS.md session 35); beyond the static 48 KB the
// block's shared memory is dynamic (kernel attr "cuda_smem"), up to the plan architecture's block
// limit (99 KB from compute_80, 227 KB from compute_90) less 1 KB. K's padding steps read the zeros
// after the rows at each row's offset, so the zeros span (RB - 1) * sh + 1 rows (with one row of
// zeros, run 55 on the H100 read the weights' never-written padding columns there: NaN times zero,
// a wrong batch-32 artifact; cudasim now fills shared memory with NaN bytes, which shows it).
constexpr int64_t kRowBlocksDiv = 2;

struct ConvMmaShape {
  int64_t N = 0, C = 0, H = 0, W = 0, M = 0, OH = 0, OW = 0, KH = 0, KW = 0;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
  int64_t K = 0, Kp = 0, LDW = 0, MG = 0, CW = 0, OWT = 0;
  bool vec_x = false;  // X staged in 16-byte chunks (W % 8 == 0)
  bool vec_w = false;  // W staged in 16-byte chunks (K % 8 == 0)
  int64_t RB = 1, KHR = 0, OHB = 0;  // output rows a block, staged input rows a channel, row blocks an image
  bool dyn = false;                  // shared memory dynamic (RB > 1 beyond the static 48 KB)
  // Zeros after the rows: K's padding steps read them at every row's offset ((RB - 1) * sh rows on).
  int64_t zero_halves() const { return ((RB - 1) * sh + 1) * CW; }
  int64_t xs_halves() const { return (C * KHR * CW + zero_halves() + 7) / 8 * 8; }  // the rows and the zeros
  int64_t smem() const { return xs_halves() * 2 + Kp * 4 + MG * LDW * 2; }
};

// The shape of call x in this family, or false when it does not take it (with `src`: X computed
// where it is staged, of src's shape, fp16).
bool conv_mma_shape(const Ctx& x, ConvMmaShape* out, const ConvInput* src) {
  if (x.sm < 80 || x.k.op != OpKind::Conv || !x.has(1) || x.c.outputs.size() != 1) return false;
  const Buffer& X = x.in(0);
  const Shape& xshape = src ? src->shape : X.shape;
  const Buffer& Wt = x.in(1);
  const Buffer& Y = x.out();
  if (xshape.size() != 4 || Wt.shape.size() != 4 || Y.shape.size() != 4) return false;
  if ((!src && (X.dtype != DType::F16 || nhwc_stored(X) || X.layout != Layout::Linear)) || Wt.dtype != DType::F16 ||
      !is_float(Y.dtype) || Wt.layout != Layout::Linear)
    return false;
  if (x.has(2) && !is_float(x.in(2).dtype)) return false;
  const Attrs& a = x.k.attrs;
  const auto s = a.ints("strides", {1, 1}), d = a.ints("dilations", {1, 1}), pd = a.ints("pads", {0, 0, 0, 0});
  if (a.i("group", 1) != 1 || s.size() != 2 || d.size() != 2 || pd.size() != 4) return false;
  ConvMmaShape c;
  c.N = xshape[0], c.C = xshape[1], c.H = xshape[2], c.W = xshape[3];
  c.M = Y.shape[1], c.OH = Y.shape[2], c.OW = Y.shape[3], c.KH = Wt.shape[2], c.KW = Wt.shape[3];
  c.sh = s[0], c.sw = s[1], c.dh = d[0], c.dw = d[1], c.ph = pd[0], c.pw = pd[1];
  if (Wt.shape[0] != c.M || Wt.shape[1] != c.C || Y.shape[0] != c.N || c.M % 16 || c.KH * c.KW < 2 || c.sh < 1 ||
      c.sw < 1 || c.dh < 1 || c.dw < 1)
    return false;
  c.K = c.C * c.KH * c.KW;
  if (c.K < 16 || numel(xshape) > INT32_MAX / 2 || numel(Y.shape) > INT32_MAX / 2 || numel(Wt.shape) > INT32_MAX / 2)
    return false;
  // The kernel's column and row arithmetic is int: every coordinate it forms must fit.
  constexpr int64_t kIntSafe = INT32_MAX / 4;
  if (c.ph < 0 || c.pw < 0 || std::max({c.ph, c.pw, c.sh, c.sw, c.dh, c.dw}) > kIntSafe ||
      (c.OW + kBP) * c.sw + c.KW * c.dw > kIntSafe || c.OH * c.sh + c.KH * c.dh > kIntSafe)
    return false;
  c.Kp = (c.K + 15) / 16 * 16;
  c.LDW = c.Kp + 8;
  c.vec_x = c.W % 8 == 0;
  c.vec_w = c.K % 8 == 0;
  // Input columns a row segment spans (+ 7: the 16-byte chunks start at a multiple of 8).
  const int64_t span = (kBP - 1) * c.sw + (c.KW - 1) * c.dw + 1;
  c.CW = c.vec_x ? (span + 7 + 7) / 8 * 8 : (span + 1) / 2 * 2;
  c.OWT = (c.OW + kBP - 1) / kBP;
  // Channels a block: the largest of 64, 32, 16 that divides M, fits shared memory and gives
  // TuneKey::ConvMmaBlocks blocks (256 by default: the stem in one group of 64), else the smallest
  // that fits (the most blocks).
  const int64_t target = tune_target(x.p, TuneKey::ConvMmaBlocks), pixel_tiles = c.N * c.OH * c.OWT;
  c.KHR = c.KH, c.OHB = c.OH;  // a row a block
  for (const int64_t mg : {64, 32, 16}) {
    if (c.M % mg) continue;
    const int64_t keep = c.MG;
    c.MG = mg;
    if (c.smem() > kSmemBytes) {
      c.MG = keep;
      continue;
    }
    if (pixel_tiles * (c.M / mg) >= target) break;
  }
  if (c.MG == 0) return false;
  const int64_t cap = (plan_sm(x.p) >= 90 ? 227 << 10 : 99 << 10) - (1 << 10);
  if (c.dh == 1)
    for (const int64_t rb : {4, 2}) {
      ConvMmaShape w = c;
      w.RB = rb, w.KHR = (rb - 1) * c.sh + c.KH, w.OHB = (c.OH + rb - 1) / rb;
      if (rb > tune_target(x.p, TuneKey::ConvMmaRows) || c.N * w.OHB * c.OWT * (c.M / c.MG) * kRowBlocksDiv < target ||
          w.smem() > cap || c.OH * c.sh + w.KHR > kIntSafe)
        continue;
      w.dyn = w.smem() > kSmemBytes;
      c = w;
      break;
    }
  *out = c;
  return true;
}
}  // namespace

bool conv_mma_ok(const Ctx& x, const ConvInput* src) {
  ConvMmaShape s;
  return conv_mma_shape(x, &s, src);
}

std::string conv_mma(const Ctx& x, int64_t* blocks, const ConvInput* src) {
  ConvMmaShape s;
  if (!conv_mma_shape(x, &s, src)) return "";
  const Buffer& Y = x.out();
  const std::vector<int64_t> yst = strides_of(Y);  // Linear or NHWC
  const int64_t G = s.M / s.MG, MT = s.MG / 16, KS = s.Kp / 16, KHW = s.KH * s.KW, ROWS = s.C * s.KHR, RB = s.RB;
  *blocks = s.N * s.OHB * s.OWT * G;
  if (s.dyn) x.smem = s.smem();
  std::ostringstream b;
  b << "  // implicit GEMM: " << s.MG << " channels x " << kBP << " pixels of "
    << (RB > 1 ? std::to_string(RB) + " rows" : std::string("a row")) << " a block, K = " << s.K << " (" << KS
    << " steps of 16), X " << (s.vec_x ? "in 16-byte chunks" : "element by element") << ", W "
    << (s.vec_w ? "in 16-byte chunks" : "element by element") << "\n"
    << "  constexpr int CW = " << s.CW << ", ROWS = " << ROWS << ", K = " << s.K << ", KP = " << s.Kp << ", LDW = " << s.LDW
    << ", MG = " << s.MG << ", MT = " << MT << ";\n";
  if (RB > 1) b << "  constexpr int ZR = " << s.zero_halves() << ";  // zeros after the rows: K's padding steps of every row\n";
  if (s.dyn)
    b << "  extern __shared__ __align__(16) unsigned char opv_dsmem[];  // dynamic: xs, ws, offs\n"
      << "  unsigned short* const xs = (unsigned short*)opv_dsmem;  // the rows, then ZR zeros\n"
      << "  unsigned short* const ws = xs + " << s.xs_halves() << ";\n"
      << "  int* const offs = (int*)(ws + MG * LDW);\n";
  else
    b << "  __shared__ __align__(16) unsigned short xs[ROWS * CW + " << (RB > 1 ? "ZR];  // the rows, then ZR zeros\n" : "CW];  // the rows, then a zero row\n")
      << "  __shared__ __align__(16) unsigned short ws[MG * LDW];\n"
      << "  __shared__ __align__(8) int offs[KP];\n";
  b << "  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;\n"
    << "  const int ot = (int)(blockIdx.x % " << s.OWT << "), oh = (int)((blockIdx.x / " << s.OWT << ") % " << s.OHB
    << ")" << (RB > 1 ? " * " + std::to_string(RB) + ";  // the block's first output row" : ";") << "\n"
    << "  const int cg = (int)((blockIdx.x / " << s.OWT * s.OHB << ") % " << G << ");\n"
    << "  const opv_idx n = blockIdx.x / " << I(s.OWT * s.OHB * G) << ";\n"
    << "  const int ow0 = ot * " << kBP << ", iw_lo = ow0 * " << s.sw << " - " << s.pw << ";\n"
    // ia: xs column 0's input column (a multiple of 8 for the chunked staging; floor for negatives)
    << "  const int ia = " << (s.vec_x ? "(iw_lo >= 0 ? iw_lo : iw_lo - 7) / 8 * 8" : "iw_lo") << ";\n"
    << (src ? std::string() : "  const unsigned short* Xn = in0 + n * " + I(s.C * s.H * s.W) + ";\n")
    << "  const unsigned short* Wg = in1 + (opv_idx)cg * " << I(s.MG * s.K) << ";\n";
  // W rows, zero past K.
  if (s.vec_w)
    b << "  for (int e = tid; e < MG * (K / 8); e += 128) {\n"
      << "    const int r = e / (K / 8), cc = e % (K / 8);\n"
      << "    opv_cp16(ws + r * LDW + cc * 8, Wg + r * K + cc * 8, true);\n  }\n";
  else
    b << "  for (int e = tid; e < MG * K; e += 128) {\n"
      << "    const int r = e / K, kk = e % K;\n"
      << "    ws[r * LDW + kk] = Wg[r * K + kk];\n  }\n";
  if (s.Kp > s.K)
    b << "  for (int e = tid; e < MG * (KP - K); e += 128) ws[(e / (KP - K)) * LDW + K + e % (KP - K)] = 0;\n";
  // The weight prologue (kEntryOpenLate): with W a plan Constant its rows are staged before the
  // wait for the kernels before this one, X's after it.
  x.late_entry = x.const_input(1);
  if (x.late_entry) b << "  OPV_KERNEL_ENTRY();  // W above is weights: no kernel writes it\n";
  // X's rows (c, kh): input row oh * sh - ph + kh * dh, columns ia .. ia + CW - 1.
  const std::string ih = "oh * " + I(s.sh) + " - " + I(s.ph) + " + (r % " + I(s.KHR) + ") * " + I(s.dh);
  if (src) {
    // X computed where it is staged (pack_conv.cpp: the input pack): src->elem at (o0, c, ih, iw),
    // rounded to fp16 as the pack's stored X (or src->elem16, fp16 already); 8 columns a thread
    // and one 16-byte store where the rows are chunked (src->chunk8 fills hv[8] of a chunk at once).
    const std::string elem = "ih >= 0 && ih < " + I(s.H) + " && iw >= 0 && iw < " + I(s.W) + " ? " +
                             (src->elem16.empty() ? "opv_f2h(" + src->elem + ")" : src->elem16) + " : (unsigned short)0";
    b << src->prologue;
    if (s.vec_x) {
      b << "  for (int e = tid; e < ROWS * (CW / 8); e += 128) {\n"
        << "    const int r = e / (CW / 8), j = e % (CW / 8), ih = " << ih << ", c = r / " << s.KHR << ";\n"
        << "    const opv_idx o0 = n;\n"
        << "    __align__(16) unsigned short hv[8];\n";
      if (!src->chunk8.empty())
        b << "    const int iw = ia + j * 8;\n"
          << "    const bool ok = ih >= 0 && ih < " << s.H << " && iw >= 0 && iw < " << s.W << ";  // the chunk is in or out\n"
          << src->chunk8;
      else
        b << "#pragma unroll\n    for (int q = 0; q < 8; ++q) {\n"
          << "      const int iw = ia + j * 8 + q;\n"
          << "      hv[q] = " << elem << ";\n    }\n";
      b << "    *(uint4*)(xs + r * CW + j * 8) = *(const uint4*)hv;\n  }\n";
    } else
      b << "  for (int e = tid; e < ROWS * CW; e += 128) {\n"
        << "    const int r = e / CW, j = e % CW, ih = " << ih << ", iw = ia + j, c = r / " << s.KHR << ";\n"
        << "    const opv_idx o0 = n;\n"
        << "    xs[e] = " << elem << ";\n  }\n";
  } else if (s.vec_x)
    b << "  for (int e = tid; e < ROWS * (CW / 8); e += 128) {\n"
      << "    const int r = e / (CW / 8), j = e % (CW / 8), ih = " << ih << ", iw = ia + j * 8;\n"
      << "    const bool ok = ih >= 0 && ih < " << s.H << " && iw >= 0 && iw < " << s.W << ";\n"
      << "    opv_cp16(xs + r * CW + j * 8, ok ? Xn + ((r / " << s.KHR << ") * " << s.H << " + ih) * " << s.W
      << " + iw : Xn, ok);\n  }\n";
  else
    b << "  for (int e = tid; e < ROWS * CW; e += 128) {\n"
      << "    const int r = e / CW, j = e % CW, ih = " << ih << ", iw = ia + j;\n"
      << "    const bool ok = ih >= 0 && ih < " << s.H << " && iw >= 0 && iw < " << s.W << ";\n"
      << "    xs[e] = ok ? Xn[((r / " << s.KHR << ") * " << s.H << " + ih) * " << s.W << " + iw] : (unsigned short)0;\n  }\n";
  b << "  asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n"
    << "  for (int e = tid; e < " << (RB > 1 ? "ZR" : "CW") << "; e += 128) xs[ROWS * CW + e] = 0;\n"
    << "  for (int k = tid; k < KP; k += 128)\n"
    << "    offs[k] = k < K ? ((k / " << KHW << ") * " << s.KHR << " + (k / " << s.KW << ") % " << s.KH << ") * CW + (k % "
    << s.KW << ") * " << s.dw << " : ROWS * CW;\n";
  // Bias of the thread's channels, before the barrier.
  const bool bias = x.has(2);
  if (bias)
    b << "  float bv[MT][2];\n"
      << "#pragma unroll\n  for (int mt = 0; mt < MT; ++mt)\n#pragma unroll\n    for (int h = 0; h < 2; ++h) bv[mt][h] = "
      << load(x.in(2).dtype, "in2", "cg * MG + mt * 16 + g + h * 8") << ";\n";
  b << "  asm volatile(\"cp.async.wait_group 0;\" ::: \"memory\");\n"
    << "  __syncthreads();\n"
    // Pixel g of the warp's 8: its first tap's xs column.
    << "  const int base = iw_lo - ia + (warp * 8 + g) * " << s.sw << ";\n";
  if (RB == 1)
    b << "  float acc[MT][4];\n"
      << "#pragma unroll\n  for (int mt = 0; mt < MT; ++mt)\n#pragma unroll\n    for (int r = 0; r < 4; ++r) acc[mt][r] = 0.0f;\n"
      << "#pragma unroll " << (KS <= 32 ? "" : "4") << "\n  for (int ks = 0; ks < " << KS << "; ++ks) {\n"
      << "    const int2 o0 = *(const int2*)(offs + ks * 16 + 2 * t), o1 = *(const int2*)(offs + ks * 16 + 8 + 2 * t);\n"
      << "    unsigned bf[2];\n"
      << "    bf[0] = (unsigned)xs[base + o0.x] | ((unsigned)xs[base + o0.y] << 16);\n"
      << "    bf[1] = (unsigned)xs[base + o1.x] | ((unsigned)xs[base + o1.y] << 16);\n"
      << "#pragma unroll\n    for (int mt = 0; mt < MT; ++mt) {\n"
      << "      unsigned af[4];\n"
      << "      opv_ldsm4(af, ws + (mt * 16 + (lane & 15)) * LDW + ks * 16 + (lane >> 4) * 8);\n"
      << "      opv_mma(acc[mt], af, bf);\n"
      << "    }\n  }\n";
  else  // row rb's taps: sh * rb staged rows further down
    b << "  constexpr int RB = " << RB << ", RS = " << s.sh << " * CW;  // output rows a block, xs offset a row\n"
      << "  float acc[RB][MT][4];\n"
      << "#pragma unroll\n  for (int rb = 0; rb < RB; ++rb)\n#pragma unroll\n  for (int mt = 0; mt < MT; ++mt)\n"
      << "#pragma unroll\n    for (int r = 0; r < 4; ++r) acc[rb][mt][r] = 0.0f;\n"
      << "#pragma unroll " << (KS <= 32 ? "" : "4") << "\n  for (int ks = 0; ks < " << KS << "; ++ks) {\n"
      << "    const int2 o0 = *(const int2*)(offs + ks * 16 + 2 * t), o1 = *(const int2*)(offs + ks * 16 + 8 + 2 * t);\n"
      << "    unsigned bf[RB][2];\n"
      << "#pragma unroll\n    for (int rb = 0; rb < RB; ++rb) {\n"
      << "      const int bb = base + rb * RS;\n"
      << "      bf[rb][0] = (unsigned)xs[bb + o0.x] | ((unsigned)xs[bb + o0.y] << 16);\n"
      << "      bf[rb][1] = (unsigned)xs[bb + o1.x] | ((unsigned)xs[bb + o1.y] << 16);\n"
      << "    }\n"
      << "#pragma unroll\n    for (int mt = 0; mt < MT; ++mt) {\n"
      << "      unsigned af[4];\n"
      << "      opv_ldsm4(af, ws + (mt * 16 + (lane & 15)) * LDW + ks * 16 + (lane >> 4) * 8);\n"
      << "#pragma unroll\n      for (int rb = 0; rb < RB; ++rb) opv_mma(acc[rb][mt], af, bf[rb]);\n"
      << "    }\n  }\n";
  b << "  OPV_PDL_TRIGGER();  // the main loop is done: the next kernel may be launched\n";
  // Accumulator r of m-tile mt: channel mt * 16 + g (+ 8 for r >= 2), pixel 2t (+ 1 for odd r).
  // fp16 NCHW outputs of an even width: the two pixels of a pair in one 4-byte store.
  const bool pair = Y.dtype == DType::F16 && Y.layout == Layout::Linear && s.OW % 2 == 0;
  const std::string y_at = "o0 * " + I(yst[0]) + " + o1 * " + I(yst[1]) + " + o2 * " + I(yst[2]) + " + o3 * " + I(yst[3]);
  // RB > 1: the epilogue runs for each output row rb of the block (the map's last rows may be past OH).
  const std::string row = RB > 1 ? "oh + rb" : "oh", accn = RB > 1 ? "acc[rb][mt][" : "acc[mt][";
  auto output = [&](const std::string& r, const std::string& indent) {
    return indent + "const opv_idx o0 = n, o1 = cg * MG + mt * 16 + g + ((" + r + ") >> 1) * 8, o2 = " + row +
           ", o3 = ow0 + warp * 8 + 2 * t + ((" + r + ") & 1);\n" + indent + "(void)o0; (void)o1; (void)o2; (void)o3;\n" +
           indent + "float v = " + accn + r + "]" + (bias ? " + bv[mt][(" + r + ") >> 1]" : "") + ";\n" + post_ops(x);
  };
  if (RB > 1)
    b << "#pragma unroll\n  for (int rb = 0; rb < RB; ++rb) {\n"
      << "  if (oh + rb >= " << s.OH << ") break;\n";
  if (pair)
    b << "#pragma unroll\n  for (int mt = 0; mt < MT; ++mt)\n#pragma unroll\n    for (int h = 0; h < 2; ++h) {\n"
      << "      if (ow0 + warp * 8 + 2 * t >= " << s.OW << ") continue;\n"
      << "      unsigned short hv[2];\n"
      << "#pragma unroll\n      for (int j = 0; j < 2; ++j) {\n"
      << output("2 * h + j", "        ") << "        hv[j] = opv_f2h(v);\n      }\n"
      << "      const opv_idx o0 = n, o1 = cg * MG + mt * 16 + g + h * 8, o2 = " << row << ", o3 = ow0 + warp * 8 + 2 * t;\n"
      << "      *(unsigned*)(out0 + " << y_at << ") = (unsigned)hv[0] | ((unsigned)hv[1] << 16);\n"
      << "    }\n";
  else
    b << "#pragma unroll\n  for (int mt = 0; mt < MT; ++mt)\n#pragma unroll\n    for (int r = 0; r < 4; ++r) {\n"
      << "      if (ow0 + warp * 8 + 2 * t + (r & 1) >= " << s.OW << ") continue;\n"
      << output("r", "      ") << "      " << store(Y.dtype, "out0", y_at, "v") << "\n"
      << "    }\n";
  if (RB > 1) b << "  }\n";
  return b.str();
}

}  // namespace opv::plan::cuda::detail
