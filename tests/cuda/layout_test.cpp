// The cuda target's activation layout (plan pass "cuda-layout", target/cuda/layout.cpp; the NHWC
// families of codegen.cpp) on small networks built like the fixture's pieces, in f32 and f16:
//   trunk: 3x3 stride-2 stem (GELU) -> depthwise 3x3 -> 1x1 (GELU) -> 1x1 + residual -> a plan
//          Output (written through a Reorder) -> MaxPool -> Mul per channel (Sigmoid) -> Concat
//          on channels -> AveragePool -> GlobalAveragePool (an Output) and a Transpose (an op
//          with no NHWC form: a Reorder before it);
//   ffn:   depthwise 3x3 -> the ConvFFN (fc1, GELU, fc2 + residual), hidden split or not;
//   pack:  two uint8 frames -> Concat -> Cast with Sub/Div per channel (stays NCHW) -> 1x1 conv
//          (6 channels: element loads) -> depthwise 3x3 (an Output).
//   1. Everywhere (no GPU, no NVRTC needed): which layout auto / nchw / nhwc choose, where the
//      Reorders go, that Inputs/Outputs/Constants stay Linear, that the kernels of NHWC calls are
//      the NHWC forms (the tensor-core 1x1 reads W along K with plain ldmatrix), the option's
//      parsing and its plan meta; with NVRTC, every NHWC kernel compiles to PTX, and the fixture
//      (../shared/models) compiled with auto is NHWC at compute_80 with conversions only at the edges.
//   2. With a CUDA device (the H200 runs, scripts/device_gtest.sh): the NHWC plan's outputs match
//      the reference backend and the NCHW plan's. Skipped cleanly without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_driver.h"
#include "compiler/compile.h"
#include "core/metrics.h"
#include "plan/layout.h"
#include "target/cuda/codegen.h"
#include "target/cuda/cuda_abi.h"
#include "target/cuda/layout.h"
#include "cuda_device.h"
#include "test_util.h"

