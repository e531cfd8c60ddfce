// Tests of the "conv_image" kernel family (src/target/opencl/conv_image.cpp).
//  1. String level: supports()/generate() on hand-made plans: family, variant names, no gated
//     reads, read counts, launch geometry; pack_weights makes PackedWeight constants.
//  2. Kernel level (an OpenCL device is needed, else skipped): every variant on random seeded
//     shapes (stride 1/2, pads, dilation, C and Cout not multiples of 4, N = 2, channel
//     multiplier 2 7x7/3x3 stride 2, bias or not, post-ops gelu/relu/sigmoid/layer scale/
//     residual image), unpacked and packed, run directly through OpenCL on half images and
//     compared with ref::run on the same (fp16-rounded) inputs.
//     K-split dense variant ("_ks<S>": a register tile of up to 4 pixels x 2 blocks shared by S
//     lanes that reduce in local memory): forced by a large Options::busy_items on random
//     small maps, 1x1 with many (also not multiple-of-4) input channels and dense 3x3 (strides,
//     pads, dilation, N = 2, maps not multiples of the tile), all post-ops incl. residual add,
//     packed and unpacked, lane counts from 2 to 64 (fewer and more lanes than accumulators);
//     the default (Adreno) busy value never picks it; two runs give identical bits.
//  3. End to end: the same kinds of graphs lowered for target "opencl" and run on backend
//     "opencl" against backend "reference" (skipped while either is unavailable).
#include <gtest/gtest.h>

#include <CL/cl.h>

#include <cstring>
#include <random>
#include <set>

#include "backend/backend.h"
#include "backend/opencl/cl_runtime.h"
#include "compiler/compile.h"
#include "core/half.h"
#include "core/metrics.h"
#include "kernels/reference.h"
#include "target/opencl/codegen.h"
#include "test_util.h"

namespace opv {
namespace {

using plan::Buffer;
using plan::BufferKind;
using plan::Layout;

struct ConvCase {
  int64_t N = 1, C = 4, H = 8, W = 8, M = 4, KH = 3, KW = 3, group = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 1, pl = 1, pb = 1, pr = 1;
  bool bias = true;
  DType wdt = DType::F32;
  // Post-ops: 0 none, 1 gelu, 2 relu, 3 sigmoid, 4 layer scale * + residual add, 5 gelu + scale.
  int post = 0;
  // Options::busy_items (0: the default): small values force multi-pixel / multi-block
  // tiles on small maps.
  int64_t busy = 0;
  // Packed weights in F32 (Options::weight_dtype) instead of F16.
  bool wf32 = false;
  int64_t OH() const { return (H + pt + pb - dh * (KH - 1) - 1) / sh + 1; }
  int64_t OW() const { return (W + pl + pr - dw * (KW - 1) - 1) / sw + 1; }
  std::string str() const {
    std::ostringstream os;
    os << "N" << N << " C" << C << " " << H << "x" << W << " M" << M << " k" << KH << "x" << KW << " g" << group
       << " s" << sh << "," << sw << " d" << dh << "," << dw << " p" << pt << "," << pl << "," << pb << "," << pr
       << " bias" << bias << " w" << dtype_name(wdt) << " post" << post << " busy" << busy << " wf32 " << wf32;
    return os.str();
  }
};

Attrs conv_attrs(const ConvCase& cc) {
  Attrs a;
  a.set("group", cc.group);
  a.set("strides", std::vector<int64_t>{cc.sh, cc.sw});
  a.set("pads", std::vector<int64_t>{cc.pt, cc.pl, cc.pb, cc.pr});
  a.set("dilations", std::vector<int64_t>{cc.dh, cc.dw});
  return a;
}

std::vector<PostOp> post_ops_of(const ConvCase& cc) {
  switch (cc.post) {
    case 1: return {PostOp{OpKind::Gelu}};
    case 2: return {PostOp{OpKind::Relu}};
    case 3: return {PostOp{OpKind::Sigmoid}};
    case 4: return {PostOp{OpKind::Mul, 0, 0, 4}, PostOp{OpKind::Add, 0, 0, 3}};
    case 5: return {PostOp{OpKind::Gelu}, PostOp{OpKind::Mul, 0, 0, 4}};
    default: return {};
  }
}

Tensor round_f16(const Tensor& t) { return t.cast(DType::F16).cast(DType::F32); }

// All tensors of one case (inputs of the conv by slot: x, w, b, residual, scale).
struct CaseData {
  Tensor x, w, b, res, scale;
};

CaseData make_data(const ConvCase& cc, uint64_t seed) {
  CaseData d;
  d.x = round_f16(test::random_f32({cc.N, cc.C, cc.H, cc.W}, seed, -1.f, 1.f));
  d.w = test::random_f32({cc.M, cc.C / cc.group, cc.KH, cc.KW}, seed + 1, -0.5f, 0.5f);
  if (cc.wdt == DType::F16) d.w = d.w.cast(DType::F16);
  d.b = test::random_f32({cc.M}, seed + 2, -0.5f, 0.5f);
  d.res = round_f16(test::random_f32({cc.N, cc.M, cc.OH(), cc.OW()}, seed + 3, -1.f, 1.f));
  d.scale = test::random_f32({cc.M, 1, 1}, seed + 4, 0.5f, 1.5f);
  return d;
}

// A plan with one Conv call on images: x (image), w, [b], residual (image), scale (Linear).
plan::Plan conv_plan(const ConvCase& cc, const CaseData& d) {
  plan::Plan p;
  p.target = "opencl";
  // The compile options, recorded in the plan's meta as lower() records them; the family
  // functions below get them back through Options::from_meta (opts()).
  plan::cl::Options o;
  o.busy_items = cc.busy;
  if (cc.wf32) o.weight_dtype = DType::F32;
  o.record(p.meta);
  auto image = [&](const std::string& name, const Shape& s) {
    Buffer b;
    b.name = name;
    b.dtype = DType::F16;
    b.shape = s;
    b.layout = Layout::ImageRGBA;
    b.kind = BufferKind::Intermediate;
    return p.add_buffer(std::move(b));
  };
  auto constant = [&](const std::string& name, const Tensor& t) {
    return p.add_constant(name, t.dtype(), t.shape(), Layout::Linear, t.raw(), t.nbytes());
  };
  int x = image("x", d.x.shape());
  int w = constant("w", d.w);
  int b = cc.bias ? constant("b", d.b) : -1;
  int y = image("y", {cc.N, cc.M, cc.OH(), cc.OW()});
  plan::Kernel k;
  k.op = OpKind::Conv;
  k.attrs = conv_attrs(cc);
  k.post_ops = post_ops_of(cc);
  k.name = "conv";
  plan::Call c;
  c.kernel = p.add_kernel(k);
  c.inputs = {x, w, b};
  if (cc.post >= 4) {
    c.inputs.push_back(cc.post == 4 ? image("res", d.res.shape()) : -1);
    c.inputs.push_back(constant("scale", d.scale));
  }
  c.outputs = {y};
  c.label = "conv0";
  p.calls.push_back(c);
  return p;
}

Tensor reference_conv(const ConvCase& cc, const CaseData& d) {
  Attrs a = conv_attrs(cc);
  std::vector<PostOp> po = post_ops_of(cc);
  Tensor w = d.w.cast(DType::F32);
  std::vector<const Tensor*> ins = {&d.x, &w, cc.bias ? &d.b : nullptr};
  if (cc.post >= 4) {
    ins.push_back(cc.post == 4 ? &d.res : nullptr);
    ins.push_back(&d.scale);
  }
  Tensor y(DType::F32, {cc.N, cc.M, cc.OH(), cc.OW()});
  ref::run({OpKind::Conv, a, po}, ins, {&y});
  return y;
}

// ---- a minimal OpenCL harness: half images in, half image out ---------------------------------

struct Device {
  bool ok = false;
  backend::cl::DeviceInfo info;
  cl_context ctx = nullptr;
  cl_command_queue queue = nullptr;
};

Device& device() {
  static Device d = [] {
    Device r;
    try {
      std::vector<backend::cl::DeviceInfo> devs = backend::cl::list_devices();
      if (devs.empty()) return r;
      r.info = backend::cl::select_device(devs, "");
      if (!r.info.image_support) return r;
      r.ctx = backend::cl::shared_context(r.info);
      cl_int err = CL_SUCCESS;
      r.queue = clCreateCommandQueueWithProperties(r.ctx, r.info.device, nullptr, &err);
      backend::cl::check(err, "clCreateCommandQueueWithProperties");
      r.ok = true;
    } catch (const std::exception&) {
      r.ok = false;
    }
    return r;
  }();
  return d;
}

// [N,C,H,W] float -> RGBA half texels (x = w*C4 + c/4, y = n*H + h), padded lanes 0.
std::vector<uint16_t> to_texels(const Tensor& t) {
  const Shape& s = t.shape();
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3], C4 = (C + 3) / 4;
  std::vector<uint16_t> r(size_t(N * H * W * C4 * 4), 0);
  Tensor f = t.cast(DType::F32);
  const float* src = f.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          r[size_t((((n * H + h) * W + w) * C4 + c / 4) * 4 + c % 4)] =
              float_to_half(src[((n * C + c) * H + h) * W + w]);
  return r;
}

// Texels -> [N,C,H,W] float; *pad_ok = every padded lane is 0.
Tensor from_texels(const std::vector<uint16_t>& r, const Shape& s, bool* pad_ok) {
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3], C4 = (C + 3) / 4;
  Tensor t(DType::F32, s);
  float* dst = t.data<float>();
  *pad_ok = true;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C4 * 4; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          float v = half_to_float(r[size_t((((n * H + h) * W + w) * C4 + c / 4) * 4 + c % 4)]);
          if (c < C)
            dst[((n * C + c) * H + h) * W + w] = v;
          else if (v != 0.f)
            *pad_ok = false;
        }
  return t;
}

