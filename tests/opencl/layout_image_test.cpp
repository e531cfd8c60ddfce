// Tests of plan pass "layout-image" (src/target/opencl/layout_image.cpp) on small graphs:
//  1. Structure (no device needed): which buffers become ImageRGBA/F16, where Reorder calls go,
//     that a Reshape reads the image directly, idempotence, the plan validates.
//  2. Numerics (OpenCL device needed): the whole opencl pipeline vs the reference backend.
#include <gtest/gtest.h>

#include "image_test_util.h"
#include "passes/graph_builder.h"

namespace opv::test {
namespace {

using plan::Buffer;
using plan::BufferKind;
using plan::Layout;

int conv1x1(GraphBuilder& b, int x, int64_t cin, int64_t cout, uint64_t seed, std::vector<PostOp> post = {}) {
  int w = b.random_const("w" + std::to_string(seed), {cout, cin, 1, 1}, seed, -0.5f, 0.5f);
  int bias = b.random_const("b" + std::to_string(seed), {cout}, seed + 1, -0.2f, 0.2f);
  int y = b.conv(x, w, bias, 1, {0, 0, 0, 0});
  b.g.nodes.back().post_ops = std::move(post);
  b.g.nodes.back().name = "conv" + std::to_string(seed);
  return y;
}

int conv3x3(GraphBuilder& b, int x, int64_t cin, int64_t cout, uint64_t seed, std::vector<PostOp> post = {}) {
  int w = b.random_const("w" + std::to_string(seed), {cout, cin, 3, 3}, seed, -0.3f, 0.3f);
  int bias = b.random_const("b" + std::to_string(seed), {cout}, seed + 1, -0.2f, 0.2f);
  int y = b.conv(x, w, bias);
  b.g.nodes.back().post_ops = std::move(post);
  b.g.nodes.back().name = "conv" + std::to_string(seed);
  return y;
}

int named(GraphBuilder& b, OpKind op, std::vector<int> ins, const std::string& name, Attrs a = {},
          const Shape* shape = nullptr) {
  return b.node(op, ins, std::move(a), shape, name);
}

// The opencl plan after lowering and layout-image only (what the pass produced).
plan::Plan after_pass(const ir::Graph& g) {
  CompileOptions o;
  o.target = "opencl";
  plan::Plan p = lower_graph(g, o);
  EXPECT_TRUE(plan::assign_image_layout(p, {}));
  plan::validate(p);
  return p;
}

const Buffer& out_of(const plan::Plan& p, const std::string& label) {
  for (const plan::Call& c : p.calls)
    if (c.label == label) return p.buffers[size_t(c.outputs[0])];
  ADD_FAILURE() << "no call " << label << "\n" << p.dump();
  return p.buffers[0];
}

const plan::Call* call_of(const plan::Plan& p, const std::string& label) {
  for (const plan::Call& c : p.calls)
    if (c.label == label) return &c;
  return nullptr;
}

bool is_image(const Buffer& b) { return b.layout == Layout::ImageRGBA && b.dtype == DType::F16; }

// x[1,6,8,8] -> conv3x3 relu -> gap -> flatten -> gemm -> y
ir::Graph conv_gap_gemm() {
  GraphBuilder b;
  b.g.source = "test";
  int x = b.input("x", {1, 6, 8, 8});
  int c = conv3x3(b, x, 6, 12, 1, {PostOp{OpKind::Relu}});
  int r = named(b, OpKind::Relu, {c}, "relu");
  int gap = named(b, OpKind::GlobalAveragePool, {r}, "gap");
  const Shape flat = {1, 12};
  int f = named(b, OpKind::Reshape, {gap}, "flatten", {}, &flat);
  int w = b.random_const("fc_w", {5, 12}, 3);
  int fb = b.random_const("fc_b", {5}, 4);
  Attrs ga;
  ga.set("transB", int64_t(1));
  int y = named(b, OpKind::Gemm, {f, w, fb}, "gemm", ga);
  b.output(y);
  return b.g;
}

TEST(LayoutImage, ConvReluGapFlattenGemm) {
  ir::Graph g = conv_gap_gemm();
  plan::Plan p = after_pass(g);
  EXPECT_TRUE(is_image(out_of(p, "conv1")));
  EXPECT_TRUE(is_image(out_of(p, "relu")));
  EXPECT_TRUE(is_image(out_of(p, "gap")));
  EXPECT_EQ(out_of(p, "flatten").layout, Layout::Linear);
  EXPECT_EQ(out_of(p, "gemm").layout, Layout::Linear);
  // One Reorder: the Input x into the image domain, right before the conv; the Flatten reads
  // the GAP image itself.
  EXPECT_EQ(count_op(p, OpKind::Reorder), 1) << p.dump();
  ASSERT_EQ(p.kernels[size_t(p.calls[0].kernel)].op, OpKind::Reorder);
  EXPECT_EQ(p.calls[0].inputs[0], p.inputs[0]);
  EXPECT_EQ(p.buffers[size_t(p.buffers.size() > 0 ? p.inputs[0] : 0)].layout, Layout::Linear);
  EXPECT_EQ(p.buffers[size_t(call_of(p, "flatten")->inputs[0])].layout, Layout::ImageRGBA);
  // Weights and bias stay Linear constants.
  for (const Buffer& b : p.buffers)
    if (b.kind != BufferKind::Intermediate) {
      EXPECT_EQ(b.layout, Layout::Linear) << b.name;
    }
  // Idempotent.
  plan::Plan q = p;
  EXPECT_FALSE(plan::assign_image_layout(q, {}));
  EXPECT_EQ(q.calls.size(), p.calls.size());
}

// x -> conv a -> conv b -> Add(b, a) -> y (plan Output), and a Transpose reading a twice.
ir::Graph residual() {
  GraphBuilder b;
  b.g.source = "test";
  int x = b.input("x", {2, 5, 6, 7});
  int a = conv3x3(b, x, 5, 8, 11);
  int c = conv1x1(b, a, 8, 8, 13, {PostOp{OpKind::Gelu}});
  int s = named(b, OpKind::Add, {c, a}, "add");
  b.output(s);
  Attrs t;
  t.set("perm", std::vector<int64_t>{0, 2, 3, 1});
  int t1 = named(b, OpKind::Transpose, {a}, "t1", t);
  int t2 = named(b, OpKind::Transpose, {a}, "t2", t);
  b.output(t1);
  b.output(t2);
  return b.g;
}

TEST(LayoutImage, ResidualAddAndLinearConsumers) {
  ir::Graph g = residual();
  plan::Plan p = after_pass(g);
  EXPECT_TRUE(is_image(out_of(p, "conv11")));
  EXPECT_TRUE(is_image(out_of(p, "conv13")));
  // The Add joins the domain; it writes an image temporary that a Reorder turns into the Output.
  const plan::Call* add = call_of(p, "add");
  ASSERT_NE(add, nullptr);
  EXPECT_TRUE(is_image(p.buffers[size_t(add->outputs[0])]));
  EXPECT_TRUE(is_image(p.buffers[size_t(add->inputs[0])]));
  EXPECT_TRUE(is_image(p.buffers[size_t(add->inputs[1])]));
  // Reorders: x in, add's output out, conv a's image out once for both Transposes.
  EXPECT_EQ(count_op(p, OpKind::Reorder), 3) << p.dump();
  const plan::Call* t1 = call_of(p, "t1");
  const plan::Call* t2 = call_of(p, "t2");
  ASSERT_TRUE(t1 && t2);
  EXPECT_EQ(t1->inputs[0], t2->inputs[0]);
  EXPECT_EQ(p.buffers[size_t(t1->inputs[0])].layout, Layout::Linear);
  EXPECT_EQ(p.buffers[size_t(t1->inputs[0])].dtype, DType::F32);
  for (int o : p.outputs) EXPECT_EQ(p.buffers[size_t(o)].layout, Layout::Linear);
}

// The fixture's squeeze-excite tail, scaled down: conv -> ReduceMean(2,3) -> 1x1 relu ->
// 1x1 sigmoid -> Mul(x, gate) -> Gelu -> 1x1 -> Flatten -> Gemm.
ir::Graph se_tail(int64_t C) {
  GraphBuilder b;
  b.g.source = "test";
  int x = b.input("x", {1, 6, 4, 8});
  int f = conv3x3(b, x, 6, C, 21, {PostOp{OpKind::Gelu}});
  Attrs rm;
  rm.set("axes", std::vector<int64_t>{2, 3});
  rm.set("keepdims", int64_t(1));
  int m = named(b, OpKind::ReduceMean, {f}, "se_mean", rm);
  int h = conv1x1(b, m, C, C / 4, 23, {PostOp{OpKind::Relu}});
  int gate = conv1x1(b, h, C / 4, C, 25, {PostOp{OpKind::Sigmoid}});
  int mul = named(b, OpKind::Mul, {f, gate}, "se_mul");
  int ge = named(b, OpKind::Gelu, {mul}, "gelu");
  int s = conv1x1(b, ge, C, 8, 27);
  const Shape flat = {1, 8 * 4 * 8};
  int fl = named(b, OpKind::Reshape, {s}, "flatten", {}, &flat);
  int w = b.random_const("fc_w", {10, 8 * 4 * 8}, 29, -0.1f, 0.1f);
  Attrs ga;
  ga.set("transB", int64_t(1));
  int y = named(b, OpKind::Gemm, {fl, w}, "gemm", ga);
  b.output(y);
  return b.g;
}

TEST(LayoutImage, SqueezeExciteStaysInImages) {
  ir::Graph g = se_tail(32);
  plan::Plan p = after_pass(g);
  for (const char* l : {"conv21", "se_mean", "conv23", "conv25", "se_mul", "gelu", "conv27"})
    EXPECT_TRUE(is_image(out_of(p, l))) << l << "\n" << p.dump();
  const plan::Call* mul = call_of(p, "se_mul");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(p.buffers[size_t(mul->inputs[1])].shape, (Shape{1, 32, 1, 1}));
  EXPECT_TRUE(is_image(p.buffers[size_t(mul->inputs[1])]));
  EXPECT_EQ(count_op(p, OpKind::Reorder), 1) << p.dump();
  EXPECT_EQ(p.buffers[size_t(call_of(p, "flatten")->inputs[0])].layout, Layout::ImageRGBA);
}

TEST(LayoutImage, NoImageCallsNoChange) {
  GraphBuilder b;
  b.g.source = "test";
  int x = b.input("x", {3, 4});
  int y = named(b, OpKind::Relu, {x}, "relu");
  b.output(y);
  CompileOptions o;
  o.target = "opencl";
  plan::Plan p = lower_graph(b.g, o);
  EXPECT_FALSE(plan::assign_image_layout(p, {}));
}

TEST(LayoutImage, NumericsMatchReference) {
  OPV_REQUIRE_OPENCL();
  const std::vector<std::pair<std::string, ir::Graph>> graphs = {
      {"conv_gap_gemm", conv_gap_gemm()}, {"residual", residual()}, {"se_tail", se_tail(32)}, {"se_tail_c20", se_tail(20)}};
  uint64_t seed = 900;
  for (const auto& [name, g] : graphs) {
    plan::Plan cl = lower_for(g, "opencl");
    plan::Plan ref = lower_for(g, "reference");
    int images = 0;
    for (const Buffer& b : cl.buffers) images += b.layout == Layout::ImageRGBA;
    EXPECT_GT(images, 0) << name;
    expect_all_generated(cl, name);
    expect_close(cl, ref, seed++, name);
  }
}

}  // namespace
}  // namespace opv::test
