/* Kernel family "conv_image": 2-D convolution (OpKind::Conv) from an ImageRGBA input to an
 * ImageRGBA output, weights/bias in Linear (OIHW, F32/F16, scalar loads) or PackedWeight buffers
 * (after plan pass "weight-pack"). Every kernel is specialised at compile time (shapes, strides,
 * pads, dilations, taps unrolled) and follows ADRENO.md sections 1-4:
 *   1. Variants:
 *      dense   group 1, any kxk (1x1 is the k=1 case): one work-item = OB output blocks (4 out
 *              channels each; OB = 2 on large maps with an even block count) x TW pixels along
 *              w; taps unrolled, loop over input blocks; per texel and block 4 vector mads with
 *              the 4 weight vectors (4 outputs of input channels ci..ci+3).
 *      dw      group == Cin, channel multiplier m = 1 or 2: per tap one float4 weight; the
 *              input row is read once per kernel row and reused by the TW outputs (sliding
 *              window); m = 2 reads input block cb/2 and expands .xy/.zw to (a,a,b,b).
 *      group   every other grouping (incl. depthwise with m > 2): per-lane path, 1 pixel.
 *      TW in {1,2,4} and OB follow the amount of work (Options::busy_items, compile --cl-busy-items; default
 *      sized for an a630); dimension 0 = (output block group, row, pixel tile), dimension 1 = n.
 *      dense K-split ("_ks<S>"): on targets wider than an a630 (Options::busy_items above the
 *              default), dense convs take a register tile of TW = 4 pixels x OB = 2 blocks
 *              where the shapes allow, and where that leaves the GPU short of work, S = 2..64
 *              lanes share each tile, split its (tap, input block) steps and add their partial
 *              sums in local memory in a fixed order (Call.local = {S * tiles per group, 1});
 *              Adreno kernels keep no local memory (ADRENO.md).
 *   2. Padding: an input w outside [0,W) lands outside the image and reads zero through the
 *      sampler; rows are forced to -1 with select() when N > 1 (no bleeding between images).
 *      No read is ever gated (attr cl_gated = 0).
 *   3. Accumulation in float4 (fp32); with -DOPV_FP16_MATH (added to the options when the
 *      kernel has attr "cl_fp16_math" = 1) on a device with cl_khr_fp16 the same source
 *      accumulates in half4. Bias, then the fused post-ops (emit_post_ops_image),
 *      padded output lanes (c >= Cout) are written as 0.
 *   4. pack_weights: weights -> F16 (or, with Options::weight_dtype F32, compile --cl-weights f32, F32) PackedWeight in the exact read order (dense
 *      [M4][tap][C4*4][4], dw [M4][tap][4], group [M4][Cg][tap][4]), bias -> F32 padded to 4;
 *      zero-filled padding; kernel attr "cl_pack" names the packing and the kernel is
 *      regenerated to read them with vload_half4 / vload4.
 * Invariant: the generated kernel computes ref::run(Conv) up to fp16 storage rounding.
 */
#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/half.h"
#include "target/opencl/codegen.h"

