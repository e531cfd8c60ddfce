/* set_batch — makes a batch-1 graph compute N independent samples at once (compile --batch N).
 *
 * Not one of the fixed-point graph passes (it takes a parameter and must run once, on the
 * imported graph before the others: there are no post-ops yet, every op is canonical). The
 * importer has already folded the model's shape arithmetic at batch 1 (Shape -> Gather ->
 * Concat -> Reshape became a Reshape whose output value says [1, ...]), so re-importing with
 * another input shape would not undo what the model hard-codes; this pass proves, node by node,
 * that a leading 1 is the batch and rewrites it.
 *
 * Steps:
 *  1. Graph inputs: each must have rank >= 1 and leading dimension 1 (all already N: nothing to
 *     do). They become [N, ...] and are *batched*: axis 0 indexes the sample.
 *  2. Nodes in topological order. A node none of whose inputs is batched keeps its shapes (it
 *     computes the same thing for every sample; the importer folded most such nodes). A node
 *     with a batched input must
 *       a. have every output of rank >= 1 with leading dimension 1 at batch 1, and
 *       b. pass its op's rule (per_sample below): the op computes sample k of its outputs from
 *          sample k of its batched inputs only, with the batch on axis 0 of each batched input
 *          and output: element-wise ops whose batched operands have the output's rank; Conv,
 *          pools, normalisations over other axes; reductions, Softmax-like ops, Concat, Split,
 *          Gather over axes other than 0; Transpose keeping axis 0 first; Slice/Pad/Tile/Resize
 *          leaving axis 0 alone; Gemm with A = [batch, K] not transposed, B and C constant;
 *          MatMul with the batch on leading axes of rank >= 2 (A) or >= 3 (B); Reshape/Expand
 *          from [1, ...] to [1, ...] (row-major: sample k's elements stay the k-th contiguous
 *          block, so the leading 1 of the target shape is provably the batch).
 *     Its outputs become [N, ...] and batched; Concat's constant operands are tiled N times
 *     along axis 0 (each sample concatenates the same constant). Shapes are then re-inferred
 *     from the new input shapes (ops/shape_infer.h; for ops whose output shape lives on the value
 *     -- Reshape, Expand, Slice, Resize, pools -- the new shape is checked against the input) and
 *     must equal [N, ...the batch-1 shape's tail].
 *  3. Graph outputs must be batched (an output that no input reaches has no sample axis).
 * Anything else -- an op without a rule, a rule that fails (Softmax over axis 0, Reshape
 * [1,4,16] -> [4,16], a constant output) -- is refused with opv::Error naming the node and the
 * reason, before the graph is changed.
 * Invariant: for inputs x_1..x_N (each a batch-1 input set), output sample k equals the batch-1
 * graph's output on x_k (the same kernels' arithmetic per sample; backends may still differ in
 * summation order between shapes).
 */
#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/limits.h"
#include "ir/passes/pass_util.h"
#include "ir/passes/passes.h"
#include "ops/shape_infer.h"

