// fuse_epilogues — turns element-wise successors of a compute node into its post-ops
// (ops/op.h: PostOp), so a backend applies them before storing the output.
//
// Steps, for each host node p (Conv, Gemm, MatMul; also AveragePool, GlobalAveragePool,
// ReduceMean, Cast and a binary Add or Mul — Mul hosts squeeze-excite gating's activation) with one
// float output o, repeated while o has a fusable reader:
//  1. Require: o has exactly one reader c (through one input slot) and is not a graph output;
//     c has no post-ops and one output with o's dtype and shape (so nothing is enlarged).
//  2. c unary activation (Relu, LeakyRelu, Elu, Sigmoid, HardSigmoid, HardSwish, Tanh,
//     Softplus, Gelu, GeluTanh, Clip) -> unary post-op with c's parameters.
//  3. c = Add/Sub/Mul/Div of o and another operand q of o's dtype -> binary post-op reading q:
//     q constant (bias, layer scale; any shape that broadcasts to o), or q computed at run time
//     with exactly o's shape (residual). q becomes an extra input of p, after p's own input
//     slots (absent optional inputs are padded with -1 so they keep their meaning); an operand
//     already there is reused. When q comes first in Sub/Div the post-op is `swapped`.
//  4. p writes c's output directly and c is dropped. q cannot depend on o (o's only reader is
//     c), so when q is produced after p the nodes are re-sorted topologically.
//  5. compact() at the end.
// Invariant: every graph output keeps its name and values; post-op inputs are valid input
// slots of their node; topological order holds.
#include "ir/passes/pass_util.h"
#include "ir/passes/passes.h"

namespace opv::ir {

namespace {

using namespace passes;

// Number of input slots the host op itself defines (post-op operands are appended after);
// -1 when the op does not host post-ops.
int host_input_slots(OpKind k) {
  switch (k) {
    case OpKind::Conv:
    case OpKind::Gemm: return 3;  // x, w, [bias] / a, b, [c]
    case OpKind::MatMul:
    case OpKind::Add:
    case OpKind::Mul: return 2;
    case OpKind::AveragePool:
    case OpKind::GlobalAveragePool:
    case OpKind::ReduceMean:
    case OpKind::Cast: return 1;  // Cast: an input image's normalisation rides on its conversion
    default: return -1;
  }
}

bool is_fusable_activation(OpKind k) {
  switch (k) {
    case OpKind::Relu:
    case OpKind::LeakyRelu:
    case OpKind::Elu:
    case OpKind::Sigmoid:
    case OpKind::HardSigmoid:
    case OpKind::HardSwish:
    case OpKind::Tanh:
    case OpKind::Softplus:
    case OpKind::Gelu:
    case OpKind::GeluTanh:
    case OpKind::Clip: return true;
    default: return false;
  }
}

bool is_fusable_binary(OpKind k) {
  return k == OpKind::Add || k == OpKind::Sub || k == OpKind::Mul || k == OpKind::Div;
}

// Tries to fuse the sole reader of p's output into p. Sets `resort` when p now reads a value
// produced after it. Returns true on success.
bool fuse_one(Graph& g, int p, bool& resort) {
  const int o = g.nodes[p].outputs[0];
  const int c = sole_consumer(g, o);
  if (c < 0) return false;
  const Node& cn = g.nodes[c];
  if (!cn.post_ops.empty() || cn.outputs.size() != 1) return false;
  const int y = cn.outputs[0];
  if (g.values[y].dtype != g.values[o].dtype || g.values[y].shape != g.values[o].shape) return false;

  PostOp post;
  if (is_fusable_activation(cn.op) && cn.inputs.size() == 1) {
    post = unary_post_op(cn.op, cn.attrs);
  } else if (is_fusable_binary(cn.op)) {
    const int side = operand_index(cn, o);
    if (side < 0) return false;
    const int q = cn.inputs[1 - side];
    if (q < 0 || g.values[q].dtype != g.values[o].dtype) return false;
    const bool runtime = !g.values[q].is_const();
    if (runtime && g.values[q].shape != g.values[o].shape) return false;
    Node& host = g.nodes[p];
    const int slots = host_input_slots(host.op);
    if (int(host.inputs.size()) < slots) host.inputs.resize(size_t(slots), -1);
    int index = -1;
    for (int k = slots; k < int(host.inputs.size()); ++k)
      if (host.inputs[k] == q) index = k;
    if (index < 0) {
      host.inputs.push_back(q);
      index = int(host.inputs.size()) - 1;
    }
    if (runtime) {
      const int qp = g.producer(q);
      if (qp > p) resort = true;
    }
    post.op = cn.op;
    post.input = index;
    post.swapped = side == 1 && (cn.op == OpKind::Sub || cn.op == OpKind::Div);
  } else {
    return false;
  }
  g.nodes[p].post_ops.push_back(post);
  absorb_successor(g, p, c);
  return true;
}

}  // namespace

bool fuse_epilogues(Graph& g) {
  bool changed = false, resort = false;
  for (size_t p = 0; p < g.nodes.size(); ++p) {
    const Node& n = g.nodes[p];
    if (n.dead || host_input_slots(n.op) < 0 || n.outputs.size() != 1 || !is_float_value(g, n.outputs[0]))
      continue;
    // Hosts with more inputs than their own slots already carry post-op operands: fine.
    while (fuse_one(g, int(p), resort)) changed = true;
  }
  if (resort) g.topo_sort();
  if (changed) g.compact();
  return changed;
}

}  // namespace opv::ir
