// fold_batchnorm: BN folded into Conv/Gemm/MatMul weights, lone BN -> Mul + Add; values kept.
#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/passes/passes.h"

namespace opv {
namespace {

using test::GraphBuilder;

// Appends BatchNorm(x) with random parameters (variance positive) over C channels.
int add_bn(GraphBuilder& b, int x, int64_t c, uint64_t seed) {
  int scale = b.random_const("bn_scale", {c}, seed, 0.5f, 1.5f);
  int bias = b.random_const("bn_bias", {c}, seed + 1);
  int mean = b.random_const("bn_mean", {c}, seed + 2);
  int var = b.random_const("bn_var", {c}, seed + 3, 0.2f, 2.f);
  Attrs a;
  a.set("epsilon", 1e-3);
  return b.node(OpKind::BatchNorm, {x, scale, bias, mean, var}, a, nullptr, "bn");
}

TEST(FoldBatchNorm, IntoConvWithBias) {
  GraphBuilder b;
  int x = b.input("x", {1, 3, 6, 6});
  int w = b.random_const("w", {4, 3, 3, 3}, 10);
  int bias = b.random_const("b", {4}, 11);
  int y = add_bn(b, b.conv(x, w, bias), 4, 20);
  b.output(y);
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::fold_batchnorm(b.g));
  b.g.validate();
  EXPECT_EQ(test::live_count(b.g), 1);
  EXPECT_EQ(test::count_op(b.g, OpKind::Conv), 1);
  test::expect_same_numbers(before, b.g);
}

TEST(FoldBatchNorm, IntoConvWithoutBiasCreatesBias) {
  GraphBuilder b;
  int x = b.input("x", {2, 4, 5, 5});
  int w = b.random_const("w", {4, 1, 3, 3}, 12);  // depthwise
  int y = add_bn(b, b.conv(x, w, -1, 4), 4, 30);
  b.output(y);
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::fold_batchnorm(b.g));
  b.g.validate();
  const ir::Node* conv = test::find_op(b.g, OpKind::Conv);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(test::live_count(b.g), 1);
  ASSERT_EQ(conv->inputs.size(), 3u);
  EXPECT_TRUE(b.g.values[conv->inputs[2]].is_const());
  test::expect_same_numbers(before, b.g);
}

TEST(FoldBatchNorm, IntoGemmTransBAlphaBeta) {
  for (int64_t trans_b : {0, 1}) {
    GraphBuilder b;
    int a = b.input("a", {5, 8});
    int w = b.random_const("w", trans_b ? Shape{6, 8} : Shape{8, 6}, 40);
    int c = b.random_const("c", {6}, 41);
    Attrs at;
    at.set("transB", trans_b);
    at.set("alpha", 0.75);
    at.set("beta", 1.5);
    int g = b.node(OpKind::Gemm, {a, w, c}, at);
    b.output(add_bn(b, g, 6, 50));
    ir::Graph before = b.g;
    ASSERT_TRUE(ir::fold_batchnorm(b.g));
    b.g.validate();
    EXPECT_EQ(test::live_count(b.g), 1) << "transB " << trans_b;
    test::expect_same_numbers(before, b.g);
  }
}

TEST(FoldBatchNorm, IntoMatMulLeavesShiftAdd) {
  GraphBuilder b;
  int a = b.input("a", {5, 8});
  int w = b.random_const("w", {8, 6}, 60);
  int m = b.node(OpKind::MatMul, {a, w});
  b.output(add_bn(b, m, 6, 61));
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::fold_batchnorm(b.g));
  b.g.validate();
  EXPECT_EQ(test::count_op(b.g, OpKind::BatchNorm), 0);
  EXPECT_EQ(test::count_op(b.g, OpKind::MatMul), 1);
  EXPECT_EQ(test::count_op(b.g, OpKind::Add), 1);
  EXPECT_EQ(test::live_count(b.g), 2);
  test::expect_same_numbers(before, b.g);
}