backend::cl::Mem make_image(cl_context ctx, const Shape& s, const std::vector<uint16_t>* data) {
  cl_image_format fmt{CL_RGBA, CL_HALF_FLOAT};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = size_t(s[3] * ((s[1] + 3) / 4));
  desc.image_height = size_t(s[0] * s[2]);
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateImage(ctx, data ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR : CL_MEM_READ_WRITE, &fmt, &desc,
                           data ? const_cast<uint16_t*>(data->data()) : nullptr, &err);
  backend::cl::check(err, "clCreateImage");
  return backend::cl::Mem(m);
}

// Runs call 0 of p (generated by conv_image) with images/constants filled from d; returns y.
Tensor run_on_device(const plan::Plan& p, const CaseData& d, bool* pad_ok) {
  Device& dev = device();
  const plan::Call& c = p.calls[0];
  const plan::Kernel& k = p.kernels[size_t(c.kernel)];
  backend::cl::Program prog = backend::cl::build_program(dev.info, k.source, k.options, k.entry);
  cl_int err = CL_SUCCESS;
  backend::cl::Kernel kern(clCreateKernel(prog.get(), k.entry.c_str(), &err));
  backend::cl::check(err, "clCreateKernel");
  std::vector<backend::cl::Mem> mems;
  const Buffer& yb = p.buffers[size_t(c.outputs[0])];
  mems.push_back(make_image(dev.ctx, yb.shape, nullptr));
  std::vector<std::vector<uint16_t>> texels;
  texels.reserve(8);
  for (size_t s = 0; s < c.inputs.size(); ++s) {
    if (c.inputs[s] < 0) continue;
    const Buffer& b = p.buffers[size_t(c.inputs[s])];
    if (b.layout == Layout::ImageRGBA) {
      texels.push_back(to_texels(s == 0 ? d.x : d.res));
      mems.push_back(make_image(dev.ctx, b.shape, &texels.back()));
    } else {
      cl_mem m = clCreateBuffer(dev.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, size_t(b.bytes),
                                const_cast<uint8_t*>(p.constant_data(c.inputs[s])), &err);
      backend::cl::check(err, "clCreateBuffer");
      mems.emplace_back(m);
    }
  }
  for (size_t i = 0; i < mems.size(); ++i) {
    cl_mem m = mems[i].get();
    backend::cl::check(clSetKernelArg(kern.get(), cl_uint(i), sizeof(cl_mem), &m), "clSetKernelArg");
  }
  size_t global[2] = {size_t(c.global[0]), size_t(c.global[1])};
  size_t local[2] = {size_t(c.local[0]), size_t(std::max<int64_t>(c.local[1], 1))};
  backend::cl::check(clEnqueueNDRangeKernel(dev.queue, kern.get(), 2, nullptr, global, c.local[0] ? local : nullptr,
                                            0, nullptr, nullptr),
                     "clEnqueueNDRangeKernel");
  const Shape& s = yb.shape;
  std::vector<uint16_t> out(size_t(s[0] * s[2] * s[3] * ((s[1] + 3) / 4) * 4));
  size_t origin[3] = {0, 0, 0};
  size_t region[3] = {size_t(s[3] * ((s[1] + 3) / 4)), size_t(s[0] * s[2]), 1};
  backend::cl::check(clEnqueueReadImage(dev.queue, mems[0].get(), CL_TRUE, origin, region, 0, 0, out.data(), 0,
                                        nullptr, nullptr),
                     "clEnqueueReadImage");
  return from_texels(out, s, pad_ok);
}

