// fuse_gelu — recognises GELU written out element by element and replaces it by one node.
//
// Steps:
//  1. Anchor on each Erf node (exact GELU, as PyTorch exports it):
//       t = x / sqrt(2)  or  x * (1/sqrt(2));  e = Erf(t);  a = e + 1
//     and on each Tanh node (tanh approximation):
//       c = Pow(x, 3) or x*x*x;  k = 0.044715 * c;  s = x + k;  u = sqrt(2/pi) * s;
//       e = Tanh(u);  a = e + 1
//  2. Match the tail that multiplies by x/2, in any of its association orders:
//       (x * a) * 0.5,  (0.5 * x) * a,  x * (a * 0.5)   (Mul by 0.5 or Div by 2)
//  3. Require: constants are float scalars within 1e-3 relative of the expected value (either
//     side of commutative ops); every intermediate has exactly one reader (and is not a graph
//     output); all matched x are the same value; the result has x's dtype and shape; no
//     matched node carries post-ops.
//  4. The node producing the result y becomes Gelu(x) / GeluTanh(x) writing y; the other
//     matched nodes are dropped by compact().
// Invariant: y keeps its name and computes GELU(x) (the pattern's values up to the tolerance
// of its constants).
#include <numbers>

#include "ir/passes/pass_util.h"
#include "ir/passes/passes.h"

namespace opv::ir {

namespace {

using namespace passes;

constexpr double kConstTolerance = 1e-3;     // relative tolerance on pattern constants
constexpr double kTanhCubeCoeff = 0.044715;  // GELU tanh approximation coefficient

struct Matcher {
  Graph& g;
  std::vector<int> nodes;  // matched nodes, result producer last

  bool plain(int n, OpKind op) const {
    const Node& node = g.nodes[n];
    return !node.dead && node.op == op && node.post_ops.empty() && node.outputs.size() == 1;
  }

  // Node n computes v * factor as Mul(v, k) / Mul(k, v) with k ~ factor, or Div(v, k) with
  // k ~ 1/factor. Returns v (a runtime value) or -1.
  int scaled_operand(int n, double factor) const {
    if (n < 0) return -1;
    const Node& node = g.nodes[n];
    if (node.inputs.size() != 2 || !(plain(n, OpKind::Mul) || plain(n, OpKind::Div))) return -1;
    for (int side = 0; side < 2; ++side) {
      if (node.op == OpKind::Div && side == 0) continue;  // the constant must be the divisor
      auto k = scalar_const(g, node.inputs[side]);
      const int v = node.inputs[1 - side];
      if (!k || v < 0 || g.values[v].is_const()) continue;
      const double want = node.op == OpKind::Mul ? factor : 1.0 / factor;
      if (near_value(*k, want, kConstTolerance)) return v;
    }
    return -1;
  }

  // The sole reader of v, which must be a plain `op` node; -1 otherwise.
  int reader(int v, OpKind op) const {
    const int n = sole_consumer(g, v);
    return n >= 0 && plain(n, op) ? n : -1;
  }

  // a = e + 1 with e the sole input read: returns a, or -1.
  int plus_one(int e) {
    const int n = reader(e, OpKind::Add);
    if (n < 0) return -1;
    const Node& add = g.nodes[n];
    const int side = operand_index(add, e);
    if (side < 0) return -1;
    auto k = scalar_const(g, add.inputs[1 - side]);
    if (!k || !near_value(*k, 1.0, kConstTolerance)) return -1;
    nodes.push_back(n);
    return add.outputs[0];
  }

  // Matches the x/2 tail starting at a; returns the result value y or -1.
  int half_x_tail(int a, int x) {
    const int m1 = reader(a, OpKind::Mul);
    if (m1 >= 0) {
      const Node& mul = g.nodes[m1];
      const int side = operand_index(mul, a);
      if (side < 0) return -1;
      const int other = mul.inputs[1 - side];
      if (other == x) {  // (x * a) * 0.5
        const int m2 = sole_consumer(g, mul.outputs[0]);
        if (scaled_operand(m2, 0.5) != mul.outputs[0]) return -1;
        nodes.push_back(m1);
        nodes.push_back(m2);
        return g.nodes[m2].outputs[0];
      }
      const int h = g.producer(other);
      if (h >= 0 && scaled_operand(h, 0.5) == x && single_use(g, other)) {  // (0.5 * x) * a
        nodes.push_back(h);
        nodes.push_back(m1);
        return mul.outputs[0];
      }
    }
    // x * (a * 0.5), the half applied by Mul or Div.
    const int h = sole_consumer(g, a);
    if (scaled_operand(h, 0.5) != a) return -1;
    const int hv = g.nodes[h].outputs[0];
    const int m2 = reader(hv, OpKind::Mul);
    if (m2 < 0 || operand_index(g.nodes[m2], hv) < 0) return -1;
    const Node& mul = g.nodes[m2];
    if (mul.inputs[1 - operand_index(mul, hv)] != x) return -1;
    nodes.push_back(h);
    nodes.push_back(m2);
    return mul.outputs[0];
  }