namespace opv::ir {

namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Why node n does not compute per sample with the batch on axis 0 of its batched inputs
// (flags by value id in `batched`), or "" when it does. Shapes are the batch-1 ones.
std::string per_sample(const Graph& g, const Node& n, const std::vector<char>& batched) {
  auto b = [&](size_t k) { return k < n.inputs.size() && n.inputs[k] >= 0 && batched[size_t(n.inputs[k])]; };
  auto rank = [&](size_t k) { return g.values[size_t(n.inputs[k])].shape.size(); };
  auto only_first = [&]() -> std::string {
    for (size_t k = 1; k < n.inputs.size(); ++k)
      if (b(k)) return "its input " + std::to_string(k) + " (a parameter) depends on the batched inputs";
    if (!b(0)) return "its data input does not depend on the batched inputs but a parameter does";
    return "";
  };
  const Attrs& a = n.attrs;
  const size_t out_rank = g.values[size_t(n.outputs[0])].shape.size();
  if (!n.post_ops.empty()) return "it carries fused post-ops (set_batch runs before the graph passes)";
  if (is_unary(n.op)) return "";
  if (is_binary(n.op) || n.op == OpKind::Where) {
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (b(k) && rank(k) != out_rank)
        return "its batched operand " + std::to_string(k) + " has rank " + std::to_string(rank(k)) +
               " but the output rank " + std::to_string(out_rank) + " (broadcasting moves the batch axis)";
    return "";
  }
  if (is_reduce(n.op)) return contains(a.ints("axes"), 0) ? "it reduces over axis 0, the batch" : "";
  switch (n.op) {
    case OpKind::Conv:
    case OpKind::ConvTranspose:
    case OpKind::MaxPool:
    case OpKind::AveragePool:
    case OpKind::GlobalAveragePool:
    case OpKind::GlobalMaxPool:
    case OpKind::BatchNorm:
    case OpKind::InstanceNorm: return only_first();
    case OpKind::LayerNorm: {
      if (a.i("axis") == 0) return "it normalises over axis 0, the batch";
      return only_first();
    }
    case OpKind::GridSample:
      if (!b(0) || !b(1)) return "the input and the sampling grid must both depend on the batched inputs";
      return "";
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
    case OpKind::Hardmax:
    case OpKind::LpNorm:
    case OpKind::CumSum:
    case OpKind::ArgMax:
    case OpKind::ArgMin:
    case OpKind::TopK:
    case OpKind::Split:
      if (a.i("axis") == 0) return "it works along axis 0, the batch";
      return only_first();
    case OpKind::Concat:
      if (a.i("axis") == 0) return "it concatenates along axis 0, the batch";
      for (size_t k = 0; k < n.inputs.size(); ++k)
        if (!b(k) && !passes::const_data(g, n.inputs[k]))
          return "its input " + std::to_string(k) + " is neither batched nor a constant";
      return "";
    case OpKind::Gather:
      if (a.i("axis") == 0) return "it gathers along axis 0, the batch";
      return only_first();
    case OpKind::Trilu:
      if (rank(0) < 3) return "its input has rank " + std::to_string(rank(0)) + ": axis 0 is a matrix axis";
      return only_first();
    case OpKind::Transpose: {
      const auto perm = a.ints("perm");
      if (perm.empty() || perm[0] != 0) return "its permutation moves axis 0, the batch";
      return "";
    }
    case OpKind::Slice: {
      const auto starts = a.ints("starts"), steps = a.ints("steps");
      if (starts.empty() || starts[0] != 0 || (!steps.empty() && steps[0] != 1)) return "it slices axis 0, the batch";
      return "";
    }
    case OpKind::Pad: {
      const auto pads = a.ints("pads");
      if (pads.size() == 2 * rank(0) && (pads[0] != 0 || pads[rank(0)] != 0)) return "it pads axis 0, the batch";
      return "";
    }
    case OpKind::Tile: {
      const auto rep = a.ints("repeats");
      if (rep.empty() || rep[0] != 1) return "it repeats axis 0, the batch";
      return "";
    }
    case OpKind::Resize: {
      const auto sc = a.floats("scales");
      if (sc.empty() || sc[0] != 1.0) return "it scales axis 0, the batch";
      return "";
    }
    case OpKind::Reshape:
      // Both leading dims are 1 (checked for every batched node's outputs) and the reshape is
      // row-major: sample k's elements are the k-th contiguous block before and after, so the
      // target's leading 1 is the batch whatever the ranks.
      return "";
    case OpKind::Expand:
      if (rank(0) != out_rank)
        return "it adds leading axes (rank " + std::to_string(rank(0)) + " -> " + std::to_string(out_rank) +
               "), so axis 0 of the output is not the batch";
      return "";
    case OpKind::Gemm:
      if (a.i("transA", 0) != 0) return "A is transposed (its axis 0 is K, not the batch)";
      return only_first();
    case OpKind::MatMul: {
      const bool ba = b(0), bb = b(1);
      if (ba && (rank(0) < 2 || rank(0) != out_rank))
        return "A has rank " + std::to_string(rank(0)) + " (needs >= 2, the output's) for the batch on its rows";
      if (bb && (rank(1) < 3 || rank(1) != out_rank))
        return "B has rank " + std::to_string(rank(1)) + ": the batch would not be a leading broadcast axis";
      return "";
    }
    default: return std::string("op ") + op_name(n.op) + " has no batch rule";
  }
}

// t repeated n times along a new-size axis 0 (t's leading dim is 1).
Tensor tile_leading(const Tensor& t, int64_t n) {
  Shape s = t.shape();
  s[0] = n;
  Tensor r(t.dtype(), s);
  const size_t bytes = t.nbytes();
  for (int64_t k = 0; k < n; ++k)
    std::memcpy(static_cast<uint8_t*>(r.raw()) + size_t(k) * bytes, t.raw(), bytes);
  return r;
}

}  // namespace

