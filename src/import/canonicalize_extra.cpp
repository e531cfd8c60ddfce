/* Canonicalisation of the ONNX ops added for conformance (issue 12).
 *
 * 1. Element-wise: trigonometric/hyperbolic functions, Sign, Round, Softsign, Mish, Selu,
 *    ThresholdedRelu, Celu, Shrink, IsNaN, IsInf (attribute defaults made explicit), Xor,
 *    PRelu, Bitwise{And,Or,Xor}.
 * 2. Index/normalisation ops: ArgMax/ArgMin, TopK (k from the attribute before opset 10, a
 *    constant input after), LpNormalization, InstanceNormalization, CumSum (constant axis),
 *    Trilu (constant k), Einsum (implicit output and '...' expanded into an explicit equation).
 * 3. ConvTranspose (1-D through a reshape to 2-D; auto_pad/output_shape resolved into pads and
 *    output_padding), GridSample (4-D), GatherElements, ScatterElements / Scatter (opset 9-10).
 * 4. SpaceToDepth/DepthToSpace become Reshape -> Transpose -> Reshape; Upsample (opset 7-9)
 *    becomes Resize with asymmetric coordinates (nearest rounds down), as onnx's version
 *    converter maps it.
 * Invariant: emitted nodes carry exactly the attributes ops.def lists for them.
 */
#include <algorithm>
#include <cmath>

#include "import/importer.h"

