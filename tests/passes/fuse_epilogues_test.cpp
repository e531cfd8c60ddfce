// fuse_epilogues: activations, constant bias/scale and residual adds become post-ops of the
// producing node; values kept; non-fusable shapes and uses are left alone.
#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/passes/passes.h"

namespace opv {
namespace {

using test::GraphBuilder;

struct ConvGraph {
  GraphBuilder b;
  int x, conv;
  ConvGraph() {
    x = b.input("x", {1, 4, 5, 5});
    conv = b.conv(x, b.random_const("w", {4, 4, 3, 3}, 1, -0.5f, 0.5f));  // no bias
  }
};

TEST(FuseEpilogues, ConvBiasScaleResidualActivation) {
  ConvGraph c;
  int bias = c.b.node(OpKind::Add, {c.conv, c.b.random_const("pos", {1, 4, 5, 5}, 2)});  // not per-channel
  int relu = c.b.node(OpKind::Relu, {bias});
  int scaled = c.b.node(OpKind::Mul, {c.b.random_const("gamma", {4, 1, 1}, 3), relu});
  int res = c.b.node(OpKind::Add, {c.x, scaled});  // residual, runtime operand first
  Attrs clip;
  clip.set("min", -0.25);
  clip.set("max", 0.5);
  int y = c.b.node(OpKind::Clip, {res}, clip);
  c.b.output(y);
  ir::Graph before = c.b.g;
  ASSERT_TRUE(ir::fuse_epilogues(c.b.g));
  c.b.g.validate();
  ASSERT_EQ(test::live_count(c.b.g), 1);
  const ir::Node& conv = c.b.g.nodes[0];
  ASSERT_EQ(conv.post_ops.size(), 5u);
  EXPECT_EQ(conv.post_ops[0].op, OpKind::Add);
  EXPECT_EQ(conv.post_ops[0].input, 3);  // after x, w and the absent bias slot
  EXPECT_EQ(conv.inputs[2], -1);
  EXPECT_EQ(conv.post_ops[1].op, OpKind::Relu);
  EXPECT_EQ(conv.post_ops[2].op, OpKind::Mul);
  EXPECT_EQ(conv.post_ops[3].op, OpKind::Add);
  EXPECT_EQ(conv.inputs[conv.post_ops[3].input], c.b.g.inputs[0]);
  EXPECT_EQ(conv.post_ops[4].op, OpKind::Clip);
  EXPECT_FLOAT_EQ(conv.post_ops[4].alpha, -0.25f);
  EXPECT_FLOAT_EQ(conv.post_ops[4].beta, 0.5f);
  EXPECT_EQ(c.b.g.values[c.b.g.outputs[0]].name, before.values[y].name);
  test::expect_same_numbers(before, c.b.g);
  EXPECT_FALSE(ir::fuse_epilogues(c.b.g));
}

TEST(FuseEpilogues, SwappedSubAndDiv) {
  ConvGraph c;
  int s = c.b.node(OpKind::Sub, {c.b.random_const("k", {4, 1, 1}, 4), c.conv});
  int sig = c.b.node(OpKind::Sigmoid, {s});
  int d = c.b.node(OpKind::Div, {c.b.random_const("n", {1}, 5, 1.f, 2.f), sig});
  c.b.output(d);
  ir::Graph before = c.b.g;
  ASSERT_TRUE(ir::fuse_epilogues(c.b.g));
  c.b.g.validate();
  const ir::Node& conv = c.b.g.nodes[0];
  ASSERT_EQ(conv.post_ops.size(), 3u);
  EXPECT_TRUE(conv.post_ops[0].swapped);
  EXPECT_FALSE(conv.post_ops[1].swapped);
  EXPECT_TRUE(conv.post_ops[2].swapped);
  test::expect_same_numbers(before, c.b.g);
}

TEST(FuseEpilogues, ResidualProducedAfterHostIsResorted) {
  GraphBuilder b;
  int x = b.input("x", {1, 4, 5, 5});
  int conv = b.conv(x, b.random_const("w", {4, 4, 3, 3}, 6, -0.5f, 0.5f), b.random_const("b", {4}, 7));
  int other = b.node(OpKind::Tanh, {x});  // appears after the conv in node order
  int sum = b.node(OpKind::Add, {conv, other});
  int y = b.node(OpKind::LeakyRelu, {sum});
  b.output(y);
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::fuse_epilogues(b.g));
  b.g.validate();  // checks topological order
  EXPECT_EQ(test::live_count(b.g), 2);
  const ir::Node* c = test::find_op(b.g, OpKind::Conv);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->post_ops.size(), 2u);
  EXPECT_EQ(c->post_ops[0].input, 3);
  EXPECT_FLOAT_EQ(c->post_ops[1].alpha, 0.01f);
  test::expect_same_numbers(before, b.g);
}