namespace opv::plan::cl {

namespace {

constexpr const char* kFamily = "conv_image";
// Packings (kernel attr "cl_pack"); the weight packing's name is also the constant's suffix.
constexpr const char* kPackDense = "conv_dense_o4";  // [M4][KH*KW][C4*4][4 outs] f16
constexpr const char* kPackDw = "conv_dw_o4";        // [M4][KH*KW][4 outs] f16
constexpr const char* kPackGroup = "conv_group_o4";  // [M4][Cin/group][KH*KW][4 outs] f16
constexpr const char* kPackBias = "bias_o4";          // [M4*4] f32
constexpr int64_t kLanes = 4;                         // channels per RGBA texel
// Work-items that keep an a630 busy (2 SPs x 16 waves x 64 fibers, ADRENO.md section 0): tiles
// of TW pixels are used only while at least this many work-items remain. A plan compiled for a
// wider device may say otherwise in Options::busy_items (measured by hand on an H200
// through NVIDIA OpenCL: 1x1 192->64 on 32x64 takes 0.038 ms with 4-pixel tiles at 4096 and
// 0.018 ms with 1-pixel tiles at 65536; the 24->64 3x3/s2 stem prefers 4 pixels, 0.037 ms).
constexpr int64_t kBusyItems = 4096;

enum class Variant { Dense, Depthwise, Group };

struct ConvGeom {
  int64_t N = 0, C = 0, H = 0, W = 0;    // input
  int64_t M = 0, OH = 0, OW = 0;         // output
  int64_t KH = 0, KW = 0, group = 1;     // weights [M, Cg, KH, KW]
  int64_t Cg = 0, Mg = 0;                // channels per group (in, out)
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t C4 = 0, M4 = 0;
  int64_t mult = 0;                      // depthwise channel multiplier
  Variant var = Variant::Dense;
  int64_t TW = 1;                        // output pixels along w per work-item
  int64_t WT = 1;                        // work-items along w: ceil(OW / TW)
  int64_t OB = 1;                        // output blocks per work-item (dense only: 1 or 2)
  int64_t KS = 0;                        // K-split lanes per tile (dense only; 0 = off)
  int64_t TPW = 1;                       // K-split: tiles per work-group
  int64_t KK() const { return KH * KW; }
};

bool is_f32_f16(DType dt) { return dt == DType::F32 || dt == DType::F16; }

const Buffer* input_buf(const Plan& p, const Call& c, size_t slot) {
  if (slot >= c.inputs.size() || c.inputs[slot] < 0) return nullptr;
  return &p.buffers.at(size_t(c.inputs[slot]));
}

const char* packing_of(Variant v) {
  switch (v) {
    case Variant::Dense: return kPackDense;
    case Variant::Depthwise: return kPackDw;
    case Variant::Group: return kPackGroup;
  }
  return "";
}

int64_t pick_tw(int64_t OW, int64_t work, int64_t busy_items) {
  // Fewer pixels per item on small maps (ADRENO.md section 3: 1 px on the 4x8 stage-4 maps).
  for (int64_t tw : {4, 2}) {
    if (OW < tw || work / tw < busy_items) continue;
    // Avoid tiles that waste more than a quarter of a row.
    int64_t tiles = (OW + tw - 1) / tw;
    if (tiles * tw - OW > OW / 4) continue;
    return tw;
  }
  return 1;
}

// Wide targets (Options::busy_items above kBusyItems: desktop GPUs, measured on an H200
// through NVIDIA OpenCL, BENCHMARKS.md): the a630 tiling leaves most of such a GPU idle on the
// small maps of the later stages and runs one long serial loop per work-item. There a dense conv
// takes the register-tiled K-split form ("_ks<S>"): a work-item holds TW pixels x OB output
// blocks (TW = 4 / OB = 2 where the map and block count allow: 4 texel reads and 8 weight
// vectors feed 128 mads), S lanes of a work-group share one such tile and split its (tap, input
// block) steps, and the partial sums are added in local memory in a fixed order. S doubles while
// the GPU is not yet busy and every lane keeps >= Options::ks_min_steps steps (at most
// Options::ks_max_lanes; compile --cl-tune sets both, for tuning on a device).
// Adreno kernels keep no local memory (ADRENO.md section 3, "what not to do").
constexpr int64_t kKsGroupItems = 128;  // work-items per work-group of the split form
// Depthwise convs with at least Options::dw_split_min_taps taps (default 25: 5x5, 7x7) split their
// kernel rows over KH lanes on wide targets ("_ks<KH>"): 49 dependent texel reads per work-item
// become 7.
bool wide_target(int64_t busy) { return busy > kBusyItems; }
int64_t pick_ks(const Options& o, int64_t tiles, int64_t steps, int64_t busy) {
  const int64_t max_lanes = o.ks_max_lanes;
  const int64_t min_steps = std::max<int64_t>(1, o.ks_min_steps);
  int64_t s = 1;
  while (s < max_lanes && tiles * s < busy && steps / (2 * s) >= min_steps) s *= 2;
  return s > 1 ? s : 0;
}

// Geometry of call c; returns false (with *why) when this family cannot handle the shapes.
bool conv_geom(const Plan& p, const Call& c, const Kernel& k, const Options& o, ConvGeom& g, std::string* why) {
  auto no = [&](const std::string& s) {
    if (why) *why = s;
    return false;
  };
  if (c.outputs.size() != 1 || c.inputs.size() < 2) return no("needs inputs (x, w, [bias]) and one output");
  const Buffer* x = input_buf(p, c, 0);
  const Buffer* w = input_buf(p, c, 1);
  const Buffer& out = p.buffers.at(size_t(c.outputs[0]));
  if (!x || !w) return no("missing x or w");
  if (x->layout != Layout::ImageRGBA || out.layout != Layout::ImageRGBA) return no("x and y must be ImageRGBA");
  if (!is_f32_f16(x->dtype) || !is_f32_f16(out.dtype)) return no("x and y must be float");
  if (x->shape.size() != 4 || out.shape.size() != 4 || w->shape.size() != 4) return no("not a 2-D conv");
  if (!is_f32_f16(w->dtype)) return no("weights must be F32/F16");
  g.N = x->shape[0];
  g.C = x->shape[1];
  g.H = x->shape[2];
  g.W = x->shape[3];
  g.M = out.shape[1];
  g.OH = out.shape[2];
  g.OW = out.shape[3];
  g.KH = w->shape[2];
  g.KW = w->shape[3];
  g.group = k.attrs.i("group", 1);
  auto s = k.attrs.ints("strides", {1, 1});
  auto d = k.attrs.ints("dilations", {1, 1});
  auto pd = k.attrs.ints("pads", {0, 0, 0, 0});
  if (s.size() != 2 || d.size() != 2 || pd.size() != 4) return no("strides[2], dilations[2], pads[4] expected");
  g.sh = s[0];
  g.sw = s[1];
  g.dh = d[0];
  g.dw = d[1];
  g.pt = pd[0];
  g.pl = pd[1];
  g.pb = pd[2];
  g.pr = pd[3];
  if (g.group < 1 || g.C % g.group != 0 || g.M % g.group != 0) return no("bad group");
  g.Cg = g.C / g.group;
  g.Mg = g.M / g.group;
  if (w->shape[0] != g.M || w->shape[1] != g.Cg) return no("weight shape does not match x/y/group");
  if (out.shape[0] != g.N) return no("batch mismatch");
  if (g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1) return no("strides/dilations must be >= 1");
  g.C4 = (g.C + kLanes - 1) / kLanes;
  g.M4 = (g.M + kLanes - 1) / kLanes;
  if (g.group == 1) {
    g.var = Variant::Dense;
  } else if (g.group == g.C && g.Cg == 1 && (g.Mg == 1 || g.Mg == 2)) {
    g.var = Variant::Depthwise;
    g.mult = g.Mg;
  } else {
    g.var = Variant::Group;
  }
  const int64_t work = g.M4 * g.N * g.OH * g.OW;
  const int64_t busy = o.busy_items > 0 ? o.busy_items : kBusyItems;
  if (g.var == Variant::Dense && wide_target(busy)) {
    // Widest register tile that fits the map and block count; S lanes where the work is small.
    g.TW = pick_tw(g.OW, work, 0);
    g.WT = (g.OW + g.TW - 1) / g.TW;
    g.OB = g.M4 % 2 == 0 ? 2 : 1;
    const int64_t tiles = g.OH * g.WT * (g.M4 / g.OB);
    g.KS = pick_ks(o, g.N * tiles, g.C4 * g.KK(), busy);
  } else {
    g.TW = g.var == Variant::Group ? 1 : pick_tw(g.OW, work, busy);
    g.WT = (g.OW + g.TW - 1) / g.TW;
    // Two output blocks per item halve the texture reads per mad (TFL's 2-slice tiles) while the
    // map stays large enough; only for an even block count, so no block is out of range.
    if (g.var == Variant::Dense && g.M4 % 2 == 0 && work / (g.TW * 2) >= busy) g.OB = 2;
    // Wide targets: a depthwise conv with many taps gives each kernel row its own lane.
    if (g.var == Variant::Depthwise && wide_target(busy) && g.KH > 1 &&
        g.KK() >= o.dw_split_min_taps)
      g.KS = g.KH;
  }
  if (g.KS) {
    const int64_t tiles = g.OH * g.WT * (g.M4 / g.OB);
    g.TPW = 1;
    while ((g.TPW * 2) * g.KS <= kKsGroupItems && tiles % (g.TPW * 2) == 0) g.TPW *= 2;
  }
  const Buffer* b = input_buf(p, c, 2);
  if (b && (!is_f32_f16(b->dtype) || (b->layout != Layout::Linear && b->layout != Layout::PackedWeight)))
    return no("bias must be a float Linear or packed buffer");
  if (b && b->layout == Layout::Linear && numel(b->shape) != g.M) return no("bias must have Cout elements");
  if (w->layout == Layout::PackedWeight) {
    if (k.attrs.s("cl_pack") != packing_of(g.var)) return no("packed weights of another packing");
    if (w->dtype != DType::F16 && w->dtype != DType::F32) return no("packed weights must be F16 or F32");
  } else if (w->layout != Layout::Linear) {
    return no("weights must be Linear or packed");
  }
  if (b && b->layout == Layout::PackedWeight && (b->dtype != DType::F32 || k.attrs.s("cl_pack").empty()))
    return no("packed bias must be F32");
  return true;
}

std::string I(int64_t v) { return std::to_string(v); }
// Accumulator of pixel t, output block ob.
std::string acc(int64_t t, int64_t ob) { return "acc" + I(t) + (ob ? "_" + I(ob) : ""); }

// Row coordinate of input row `ih` (an int expression) of image n: forced to -1 when it can
// fall outside [0,H) and N > 1 (with N == 1 an out-of-range row already reads zero).
std::string row_expr(const ConvGeom& g, const std::string& ih) {
  const int64_t lo = -g.pt, hi = (g.OH - 1) * g.sh - g.pt + (g.KH - 1) * g.dh;
  const std::string y = "n * " + I(g.H) + " + " + ih;
  if (g.N == 1 || (lo >= 0 && hi < g.H)) return y;
  return "select(-1, " + y + ", (int)((uint)(" + ih + ") < " + I(g.H) + "u))";
}

// Loads of Linear buffer `name` (dtype dt) as float.
std::string ld(DType dt, const std::string& name, const std::string& idx) { return cl_load(dt, name, idx); }

struct Source {
  std::ostringstream s;
  template <typename... A>
  void line(const A&... a) {
    s << "  ";
    (s << ... << a);
    s << "\n";
  }
};

// Precision macros: fp32 accumulation, or half where asked for and available.
// OPV_W4 loads 4 packed weights: F16 packing (vload_half4, or vload4 of half with fp16 math) or,
// with OPV_WF32 defined, F32 packing (vload4, converted once for fp16 math). OPV_RD reads the
// input image (its access follows the parameter's storage: image_read_fn).
std::string precision_macros(ParamStorage in) {
  return
    "#if defined(OPV_FP16_MATH) && defined(cl_khr_fp16)\n"
    "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
    "#define OPV_ACC4 half4\n"
    "#define OPV_RD(img, x, y) " + image_read_half_fn(in) + "(img, opv_smp, (int2)((x), (y)))\n"
    "#ifdef OPV_WF32\n"
    "#define OPV_W4(i, p) convert_half4(vload4((i), (p)))\n"
    "#else\n"
    "#define OPV_W4(i, p) vload4((i), (p))\n"
    "#endif\n"
    "#define OPV_CVT4(v) convert_half4(v)\n"
    "#else\n"
    "#define OPV_ACC4 float4\n"
    "#define OPV_RD(img, x, y) " + image_read_fn(in) + "(img, opv_smp, (int2)((x), (y)))\n"
    "#ifdef OPV_WF32\n"
    "#define OPV_W4(i, p) vload4((i), (p))\n"
    "#else\n"
    "#define OPV_W4(i, p) vload_half4((i), (p))\n"
    "#endif\n"
    "#define OPV_CVT4(v) (v)\n"
    "#endif\n";
}

// Statements that declare `float4 bias4` for output block cb.
std::string bias_code(const Plan& p, const Call& c, const ConvGeom& g) {
  const Buffer* b = input_buf(p, c, 2);
  if (!b) return "  const float4 bias4 = (float4)(0.0f);\n";
  if (b->layout == Layout::PackedWeight) return "  const float4 bias4 = vload4(cb, in2);\n";
  std::string r = "  const float4 bias4 = (float4)(";
  for (int j = 0; j < kLanes; ++j)
    r += (j ? ", " : "") + ld(b->dtype, "in2", "min(4 * cb + " + I(j) + ", " + I(g.M - 1) + ")");
  return r + ");\n";
}

std::string epilogue_block(const Plan& p, const Call& c, const KernelDesc& d, const ConvGeom& g, const std::string& post,
                           int64_t ob);

// Epilogue per output block ob and pixel t: bias, post-ops, lane mask, write.
std::string epilogue(const Plan& p, const Call& c, const KernelDesc& d, const ConvGeom& g, const std::string& post) {
  std::string r;
  for (int64_t ob = 0; ob < g.OB; ++ob) {
    // The post-ops read `cb`: the block's own index is brought into scope under that name.
    if (g.OB > 1) r += "  {\n  const int cbo = cb + " + I(ob) + ";\n  {\n  const int cb = cbo;\n";
    r += epilogue_block(p, c, d, g, post, ob);
    if (g.OB > 1) r += "  }\n  }\n";
  }
  return r;
}

// The epilogue of one output pixel, shared by the plain and the split forms (in scope: cb, w,
// gy, bias4): v = `value` + bias4, the post-ops, the padded-lane mask, and the write, guarded by
// `guard` (may be empty) and, when the pixel tiles overhang the row, w < OW.
std::string epilogue_pixel(const KernelDesc& d, const ConvGeom& g, const std::string& post, const std::string& value,
                           std::string guard) {
  std::string r = "    float4 v = " + value + " + bias4;\n";
  std::istringstream is(post);
  for (std::string l; std::getline(is, l);) r += "  " + l + "\n";
  if (g.M % kLanes != 0)
    r += "    v = select((float4)(0.0f), v, (int4)(4 * cb) + (int4)(0, 1, 2, 3) < (int4)(" + I(g.M) + "));\n";
  if (g.OW % g.TW != 0) guard = guard.empty() ? "w < " + I(g.OW) : guard + " && w < " + I(g.OW);
  const std::string wr = d.write_image("out0", "(int2)(w * " + I(g.M4) + " + cb, gy)", "v");
  r += guard.empty() ? "    " + wr + "\n" : "    if (" + guard + ") " + wr + "\n";
  return r;
}

// Bias + per-pixel epilogue of one output block (cb in scope).
std::string epilogue_block(const Plan& p, const Call& c, const KernelDesc& d, const ConvGeom& g, const std::string& post,
                           int64_t ob) {
  std::string r = bias_code(p, c, g);
  for (int64_t t = 0; t < g.TW; ++t) {
    r += "  {\n    const int w = ow0 + " + I(t) + ";\n";
    r += epilogue_pixel(d, g, post, "convert_float4(" + acc(t, ob) + ")", "");
    r += "  }\n";
  }
  return r;
}

// The index head of every form: ids -> cb, h, ow0 (dimension 0: output block, then row, then
// pixel tile, so the work-items of one wave share their output block and read the same weights),
// n (dimension 1); accumulators. gy = output image row. Split forms (g.KS = S lanes a tile):
// dimension 0 = (tile, lane), tl = the tile's index in its work-group.
std::string head(const ConvGeom& g) {
  std::string r;
  r += "  const int gx = get_global_id(0), n = get_global_id(1);\n";
  std::string tile = "gx";
  if (g.KS) {
    const int64_t S = g.KS;
    r += "  const int tile = gx / " + I(S) + ";\n";
    r += "  const int lane = gx - tile * " + I(S) + ";\n";
    r += "  const int tl = (int)get_local_id(0) / " + I(S) + ";\n";
    tile = "tile";
  }
  r += "  const int cg = " + tile + " / " + I(g.WT * g.OH) + ";\n";
  r += "  const int cb = cg * " + I(g.OB) + ";\n";
  r += "  const int hw = " + tile + " - cg * " + I(g.WT * g.OH) + ";\n";
  r += "  const int h = hw / " + I(g.WT) + ";\n";
  r += "  const int ow0 = (hw - h * " + I(g.WT) + ") * " + I(g.TW) + ";\n";
  r += "  const int gy = n * " + I(g.OH) + " + h;\n";
  for (int64_t ob = 0; ob < g.OB; ++ob)
    for (int64_t t = 0; t < g.TW; ++t) r += "  OPV_ACC4 " + acc(t, ob) + " = (OPV_ACC4)(0);\n";
  return r;
}

// Dense (group 1) kxk, incl. 1x1. Returns body; *reads = texel reads per work-item.
std::string dense_body(const Plan& p, const Call& c, const ConvGeom& g, bool packed, int64_t* reads) {
  const Buffer& wb = *input_buf(p, c, 1);
  std::string r = head(g);
  const int64_t KK = g.KK(), full = g.C / kLanes, tail = g.C % kLanes;
  if (!packed)
    for (int64_t ob = 0; ob < g.OB; ++ob)
      for (int j = 0; j < kLanes; ++j)
        r += "  const int wo" + I(ob) + I(j) + " = min(4 * (cb + " + I(ob) + ") + " + I(j) + ", " + I(g.M - 1) + ") * " +
             I(g.Cg * KK) + ";\n";
  // Input column of pixel t at tap column kw (before * C4).
  auto col = [&](int64_t t, int64_t kw) {
    return "(ow0 + " + I(t) + ") * " + I(g.sw) + " + " + I(kw * g.dw - g.pl);
  };
  for (int64_t kh = 0; kh < g.KH; ++kh) {
    r += "  {\n    const int ih = h * " + I(g.sh) + " + " + I(kh * g.dh - g.pt) + ";\n";
    r += "    const int y = " + row_expr(g, "ih") + ";\n";
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const int64_t tap = kh * g.KW + kw;
      r += "    {\n";
      for (int64_t t = 0; t < g.TW; ++t) r += "      const int x" + I(t) + " = (" + col(t, kw) + ") * " + I(g.C4) + ";\n";
      auto mads = [&](const std::string& ib, int lanes, const std::string& ind) {
        std::string s;
        // Weight vectors w<ob><l>: 4 outputs (block cb + ob) of input channel 4*ib + l.
        for (int64_t ob = 0; ob < g.OB; ++ob)
          for (int l = 0; l < lanes; ++l) {
            const std::string wn = "w" + I(ob) + I(l);
            if (packed) {
              s += ind + "const OPV_ACC4 " + wn + " = OPV_W4((" + I(tap * g.C4) + " + (cb + " + I(ob) + ") * " +
                   I(KK * g.C4) + " + " + ib + ") * 4 + " + I(l) + ", in1);\n";
            } else {
              std::string ci = "(4 * " + ib + " + " + I(l) + ") * " + I(KK) + " + " + I(tap);
              s += ind + "const OPV_ACC4 " + wn + " = OPV_CVT4((float4)(";
              for (int j = 0; j < kLanes; ++j)
                s += (j ? ", " : "") + ld(wb.dtype, "in1", "wo" + I(ob) + I(j) + " + " + ci);
              s += "));\n";
            }
          }
        static const char* comp = "xyzw";
        for (int64_t t = 0; t < g.TW; ++t) {
          s += ind + "{\n" + ind + "  const OPV_ACC4 v = OPV_RD(in0, x" + I(t) + " + " + ib + ", y);\n";
          for (int64_t ob = 0; ob < g.OB; ++ob)
            for (int l = 0; l < lanes; ++l)
              s += ind + "  " + acc(t, ob) + " = mad((OPV_ACC4)(v." + comp[l] + "), w" + I(ob) + I(l) + ", " +
                   acc(t, ob) + ");\n";
          s += ind + "}\n";
        }
        return s;
      };
      if (packed) {
        r += "      for (int ib = 0; ib < " + I(g.C4) + "; ++ib) {\n" + mads("ib", kLanes, "        ") + "      }\n";
      } else {
        if (full > 0)
          r += "      for (int ib = 0; ib < " + I(full) + "; ++ib) {\n" + mads("ib", kLanes, "        ") + "      }\n";
        if (tail > 0) r += "      {\n" + mads(I(full), int(tail), "        ") + "      }\n";
      }
      r += "    }\n";
    }
    r += "  }\n";
  }
  *reads = g.TW * KK * g.C4;
  return r;
}

// Tail of the split forms: the A = TW*OB partial accumulators go to local memory
// red[(tl * A + a) * S + lane], a = ob * TW + t; after one barrier, accumulator a of the tile is
// the fixed-order sum over lanes 0..S-1 (deterministic). Every lane then runs the epilogue of
// accumulator lane % A (lane, lane + S, .. when S < A), so its reads stay unconditional; lanes
// l < A write. *post_reads = texel reads of the epilogue per work-item.
std::string split_tail(const Plan& p, const Call& c, const Kernel& k, const KernelDesc& d, const ConvGeom& g,
                       const std::string& post, int64_t* post_reads) {
  const int64_t S = g.KS, A = g.TW * g.OB;
  std::string r;
  for (int64_t ob = 0; ob < g.OB; ++ob)
    for (int64_t t = 0; t < g.TW; ++t)
      r += "  red[(tl * " + I(A) + " + " + I(ob * g.TW + t) + ") * " + I(S) + " + lane] = convert_float4(" +
           acc(t, ob) + ");\n";
  r += "  barrier(CLK_LOCAL_MEM_FENCE);\n";
  const int64_t rounds = S >= A ? 1 : (A + S - 1) / S;
  r += "  for (int i = 0; i < " + I(rounds) + "; ++i) {\n";
  r += std::string("    const int a = ") + (S >= A ? "lane % " + I(A) : "lane + i * " + I(S)) + ";\n";
  if (S < A && A % S) r += "    if (a >= " + I(A) + ") break;\n";
  r += "    __local const float4* part = red + (tl * " + I(A) + " + a) * " + I(S) + ";\n";
  r += "    float4 sum = part[0];\n";
  r += "    for (int j = 1; j < " + I(S) + "; ++j) sum += part[j];\n";
  r += "    const int w = ow0 + a % " + I(g.TW) + ";\n";
  r += "    const int cbo = cb + a / " + I(g.TW) + ";\n";
  r += "    {\n    const int cb = cbo;\n";
  r += "  " + bias_code(p, c, g);
  r += epilogue_pixel(d, g, post, "sum", S > A ? "lane < " + I(A) : "");
  r += "    }\n  }\n";
  *post_reads = rounds * post_ops_image_reads(p, c, k);
  return r;
}

// Dense K-split (g.KS = S lanes per tile of TW pixels x OB blocks): dimension 0 = (tile, lane),
// tile = (output block group, row, pixel tile) as in head(); lane l sums the steps
// s = l, l + S, .. of the flattened (tap, input block) loop, s = tap * C4 + ib (the packed
// weights' order; neighbouring lanes read neighbouring texels and weight vectors), then
// split_tail() adds the lanes' partial sums. All lanes reach the barrier: the global size is
// exactly S * tiles.
std::string ks_body(const Plan& p, const Call& c, const Kernel& k, const KernelDesc& d, const ConvGeom& g, bool packed,
                    const std::string& post, int64_t* reads) {
  const Buffer& wb = *input_buf(p, c, 1);
  const int64_t KK = g.KK(), STEPS = g.C4 * KK, S = g.KS;
  const int64_t per_lane = (STEPS + S - 1) / S;
  OPV_ASSERT(g.KS > 0);
  std::string r = head(g);
  if (!packed)
    for (int64_t ob = 0; ob < g.OB; ++ob)
      for (int j = 0; j < kLanes; ++j)
        r += "  const int wo" + I(ob) + I(j) + " = min(4 * (cb + " + I(ob) + ") + " + I(j) + ", " + I(g.M - 1) +
             ") * " + I(g.Cg * KK) + ";\n";
  r += "#pragma unroll\n";
  r += "  for (int i = 0; i < " + I(per_lane) + "; ++i) {\n";
  r += "    const int s = lane + i * " + I(S) + ";\n";
  const std::string ind = STEPS % S ? "      " : "    ";
  if (STEPS % S) r += "    if (s < " + I(STEPS) + ") {\n";
  std::string tap = "0";
  if (KK > 1) {
    tap = "tap";
    r += ind + "const int tap = s / " + I(g.C4) + ";\n";
    r += ind + "const int ib = s - tap * " + I(g.C4) + ";\n";
    r += ind + "const int kh = tap / " + I(g.KW) + ";\n";
    r += ind + "const int kw = tap - kh * " + I(g.KW) + ";\n";
    r += ind + "const int ih = h * " + I(g.sh) + " + kh * " + I(g.dh) + " - " + I(g.pt) + ";\n";
    r += ind + "const int xk = kw * " + I(g.dw) + " - " + I(g.pl) + ";\n";
  } else {
    r += ind + "const int ib = s;\n";
    r += ind + "const int ih = h * " + I(g.sh) + " - " + I(g.pt) + ";\n";
    r += ind + "const int xk = -" + I(g.pl) + ";\n";
  }
  r += ind + "const int y = " + row_expr(g, "ih") + ";\n";
  static const char* comp = "xyzw";
  for (int64_t ob = 0; ob < g.OB; ++ob)
    for (int l = 0; l < kLanes; ++l) {
      const std::string wn = "w" + I(ob) + I(l);
      if (packed) {
        r += ind + "const OPV_ACC4 " + wn + " = OPV_W4(((cb + " + I(ob) + ") * " + I(STEPS) + " + s) * 4 + " + I(l) +
             ", in1);\n";
      } else {
        // Input channel of lane l; past C (the tail block) the texel lane is 0, so any in-range
        // weight gives 0: clamp the index instead of branching.
        std::string ci = "4 * ib + " + I(l);
        if (g.C % kLanes != 0) ci = "min(" + ci + ", " + I(g.C - 1) + ")";
        r += ind + "const OPV_ACC4 " + wn + " = OPV_CVT4((float4)(";
        for (int j = 0; j < kLanes; ++j)
          r += (j ? ", " : "") + ld(wb.dtype, "in1", "wo" + I(ob) + I(j) + " + (" + ci + ") * " + I(KK) + " + " + tap);
        r += "));\n";
      }
    }
  for (int64_t t = 0; t < g.TW; ++t) {
    r += ind + "{\n" + ind + "  const OPV_ACC4 v = OPV_RD(in0, ((ow0 + " + I(t) + ") * " + I(g.sw) + " + xk) * " +
         I(g.C4) + " + ib, y);\n";
    for (int64_t ob = 0; ob < g.OB; ++ob)
      for (int l = 0; l < kLanes; ++l)
        r += ind + "  " + acc(t, ob) + " = mad((OPV_ACC4)(v." + comp[l] + "), w" + I(ob) + I(l) + ", " + acc(t, ob) +
             ");\n";
    r += ind + "}\n";
  }
  if (STEPS % S) r += "    }\n";
  r += "  }\n";
  int64_t post_reads = 0;
  r += split_tail(p, c, k, d, g, post, &post_reads);
  *reads = per_lane * g.TW + post_reads;
  return r;
}

// Depthwise, channel multiplier 1 or 2, sliding window along w. Split form (g.KS = KH lanes a
// tile): lane kh computes kernel row kh, then split_tail() adds the rows.
std::string dw_body(const Plan& p, const Call& c, const Kernel& k, const KernelDesc& d, const ConvGeom& g, bool packed,
                    const std::string& post, int64_t* reads) {
  const Buffer& wb = *input_buf(p, c, 1);
  std::string r = head(g);
  const int64_t KK = g.KK();
  // Input block of output block cb.
  const std::string ib = g.mult == 1 ? "cb" : "(cb >> 1)";
  if (g.mult == 2) r += "  const int odd = cb & 1;\n";
  if (!packed)
    for (int j = 0; j < kLanes; ++j)
      r += "  const int wo" + I(j) + " = min(4 * cb + " + I(j) + ", " + I(g.M - 1) + ") * " + I(KK) + ";\n";
  // Distinct input columns (relative to ow0*sw - pl) that the TW outputs use in one kernel row.
  std::set<int64_t> cols;
  for (int64_t t = 0; t < g.TW; ++t)
    for (int64_t kw = 0; kw < g.KW; ++kw) cols.insert(t * g.sw + kw * g.dw);
  r += "  const int xw0 = ow0 * " + I(g.sw) + " - " + I(g.pl) + ";\n";
  for (int64_t kh = 0; kh < (g.KS ? 1 : g.KH); ++kh) {
    // Split form: the row is the lane (taps kh * KW + kw at run time).
    const std::string row = g.KS ? "lane * " + I(g.KW) + " + " : I(kh * g.KW) + " + ";
    if (g.KS)
      r += "  {\n    const int ih = h * " + I(g.sh) + " + lane * " + I(g.dh) + " - " + I(g.pt) + ";\n";
    else
      r += "  {\n    const int ih = h * " + I(g.sh) + " + " + I(kh * g.dh - g.pt) + ";\n";
    r += "    const int y = " + row_expr(g, "ih") + ";\n";
    for (int64_t q : cols) {
      std::string rd = "OPV_RD(in0, (xw0 + " + I(q) + ") * " + I(g.C4) + " + " + ib + ", y)";
      if (g.mult == 1) {
        r += "    const OPV_ACC4 r" + I(q) + " = " + rd + ";\n";
      } else {
        r += "    const OPV_ACC4 t" + I(q) + " = " + rd + ";\n";
        r += "    const OPV_ACC4 r" + I(q) + " = odd ? t" + I(q) + ".zzww : t" + I(q) + ".xxyy;\n";
      }
    }
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const std::string tap = "(" + row + I(kw) + ")";
      if (packed) {
        r += "    {\n      const OPV_ACC4 wt = OPV_W4(cb * " + I(KK) + " + " + tap + ", in1);\n";
      } else {
        r += "    {\n      const OPV_ACC4 wt = OPV_CVT4((float4)(";
        for (int j = 0; j < kLanes; ++j) r += (j ? ", " : "") + ld(wb.dtype, "in1", "wo" + I(j) + " + " + tap);
        r += "));\n";
      }
      for (int64_t t = 0; t < g.TW; ++t)
        r += "      acc" + I(t) + " = mad(r" + I(t * g.sw + kw * g.dw) + ", wt, acc" + I(t) + ");\n";
      r += "    }\n";
    }
    r += "  }\n";
  }
  *reads = (g.KS ? 1 : g.KH) * int64_t(cols.size());
  if (g.KS) {
    int64_t post_reads = 0;
    r += split_tail(p, c, k, d, g, post, &post_reads);
    *reads += post_reads;
  }
  return r;
}

