// fold_constants: nodes with all-constant inputs become constants (same value ids), huge
// broadcasts of small inputs are left alone, and graphs without such nodes are unchanged.
#include <gtest/gtest.h>

#include "ir/evaluate.h"
#include "ir/passes/passes.h"
#include "ops/shape_infer.h"
#include "test_util.h"

namespace opv {
namespace {

int add_node(ir::Graph& g, OpKind op, std::vector<int> ins, Attrs a = {}, Shape preset = {}) {
  std::vector<ValueInfo> vin;
  for (int v : ins) vin.push_back({g.values[size_t(v)].dtype, g.values[size_t(v)].shape, g.values[size_t(v)].data.get()});
  std::vector<ValueInfo> vout(1);
  vout[0].shape = preset;
  infer_shapes(op, a, vin, vout);
  ir::Value v;
  v.name = std::string(op_name(op)) + std::to_string(g.values.size());
  v.dtype = vout[0].dtype;
  v.shape = vout[0].shape;
  int out = g.add_value(v);
  ir::Node n;
  n.name = "/" + v.name;
  n.op = op;
  n.attrs = a;
  n.inputs = ins;
  n.outputs = {out};
  g.add_node(n);
  return out;
}

TEST(FoldConstants, FoldsConstantChainsAndKeepsRuntimeNodes) {
  ir::Graph g;
  ir::Value xin;
  xin.name = "x";
  xin.shape = {2, 3};
  int x = g.add_value(xin);
  g.inputs = {x};
  Tensor a = test::random_f32({2, 3}, 1), b = test::random_f32({3}, 2);
  int ca = g.add_const("a", a), cb = g.add_const("b", b);
  int s = add_node(g, OpKind::Mul, {ca, cb});
  int r = add_node(g, OpKind::Relu, {s});
  int y = add_node(g, OpKind::Add, {x, r});
  g.outputs = {y, r};
  EXPECT_TRUE(ir::fold_constants(g));
  g.validate();
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, OpKind::Add);
  const ir::Value& rv = g.values[size_t(g.outputs[1])];
  ASSERT_TRUE(rv.is_const());
  for (int i = 0; i < 6; ++i) {
    float want = std::max(0.f, a.data<float>()[i] * b.data<float>()[i % 3]);
    EXPECT_FLOAT_EQ(float(rv.data->get_f64(i)), want);
  }
  EXPECT_FALSE(ir::fold_constants(g));
}

TEST(FoldConstants, MultiOutputAndPostOps) {
  ir::Graph g;
  Tensor a = test::random_f32({4, 2}, 5), b = test::random_f32({2}, 6);
  int ca = g.add_const("a", a), cb = g.add_const("b", b);
  // Split a into rows [0,1) and [1,4).
  ir::Node sp;
  sp.name = "/split";
  sp.op = OpKind::Split;
  sp.attrs.set("axis", int64_t(0));
  sp.attrs.set("split", std::vector<int64_t>{1, 3});
  sp.inputs = {ca};
  for (int64_t rows : {1, 3}) {
    ir::Value v;
    v.name = "part" + std::to_string(rows);
    v.shape = {rows, 2};
    sp.outputs.push_back(g.add_value(v));
  }
  g.add_node(sp);
  // y = relu(part3) + b as a Relu with a fused binary post-op reading input 1.
  int p3 = g.nodes[0].outputs[1];
  add_node(g, OpKind::Relu, {p3});
  g.nodes.back().inputs.push_back(cb);  // post-op operands follow the op's own inputs
  g.nodes.back().post_ops.push_back({OpKind::Add, 0.f, 0.f, 1, false});
  g.outputs = {g.nodes[0].outputs[0], g.nodes.back().outputs[0]};
  ASSERT_TRUE(ir::fold_constants(g));
  g.validate();
  EXPECT_TRUE(g.nodes.empty());
  const Tensor& first = *g.values[size_t(g.outputs[0])].data;
  const Tensor& last = *g.values[size_t(g.outputs[1])].data;
  EXPECT_EQ(first.shape(), (Shape{1, 2}));
  EXPECT_EQ(first.get_f64(1), double(a.data<float>()[1]));
  ASSERT_EQ(last.shape(), (Shape{3, 2}));
  for (int i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(float(last.get_f64(i)), std::max(0.f, a.data<float>()[2 + i]) + b.data<float>()[i % 2]);
}

TEST(FoldConstants, SkipsHugeBroadcastsOfSmallInputs) {
  ir::Graph g;
  int c = g.add_const("c", Tensor::from_f32({1}, {2.f}));
  int e = add_node(g, OpKind::Expand, {c}, {}, Shape{2048, 1024});
  ir::Value xin;
  xin.name = "x";
  xin.shape = {2048, 1024};
  int x = g.add_value(xin);
  g.inputs = {x};
  int y = add_node(g, OpKind::Mul, {x, e});
  g.outputs = {y};
  EXPECT_FALSE(ir::fold_constants(g));
  EXPECT_EQ(g.nodes.size(), 2u);
}

}  // namespace
}  // namespace opv