namespace opv::onnx_import {

namespace {

constexpr SimpleOp kUnary[] = {
    {"Sin", OpKind::Sin},     {"Cos", OpKind::Cos},     {"Tan", OpKind::Tan},         {"Asin", OpKind::Asin},
    {"Acos", OpKind::Acos},   {"Atan", OpKind::Atan},   {"Sinh", OpKind::Sinh},       {"Cosh", OpKind::Cosh},
    {"Asinh", OpKind::Asinh}, {"Acosh", OpKind::Acosh}, {"Atanh", OpKind::Atanh},     {"Sign", OpKind::Sign},
    {"Round", OpKind::Round}, {"Softsign", OpKind::Softsign}, {"Mish", OpKind::Mish}, {"IsNaN", OpKind::IsNaN},
};

constexpr SimpleOp kBinary[] = {
    {"Xor", OpKind::Xor},
    {"PRelu", OpKind::PRelu},
    {"BitwiseAnd", OpKind::BitwiseAnd},
    {"BitwiseOr", OpKind::BitwiseOr},
    {"BitwiseXor", OpKind::BitwiseXor},
};

int64_t norm_axis(const NodeCtx& c, int64_t ax, int64_t rank) {
  if (ax < -rank || ax >= rank) c.fail("axis ", ax, " out of range for rank ", rank);
  return ax < 0 ? ax + rank : ax;
}

int64_t const_int_scalar(const NodeCtx& c, int i, const char* what) {
  auto v = c.const_ints(i, what);
  if (v.size() != 1) c.fail("input '", what, "' must hold one value, got ", v.size());
  return v[0];
}

void topk(NodeCtx& c) {
  int x = c.in(0);
  const Shape& xs = c.val(x).shape;
  int64_t k;
  if (c.im.opset < 10) {
    c.allow_attrs({"axis", "k"});
    if (!c.has("k")) c.fail("attribute 'k' is required");
    k = c.i("k", 0);
  } else {
    c.allow_attrs({"axis", "largest", "sorted"});
    k = const_int_scalar(c, 1, "K");
  }
  int64_t axis = norm_axis(c, c.i("axis", -1), int64_t(xs.size()));
  if (k < 0 || k > xs[size_t(axis)]) c.fail("K = ", k, " is out of range for axis ", axis, " of ", shape_str(xs));
  Attrs a;
  a.set("axis", axis);
  a.set("k", k);
  a.set("largest", c.i("largest", 1));
  a.set("sorted", c.i("sorted", 1));
  std::vector<std::string> names = {c.out_name(0).empty() ? c.name + "/values" : c.out_name(0),
                                    c.num_outputs() > 1 && !c.out_name(1).empty() ? c.out_name(1) : c.name + "/indices"};
  auto outs = c.im.emit(c, OpKind::TopK, a, {x}, names);
  for (int i = 0; i < std::min(2, c.num_outputs()); ++i)
    if (!c.out_name(i).empty()) c.bind_out(i, outs[size_t(i)]);
}

// Expands an einsum equation into the explicit form without '...': ellipsis dims get digit
// subscripts (right-aligned across operands), the implicit output is the ellipsis dims then the
// subscripts that appear once, in alphabetical order.
std::string explicit_einsum(const NodeCtx& c, std::string eq, const std::vector<int64_t>& ranks) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  bool has_out = arrow != std::string::npos;
  std::string out = has_out ? eq.substr(arrow + 2) : "";
  std::vector<std::string> terms;
  size_t st = 0;
  while (true) {
    size_t cm = lhs.find(',', st);
    terms.push_back(lhs.substr(st, cm == std::string::npos ? std::string::npos : cm - st));
    if (cm == std::string::npos) break;
    st = cm + 1;
  }
  if (terms.size() != ranks.size()) c.fail("equation '", eq, "' has ", terms.size(), " operands for ", ranks.size(), " inputs");
  int64_t ell = 0;  // number of ellipsis dims (the widest operand's)
  for (size_t i = 0; i < terms.size(); ++i) {
    size_t p = terms[i].find("...");
    int64_t named = int64_t(terms[i].size()) - (p == std::string::npos ? 0 : 3);
    if (p == std::string::npos) {
      if (named != ranks[i]) c.fail("operand ", i, " has rank ", ranks[i], " but subscripts '", terms[i], "'");
      continue;
    }
    if (terms[i].find("...", p + 3) != std::string::npos) c.fail("operand ", i, " has two ellipses");
    if (ranks[i] < named) c.fail("operand ", i, " has rank ", ranks[i], " below its subscripts '", terms[i], "'");
    ell = std::max(ell, ranks[i] - named);
  }
  if (ell > 10) c.fail("ellipsis covers ", ell, " dims (at most 10 supported)");
  auto ell_str = [&](int64_t n) {
    std::string s;
    for (int64_t k = ell - n; k < ell; ++k) s.push_back(char('0' + k));
    return s;
  };
  for (size_t i = 0; i < terms.size(); ++i) {
    size_t p = terms[i].find("...");
    if (p == std::string::npos) continue;
    int64_t n = ranks[i] - (int64_t(terms[i].size()) - 3);
    terms[i] = terms[i].substr(0, p) + ell_str(n) + terms[i].substr(p + 3);
  }
  if (has_out) {
    size_t p = out.find("...");
    if (p != std::string::npos) out = out.substr(0, p) + ell_str(ell) + out.substr(p + 3);
  } else {
    std::string once;
    for (char ch = 'A'; ch <= 'z'; ++ch) {
      if (!std::isalpha(static_cast<unsigned char>(ch))) continue;
      int n = 0;
      for (const auto& t : terms) n += int(std::count(t.begin(), t.end(), ch));
      if (n == 1) once.push_back(ch);
    }
    out = ell_str(ell) + once;
  }
  std::string r;
  for (size_t i = 0; i < terms.size(); ++i) r += (i ? "," : "") + terms[i];
  return r + "->" + out;
}

// ConvTranspose, 2-D (1-D through reshapes). Output size per axis:
// (in-1)*stride + (k-1)*dilation + 1 + output_padding - pad_begin - pad_end.
void conv_transpose(NodeCtx& c) {
  c.allow_attrs({"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"});
  int x = c.in(0), w = c.in(1);
  Shape xs = c.val(x).shape, ws = c.val(w).shape;
  const bool oned = xs.size() == 3;
  if (oned) {
    if (ws.size() != 3) c.fail("weight ", shape_str(ws), " must be 3-D for a 1-D input");
  } else if (xs.size() != 4 || ws.size() != 4) {
    c.fail("only 1-D and 2-D ConvTranspose are supported; input ", shape_str(xs), " weight ", shape_str(ws));
  }
  const size_t nd = oned ? 1 : 2;
  auto get = [&](const char* key, int64_t dflt, size_t n) {
    auto v = c.ints(key, std::vector<int64_t>(n, dflt));
    if (v.size() != n) c.fail("attribute '", key, "' must have ", n, " values, got ", v.size());
    return v;
  };
  auto s = get("strides", 1, nd), d = get("dilations", 1, nd), opad = get("output_padding", 0, nd);
  for (size_t i = 0; i < nd; ++i)
    if (s[i] < 1 || d[i] < 1 || opad[i] < 0) c.fail("strides/dilations must be >= 1 and output_padding >= 0");
  std::vector<int64_t> k(ws.begin() + 2, ws.end());
  if (c.has("kernel_shape") && c.ints("kernel_shape") != k)
    c.fail("kernel_shape ", shape_str(c.ints("kernel_shape")), " disagrees with weight ", shape_str(ws));
  std::vector<int64_t> pads(2 * nd, 0);
  std::string ap = c.s("auto_pad", "NOTSET");
  std::vector<int64_t> in(xs.begin() + 2, xs.end());
  if (c.has("output_shape")) {
    auto os = c.ints("output_shape");
    if (os.size() == nd + 2) os = std::vector<int64_t>(os.begin() + 2, os.end());
    if (os.size() != nd) c.fail("output_shape ", shape_str(os), " must have ", nd, " spatial values");
    for (size_t i = 0; i < nd; ++i) {
      int64_t full = (in[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 + opad[i];
      int64_t total = full - os[i];
      if (total < 0) c.fail("output_shape ", shape_str(os), " is larger than the transposed convolution yields");
      // ONNX: SAME_UPPER puts the smaller half first, anything else the larger half.
      pads[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + nd] = total - pads[i];
    }
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t i = 0; i < nd; ++i) {
      int64_t full = (in[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 + opad[i];
      int64_t total = std::max<int64_t>(0, full - in[i] * s[i]);
      pads[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + nd] = total - pads[i];
    }
  } else if (ap == "NOTSET") {
    pads = get("pads", 0, 2 * nd);
    for (int64_t p : pads)
      if (p < 0) c.fail("pads must be >= 0");
  } else if (ap != "VALID") {
    c.fail("auto_pad '", ap, "' is not supported");
  }
  Attrs a;
  a.set("group", c.i("group", 1));
  if (oned) {
    a.set("strides", std::vector<int64_t>{1, s[0]});
    a.set("dilations", std::vector<int64_t>{1, d[0]});
    a.set("output_padding", std::vector<int64_t>{0, opad[0]});
    a.set("pads", std::vector<int64_t>{0, pads[0], 0, pads[1]});
    int x4 = c.emit_tmp(OpKind::Reshape, {}, {x}, "x2d", Shape{xs[0], xs[1], 1, xs[2]});
    int w4 = c.emit_tmp(OpKind::Reshape, {}, {w}, "w2d", Shape{ws[0], ws[1], 1, ws[2]});
    int y4 = c.emit_tmp(OpKind::ConvTranspose, a, {x4, w4, c.in_opt(2)}, "y2d");
    Shape ys = c.val(y4).shape;
    c.emit_out(OpKind::Reshape, {}, {y4}, Shape{ys[0], ys[1], ys[3]});
    return;
  }
  a.set("strides", s);
  a.set("dilations", d);
  a.set("output_padding", opad);
  a.set("pads", pads);
  c.emit_out(OpKind::ConvTranspose, a, {x, w, c.in_opt(2)});
}

// SpaceToDepth / DepthToSpace on [N,C,H,W] as Reshape -> Transpose -> Reshape.
void space_depth(NodeCtx& c, bool to_depth) {
  if (to_depth) c.allow_attrs({"blocksize"});
  else c.allow_attrs({"blocksize", "mode"});
  int x = c.in(0);
  const Shape xs = c.val(x).shape;
  if (xs.size() != 4) c.fail("input must be 4-D [N,C,H,W], got ", shape_str(xs));
  int64_t b = c.i("blocksize", 0);
  if (b < 1) c.fail("attribute 'blocksize' must be >= 1");
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  if (to_depth) {
    if (H % b || W % b) c.fail("H and W (", H, ", ", W, ") must be divisible by blocksize ", b);
    int r = c.emit_tmp(OpKind::Reshape, {}, {x}, "split", Shape{N, C, H / b, b, W / b, b});
    Attrs a;
    a.set("perm", std::vector<int64_t>{0, 3, 5, 1, 2, 4});
    int t = c.emit_tmp(OpKind::Transpose, a, {r}, "perm");
    c.emit_out(OpKind::Reshape, {}, {t}, Shape{N, C * b * b, H / b, W / b});
    return;
  }
  if (C % (b * b)) c.fail("channels ", C, " must be divisible by blocksize^2 = ", b * b);
  std::string mode = c.s("mode", "DCR");
  Attrs a;
  int r;
  if (mode == "DCR") {
    r = c.emit_tmp(OpKind::Reshape, {}, {x}, "split", Shape{N, b, b, C / (b * b), H, W});
    a.set("perm", std::vector<int64_t>{0, 3, 4, 1, 5, 2});
  } else if (mode == "CRD") {
    r = c.emit_tmp(OpKind::Reshape, {}, {x}, "split", Shape{N, C / (b * b), b, b, H, W});
    a.set("perm", std::vector<int64_t>{0, 1, 4, 2, 5, 3});
  } else {
    c.fail("mode '", mode, "' is not supported");
  }
  int t = c.emit_tmp(OpKind::Transpose, a, {r}, "perm");
  c.emit_out(OpKind::Reshape, {}, {t}, Shape{N, C / (b * b), H * b, W * b});
}

void upsample(NodeCtx& c) {
  std::vector<double> scales;
  int x = c.in(0);
  const Shape xs = c.val(x).shape;
  if (c.im.opset < 9) {
    c.allow_attrs({"mode", "scales"});
    scales = c.floats("scales");
  } else {
    c.allow_attrs({"mode"});
    const Tensor& t = c.const_in(1, "scales");
    for (int64_t i = 0; i < t.numel(); ++i) scales.push_back(t.get_f64(i));
  }
  if (scales.size() != xs.size()) c.fail("scales has ", scales.size(), " values for rank ", xs.size());
  std::string mode = c.s("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear") c.fail("mode '", mode, "' is not supported");
  Shape y = xs;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!(scales[i] >= 1.0) || !std::isfinite(scales[i]) || !(double(xs[i]) * scales[i] <= double(kMaxImportElems)))
      c.fail("scale ", scales[i], " must be finite, >= 1 and keep the axis in range");
    y[i] = int64_t(std::floor(double(xs[i]) * scales[i]));
  }
  Attrs a;
  a.set("mode", mode);
  a.set("coord", std::string("asymmetric"));
  a.set("nearest_mode", std::string("floor"));
  a.set("scales", scales);
  c.emit_out(OpKind::Resize, a, {x}, y);
}

}  // namespace

bool canonicalize_extra(NodeCtx& c) {
  const std::string& t = c.op();
  if (emit_simple(c, kUnary, kBinary)) return true;
  Attrs a;
  if (t == "Selu") {
    c.allow_attrs({"alpha", "gamma"});
    a.set("alpha", c.f("alpha", 1.67326319217681884765625));
    a.set("gamma", c.f("gamma", 1.05070102214813232421875));
    c.emit_out(OpKind::Selu, a, {c.in(0)});
  } else if (t == "ThresholdedRelu" || t == "Celu") {
    c.allow_attrs({"alpha"});
    a.set("alpha", c.f("alpha", 1.0));
    if (t == "Celu" && a.f("alpha") == 0) c.fail("alpha must be non-zero");
    c.emit_out(t == "Celu" ? OpKind::Celu : OpKind::ThresholdedRelu, a, {c.in(0)});
  } else if (t == "Shrink") {
    c.allow_attrs({"bias", "lambd"});
    a.set("bias", c.f("bias", 0.0));
    a.set("lambd", c.f("lambd", 0.5));
    c.emit_out(OpKind::Shrink, a, {c.in(0)});
  } else if (t == "IsInf") {
    c.allow_attrs({"detect_negative", "detect_positive"});
    a.set("detect_negative", c.i("detect_negative", 1));
    a.set("detect_positive", c.i("detect_positive", 1));
    c.emit_out(OpKind::IsInf, a, {c.in(0)});
  } else if (t == "ArgMax" || t == "ArgMin") {
    c.allow_attrs({"axis", "keepdims", "select_last_index"});
    int x = c.in(0);
    a.set("axis", norm_axis(c, c.i("axis", 0), int64_t(c.val(x).shape.size())));
    a.set("keepdims", c.i("keepdims", 1));
    a.set("select_last_index", c.i("select_last_index", 0));
    c.emit_out(t == "ArgMax" ? OpKind::ArgMax : OpKind::ArgMin, a, {x});
  } else if (t == "TopK") {
    topk(c);
  } else if (t == "LpNormalization") {
    c.allow_attrs({"axis", "p"});
    int x = c.in(0);
    a.set("axis", norm_axis(c, c.i("axis", -1), int64_t(c.val(x).shape.size())));
    int64_t p = c.i("p", 2);
    if (p != 1 && p != 2) c.fail("p = ", p, " is not supported (1 or 2)");
    a.set("p", p);
    c.emit_out(OpKind::LpNorm, a, {x});
  } else if (t == "InstanceNormalization") {
    c.allow_attrs({"epsilon"});
    a.set("epsilon", c.f("epsilon", 1e-5));
    c.emit_out(OpKind::InstanceNorm, a, {c.in(0), c.in(1), c.in(2)});
  } else if (t == "CumSum") {
    c.allow_attrs({"exclusive", "reverse"});
    int x = c.in(0);
    a.set("axis", norm_axis(c, const_int_scalar(c, 1, "axis"), int64_t(c.val(x).shape.size())));
    a.set("exclusive", c.i("exclusive", 0));
    a.set("reverse", c.i("reverse", 0));
    c.emit_out(OpKind::CumSum, a, {x});
  } else if (t == "Trilu") {
    c.allow_attrs({"upper"});
    a.set("upper", c.i("upper", 1));
    int64_t k = c.has_input(1) ? const_int_scalar(c, 1, "k") : 0;
    a.set("k", std::clamp<int64_t>(k, -(int64_t(1) << 40), int64_t(1) << 40));
    c.emit_out(OpKind::Trilu, a, {c.in(0)});
  } else if (t == "Einsum") {
    c.allow_attrs({"equation"});
    if (!c.has("equation")) c.fail("attribute 'equation' is required");
    std::vector<int> ins;
    std::vector<int64_t> ranks;
    for (int k = 0; k < c.num_inputs(); ++k) {
      ins.push_back(c.in(k));
      ranks.push_back(int64_t(c.val(ins.back()).shape.size()));
    }
    if (ins.empty()) c.fail("needs at least one input");
    a.set("equation", explicit_einsum(c, c.s("equation", ""), ranks));
    c.emit_out(OpKind::Einsum, a, ins);
  } else if (t == "ConvTranspose") {
    conv_transpose(c);
  } else if (t == "GridSample") {
    c.allow_attrs({"align_corners", "mode", "padding_mode"});
    std::string mode = c.s("mode", c.im.opset >= 20 ? "linear" : "bilinear");
    if (mode == "bilinear") mode = "linear";
    if (mode == "bicubic") mode = "cubic";
    if (mode != "linear" && mode != "nearest" && mode != "cubic") c.fail("mode '", mode, "' is not supported");
    int x = c.in(0);
    if (c.val(x).shape.size() != 4) c.fail("only 2-D sampling of [N,C,H,W] is supported, input is ", shape_str(c.val(x).shape));
    a.set("mode", mode);
    a.set("padding", c.s("padding_mode", "zeros"));
    a.set("align_corners", c.i("align_corners", 0));
    c.emit_out(OpKind::GridSample, a, {x, c.in(1)});
  } else if (t == "GatherElements") {
    c.allow_attrs({"axis"});
    int x = c.in(0);
    a.set("axis", norm_axis(c, c.i("axis", 0), int64_t(c.val(x).shape.size())));
    c.emit_out(OpKind::GatherElements, a, {x, c.in(1)});
  } else if (t == "ScatterElements" || t == "Scatter") {
    c.allow_attrs({"axis", "reduction"});
    int x = c.in(0);
    a.set("axis", norm_axis(c, c.i("axis", 0), int64_t(c.val(x).shape.size())));
    a.set("reduction", c.s("reduction", "none"));
    c.emit_out(OpKind::ScatterElements, a, {x, c.in(1), c.in(2)});
  } else if (t == "SpaceToDepth" || t == "DepthToSpace") {
    space_depth(c, t == "SpaceToDepth");
  } else if (t == "Upsample") {
    upsample(c);
  } else {
    return false;
  }
  return true;
}

}  // namespace opv::onnx_import
