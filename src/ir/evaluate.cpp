#include "ir/evaluate.h"

#include "kernels/reference.h"

namespace opv::ir {

std::vector<Tensor> evaluate_node(const Graph& g, const Node& n, const std::vector<const Tensor*>& ins) {
  std::vector<Tensor> outs;
  outs.reserve(n.outputs.size());
  for (int o : n.outputs) outs.emplace_back(g.values[o].dtype, g.values[o].shape);
  std::vector<Tensor*> out_ptrs;
  for (Tensor& t : outs) out_ptrs.push_back(&t);
  ref::run({n.op, n.attrs, n.post_ops}, ins, out_ptrs);
  return outs;
}

std::vector<Tensor> evaluate(const Graph& g, const std::map<std::string, Tensor>& inputs) {
  std::vector<const Tensor*> env(g.values.size(), nullptr);
  std::vector<Tensor> store(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].is_const()) env[i] = g.values[i].data.get();
  for (int v : g.inputs) {
    const Value& val = g.values[v];
    auto it = inputs.find(val.name);
    OPV_CHECK(it != inputs.end(), "missing input '", val.name, "'");
    OPV_CHECK(it->second.dtype() == val.dtype && it->second.shape() == val.shape, "input '", val.name,
              "' must be ", dtype_name(val.dtype), shape_str(val.shape), ", got ",
              dtype_name(it->second.dtype()), shape_str(it->second.shape()));
    env[v] = &it->second;
  }
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    if (n.dead) continue;
    std::vector<const Tensor*> ins;
    for (int v : n.inputs) {
      OPV_CHECK(v < 0 || env[v] != nullptr, g.node_label(int(ni)), ": input not computed");
      ins.push_back(v < 0 ? nullptr : env[v]);
    }
    std::vector<Tensor> outs;
    try {
      outs = evaluate_node(g, n, ins);
    } catch (const Error& e) {
      fail(g.node_label(int(ni)), ": ", e.what());
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      store[n.outputs[k]] = std::move(outs[k]);
      env[n.outputs[k]] = &store[n.outputs[k]];
    }
  }
  std::vector<Tensor> result;
  for (int v : g.outputs) {
    OPV_CHECK(env[v] != nullptr, "graph output '", g.values[v].name, "' was not computed");
    result.push_back(*env[v]);
  }
  return result;
}

}  // namespace opv::ir
