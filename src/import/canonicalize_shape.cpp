/* Canonicalisation of data-movement and shape ONNX ops.
 *
 * 1. Constant, Shape, Size become constants directly; ConstantOfShape and Range are emitted
 *    with constant inputs and therefore folded (unless the result would be huge).
 * 2. Flatten, Squeeze, Unsqueeze and Reshape (0 / -1 / allowzero resolved here) become
 *    Reshape with the output shape on the value.
 * 3. Tensor-valued parameters that must be compile-time constants (Reshape shape, Slice
 *    starts/ends/axes/steps, Split sizes, Tile repeats, Expand shape, Pad pads/value/axes,
 *    Resize scales/sizes) are read from constant inputs (or attributes in older opsets) into
 *    the canonical attributes of ops.def.
 * 4. Slice is clamped like ONNX and normalised to every axis (starts[rank], steps[rank]);
 *    Resize output shapes are computed and its scales stored per axis.
 * Invariant: every emitted node carries the attributes and output shape ops.def documents.
 */
#include <algorithm>
#include <cmath>

#include "import/importer.h"

namespace opv::onnx_import {

namespace {

int64_t norm_axis(const NodeCtx& c, int64_t ax, int64_t rank) {
  if (ax < -rank || ax >= rank) c.fail("axis ", ax, " out of range for rank ", rank);
  return ax < 0 ? ax + rank : ax;
}

void constant(NodeCtx& c) {
  if (c.n.attribute_size() != 1) c.fail("expects exactly one value attribute");
  const auto& at = c.n.attribute(0);
  Tensor t;
  if (at.name() == "value") {
    t = tensor_from_proto(at.t(), c.im.base_dir(), c.im.limits());
  } else if (at.name() == "value_float") {
    t = Tensor(DType::F32, {});
    t.set_f64(0, at.f());
  } else if (at.name() == "value_floats") {
    t = Tensor(DType::F32, {int64_t(at.floats_size())});
    for (int i = 0; i < at.floats_size(); ++i) t.set_f64(i, at.floats(i));
  } else if (at.name() == "value_int") {
    t = Tensor::from_i64({at.i()}).reshaped({});
  } else if (at.name() == "value_ints") {
    t = Tensor::from_i64({at.ints().begin(), at.ints().end()});
  } else {
    c.fail("attribute '", at.name(), "' is not supported");
  }
  c.bind_out(0, c.im.add_const(c.out_name(0), std::move(t)));
}

void reshape_to(NodeCtx& c, int x, const Shape& y) { c.emit_out(OpKind::Reshape, {}, {x}, y); }

void reshape(NodeCtx& c) {
  c.allow_attrs({"allowzero"});
  int x = c.in(0);
  const Shape& xs = c.val(x).shape;
  auto spec = c.const_ints(1, "shape");
  bool allowzero = c.i("allowzero", 0) != 0;
  Shape y(spec.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t s = spec[i];
    if (s == -1) {
      if (infer >= 0) c.fail("shape ", shape_str(spec), " has more than one -1");
      infer = int(i);
      continue;
    }
    if (s == 0 && !allowzero) {
      if (i >= xs.size()) c.fail("shape ", shape_str(spec), " copies dim ", i, " from input ", shape_str(xs));
      s = xs[i];
    }
    if (s < 0 || s > kMaxImportElems) c.fail("shape ", shape_str(spec), " has invalid dim ", s);
    y[i] = s;
    if (s != 0 && known > kMaxImportElems / s) c.fail("shape ", shape_str(spec), " is too large");
    known *= s;
  }
  if (infer >= 0) {
    int64_t total = numel(xs);
    if (known == 0 || total % known != 0) c.fail("cannot reshape ", shape_str(xs), " to ", shape_str(spec));
    y[size_t(infer)] = total / known;
  }
  reshape_to(c, x, y);
}

void squeeze(NodeCtx& c) {
  int x = c.in(0);
  const Shape& xs = c.val(x).shape;
  int64_t rank = int64_t(xs.size());
  std::vector<int64_t> axes;
  if (c.im.opset < 13) {
    c.allow_attrs({"axes"});
    axes = c.ints("axes");
  } else {
    c.allow_attrs({});
    if (c.has_input(1)) axes = c.const_ints(1, "axes");
  }
  std::vector<char> drop(size_t(rank), 0);
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) drop[size_t(i)] = xs[size_t(i)] == 1;
  }
  for (int64_t ax : axes) {
    ax = norm_axis(c, ax, rank);
    if (xs[size_t(ax)] != 1) c.fail("cannot squeeze axis ", ax, " of ", shape_str(xs), ": its size is not 1");
    drop[size_t(ax)] = 1;
  }
  Shape y;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[size_t(i)]) y.push_back(xs[size_t(i)]);
  reshape_to(c, x, y);
}

