// drop_identity — removes nodes that pass their input through unchanged.
//
// Steps:
//  1. Find live nodes that are identities: Identity; Cast whose output dtype equals the input
//     dtype; Reshape / Expand whose output shape equals the input shape; Transpose with the
//     identity permutation. A node carrying post-ops is never an identity.
//  2. When the output y is not a graph output: every reader of y reads the input x instead.
//  3. When y is a graph output, its name must survive (the runtime finds outputs by name): the
//     node producing x writes y directly and x's readers read y. When x is a graph input, a
//     constant or itself a graph output there is no producer to hand y to, so the node stays.
//  4. compact() drops the dead nodes and values nobody reads any more.
// Invariant: every graph output keeps its name, dtype, shape and values; no node reads a
// value before it is produced.
#include "ir/passes/pass_util.h"
#include "ir/passes/passes.h"

namespace opv::ir {

namespace {

bool is_identity_node(const Graph& g, const Node& n) {
  if (!n.post_ops.empty() || n.inputs.size() != 1 || n.outputs.size() != 1 || n.inputs[0] < 0) return false;
  const Value& x = g.values[n.inputs[0]];
  const Value& y = g.values[n.outputs[0]];
  if (x.dtype != y.dtype || x.shape != y.shape) return false;
  switch (n.op) {
    case OpKind::Identity:
    case OpKind::Cast:
    case OpKind::Reshape:
    case OpKind::Expand: return true;
    case OpKind::Transpose: {
      std::vector<int64_t> perm = n.attrs.ints("perm");
      for (size_t i = 0; i < perm.size(); ++i)
        if (perm[i] != int64_t(i)) return false;
      return true;
    }
    default: return false;
  }
}

}  // namespace

bool drop_identity(Graph& g) {
  bool changed = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.dead || !is_identity_node(g, n)) continue;
    const int x = n.inputs[0], y = n.outputs[0];
    if (!g.is_graph_output(y)) {
      n.dead = true;
      g.replace_uses(y, x);
      changed = true;
      continue;
    }
    // y is a graph output: hand its name to x's producer.
    const int p = g.producer(x);
    const bool is_input = std::find(g.inputs.begin(), g.inputs.end(), x) != g.inputs.end();
    if (p < 0 || is_input || g.values[x].is_const() || g.is_graph_output(x)) continue;
    Node& prod = g.nodes[p];
    if (std::count(prod.outputs.begin(), prod.outputs.end(), x) != 1) continue;
    n.dead = true;
    for (int& o : prod.outputs)
      if (o == x) o = y;
    g.replace_uses(x, y);
    changed = true;
  }
  if (changed) g.compact();
  return changed;
}

}  // namespace opv::ir
