/* cuda-codegen families that move or select elements without arithmetic, and the element-wise
 * ops with non-float outputs (codegen_internal.h):
 *   - Slice, Tile, Pad (constant, edge, reflect), Gather, Where: one thread per output element,
 *     the source offset computed from the output coordinates, a typed copy (any dtype, bit-exact);
 *   - comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual) to bool, And/Or/Xor/Not on
 *     bools, and Cast to an integer or bool type, as the reference computes them (float operands
 *     compared as float, integer ones as long long; float -> integer truncates towards zero,
 *     saturating, NaN and infinities to 0; anything -> bool is "not zero").
 * Linear buffers only (no NHWC form). Every read stays inside its buffer: Gather clamps an
 * out-of-range index to the axis (the reference reports it as an error; a kernel cannot).
 */
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/dtype.h"
#include "core/half.h"
#include "core/shape.h"
#include "target/cuda/codegen_internal.h"

namespace opv::plan::cuda::detail {

namespace {

// The output coordinate variable of dimension d.
std::string o(size_t d) {
  std::string s = std::to_string(d);
  return s.insert(0, 1, 'o');  // (not "o" + ...: GCC 12 warns -Wrestrict on that)
}

// A constant of dtype dt as the element type the kernel stores (F16: its bits).
std::string typed_const(DType dt, double v) {
  char buf[64];
  switch (dt) {
    case DType::F16: std::snprintf(buf, sizeof buf, "(unsigned short)%u", unsigned(float_to_half(float(v)))); break;
    case DType::F32:
    case DType::F64: {
      if (std::isnan(v)) return dt == DType::F32 ? "NAN" : "(double)NAN";
      if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (dt == DType::F32 ? "OPV_INF" : "(double)OPV_INF");
      std::snprintf(buf, sizeof buf, dt == DType::F32 ? "%.9g" : "%.17g", dt == DType::F32 ? double(float(v)) : v);
      std::string lit = buf;
      if (lit.find_first_of(".e") == std::string::npos) lit += ".0";  // "0" -> "0.0"
      return dt == DType::F32 ? lit + "f" : lit;
    }
    case DType::Bool: std::snprintf(buf, sizeof buf, "(unsigned char)%d", v != 0.0 ? 1 : 0); break;
    default: std::snprintf(buf, sizeof buf, "(%s)%lldLL", c_type(dt), static_cast<long long>(float_to_i64(v))); break;
  }
  return buf;
}

bool same_dtypes(const Ctx& x, std::initializer_list<size_t> inputs, std::string* why) {
  for (size_t j : inputs)
    if (x.in(j).dtype != x.out().dtype) return *why = "input " + x.in(j).name + " has another dtype than the output", false;
  return true;
}

std::string slice(const Ctx& x, std::string* why) {
  const Shape& xs = x.in(0).shape;
  const Shape& ys = x.out().shape;
  const std::vector<int64_t> st = x.k.attrs.ints("starts");
  const std::vector<int64_t> sp = x.k.attrs.ints("steps", std::vector<int64_t>(xs.size(), 1));
  if (st.size() != xs.size() || sp.size() != xs.size() || ys.size() != xs.size())
    return *why = "Slice starts/steps per dimension expected", "";
  const std::vector<int64_t> xst = row_major_strides(xs);
  std::string off;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (ys[d] == 0) continue;
    const int64_t last = st[d] + (ys[d] - 1) * sp[d];
    if (sp[d] == 0 || st[d] < 0 || st[d] >= xs[d] || last < 0 || last >= xs[d])
      return *why = "Slice reaches outside its input", "";
    off += (off.empty() ? "" : " + ") + std::string("(") + I(st[d]) + " + " + o(d) + " * " + I(sp[d]) + ") * " +
           I(xst[d]);
  }
  return coords(ys, "i") + "  out0[i] = in0[" + (off.empty() ? "0" : off) + "];\n";
}

std::string tile(const Ctx& x, std::string* why) {
  const Shape& xs = x.in(0).shape;
  const Shape& ys = x.out().shape;
  if (xs.size() != ys.size()) return *why = "Tile output rank", "";
  const std::vector<int64_t> xst = row_major_strides(xs);
  std::string off;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (xs[d] <= 0 || ys[d] % xs[d]) return *why = "Tile output is not whole repeats", "";
    if (xs[d] == 1) continue;
    off += (off.empty() ? "" : " + ") + std::string("(") + o(d) + " % " + I(xs[d]) + ") * " + I(xst[d]);
  }
  return coords(ys, "i") + "  out0[i] = in0[" + (off.empty() ? "0" : off) + "];\n";
}

