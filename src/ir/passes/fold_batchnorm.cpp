// fold_batchnorm — removes inference BatchNorm nodes.
//
// Steps, for each BatchNorm y = BN(x, scale, bias, mean, var; epsilon) whose four parameters
// are float constants of C = x.shape[1] elements and whose output has x's dtype and shape:
//  1. Compute the per-channel affine map y = x*s + t with s = scale / sqrt(var + epsilon) and
//     t = bias - mean*s (in double).
//  2. If x is produced by a Conv / Gemm / MatMul p without post-ops whose output-channel axis
//     is axis 1 (Conv; Gemm [M,N]; MatMul with a 2-D output), x has the BatchNorm as its only
//     reader and is not a graph output, and p's weights are constant: fold s into p's weights
//     and s, t into its bias (created when absent; see fold_affine in fold_scales.cpp); p then
//     writes y directly. MatMul has no bias: the BatchNorm becomes Add(x, t) with t of shape [C]
//     (fuse_epilogues later makes it a post-op) unless t is all zero.
//  3. Otherwise the BatchNorm becomes Mul(x, s) then Add(., t) with constants of shape
//     [C,1,...,1] (rank of x minus one) so they broadcast along the channel axis of NCHW.
//  4. compact() drops the old constants and nodes.
// Invariant: y keeps its name and its values (up to rounding of the folded constants).
#include "ir/passes/pass_util.h"
#include "ir/passes/passes.h"

namespace opv::ir {

bool fold_batchnorm(Graph& g) {
  using namespace passes;
  bool changed = false;
  for (size_t bi = 0; bi < g.nodes.size(); ++bi) {
    if (g.nodes[bi].dead || g.nodes[bi].op != OpKind::BatchNorm) continue;
    const Node& bn = g.nodes[bi];
    if (bn.inputs.size() != 5 || bn.outputs.size() != 1 || !bn.post_ops.empty() || bn.inputs[0] < 0) continue;
    const int x = bn.inputs[0], y = bn.outputs[0];
    const Value& xv = g.values[x];
    if (!is_float(xv.dtype) || xv.shape.size() < 2 || g.values[y].shape != xv.shape ||
        g.values[y].dtype != xv.dtype)
      continue;
    const int64_t channels = xv.shape[1];
    const Tensor* params[4];
    bool ok = true;
    for (int k = 0; k < 4; ++k) {
      params[k] = const_data(g, bn.inputs[1 + k]);
      ok = ok && params[k] && is_float(params[k]->dtype()) && params[k]->numel() == channels;
    }
    if (!ok) continue;
    const double eps = bn.attrs.f("epsilon", 1e-5);
    std::vector<double> s(static_cast<size_t>(channels)), t(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) {
      const double var = params[3]->get_f64(c);
      s[c] = params[0]->get_f64(c) / std::sqrt(var + eps);
      t[c] = params[1]->get_f64(c) - params[2]->get_f64(c) * s[c];
    }
    if (!std::all_of(s.begin(), s.end(), [](double e) { return std::isfinite(e); })) continue;
    const std::string base = bn.name.empty() ? "batchnorm" : bn.name;
    const DType dt = xv.dtype;
    const Shape xshape = xv.shape;  // copies: adding values below invalidates references
    const size_t rank = xshape.size();

    const int p = g.producer(x);
    if (p >= 0 && output_channel_axis(g, p) == 1 && single_use(g, x)) {
      const bool matmul = g.nodes[p].op == OpKind::MatMul;
      const bool has_shift = !all_equal_to(t, 0.0);
      if (can_fold_affine(g, p, true, !matmul)) {
        fold_affine(g, p, &s, matmul ? nullptr : &t);
        if (!matmul || !has_shift) {
          absorb_successor(g, p, int(bi));
        } else {
          const int tc = add_const_values(g, base + "_shift", dt, {channels}, t);
          Node& add = g.nodes[bi];
          add.op = OpKind::Add;
          add.attrs = Attrs();
          add.inputs = {x, tc};
        }
        changed = true;
        continue;
      }
    }

    // Lone BatchNorm: Mul by s then Add t, constants shaped [C,1,...,1].
    Shape cshape(rank - 1, 1);
    cshape[0] = channels;
    const int sc = add_const_values(g, base + "_scale", dt, cshape, s);
    const int tc = add_const_values(g, base + "_shift", dt, cshape, t);
    const int mid = add_temp_value(g, base + "_scaled", dt, xshape);
    Node mul;
    mul.name = base + "_mul";
    mul.op = OpKind::Mul;
    mul.inputs = {x, sc};
    mul.outputs = {mid};
    Node& add = g.nodes[bi];
    add.op = OpKind::Add;
    add.attrs = Attrs();
    add.inputs = {mid, tc};
    add.name = base + "_add";
    g.nodes.insert(g.nodes.begin() + std::ptrdiff_t(bi), std::move(mul));
    ++bi;  // skip the Add now at bi+1
    changed = true;
  }
  if (changed) g.compact();
  return changed;
}

}  // namespace opv::ir