// ---- random cases per variant -------------------------------------------------------------------

int64_t rnd(std::mt19937& g, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(g); }

ConvCase random_case(const std::string& variant, std::mt19937& g) {
  ConvCase cc;
  cc.N = rnd(g, 1, 2);
  cc.H = rnd(g, 3, 11);
  cc.W = rnd(g, 3, 13);
  cc.bias = rnd(g, 0, 3) != 0;
  cc.wdt = rnd(g, 0, 1) ? DType::F16 : DType::F32;
  cc.post = int(rnd(g, 0, 5));
  cc.sh = rnd(g, 1, 2);
  cc.sw = rnd(g, 0, 3) ? cc.sh : 3 - cc.sh;
  auto pads = [&](int64_t k) {
    cc.pt = rnd(g, 0, k / 2 * cc.dh);
    cc.pl = rnd(g, 0, k / 2 * cc.dw);
    cc.pb = rnd(g, 0, k / 2 * cc.dh);
    cc.pr = rnd(g, 0, k / 2 * cc.dw);
  };
  if (variant == "1x1") {
    cc.C = rnd(g, 1, 37);
    cc.M = rnd(g, 1, 37);
    cc.KH = cc.KW = 1;
    cc.pt = cc.pl = cc.pb = cc.pr = 0;
  } else if (variant == "dw") {
    cc.C = rnd(g, 2, 21);  // C = 1 is a dense conv
    cc.group = cc.C;
    cc.M = cc.C;
    cc.KH = cc.KW = 2 * rnd(g, 1, 3) + 1;
    cc.dh = cc.dw = rnd(g, 0, 3) ? 1 : 2;
    cc.H += cc.KH;
    cc.W += cc.KW;
    pads(cc.KH);
  } else if (variant == "dw_m2") {
    cc.C = rnd(g, 2, 13);
    cc.group = cc.C;
    cc.M = 2 * cc.C;
    cc.KH = cc.KW = rnd(g, 0, 1) ? 7 : 3;
    cc.sh = cc.sw = 2;
    cc.H += cc.KH;
    cc.W += cc.KW;
    cc.pt = cc.pl = cc.pb = cc.pr = cc.KH / 2;
  } else if (variant == "dense") {
    cc.C = rnd(g, 1, 27);
    cc.M = rnd(g, 1, 27);
    cc.KH = rnd(g, 2, 3);
    cc.KW = rnd(g, 0, 3) ? cc.KH : rnd(g, 1, 3);
    cc.dh = cc.dw = rnd(g, 0, 3) ? 1 : 2;
    cc.H += cc.KH * cc.dh;
    cc.W += cc.KW * cc.dw;
    pads(std::max(cc.KH, cc.KW));
  } else {  // grouped: groups of cg inputs -> mg outputs, incl. depthwise with m = 3
    int64_t groups = rnd(g, 2, 5), cg = rnd(g, 1, 6), mg = rnd(g, 1, 5);
    if (rnd(g, 0, 3) == 0) cg = 1, mg = 3;
    cc.group = groups;
    cc.C = groups * cg;
    cc.M = groups * mg;
    cc.KH = cc.KW = rnd(g, 1, 3);
    cc.H += cc.KH;
    cc.W += cc.KW;
    pads(cc.KH);
  }
  return cc;
}

const plan::cl::Family& fam() { return plan::cl::conv_image_family(); }
plan::cl::Options opts(const plan::Plan& p) { return plan::cl::Options::from_meta(p.meta); }

void generate(plan::Plan& p) {
  ASSERT_TRUE(fam().supports(p, p.calls[0], opts(p)));
  plan::Kernel k = p.kernels[0];
  plan::cl::emit(fam(), p, p.calls[0], k, opts(p));
  p.kernels[0] = k;
}

void check_case(const ConvCase& cc, uint64_t seed, bool pack, const std::string& expect_prefix) {
  SCOPED_TRACE(cc.str() + (pack ? " packed" : " unpacked"));
  CaseData d = make_data(cc, seed);
  plan::Plan p = conv_plan(cc, d);
  generate(p);
  if (pack) {
    ASSERT_TRUE(fam().pack_weights(p, 0, opts(p)));
    EXPECT_EQ(p.buffers[size_t(p.calls[0].inputs[1])].layout, Layout::PackedWeight);
    EXPECT_EQ(p.buffers[size_t(p.calls[0].inputs[1])].dtype, cc.wf32 ? DType::F32 : DType::F16);
    EXPECT_FALSE(fam().pack_weights(p, 0, opts(p))) << "packing twice";
  }
  const plan::Kernel& k = p.kernels[size_t(p.calls[0].kernel)];
  EXPECT_EQ(k.attrs.s("cl_family"), "conv_image");
  EXPECT_EQ(k.attrs.i("cl_gated", -1), 0);
  EXPECT_GT(k.attrs.i("cl_reads", 0), 0);
  EXPECT_EQ(k.name.rfind(expect_prefix, 0), 0u) << k.name;
  EXPECT_EQ(k.source.find("? read_image"), std::string::npos);
  if (!device().ok) return;
  bool pad_ok = false;
  Tensor y = run_on_device(p, d, &pad_ok);
  Tensor ref = reference_conv(cc, d);
  ErrorMetrics m = compare(y, ref);
  EXPECT_TRUE(m.finite);
  EXPECT_LE(m.rel_l2, 1e-2) << k.name;
  EXPECT_LE(m.max_abs_rel, 1e-2) << k.name;
  EXPECT_TRUE(pad_ok) << "padded output lanes must be 0";
}

