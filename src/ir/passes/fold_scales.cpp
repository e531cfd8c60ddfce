// fold_scales — folds per-output-channel Mul/Div/Add/Sub by a constant into the weights and
// bias of the Conv / Gemm / MatMul that produces the other operand.
//
// Steps (one sweep over the nodes in order, so chains like Conv -> Mul -> Add fold at once):
//  1. Take a binary node c = op(o, k) with k constant and o computed at run time; Mul and Add
//     accept k on either side, Div and Sub only as the second operand (y = o / k, y = o - k).
//  2. Require: o is produced by a Conv/Gemm/MatMul p without post-ops; o has c as its only
//     reader and is not a graph output; c's output has o's dtype (float) and shape, so k does
//     not enlarge it; k varies at most along p's output-channel axis (scalar, [M,1,1],
//     [1,M,1,1] for Conv; [N], [1,N] for Gemm/MatMul).
//  3. Mul/Div become a per-channel scale s (Div: 1/k, k must be non-zero), Add/Sub a shift t.
//     Conv: w[m] *= s[m], b[m] = b[m]*s[m] + t[m] (a bias input is created when absent).
//     Gemm (y = alpha*A'B' + beta*C): columns of B' scaled (rows of B when transB), C becomes
//     beta*C*s + t with beta = 1. MatMul: columns of B scaled; a shift is left to
//     fuse_epilogues (MatMul has no bias input).
//  4. p writes c's output value directly, c is dropped; new constants replace the old ones
//     (which may be shared with other nodes and are never modified); compact() at the end.
// Invariant: every value still read computes the same numbers (up to rounding of the folded
// constants to their dtype); graph outputs keep their names.
#include "ir/passes/pass_util.h"
#include "ir/passes/passes.h"

