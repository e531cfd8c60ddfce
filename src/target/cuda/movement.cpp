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

// The element-wise integer ops (integer operands and output) as the reference computes them: in
// 64 bits with two's-complement wrapping, the result wrapped to the output type; a division by zero
// gives 0 (the reference refuses it; a kernel cannot). "" with *why untouched: not an integer op.
std::string integer_expr(const Ctx& x, std::string* why) {
  const Kernel& k = x.k;
  const Buffer& y = x.out();
  const Shape& ys = y.shape;
  const std::string T = c_type(y.dtype);
  if (!k.post_ops.empty()) return *why = "post-ops on an integer output", "";
  auto operand = [&](size_t j) {
    const std::string e = x.in_name(j) + "[" + bcast_offset(ys, x.in(j).shape) + "]";
    return "(unsigned long long)(long long)" + (x.in(j).dtype == DType::F16 ? "opv_h2f(" + e + ")" : e);
  };
  std::string e;
  if (x.c.inputs.size() == 2) {
    const std::string a = "a_", b = "b_";
    switch (k.op) {
      case OpKind::Add: e = "(long long)(a_ + b_)"; break;
      case OpKind::Sub: e = "(long long)(a_ - b_)"; break;
      case OpKind::Mul: e = "(long long)(a_ * b_)"; break;
      case OpKind::Div:
        e = "(b_ == 0ULL ? 0LL : ((long long)a_ == (-9223372036854775807LL - 1) && (long long)b_ == -1LL) ? (long long)a_"
            " : (long long)a_ / (long long)b_)";
        break;
      case OpKind::Mod:
        e = k.attrs.i("fmod", 0) ? "(b_ == 0ULL || (long long)b_ == -1LL ? 0LL : (long long)a_ % (long long)b_)"
                                 : "opv_imod((long long)a_, (long long)b_)";
        break;
      case OpKind::Pow: e = "opv_ipow((long long)a_, (long long)b_)"; break;
      case OpKind::Min: e = "((long long)a_ < (long long)b_ ? (long long)a_ : (long long)b_)"; break;
      case OpKind::Max: e = "((long long)a_ > (long long)b_ ? (long long)a_ : (long long)b_)"; break;
      case OpKind::PRelu: e = "((long long)a_ < 0 ? (long long)(a_ * b_) : (long long)a_)"; break;
      case OpKind::BitwiseAnd: e = "(long long)(a_ & b_)"; break;
      case OpKind::BitwiseOr: e = "(long long)(a_ | b_)"; break;
      case OpKind::BitwiseXor: e = "(long long)(a_ ^ b_)"; break;
      default: return "";
    }
    for (size_t j = 0; j < 2; ++j)
      if (!broadcasts_to(x.in(j).shape, ys)) return *why = "operand does not broadcast", "";
    x.globals +=
        "__device__ __forceinline__ long long opv_imod(long long a, long long b) {\n"
        "  if (b == 0 || b == -1) return 0;\n  long long r = a % b;\n"
        "  if (r != 0 && ((r < 0) != (b < 0))) r += b;\n  return r;\n}\n"
        "__device__ __forceinline__ long long opv_ipow(long long base, long long e) {\n"
        "  if (e < 0) return base == 1 ? 1 : base == -1 ? ((e % 2 == 0) ? 1 : -1) : 0;\n"
        "  unsigned long long r = 1, b = (unsigned long long)base;\n"
        "  while (e > 0) { if (e & 1) r *= b; b *= b; e >>= 1; }\n  return (long long)r;\n}\n";
    return coords(ys, "i") + "  const unsigned long long " + a + " = " + operand(0) + ", " + b + " = " + operand(1) +
           ";\n  out0[i] = (" + T + ")" + e + ";\n";
  }
  if (x.c.inputs.empty() || x.in(0).shape != ys) return "";
  const std::string v = "(long long)in0[i]";
  switch (k.op) {
    case OpKind::Identity:
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Round: e = v; break;
    case OpKind::Relu: e = "(" + v + " > 0 ? " + v + " : 0LL)"; break;
    case OpKind::Sign: e = "(long long)((" + v + " > 0) - (" + v + " < 0))"; break;
    case OpKind::Neg: e = "(long long)(0ULL - (unsigned long long)" + v + ")"; break;
    case OpKind::Abs: e = "(" + v + " < 0 ? (long long)(0ULL - (unsigned long long)" + v + ") : " + v + ")"; break;
    case OpKind::Clip: {
      const PostOp p = unary_post_op(k.op, k.attrs);
      std::string c = v;
      if (std::isfinite(p.alpha)) c = "((double)" + c + " < " + std::to_string(double(p.alpha)) + " ? " +
                                     std::to_string(static_cast<long long>(std::ceil(double(p.alpha)))) + "LL : " + c + ")";
      if (std::isfinite(p.beta)) c = "((double)" + c + " > " + std::to_string(double(p.beta)) + " ? " +
                                    std::to_string(static_cast<long long>(std::floor(double(p.beta)))) + "LL : " + c + ")";
      e = c;
      break;
    }
    default: return "";
  }
  return "  out0[i] = (" + T + ")" + e + ";\n";
}

}  // namespace