void run_variant(const std::string& variant, const std::string& prefix, int cases, uint64_t seed) {
  std::mt19937 g{uint32_t(seed)};
  for (int i = 0; i < cases; ++i) {
    ConvCase cc = random_case(variant, g);
    if (i % 2) cc.busy = 8;  // every other case with the widest tiles
    for (bool pack : {false, true}) check_case(cc, seed * 1000 + uint64_t(i), pack, prefix);
  }
}

// ---- 1. string level ---------------------------------------------------------------------------

TEST(ConvImage, GeneratesEveryVariantWithoutGatedReads) {
  struct V {
    ConvCase cc;
    const char* prefix;
  };
  ConvCase c1;  // 1x1
  c1.C = 64, c1.M = 192, c1.H = 32, c1.W = 64, c1.KH = c1.KW = 1, c1.pt = c1.pl = c1.pb = c1.pr = 0, c1.post = 1;
  ConvCase dw;  // 7x7 s2 m2 patch embedding
  dw.C = 64, dw.M = 128, dw.group = 64, dw.H = 32, dw.W = 64, dw.KH = dw.KW = 7, dw.sh = dw.sw = 2;
  dw.pt = dw.pl = dw.pb = dw.pr = 3;
  ConvCase st;  // stem 3x3 s2
  st.C = 24, st.M = 64, st.H = 64, st.W = 128, st.sh = st.sw = 2, st.post = 2;
  ConvCase gr;  // grouped
  gr.C = 8, gr.M = 12, gr.group = 4;
  for (const V& v : {V{c1, "cl_conv1x1_s1_c64_k192_tw4_ob2_gelu"}, V{dw, "cl_dwconv7x7_s2_m2_c64_k128_tw"},
                     V{st, "cl_conv3x3_s2_c24_k64_tw"}, V{gr, "cl_gconv3x3_s1_g4_c8_k12_tw1"}}) {
    CaseData d = make_data(v.cc, 1);
    plan::Plan p = conv_plan(v.cc, d);
    generate(p);
    const plan::Kernel& k = p.kernels[0];
    EXPECT_EQ(k.name.rfind(v.prefix, 0), 0u) << k.name;
    EXPECT_EQ(k.attrs.s("cl_family"), "conv_image");
    EXPECT_EQ(k.attrs.i("cl_gated", -1), 0);
    EXPECT_EQ(k.source.find("? read_image"), std::string::npos) << k.source;
    EXPECT_NE(k.source.find("__kernel void " + k.entry + "("), std::string::npos);
    EXPECT_EQ(k.options.find("fast-relaxed"), std::string::npos);
    const int64_t tw = k.attrs.i("cl_tw");
    const int64_t m4 = (v.cc.M + 3) / 4;
    const int64_t ob = k.attrs.i("cl_ob");
    EXPECT_EQ(p.calls[0].global[0], (v.cc.OW() + tw - 1) / tw * v.cc.OH() * (m4 / ob));
    EXPECT_EQ(p.calls[0].global[1], v.cc.N);
    // Packing keeps the family and turns the weights into F16 PackedWeight in read order.
    ASSERT_TRUE(fam().pack_weights(p, 0, opts(p)));
    const plan::Kernel& kp = p.kernels[size_t(p.calls[0].kernel)];
    EXPECT_FALSE(kp.attrs.s("cl_pack").empty());
    EXPECT_NE(kp.name.find("_pk"), std::string::npos);
    const Buffer& wb = p.buffers[size_t(p.calls[0].inputs[1])];
    EXPECT_EQ(wb.dtype, DType::F16);
    EXPECT_EQ(wb.layout, Layout::PackedWeight);
    EXPECT_NE(kp.source.find("OPV_W4("), std::string::npos);
    EXPECT_EQ(kp.attrs.i("cl_gated", -1), 0);
  }
}

TEST(ConvImage, OneByOneReadsOneTexelPerInputBlockPerPixel) {
  ConvCase c1;
  c1.C = 64, c1.M = 64, c1.H = 32, c1.W = 64, c1.KH = c1.KW = 1, c1.pt = c1.pl = c1.pb = c1.pr = 0;
  CaseData d = make_data(c1, 2);
  plan::Plan p = conv_plan(c1, d);
  generate(p);
  const int64_t tw = p.kernels[0].attrs.i("cl_tw");
  EXPECT_EQ(p.kernels[0].attrs.i("cl_reads"), tw * 16);
  // Small maps get one pixel per work-item (stage-4 4x8 maps).
  ConvCase small = c1;
  small.H = 4, small.W = 8;
  CaseData ds = make_data(small, 3);
  plan::Plan ps = conv_plan(small, ds);
  generate(ps);
  EXPECT_EQ(ps.kernels[0].attrs.i("cl_tw"), 1);
}

TEST(ConvImage, RejectsLinearActivationsAndOtherOps) {
  ConvCase cc;
  CaseData d = make_data(cc, 4);
  plan::Plan p = conv_plan(cc, d);
  p.buffers[0].layout = Layout::Linear;
  EXPECT_FALSE(fam().supports(p, p.calls[0], opts(p)));
  plan::Plan q = conv_plan(cc, d);
  q.kernels[0].op = OpKind::Add;
  EXPECT_FALSE(fam().supports(q, q.calls[0], opts(q)));
}