// General grouped conv: per output lane j, its group's input channels; 1 pixel per work-item.
std::string group_body(const Plan& p, const Call& c, const KernelDesc& d, const ConvGeom& g, bool packed,
                       int64_t* reads) {
  const Buffer& wb = *input_buf(p, c, 1);
  std::string r = head(g);
  const int64_t KK = g.KK();
  for (int j = 0; j < kLanes; ++j) {
    r += "  const int oc" + I(j) + " = min(4 * cb + " + I(j) + ", " + I(g.M - 1) + ");\n";
    r += "  const int ic" + I(j) + " = (oc" + I(j) + " / " + I(g.Mg) + ") * " + I(g.Cg) + ";\n";
    if (!packed) r += "  const int wo" + I(j) + " = oc" + I(j) + " * " + I(g.Cg * KK) + ";\n";
  }
  for (int64_t kh = 0; kh < g.KH; ++kh) {
    r += "  {\n    const int ih = h * " + I(g.sh) + " + " + I(kh * g.dh - g.pt) + ";\n";
    r += "    const int y = " + row_expr(g, "ih") + ";\n";
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const int64_t tap = kh * g.KW + kw;
      r += "    {\n      const int x = (ow0 * " + I(g.sw) + " + " + I(kw * g.dw - g.pl) + ") * " + I(g.C4) + ";\n";
      r += "      for (int k = 0; k < " + I(g.Cg) + "; ++k) {\n";
      std::string in = "(float4)(";
      for (int j = 0; j < kLanes; ++j) {
        const std::string ic = "(ic" + I(j) + " + k)";
        r += "        const float4 t" + I(j) + " = " + d.read_image("in0", "(int2)(x + " + ic + " / 4, y)") + ";\n";
        in += (j ? ", " : "") + std::string("opv_lane(t") + I(j) + ", " + ic + " & 3)";
      }
      in += ")";
      if (packed) {
        r += "        const float4 wt = convert_float4(OPV_W4((cb * " + I(g.Cg) + " + k) * " + I(KK) + " + " + I(tap) +
             ", in1));\n";
      } else {
        r += "        const float4 wt = (float4)(";
        for (int j = 0; j < kLanes; ++j)
          r += (j ? ", " : "") + ld(wb.dtype, "in1", "wo" + I(j) + " + k * " + I(KK) + " + " + I(tap));
        r += ");\n";
      }
      r += "        acc0 = mad(OPV_CVT4(" + in + "), OPV_CVT4(wt), acc0);\n";
      r += "      }\n    }\n";
    }
    r += "  }\n";
  }
  *reads = kLanes * KK * g.Cg;
  return r;
}