namespace opv::ir {
namespace passes {

namespace {

bool is_host(OpKind k) { return k == OpKind::Conv || k == OpKind::Gemm || k == OpKind::MatMul; }

// Input slot of the bias-like operand (Conv bias, Gemm C); -1 for MatMul.
int bias_slot(OpKind k) { return k == OpKind::MatMul ? -1 : 2; }

int bias_input(const Node& n) {
  int slot = bias_slot(n.op);
  return slot >= 0 && int(n.inputs.size()) > slot ? n.inputs[slot] : -1;
}

// Flat index into a tensor of shape `src` broadcast to `dst` for flat index i of `dst`.
int64_t broadcast_source_index(int64_t i, const Shape& dst, const Shape& src) {
  int64_t src_index = 0, src_stride = 1;
  const int64_t offset = int64_t(dst.size()) - int64_t(src.size());
  for (int64_t d = int64_t(dst.size()) - 1; d >= 0; --d) {
    const int64_t coord = i % dst[d];
    i /= dst[d];
    const int64_t sd = d - offset;
    if (sd < 0) continue;
    if (src[sd] != 1) src_index += coord * src_stride;
    src_stride *= src[sd];
  }
  return src_index;
}

}  // namespace

int64_t output_channel_axis(const Graph& g, int p) {
  const Node& n = g.nodes[p];
  if (n.dead || !is_host(n.op) || !n.post_ops.empty() || n.outputs.size() != 1) return -1;
  const Value& out = g.values[n.outputs[0]];
  if (!is_float(out.dtype) || n.inputs.size() < 2 || n.inputs[1] < 0) return -1;
  const int64_t rank = int64_t(out.shape.size());
  switch (n.op) {
    case OpKind::Conv: return rank >= 2 ? 1 : -1;
    case OpKind::Gemm: return rank == 2 ? 1 : -1;
    case OpKind::MatMul: return g.values[n.inputs[1]].shape.size() >= 2 && rank >= 1 ? rank - 1 : -1;
    default: return -1;
  }
}

bool can_fold_affine(const Graph& g, int p, bool scale, bool shift) {
  const int64_t axis = output_channel_axis(g, p);
  if (axis < 0) return false;
  const Node& n = g.nodes[p];
  const int64_t channels = g.values[n.outputs[0]].shape[axis];
  if (n.op == OpKind::MatMul && shift) return false;
  const Tensor* w = const_data(g, n.inputs[1]);
  if (scale) {
    if (!w || !is_float(w->dtype())) return false;
    switch (n.op) {
      case OpKind::Conv:
        if (w->rank() < 1 || w->shape()[0] != channels) return false;
        break;
      case OpKind::Gemm: {
        if (w->rank() != 2) return false;
        const int64_t n_dim = n.attrs.i("transB", 0) ? w->shape()[0] : w->shape()[1];
        if (n_dim != channels) return false;
        break;
      }
      case OpKind::MatMul:
        if (w->shape().back() != channels) return false;
        break;
      default: return false;
    }
  }
  const int b = bias_input(n);
  if (b >= 0) {
    const Tensor* bt = const_data(g, b);
    if (!bt || !is_float(bt->dtype())) return false;  // a runtime bias cannot absorb anything
    if (n.op == OpKind::Conv && bt->numel() != channels) return false;
  }
  return true;
}

void fold_affine(Graph& g, int p, const std::vector<double>* s, const std::vector<double>* t) {
  OPV_ASSERT(can_fold_affine(g, p, s != nullptr, t != nullptr));
  const OpKind op = g.nodes[p].op;
  const std::string base = g.nodes[p].name.empty() ? std::string(op_name(op)) : g.nodes[p].name;
  const int64_t axis = output_channel_axis(g, p);
  const int64_t channels = g.values[g.nodes[p].outputs[0]].shape[axis];
  const std::vector<double>* scale = (s && !all_equal_to(*s, 1.0)) ? s : nullptr;
  const std::vector<double>* shift = (t && !all_equal_to(*t, 0.0)) ? t : nullptr;

  if (scale) {
    const Tensor& w = *const_data(g, g.nodes[p].inputs[1]);
    Tensor nw(w.dtype(), w.shape());
    const Shape& ws = w.shape();
    for (int64_t i = 0; i < w.numel(); ++i) {
      int64_t ch;
      if (op == OpKind::Conv) {
        ch = i / (w.numel() / ws[0]);
      } else if (op == OpKind::Gemm && g.nodes[p].attrs.i("transB", 0)) {
        ch = i / ws[1];
      } else {
        ch = i % ws.back();
      }
      nw.set_f64(i, w.get_f64(i) * (*scale)[size_t(ch)]);
    }
    const int nw_id = g.add_const(fresh_name(g, base + "_w"), std::move(nw));
    g.nodes[p].inputs[1] = nw_id;
  }

  const int b = bias_input(g.nodes[p]);
  if (op == OpKind::MatMul) return;        // no bias input (can_fold_affine refused a shift)
  if (!shift && (b < 0 || !scale)) return;  // no bias to rescale and nothing to add

  const DType bias_dtype = b >= 0 ? g.values[b].dtype : g.values[g.nodes[p].inputs[1]].dtype;
  const double beta = op == OpKind::Gemm ? g.nodes[p].attrs.f("beta", 1.0) : 1.0;
  Shape bias_shape = {channels};
  if (op == OpKind::Gemm && b >= 0) bias_shape = broadcast_shapes(g.values[b].shape, {channels});
  Tensor nb(bias_dtype, bias_shape);
  const Tensor* old = const_data(g, b);
  for (int64_t i = 0; i < nb.numel(); ++i) {
    const int64_t ch = i % channels;  // channels is the last (Gemm) or only (Conv) axis
    double v = 0.0;
    if (old) v = beta * old->get_f64(op == OpKind::Conv ? i : broadcast_source_index(i, bias_shape, old->shape()));
    if (scale) v *= (*scale)[size_t(ch)];
    if (shift) v += (*shift)[size_t(ch)];
    nb.set_f64(i, v);
  }
  const int nb_id = g.add_const(fresh_name(g, base + "_b"), std::move(nb));
  Node& n = g.nodes[p];
  if (n.inputs.size() < 3) n.inputs.resize(3, -1);
  n.inputs[2] = nb_id;
  if (op == OpKind::Gemm) n.attrs.set("beta", 1.0);
}

}  // namespace passes

bool fold_scales(Graph& g) {
  using namespace passes;
  bool changed = false;
  for (size_t ci = 0; ci < g.nodes.size(); ++ci) {
    const Node& c = g.nodes[ci];
    if (c.dead || c.inputs.size() != 2 || c.outputs.size() != 1 || !c.post_ops.empty()) continue;
    if (c.op != OpKind::Mul && c.op != OpKind::Div && c.op != OpKind::Add && c.op != OpKind::Sub) continue;
    const bool commutative = c.op == OpKind::Mul || c.op == OpKind::Add;
    int k_pos = -1;
    if (g.values[c.inputs[1]].is_const() && !g.values[c.inputs[0]].is_const()) k_pos = 1;
    else if (commutative && g.values[c.inputs[0]].is_const() && !g.values[c.inputs[1]].is_const()) k_pos = 0;
    if (k_pos < 0) continue;
    const int o = c.inputs[1 - k_pos], k = c.inputs[k_pos], y = c.outputs[0];
    const int p = g.producer(o);
    if (p < 0 || output_channel_axis(g, p) < 0 || !single_use(g, o)) continue;
    if (g.values[y].dtype != g.values[o].dtype || g.values[y].shape != g.values[o].shape ||
        g.values[k].dtype != g.values[o].dtype)
      continue;
    const Shape out_shape = g.values[o].shape;
    auto vals = per_channel(*g.values[k].data, out_shape, output_channel_axis(g, p));
    if (!vals) continue;
    std::vector<double> s, t;
    switch (c.op) {
      case OpKind::Mul: s = *vals; break;
      case OpKind::Div:
        for (double e : *vals) s.push_back(1.0 / e);
        break;
      case OpKind::Add: t = *vals; break;
      case OpKind::Sub:
        t = *vals;
        for (double& e : t) e = -e;
        break;
      default: continue;
    }
    const bool is_scale = c.op == OpKind::Mul || c.op == OpKind::Div;
    if (!std::all_of(s.begin(), s.end(), [](double e) { return std::isfinite(e); })) continue;  // Div by 0
    if (!can_fold_affine(g, p, is_scale, !is_scale)) continue;
    fold_affine(g, p, is_scale ? &s : nullptr, is_scale ? nullptr : &t);
    absorb_successor(g, p, int(ci));
    changed = true;
  }
  if (changed) g.compact();
  return changed;
}

}  // namespace opv::ir