TEST(ConvImage, Fp16MathVariantIsGuarded) {
  ConvCase cc;
  CaseData d = make_data(cc, 5);
  plan::Plan p = conv_plan(cc, d);
  p.kernels[0].attrs.set("cl_fp16_math", int64_t(1));
  generate(p);
  const plan::Kernel& k = p.kernels[0];
  EXPECT_NE(k.options.find("-DOPV_FP16_MATH"), std::string::npos);
  EXPECT_NE(k.source.find("#if defined(OPV_FP16_MATH) && defined(cl_khr_fp16)"), std::string::npos);
  if (!device().ok) return;
  // Without cl_khr_fp16 (PoCL) the same source is the fp32 path and still correct.
  bool pad_ok = false;
  Tensor y = run_on_device(p, d, &pad_ok);
  ErrorMetrics m = compare(y, reference_conv(cc, d));
  EXPECT_LE(m.rel_l2, 1e-2);
  EXPECT_LE(m.max_abs_rel, 1e-2);
}

// ---- 2. kernel level on the device --------------------------------------------------------------

class ConvImageDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!device().ok) GTEST_SKIP() << "no OpenCL device with image support";
  }
};

TEST_F(ConvImageDevice, OneByOne) { run_variant("1x1", "cl_conv1x1_", 8, 11); }
TEST_F(ConvImageDevice, Depthwise) { run_variant("dw", "cl_dwconv", 8, 12); }
TEST_F(ConvImageDevice, DepthwiseMultiplier2) { run_variant("dw_m2", "cl_dwconv", 6, 13); }
TEST_F(ConvImageDevice, Dense) { run_variant("dense", "cl_conv", 8, 14); }
TEST_F(ConvImageDevice, Grouped) { run_variant("group", "cl_", 8, 15); }

// Maps large enough for 2- and 4-pixel tiles (incl. a width that is not a multiple of the tile).
TEST_F(ConvImageDevice, WideTiles) {
  ConvCase c1;
  c1.N = 2, c1.C = 18, c1.M = 30, c1.H = 9, c1.W = 127, c1.KH = c1.KW = 1, c1.pt = c1.pl = c1.pb = c1.pr = 0;
  c1.post = 4;
  ConvCase dw;
  dw.N = 2, dw.C = 30, dw.M = 30, dw.group = 30, dw.H = 16, dw.W = 130, dw.KH = dw.KW = 3, dw.post = 5;
  ConvCase m2;
  m2.C = 12, m2.M = 24, m2.group = 12, m2.H = 40, m2.W = 250, m2.KH = m2.KW = 7, m2.sh = m2.sw = 2;
  m2.pt = m2.pl = m2.pb = m2.pr = 3, m2.post = 1;
  ConvCase st;
  st.N = 2, st.C = 24, st.M = 20, st.H = 32, st.W = 128, st.sh = st.sw = 2, st.post = 2, st.wdt = DType::F16;
  int64_t seed = 21;
  for (const ConvCase& cc : {c1, dw, m2, st}) {
    for (bool pack : {false, true}) check_case(cc, uint64_t(seed), pack, "cl_");
    ++seed;
  }
  // At least one of these used a tile wider than one pixel.
  CaseData d = make_data(c1, 1);
  plan::Plan p = conv_plan(c1, d);
  generate(p);
  EXPECT_GT(p.kernels[0].attrs.i("cl_tw"), 1);
  // Two output blocks per work-item (even block count, low busy threshold), with and without
  // a pixel tail, residual add and per-channel scale.
  ConvCase o2 = c1;
  o2.M = 29, o2.W = 30, o2.busy = 8;
  ConvCase o3 = st;
  o3.M = 16, o3.W = 37, o3.busy = 8, o3.post = 5;
  for (const ConvCase& cc : {o2, o3}) {
    CaseData dd = make_data(cc, 9);
    plan::Plan q = conv_plan(cc, dd);
    generate(q);
    EXPECT_EQ(q.kernels[0].attrs.i("cl_ob"), 2) << q.kernels[0].name;
    for (bool pack : {false, true}) check_case(cc, uint64_t(seed++), pack, "cl_conv");
  }
}

// ---- K-split variant ----------------------------------------------------------------------------

// Busy-items value of a desktop GPU far larger than any test map: every dense conv with
// enough (input block x tap) steps takes the K-split form.
constexpr int64_t kWideBusy = int64_t(1) << 30;

ConvCase random_ks_case(std::mt19937& g, bool three) {
  ConvCase cc;
  cc.N = rnd(g, 1, 2);
  cc.H = rnd(g, 1, 5);
  cc.W = rnd(g, 1, 6);
  cc.bias = rnd(g, 0, 3) != 0;
  cc.wdt = rnd(g, 0, 1) ? DType::F16 : DType::F32;
  cc.post = int(rnd(g, 0, 5));
  cc.M = rnd(g, 1, 23);
  cc.busy = kWideBusy;
  if (!three) {  // 1x1: >= 32 input blocks, C % 4 random; sometimes strided / padded
    cc.C = rnd(g, 125, 600);
    cc.KH = cc.KW = 1;
    cc.sh = cc.sw = rnd(g, 0, 2) ? 1 : 2;
    cc.pt = cc.pl = cc.pb = cc.pr = 0;
    if (rnd(g, 0, 3) == 0) cc.pt = 1, cc.pr = 1;
  } else {  // 3x3 (or 3x2) dense: >= 4 input blocks
    cc.C = rnd(g, 13, 130);
    cc.KH = 3;
    cc.KW = rnd(g, 0, 3) ? 3 : 2;
    cc.sh = rnd(g, 1, 2);
    cc.sw = rnd(g, 0, 3) ? cc.sh : 3 - cc.sh;
    cc.dh = cc.dw = rnd(g, 0, 3) ? 1 : 2;
    cc.H += 2 * cc.dh;
    cc.W += 2 * cc.dw;
    cc.pt = rnd(g, 0, cc.dh);
    cc.pl = rnd(g, 0, cc.dw);
    cc.pb = rnd(g, 0, cc.dh);
    cc.pr = rnd(g, 0, cc.dw);
  }
  return cc;
}

// Lanes the K-split form of cc uses (0: not split) and the kernel of the generated plan.
int64_t ks_lanes(const ConvCase& cc, plan::Kernel* out = nullptr, plan::Call* call = nullptr) {
  CaseData d = make_data(cc, 1);
  plan::Plan p = conv_plan(cc, d);
  generate(p);
  if (out) *out = p.kernels[0];
  if (call) *call = p.calls[0];
  return p.kernels[0].attrs.i("cl_ks", -1);
}