TEST(FoldBatchNorm, LoneBatchNormBecomesMulAdd) {
  GraphBuilder b;
  int x = b.input("x", {2, 5, 3, 4});
  b.output(add_bn(b, x, 5, 70));
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::fold_batchnorm(b.g));
  b.g.validate();
  EXPECT_EQ(test::live_count(b.g), 2);
  const ir::Node* mul = test::find_op(b.g, OpKind::Mul);
  const ir::Node* add = test::find_op(b.g, OpKind::Add);
  ASSERT_NE(mul, nullptr);
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(b.g.values[mul->inputs[1]].shape, (Shape{5, 1, 1}));
  EXPECT_EQ(b.g.values[add->inputs[1]].shape, (Shape{5, 1, 1}));
  test::expect_same_numbers(before, b.g);
}

TEST(FoldBatchNorm, ConvOutputWithTwoReadersIsNotFolded) {
  GraphBuilder b;
  int x = b.input("x", {1, 3, 6, 6});
  int w = b.random_const("w", {4, 3, 3, 3}, 80);
  int conv = b.conv(x, w);
  int y = add_bn(b, conv, 4, 81);
  int r = b.node(OpKind::Relu, {conv});
  b.output(y);
  b.output(r);
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::fold_batchnorm(b.g));  // lone-BN rewrite only
  b.g.validate();
  EXPECT_EQ(test::count_op(b.g, OpKind::Mul), 1);
  EXPECT_EQ(test::count_op(b.g, OpKind::Add), 1);
  EXPECT_EQ(b.g.nodes[0].inputs.size(), 2u);  // the conv gained no bias
  test::expect_same_numbers(before, b.g);
}

TEST(FoldBatchNorm, ConvOutputThatIsGraphOutputIsNotFolded) {
  GraphBuilder b;
  int x = b.input("x", {1, 3, 6, 6});
  int w = b.random_const("w", {4, 3, 3, 3}, 90);
  int conv = b.conv(x, w);
  b.output(conv);
  b.output(add_bn(b, conv, 4, 91));
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::fold_batchnorm(b.g));
  EXPECT_EQ(test::count_op(b.g, OpKind::Mul), 1);
  test::expect_same_numbers(before, b.g);
}

TEST(FoldBatchNorm, RuntimeParametersAreLeftAlone) {
  GraphBuilder b;
  int x = b.input("x", {1, 3, 2, 2});
  int mean = b.input("mean", {3});
  int scale = b.random_const("s", {3}, 1);
  int bias = b.random_const("b", {3}, 2);
  int var = b.random_const("v", {3}, 3, 0.5f, 1.f);
  b.output(b.node(OpKind::BatchNorm, {x, scale, bias, mean, var}));
  EXPECT_FALSE(ir::fold_batchnorm(b.g));
  EXPECT_EQ(test::count_op(b.g, OpKind::BatchNorm), 1);
}

TEST(FoldBatchNorm, Float16Conv) {
  GraphBuilder b;
  int x = b.input("x", {1, 3, 5, 5}, DType::F16);
  int w = b.constant("w", test::random_f32({4, 3, 3, 3}, 100).cast(DType::F16));
  int bias = b.constant("b", test::random_f32({4}, 101).cast(DType::F16));
  int conv = b.conv(x, w, bias);
  Tensor p[4] = {test::random_f32({4}, 102, 0.5f, 1.5f), test::random_f32({4}, 103),
                 test::random_f32({4}, 104), test::random_f32({4}, 105, 0.5f, 2.f)};
  std::vector<int> ins = {conv};
  const char* names[4] = {"bn_scale", "bn_bias", "bn_mean", "bn_var"};
  for (int i = 0; i < 4; ++i) ins.push_back(b.constant(names[i], p[i].cast(DType::F16)));
  b.output(b.node(OpKind::BatchNorm, ins));
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::fold_batchnorm(b.g));
  b.g.validate();
  EXPECT_EQ(test::live_count(b.g), 1);
  EXPECT_EQ(b.g.values[test::find_op(b.g, OpKind::Conv)->inputs[1]].dtype, DType::F16);
  test::expect_same_numbers(before, b.g, 1e-2);
}

}  // namespace
}  // namespace opv