void unsqueeze(NodeCtx& c) {
  int x = c.in(0);
  const Shape& xs = c.val(x).shape;
  std::vector<int64_t> axes;
  if (c.im.opset < 13) {
    c.allow_attrs({"axes"});
    axes = c.ints("axes");
  } else {
    c.allow_attrs({});
    axes = c.const_ints(1, "axes");
  }
  int64_t out_rank = int64_t(xs.size() + axes.size());
  std::vector<char> ins(size_t(out_rank), 0);
  for (int64_t ax : axes) {
    ax = norm_axis(c, ax, out_rank);
    if (ins[size_t(ax)]) c.fail("axes ", shape_str(axes), " repeat axis ", ax);
    ins[size_t(ax)] = 1;
  }
  Shape y;
  size_t k = 0;
  for (int64_t i = 0; i < out_rank; ++i) y.push_back(ins[size_t(i)] ? 1 : xs[k++]);
  reshape_to(c, x, y);
}

void flatten(NodeCtx& c) {
  c.allow_attrs({"axis"});
  int x = c.in(0);
  const Shape& xs = c.val(x).shape;
  int64_t rank = int64_t(xs.size());
  int64_t axis = c.i("axis", 1);
  if (axis < -rank || axis > rank) c.fail("axis ", axis, " out of range for rank ", rank);
  if (axis < 0) axis += rank;
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? a : b) *= xs[size_t(i)];
  reshape_to(c, x, {a, b});
}

void split(NodeCtx& c) {
  int x = c.in(0);
  const Shape& xs = c.val(x).shape;
  int64_t axis = norm_axis(c, c.i("axis", 0), int64_t(xs.size()));
  std::vector<int64_t> sizes;
  if (c.im.opset < 13) {
    c.allow_attrs({"axis", "split"});
    sizes = c.ints("split");
  } else {
    c.allow_attrs({"axis", "num_outputs"});
    if (c.has_input(1)) sizes = c.const_ints(1, "split");
  }
  int64_t n = c.num_outputs();
  int64_t dim = xs[size_t(axis)];
  if (sizes.empty()) {
    if (c.has("num_outputs")) {
      n = c.i("num_outputs", 0);
      if (n != c.num_outputs()) c.fail("num_outputs ", n, " but the node has ", c.num_outputs(), " outputs");
      int64_t each = (dim + n - 1) / n;
      for (int64_t i = 0; i < n; ++i) sizes.push_back(std::max<int64_t>(0, std::min(each, dim - each * i)));
    } else {
      if (n <= 0 || dim % n != 0) c.fail("axis ", axis, " of ", shape_str(xs), " does not split evenly into ", n);
      sizes.assign(size_t(n), dim / n);
    }
  }
  if (int64_t(sizes.size()) != c.num_outputs())
    c.fail("split ", shape_str(sizes), " has ", sizes.size(), " sizes for ", c.num_outputs(), " outputs");
  Attrs a;
  a.set("axis", axis);
  a.set("split", sizes);
  std::vector<std::string> names;
  for (int i = 0; i < c.num_outputs(); ++i)
    names.push_back(c.out_name(i).empty() ? c.name + "/unused" + std::to_string(i) : c.out_name(i));
  auto outs = c.im.emit(c, OpKind::Split, a, {x}, names);
  for (int i = 0; i < c.num_outputs(); ++i)
    if (!c.out_name(i).empty()) c.bind_out(i, outs[size_t(i)]);
}