TEST(FuseEpilogues, MatMulAndGemmHosts) {
  GraphBuilder b;
  int a = b.input("a", {2, 3, 8});
  int mm = b.node(OpKind::MatMul, {a, b.random_const("w", {8, 6}, 8)});
  int biased = b.node(OpKind::Add, {mm, b.random_const("bias", {6}, 9)});
  int g1 = b.node(OpKind::Gelu, {biased});
  b.output(g1);
  int a2 = b.input("a2", {4, 8});
  Attrs at;
  at.set("transB", int64_t(1));
  int gm = b.node(OpKind::Gemm, {a2, b.random_const("w2", {5, 8}, 10), b.random_const("c2", {5}, 11)}, at);
  b.output(b.node(OpKind::HardSwish, {gm}));
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::fuse_epilogues(b.g));
  b.g.validate();
  EXPECT_EQ(test::live_count(b.g), 2);
  EXPECT_EQ(test::find_op(b.g, OpKind::MatMul)->post_ops.size(), 2u);
  EXPECT_EQ(test::find_op(b.g, OpKind::MatMul)->post_ops[0].input, 2);
  EXPECT_EQ(test::find_op(b.g, OpKind::Gemm)->post_ops.size(), 1u);
  test::expect_same_numbers(before, b.g);
}

TEST(FuseEpilogues, SameOperandIsReused) {
  ConvGraph c;
  int k = c.b.random_const("k", {4, 1, 1}, 12);
  int m1 = c.b.node(OpKind::Mul, {c.conv, k});
  int m2 = c.b.node(OpKind::Add, {m1, k});
  c.b.output(m2);
  ir::Graph before = c.b.g;
  ASSERT_TRUE(ir::fuse_epilogues(c.b.g));
  const ir::Node& conv = c.b.g.nodes[0];
  EXPECT_EQ(conv.inputs.size(), 4u);
  EXPECT_EQ(conv.post_ops[0].input, conv.post_ops[1].input);
  test::expect_same_numbers(before, c.b.g);
}

TEST(FuseEpilogues, NegativeCases) {
  {  // two readers
    ConvGraph c;
    c.b.output(c.b.node(OpKind::Relu, {c.conv}));
    c.b.output(c.b.node(OpKind::Sigmoid, {c.conv}));
    EXPECT_FALSE(ir::fuse_epilogues(c.b.g));
  }
  {  // intermediate is a graph output
    ConvGraph c;
    c.b.output(c.b.node(OpKind::Relu, {c.conv}));
    c.b.output(c.conv);
    EXPECT_FALSE(ir::fuse_epilogues(c.b.g));
  }
  {  // runtime operand that broadcasts (not a residual of the same shape)
    ConvGraph c;
    int gate = c.b.input("gate", {1, 4, 1, 1});
    c.b.output(c.b.node(OpKind::Mul, {c.conv, gate}));
    EXPECT_FALSE(ir::fuse_epilogues(c.b.g));
  }
  {  // constant that enlarges the output
    ConvGraph c;
    c.b.output(c.b.node(OpKind::Add, {c.conv, c.b.random_const("k", {2, 4, 1, 1}, 13)}));
    EXPECT_FALSE(ir::fuse_epilogues(c.b.g));
  }
  {  // square of the output (both operands are the intermediate)
    ConvGraph c;
    c.b.output(c.b.node(OpKind::Mul, {c.conv, c.conv}));
    EXPECT_FALSE(ir::fuse_epilogues(c.b.g));
  }
  {  // not an element-wise successor; not a host
    GraphBuilder b;
    int x = b.input("x", {2, 6});
    Attrs ax;
    ax.set("axis", int64_t(1));
    int s = b.node(OpKind::Softmax, {x}, ax);
    b.output(b.node(OpKind::Relu, {s}));
    EXPECT_FALSE(ir::fuse_epilogues(b.g));
  }
  {  // non-float output
    GraphBuilder b;
    int x = b.input("x", {2, 6}, DType::I32);
    int y = b.node(OpKind::MatMul, {x, b.constant("w", Tensor(DType::I32, {6, 3}))});
    b.output(b.node(OpKind::Relu, {y}));
    EXPECT_FALSE(ir::fuse_epilogues(b.g));
  }
}

}  // namespace
}  // namespace opv