TEST(ConvImage, KSplitOnlyForWideTargetsAndLongReductions) {
  // Stage 3 of the fixture: 1536 -> 512 1x1 on 4x8, N = 2 (384 steps).
  ConvCase s3;
  s3.N = 2, s3.C = 1536, s3.M = 512, s3.H = 4, s3.W = 8, s3.KH = s3.KW = 1, s3.pt = s3.pl = s3.pb = s3.pr = 0;
  s3.post = 4;
  EXPECT_EQ(ks_lanes(s3), 0) << "default busy (Adreno 630): no local memory in conv kernels";
  s3.busy = 4096;
  EXPECT_EQ(ks_lanes(s3), 0);
  s3.busy = 65536;
  plan::Kernel k;
  plan::Call c;
  // Tiles of 4 px x 2 blocks: 4 rows x 2 tiles x 64 block pairs = 512 per image; 64 lanes
  // (384 / 64 = 6 steps each), two tiles per 128-item work-group.
  EXPECT_EQ(ks_lanes(s3, &k, &c), 64);
  EXPECT_NE(k.name.find("_tw4_ob2_ks64"), std::string::npos) << k.name;
  EXPECT_EQ(c.local[0], 128);
  EXPECT_EQ(c.local[1], 1);
  EXPECT_EQ(c.local[2], 0);
  EXPECT_EQ(c.global[0], 512 * 64);
  EXPECT_EQ(c.global[1], 2);
  EXPECT_NE(k.source.find("__local float4 red[1024];"), std::string::npos) << "2 tiles x 8 accumulators x 64";
  EXPECT_NE(k.source.find("barrier(CLK_LOCAL_MEM_FENCE)"), std::string::npos);
  EXPECT_EQ(k.attrs.i("cl_gated", -1), 0);
  EXPECT_EQ(k.attrs.i("cl_reads", 0), 6 * 4 + 1);  // 6 steps x 4 px + the residual texel
  // The lanes double while the GPU is short of work and each keeps >= 4 steps.
  s3.busy = 1024 * 8 + 1;
  EXPECT_EQ(ks_lanes(s3), 16);
  // Squeeze-excite 1x1 on a 1x1 map: 1024 -> 64 (256 steps) takes 64 lanes, 64 -> 1024 4 lanes.
  ConvCase se;
  se.C = 1024, se.M = 64, se.H = se.W = 1, se.KH = se.KW = 1, se.pt = se.pl = se.pb = se.pr = 0, se.busy = 65536;
  EXPECT_EQ(ks_lanes(se, &k), 64);
  EXPECT_NE(k.name.find("_tw1_ob2_ks64"), std::string::npos) << k.name;
  se.C = 64, se.M = 1024;
  EXPECT_EQ(ks_lanes(se), 4);
  // Enough tiles keeps one work-item per tile (and the wide register tile).
  ConvCase big = s3;
  big.busy = 65536;
  big.H = 64, big.W = 128, big.M = 64, big.C = 64;  // 64 rows x 32 tiles x 8 pairs x 2 = 32768 tiles
  EXPECT_EQ(ks_lanes(big, &k), 2);
  big.busy = 32768;
  EXPECT_EQ(ks_lanes(big, &k), 0);
  EXPECT_NE(k.name.find("_tw4_ob2_mul"), std::string::npos) << k.name;
  EXPECT_EQ(k.source.find("barrier"), std::string::npos);
  // Too few steps to split: 7 input blocks.
  ConvCase l = se;
  l.C = 28, l.M = 8;
  EXPECT_EQ(ks_lanes(l), 0);
  l.C = 32;  // 8 steps: two lanes of 4
  EXPECT_EQ(ks_lanes(l), 2);
  ConvCase d3 = l;  // 3x3: 4 blocks x 9 taps = 36 steps on a 3x3 map: 8 lanes
  d3.C = 13, d3.KH = d3.KW = 3, d3.H = d3.W = 3;
  EXPECT_EQ(ks_lanes(d3), 8);
  // Grouped / depthwise convs never split.
  ConvCase dw = d3;
  dw.C = dw.M = 256, dw.group = 256;
  EXPECT_EQ(ks_lanes(dw), 0);
}

class ConvImageKSplit : public ConvImageDevice {};

void run_ks(bool three, int cases, uint64_t seed, std::set<int64_t>* lanes) {
  std::mt19937 g{uint32_t(seed)};
  for (int i = 0; i < cases; ++i) {
    ConvCase cc = random_ks_case(g, three);
    const int64_t L = ks_lanes(cc);
    EXPECT_TRUE(L >= 2 && L <= 64 && (L & (L - 1)) == 0) << cc.str() << " lanes " << L;
    lanes->insert(L);
    for (bool pack : {false, true}) check_case(cc, seed * 1000 + uint64_t(i), pack, "cl_conv");
  }
}

TEST_F(ConvImageKSplit, OneByOneRandom) {
  std::set<int64_t> lanes;
  run_ks(false, 6, 31, &lanes);
  EXPECT_GE(lanes.size(), 2u);
}

TEST_F(ConvImageKSplit, DenseRandom) {
  std::set<int64_t> lanes;
  run_ks(true, 10, 32, &lanes);
  EXPECT_GE(lanes.size(), 3u) << "several lane counts";
}

// Fixed shapes: 64 lanes with a 2-channel tail block and residual add, a 1x1 map, 3x3 with
// N = 2 and row padding (rows forced to -1 between images), fp16 weights.
TEST_F(ConvImageKSplit, FixedShapes) {
  ConvCase a;
  a.N = 2, a.C = 1030, a.M = 30, a.H = 2, a.W = 3, a.KH = a.KW = 1, a.pt = a.pl = a.pb = a.pr = 0, a.post = 4;
  a.busy = kWideBusy;
  ConvCase b = a;
  b.N = 1, b.C = 1024, b.M = 64, b.H = b.W = 1, b.post = 2, b.wdt = DType::F16;
  ConvCase c = a;
  c.C = 47, c.M = 9, c.H = 4, c.W = 5, c.KH = c.KW = 3, c.pt = c.pl = c.pb = c.pr = 1, c.post = 5, c.bias = false;
  ConvCase d = c;
  d.N = 1, d.C = 130, d.sh = d.sw = 2, d.post = 4, d.wdt = DType::F16;
  uint64_t seed = 41;
  for (const ConvCase& cc : {a, b, c, d}) {
    plan::Kernel k;
    EXPECT_GT(ks_lanes(cc, &k), 0) << cc.str();
    for (bool pack : {false, true}) check_case(cc, seed, pack, "cl_conv");
    ++seed;
  }
}