bool set_batch(Graph& g, int64_t n) {
  OPV_CHECK(n >= 1, "batch must be >= 1, got ", n);
  auto refuse = [&](const std::string& where, const std::string& why) {
    fail("cannot batch the model to ", n, ": ", where, ": ", why);
  };
  OPV_CHECK(!g.inputs.empty(), "cannot batch the model to ", n, ": it has no runtime inputs");
  bool all_n = true;
  for (int v : g.inputs) {
    const Value& x = g.values[size_t(v)];
    if (x.shape.empty()) refuse("input '" + x.name + "'", "it is a scalar (no batch axis)");
    all_n &= x.shape[0] == n;
  }
  if (all_n) return false;  // already the model's batch
  for (int v : g.inputs) {
    const Value& x = g.values[size_t(v)];
    if (x.shape[0] != 1)
      refuse("input '" + x.name + "'", "its leading dimension is " + std::to_string(x.shape[0]) + " " +
                                         shape_str(x.shape) + ", not 1 (--batch rewrites batch-1 models)");
  }

  // Plan every change first (refusals leave the graph untouched), then apply.
  std::vector<char> batched(g.values.size(), 0);
  std::vector<Shape> shape(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v) shape[v] = g.values[v].shape;
  auto batch_shape = [&](int v) {
    Shape s = g.values[size_t(v)].shape;
    s[0] = n;
    check_tensor_limits(g.values[size_t(v)].dtype, s, "value '" + g.values[size_t(v)].name + "' at batch " +
                                                         std::to_string(n));
    return s;
  };
  for (int v : g.inputs) batched[size_t(v)] = 1, shape[size_t(v)] = batch_shape(v);
  struct Tiled { size_t node, slot; };
  std::vector<Tiled> tiles;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& node = g.nodes[ni];
    if (node.dead) continue;
    bool any = false;
    for (int v : node.inputs) any |= v >= 0 && batched[size_t(v)];
    if (!any) continue;
    for (int o : node.outputs) {
      const Value& y = g.values[size_t(o)];
      if (y.shape.empty() || y.shape[0] != 1)
        refuse(g.node_label(int(ni)), "its output '" + y.name + "' is " + shape_str(y.shape) +
                                          " at batch 1: its leading dimension is not the batch");
    }
    if (std::string why = per_sample(g, node, batched); !why.empty()) refuse(g.node_label(int(ni)), why);
    // Re-infer with the batched input shapes; the outputs preset to [N, ...].
    std::vector<ValueInfo> ins(node.inputs.size()), outs(node.outputs.size());
    std::vector<Tensor> tiled_inputs;
    tiled_inputs.reserve(node.inputs.size());
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int v = node.inputs[k];
      if (v < 0) continue;
      ins[k] = {g.values[size_t(v)].dtype, shape[size_t(v)], g.values[size_t(v)].data.get()};
      if (node.op == OpKind::Concat && !batched[size_t(v)]) {  // a constant: tiled
        ins[k].shape[0] = n;
        ins[k].data = nullptr;
        tiles.push_back({ni, k});
      }
    }
    for (size_t k = 0; k < node.outputs.size(); ++k)
      outs[k] = {g.values[size_t(node.outputs[k])].dtype, batch_shape(node.outputs[k]), nullptr};
    std::vector<ValueInfo> want = outs;
    try {
      infer_shapes(node.op, node.attrs, ins, outs);
    } catch (const Error& e) {
      refuse(g.node_label(int(ni)), std::string("shape inference at batch ") + std::to_string(n) + ": " + e.what());
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      if (outs[k].shape != want[k].shape || outs[k].dtype != want[k].dtype)
        refuse(g.node_label(int(ni)), "output '" + g.values[size_t(node.outputs[k])].name + "' infers as " +
                                          shape_str(outs[k].shape) + ", not " + shape_str(want[k].shape));
      batched[size_t(node.outputs[k])] = 1;
      shape[size_t(node.outputs[k])] = want[k].shape;
    }
  }
  for (int v : g.outputs)
    if (!batched[size_t(v)])
      refuse("output '" + g.values[size_t(v)].name + "'", "no input reaches it, so it has no batch axis");

  // Apply: new shapes, tiled constants for Concat.
  const size_t nv = g.values.size();
  for (size_t v = 0; v < nv; ++v)
    if (batched[v]) g.values[v].shape = shape[v];
  for (const Tiled& t : tiles) {
    const int v = g.nodes[t.node].inputs[t.slot];
    const Value& c = g.values[size_t(v)];
    const std::string name = c.name + "_batch" + std::to_string(n);
    Tensor data = tile_leading(*c.data, n);
    const int nvid = g.add_const(name, std::move(data));
    g.nodes[t.node].inputs[t.slot] = nvid;
  }
  g.compact();
  g.validate();
  return true;
}

}  // namespace opv::ir
