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
