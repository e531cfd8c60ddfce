/* Canonicalisation of element-wise ONNX ops (unary, binary, variadic, Where, Clip, Cast).
 *
 * 1. One-to-one unary/binary ops keep their name (ops.def) with ONNX attribute defaults made
 *    explicit (LeakyRelu alpha, Elu alpha, HardSigmoid alpha/beta, Mod fmod).
 * 2. Gelu's `approximate` picks Gelu or GeluTanh; Clip's bounds come from attributes
 *    (opset < 11) or constant inputs (opset >= 11); Cast/CastLike become Cast{to=DType}.
 * 3. Variadic Min/Max/Sum become chains of binary ops, Mean a Sum chain divided by N.
 * 4. Identity and inference-mode Dropout alias their input (no node).
 * Invariant: every emitted node is a canonical op with the attributes ops.def documents.
 */
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "import/importer.h"

namespace opv::onnx_import {

namespace {

constexpr SimpleOp kUnary[] = {
    {"Relu", OpKind::Relu},       {"Sigmoid", OpKind::Sigmoid},   {"HardSwish", OpKind::HardSwish},
    {"Tanh", OpKind::Tanh},       {"Softplus", OpKind::Softplus}, {"Erf", OpKind::Erf},
    {"Exp", OpKind::Exp},         {"Log", OpKind::Log},           {"Neg", OpKind::Neg},
    {"Abs", OpKind::Abs},         {"Reciprocal", OpKind::Reciprocal}, {"Floor", OpKind::Floor},
    {"Ceil", OpKind::Ceil},       {"Sqrt", OpKind::Sqrt},         {"Not", OpKind::Not},
};

constexpr SimpleOp kBinary[] = {
    {"Add", OpKind::Add},         {"Sub", OpKind::Sub},           {"Mul", OpKind::Mul},
    {"Div", OpKind::Div},         {"Pow", OpKind::Pow},           {"Equal", OpKind::Equal},
    {"Less", OpKind::Less},       {"Greater", OpKind::Greater},   {"LessOrEqual", OpKind::LessOrEqual},
    {"GreaterOrEqual", OpKind::GreaterOrEqual}, {"And", OpKind::And}, {"Or", OpKind::Or},
};

// A scalar constant of dtype t holding v.
Tensor scalar_of(DType t, double v) {
  Tensor s(t, {});
  s.set_f64(0, v);
  return s;
}

void variadic(NodeCtx& c, OpKind op) {
  int n = c.num_inputs();
  if (n < 1) c.fail("needs at least one input");
  if (n == 1) {
    c.alias_out(0, c.in(0));
    return;
  }
  int acc = c.in(0);
  for (int k = 1; k < n - 1; ++k) acc = c.emit_tmp(op, {}, {acc, c.in(k)}, std::string(op_name(op)) + std::to_string(k));
  c.emit_out(op, {}, {acc, c.in(n - 1)});
}

}  // namespace

bool canonicalize_elementwise(NodeCtx& c) {
  const std::string& t = c.op();
  if (emit_simple(c, kUnary, kBinary)) return true;
  Attrs a;
  if (t == "LeakyRelu" || t == "Elu") {
    c.allow_attrs({"alpha"});
    a.set("alpha", c.f("alpha", t == "Elu" ? 1.0 : 0.01));
    c.emit_out(t == "Elu" ? OpKind::Elu : OpKind::LeakyRelu, a, {c.in(0)});
  } else if (t == "HardSigmoid") {
    c.allow_attrs({"alpha", "beta"});
    a.set("alpha", c.f("alpha", 0.2));
    a.set("beta", c.f("beta", 0.5));
    c.emit_out(OpKind::HardSigmoid, a, {c.in(0)});
  } else if (t == "Gelu") {
    c.allow_attrs({"approximate"});
    std::string ap = c.s("approximate", "none");
    if (ap == "none") c.emit_out(OpKind::Gelu, {}, {c.in(0)});
    else if (ap == "tanh") c.emit_out(OpKind::GeluTanh, {}, {c.in(0)});
    else c.fail("approximate '", ap, "' is not supported");
  } else if (t == "Clip") {
    double lo = -INFINITY, hi = INFINITY;
    if (c.im.opset < 11) {
      c.allow_attrs({"min", "max"});
      lo = c.f("min", lo);
      hi = c.f("max", hi);
    } else {
      c.allow_attrs({});
      if (c.has_input(1)) lo = c.const_scalar(1, "min");
      if (c.has_input(2)) hi = c.const_scalar(2, "max");
    }
    a.set("min", lo);
    a.set("max", hi);
    c.emit_out(OpKind::Clip, a, {c.in(0)});
  } else if (t == "Cast" || t == "CastLike") {
    c.allow_attrs({"to", "saturate"});
    DType to;
    if (t == "Cast") {
      if (!c.has("to")) c.fail("attribute 'to' is required");
      auto dt = dtype_from_onnx(int32_t(c.i("to", 0)));
      if (!dt) c.fail("cast to ", onnx_type_name(int32_t(c.i("to", 0))), " is not supported");
      to = *dt;
    } else {
      to = c.val(c.in(1)).dtype;
    }
    a.set("to", int64_t(to));
    c.emit_out(OpKind::Cast, a, {c.in(0)});
  } else if (t == "Identity") {
    c.allow_attrs({});
    c.alias_out(0, c.in(0));
  } else if (t == "Dropout") {
    c.allow_attrs({"seed", "ratio"});
    if (c.has_input(2)) {
      const Tensor& tm = c.const_in(2, "training_mode");
      if (tm.numel() != 1 || tm.get_i64(0) != 0) c.fail("training_mode=true is not supported");
    }
    if (c.im.opset < 7) c.require_unused_outputs_from(1, "mask");
    if (c.output_used(1)) {
      // Inference: nothing is dropped, the mask is all true.
      const Shape& xs = c.val(c.in(0)).shape;
      Tensor mask(DType::Bool, xs);
      if (mask.numel()) std::memset(mask.raw(), 1, size_t(mask.numel()));
      c.bind_out(1, c.im.add_const(c.out_name(1), std::move(mask)));
    }
    c.alias_out(0, c.in(0));
  } else if (t == "Mod") {
    c.allow_attrs({"fmod"});
    a.set("fmod", c.i("fmod", 0));
    c.emit_out(OpKind::Mod, a, {c.in(0), c.in(1)});
  } else if (t == "Min" || t == "Max" || t == "Sum") {
    c.allow_attrs({});
    variadic(c, t == "Min" ? OpKind::Min : t == "Max" ? OpKind::Max : OpKind::Add);
  } else if (t == "Mean") {
    c.allow_attrs({});
    int n = c.num_inputs();
    if (n < 1) c.fail("needs at least one input");
    if (n == 1) {
      c.alias_out(0, c.in(0));
      return true;
    }
    int acc = c.in(0);
    for (int k = 1; k < n; ++k) acc = c.emit_tmp(OpKind::Add, {}, {acc, c.in(k)}, "sum" + std::to_string(k));
    DType dt = c.val(acc).dtype;
    if (!is_float(dt)) c.fail("Mean of ", dtype_name(dt), " is not supported");
    int cnt = c.im.add_const(c.name + "/count", scalar_of(dt, double(n)));
    c.emit_out(OpKind::Div, {}, {acc, cnt});
  } else if (t == "Where") {
    c.allow_attrs({});
    c.emit_out(OpKind::Where, {}, {c.in(0), c.in(1), c.in(2)});
  } else {
    return false;
  }
  return true;
}

}  // namespace opv::onnx_import
