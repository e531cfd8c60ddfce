/* fold_constants: evaluates live nodes whose inputs are all constants.
 *
 * 1. Walk live nodes in topological order; a node qualifies when every present input is a
 *    constant value (post-op operands are node inputs, so they are covered).
 * 2. Skip nodes whose results would be huge constants built from small inputs (Expand, Tile,
 *    ConstantOfShape... producing more than kMaxGrowthElems elements and more than
 *    kMaxGrowthFactor times their inputs): materialising them only bloats the artifact.
 * 3. Evaluate the node with the reference kernels (ir::evaluate_node), store each result on its
 *    output value (which becomes a constant with the same id, name, dtype and shape), and mark
 *    the node dead; later nodes then see the new constants within the same sweep.
 * 4. Compact the graph when anything was folded.
 * Invariant: value ids of folded outputs are kept, so graph outputs and consumers stay
 * attached; the graph stays topologically sorted; returns whether anything was folded.
 */
#include <memory>

#include "ir/evaluate.h"
#include "ir/passes/passes.h"

namespace opv::ir {

namespace {

constexpr int64_t kMaxGrowthElems = int64_t(1) << 20;
constexpr int64_t kMaxGrowthFactor = 4;

}  // namespace

bool fold_constants(Graph& g) {
  bool changed = false;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    Node& n = g.nodes[ni];
    if (n.dead || n.op == OpKind::Reorder) continue;
    std::vector<const Tensor*> ins;
    bool all_const = true;
    int64_t in_elems = 0;
    for (int v : n.inputs) {
      if (v < 0) {
        ins.push_back(nullptr);
        continue;
      }
      const Value& val = g.values[size_t(v)];
      if (!val.is_const()) {
        all_const = false;
        break;
      }
      ins.push_back(val.data.get());
      in_elems += val.data->numel();
    }
    if (!all_const) continue;
    int64_t out_elems = 0;
    for (int o : n.outputs) out_elems += numel(g.values[size_t(o)].shape);
    if (out_elems > kMaxGrowthElems && out_elems > kMaxGrowthFactor * in_elems) continue;
    std::vector<Tensor> outs;
    try {
      outs = evaluate_node(g, n, ins);
    } catch (const Error& e) {
      fail(g.node_label(int(ni)), ": constant folding failed: ", e.what());
    }
    for (size_t k = 0; k < n.outputs.size(); ++k)
      g.values[size_t(n.outputs[k])].data = std::make_shared<const Tensor>(std::move(outs[k]));
    n.dead = true;
    changed = true;
  }
  if (changed) g.compact();
  return changed;
}

}  // namespace opv::ir
