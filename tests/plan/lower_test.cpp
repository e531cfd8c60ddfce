#include <gtest/gtest.h>

#include "compiler/compile.h"
#include "core/half.h"
#include "plan/plan.h"

namespace opv {
namespace {

// x:f16[2,3] -> Mul(x, c) -> Relu -> y:f16, with c:f16[3] used twice (Mul and Add).
ir::Graph f16_graph() {
  ir::Graph g;
  g.source = "test";
  int x = g.add_value({"x", DType::F16, {2, 3}, nullptr});
  g.inputs.push_back(x);
  Tensor c(DType::F16, {3});
  for (int i = 0; i < 3; ++i) c.data<uint16_t>()[i] = float_to_half(float(i) + 0.5f);
  int cv = g.add_const("c", c);
  int m = g.add_value({"m", DType::F16, {2, 3}, nullptr});
  int a = g.add_value({"a", DType::F16, {2, 3}, nullptr});
  int y = g.add_value({"y", DType::F16, {2, 3}, nullptr});
  g.add_node({"mul", OpKind::Mul, {}, {x, cv}, {m}, {}});
  g.add_node({"add", OpKind::Add, {}, {m, cv}, {a}, {}});
  g.add_node({"relu", OpKind::Relu, {}, {a}, {y}, {}});
  g.outputs.push_back(y);
  g.validate();
  return g;
}

TEST(Lower, F16ModelStoresF32AndCastsAtTheBoundary) {
  CompileOptions o;
  o.target = "reference";
  plan::Plan p = lower(f16_graph(), o);
  EXPECT_EQ(p.meta.s("precision"), "f16");
  ASSERT_EQ(p.inputs.size(), 1u);
  ASSERT_EQ(p.outputs.size(), 1u);
  EXPECT_EQ(p.buffers[p.inputs[0]].dtype, DType::F16);
  EXPECT_EQ(p.buffers[p.outputs[0]].dtype, DType::F16);
  // cast-in, mul, add, relu, cast-out
  ASSERT_EQ(p.calls.size(), 5u);
  EXPECT_EQ(p.kernels[p.calls.front().kernel].op, OpKind::Cast);
  EXPECT_EQ(p.kernels[p.calls.back().kernel].op, OpKind::Cast);
  int consts = 0;
  for (const plan::Buffer& b : p.buffers) {
    if (b.kind == plan::BufferKind::Constant) {
      ++consts;
      EXPECT_EQ(b.dtype, DType::F32);
      const float* d = reinterpret_cast<const float*>(p.weights.data() + b.offset);
      EXPECT_EQ(d[1], 1.5f);
    }
    if (b.kind == plan::BufferKind::Intermediate) {
      EXPECT_EQ(b.dtype, DType::F32);
    }
  }
  EXPECT_EQ(consts, 1);  // the shared constant is stored once
  EXPECT_GT(p.arena_bytes, 0);
  plan::validate(p);
}

TEST(Lower, OutputThatIsAnInputIsCopied) {
  ir::Graph g;
  g.source = "test";
  int x = g.add_value({"x", DType::F32, {4}, nullptr});
  g.inputs.push_back(x);
  g.outputs.push_back(x);
  CompileOptions o;
  o.target = "reference";
  plan::Plan p = lower(g, o);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.kernels[p.calls[0].kernel].op, OpKind::Identity);
  EXPECT_EQ(p.meta.s("precision"), "f32");
}

TEST(Lower, KernelNamesSpellOutTheVariant) {
  ir::Graph g;
  g.source = "test";
  int x = g.add_value({"x", DType::F32, {1, 8, 6, 6}, nullptr});
  g.inputs.push_back(x);
  int w = g.add_const("w", Tensor(DType::F32, {8, 1, 3, 3}));
  int y = g.add_value({"y", DType::F32, {1, 8, 3, 3}, nullptr});
  Attrs a;
  a.set("group", int64_t(8));
  a.set("strides", std::vector<int64_t>{2, 2});
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.set("dilations", std::vector<int64_t>{1, 1});
  ir::Node n{"dw", OpKind::Conv, a, {x, w}, {y}, {PostOp{OpKind::Relu}}};
  g.add_node(n);
  g.outputs.push_back(y);
  CompileOptions o;
  o.target = "reference";
  plan::Plan p = lower(g, o);
  EXPECT_EQ(p.kernels[p.calls[0].kernel].name, "conv2d_dw_3x3_s2_f32_relu");
}

}  // namespace
}  // namespace opv