std::string pad(const Ctx& x, std::string* why) {
  const Shape& xs = x.in(0).shape;
  const Shape& ys = x.out().shape;
  const int64_t r = int64_t(xs.size());
  const std::vector<int64_t> pads = x.k.attrs.ints("pads");
  const std::string mode = x.k.attrs.s("mode", "constant");
  if (int64_t(pads.size()) != 2 * r || int64_t(ys.size()) != r) return *why = "Pad pads per dimension expected", "";
  if (mode != "constant" && mode != "edge" && mode != "reflect") return *why = "Pad mode " + mode, "";
  const std::vector<int64_t> xst = row_major_strides(xs);
  std::ostringstream b;
  b << coords(ys, "i") << "  bool inside = true;\n  (void)inside;\n";
  std::string off;
  for (int64_t d = 0; d < r; ++d) {
    const int64_t dim = xs[size_t(d)];
    if (ys[size_t(d)] != dim + pads[size_t(d)] + pads[size_t(d + r)]) return *why = "Pad output shape", "";
    if (dim == 0) return *why = "Pad of an empty axis", "";
    const std::string j = std::to_string(d).insert(0, 1, 'j');
    b << "  opv_idx " << j << " = " << o(size_t(d)) << " - " << I(pads[size_t(d)]) << ";\n";
    if (mode == "constant") {
      b << "  inside = inside && " << j << " >= 0 && " << j << " < " << I(dim) << ";\n";
    } else if (mode == "edge") {
      b << "  " << j << " = " << j << " < 0 ? 0 : (" << j << " >= " << I(dim) << " ? " << I(dim - 1) << " : " << j
        << ");\n";
    } else if (dim == 1) {
      b << "  " << j << " = 0;\n";
    } else {  // reflect without repeating the edge: period 2 (dim - 1)
      const int64_t period = 2 * (dim - 1);
      b << "  " << j << " = ((" << j << " % " << I(period) << ") + " << I(period) << ") % " << I(period) << ";\n"
        << "  if (" << j << " >= " << I(dim) << ") " << j << " = " << I(period) << " - " << j << ";\n";
    }
    off += (off.empty() ? "" : " + ") + j + " * " + I(xst[size_t(d)]);
  }
  const std::string src = "in0[" + (off.empty() ? std::string("0") : off) + "]";
  if (mode == "constant")
    b << "  out0[i] = inside ? " << src << " : " << typed_const(x.out().dtype, x.k.attrs.f("value", 0.0)) << ";\n";
  else
    b << "  out0[i] = " << src << ";\n";
  return b.str();
}

std::string gather(const Ctx& x, std::string* why) {
  if (!x.has(1)) return *why = "Gather without indices", "";
  const Buffer& idx = x.in(1);
  if (idx.dtype != DType::I64 && idx.dtype != DType::I32) return *why = "Gather indices of int32/int64 only", "";
  const Shape& xs = x.in(0).shape;
  const Shape& ys = x.out().shape;
  const int64_t r = int64_t(xs.size());
  if (r < 1) return *why = "Gather of a scalar", "";
  int64_t axis = x.k.attrs.i("axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return *why = "Gather axis", "";
  const size_t q = idx.shape.size();
  Shape expect(xs.begin(), xs.begin() + axis);
  expect.insert(expect.end(), idx.shape.begin(), idx.shape.end());
  expect.insert(expect.end(), xs.begin() + axis + 1, xs.end());
  if (ys != expect) return *why = "Gather output shape", "";
  const std::vector<int64_t> xst = row_major_strides(xs), ist = row_major_strides(idx.shape);
  std::string ioff, xoff;
  for (size_t d = 0; d < q; ++d)
    if (idx.shape[d] != 1) ioff += (ioff.empty() ? "" : " + ") + o(size_t(axis) + d) + " * " + I(ist[d]);
  for (int64_t d = 0; d < r; ++d) {
    if (d == axis || xs[size_t(d)] == 1) continue;
    const size_t od = size_t(d < axis ? d : d + int64_t(q) - 1);
    xoff += " + " + o(od) + " * " + I(xst[size_t(d)]);
  }
  const int64_t dim = xs[size_t(axis)];
  std::ostringstream b;
  b << coords(ys, "i") << "  long long k_ = (long long)in1[" << (ioff.empty() ? "0" : ioff) << "];\n"
    << "  if (k_ < 0) k_ += " << dim << ";\n"
    << "  k_ = k_ < 0 ? 0 : (k_ >= " << dim << " ? " << dim - 1 << " : k_);  // in bounds whatever the index\n"
    << "  out0[i] = in0[(opv_idx)k_ * " << I(xst[size_t(axis)]) << xoff << "];\n";
  return b.str();
}

std::string where(const Ctx& x, std::string* why) {
  if (!x.has(0) || !x.has(1) || !x.has(2)) return *why = "Where needs three inputs", "";
  if (x.in(0).dtype != DType::Bool) return *why = "Where condition of dtype bool only", "";
  if (!same_dtypes(x, {1, 2}, why)) return "";
  const Shape& ys = x.out().shape;
  for (size_t j = 0; j < 3; ++j)
    if (!broadcasts_to(x.in(j).shape, ys)) return *why = "Where operand does not broadcast", "";
  return coords(ys, "i") + "  out0[i] = in0[" + bcast_offset(ys, x.in(0).shape) + "] ? in1[" +
         bcast_offset(ys, x.in(1).shape) + "] : in2[" + bcast_offset(ys, x.in(2).shape) + "];\n";
}

const char* comparison(OpKind op) {
  switch (op) {
    case OpKind::Equal: return "==";
    case OpKind::Less: return "<";
    case OpKind::Greater: return ">";
    case OpKind::LessOrEqual: return "<=";
    case OpKind::GreaterOrEqual: return ">=";
    default: return nullptr;
  }
}

// Element `off` of input j as a value of the comparison's domain: float for float dtypes, long
// long for integers (and bools).
std::string value(const Ctx& x, size_t j, const std::string& off, bool as_float) {
  const DType dt = x.in(j).dtype;
  const std::string e = x.in_name(j) + "[" + off + "]";
  if (as_float) return dt == DType::F16 ? "opv_h2f(" + e + ")" : dt == DType::F64 ? e : "(float)" + e;
  return "(long long)" + e;
}

}  // namespace

