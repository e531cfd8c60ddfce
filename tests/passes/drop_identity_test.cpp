// drop_identity: identities go away, graph outputs keep their names, and values are unchanged.
#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/passes/passes.h"

namespace opv {
namespace {

using test::GraphBuilder;

TEST(DropIdentity, RemovesIdentityCastReshapeExpandTranspose) {
  GraphBuilder b;
  int x = b.input("x", {2, 3, 4});
  int a = b.node(OpKind::Relu, {x});
  int i1 = b.node(OpKind::Identity, {a});
  Attrs cast;
  cast.set("to", int64_t(DType::F32));
  int c1 = b.node(OpKind::Cast, {i1}, cast);
  Shape same = {2, 3, 4};
  int r1 = b.node(OpKind::Reshape, {c1}, {}, &same);
  int e1 = b.node(OpKind::Expand, {r1}, {}, &same);
  Attrs perm;
  perm.set("perm", std::vector<int64_t>{0, 1, 2});
  int t1 = b.node(OpKind::Transpose, {e1}, perm);
  int y = b.node(OpKind::Sigmoid, {t1});
  b.output(y);
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::drop_identity(b.g));
  b.g.validate();
  EXPECT_EQ(test::live_count(b.g), 2);
  EXPECT_EQ(test::count_op(b.g, OpKind::Relu), 1);
  EXPECT_EQ(test::count_op(b.g, OpKind::Sigmoid), 1);
  test::expect_same_numbers(before, b.g);
  EXPECT_FALSE(ir::drop_identity(b.g));
}

TEST(DropIdentity, KeepsRealReshapeCastAndTranspose) {
  GraphBuilder b;
  int x = b.input("x", {2, 6});
  Shape other = {3, 4};
  int r = b.node(OpKind::Reshape, {x}, {}, &other);
  Attrs cast;
  cast.set("to", int64_t(DType::F16));
  int c = b.node(OpKind::Cast, {r}, cast);
  Attrs perm;
  perm.set("perm", std::vector<int64_t>{1, 0});
  int t = b.node(OpKind::Transpose, {c}, perm);
  b.output(t);
  EXPECT_FALSE(ir::drop_identity(b.g));
  EXPECT_EQ(test::live_count(b.g), 3);
}

TEST(DropIdentity, GraphOutputKeepsItsName) {
  GraphBuilder b;
  int x = b.input("x", {4, 5});
  int a = b.node(OpKind::Tanh, {x});
  int m = b.node(OpKind::Neg, {a});  // a has a second reader
  int y = b.node(OpKind::Identity, {a}, {}, nullptr, "id");
  b.output(y);
  b.output(m);
  const std::string out_name = b.g.values[y].name;
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::drop_identity(b.g));
  b.g.validate();
  EXPECT_EQ(test::live_count(b.g), 2);
  EXPECT_EQ(b.g.values[b.g.outputs[0]].name, out_name);
  // The Tanh now produces the output value itself, and Neg reads it.
  const ir::Node* tanh = test::find_op(b.g, OpKind::Tanh);
  ASSERT_NE(tanh, nullptr);
  EXPECT_EQ(tanh->outputs[0], b.g.outputs[0]);
  test::expect_same_numbers(before, b.g);
}

TEST(DropIdentity, KeepsIdentityFromGraphInputOrConstantToOutput) {
  GraphBuilder b;
  int x = b.input("x", {3});
  int y = b.node(OpKind::Identity, {x});
  int k = b.random_const("k", {3}, 1);
  int z = b.node(OpKind::Identity, {k});
  b.output(y);
  b.output(z);
  EXPECT_FALSE(ir::drop_identity(b.g));
  EXPECT_EQ(test::live_count(b.g), 2);
}

TEST(DropIdentity, KeepsIdentityBetweenTwoGraphOutputs) {
  GraphBuilder b;
  int x = b.input("x", {3});
  int a = b.node(OpKind::Relu, {x});
  int y = b.node(OpKind::Identity, {a});
  b.output(a);
  b.output(y);
  EXPECT_FALSE(ir::drop_identity(b.g));
  EXPECT_EQ(test::live_count(b.g), 2);
}

TEST(DropIdentity, ConstantAliasIsBypassed) {
  // Like PyTorch's Identity nodes that alias shared weights.
  GraphBuilder b;
  int x = b.input("x", {2, 3});
  int k = b.random_const("k", {3}, 2);
  int alias = b.node(OpKind::Identity, {k});
  int y = b.node(OpKind::Add, {x, alias});
  b.output(y);
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::drop_identity(b.g));
  b.g.validate();
  EXPECT_EQ(test::live_count(b.g), 1);
  EXPECT_TRUE(b.g.values[test::find_op(b.g, OpKind::Add)->inputs[1]].is_const());
  test::expect_same_numbers(before, b.g);
}

}  // namespace
}  // namespace opv