void slice(NodeCtx& c) {
  int x = c.in(0);
  const Shape& xs = c.val(x).shape;
  int64_t rank = int64_t(xs.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.im.opset < 10) {  // opset 1-9: starts/ends/axes are attributes, no steps
    c.allow_attrs({"starts", "ends", "axes"});
    if (!c.has("starts") || !c.has("ends")) c.fail("attributes 'starts' and 'ends' are required");
    starts = c.ints("starts");
    ends = c.ints("ends");
    axes = c.ints("axes");
  } else {
    c.allow_attrs({});
    starts = c.const_ints(1, "starts");
    ends = c.const_ints(2, "ends");
    if (c.has_input(3)) axes = c.const_ints(3, "axes");
    if (c.has_input(4)) steps = c.const_ints(4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts/ends/axes/steps have different lengths (", starts.size(), "/", ends.size(), "/", axes.size(),
           "/", steps.size(), ")");
  std::vector<int64_t> st(size_t(rank), 0), sp(size_t(rank), 1);
  Shape y = xs;
  std::vector<char> seen(size_t(rank), 0);
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t ax = norm_axis(c, axes[k], rank);
    if (seen[size_t(ax)]) c.fail("axis ", ax, " appears twice");
    seen[size_t(ax)] = 1;
    int64_t dim = xs[size_t(ax)], step = steps[k];
    if (step == 0) c.fail("step of axis ", ax, " is zero");
    if (step == INT64_MIN) c.fail("step of axis ", ax, " is out of range");
    int64_t s = starts[k], e = ends[k];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t len;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      len = e > s ? (e - s - 1) / step + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      len = s > e ? (s - e - 1) / (-step) + 1 : 0;
    }
    st[size_t(ax)] = len > 0 ? s : 0;
    sp[size_t(ax)] = step;
    y[size_t(ax)] = len;
  }
  bool whole = y == xs;
  for (size_t i = 0; i < st.size(); ++i) whole = whole && st[i] == 0 && sp[i] == 1;
  if (whole) {
    c.alias_out(0, x);
    return;
  }
  Attrs a;
  a.set("starts", st);
  a.set("steps", sp);
  c.emit_out(OpKind::Slice, a, {x}, y);
}

void pad(NodeCtx& c) {
  int x = c.in(0);
  int64_t rank = int64_t(c.val(x).shape.size());
  std::string mode = c.s("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") c.fail("mode '", mode, "' is not supported");
  std::vector<int64_t> pads;
  double value = 0;
  if (c.im.opset < 11) {
    c.allow_attrs({"mode", "pads", "value"});
    pads = c.ints("pads");
    value = c.f("value", 0.0);
  } else {
    c.allow_attrs({"mode"});
    pads = c.const_ints(1, "pads");
    if (c.has_input(2)) {
      const Tensor& cv = c.const_in(2, "constant_value");
      if (cv.numel() > 1) c.fail("input 'constant_value' must be a scalar, got ", shape_str(cv.shape()));
      if (cv.numel() == 1) value = cv.get_f64(0);
    }
    if (c.has_input(3)) {
      auto axes = c.const_ints(3, "axes");
      if (pads.size() != 2 * axes.size())
        c.fail("pads has ", pads.size(), " values for ", axes.size(), " axes (needs ", 2 * axes.size(), ")");
      std::vector<int64_t> full(size_t(2 * rank), 0);
      for (size_t k = 0; k < axes.size(); ++k) {
        int64_t ax = norm_axis(c, axes[k], rank);
        full[size_t(ax)] = pads[k];
        full[size_t(ax + rank)] = pads[k + axes.size()];
      }
      pads = full;
    }
  }
  if (int64_t(pads.size()) != 2 * rank) c.fail("pads has ", pads.size(), " values, rank ", rank, " needs ", 2 * rank);
  Attrs a;
  a.set("mode", mode);
  a.set("pads", pads);
  a.set("value", value);
  c.emit_out(OpKind::Pad, a, {x});
}

