// A small builder for hand-made ir::Graphs in pass tests, plus the numeric check every pass
// test uses: evaluate the graph before and after the pass (reference kernels) on the same
// random inputs and compare each output.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/metrics.h"
#include "ir/evaluate.h"
#include "ir/graph.h"
#include "ops/shape_infer.h"
#include "test_util.h"

namespace opv::test {

class GraphBuilder {
 public:
  ir::Graph g;

  int input(const std::string& name, const Shape& shape, DType dt = DType::F32) {
    ir::Value v;
    v.name = name;
    v.dtype = dt;
    v.shape = shape;
    int id = g.add_value(std::move(v));
    g.inputs.push_back(id);
    return id;
  }
  int constant(const std::string& name, Tensor t) { return g.add_const(name, std::move(t)); }
  int scalar(const std::string& name, float v) { return g.add_const(name, Tensor::scalar_f32(v)); }
  int random_const(const std::string& name, const Shape& shape, uint64_t seed, float lo = -1.f, float hi = 1.f) {
    return g.add_const(name, random_f32(shape, seed, lo, hi));
  }
  // Adds a node; its output dtype/shape come from shape inference unless `shape` is given
  // (ops whose output shape lives on the value: Reshape, Expand...).
  int node(OpKind op, const std::vector<int>& ins, Attrs attrs = {}, const Shape* shape = nullptr,
           const std::string& name = "") {
    std::vector<ValueInfo> infos;
    for (int v : ins)
      infos.push_back(v < 0 ? ValueInfo{} : ValueInfo{g.values[v].dtype, g.values[v].shape, g.values[v].data.get()});
    std::vector<ValueInfo> outs(1);
    if (shape) outs[0].shape = *shape;
    outs[0].dtype = ins.empty() || ins[0] < 0 ? DType::F32 : g.values[ins[0]].dtype;
    infer_shapes(op, attrs, infos, outs);
    ir::Value v;
    v.name = (name.empty() ? std::string(op_name(op)) : name) + "_out" + std::to_string(g.values.size());
    v.dtype = outs[0].dtype;
    v.shape = outs[0].shape;
    int out = g.add_value(std::move(v));
    ir::Node n;
    n.name = name.empty() ? std::string(op_name(op)) + std::to_string(g.nodes.size()) : name;
    n.op = op;
    n.attrs = std::move(attrs);
    n.inputs = ins;
    n.outputs = {out};
    g.add_node(std::move(n));
    return out;
  }
  void output(int v) { g.outputs.push_back(v); }

  int conv(int x, int w, int b = -1, int64_t group = 1, std::vector<int64_t> pads = {1, 1, 1, 1}) {
    Attrs a;
    a.set("group", group);
    a.set("strides", std::vector<int64_t>{1, 1});
    a.set("pads", pads);
    a.set("dilations", std::vector<int64_t>{1, 1});
    std::vector<int> ins = {x, w};
    if (b >= 0) ins.push_back(b);
    return node(OpKind::Conv, ins, a);
  }
};

// Live nodes of g, and how many of them have op k.
inline int live_count(const ir::Graph& g) {
  int n = 0;
  for (const ir::Node& node : g.nodes) n += node.dead ? 0 : 1;
  return n;
}
inline int count_op(const ir::Graph& g, OpKind k) {
  int n = 0;
  for (const ir::Node& node : g.nodes) n += (!node.dead && node.op == k) ? 1 : 0;
  return n;
}
// The first live node with op k (nullptr when none).
inline const ir::Node* find_op(const ir::Graph& g, OpKind k) {
  for (const ir::Node& node : g.nodes)
    if (!node.dead && node.op == k) return &node;
  return nullptr;
}

// Random inputs (uniform in [lo, hi)) for every graph input, deterministic in seed.
inline std::map<std::string, Tensor> random_inputs(const ir::Graph& g, uint64_t seed, float lo = -2.f, float hi = 2.f) {
  std::map<std::string, Tensor> m;
  for (int v : g.inputs) {
    Tensor t = random_f32(g.values[v].shape, seed++, lo, hi);
    m[g.values[v].name] = g.values[v].dtype == DType::F32 ? t : t.cast(g.values[v].dtype);
  }
  return m;
}

// Evaluates `before` and `after` on the same random inputs; outputs must agree by name,
// dtype, shape and to `tol` in relative L2 and max-abs error.
inline void expect_same_numbers(const ir::Graph& before, const ir::Graph& after, double tol = 1e-5,
                                uint64_t seed = 7) {
  ASSERT_EQ(before.outputs.size(), after.outputs.size());
  for (size_t i = 0; i < before.outputs.size(); ++i) {
    EXPECT_EQ(before.values[before.outputs[i]].name, after.values[after.outputs[i]].name) << "output " << i;
  }
  for (int round = 0; round < 2; ++round) {
    auto ins = random_inputs(before, seed + 100 * uint64_t(round));
    std::vector<Tensor> a = ir::evaluate(before, ins);
    std::vector<Tensor> b = ir::evaluate(after, ins);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].dtype(), b[i].dtype());
      ASSERT_EQ(a[i].shape(), b[i].shape());
      ErrorMetrics m = compare(b[i], a[i]);
      EXPECT_TRUE(m.finite) << "output " << i;
      EXPECT_LE(m.rel_l2, tol) << "output " << i;
      EXPECT_LE(m.max_abs_rel, tol) << "output " << i;
    }
  }
}

}  // namespace opv::test