std::string split(const Ctx& x, std::string* why, int64_t* count) {
  if (!x.k.post_ops.empty() || !x.has(0)) return *why = "Split with post-ops or without its input", "";
  const Buffer& X = x.in(0);
  const Shape& xs = X.shape;
  const int64_t r = int64_t(xs.size());
  int64_t axis = x.k.attrs.i("axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return *why = "Split axis out of range", "";
  std::ostringstream b;
  b << coords(xs, "i");
  int64_t start = 0;
  for (size_t j = 0; j < x.c.outputs.size(); ++j) {
    const Buffer& y = x.out(j);
    if (y.dtype != X.dtype || int64_t(y.shape.size()) != r) return *why = "Split outputs differ in dtype or rank", "";
    const std::vector<int64_t> st = row_major_strides(y.shape);
    std::string off;
    for (int64_t d = 0; d < r; ++d) {
      if (d != axis && y.shape[size_t(d)] != xs[size_t(d)]) return *why = "Split output shape", "";
      off += (off.empty() ? "(" : " + (") + o(size_t(d)) + (d == axis ? " - " + I(start) : std::string()) + ") * " +
             I(st[size_t(d)]);
    }
    const int64_t end = start + y.shape[size_t(axis)];
    if (end > start)
      b << "  if (o" << axis << " < " << I(end) << ") { out" << j << "[" << off << "] = in0[i]; return; }\n";
    start = end;
  }
  if (start != xs[size_t(axis)]) return *why = "Split sizes do not add up to the input", "";
  *count = numel(xs);
  return b.str();
}

std::string layer_norm(const Ctx& x, std::string* why, int64_t* rows) {
  if (!x.k.post_ops.empty()) return *why = "post-ops on LayerNorm", "";
  if (!x.has(0) || !x.has(1)) return *why = "LayerNorm without its input or scale", "";
  const Buffer& X = x.in(0);
  const Shape& xs = X.shape;
  const int64_t r = int64_t(xs.size());
  int64_t axis = x.k.attrs.i("axis", -1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r || x.out().shape != xs) return *why = "LayerNorm axis or output shape", "";
  const Shape norm(xs.begin() + axis, xs.end());
  const int64_t n = numel(norm);
  if (n <= 0) return *why = "LayerNorm over an empty axis", "";
  for (size_t j = 1; j < 3; ++j)
    if (x.has(j) && !broadcasts_to(x.in(j).shape, norm)) return *why = "LayerNorm scale or bias shape", "";
  *rows = numel(xs) / n;
  const double eps = x.k.attrs.f("epsilon", 1e-5);
  char e[40];
  std::snprintf(e, sizeof e, "%.17g", eps);
  // As the reference: the row's mean, then the mean square deviation, in double.
  std::ostringstream b;
  b << "  const opv_idx base = i * " << I(n) << ";\n"
    << "  double mean = 0.0;\n  for (opv_idx j = 0; j < " << I(n) << "; ++j) mean += (double)"
    << load(X.dtype, "in0", "base + j") << ";\n  mean /= " << n << ".0;\n"
    << "  double var = 0.0;\n  for (opv_idx j = 0; j < " << I(n) << "; ++j) { const double d = (double)"
    << load(X.dtype, "in0", "base + j") << " - mean; var += d * d; }\n  var /= " << n << ".0;\n"
    << "  const double inv = 1.0 / sqrt(var + " << e << ");\n"
    << "  for (opv_idx j = 0; j < " << I(n) << "; ++j) {\n" << coords(norm, "j")
    << "    double v = ((double)" << load(X.dtype, "in0", "base + j") << " - mean) * inv * (double)"
    << load(x.in(1).dtype, "in1", bcast_offset(norm, x.in(1).shape)) << ";\n";
  if (x.has(2)) b << "    v += (double)" << load(x.in(2).dtype, "in2", bcast_offset(norm, x.in(2).shape)) << ";\n";
  b << "    " << store(x.out().dtype, "out0", "base + j", "(float)v") << "\n  }\n";
  return b.str();
}

namespace {

std::string flt(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", double(float(v)));
  std::string lit = buf;
  if (lit.find_first_of(".e") == std::string::npos) lit += ".0";
  return lit + "f";
}

// The input coordinate (float) of output coordinate `o` on one axis, as the reference computes
// it (kernels/reference/resize.cpp: in float, in onnxruntime's operation order; __f*_rn so the
// compiler contracts nothing into an FMA), or "" for an unknown mode.
std::string resize_coord(const std::string& mode, const std::string& o, int64_t in, int64_t out, double scale,
                         double rs, double re) {
  const std::string x = "(float)" + o, s = flt(scale), fin = flt(double(in)), fout = flt(double(out));
  if (mode == "half_pixel" || (mode == "pytorch_half_pixel" && out > 1))
    return "__fsub_rn(__fdiv_rn(__fadd_rn(" + x + ", 0.5f), " + s + "), 0.5f)";
  if (mode == "pytorch_half_pixel") return "0.0f";
  if (mode == "half_pixel_symmetric") {
    const float output_width = float(scale) * float(in);
    const float adjustment = float(out) / output_width;
    const float offset = float(in) / 2 * (1 - adjustment);
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.17g", double(offset));
    return "(float)(" + std::string(buf) + " + ((double)" + o + " + 0.5) / (double)" + s + " - 0.5)";
  }
  if (mode == "align_corners")
    return out > 1 ? "__fdiv_rn(__fmul_rn(" + x + ", " + flt(double(in - 1)) + "), " + flt(double(out - 1)) + ")" : "0.0f";
  if (mode == "asymmetric") return "__fdiv_rn(" + x + ", " + s + ")";
  if (mode == "tf_crop_and_resize") {
    const float frs = float(rs), fre = float(re), in1 = float(in) - 1;
    if (out <= 1) return flt(double(0.5f * (frs + fre) * in1));
    return "__fadd_rn(" + flt(double(frs * in1)) + ", __fdiv_rn(__fmul_rn(__fmul_rn(" + x + ", " +
           flt(double(fre - frs)) + "), " + flt(double(in1)) + "), " + flt(double(float(out) - 1)) + "))";
  }
  return "";
}

}  // namespace

// Resize (ONNX semantics as kernels/reference/resize.cpp): nearest on every axis as a typed copy,
// linear as bilinear over the last two axes in double; tf_crop_and_resize's outside points take
// extrapolation_value.
std::string resize(const Ctx& x, std::string* why) {
  if (!x.k.post_ops.empty() || !x.has(0)) return *why = "Resize with post-ops or without its input", "";
  const Buffer& X = x.in(0);
  const Buffer& Y = x.out();
  const Shape& xs = X.shape;
  const Shape& ys = Y.shape;
  const int64_t r = int64_t(xs.size());
  if (int64_t(ys.size()) != r || r == 0) return *why = "Resize rank", "";
  const std::string mode = x.k.attrs.s("mode", "nearest");
  const std::string coord = x.k.attrs.s("coord", "half_pixel");
  const std::string nearest = x.k.attrs.s("nearest_mode", "round_prefer_floor");
  const bool tf_crop = coord == "tf_crop_and_resize";
  const double extrapolation = x.k.attrs.f("extrapolation_value", 0.0);
  const std::vector<double> scales = x.k.attrs.floats("scales");
  const std::vector<double> roi = x.k.attrs.floats("roi");
  if ((!scales.empty() && int64_t(scales.size()) != r) || (!roi.empty() && int64_t(roi.size()) != 2 * r))
    return *why = "Resize scales/roi per dimension expected", "";
  for (int64_t d = 0; d < r; ++d)
    if (xs[size_t(d)] <= 0) return *why = "Resize of an empty input", "";
  auto coord_of = [&](int64_t d, const std::string& o) {
    const double sc = scales.empty() ? double(ys[size_t(d)]) / double(xs[size_t(d)]) : scales[size_t(d)];
    return resize_coord(coord, o, xs[size_t(d)], ys[size_t(d)], sc, roi.empty() ? 0.0 : roi[size_t(d)],
                        roi.empty() ? 1.0 : roi[size_t(d + r)]);
  };
  if (!scales.empty())
    for (double sc : scales)
      if (!(sc > 0)) return *why = "Resize scale must be positive", "";
  const std::vector<int64_t> xst = row_major_strides(xs);
  std::ostringstream b;
  b << coords(ys, "i") << "  bool outside = false;\n  (void)outside;\n";
  if (mode == "nearest") {
    if (X.dtype != Y.dtype) return *why = "Resize input and output dtypes differ", "";
    std::string off;
    for (int64_t d = 0; d < r; ++d) {
      const std::string c = coord_of(d, o(size_t(d)));
      if (c.empty()) return *why = "Resize coordinate mode " + coord, "";
      const std::string cv = std::to_string(d).insert(0, "c"), iv = std::to_string(d).insert(0, "k");
      b << "  const float " << cv << " = " << c << ";\n";
      if (tf_crop) b << "  outside = outside || " << cv << " < 0.0f || " << cv << " > " << flt(double(xs[size_t(d)] - 1)) << ";\n";
      b << "  long long " << iv << ";\n";
      if (nearest == "round_prefer_floor" || nearest == "round_prefer_ceil")
        b << "  { const float fl = floorf(" << cv << "); " << iv << " = (long long)(" << cv << " - fl == 0.5f ? fl"
          << (nearest == "round_prefer_ceil" ? " + 1.0f" : "") << " : roundf(" << cv << ")); }\n";
      else if (nearest == "floor")
        b << "  " << iv << " = (long long)floorf(" << cv << ");\n";
      else if (nearest == "ceil")
        b << "  " << iv << " = (long long)ceilf(" << cv << ");\n";
      else
        return *why = "Resize nearest_mode " + nearest, "";
      b << "  " << iv << " = " << iv << " < 0 ? 0 : (" << iv << " > " << xs[size_t(d)] - 1 << " ? " << xs[size_t(d)] - 1
        << " : " << iv << ");\n";
      off += (off.empty() ? "" : " + ") + std::string("(opv_idx)") + iv + " * " + I(xst[size_t(d)]);
    }
    b << "  out0[i] = outside ? " << typed_const(Y.dtype, extrapolation) << " : in0[" << off << "];\n";
    return b.str();
  }
  if (mode != "linear") return *why = "Resize mode " + mode, "";
  if (!is_float(X.dtype) || !is_float(Y.dtype) || r < 2) return *why = "linear Resize of floats, rank >= 2", "";
  for (int64_t d = 0; d < r - 2; ++d)
    if (xs[size_t(d)] != ys[size_t(d)]) return *why = "linear Resize changes an axis before the last two", "";
  std::string plane;
  for (int64_t d = 0; d < r - 2; ++d) plane += " + " + o(size_t(d)) + " * " + I(xst[size_t(d)]);
  for (int64_t d = r - 2; d < r; ++d) {
    const std::string c = coord_of(d, o(size_t(d)));
    if (c.empty()) return *why = "Resize coordinate mode " + coord, "";
    const std::string n = std::to_string(d - (r - 2));
    const int64_t len = xs[size_t(d)];
    b << "  double c" << n << " = (double)(" << c << ");\n";
    if (tf_crop) b << "  outside = outside || c" << n << " < 0.0 || c" << n << " > " << len - 1 << ".0;\n";
    b << "  c" << n << " = c" << n << " < 0.0 ? 0.0 : (c" << n << " > " << len - 1 << ".0 ? " << len - 1 << ".0 : c" << n
      << ");\n  const opv_idx a" << n << " = (opv_idx)floor(c" << n << ");\n  const opv_idx b" << n << " = a" << n
      << " + 1 < " << I(len) << " ? a" << n << " + 1 : " << I(len - 1) << ";\n  const double w" << n << " = c" << n
      << " - (double)a" << n << ";\n";
  }
  const int64_t W = xs[size_t(r - 1)];
  auto at = [&](const char* h, const char* w) {
    return "(double)" + load(X.dtype, "in0", std::string("(0") + plane + " + " + h + " * " + I(W) + " + " + w + ")");
  };
  char e[48];
  std::snprintf(e, sizeof e, "%.17g", extrapolation);
  b << "  double v;\n  if (outside) {\n    v = " << e << ";\n  } else {\n"
    << "    const double top = " << at("a0", "a1") << " * (1 - w1) + " << at("a0", "b1") << " * w1;\n"
    << "    const double bot = " << at("b0", "a1") << " * (1 - w1) + " << at("b0", "b1") << " * w1;\n"
    << "    v = top * (1 - w0) + bot * w0;\n  }\n"
    << "  " << store(Y.dtype, "out0", "i", "(float)v") << "\n";
  return b.str();
}

namespace {

// The lines along one axis of shape s: outer x len x inner, and the kernel's first line, which sets
// `base` to the flat index of element 0 of line i. False where the axis (negative from the end) is
// out of range.
struct AxisLines {
  int64_t outer = 1, len = 1, inner = 1;
  std::string base;
};
bool lines_along(const Shape& s, int64_t axis, AxisLines* l) {
  if (axis < 0) axis += int64_t(s.size());
  if (axis < 0 || axis >= int64_t(s.size())) return false;
  for (int64_t d = 0; d < int64_t(s.size()); ++d) (d < axis ? l->outer : d == axis ? l->len : l->inner) *= s[size_t(d)];
  l->base = "  const opv_idx base = (i / " + I(l->inner) + ") * " + I(l->len * l->inner) + " + i % " + I(l->inner) + ";\n";
  return true;
}

// Element `idx` of input 0 as the value the index reductions and scans compare or add: double for
// float types (f16 widened), long long for integers.
std::string scalar(const Ctx& x, const std::string& idx) {
  const DType dt = x.in(0).dtype;
  if (dt == DType::F16) return "(double)opv_h2f(in0[" + idx + "])";
  return std::string(is_float(dt) ? "(double)" : "(long long)") + "in0[" + idx + "]";
}

}  // namespace

// ArgMax / ArgMin along one axis into int64: NaN orders above every number, ties keep the first
// index (select_last_index: the last), as the reference.
std::string arg_reduce(const Ctx& x, std::string* why) {
  if (!x.k.post_ops.empty() || !x.has(0)) return *why = "ArgMax/ArgMin with post-ops or without input", "";
  if (x.out().dtype != DType::I64) return *why = "ArgMax/ArgMin output must be int64", "";
  const Shape& xs = x.in(0).shape;
  AxisLines l;
  if (!lines_along(xs, x.k.attrs.i("axis", 0), &l)) return *why = "ArgMax/ArgMin axis", "";
  const int64_t len = l.len, inner = l.inner;
  if (len <= 0 || numel(x.out().shape) != l.outer * inner) return *why = "ArgMax/ArgMin shapes", "";
  const bool is_max = x.k.op == OpKind::ArgMax, last = x.k.attrs.i("select_last_index", 0) != 0;
  const bool fl = is_float(x.in(0).dtype);
  const char* T = fl ? "double" : "long long";
  // gt(u, v): u orders above v (NaN above every number)
  const std::string gt_c_b = fl ? "(isnan(c) ? !isnan(b) : (!isnan(b) && c > b))" : "(c > b)";
  const std::string gt_b_c = fl ? "(isnan(b) ? !isnan(c) : (!isnan(c) && b > c))" : "(b > c)";
  std::ostringstream b;
  b << l.base << "  long long best = 0;\n  " << T << " b = " << scalar(x, "base") << ";\n"
    << "  for (opv_idx k = 1; k < " << I(len) << "; ++k) {\n"
    << "    const " << T << " c = " << scalar(x, "base + k * " + I(inner)) << ";\n"
    << "    const bool better = " << (is_max ? gt_c_b : gt_b_c) << ";\n";
  if (last) b << "    const bool tie = c == b" << (fl ? " || (isnan(c) && isnan(b))" : "") << ";\n"
              << "    if (better || tie) { best = k; b = c; }\n";
  else b << "    if (better) { best = k; b = c; }\n";
  b << "  }\n  out0[i] = best;\n";
  return b.str();
}

// CumSum along one axis (exclusive, reverse), one thread per scanned line (*count), accumulated in
// double (long long for integers) as the reference.
std::string cumsum(const Ctx& x, std::string* why, int64_t* count) {
  if (!x.k.post_ops.empty() || !x.has(0)) return *why = "CumSum with post-ops or without input", "";
  const Buffer& X = x.in(0);
  const Buffer& Y = x.out();
  if (X.shape != Y.shape || X.dtype != Y.dtype || X.dtype == DType::Bool) return *why = "CumSum shapes or dtype", "";
  AxisLines l;
  if (!lines_along(X.shape, x.k.attrs.i("axis", 0), &l)) return *why = "CumSum axis", "";
  const int64_t len = l.len, inner = l.inner;
  const bool excl = x.k.attrs.i("exclusive", 0) != 0, rev = x.k.attrs.i("reverse", 0) != 0;
  const bool fl = is_float(X.dtype);
  const std::string T = fl ? "double" : "long long";
  const std::string put = fl ? store(Y.dtype, "out0", "at", Y.dtype == DType::F64 ? "acc" : "(float)acc")
                             : "out0[at] = (" + std::string(c_type(Y.dtype)) + ")acc;";
  std::ostringstream b;
  b << l.base << "  " << T << " acc = 0;\n"
    << "  for (opv_idx s = 0; s < " << I(len) << "; ++s) {\n"
    << "    const opv_idx at = base + " << (rev ? "(" + I(len - 1) + " - s)" : std::string("s")) << " * " << I(inner) << ";\n"
    << "    const " << T << " cur = " << scalar(x, "at") << ";\n";
  if (excl) b << "    " << put << "\n    acc += cur;\n";
  else b << "    acc += cur;\n    " << put << "\n";
  b << "  }\n";
  *count = l.outer * inner;
  return b.str();
}

// LogSoftmax, Hardmax, LpNormalization (p 1 or 2) along one axis: one thread per line (*count),
// in double as the reference.
std::string axis_norm(const Ctx& x, std::string* why, int64_t* count) {
  if (!x.k.post_ops.empty() || !x.has(0)) return *why = "post-ops or no input", "";
  const Buffer& X = x.in(0);
  const Buffer& Y = x.out();
  if (X.shape != Y.shape || !is_float(X.dtype) || !is_float(Y.dtype)) return *why = "a float tensor of the output's shape", "";
  AxisLines l;
  if (!lines_along(X.shape, x.k.attrs.i("axis", -1), &l)) return *why = "axis out of range", "";
  const int64_t len = l.len, inner = l.inner;
  const int64_t p = x.k.attrs.i("p", 2);
  if (x.k.op == OpKind::LpNorm && p != 1 && p != 2) return *why = "LpNormalization with p other than 1 or 2", "";
  const std::string at = "base + k * " + I(inner);
  auto put = [&](const std::string& v) { return store(Y.dtype, "out0", at, "(float)(" + v + ")"); };
  std::ostringstream b;
  b << l.base;
  const std::string e = scalar(x, at);
  if (x.k.op == OpKind::LogSoftmax) {
    b << "  double mx = -(double)OPV_INF;\n  for (opv_idx k = 0; k < " << I(len) << "; ++k) mx = fmax(mx, " << e << ");\n"
      << "  double sum = 0.0;\n  for (opv_idx k = 0; k < " << I(len) << "; ++k) sum += exp(" << e << " - mx);\n"
      << "  const double lse = mx + log(sum);\n"
      << "  for (opv_idx k = 0; k < " << I(len) << "; ++k) " << put(e + " - lse") << "\n";
  } else if (x.k.op == OpKind::Hardmax) {
    b << "  opv_idx best = 0;\n  double bv = " << scalar(x, "base") << ";\n"
      << "  for (opv_idx k = 1; k < " << I(len) << "; ++k) { const double c = " << e << "; if (c > bv) { best = k; bv = c; } }\n"
      << "  for (opv_idx k = 0; k < " << I(len) << "; ++k) " << put("k == best ? 1.0 : 0.0") << "\n";
  } else {
    b << "  double n = 0.0;\n  for (opv_idx k = 0; k < " << I(len) << "; ++k) { const double c = " << e << "; n += "
      << (p == 1 ? "fabs(c)" : "c * c") << "; }\n" << (p == 2 ? "  n = sqrt(n);\n" : "")
      << "  for (opv_idx k = 0; k < " << I(len) << "; ++k) " << put("n == 0.0 ? 0.0 : " + e + " / n") << "\n";
  }
  *count = l.outer * inner;
  return b.str();
}

// Trilu: the upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes, zeros elsewhere.
std::string trilu(const Ctx& x, std::string* why) {
  if (!x.k.post_ops.empty() || !x.has(0)) return *why = "Trilu with post-ops or without input", "";
  const Shape& ys = x.out().shape;
  if (x.in(0).shape != ys || x.in(0).dtype != x.out().dtype || ys.size() < 2) return *why = "Trilu shapes or dtype", "";
  const bool upper = x.k.attrs.i("upper", 1) != 0;
  const long long k = static_cast<long long>(x.k.attrs.i("k", 0));
  const size_t r = ys.size();
  return coords(ys, "i") + "  const long long d_ = (long long)" + o(r - 1) + " - (long long)" + o(r - 2) + ";\n" +
         "  out0[i] = (d_ " + (upper ? ">=" : "<=") + " " + std::to_string(k) + "LL) ? in0[i] : " +
         typed_const(x.out().dtype, 0.0) + ";\n";
}

bool movement_op(OpKind op) {
  return op == OpKind::Slice || op == OpKind::Tile || op == OpKind::Pad || op == OpKind::Gather ||
         op == OpKind::Where || op == OpKind::Resize || op == OpKind::Trilu || op == OpKind::ArgMax ||
         op == OpKind::ArgMin;
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
    case OpKind::Resize: return resize(x, why);
    case OpKind::Trilu: return trilu(x, why);
    case OpKind::ArgMax:
    case OpKind::ArgMin: return arg_reduce(x, why);
    default: return *why = "not a movement op", "";
  }
}