namespace opv {
namespace {

using plan::BufferKind;
using plan::Layout;
using plan::cuda::LayoutChoice;

// Builds a graph in `dt` with fp16-rounded constants (the f16 and f32 builds hold the same values).
struct Net {
  ir::Graph g;
  DType dt;
  uint64_t seed = 200;
  explicit Net(DType d) : dt(d) { g.source = "cuda_layout_test"; }
  int input(const Shape& s, DType t) {
    const int v = g.add_value({"x" + std::to_string(g.inputs.size()), t, s, nullptr});
    g.inputs.push_back(v);
    return v;
  }
  int constant(const Shape& s, float lo = -0.5f, float hi = 0.5f) {
    return g.add_const("c" + std::to_string(g.values.size()),
                       test::random_f32(s, seed++, lo, hi).cast(DType::F16).cast(dt));
  }
  int node(OpKind op, Attrs a, std::vector<int> ins, const Shape& out, std::vector<PostOp> po = {}) {
    const int y = g.add_value({"v" + std::to_string(g.values.size()), dt, out, nullptr});
    g.add_node({"n" + std::to_string(g.nodes.size()) + "_" + op_name(op), op, std::move(a), std::move(ins), {y},
                std::move(po)});
    return y;
  }
  int conv(int x, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t group, const Shape& out,
           std::vector<PostOp> po = {}, std::vector<int> extra = {}) {
    Attrs a;
    const int64_t pd = k / 2;
    a.set("group", group);
    a.set("strides", std::vector<int64_t>{stride, stride});
    a.set("pads", std::vector<int64_t>{pd, pd, pd, pd});
    a.set("dilations", std::vector<int64_t>{1, 1});
    const float ws = 1.0f / std::sqrt(float(cin / group * k * k));
    std::vector<int> ins{x, constant({cout, cin / group, k, k}, -ws, ws), constant({cout})};
    ins.insert(ins.end(), extra.begin(), extra.end());
    return node(OpKind::Conv, a, ins, out, std::move(po));
  }
};

Attrs pool_attrs(int64_t k, int64_t s, int64_t pd) {
  Attrs a;
  a.set("kernel", std::vector<int64_t>{k, k});
  a.set("strides", std::vector<int64_t>{s, s});
  a.set("pads", std::vector<int64_t>{pd, pd, pd, pd});
  a.set("dilations", std::vector<int64_t>{1, 1});
  return a;
}

ir::Graph trunk(DType dt) {
  Net n(dt);
  const int x = n.input({1, 8, 20, 24}, dt);
  const int t1 = n.conv(x, 8, 16, 3, 2, 1, {1, 16, 10, 12}, {PostOp{OpKind::Gelu}});
  const int t2 = n.conv(t1, 16, 16, 3, 1, 16, {1, 16, 10, 12});
  const int t3 = n.conv(t2, 16, 40, 1, 1, 1, {1, 40, 10, 12}, {PostOp{OpKind::Gelu}});
  const int t4 = n.conv(t3, 40, 16, 1, 1, 1, {1, 16, 10, 12}, {PostOp{OpKind::Add, 0, 0, 3}}, {t2});
  n.g.outputs.push_back(t4);  // a plan Output written by a domain call
  const int t5 = n.node(OpKind::MaxPool, pool_attrs(3, 2, 1), {t4}, {1, 16, 5, 6});
  const int t6 = n.node(OpKind::Mul, {}, {t5, n.constant({1, 16, 1, 1})}, {1, 16, 5, 6}, {PostOp{OpKind::Sigmoid}});
  Attrs axis;
  axis.set("axis", int64_t(1));
  const int t7 = n.node(OpKind::Concat, axis, {t5, t6}, {1, 32, 5, 6});
  const int t8 = n.node(OpKind::AveragePool, pool_attrs(2, 1, 0), {t7}, {1, 32, 4, 5});
  n.g.outputs.push_back(n.node(OpKind::GlobalAveragePool, {}, {t8}, {1, 32, 1, 1}));
  Attrs perm;
  perm.set("perm", std::vector<int64_t>{0, 2, 3, 1});
  n.g.outputs.push_back(n.node(OpKind::Transpose, perm, {t8}, {1, 4, 5, 32}));
  n.g.validate();
  return n.g;
}

ir::Graph pack(DType dt) {
  Net n(dt);
  const Shape xs{1, 3, 16, 20}, cs{1, 6, 16, 20};
  const int x0 = n.input(xs, DType::U8), x1 = n.input(xs, DType::U8);
  Attrs axis;
  axis.set("axis", int64_t(1));
  const int cat = n.g.add_value({"cat", DType::U8, cs, nullptr});
  n.g.add_node({"cat", OpKind::Concat, axis, {x0, x1}, {cat}, {}});
  Attrs to;
  to.set("to", int64_t(dt));
  const int y = n.node(OpKind::Cast, to, {cat, n.constant({1, 6, 1, 1}, 100.f, 150.f), n.constant({1, 6, 1, 1}, 40.f, 80.f)},
                       cs, {PostOp{OpKind::Sub, 0, 0, 1}, PostOp{OpKind::Div, 0, 0, 2}});
  const int z = n.conv(y, 6, 16, 1, 1, 1, {1, 16, 16, 20}, {PostOp{OpKind::Gelu}});
  n.g.outputs.push_back(n.conv(z, 16, 16, 3, 1, 16, {1, 16, 16, 20}));
  n.g.validate();
  return n.g;
}

// FastViT's ConvFFN on an NHWC map: depthwise 3x3 -> fc1 1x1 64 -> 192 (GELU) -> fc2 192 -> 64 +
// the depthwise output (an Output). compute_80 fp16: fc1 and fc2 as one NHWC ConvFFN launch; 16x32
// pixels split the hidden channels over 3 blocks a tile, 32x64 do not.
ir::Graph ffn(DType dt, int64_t H, int64_t W) {
  Net n(dt);
  const int x = n.input({1, 64, H, W}, dt);
  const int t = n.conv(x, 64, 64, 3, 1, 64, {1, 64, H, W});
  const int h = n.conv(t, 64, 192, 1, 1, 1, {1, 192, H, W}, {PostOp{OpKind::Gelu}});
  n.g.outputs.push_back(n.conv(h, 192, 64, 1, 1, 1, {1, 64, H, W}, {PostOp{OpKind::Add, 0, 0, 3}}, {t}));
  n.g.validate();
  return n.g;
}
ir::Graph ffn_split(DType dt) { return ffn(dt, 16, 32); }
ir::Graph ffn_whole(DType dt) { return ffn(dt, 32, 64); }

struct NetCase {
  const char* name;
  ir::Graph (*build)(DType);
};
const NetCase kNets[] = {{"trunk", trunk}, {"pack", pack}, {"ffn_split", ffn_split}, {"ffn_whole", ffn_whole}};

CompileOptions cuda_opts(const std::string& arch, LayoutChoice layout) {
  CompileOptions o;
  o.target = "cuda";
  o.pass_ctx.cuda.arch = arch;
  o.pass_ctx.cuda.layout = layout;
  return o;
}

// lower_graph + cuda-layout + cuda-codegen: the CUDA sources, no NVRTC needed.
plan::Plan generated(const ir::Graph& g, const std::string& arch, LayoutChoice layout) {
  const CompileOptions o = cuda_opts(arch, layout);
  plan::Plan p = lower_graph(g, o);
  o.pass_ctx.record("cuda", p.meta);
  plan::cuda::assign_layout(p, o.pass_ctx);
  plan::validate(p);
  plan::cuda::codegen(p, o.pass_ctx);
  plan::validate(p);
  return p;
}

int count_nhwc(const plan::Plan& p) {
  int n = 0;
  for (const plan::Buffer& b : p.buffers) n += b.layout == Layout::NHWC;
  return n;
}
int count_op(const plan::Plan& p, OpKind op) {
  int n = 0;
  for (const plan::Call& c : p.calls) n += p.kernels[size_t(c.kernel)].op == op;
  return n;
}

TEST(CudaLayout, AutoChoosesNhwcWhereTensorCore1x1sAre) {
  for (const NetCase& nc : kNets) {
    SCOPED_TRACE(nc.name);
    const plan::Plan f16_80 = generated(nc.build(DType::F16), "compute_80", LayoutChoice::Auto);
    EXPECT_EQ(f16_80.meta.s(plan::cuda::kLayoutPlanKey, ""), "nhwc");
    EXPECT_EQ(f16_80.meta.s("cuda_layout", ""), "auto") << "the option is recorded (not the default)";
    EXPECT_GE(count_nhwc(f16_80), 3);
    // No tensor-core 1x1 below compute_80, nor in f32: auto keeps NCHW.
    for (const plan::Plan& p : {generated(nc.build(DType::F16), "compute_75", LayoutChoice::Auto),
                                generated(nc.build(DType::F32), "compute_80", LayoutChoice::Auto)}) {
      EXPECT_EQ(p.meta.s(plan::cuda::kLayoutPlanKey, ""), "nchw");
      EXPECT_EQ(count_nhwc(p), 0);
      EXPECT_EQ(count_op(p, OpKind::Reorder), 0);
    }
    // nchw (the default, not recorded) changes nothing; nhwc builds the domain in f32 too.
    const plan::Plan nchw = generated(nc.build(DType::F16), "compute_80", LayoutChoice::Nchw);
    EXPECT_FALSE(nchw.meta.has("cuda_layout"));
    EXPECT_EQ(nchw.meta.s(plan::cuda::kLayoutPlanKey, ""), "nchw");
    EXPECT_EQ(count_nhwc(nchw), 0);
    const plan::Plan f32 = generated(nc.build(DType::F32), "compute_75", LayoutChoice::Nhwc);
    EXPECT_EQ(f32.meta.s(plan::cuda::kLayoutPlanKey, ""), "nhwc");
    EXPECT_GE(count_nhwc(f32), 2);
  }
}

TEST(CudaLayout, NhwcDomainEdgesAndKernels) {
  const plan::Plan p = generated(trunk(DType::F16), "compute_80", LayoutChoice::Nhwc);
  for (const plan::Buffer& b : p.buffers) {
    if (b.kind != BufferKind::Intermediate) {
      EXPECT_EQ(b.layout, Layout::Linear) << b.name;
    }
  }
  // Reorders: the Output t4 (written through an NHWC temporary) and the Transpose's input; the
  // first conv reads the Linear model input itself.
  EXPECT_EQ(count_op(p, OpKind::Reorder), 2) << plan::dump_plan_text(p);
  for (const plan::Call& c : p.calls) {
    const plan::Kernel& k = p.kernels[size_t(c.kernel)];
    bool nhwc = false;
    for (int b : c.outputs) nhwc |= p.buffers[size_t(b)].layout == Layout::NHWC;
    if (k.op == OpKind::Transpose) {
      for (int b : c.inputs) EXPECT_EQ(p.buffers[size_t(b)].layout, Layout::Linear) << "a Reorder before it";
    }
    if (k.op == OpKind::Reorder) {
      EXPECT_NE(k.source.find("out0[i] = in0["), std::string::npos) << "a typed copy";
      continue;
    }
    if (!nhwc) continue;
    EXPECT_TRUE(k.name.ends_with("_nhwc")) << k.name;
    EXPECT_TRUE(k.source.find("const opv_idx o1 = r_ % ") != std::string::npos ||
                k.source.find("opv_ldsm4(r, bb") != std::string::npos ||
                k.source.find("// implicit GEMM: ") != std::string::npos ||
                k.source.find("NHWC: 2 channels a thread") != std::string::npos)
        << k.name << ": NHWC coordinates, the NHWC GEMM, the implicit-GEMM conv or the NHWC depthwise conv";
  }
  // The tensor-core 1x1s in NHWC: B (the weights) along K, plain ldmatrix; no transposed load.
  int mma = 0;
  for (const plan::Kernel& k : p.kernels) {
    if (k.source.find("mma.sync") == std::string::npos || k.source.find("// implicit GEMM: ") != std::string::npos)
      continue;
    ++mma;
    EXPECT_NE(k.source.find("opv_ldsm4(r, bb"), std::string::npos) << k.name;
    EXPECT_EQ(k.source.find("opv_ldsm4t(r, bb"), std::string::npos) << k.name;
    EXPECT_NE(k.source.find("const unsigned short* Ag = in0"), std::string::npos) << "A = X: " << k.name;
  }
  EXPECT_EQ(mma, 2) << "both 1x1 convs on tensor cores";
  // The stem (3x3 stride 2, an implicit GEMM on the tensor cores from compute_80) reads the
  // Linear model input itself and stores NHWC (channel stride 1, no pixel pairs); the depthwise
  // conv takes the NHWC family.
  bool stem = false, dw = false;
  for (const plan::Kernel& k : p.kernels) {
    stem |= k.source.find("// implicit GEMM: ") != std::string::npos &&
            k.source.find("const unsigned short* Xn = in0") != std::string::npos &&
            k.source.find("(unsigned)hv[0] | ((unsigned)hv[1] << 16)") == std::string::npos;
    dw |= k.source.find("depthwise 3x3 NHWC: 2 channels a thread") != std::string::npos;
  }
  EXPECT_TRUE(stem);
  EXPECT_TRUE(dw);
  // compute_75 (no tensor cores): the stem computes 8 channels a thread and stores them with one
  // 16-byte NHWC store.
  bool stem75 = false;
  for (const plan::Kernel& k : generated(trunk(DType::F16), "compute_75", LayoutChoice::Nhwc).kernels)
    stem75 |= k.source.find("output channels per thread") != std::string::npos &&
              k.source.find("*(uint4*)(out0 + ") != std::string::npos;
  EXPECT_TRUE(stem75);
  // The pack stays NCHW (a domain starts at a conv); its first conv is a tensor-core 1x1, whose X
  // must be NHWC: a Reorder before it, and one after the last conv (a plan Output).
  const plan::Plan pk = generated(pack(DType::F16), "compute_80", LayoutChoice::Nhwc);
  EXPECT_EQ(count_op(pk, OpKind::Reorder), 2);
  EXPECT_EQ(pk.buffers[size_t(pk.calls[0].outputs[0])].layout, Layout::Linear) << "the pack (Concat + Cast)";
  EXPECT_EQ(pk.kernels[size_t(pk.calls[1].kernel)].op, OpKind::Reorder);
  // The ConvFFN in NHWC: one launch, X's tile read with plain ldmatrix, split or not (split: the
  // 8-warp form, each warp loading one pixel half's fragment, .x2).
  for (auto build : {ffn_split, ffn_whole}) {
    const plan::Plan f = generated(build(DType::F16), "compute_80", LayoutChoice::Nhwc);
    ASSERT_EQ(f.calls.size(), 3u) << "depthwise, ConvFFN, the Output's Reorder";
    const plan::Kernel& k = f.kernels[size_t(f.calls[1].kernel)];
    EXPECT_EQ(k.name, "ffn_64_192_64_f16_nhwc");
    EXPECT_NE(k.source.find(build == ffn_split ? "opv_ldsm2(r, Xs + " : "opv_ldsm4(r, Xs + "), std::string::npos);
    EXPECT_EQ(k.source.find("opv_ldsm4t(r, Xs + "), std::string::npos);
    EXPECT_EQ(k.source.find("opv_ldsm2t(r, Xs + "), std::string::npos);
    EXPECT_EQ(k.source.find("opv_ws[") != std::string::npos, build == ffn_split) << "the hidden split's workspace";
  }
  // In f32 the 1x1 is the fp32 tile family, which reads any layout: no Reorder before it.
  const plan::Plan pk32 = generated(pack(DType::F32), "compute_80", LayoutChoice::Nhwc);
  EXPECT_EQ(count_op(pk32, OpKind::Reorder), 1) << "only the Output's";
}

// The fixture (FastViT trunk, fp16) with --cuda-layout auto: NHWC at compute_80 (tensor-core 1x1s),
// NCHW at compute_75. In the NHWC plan every conv writes NHWC (or a layout-free [N,C,1,1]), the
// ConvFFNs are fused in NHWC, and the only conversions are NHWC -> NCHW at the domain's edges (no
// Reorder feeds a conv: the stem reads the NCHW input pack itself).
TEST(CudaLayout, FixtureAutoPlan) {
  const std::string dir = test::shared_models_dir();
  if (dir.empty()) GTEST_SKIP() << "no ../shared/models";
  std::string why;
  if (!plan::cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  const std::string model = dir + "/opvision_t12_fp16.onnx";
  const plan::Plan nchw = compile_onnx(model, cuda_opts("compute_75", LayoutChoice::Auto));
  EXPECT_EQ(nchw.meta.s(plan::cuda::kLayoutPlanKey, ""), "nchw");
  EXPECT_EQ(count_nhwc(nchw), 0);
  const plan::Plan p = compile_onnx(model, cuda_opts("compute_80", LayoutChoice::Auto));
  EXPECT_EQ(p.meta.s(plan::cuda::kLayoutPlanKey, ""), "nhwc");
  int convs = 0, ffn = 0, reorders = 0;
  for (size_t ci = 0; ci < p.calls.size(); ++ci) {
    const plan::Call& c = p.calls[ci];
    const plan::Kernel& k = p.kernels[size_t(c.kernel)];
    const plan::Buffer& y = p.buffers[size_t(c.outputs[0])];
    if (k.op == OpKind::Reorder) {
      ++reorders;
      EXPECT_EQ(p.buffers[size_t(c.inputs[0])].layout, Layout::NHWC) << c.label;
      EXPECT_EQ(y.layout, Layout::Linear) << c.label;
      for (const plan::Call& r : p.calls) {
        for (int b : r.inputs) {
          if (b == c.outputs[0]) {
            EXPECT_NE(p.kernels[size_t(r.kernel)].op, OpKind::Conv) << r.label;
          }
        }
      }
    }
    if (k.op != OpKind::Conv) continue;
    ++convs;
    ffn += k.name.starts_with("ffn_") && k.name.ends_with("_nhwc");
    if (!plan::layout_free(y.shape)) {
      EXPECT_EQ(y.layout, Layout::NHWC) << c.label;
    }
  }
  EXPECT_GT(convs, 20);
  EXPECT_GT(ffn, 0) << "ConvFFNs fused in NHWC";
  EXPECT_GT(reorders, 0);
  EXPECT_LE(reorders, 2) << "the heads' Reshape and the output";
}

TEST(CudaLayout, OptionParsingAndMeta) {
  EXPECT_EQ(plan::cuda::parse_layout_choice("auto"), LayoutChoice::Auto);
  EXPECT_EQ(plan::cuda::parse_layout_choice("nhwc"), LayoutChoice::Nhwc);
  EXPECT_EQ(plan::cuda::parse_layout_choice("nchw"), LayoutChoice::Nchw);
  EXPECT_NE(test::error_of([] { plan::cuda::parse_layout_choice("NHWC"); }).find("auto, nchw or nhwc"),
            std::string::npos);
  Attrs meta;
  plan::cuda::Options o;
  EXPECT_EQ(o.layout, LayoutChoice::Nchw) << "the default";
  o.layout = LayoutChoice::Nhwc;
  o.record(meta);
  EXPECT_EQ(meta.s("cuda_layout", ""), "nhwc");
  EXPECT_EQ(plan::cuda::Options::from_meta(meta).layout, LayoutChoice::Nhwc);
  meta.set("cuda_layout", std::string("sideways"));
  EXPECT_THROW(plan::cuda::Options::from_meta(meta), Error);
}

TEST(CudaLayout, NhwcKernelsCompileWithNvrtc) {
  std::string why;
  if (!plan::cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  for (const NetCase& nc : kNets)
    for (DType dt : {DType::F16, DType::F32})
      for (const char* arch : {"compute_75", "compute_80"}) {
        SCOPED_TRACE(std::string(nc.name) + " " + dtype_name(dt) + " " + arch);
        const plan::Plan p = lower(nc.build(dt), cuda_opts(arch, LayoutChoice::Nhwc));
        EXPECT_GT(count_nhwc(p), 0);
        for (const plan::Kernel& k : p.kernels) EXPECT_EQ(k.options, plan::cuda::kPtxFormat) << k.name;
      }
}

// Runs plan p on backend b with inputs `ins` (converted to each input's dtype); outputs as f32.
std::vector<Tensor> run(backend::Backend& b, const plan::Plan& p, const std::vector<Tensor>& ins) {
  std::vector<Tensor> in, out;
  for (size_t i = 0; i < p.inputs.size(); ++i) in.push_back(ins[i].cast(p.buffers[size_t(p.inputs[i])].dtype));
  for (int o : p.outputs) out.emplace_back(p.buffers[size_t(o)].dtype, p.buffers[size_t(o)].shape);
  std::vector<const Tensor*> ip;
  std::vector<Tensor*> op;
  for (auto& t : in) ip.push_back(&t);
  for (auto& t : out) op.push_back(&t);
  b.load(p);
  b.run(ip, op);
  std::vector<Tensor> r;
  for (auto& t : out) r.push_back(t.cast(DType::F32));
  return r;
}

TEST(CudaLayout, NhwcMatchesReferenceAndNchwOnTheDevice) {
  std::unique_ptr<backend::Backend> cu;
  if (std::string why = test::open_cuda(&cu); !why.empty()) GTEST_SKIP() << why;
  auto ref = backend::create("reference");
  uint64_t seed = 300;
  for (const NetCase& nc : kNets)
    for (DType dt : {DType::F16, DType::F32})
      for (const char* arch : {"compute_75", "compute_80"}) {
        SCOPED_TRACE(std::string(nc.name) + " " + dtype_name(dt) + " " + arch);
        CompileOptions ro;
        ro.target = "reference";
        const plan::Plan rp = lower(nc.build(DType::F32), ro);
        std::vector<Tensor> ins;
        for (int i : rp.inputs) {
          const plan::Buffer& b = rp.buffers[size_t(i)];
          ins.push_back(b.dtype == DType::U8 ? test::random_f32(b.shape, seed++, 0.f, 255.f).cast(DType::U8)
                                             : test::random_f32(b.shape, seed++).cast(DType::F16).cast(DType::F32));
        }
        const std::vector<Tensor> want = run(*ref, rp, ins);
        const plan::Plan nhwc = lower(nc.build(dt), cuda_opts(arch, LayoutChoice::Nhwc));
        const plan::Plan nchw = lower(nc.build(dt), cuda_opts(arch, LayoutChoice::Nchw));
        ASSERT_GT(count_nhwc(nhwc), 0);
        const std::vector<Tensor> a = run(*cu, nhwc, ins), b = run(*cu, nchw, ins);
        ASSERT_EQ(a.size(), want.size());
        const double tol = dt == DType::F16 ? 5e-3 : 1e-5;
        for (size_t o = 0; o < a.size(); ++o) {
          EXPECT_LT(compare(a[o], want[o]).rel_l2, tol) << "output " << o << " vs the reference";
          EXPECT_LT(compare(a[o], b[o]).rel_l2, tol) << "output " << o << " vs the NCHW plan";
        }
        // Replays agree bit for bit (split-K counters reset, no race).
        const std::vector<Tensor> again = run(*cu, nhwc, ins);
        for (size_t o = 0; o < a.size(); ++o) EXPECT_EQ(compare(again[o], a[o]).max_abs_rel, 0.0) << "output " << o;
      }
}

// ---- programmatic dependent launch (Options::pdl, cuda_abi.h "cuda_pdl") -------------------------

using plan::cuda::PdlMode;

CompileOptions pdl_opts(const std::string& arch, PdlMode pdl) {
  CompileOptions o = cuda_opts(arch, LayoutChoice::Nchw);
  o.pass_ctx.cuda.pdl = pdl;
  return o;
}

// How a kernel without a weight prologue opens (codegen_internal.h kEntryOpen): the probe's
// declaration (nothing without --cuda-tune probe=1), then the entry, the PDL wait.
const std::string kOpensWithWait = ") {\n  OPV_PROBE_OPEN();\n  OPV_KERNEL_ENTRY();";

// From compute_90 every kernel carries the prologue (attr and PTX: the wait; with early the release
// of the dependents before it), none below it or with --cuda-pdl off (on is the default: off and
// early are recorded in the meta). Kernels with a weight prologue state it after their weights' loads.
TEST(CudaPdl, KernelsCarryThePrologueFromCompute90) {
  std::string why;
  if (!plan::cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  for (const NetCase& nc : kNets) {
    SCOPED_TRACE(nc.name);
    const plan::Plan on = lower(nc.build(DType::F16), pdl_opts("compute_90", PdlMode::On));
    const plan::Plan early = lower(nc.build(DType::F16), pdl_opts("compute_90", PdlMode::Early));
    EXPECT_FALSE(on.meta.has("cuda_pdl")) << "on is the default";
    EXPECT_EQ(early.meta.i("cuda_pdl", 0), 2);
    EXPECT_EQ(plan::cuda::Options::from_meta(early.meta).pdl, PdlMode::Early);
    for (const plan::Plan* p : {&on, &early})
      for (const plan::Kernel& k : p->kernels) {
        EXPECT_EQ(k.attrs.i("cuda_pdl", 0), p == &on ? 1 : 2) << k.name;
        const size_t launch = k.source.find("griddepcontrol.launch_dependents"), wait = k.source.find("griddepcontrol.wait");
        ASSERT_NE(wait, std::string::npos) << k.name;
        if (p == &on) {
          EXPECT_EQ(launch, std::string::npos) << k.name << ": dependents launch as the blocks exit";
        } else {
          EXPECT_LT(launch, wait) << k.name << ": the dependents are released first";
        }
      }
    // No global load before the wait, but in the weight prologues (PrefetchLoadsOnlyConstantsBeforeTheWait;
    // cudasim checks on every launch that such loads are of memory no kernel writes).
    int opening = 0;  // kernels that open with the wait
    for (const plan::Plan* p : {&on, &early})
      for (const plan::Call& c : p->calls) {
        const plan::Kernel& k = p->kernels[size_t(c.kernel)];
        if (plan::cuda::generate(*p, c).source.find(kOpensWithWait) == std::string::npos) continue;
        ++opening;
        const size_t wait = k.source.find("griddepcontrol.wait");
        EXPECT_EQ(k.source.find("ld.global"), k.source.find("ld.global", wait)) << k.name << ": no global load before the wait";
      }
    EXPECT_GT(opening, 0) << "some kernel opens with the wait";
    // tail: the wait first, the release after the main loop in the kernels that have one
    const plan::Plan tail = lower(nc.build(DType::F16), pdl_opts("compute_90", PdlMode::Tail));
    EXPECT_EQ(tail.meta.i("cuda_pdl", 0), 4);
    int released = 0;
    for (const plan::Kernel& k : tail.kernels) {
      EXPECT_EQ(k.attrs.i("cuda_pdl", 0), 4) << k.name;
      const size_t launch = k.source.find("griddepcontrol.launch_dependents"), wait = k.source.find("griddepcontrol.wait");
      ASSERT_NE(wait, std::string::npos) << k.name;
      if (launch != std::string::npos) {
        EXPECT_LT(wait, launch) << k.name;
        ++released;
      }
    }
    EXPECT_GT(released, 0) << "kernels with a main loop release the next one after it";
    const plan::Plan off = lower(nc.build(DType::F16), pdl_opts("compute_90", PdlMode::Off));
    EXPECT_EQ(off.meta.i("cuda_pdl", -1), 0) << "off is recorded";
    EXPECT_EQ(plan::cuda::Options().pdl, PdlMode::On) << "on is the default";
    EXPECT_EQ(plan::cuda::Options::from_meta(off.meta).pdl, PdlMode::Off);
    EXPECT_EQ(plan::cuda::Options::from_meta(on.meta).pdl, PdlMode::On);
    const plan::Plan old = lower(nc.build(DType::F16), pdl_opts("compute_80", PdlMode::On));
    for (const plan::Plan* p : {&off, &old})
      for (const plan::Kernel& k : p->kernels) {
        EXPECT_EQ(k.attrs.i("cuda_pdl", 0), 0) << k.name;
        EXPECT_EQ(k.source.find("griddepcontrol"), std::string::npos) << k.name;
      }
  }
}

// A 1x1 conv whose weights are a graph input (written by an upload every run, a kernel's output in
// general), then one with constant weights reading its output: with --cuda-pdl prefetch the first
// must wait before any load, the second may load its weights before the wait.
ir::Graph dynamic_weights(DType dt) {
  Net n(dt);
  const int x = n.input({1, 16, 8, 16}, dt), w = n.input({32, 16, 1, 1}, dt);
  Attrs a;
  a.set("group", int64_t(1));
  a.set("strides", std::vector<int64_t>{1, 1});
  a.set("pads", std::vector<int64_t>{0, 0, 0, 0});
  a.set("dilations", std::vector<int64_t>{1, 1});
  const int y = n.node(OpKind::Conv, a, {x, w, n.constant({32})}, {1, 32, 8, 16}, {PostOp{OpKind::Gelu}});
  n.g.outputs.push_back(n.conv(y, 32, 16, 1, 1, 1, {1, 16, 8, 16}));
  n.g.validate();
  return n.g;
}

// --cuda-pdl prefetch: the kernels with a weight prologue (1x1 and KxK tensor-core convs, the
// ConvFFN, depthwise pairs, GEMV chains) open without the wait and state it after loading plan
// Constants alone; the wait comes before the release of the dependents; a kernel whose weights are
// not a Constant keeps the wait first.
TEST(CudaPdl, PrefetchLoadsOnlyConstantsBeforeTheWait) {
  std::string why;
  if (!plan::cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  const std::string first = kOpensWithWait;
  std::vector<NetCase> nets(std::begin(kNets), std::end(kNets));
  nets.push_back({"dynamic_weights", dynamic_weights});
  int late = 0;
  for (const NetCase& nc : nets) {
    SCOPED_TRACE(nc.name);
    const plan::Plan p = lower(nc.build(DType::F16), pdl_opts("compute_90", PdlMode::Prefetch));
    EXPECT_EQ(p.meta.i("cuda_pdl", 0), 3);
    EXPECT_EQ(plan::cuda::Options::from_meta(p.meta).pdl, PdlMode::Prefetch);
    for (const plan::Kernel& k : p.kernels) {
      EXPECT_EQ(k.attrs.i("cuda_pdl", 0), 3) << k.name;
      const size_t wait = k.source.find("griddepcontrol.wait"), launch = k.source.find("griddepcontrol.launch_dependents");
      ASSERT_NE(wait, std::string::npos) << k.name;
      EXPECT_LT(wait, launch) << k.name << ": the dependents are released after the wait";
    }
    for (const plan::Call& c : p.calls) {
      const plan::Kernel& k = p.kernels[size_t(c.kernel)];
      const std::string src = plan::cuda::generate(p, c).source;  // the C++ the stored PTX came from
      ASSERT_FALSE(src.empty()) << k.name;
      const bool opens_with_wait = src.find(first) != std::string::npos;
      EXPECT_NE(src.find("OPV_KERNEL_ENTRY();"), std::string::npos) << k.name;
      if (!opens_with_wait) ++late;
      if (std::string(nc.name) == "dynamic_weights" && c.inputs.size() > 1 &&
          p.buffers[size_t(c.inputs[1])].kind == plan::BufferKind::Input) {
        EXPECT_TRUE(opens_with_wait) << k.name << ": its weights are an input";
      }
    }
  }
  EXPECT_GE(late, 4) << "kernels with a weight prologue";
}

// Inputs that kernels write are never read through the read-only path (ld.global.nc) in kernels with
// the prologue: ptxas may schedule such a load above griddepcontrol.wait (the fixture's heads kernel
// read its vector before the GEMV before it had written it, with --cuda-pdl early on an H100,
// session 35). Their parameters drop __restrict__ there (OPV_IN_RESTRICT); plan Constants keep it.
// Without the prologue the same kernels do read them through it (the check can fail).
TEST(CudaPdl, InputsKernelsWriteAreNotReadOnlyLoadsUnderThePrologue) {
  std::string why;
  if (!plan::cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  int checked = 0, nc_without = 0;
  for (const NetCase& nc : kNets) {
    SCOPED_TRACE(nc.name);
    for (const PdlMode mode : {PdlMode::On, PdlMode::Early, PdlMode::Off}) {
      const plan::Plan p = lower(nc.build(DType::F16), pdl_opts("compute_90", mode));
      for (const plan::Call& c : p.calls) {
        const plan::Kernel& k = p.kernels[size_t(c.kernel)];
        const std::string src = plan::cuda::generate(p, c).source;
        bool constants = false;
        for (size_t j = 0; j < c.inputs.size(); ++j) {
          if (c.inputs[j] < 0) continue;
          const bool weight = p.buffers[size_t(c.inputs[j])].kind == plan::BufferKind::Constant;
          constants |= weight;
          const std::string name = " in" + std::to_string(j);
          const size_t at = src.find(name + ",") != std::string::npos ? src.find(name + ",") : src.find(name + ")");
          ASSERT_NE(at, std::string::npos) << k.name << name;
          const std::string decl = src.substr(src.rfind("const ", at), at - src.rfind("const ", at));
          EXPECT_NE(decl.find(weight ? "__restrict__" : "OPV_IN_RESTRICT"), std::string::npos) << k.name << ": " << decl;
        }
        if (constants) continue;  // their weights are read-only loads
        if (mode == PdlMode::Off) {
          nc_without += k.source.find("ld.global.nc") != std::string::npos;
        } else {
          EXPECT_EQ(k.source.find("ld.global.nc"), std::string::npos) << k.name << " (" << plan::cuda::pdl_mode_name(mode) << ")";
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 0) << "kernels that read only buffers kernels write";
  EXPECT_GT(nc_without, 0) << "without the prologue such kernels read them through the read-only path";
}

// The programmatic edges change when blocks start, never what they compute: each net with them (on
// and early) and without them gives the same bytes, replayed with fresh inputs. On a GPU (sm_90+)
// this is the race test of the prologue; on cudasim, which runs launches one by one, it checks that
// no kernel touches global memory before its wait (the simulator faults such an access).
TEST(CudaPdl, ProgrammaticEdgesMatchOrdinaryOnesBitForBitOnTheDevice) {
  std::unique_ptr<backend::Backend> bp, bo;
  if (std::string why = test::open_cuda(&bp); !why.empty()) GTEST_SKIP() << why;
  if (std::string why = test::open_cuda(&bo); !why.empty()) GTEST_SKIP() << why;
  if (backend::cu::select_device("").cc_major < 9) GTEST_SKIP() << "programmatic dependent launch needs an sm_90+ device";
  uint64_t seed = 500;
  // (cudasim runs launches one by one: early and on differ only in a no-op there)
  // (prefetch: the weight prologues' loads before the wait, which cudasim checks are of memory no
  // kernel writes)
  const std::vector<PdlMode> modes = test::on_cudasim()
                                         ? std::vector<PdlMode>{PdlMode::On, PdlMode::Prefetch}
                                         : std::vector<PdlMode>{PdlMode::On, PdlMode::Early, PdlMode::Prefetch,
                                                                PdlMode::Tail};
  std::vector<NetCase> nets(std::begin(kNets), std::end(kNets));
  nets.push_back({"dynamic_weights", dynamic_weights});
  for (const PdlMode mode : modes)
    for (const NetCase& nc : nets)
      for (DType dt : {DType::F16, DType::F32}) {
        SCOPED_TRACE(std::string(nc.name) + " " + dtype_name(dt) + " pdl " + plan::cuda::pdl_mode_name(mode));
        const plan::Plan pp = lower(nc.build(dt), pdl_opts("compute_90", mode));
        const plan::Plan po = lower(nc.build(dt), pdl_opts("compute_90", PdlMode::Off));
        bp->load(pp);
        bo->load(po);
        const backend::CudaLoadInfo* ip = backend::cuda_load_info(*bp);
        const backend::CudaLoadInfo* io = backend::cuda_load_info(*bo);
        ASSERT_TRUE(ip && io);
        EXPECT_EQ(io->pdl_edges, 0);
        if (pp.calls.size() > 1) {
          EXPECT_GT(ip->pdl_edges, 0) << "the net's kernels follow one another";
        }
        EXPECT_EQ(ip->graph_edges, io->graph_edges) << "the same edges, only their kind differs";
        for (int rep = 0; rep < test::device_replays(); ++rep) {
          std::vector<Tensor> in, a, b;
          std::vector<const Tensor*> ins;
          std::vector<Tensor*> oa, ob;
          for (int i : pp.inputs) {
            const plan::Buffer& x = pp.buffers[size_t(i)];
            in.push_back(x.dtype == DType::U8 ? test::random_f32(x.shape, seed++, 0.f, 255.f).cast(DType::U8)
                                              : test::random_f32(x.shape, seed++, -2.f, 2.f).cast(x.dtype));
          }
          for (int o : pp.outputs) {
            a.emplace_back(pp.buffers[size_t(o)].dtype, pp.buffers[size_t(o)].shape);
            b.emplace_back(pp.buffers[size_t(o)].dtype, pp.buffers[size_t(o)].shape);
          }
          for (const Tensor& t : in) ins.push_back(&t);
          for (Tensor& t : a) oa.push_back(&t);
          for (Tensor& t : b) ob.push_back(&t);
          bp->run(ins, oa);
          bo->run(ins, ob);
          for (size_t o = 0; o < a.size(); ++o) {
            ASSERT_EQ(a[o].nbytes(), b[o].nbytes());
            EXPECT_EQ(std::memcmp(a[o].bytes().data(), b[o].bytes().data(), a[o].nbytes()), 0)
                << "output " << o << ", replay " << rep;
          }
        }
      }
}

}  // namespace
}  // namespace opv
