// The graph-pass driver: the pass table and run_graph_passes().
//
// Steps:
//  1. Check `disabled` against the table (an unknown name is an error listing the valid ones).
//  2. Run the enabled passes in table order; after each pass that reports a change, validate
//     the graph (Graph::validate) and check shapes: every live node's output dtypes and shapes
//     are re-inferred from its inputs (ops/shape_infer.h) and must equal the stored ones, and
//     every binary post-op operand must broadcast to the output without enlarging it.
//  3. Repeat whole rounds until a round changes nothing, at most kMaxRounds rounds (each
//     pass only removes nodes or replaces patterns by smaller ones, so a few rounds suffice;
//     the cap guards against two passes undoing each other).
// Invariant: the graph handed back is valid and computes what it computed before.
#include <sstream>

#include "ir/passes/pass_util.h"
#include "ir/passes/passes.h"
#include "ops/shape_infer.h"

namespace opv::ir {

namespace {

constexpr int kMaxRounds = 8;

// Re-infers every live node's outputs and compares with the stored values. Post-op operands
// are appended after the op's own inputs, so only the inputs before the first post-op operand
// (trailing absent ones dropped) are handed to shape inference.
void check_shapes(const Graph& g, const char* pass) {
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    if (n.dead) continue;
    size_t own = n.inputs.size();
    for (const PostOp& p : n.post_ops)
      if (p.input >= 0) own = std::min(own, size_t(p.input));
    while (own > 0 && n.inputs[own - 1] < 0) --own;
    std::vector<ValueInfo> ins(own), outs(n.outputs.size());
    for (size_t k = 0; k < own; ++k) {
      const int v = n.inputs[k];
      if (v < 0) continue;  // absent optional input in the middle: default info
      ins[k] = {g.values[v].dtype, g.values[v].shape, g.values[v].data.get()};
    }
    for (size_t k = 0; k < outs.size(); ++k)
      outs[k] = {g.values[n.outputs[k]].dtype, g.values[n.outputs[k]].shape, nullptr};
    try {
      infer_shapes(n.op, n.attrs, ins, outs);
    } catch (const Error& e) {
      fail("after graph pass ", pass, ": ", g.node_label(int(ni)), ": ", e.what());
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      const Value& v = g.values[n.outputs[k]];
      OPV_CHECK(outs[k].dtype == v.dtype && outs[k].shape == v.shape, "after graph pass ", pass, ": ",
                g.node_label(int(ni)), " output '", v.name, "' is stored as ", dtype_name(v.dtype),
                shape_str(v.shape), " but infers as ", dtype_name(outs[k].dtype), shape_str(outs[k].shape));
    }
    if (n.outputs.empty()) continue;
    const Shape& out = g.values[n.outputs[0]].shape;
    for (const PostOp& p : n.post_ops) {
      if (!is_binary(p.op)) continue;
      const Shape& operand = g.values[n.inputs[p.input]].shape;
      bool fits = operand.size() <= out.size();
      for (size_t k = 0; fits && k < operand.size(); ++k) {
        const int64_t d = operand[operand.size() - 1 - k];
        fits = d == 1 || d == out[out.size() - 1 - k];
      }
      OPV_CHECK(fits, "after graph pass ", pass, ": ", g.node_label(int(ni)), " post-op ", op_name(p.op),
                " operand ", shape_str(operand), " does not broadcast to the output ", shape_str(out));
    }
  }
}

}  // namespace

const std::vector<GraphPassInfo>& graph_passes() {
  static const std::vector<GraphPassInfo> table = {
      {"fold_constants", &fold_constants, "evaluate nodes whose inputs are all constant"},
      {"drop_identity", &drop_identity, "remove Identity, same-dtype Cast, same-shape Reshape/Expand"},
      {"fold_batchnorm", &fold_batchnorm, "fold BatchNorm into Conv/Gemm/MatMul weights; lone BN -> Mul+Add"},
      {"fold_scales", &fold_scales, "fold per-channel Mul/Div/Add/Sub by constants into weights and bias"},
      {"fuse_gelu", &fuse_gelu, "erf / tanh GELU subgraphs -> Gelu / GeluTanh"},
      {"fuse_epilogues", &fuse_epilogues, "bias, activation, layer scale, residual add -> post-ops"},
  };
  return table;
}

std::vector<PassLog> run_graph_passes(Graph& g, const std::vector<std::string>& disabled) {
  const auto& table = graph_passes();
  for (const std::string& name : disabled) {
    bool known = false;
    for (const GraphPassInfo& p : table) known = known || name == p.name;
    if (!known) {
      std::ostringstream valid;
      for (size_t i = 0; i < table.size(); ++i) valid << (i ? ", " : "") << table[i].name;
      fail("unknown graph pass '", name, "' (valid: ", valid.str(), ")");
    }
  }
  auto enabled = [&](const GraphPassInfo& p) {
    return std::find(disabled.begin(), disabled.end(), p.name) == disabled.end();
  };

  std::vector<PassLog> log;
  for (int round = 0; round < kMaxRounds; ++round) {
    bool any = false;
    for (const GraphPassInfo& p : table) {
      if (!enabled(p)) continue;
      const int before = passes::live_nodes(g);
      if (!p.fn(g)) continue;
      any = true;
      try {
        g.validate();
      } catch (const Error& e) {
        fail("graph pass ", p.name, " left an invalid graph: ", e.what());
      }
      check_shapes(g, p.name);
      log.push_back({p.name, before, passes::live_nodes(g)});
    }
    if (!any) break;
  }
  return log;
}

}  // namespace opv::ir
