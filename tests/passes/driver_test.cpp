// The graph-pass driver: table order, disabled names, fixed point, validation, values kept on
// a FastViT-like block that exercises every pass.
#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/passes/passes.h"

namespace opv {
namespace {

using test::GraphBuilder;

TEST(GraphPassDriver, TableOrder) {
  std::vector<std::string> names;
  for (const auto& p : ir::graph_passes()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fold_constants", "drop_identity", "fold_batchnorm", "fold_scales",
                                             "fuse_gelu", "fuse_epilogues"}));
}

TEST(GraphPassDriver, UnknownDisabledNameListsValidOnes) {
  GraphBuilder b;
  int x = b.input("x", {3});
  b.output(b.node(OpKind::Relu, {x}));
  try {
    ir::run_graph_passes(b.g, {"fuse_gelu", "fuse_everything"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("fuse_everything"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fold_batchnorm"), std::string::npos) << msg;
  }
}

TEST(GraphPassDriver, ShapeCheckAfterAChangeNamesPassAndNode) {
  GraphBuilder b;
  int x = b.input("x", {3});
  int r = b.node(OpKind::Relu, {b.node(OpKind::Identity, {x})}, {}, nullptr, "bad_relu");
  b.g.values[r].shape = {4};  // corrupt the stored shape: only the driver's check can see it
  b.output(r);
  try {
    ir::run_graph_passes(b.g);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("drop_identity"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bad_relu"), std::string::npos) << msg;
  }
}

// x -> Conv -> BN -> GELU(erf) -> Conv(1x1) -> Mul(layer scale) -> Add(residual x) -> Relu,
// with an Identity alias of a weight and a Cast to the same dtype in between.
GraphBuilder fastvit_block() {
  GraphBuilder b;
  const int64_t c = 4;
  int x = b.input("x", {1, c, 6, 6});
  int w1 = b.random_const("w1", {c, c, 3, 3}, 1, -0.4f, 0.4f);
  int conv1 = b.conv(x, b.node(OpKind::Identity, {w1}), b.random_const("b1", {c}, 2));
  int bn = b.node(OpKind::BatchNorm, {conv1, b.random_const("s", {c}, 3, 0.5f, 1.5f), b.random_const("t", {c}, 4),
                                      b.random_const("m", {c}, 5), b.random_const("v", {c}, 6, 0.5f, 1.5f)});
  Attrs cast;
  cast.set("to", int64_t(DType::F32));
  int g_in = b.node(OpKind::Cast, {bn}, cast);
  int t = b.node(OpKind::Div, {g_in, b.scalar("sqrt2", 1.41421356f)});
  int a = b.node(OpKind::Add, {b.node(OpKind::Erf, {t}), b.scalar("one", 1.f)});
  int gelu = b.node(OpKind::Mul, {b.node(OpKind::Mul, {g_in, a}), b.scalar("half", 0.5f)});
  int conv2 = b.conv(gelu, b.random_const("w2", {c, c, 1, 1}, 7), b.random_const("b2", {c}, 8), 1, {0, 0, 0, 0});
  int ls = b.node(OpKind::Mul, {conv2, b.random_const("gamma", {c, 1, 1}, 9)});
  int res = b.node(OpKind::Add, {x, ls});
  b.output(b.node(OpKind::Relu, {res}));
  return b;
}

TEST(GraphPassDriver, FastVitBlockFusesToTwoConvs) {
  GraphBuilder b = fastvit_block();
  ir::Graph before = b.g;
  std::vector<ir::PassLog> log = ir::run_graph_passes(b.g);
  b.g.validate();
  ASSERT_EQ(test::live_count(b.g), 2) << b.g.dump();
  const ir::Node& c1 = b.g.nodes[0];
  const ir::Node& c2 = b.g.nodes[1];
  EXPECT_EQ(c1.op, OpKind::Conv);
  EXPECT_EQ(c2.op, OpKind::Conv);
  ASSERT_EQ(c1.post_ops.size(), 1u);
  EXPECT_EQ(c1.post_ops[0].op, OpKind::Gelu);
  ASSERT_EQ(c2.post_ops.size(), 2u);  // residual add, relu (layer scale folded into weights)
  EXPECT_EQ(c2.post_ops[0].op, OpKind::Add);
  EXPECT_EQ(c2.post_ops[1].op, OpKind::Relu);
  test::expect_same_numbers(before, b.g);

  ASSERT_FALSE(log.empty());
  for (const ir::PassLog& l : log) EXPECT_LE(l.nodes_after, l.nodes_before) << l.pass;
  EXPECT_EQ(log.front().nodes_before, test::live_count(before));
  EXPECT_EQ(log.back().nodes_after, 2);
  // A second run has nothing left to do.
  EXPECT_TRUE(ir::run_graph_passes(b.g).empty());
}

TEST(GraphPassDriver, DisabledPassesDoNotRun) {
  GraphBuilder b = fastvit_block();
  ir::Graph before = b.g;
  std::vector<ir::PassLog> log = ir::run_graph_passes(b.g, {"fuse_epilogues", "fuse_gelu"});
  for (const ir::PassLog& l : log) {
    EXPECT_NE(l.pass, "fuse_epilogues");
    EXPECT_NE(l.pass, "fuse_gelu");
  }
  for (const ir::Node& n : b.g.nodes) EXPECT_TRUE(n.post_ops.empty());
  EXPECT_EQ(test::count_op(b.g, OpKind::Erf), 1);
  EXPECT_EQ(test::count_op(b.g, OpKind::BatchNorm), 0);
  test::expect_same_numbers(before, b.g);
}

}  // namespace
}  // namespace opv
