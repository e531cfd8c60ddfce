/* Canonicalisation of neural-network ONNX ops: Conv, BatchNormalization, Gemm, MatMul, pools,
 * reductions, Softmax and LayerNormalization.
 *
 * 1. Conv/pools: 2-D only; auto_pad (SAME_UPPER/SAME_LOWER/VALID) is resolved into explicit
 *    pads (top,left,bottom,right); defaults for strides/dilations/group are made explicit.
 *    Pools with ceil_mode get their output shape computed here and carried on the value.
 * 2. Reductions: axes from the attribute or (opset 18+, ReduceSum 13+) a constant input,
 *    normalised and sorted; empty axes reduce everything unless noop_with_empty_axes.
 * 3. Softmax before opset 13 coerces the input to 2-D at `axis`; unless `axis` is the last
 *    axis this becomes Reshape -> Softmax(axis=1) -> Reshape.
 * 4. Extra outputs (BatchNorm running stats, LayerNorm mean/inv_std, MaxPool indices) must be
 *    unused.
 * Invariant: emitted nodes carry exactly the attributes ops.def lists for them.
 */
#include <algorithm>

#include "import/importer.h"

namespace opv::onnx_import {

namespace {

std::vector<int64_t> two(const NodeCtx& c, const char* key, int64_t dflt) {
  auto v = c.ints(key, {dflt, dflt});
  if (v.size() != 2) c.fail(key, " must have 2 values for a 2-D op, got ", v.size());
  return v;
}

// kernel_shape / strides / dilations: two values, each >= 1 (0 would divide by zero below,
// negatives make no window).
std::vector<int64_t> two_positive(const NodeCtx& c, const char* key, int64_t dflt) {
  auto v = two(c, key, dflt);
  for (int64_t x : v)
    if (x < 1) c.fail("attribute '", key, "' must be >= 1, got ", shape_str(v));
  return v;
}

// Extent covered by a window of k taps at dilation d: (k - 1) * d + 1, overflow-checked.
int64_t window_extent(const NodeCtx& c, int64_t k, int64_t d) {
  try {
    return checked_add(checked_mul(k - 1, d, "kernel extent"), 1, "kernel extent");
  } catch (const Error& e) {
    c.fail("kernel_shape ", k, " with dilation ", d, ": ", e.what());
  }
}

// Resolves auto_pad/pads for a 2-D window op over input spatial dims `in`.
std::vector<int64_t> resolve_pads(const NodeCtx& c, const Shape& in, const std::vector<int64_t>& k,
                                  const std::vector<int64_t>& s, const std::vector<int64_t>& d) {
  std::string ap = c.s("auto_pad", "NOTSET");
  std::vector<int64_t> pads(4, 0);
  if (ap == "NOTSET") {
    pads = c.ints("pads", {0, 0, 0, 0});
    if (pads.size() != 4) c.fail("pads must have 4 values for a 2-D op, got ", pads.size());
  } else if (ap == "VALID") {
    // no padding
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (int i = 0; i < 2; ++i) {
      OPV_ASSERT(s[size_t(i)] >= 1);  // two_positive
      int64_t out = in[size_t(i)] / s[size_t(i)] + (in[size_t(i)] % s[size_t(i)] != 0);
      int64_t eff = window_extent(c, k[size_t(i)], d[size_t(i)]);
      int64_t total = 0;
      try {
        total = checked_sub(checked_add(checked_mul(std::max<int64_t>(out - 1, 0), s[size_t(i)], "pads"), eff, "pads"),
                            in[size_t(i)], "pads");
      } catch (const Error& e) {
        c.fail("auto_pad ", ap, ": ", e.what());
      }
      total = std::max<int64_t>(0, total);
      int64_t small = total / 2, big = total - small;
      pads[size_t(i)] = ap == "SAME_UPPER" ? small : big;
      pads[size_t(i) + 2] = ap == "SAME_UPPER" ? big : small;
    }
  } else {
    c.fail("auto_pad '", ap, "' is not supported");
  }
  return pads;
}


// 1-D window attributes as their 2-D equivalent over [N,C,1,L]: {1, v}, v >= 1.
std::vector<int64_t> one_d(const NodeCtx& c, const char* key, int64_t dflt) {
  auto v = c.ints(key, {dflt});
  if (v.size() != 1) c.fail(key, " must have 1 value for a 1-D op, got ", v.size());
  if (v[0] < 1) c.fail("attribute '", key, "' must be >= 1, got ", v[0]);
  return {1, v[0]};
}

// Pads of a 1-D window op as 2-D pads (0, begin, 0, end) over [N,C,1,L].
std::vector<int64_t> resolve_pads_1d(const NodeCtx& c, int64_t len, const std::vector<int64_t>& k,
                                     const std::vector<int64_t>& s, const std::vector<int64_t>& d) {
  if (c.s("auto_pad", "NOTSET") == "NOTSET") {
    auto p = c.ints("pads", {0, 0});
    if (p.size() != 2) c.fail("pads must have 2 values for a 1-D op, got ", p.size());
    return {0, p[0], 0, p[1]};
  }
  return resolve_pads(c, {1, len}, k, s, d);
}

void conv(NodeCtx& c) {
  c.allow_attrs({"group", "strides", "pads", "dilations", "auto_pad", "kernel_shape"});
  int x = c.in(0), w = c.in(1);
  const Shape ws = c.val(w).shape;
  const Shape xs = c.val(x).shape;
  const bool oned = xs.size() == 3 && ws.size() == 3;
  if (!oned && (ws.size() != 4 || xs.size() != 4))
    c.fail("only 1-D and 2-D convolution are supported; input ", shape_str(xs), " weight ", shape_str(ws));
  std::vector<int64_t> k = oned ? std::vector<int64_t>{ws[2]} : std::vector<int64_t>{ws[2], ws[3]};
  if (c.has("kernel_shape") && c.ints("kernel_shape") != k)
    c.fail("kernel_shape ", shape_str(c.ints("kernel_shape")), " disagrees with weight ", shape_str(ws));
  Attrs a;
  a.set("group", c.i("group", 1));
  if (oned) {  // [N,C,L] as [N,C,1,L]
    auto s = one_d(c, "strides", 1), d = one_d(c, "dilations", 1);
    a.set("strides", s);
    a.set("pads", resolve_pads_1d(c, xs[2], {1, ws[2]}, s, d));
    a.set("dilations", d);
    int x4 = c.emit_tmp(OpKind::Reshape, {}, {x}, "x2d", Shape{xs[0], xs[1], 1, xs[2]});
    int w4 = c.emit_tmp(OpKind::Reshape, {}, {w}, "w2d", Shape{ws[0], ws[1], 1, ws[2]});
    int y4 = c.emit_tmp(OpKind::Conv, a, {x4, w4, c.in_opt(2)}, "y2d");
    Shape ys = c.val(y4).shape;
    c.emit_out(OpKind::Reshape, {}, {y4}, Shape{ys[0], ys[1], ys[3]});
    return;
  }
  auto s = two_positive(c, "strides", 1), d = two_positive(c, "dilations", 1);
  a.set("strides", s);
  a.set("pads", resolve_pads(c, {xs[2], xs[3]}, k, s, d));
  a.set("dilations", d);
  c.emit_out(OpKind::Conv, a, {x, w, c.in_opt(2)});
}

void pool(NodeCtx& c, bool is_max) {
  if (is_max) {
    c.allow_attrs({"kernel_shape", "strides", "pads", "dilations", "auto_pad", "ceil_mode", "storage_order"});
    c.require_unused_outputs_from(1, "Indices");
  } else {
    c.allow_attrs({"kernel_shape", "strides", "pads", "dilations", "auto_pad", "ceil_mode", "count_include_pad"});
  }
  int x = c.in(0);
  const Shape xs1 = c.val(x).shape;
  const bool oned = xs1.size() == 3;
  if (xs1.size() != 4 && !oned) c.fail("only 1-D and 2-D pooling on [N,C,L] / [N,C,H,W] are supported, input is ", shape_str(xs1));
  if (!c.has("kernel_shape")) c.fail("attribute 'kernel_shape' is required");
  const Shape xs = oned ? Shape{xs1[0], xs1[1], 1, xs1[2]} : xs1;
  std::vector<int64_t> k, s, d, pads;
  if (oned) {
    k = one_d(c, "kernel_shape", 1), s = one_d(c, "strides", 1), d = one_d(c, "dilations", 1);
    pads = resolve_pads_1d(c, xs1[2], k, s, d);
    x = c.emit_tmp(OpKind::Reshape, {}, {x}, "x2d", xs);
  } else {
    k = two_positive(c, "kernel_shape", 1), s = two_positive(c, "strides", 1), d = two_positive(c, "dilations", 1);
    pads = resolve_pads(c, {xs[2], xs[3]}, k, s, d);
  }
  if (!is_max && (d[0] != 1 || d[1] != 1)) c.fail("dilations ", shape_str(d), " are not supported");
  bool ceil_mode = c.i("ceil_mode", 0) != 0;
  std::string ap = c.s("auto_pad", "NOTSET");
  Shape y = xs;
  for (int64_t p : pads)
    if (p < 0) c.fail("attribute 'pads' must be >= 0, got ", shape_str(pads));
  for (int i = 0; i < 2; ++i) {
    const int64_t in = xs[size_t(2 + i)], st = s[size_t(i)], eff = window_extent(c, k[size_t(i)], d[size_t(i)]);
    if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      y[size_t(2 + i)] = in / st + (in % st != 0);
      continue;
    }
    int64_t span = 0, lead = 0;
    try {
      lead = checked_add(in, pads[size_t(i)], "padded input");
      span = checked_sub(checked_add(lead, pads[size_t(i) + 2], "padded input"), eff, "padded input");
    } catch (const Error& e) {
      c.fail("pads ", shape_str(pads), ": ", e.what());
    }
    if (span < 0) c.fail("kernel window ", eff, " is larger than the padded input ", shape_str(xs));
    int64_t out = (ceil_mode ? span / st + (span % st != 0) : span / st) + 1;
    // The last window must start inside the input or its leading padding: (out-1)*st < lead.
    if (ceil_mode && out - 1 >= lead / st + (lead % st != 0)) --out;
    y[size_t(2 + i)] = out;
  }
  Attrs a;
  a.set("kernel", k);
  a.set("strides", s);
  a.set("pads", pads);
  if (is_max) a.set("dilations", d);
  else a.set("count_include_pad", c.i("count_include_pad", 0));
  if (oned) {
    int y4 = c.emit_tmp(is_max ? OpKind::MaxPool : OpKind::AveragePool, a, {x}, "y2d", y);
    c.emit_out(OpKind::Reshape, {}, {y4}, Shape{y[0], y[1], y[3]});
    return;
  }
  c.emit_out(is_max ? OpKind::MaxPool : OpKind::AveragePool, a, {x}, y);
}

void reduce(NodeCtx& c, OpKind op) {
  bool axes_as_input = op == OpKind::ReduceSum ? c.im.opset >= 13 : c.im.opset >= 18;
  std::vector<int64_t> axes;
  if (axes_as_input) {
    c.allow_attrs({"keepdims", "noop_with_empty_axes"});
    if (c.has_input(1)) axes = c.const_ints(1, "axes");
  } else {
    c.allow_attrs({"keepdims", "axes"});
    axes = c.ints("axes");
  }
  int x = c.in(0);
  int64_t rank = int64_t(c.val(x).shape.size());
  if (axes.empty()) {
    if (axes_as_input && c.i("noop_with_empty_axes", 0) != 0) {
      c.alias_out(0, x);
      return;
    }
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  for (int64_t& ax : axes) {
    if (ax < -rank || ax >= rank) c.fail("axis ", ax, " out of range for rank ", rank);
    if (ax < 0) ax += rank;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (axes.empty()) c.fail("reduction of a rank-0 tensor is not supported");
  Attrs a;
  a.set("axes", axes);
  a.set("keepdims", c.i("keepdims", 1));
  c.emit_out(op, a, {x});
}

void softmax(NodeCtx& c, OpKind op) {
  c.allow_attrs({"axis"});
  int x = c.in(0);
  Shape xs = c.val(x).shape;
  int64_t rank = int64_t(xs.size());
  bool legacy = c.im.opset < 13;
  int64_t axis = c.i("axis", legacy ? 1 : -1);
  if (axis < -rank || axis >= rank || rank == 0) c.fail("axis ", axis, " out of range for rank ", rank);
  if (axis < 0) axis += rank;
  Attrs a;
  if (!legacy || axis == rank - 1) {
    a.set("axis", legacy ? rank - 1 : axis);
    c.emit_out(op, a, {x});
    return;
  }
  // opset < 13: softmax over the flattened trailing block [axis, rank).
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= xs[size_t(i)];
  int flat = c.emit_tmp(OpKind::Reshape, {}, {x}, "flatten2d", Shape{outer, inner});
  a.set("axis", int64_t(1));
  int sm = c.emit_tmp(op, a, {flat}, "softmax2d");
  c.emit_out(OpKind::Reshape, {}, {sm}, xs);
}

}  // namespace

bool canonicalize_nn(NodeCtx& c) {
  const std::string& t = c.op();
  Attrs a;
  if (t == "Conv") {
    conv(c);
  } else if (t == "BatchNormalization") {
    c.allow_attrs({"epsilon", "momentum", "training_mode", "spatial"});
    if (c.i("training_mode", 0) != 0) c.fail("training_mode=1 is not supported");
    if (c.i("spatial", 1) != 1) c.fail("spatial=0 is not supported");
    c.require_unused_outputs_from(1, "running statistics");
    a.set("epsilon", c.f("epsilon", 1e-5));
    c.emit_out(OpKind::BatchNorm, a, {c.in(0), c.in(1), c.in(2), c.in(3), c.in(4)});
  } else if (t == "Gemm") {
    c.allow_attrs({"transA", "transB", "alpha", "beta"});
    a.set("transA", c.i("transA", 0));
    a.set("transB", c.i("transB", 0));
    a.set("alpha", c.f("alpha", 1.0));
    a.set("beta", c.f("beta", 1.0));
    c.emit_out(OpKind::Gemm, a, {c.in(0), c.in(1), c.in_opt(2)});
  } else if (t == "MatMul") {
    c.allow_attrs({});
    c.emit_out(OpKind::MatMul, {}, {c.in(0), c.in(1)});
  } else if (t == "MaxPool" || t == "AveragePool") {
    pool(c, t == "MaxPool");
  } else if (t == "GlobalAveragePool" || t == "GlobalMaxPool") {
    c.allow_attrs({});
    c.emit_out(t == "GlobalMaxPool" ? OpKind::GlobalMaxPool : OpKind::GlobalAveragePool, {}, {c.in(0)});
  } else if (t == "ReduceMean") {
    reduce(c, OpKind::ReduceMean);
  } else if (t == "ReduceSum") {
    reduce(c, OpKind::ReduceSum);
  } else if (t == "ReduceMax") {
    reduce(c, OpKind::ReduceMax);
  } else if (t == "ReduceMin") {
    reduce(c, OpKind::ReduceMin);
  } else if (t == "Softmax") {
    softmax(c, OpKind::Softmax);
  } else if (t == "LogSoftmax") {
    softmax(c, OpKind::LogSoftmax);
  } else if (t == "Hardmax") {
    softmax(c, OpKind::Hardmax);
  } else if (t == "ReduceProd") {
    reduce(c, OpKind::ReduceProd);
  } else if (t == "ReduceL1") {
    reduce(c, OpKind::ReduceL1);
  } else if (t == "ReduceL2") {
    reduce(c, OpKind::ReduceL2);
  } else if (t == "ReduceLogSum") {
    reduce(c, OpKind::ReduceLogSum);
  } else if (t == "ReduceLogSumExp") {
    reduce(c, OpKind::ReduceLogSumExp);
  } else if (t == "ReduceSumSquare") {
    reduce(c, OpKind::ReduceSumSquare);
  } else if (t == "LayerNormalization") {
    c.allow_attrs({"axis", "epsilon", "stash_type"});
    c.require_unused_outputs_from(1, "Mean/InvStdDev");
    int x = c.in(0);
    int64_t rank = int64_t(c.val(x).shape.size());
    int64_t axis = c.i("axis", -1);
    if (axis < -rank || axis >= rank) c.fail("axis ", axis, " out of range for rank ", rank);
    if (axis < 0) axis += rank;
    a.set("axis", axis);
    a.set("epsilon", c.f("epsilon", 1e-5));
    c.emit_out(OpKind::LayerNorm, a, {x, c.in(1), c.in_opt(2)});
  } else {
    return false;
  }
  return true;
}

}  // namespace opv::onnx_import