std::string lower_case(std::string s) {
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string kernel_name(const Kernel& k, const ConvGeom& g, bool packed) {
  std::ostringstream os;
  os << "cl_";
  if (g.var == Variant::Depthwise)
    os << "dwconv";
  else if (g.var == Variant::Group)
    os << "gconv";
  else
    os << "conv";
  os << g.KH << "x" << g.KW << "_s" << g.sh;
  if (g.sw != g.sh) os << "x" << g.sw;
  if (g.dh != 1 || g.dw != 1) os << "_d" << g.dh << "x" << g.dw;
  if (g.var == Variant::Depthwise) os << "_m" << g.mult;
  if (g.var == Variant::Group) os << "_g" << g.group;
  os << "_c" << g.C << "_k" << g.M << "_tw" << g.TW;
  if (g.OB > 1) os << "_ob" << g.OB;
  if (g.KS) os << "_ks" << g.KS;
  if (packed) os << "_pk";
  for (const PostOp& po : k.post_ops) os << "_" << lower_case(op_name(po.op));
  return os.str();
}

bool conv_supports(const Plan& p, const Call& c, const Options& o) {
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  if (k.op != OpKind::Conv) return false;
  ConvGeom g;
  if (!conv_geom(p, c, k, o, g, nullptr)) return false;
  return post_ops_image_ok(p, c, k);
}

KernelDesc conv_generate(const Plan& p, const Call& c, Kernel& k, const Options& o) {
  ConvGeom g;
  std::string why;
  OPV_CHECK(k.op == OpKind::Conv, "conv_image: call '", c.label, "' is not a Conv");
  OPV_CHECK(conv_geom(p, c, k, o, g, &why), "conv_image: call '", c.label, "': ", why);
  const bool packed = input_buf(p, c, 1)->layout == Layout::PackedWeight;
  KernelDesc d = describe_call(p, c, kFamily, "src/target/opencl/conv_image.cpp");
  int64_t reads = 0;
  std::string body;
  const std::string post = emit_post_ops_image(p, c, k, d);
  switch (g.var) {
    case Variant::Dense:
      body = g.KS ? ks_body(p, c, k, d, g, packed, post, &reads) : dense_body(p, c, g, packed, &reads);
      break;
    case Variant::Depthwise: body = dw_body(p, c, k, d, g, packed, post, &reads); break;
    case Variant::Group: body = group_body(p, c, d, g, packed, &reads); break;
  }
  if (!g.KS) {
    body += epilogue(p, c, d, g, post);
    reads += g.TW * g.OB * post_ops_image_reads(p, c, k);
  }

  d.prelude = cl_prelude();
  if (packed && input_buf(p, c, 1)->dtype == DType::F32) d.prelude += "#define OPV_WF32 1\n";
  d.prelude += precision_macros(d.param("in0").storage);
  if (g.var == Variant::Group)
    d.prelude += "float opv_lane(float4 v, int l) { return l == 0 ? v.x : (l == 1 ? v.y : (l == 2 ? v.z : v.w)); }\n";
  k.name = kernel_name(k, g, packed);
  d.entry = k.name;
  d.body = std::move(body);
  if (g.KS) d.locals.push_back({"float4", "red", g.TPW * g.TW * g.OB * g.KS});
  k.options = "-cl-mad-enable";
  if (k.attrs.i("cl_fp16_math", 0)) k.options += " -DOPV_FP16_MATH";
  k.attrs.set("cl_reads", reads);
  k.attrs.set("cl_gated", int64_t(0));
  k.attrs.set("cl_tw", g.TW);
  k.attrs.set("cl_ob", g.OB);
  k.attrs.set("cl_ks", g.KS);
  d.global = {g.WT * g.OH * (g.M4 / g.OB) * std::max<int64_t>(g.KS, 1), g.N, 0};
  d.local = {g.KS * g.TPW, g.KS ? 1 : 0, 0};
  return d;
}

// Float value of element i of a Linear F32/F16 constant.
float const_at(const Plan& p, int buf, int64_t i) {
  const Buffer& b = p.buffers.at(size_t(buf));
  const uint8_t* d = p.constant_data(buf);
  if (b.dtype == DType::F16) {
    uint16_t h;
    std::memcpy(&h, d + 2 * i, 2);
    return half_to_float(h);
  }
  float f;
  std::memcpy(&f, d + 4 * i, 4);
  return f;
}

bool conv_pack_weights(Plan& p, int call, const Options& o) {
  Call& c = p.calls.at(size_t(call));
  const Kernel& k0 = p.kernels.at(size_t(c.kernel));
  if (k0.op != OpKind::Conv || k0.attrs.s("cl_family") != kFamily) return false;
  ConvGeom g;
  if (!conv_geom(p, c, k0, o, g, nullptr)) return false;
  const int wid = c.inputs[1];
  const Buffer wb = p.buffers.at(size_t(wid));
  if (wb.kind != BufferKind::Constant || wb.layout != Layout::Linear) return false;
  const int64_t KK = g.KK();
  const char* pack = packing_of(g.var);
  // Weights, zero-filled, in the order the kernel reads them.
  int64_t count = 0;
  switch (g.var) {
    case Variant::Dense: count = g.M4 * KK * g.C4 * kLanes * kLanes; break;
    case Variant::Depthwise: count = g.M4 * KK * kLanes; break;
    case Variant::Group: count = g.M4 * g.Cg * KK * kLanes; break;
  }
  // Element type of the packing: F16 (default) or F32 (plan meta cl_weight_dtype = "f32").
  const bool f32 = o.weight_dtype == DType::F32;
  std::vector<float> wp(size_t(count), 0.f);
  for (int64_t oc = 0; oc < g.M; ++oc) {
    const int64_t ob = oc / kLanes, j = oc % kLanes;
    for (int64_t ci = 0; ci < g.Cg; ++ci)
      for (int64_t t = 0; t < KK; ++t) {
        const float v = const_at(p, wid, (oc * g.Cg + ci) * KK + t);
        int64_t at = 0;
        switch (g.var) {
          case Variant::Dense: at = ((ob * KK + t) * g.C4 * kLanes + ci) * kLanes + j; break;
          case Variant::Depthwise: at = (ob * KK + t) * kLanes + j; break;
          case Variant::Group: at = ((ob * g.Cg + ci) * KK + t) * kLanes + j; break;
        }
        wp[size_t(at)] = v;
      }
  }
  std::vector<uint8_t> bytes;
  if (f32) {
    bytes.resize(wp.size() * 4);
    std::memcpy(bytes.data(), wp.data(), bytes.size());
  } else {
    std::vector<uint16_t> hp(wp.size());
    for (size_t i = 0; i < wp.size(); ++i) hp[i] = float_to_half(wp[i]);
    bytes.resize(hp.size() * 2);
    std::memcpy(bytes.data(), hp.data(), bytes.size());
  }
  const int new_w = add_packed_constant(p, wid, std::string(pack) + (f32 ? ":f32" : ":f16"),
                                        f32 ? DType::F32 : DType::F16, wb.shape, bytes);
  int new_b = -1;
  const int bid = c.inputs.size() > 2 ? c.inputs[2] : -1;
  if (bid >= 0) {
    const Buffer& bb = p.buffers.at(size_t(bid));
    if (bb.kind == BufferKind::Constant && bb.layout == Layout::Linear) {
      std::vector<float> bp(size_t(g.M4 * kLanes), 0.f);
      for (int64_t i = 0; i < g.M; ++i) bp[size_t(i)] = const_at(p, bid, i);
      std::vector<uint8_t> bbytes(bp.size() * 4);
      std::memcpy(bbytes.data(), bp.data(), bbytes.size());
      const Shape bshape = bb.shape;
      new_b = add_packed_constant(p, bid, std::string(kPackBias) + ":f32", DType::F32, bshape, bbytes);
    }
  }
  // The call gets its own kernel before the attr changes (others may share it).
  Call& cc = p.calls.at(size_t(call));
  int users = 0;
  for (const Call& o : p.calls) users += o.kernel == cc.kernel;
  if (users > 1) cc.kernel = p.add_kernel(p.kernels.at(size_t(cc.kernel)));
  p.kernels.at(size_t(cc.kernel)).attrs.set("cl_pack", std::string(pack));
  cc.inputs[1] = new_w;
  if (new_b >= 0) cc.inputs[2] = new_b;
  regenerate(p, call, o);
  return true;
}

const Family kConvImage{kFamily, conv_supports, conv_generate, conv_pack_weights};

}  // namespace

const Family& conv_image_family() { return kConvImage; }

}  // namespace opv::plan::cl
