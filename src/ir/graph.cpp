#include "ir/graph.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>

#include "core/error.h"

namespace opv::ir {

int Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return int(values.size()) - 1;
}

int Graph::add_const(const std::string& name, Tensor t) {
  Value v;
  v.name = name;
  v.dtype = t.dtype();
  v.shape = t.shape();
  v.data = std::make_shared<const Tensor>(std::move(t));
  return add_value(std::move(v));
}

int Graph::add_node(Node n) {
  nodes.push_back(std::move(n));
  return int(nodes.size()) - 1;
}

int Graph::producer(int v) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].dead) continue;
    for (int o : nodes[i].outputs)
      if (o == v) return int(i);
  }
  return -1;
}

std::vector<int> Graph::consumers(int v) const {
  std::vector<int> r;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].dead) continue;
    for (int in : nodes[i].inputs)
      if (in == v) {
        r.push_back(int(i));
        break;
      }
  }
  return r;
}

bool Graph::is_graph_output(int v) const {
  return std::find(outputs.begin(), outputs.end(), v) != outputs.end();
}

void Graph::replace_uses(int from, int to) {
  for (Node& n : nodes) {
    if (n.dead) continue;
    for (int& in : n.inputs)
      if (in == from) in = to;
  }
  for (int& o : outputs)
    if (o == from) o = to;
}

bool Graph::compact() {
  size_t before_nodes = nodes.size(), before_values = values.size();
  // Liveness from graph outputs backwards.
  std::vector<char> value_used(values.size(), 0);
  for (int o : outputs) value_used[o] = 1;
  std::vector<char> keep(nodes.size(), 0);
  for (int i = int(nodes.size()) - 1; i >= 0; --i) {
    const Node& n = nodes[i];
    if (n.dead) continue;
    bool needed = false;
    for (int o : n.outputs)
      if (value_used[o]) needed = true;
    if (!needed) continue;
    keep[i] = 1;
    for (int in : n.inputs)
      if (in >= 0) value_used[in] = 1;
  }
  for (int in : inputs) value_used[in] = 1;
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (keep[i]) kept.push_back(std::move(nodes[i]));
  // Values referenced by kept nodes (including unused secondary outputs) survive.
  std::vector<char> referenced(values.size(), 0);
  for (int v : inputs) referenced[v] = 1;
  for (int v : outputs) referenced[v] = 1;
  for (const Node& n : kept) {
    for (int v : n.inputs)
      if (v >= 0) referenced[v] = 1;
    for (int v : n.outputs) referenced[v] = 1;
  }
  std::vector<int> remap(values.size(), -1);
  std::vector<Value> nv;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!referenced[i]) continue;
    remap[i] = int(nv.size());
    nv.push_back(std::move(values[i]));
  }
  auto fix = [&](int& v) {
    if (v >= 0) v = remap[v];
  };
  for (Node& n : kept) {
    for (int& v : n.inputs) fix(v);
    for (int& v : n.outputs) fix(v);
  }
  for (int& v : inputs) fix(v);
  for (int& v : outputs) fix(v);
  nodes = std::move(kept);
  values = std::move(nv);
  return nodes.size() != before_nodes || values.size() != before_values;
}

void Graph::topo_sort() {
  std::vector<int> prod(values.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!nodes[i].dead)
      for (int o : nodes[i].outputs) prod[o] = int(i);
  std::vector<int> state(nodes.size(), 0);  // 0 new, 1 visiting, 2 done
  std::vector<int> order;
  std::vector<std::pair<int, size_t>> stack;
  for (size_t root = 0; root < nodes.size(); ++root) {
    if (nodes[root].dead || state[root]) continue;
    stack.push_back({int(root), 0});
    state[root] = 1;
    while (!stack.empty()) {
      auto& [n, k] = stack.back();
      if (k < nodes[n].inputs.size()) {
        int v = nodes[n].inputs[k++];
        int p = v >= 0 ? prod[v] : -1;
        if (p < 0 || state[p] == 2) continue;
        OPV_CHECK(state[p] != 1, "graph has a cycle through ", node_label(p));
        state[p] = 1;
        stack.push_back({p, 0});
      } else {
        state[n] = 2;
        order.push_back(n);
        stack.pop_back();
      }
    }
  }
  std::vector<Node> sorted;
  for (int i : order) sorted.push_back(std::move(nodes[i]));
  nodes = std::move(sorted);
}

void Graph::validate() const {
  std::vector<char> defined(values.size(), 0);
  auto check_id = [&](int v, int n, const char* what) {
    OPV_CHECK(v >= 0 && v < int(values.size()), node_label(n), ": ", what, " value id ", v, " out of range");
  };
  for (int v : inputs) {
    OPV_CHECK(v >= 0 && v < int(values.size()), "graph input id ", v, " out of range");
    defined[v] = 1;
  }
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].is_const()) {
      defined[i] = 1;
      OPV_CHECK(values[i].data->shape() == values[i].shape && values[i].data->dtype() == values[i].dtype,
                "constant '", values[i].name, "' disagrees with its value's dtype/shape");
    }
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    if (node.dead) continue;
    for (int v : node.inputs) {
      if (v < 0) continue;
      check_id(v, int(n), "input");
      OPV_CHECK(defined[v], node_label(int(n)), ": input '", values[v].name,
                "' is used before it is produced");
    }
    for (const PostOp& p : node.post_ops) {
      if (is_binary(p.op))
        OPV_CHECK(p.input >= 0 && p.input < int(node.inputs.size()) && node.inputs[p.input] >= 0,
                  node_label(int(n)), ": post-op ", op_name(p.op), " reads missing input ", p.input);
      else
        OPV_CHECK(is_unary(p.op), node_label(int(n)), ": post-op ", op_name(p.op), " is not element-wise");
    }
    for (int v : node.outputs) {
      check_id(v, int(n), "output");
      OPV_CHECK(!defined[v], node_label(int(n)), ": output '", values[v].name, "' is defined twice");
      defined[v] = 1;
    }
  }
  for (int v : outputs) {
    OPV_CHECK(v >= 0 && v < int(values.size()), "graph output id ", v, " out of range");
    OPV_CHECK(defined[v], "graph output '", values[v].name, "' is never produced");
  }
}

std::string Graph::node_label(int n) const {
  const Node& node = nodes.at(size_t(n));
  return "node '" + node.name + "' (" + op_name(node.op) + ")";
}

std::string Graph::dump() const {
  std::ostringstream os;
  auto vstr = [&](int v) -> std::string {
    if (v < 0) return "_";
    const Value& val = values[v];
    return "%" + val.name + ":" + dtype_name(val.dtype) + shape_str(val.shape) + (val.is_const() ? "(const)" : "");
  };
  os << "graph " << source << " opset " << opset << "\n  inputs:";
  for (int v : inputs) os << " " << vstr(v);
  os << "\n";
  for (const Node& n : nodes) {
    if (n.dead) continue;
    os << "  ";
    for (size_t i = 0; i < n.outputs.size(); ++i) os << (i ? ", " : "") << vstr(n.outputs[i]);
    os << " = " << op_name(n.op) << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << vstr(n.inputs[i]);
    os << ")";
    if (!n.attrs.map().empty()) os << " {" << n.attrs.str() << "}";
    if (!n.post_ops.empty()) os << " " << post_ops_str(n.post_ops);
    os << "  # " << n.name << "\n";
  }
  os << "  outputs:";
  for (int v : outputs) os << " " << vstr(v);
  os << "\n";
  return os.str();
}

}  // namespace opv::ir