// Depthwise 5x5 / 7x7 on a wide target: one lane per kernel row (multiplier 1 and 2, strides,
// pads, N = 2, residual post-ops), packed and unpacked.
TEST_F(ConvImageKSplit, DepthwiseRowSplitRandom) {
  std::mt19937 g{61};
  std::set<int64_t> rows;
  for (int i = 0; i < 8; ++i) {
    ConvCase cc;
    cc.N = rnd(g, 1, 2);
    cc.KH = rnd(g, 0, 1) ? 7 : 5;
    cc.KW = rnd(g, 0, 1) ? 7 : 5;
    const int64_t m = rnd(g, 1, 2);
    cc.C = rnd(g, 1, 20);
    cc.group = cc.C;
    cc.M = m * cc.C;
    cc.sh = cc.sw = rnd(g, 1, 2);
    cc.H = rnd(g, 1, 9);
    cc.W = rnd(g, 1, 11);
    cc.pt = cc.pb = cc.KH / 2;
    cc.pl = cc.pr = cc.KW / 2;
    if (rnd(g, 0, 2) == 0) cc.pb = 0, cc.pl = 1;
    cc.bias = rnd(g, 0, 3) != 0;
    cc.post = int(rnd(g, 0, 5));
    cc.wdt = rnd(g, 0, 1) ? DType::F16 : DType::F32;
    cc.busy = kWideBusy;
    plan::Kernel k;
    plan::Call c;
    EXPECT_EQ(ks_lanes(cc, &k, &c), cc.KH) << cc.str();
    EXPECT_EQ(c.local[0] % cc.KH, 0) << cc.str();
    EXPECT_EQ(c.global[0] % c.local[0], 0) << cc.str();
    rows.insert(cc.KH);
    for (bool pack : {false, true}) check_case(cc, 7000 + uint64_t(i), pack, "cl_dwconv");
  }
  EXPECT_EQ(rows.size(), 2u);
}

TEST(ConvImage, DepthwiseRowSplitOnlyForWideTargetsAndManyTaps) {
  ConvCase dw;
  dw.C = dw.M = dw.group = 64, dw.H = 8, dw.W = 16, dw.KH = dw.KW = 7, dw.pt = dw.pl = dw.pb = dw.pr = 3;
  EXPECT_EQ(ks_lanes(dw), 0) << "Adreno: no local memory";
  dw.busy = 65536;
  plan::Kernel k;
  plan::Call c;
  EXPECT_EQ(ks_lanes(dw, &k, &c), 7);
  EXPECT_NE(k.name.find("_ks7"), std::string::npos) << k.name;
  EXPECT_EQ(k.attrs.i("cl_reads", 0), 7) << "one kernel row of texels per lane";
  EXPECT_EQ(c.global[0], 7 * 16 * 8 * 16);
  EXPECT_EQ(c.local[0], 7 * 16) << "16 tiles of 7 lanes in a work-group";
  dw.KH = dw.KW = 3, dw.pt = dw.pl = dw.pb = dw.pr = 1;
  EXPECT_EQ(ks_lanes(dw), 0) << "9 taps: not split";
}

// F32 packed weights (compile --cl-weights f32) for every variant that packs: the 1x1 split
// form, dense 3x3, depthwise 7x7 split and unsplit, grouped.
TEST_F(ConvImageKSplit, F32PackedWeights) {
  ConvCase a;
  a.N = 2, a.C = 300, a.M = 24, a.H = 3, a.W = 5, a.KH = a.KW = 1, a.pt = a.pl = a.pb = a.pr = 0, a.post = 4;
  a.busy = kWideBusy;
  ConvCase b = a;
  b.C = 13, b.M = 10, b.KH = b.KW = 3, b.pt = b.pl = b.pb = b.pr = 1, b.busy = 0, b.post = 1;
  ConvCase c = a;
  c.C = c.M = c.group = 12, c.KH = c.KW = 7, c.H = 6, c.W = 9, c.pt = c.pl = c.pb = c.pr = 3, c.post = 5;
  ConvCase d = c;
  d.busy = 0;
  ConvCase e = b;
  e.C = 8, e.M = 12, e.group = 4;
  uint64_t seed = 81;
  for (ConvCase cc : {a, b, c, d, e}) {
    cc.wf32 = true;
    check_case(cc, seed++, true, "cl_");
  }
}

// Fixed reduction order: two runs give the same bits.
TEST_F(ConvImageKSplit, Deterministic) {
  ConvCase cc;
  cc.N = 2, cc.C = 301, cc.M = 17, cc.H = 3, cc.W = 4, cc.KH = cc.KW = 3, cc.busy = kWideBusy, cc.post = 1;
  CaseData d = make_data(cc, 51);
  plan::Plan p = conv_plan(cc, d);
  generate(p);
  ASSERT_EQ(p.kernels[0].attrs.i("cl_ks"), 64);
  bool pad_ok = false;
  Tensor y1 = run_on_device(p, d, &pad_ok);
  Tensor y2 = run_on_device(p, d, &pad_ok);
  EXPECT_EQ(std::memcmp(y1.raw(), y2.raw(), size_t(y1.nbytes())), 0);
  ErrorMetrics m = compare(y1, reference_conv(cc, d));
  EXPECT_LE(m.rel_l2, 1e-2);
  EXPECT_LE(m.max_abs_rel, 1e-2);
}

// ---- 3. end to end through lower(target opencl) and backend "opencl" ----------------------------

