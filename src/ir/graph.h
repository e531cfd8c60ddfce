// ir::Graph — the compiler's operator graph (compiler side only; the runtime never sees it).
// Values are SSA: each has at most one producing node. Constants (initializers and folded
// results) are values with `data` set. Nodes are kept in topological order; passes mark nodes
// dead and call compact() (or build new node lists) rather than erasing in place.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/attrs.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace opv::ir {

struct Value {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  std::shared_ptr<const Tensor> data;  // set for constants
  bool is_const() const { return data != nullptr; }
};

struct Node {
  std::string name;         // ONNX node name (or a generated one), used in error messages
  OpKind op = OpKind::Identity;
  Attrs attrs;
  std::vector<int> inputs;  // value ids; -1 for an absent optional input
  std::vector<int> outputs; // value ids
  std::vector<PostOp> post_ops;
  bool dead = false;
};

class Graph {
 public:
  std::vector<Value> values;
  std::vector<Node> nodes;   // topological order
  std::vector<int> inputs;   // runtime inputs (value ids), in model order
  std::vector<int> outputs;  // model outputs (value ids), in model order
  int opset = 0;             // default-domain opset of the imported model
  std::string source;        // where it came from (file name), for messages

  int add_value(Value v);
  int add_const(const std::string& name, Tensor t);
  int add_node(Node n);  // appends (caller keeps topological order)
  // The node producing value v, or -1 (graph input, constant, or unknown).
  int producer(int v) const;
  // Live nodes reading value v (as a main input or via post-ops, which index inputs anyway).
  std::vector<int> consumers(int v) const;
  bool is_graph_output(int v) const;
  // Replace every use of value `from` (node inputs and graph outputs) by `to`.
  void replace_uses(int from, int to);
  // Drop dead nodes, then nodes whose outputs are unused; drop unreferenced values and
  // renumber. Returns true if anything was removed.
  bool compact();
  // Re-sort live nodes topologically (stable); throws opv::Error on a cycle.
  void topo_sort();
  // Structural checks (ids in range, SSA, topological order, post-op inputs); throws
  // opv::Error naming the node. Passes are validated with this after each change.
  void validate() const;
  std::string dump() const;  // readable text, one node per line
  std::string node_label(int n) const;  // "node 'name' (Conv)"
};

}  // namespace opv::ir