bool movement_op(OpKind op) {
  return op == OpKind::Slice || op == OpKind::Tile || op == OpKind::Pad || op == OpKind::Gather ||
         op == OpKind::Where;
}

std::string movement(const Ctx& x, std::string* why) {
  if (!x.k.post_ops.empty()) return *why = std::string("post-ops on ") + op_name(x.k.op), "";
  if (!x.has(0)) return *why = "absent input", "";
  switch (x.k.op) {
    case OpKind::Slice: return same_dtypes(x, {0}, why) ? slice(x, why) : "";
    case OpKind::Tile: return same_dtypes(x, {0}, why) ? tile(x, why) : "";
    case OpKind::Pad: return same_dtypes(x, {0}, why) ? pad(x, why) : "";
    case OpKind::Gather: return same_dtypes(x, {0}, why) ? gather(x, why) : "";
    case OpKind::Where: return where(x, why);
    default: return *why = "not a movement op", "";
  }
}

std::string typed_elementwise(const Ctx& x, std::string* why) {
  const Kernel& k = x.k;
  const Buffer& y = x.out();
  const Shape& ys = y.shape;
  if (!k.post_ops.empty()) return *why = "post-ops on a non-float output", "";
  for (size_t j = 0; j < x.c.inputs.size(); ++j)
    if (!x.has(j) || !broadcasts_to(x.in(j).shape, ys)) return *why = "operand does not broadcast", "";
  if (const char* cmp = comparison(k.op)) {
    if (y.dtype != DType::Bool || x.c.inputs.size() != 2) return *why = "comparisons produce bool from two operands", "";
    const bool as_float = is_float(x.in(0).dtype) || is_float(x.in(1).dtype);
    return coords(ys, "i") + "  out0[i] = (" + value(x, 0, bcast_offset(ys, x.in(0).shape), as_float) + " " + cmp + " " +
           value(x, 1, bcast_offset(ys, x.in(1).shape), as_float) + ") ? 1 : 0;\n";
  }
  if (k.op == OpKind::And || k.op == OpKind::Or || k.op == OpKind::Xor) {
    if (y.dtype != DType::Bool || x.c.inputs.size() != 2 || x.in(0).dtype != DType::Bool || x.in(1).dtype != DType::Bool)
      return *why = "And/Or/Xor take and produce bool", "";
    const char* e = k.op == OpKind::And ? "&&" : k.op == OpKind::Or ? "||" : "!=";
    return coords(ys, "i") + "  out0[i] = ((in0[" + bcast_offset(ys, x.in(0).shape) + "] != 0) " + e + " (in1[" +
           bcast_offset(ys, x.in(1).shape) + "] != 0)) ? 1 : 0;\n";
  }
  if (k.op == OpKind::Not) {
    if (y.dtype != DType::Bool || x.in(0).dtype != DType::Bool) return *why = "Not takes and produces bool", "";
    return "  out0[i] = in0[i] != 0 ? 0 : 1;\n";
  }
  if (k.op == OpKind::Cast && x.in(0).shape == ys) {
    const DType from = x.in(0).dtype;
    if (k.attrs.has("round_to")) return *why = "Cast round_to into a non-float output", "";
    if (y.dtype == DType::Bool) {
      if (from == DType::F16) return "  out0[i] = (in0[i] & 0x7fff) != 0 ? 1 : 0;\n";
      return "  out0[i] = in0[i] != 0 ? 1 : 0;\n";
    }
    if (is_float(from)) {  // truncation towards zero, saturating; NaN and infinities -> 0
      const std::string v = from == DType::F16 ? "(double)opv_h2f(in0[i])" : "(double)in0[i]";
      return "  const double d_ = " + v + ";\n"
             "  const long long q_ = (d_ != d_ || d_ == (double)INFINITY || d_ == -(double)INFINITY) ? 0LL\n"
             "      : d_ >= 9223372036854775807.0 ? 9223372036854775807LL\n"
             "      : d_ <= -9223372036854775808.0 ? (-9223372036854775807LL - 1) : (long long)d_;\n"
             "  out0[i] = (" + std::string(c_type(y.dtype)) + ")q_;\n";
    }
    // integer or bool -> integer: the value, wrapped to the narrower type
    return "  out0[i] = (" + std::string(c_type(y.dtype)) + ")(long long)in0[i];\n";
  }
  return *why = std::string("output dtype ") + dtype_name(y.dtype) + " (float outputs only)", "";
}

}  // namespace opv::plan::cuda::detail
