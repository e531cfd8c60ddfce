// Small helpers shared by the graph passes (private to src/ir/passes): use queries, constant
// inspection, per-channel extraction and creation of new constants. Header-only; every
// function is a pure query or a local edit of one graph, so passes keep no global state.
#pragma once
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/shape.h"
#include "core/tensor.h"
#include "ir/graph.h"

namespace opv::ir::passes {

// Number of live nodes (what PassLog counts).
inline int live_nodes(const Graph& g) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.dead ? 0 : 1;
  return n;
}

// The constant tensor of value v, or nullptr when v is absent or computed at run time.
inline const Tensor* const_data(const Graph& g, int v) {
  if (v < 0) return nullptr;
  return g.values[v].data.get();
}

inline bool is_float_value(const Graph& g, int v) { return v >= 0 && is_float(g.values[v].dtype); }

// True when value v feeds exactly one live node, through exactly one of its input slots, and is
// not a graph output: the node is then the only thing that observes v, so v may be fused away.
inline bool single_use(const Graph& g, int v) {
  if (g.is_graph_output(v)) return false;
  std::vector<int> users = g.consumers(v);
  if (users.size() != 1) return false;
  const Node& n = g.nodes[users[0]];
  return std::count(n.inputs.begin(), n.inputs.end(), v) == 1;
}

// The single consuming node of v when single_use(g, v), else -1.
inline int sole_consumer(const Graph& g, int v) {
  if (!single_use(g, v)) return -1;
  return g.consumers(v)[0];
}

// Value of a float constant holding exactly one element (any rank), else nullopt.
inline std::optional<double> scalar_const(const Graph& g, int v) {
  const Tensor* t = const_data(g, v);
  if (!t || !is_float(t->dtype()) || t->numel() != 1) return std::nullopt;
  return t->get_f64(0);
}

// |v - target| <= rel * |target|.
inline bool near_value(double v, double target, double rel) {
  return std::isfinite(v) && std::fabs(v - target) <= rel * std::fabs(target);
}

// For a binary node whose operand `x` is one of its two inputs: index (0/1) of that operand,
// or -1 when x is not exactly one of them.
inline int operand_index(const Node& n, int x) {
  if (n.inputs.size() != 2) return -1;
  if (n.inputs[0] == x && n.inputs[1] != x) return 0;
  if (n.inputs[1] == x && n.inputs[0] != x) return 1;
  return -1;
}

// If constant `c` broadcasts to `out` (rank r) without enlarging it and varies at most along
// `axis` (a dimension of size out[axis] or 1 there, 1 everywhere else), returns its values as a
// vector of length out[axis] (a scalar is repeated). Otherwise nullopt.
inline std::optional<std::vector<double>> per_channel(const Tensor& c, const Shape& out, int64_t axis) {
  const Shape& cs = c.shape();
  const int64_t r = int64_t(out.size());
  if (!is_float(c.dtype()) || int64_t(cs.size()) > r || axis < 0 || axis >= r) return std::nullopt;
  const int64_t channels = out[axis];
  bool varies = false;
  for (int64_t i = 0; i < int64_t(cs.size()); ++i) {
    const int64_t out_dim = r - int64_t(cs.size()) + i;
    if (cs[i] == 1) continue;
    if (out_dim != axis || cs[i] != channels) return std::nullopt;
    varies = true;
  }
  std::vector<double> v(static_cast<size_t>(channels));
  for (int64_t k = 0; k < channels; ++k) v[k] = c.get_f64(varies ? k : 0);
  return v;
}

// Generates a value name not used in g, derived from `base`.
inline std::string fresh_name(const Graph& g, const std::string& base) {
  for (size_t k = g.values.size();; ++k) {
    std::string name = base + "_" + std::to_string(k);
    bool taken = false;
    for (const Value& v : g.values)
      if (v.name == name) {
        taken = true;
        break;
      }
    if (!taken) return name;
  }
}

// Adds a constant of dtype `dt` and shape `shape` filled from `vals` (rounded to dt).
inline int add_const_values(Graph& g, const std::string& base, DType dt, const Shape& shape,
                            const std::vector<double>& vals) {
  Tensor t(dt, shape);
  OPV_ASSERT(int64_t(vals.size()) == t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, vals[size_t(i)]);
  return g.add_const(fresh_name(g, base), std::move(t));
}

// Adds a fresh runtime value with the given dtype and shape (e.g. the middle of a rewrite).
inline int add_temp_value(Graph& g, const std::string& base, DType dt, const Shape& shape) {
  Value v;
  v.name = fresh_name(g, base);
  v.dtype = dt;
  v.shape = shape;
  return g.add_value(std::move(v));
}

inline bool all_equal_to(const std::vector<double>& v, double x) {
  return std::all_of(v.begin(), v.end(), [&](double e) { return e == x; });
}

// The producer of `mid` (node p) takes over the single consumer c's output: p now writes
// c.outputs[0] directly and c is marked dead. The caller has checked that c is element-wise on
// p's output with the same dtype and shape, so every reader of c's output sees the same values.
inline void absorb_successor(Graph& g, int p, int c) {
  g.nodes[p].outputs[0] = g.nodes[c].outputs[0];
  g.nodes[c].dead = true;
}

}  // namespace opv::ir::passes

namespace opv::ir::passes {

// Folding of a per-output-channel affine map y = o * s[ch] + t[ch] into the node p producing o
// (defined in fold_scales.cpp, used by fold_scales and fold_batchnorm).
//
// The axis of p's output that indexes its output channels (Conv: 1; Gemm: 1, the N of [M,N];
// MatMul with a weight of rank >= 2: the last axis), or -1 when p is none of these or already
// carries post-ops / has several outputs / is not float.
int64_t output_channel_axis(const Graph& g, int p);
// Whether p can take the map into its constant weights (scale) and bias (shift): the tensors
// that change must be constants (or an absent bias); MatMul has no bias, so no shift.
bool can_fold_affine(const Graph& g, int p, bool scale, bool shift);
// Rewrites p's weights/bias as new constants (shared originals are never modified). `s` and
// `t` hold one value per output channel; either may be null. p keeps its output value.
void fold_affine(Graph& g, int p, const std::vector<double>* s, const std::vector<double>* t);

}  // namespace opv::ir::passes
