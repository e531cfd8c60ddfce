// fold_scales: per-channel Mul/Div/Add/Sub by constants folded into weights/bias; values kept.
#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/passes/passes.h"

namespace opv {
namespace {

using test::GraphBuilder;

struct ConvGraph {
  GraphBuilder b;
  int x, w, conv;
  explicit ConvGraph(bool bias = true) {
    x = b.input("x", {2, 3, 5, 5});
    w = b.random_const("w", {4, 3, 3, 3}, 1);
    conv = b.conv(x, w, bias ? b.random_const("bias", {4}, 2) : -1);
  }
};

TEST(FoldScales, ConvMulThenAddChannelConstants) {
  ConvGraph c;
  int m = c.b.node(OpKind::Mul, {c.conv, c.b.random_const("s", {4, 1, 1}, 3, 0.5f, 2.f)});
  int y = c.b.node(OpKind::Add, {c.b.random_const("t", {1, 4, 1, 1}, 4), m});  // constant first
  c.b.output(y);
  ir::Graph before = c.b.g;
  ASSERT_TRUE(ir::fold_scales(c.b.g));
  c.b.g.validate();
  EXPECT_EQ(test::live_count(c.b.g), 1);
  EXPECT_EQ(c.b.g.values[c.b.g.outputs[0]].name, before.values[y].name);
  test::expect_same_numbers(before, c.b.g);
}

TEST(FoldScales, ConvDivScalarAndSubWithoutBias) {
  ConvGraph c(false);
  int d = c.b.node(OpKind::Div, {c.conv, c.b.scalar("k", 1.7f)});
  int y = c.b.node(OpKind::Sub, {d, c.b.random_const("t", {4, 1, 1}, 5)});
  c.b.output(y);
  ir::Graph before = c.b.g;
  ASSERT_TRUE(ir::fold_scales(c.b.g));
  c.b.g.validate();
  EXPECT_EQ(test::live_count(c.b.g), 1);
  EXPECT_EQ(test::find_op(c.b.g, OpKind::Conv)->inputs.size(), 3u);
  test::expect_same_numbers(before, c.b.g);
}

TEST(FoldScales, GemmTransBAlphaBeta) {
  for (int64_t trans_b : {0, 1}) {
    for (bool with_c : {false, true}) {
      GraphBuilder b;
      int a = b.input("a", {3, 8});
      int w = b.random_const("w", trans_b ? Shape{5, 8} : Shape{8, 5}, 10);
      std::vector<int> ins = {a, w};
      if (with_c) ins.push_back(b.random_const("c", {1, 5}, 11));
      Attrs at;
      at.set("transB", trans_b);
      at.set("alpha", 0.6);
      at.set("beta", 1.4);
      int g = b.node(OpKind::Gemm, ins, at);
      int m = b.node(OpKind::Mul, {g, b.random_const("s", {5}, 12, 0.5f, 2.f)});
      int y = b.node(OpKind::Add, {m, b.random_const("t", {1, 5}, 13)});
      b.output(y);
      ir::Graph before = b.g;
      ASSERT_TRUE(ir::fold_scales(b.g));
      b.g.validate();
      EXPECT_EQ(test::live_count(b.g), 1) << "transB " << trans_b << " C " << with_c;
      test::expect_same_numbers(before, b.g);
    }
  }
}

TEST(FoldScales, MatMulScaleFoldsButBiasDoesNot) {
  GraphBuilder b;
  int a = b.input("a", {2, 3, 8});
  int w = b.random_const("w", {8, 6}, 20);
  int mm = b.node(OpKind::MatMul, {a, w});
  int m = b.node(OpKind::Mul, {mm, b.random_const("s", {1, 6}, 21)});
  int y = b.node(OpKind::Add, {m, b.random_const("t", {6}, 22)});
  b.output(y);
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::fold_scales(b.g));
  b.g.validate();
  EXPECT_EQ(test::count_op(b.g, OpKind::Mul), 0);
  EXPECT_EQ(test::count_op(b.g, OpKind::Add), 1);
  test::expect_same_numbers(before, b.g);
  EXPECT_FALSE(ir::fold_scales(b.g));
}

TEST(FoldScales, SharedWeightsAreNotModified) {
  GraphBuilder b;
  int x = b.input("x", {1, 3, 4, 4});
  int w = b.random_const("w", {3, 3, 3, 3}, 30);
  int c1 = b.conv(x, w);
  int c2 = b.conv(x, w);
  int m = b.node(OpKind::Mul, {c1, b.random_const("s", {3, 1, 1}, 31)});
  b.output(m);
  b.output(c2);
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::fold_scales(b.g));
  b.g.validate();
  EXPECT_EQ(test::count_op(b.g, OpKind::Mul), 0);
  test::expect_same_numbers(before, b.g);
}