void resize(NodeCtx& c) {
  c.allow_attrs({"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                 "extrapolation_value", "antialias", "axes", "keep_aspect_ratio_policy"});
  int x = c.in(0);
  const Shape& xs = c.val(x).shape;
  int64_t rank = int64_t(xs.size());
  std::string mode = c.s("mode", "nearest");
  if (mode != "nearest" && mode != "linear") c.fail("mode '", mode, "' is not supported");
  std::string coord = c.s("coordinate_transformation_mode", "half_pixel");
  if (coord != "half_pixel" && coord != "asymmetric" && coord != "align_corners" && coord != "pytorch_half_pixel" &&
      coord != "half_pixel_symmetric")
    c.fail("coordinate_transformation_mode '", coord, "' is not supported");
  std::string nearest = c.s("nearest_mode", "round_prefer_floor");
  if (nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" && nearest != "floor" && nearest != "ceil")
    c.fail("nearest_mode '", nearest, "' is not supported");
  if (c.i("exclude_outside", 0) != 0) c.fail("exclude_outside=1 is not supported");
  if (c.i("antialias", 0) != 0) c.fail("antialias=1 is not supported");
  if (c.s("keep_aspect_ratio_policy", "stretch") != "stretch")
    c.fail("keep_aspect_ratio_policy '", c.s("keep_aspect_ratio_policy", ""), "' is not supported");
  std::vector<int64_t> axes = c.ints("axes");
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (int64_t& ax : axes) ax = norm_axis(c, ax, rank);

  std::vector<double> scales(size_t(rank), 1.0);
  Shape y = xs;
  // Opset 10: Resize(X, scales) with asymmetric coordinates (as Upsample); nearest rounds down.
  // Rounding for nearest downsampling differs between runtimes in opset 10: refused.
  const bool v10 = c.im.opset < 11;
  if (v10) {
    if (c.attr("coordinate_transformation_mode") || c.attr("nearest_mode") || c.attr("cubic_coeff_a"))
      c.fail("opset 10 Resize has only the 'mode' attribute");
    coord = "asymmetric";
    nearest = "floor";
  }
  const Tensor* sc = c.has_input(v10 ? 1 : 2) ? &c.const_in(v10 ? 1 : 2, "scales") : nullptr;
  if (v10 && mode == "nearest" && sc)
    for (int64_t i = 0; i < sc->numel(); ++i)
      if (sc->get_f64(i) < 1.0)
        c.fail("opset 10 nearest Resize with a scale below 1 is ambiguous (rounding differs between runtimes); "
               "convert the model to opset 11 or later");
  if (sc && sc->numel() > 0) {
    if (sc->numel() != int64_t(axes.size())) c.fail("scales has ", sc->numel(), " values for ", axes.size(), " axes");
    for (size_t k = 0; k < axes.size(); ++k) {
      double s = sc->get_f64(int64_t(k));
      // A scale that is infinite as a float would make 0 * scale NaN on an empty axis.
      if (!(s > 0) || !std::isfinite(float(s)) || !(double(xs[size_t(axes[k])]) * s <= double(kMaxImportElems)))
        c.fail("scale ", s, " must be positive, finite and keep the axis size in range");
      scales[size_t(axes[k])] = s;
      // float arithmetic like onnxruntime: floor(in * scale)
      y[size_t(axes[k])] = int64_t(std::floor(float(xs[size_t(axes[k])]) * float(s)));
    }
  } else if (!v10 && c.has_input(3)) {
    auto sizes = c.const_ints(3, "sizes");
    if (sizes.size() != axes.size()) c.fail("sizes has ", sizes.size(), " values for ", axes.size(), " axes");
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t ax = axes[k];
      if (sizes[k] <= 0 || sizes[k] > kMaxImportElems || xs[size_t(ax)] <= 0)
        c.fail("sizes ", shape_str(sizes), " must be positive and in range");
      y[size_t(ax)] = sizes[k];
      scales[size_t(ax)] = double(sizes[k]) / double(xs[size_t(ax)]);
    }
  } else {
    c.fail("needs non-empty 'scales' or 'sizes'");
  }
  Attrs a;
  a.set("mode", mode);
  a.set("coord", coord);
  a.set("nearest_mode", nearest);
  a.set("scales", scales);
  c.emit_out(OpKind::Resize, a, {x}, y);
}

void constant_of_shape(NodeCtx& c) {
  c.allow_attrs({"value"});
  auto shape = c.const_ints(0, "input");
  for (int64_t d : shape)
    if (d < 0 || d > kMaxImportElems) c.fail("dim out of range in shape ", shape_str(shape));
  DType dt = DType::F32;
  double v = 0;
  if (const auto* at = c.attr("value")) {
    Tensor t = tensor_from_proto(at->t(), c.im.base_dir(), c.im.limits());
    if (t.numel() != 1) c.fail("attribute 'value' must hold one element");
    dt = t.dtype();
    v = t.get_f64(0);
  }
  Attrs a;
  a.set("value_f", v);
  a.set("dtype", int64_t(dt));
  c.emit_out(OpKind::ConstantOfShape, a, {}, shape);
}

}  // namespace

bool canonicalize_shape(NodeCtx& c) {
  const std::string& t = c.op();
  Attrs a;
  if (t == "Constant") {
    constant(c);
  } else if (t == "Shape") {
    c.allow_attrs({"start", "end"});
    const Shape& xs = c.val(c.in(0)).shape;
    int64_t r = int64_t(xs.size());
    int64_t s = c.i("start", 0), e = c.i("end", r);
    if (s < 0) s += r;
    if (e < 0) e += r;
    s = std::clamp<int64_t>(s, 0, r);
    e = std::clamp<int64_t>(e, 0, r);
    std::vector<int64_t> dims;
    for (int64_t i = s; i < e; ++i) dims.push_back(xs[size_t(i)]);
    c.bind_out(0, c.im.add_const(c.out_name(0), Tensor::from_i64(dims)));
  } else if (t == "Size") {
    c.allow_attrs({});
    c.bind_out(0, c.im.add_const(c.out_name(0), Tensor::from_i64({numel(c.val(c.in(0)).shape)}).reshaped({})));
  } else if (t == "ConstantOfShape") {
    constant_of_shape(c);
  } else if (t == "Range") {
    c.allow_attrs({});
    c.const_in(0, "start");
    c.const_in(1, "limit");
    c.const_in(2, "delta");
    c.emit_out(OpKind::Range, {}, {c.in(0), c.in(1), c.in(2)});
  } else if (t == "Reshape") {
    reshape(c);
  } else if (t == "Flatten") {
    flatten(c);
  } else if (t == "Squeeze") {
    squeeze(c);
  } else if (t == "Unsqueeze") {
    unsqueeze(c);
  } else if (t == "Transpose") {
    c.allow_attrs({"perm"});
    int x = c.in(0);
    int64_t r = int64_t(c.val(x).shape.size());
    std::vector<int64_t> perm;
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
    a.set("perm", c.ints("perm", perm));
    c.emit_out(OpKind::Transpose, a, {x});
  } else if (t == "Concat") {
    c.allow_attrs({"axis"});
    if (!c.has("axis")) c.fail("attribute 'axis' is required");
    std::vector<int> ins;
    for (int k = 0; k < c.num_inputs(); ++k) ins.push_back(c.in(k));
    if (ins.empty()) c.fail("needs at least one input");
    a.set("axis", norm_axis(c, c.i("axis", 0), int64_t(c.val(ins[0]).shape.size())));
    c.emit_out(OpKind::Concat, a, ins);
  } else if (t == "Split") {
    split(c);
  } else if (t == "Slice") {
    slice(c);
  } else if (t == "Gather") {
    c.allow_attrs({"axis"});
    int x = c.in(0);
    a.set("axis", norm_axis(c, c.i("axis", 0), int64_t(c.val(x).shape.size())));
    c.emit_out(OpKind::Gather, a, {x, c.in(1)});
  } else if (t == "Expand") {
    c.allow_attrs({});
    int x = c.in(0);
    auto shape = c.const_ints(1, "shape");
    Shape y;
    try {
      y = broadcast_shapes(c.val(x).shape, shape);
    } catch (const Error& e) {
      c.fail(e.what());
    }
    if (y == c.val(x).shape) c.alias_out(0, x);
    else c.emit_out(OpKind::Expand, {}, {x}, y);
  } else if (t == "Tile") {
    c.allow_attrs({});
    a.set("repeats", c.const_ints(1, "repeats"));
    c.emit_out(OpKind::Tile, a, {c.in(0)});
  } else if (t == "Pad") {
    pad(c);
  } else if (t == "Resize") {
    resize(c);
  } else {
    return false;
  }
  return true;
}

}  // namespace opv::onnx_import