  // x^3 as Pow(x, 3) or x*x*x (any association); cube is the value. Returns x or -1.
  int cube_base(int cube) {
    const int n = g.producer(cube);
    if (n < 0 || !single_use(g, cube)) return -1;
    const Node& node = g.nodes[n];
    if (plain(n, OpKind::Pow) && node.inputs.size() == 2) {
      auto e = scalar_const(g, node.inputs[1]);
      if (!e || *e != 3.0 || g.values[node.inputs[0]].is_const()) return -1;
      nodes.push_back(n);
      return node.inputs[0];
    }
    if (!plain(n, OpKind::Mul) || node.inputs.size() != 2) return -1;
    for (int side = 0; side < 2; ++side) {
      const int sq = node.inputs[side], x = node.inputs[1 - side];
      const int sn = g.producer(sq);
      if (sn < 0 || !plain(sn, OpKind::Mul) || !single_use(g, sq)) continue;
      const Node& sqn = g.nodes[sn];
      if (sqn.inputs.size() == 2 && sqn.inputs[0] == x && sqn.inputs[1] == x && !g.values[x].is_const()) {
        nodes.push_back(sn);
        nodes.push_back(n);
        return x;
      }
    }
    return -1;
  }

  // Erf anchor: returns (x, y) or (-1, -1).
  std::pair<int, int> match_erf(int erf) {
    const Node& e = g.nodes[erf];
    if (!plain(erf, OpKind::Erf) || e.inputs.size() != 1) return {-1, -1};
    const int t = e.inputs[0];
    const int tn = g.producer(t);
    const int x = scaled_operand(tn, 1.0 / std::numbers::sqrt2);
    if (x < 0 || !single_use(g, t)) return {-1, -1};
    nodes = {tn, erf};
    const int a = plus_one(e.outputs[0]);
    if (a < 0) return {-1, -1};
    return {x, half_x_tail(a, x)};
  }

  // Tanh anchor: returns (x, y) or (-1, -1).
  std::pair<int, int> match_tanh(int tanh) {
    const Node& e = g.nodes[tanh];
    if (!plain(tanh, OpKind::Tanh) || e.inputs.size() != 1) return {-1, -1};
    nodes.clear();
    const int u = e.inputs[0];
    const int un = g.producer(u);
    const int s = scaled_operand(un, std::sqrt(2.0 / std::numbers::pi));
    if (s < 0 || !single_use(g, u)) return {-1, -1};
    const int sn = g.producer(s);
    if (sn < 0 || !plain(sn, OpKind::Add) || !single_use(g, s) || g.nodes[sn].inputs.size() != 2) return {-1, -1};
    for (int side = 0; side < 2; ++side) {
      const int x = g.nodes[sn].inputs[side], k = g.nodes[sn].inputs[1 - side];
      const int kn = g.producer(k);
      if (kn < 0 || !single_use(g, k)) continue;
      const int cube = scaled_operand(kn, kTanhCubeCoeff);
      if (cube < 0) continue;
      nodes.clear();
      if (cube_base(cube) != x) continue;
      nodes.push_back(kn);
      nodes.push_back(sn);
      nodes.push_back(un);
      nodes.push_back(tanh);
      const int a = plus_one(e.outputs[0]);
      if (a < 0) return {-1, -1};
      return {x, half_x_tail(a, x)};
    }
    return {-1, -1};
  }
};

}  // namespace

bool fuse_gelu(Graph& g) {
  bool changed = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const OpKind op = g.nodes[i].op;
    if (g.nodes[i].dead || (op != OpKind::Erf && op != OpKind::Tanh)) continue;
    Matcher m{g, {}};
    auto [x, y] = op == OpKind::Erf ? m.match_erf(int(i)) : m.match_tanh(int(i));
    if (x < 0 || y < 0) continue;
    if (!is_float(g.values[x].dtype) || g.values[y].dtype != g.values[x].dtype ||
        g.values[y].shape != g.values[x].shape)
      continue;
    std::vector<int> sorted = m.nodes;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) continue;  // defensive
    const int last = m.nodes.back();
    for (int n : m.nodes) g.nodes[n].dead = true;
    Node& gelu = g.nodes[last];
    gelu.dead = false;
    gelu.op = op == OpKind::Erf ? OpKind::Gelu : OpKind::GeluTanh;
    gelu.attrs = Attrs();
    gelu.inputs = {x};
    gelu.outputs = {y};
    changed = true;
  }
  if (changed) g.compact();
  return changed;
}

}  // namespace opv::ir