ir::Graph conv_graph(const ConvCase& cc, uint64_t seed) {
  ir::Graph g;
  g.source = "conv_image_test";
  int x = g.add_value({"x", DType::F32, {cc.N, cc.C, cc.H, cc.W}, nullptr});
  g.inputs.push_back(x);
  CaseData d = make_data(cc, seed);
  int w = g.add_const("w", d.w);
  int b = cc.bias ? g.add_const("b", d.b) : -1;
  std::vector<int> ins = {x, w, b};
  std::vector<PostOp> po = post_ops_of(cc);
  if (cc.post >= 4) {
    int r = -1;
    if (cc.post == 4) {
      r = g.add_value({"r", DType::F32, d.res.shape(), nullptr});
      g.inputs.push_back(r);
    }
    ins.push_back(r);
    ins.push_back(g.add_const("scale", d.scale));
  }
  // The conv writes an intermediate (images never are plan Outputs); a scale by 2 follows.
  const Shape ys = {cc.N, cc.M, cc.OH(), cc.OW()};
  int y = g.add_value({"y", DType::F32, ys, nullptr});
  g.add_node({"conv", OpKind::Conv, conv_attrs(cc), ins, {y}, po});
  int two = g.add_const("two", Tensor::scalar_f32(2.f));
  int z = g.add_value({"z", DType::F32, ys, nullptr});
  g.add_node({"scale", OpKind::Mul, {}, {y, two}, {z}, {}});
  g.outputs.push_back(z);
  g.validate();
  return g;
}

TEST(ConvImageEndToEnd, MatchesReferenceBackend) {
  std::unique_ptr<backend::Backend> cl, ref;
  try {
    cl = backend::create("opencl");
    ref = backend::create("reference");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "backend unavailable: " << e.what();
  }
  std::mt19937 gen(77);
  int ran = 0;
  for (const char* variant : {"1x1", "dw", "dw_m2", "dense", "group"}) {
    for (int i = 0; i < 2; ++i) {
      ConvCase cc = random_case(variant, gen);
      ir::Graph g = conv_graph(cc, uint64_t(100 + ran));
      for (bool pack : {false, true}) {
        SCOPED_TRACE(cc.str() + (pack ? " packed" : " unpacked"));
        CompileOptions o;
        o.target = "opencl";
        if (!pack) o.disable_passes = {"weight-pack"};
        plan::Plan p = lower(g, o);
        bool found = false;
        for (const plan::Call& c : p.calls) {
          const plan::Kernel& k = p.kernels[size_t(c.kernel)];
          if (k.op != OpKind::Conv) continue;
          found = true;
          EXPECT_EQ(k.attrs.s("cl_family"), "conv_image") << "conv fell back: " << k.name;
          EXPECT_EQ(k.attrs.i("cl_gated", -1), 0);
          EXPECT_EQ(k.attrs.has("cl_pack"), pack);
        }
        EXPECT_TRUE(found);
        CompileOptions ro;
        ro.target = "reference";
        plan::Plan rp = lower(g, ro);
        std::vector<Tensor> in;
        for (size_t i2 = 0; i2 < g.inputs.size(); ++i2)
          in.push_back(test::random_f32(g.values[size_t(g.inputs[i2])].shape, uint64_t(200 + ran + i2)));
        std::vector<const Tensor*> inp;
        for (const Tensor& t : in) inp.push_back(&t);
        Tensor y(DType::F32, {cc.N, cc.M, cc.OH(), cc.OW()}), yr(DType::F32, y.shape());
        cl->load(p);
        cl->run(inp, {&y});
        ref->load(rp);
        ref->run(inp, {&yr});
        ErrorMetrics m = compare(y, yr);
        EXPECT_TRUE(m.finite);
        EXPECT_LE(m.rel_l2, 1e-2);
        EXPECT_LE(m.max_abs_rel, 1e-2);
      }
      ++ran;
    }
  }
}

// The K-split form through lower(target opencl, Options::busy_items) and the backend (local size,
// batching of the identical calls of a graph with two convs of one shape).
TEST(ConvImageEndToEnd, KSplitMatchesReferenceBackend) {
  std::unique_ptr<backend::Backend> cl, ref;
  try {
    cl = backend::create("opencl");
    ref = backend::create("reference");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "backend unavailable: " << e.what();
  }
  std::mt19937 gen(78);
  for (int i = 0; i < 4; ++i) {
    ConvCase cc = random_ks_case(gen, i % 2 == 1);
    ir::Graph g = conv_graph(cc, uint64_t(300 + i));
    for (bool pack : {false, true}) {
      SCOPED_TRACE(cc.str() + (pack ? " packed" : " unpacked"));
      CompileOptions o;
      o.target = "opencl";
      o.pass_ctx.cl.busy_items = kWideBusy;
      if (!pack) o.disable_passes = {"weight-pack"};
      plan::Plan p = lower(g, o);
      int split = 0;
      for (const plan::Call& c : p.calls) {
        const plan::Kernel& k = p.kernels[size_t(c.kernel)];
        if (k.op != OpKind::Conv) continue;
        EXPECT_EQ(k.attrs.s("cl_family"), "conv_image") << "conv fell back: " << k.name;
        split += k.attrs.i("cl_ks", 0) > 0;
        EXPECT_GT(c.local[0], 0);
      }
      EXPECT_EQ(split, 1);
      CompileOptions ro;
      ro.target = "reference";
      plan::Plan rp = lower(g, ro);
      std::vector<Tensor> in;
      for (size_t i2 = 0; i2 < g.inputs.size(); ++i2)
        in.push_back(test::random_f32(g.values[size_t(g.inputs[i2])].shape, uint64_t(400 + i + i2)));
      std::vector<const Tensor*> inp;
      for (const Tensor& t : in) inp.push_back(&t);
      Tensor y(DType::F32, {cc.N, cc.M, cc.OH(), cc.OW()}), yr(DType::F32, y.shape());
      cl->load(p);
      cl->run(inp, {&y});
      ref->load(rp);
      ref->run(inp, {&yr});
      ErrorMetrics m = compare(y, yr);
      EXPECT_TRUE(m.finite);
      EXPECT_LE(m.rel_l2, 1e-2);
      EXPECT_LE(m.max_abs_rel, 1e-2);
    }
  }
}

}  // namespace
}  // namespace opv