TEST(FoldScales, NegativeCases) {
  {  // not per-channel: varies along W
    ConvGraph c;
    c.b.output(c.b.node(OpKind::Mul, {c.conv, c.b.random_const("s", {1, 1, 5}, 40)}));
    EXPECT_FALSE(ir::fold_scales(c.b.g));
  }
  {  // per-channel and spatial
    ConvGraph c;
    c.b.output(c.b.node(OpKind::Add, {c.conv, c.b.random_const("s", {4, 5, 5}, 41)}));
    EXPECT_FALSE(ir::fold_scales(c.b.g));
  }
  {  // two readers of the conv output
    ConvGraph c;
    c.b.output(c.b.node(OpKind::Mul, {c.conv, c.b.random_const("s", {4, 1, 1}, 42)}));
    c.b.output(c.b.node(OpKind::Relu, {c.conv}));
    EXPECT_FALSE(ir::fold_scales(c.b.g));
  }
  {  // conv output is a graph output
    ConvGraph c;
    c.b.output(c.b.node(OpKind::Mul, {c.conv, c.b.random_const("s", {4, 1, 1}, 43)}));
    c.b.output(c.conv);
    EXPECT_FALSE(ir::fold_scales(c.b.g));
  }
  {  // constant / conv is not linear in the conv output
    ConvGraph c;
    c.b.output(c.b.node(OpKind::Div, {c.b.random_const("s", {4, 1, 1}, 44), c.conv}));
    EXPECT_FALSE(ir::fold_scales(c.b.g));
  }
  {  // constant - conv
    ConvGraph c;
    c.b.output(c.b.node(OpKind::Sub, {c.b.random_const("s", {4, 1, 1}, 45), c.conv}));
    EXPECT_FALSE(ir::fold_scales(c.b.g));
  }
  {  // division by a zero channel
    ConvGraph c;
    c.b.output(c.b.node(OpKind::Div, {c.conv, c.b.constant("z", Tensor::from_f32({4, 1, 1}, {1, 0, 2, 3}))}));
    EXPECT_FALSE(ir::fold_scales(c.b.g));
  }
  {  // the constant would enlarge the output (rank 5)
    ConvGraph c;
    c.b.output(c.b.node(OpKind::Mul, {c.conv, c.b.random_const("s", {1, 1, 4, 1, 1}, 46)}));
    EXPECT_FALSE(ir::fold_scales(c.b.g));
  }
  {  // runtime weights cannot take a scale
    GraphBuilder b;
    int x = b.input("x", {1, 3, 4, 4});
    int w = b.input("w", {2, 3, 3, 3});
    b.output(b.node(OpKind::Mul, {b.conv(x, w), b.random_const("s", {2, 1, 1}, 47)}));
    EXPECT_FALSE(ir::fold_scales(b.g));
  }
  {  // the producer already carries post-ops
    ConvGraph c;
    ir::Node& conv = c.b.g.nodes[0];
    conv.post_ops.push_back(PostOp{OpKind::Relu});
    c.b.output(c.b.node(OpKind::Mul, {c.conv, c.b.random_const("s", {4, 1, 1}, 48)}));
    EXPECT_FALSE(ir::fold_scales(c.b.g));
  }
}

}  // namespace
}  // namespace opv