std::string typed_elementwise(const Ctx& x, std::string* why) {
  const Kernel& k = x.k;
  const Buffer& y = x.out();
  const Shape& ys = y.shape;
  if (k.op == OpKind::IsNaN || k.op == OpKind::IsInf) {
    if (y.dtype != DType::Bool || !is_float(x.in(0).dtype) || x.in(0).shape != ys || !k.post_ops.empty())
      return *why = "IsNaN/IsInf take a float tensor to bool", "";
    const std::string v = "const double v_ = " + scalar(x, "i") + ";\n";
    if (k.op == OpKind::IsNaN) return "  " + v + "  out0[i] = isnan(v_) ? 1 : 0;\n";
    const bool neg = k.attrs.i("detect_negative", 1) != 0, pos = k.attrs.i("detect_positive", 1) != 0;
    return "  " + v + "  out0[i] = (isinf(v_) && ((v_ < 0.0 && " + (neg ? "true" : "false") + ") || (v_ > 0.0 && " +
           (pos ? "true" : "false") + "))) ? 1 : 0;\n";
  }
  if (y.dtype != DType::Bool) {
    bool ints = true;  // (Pow: a float exponent is truncated to an integer, as the reference)
    for (size_t j = 0; j < x.c.inputs.size(); ++j)
      ints = ints && x.has(j) && (!is_float(x.in(j).dtype) || (k.op == OpKind::Pow && j == 1));
    if (ints) {
      std::string e = integer_expr(x, why);
      if (!e.empty()) return e;
      if (!why->empty()) return "";
    }
  }
  const bool logic = comparison(k.op) || k.op == OpKind::And || k.op == OpKind::Or || k.op == OpKind::Xor ||
                     k.op == OpKind::Not || k.op == OpKind::Cast;
  if (!logic)
    return *why = std::string("output dtype ") + dtype_name(y.dtype) + " (no " + op_name(k.op) +
                  " kernel with a non-float output)", "";
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
  return *why = "a Cast that changes the shape", "";
}

}  // namespace opv::plan::cuda::detail
