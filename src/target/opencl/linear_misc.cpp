/* Family "linear", everything but matrix products: one work-item per output element (dimension 0
 * rounded up to a whole wave and bounds-checked), all shapes and index math compiled in.
 *   1. Element-wise: float unary ops, Cast (any pair OpenCL C expresses; round_to = F16 rounds the
 *      result through vstore_half_rte/vload_half), binary float ops with numpy broadcasting,
 *      comparisons (float or integer operands -> Bool as uchar), And/Or/Not, Where.
 *   2. Data movement as byte-exact copies of any dtype (element moved as an unsigned integer of
 *      its size): Reshape/Identity/Reorder, Transpose, Slice, Expand, Concat (any axis/count).
 *   3. Reductions (ReduceMean/Sum/Max/Min over any axes, GlobalAverage/MaxPool) and Softmax over
 *      one axis; fp32 accumulation, one work-item per output element / softmax row.
 * Post-ops (emit_post_ops_linear) run wherever the op produces a float value.
 */
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "target/opencl/linear_internal.h"

namespace opv::plan::cl::lin {

namespace {

constexpr int64_t kMaxIndex = int64_t(1) << 31;  // kernels index with 32-bit ints
constexpr int64_t kWave = 64;                    // dimension 0 is rounded up to whole waves
// FNV-1a (32-bit) parameters: a short digest of Slice attributes for kernel names.
constexpr uint32_t kFnvOffset = 2166136261u;
constexpr uint32_t kFnvPrime = 16777619u;

std::string I(int64_t v) { return std::to_string(v); }

std::string flt(double v) { return float_literal(v); }

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

bool is_comparison(OpKind op) {
  return op == OpKind::Equal || op == OpKind::Less || op == OpKind::Greater || op == OpKind::LessOrEqual ||
         op == OpKind::GreaterOrEqual;
}

std::string compare_expr(OpKind op, const std::string& a, const std::string& b) {
  const char* o = op == OpKind::Equal ? " == " : op == OpKind::Less ? " < " : op == OpKind::Greater ? " > "
                  : op == OpKind::LessOrEqual ? " <= " : " >= ";
  return "(" + a + o + b + ")";
}

// Integer (or Bool) value of element idx as a long, for comparisons and integer casts.
std::string int_load(DType dt, const std::string& name, const std::string& idx) {
  return "(long)(" + name + "[" + idx + "])";
}

bool int_like(DType dt) { return is_int(dt) || dt == DType::Bool; }

bool is_movement(OpKind op) {
  return op == OpKind::Reshape || op == OpKind::Reorder || op == OpKind::Transpose || op == OpKind::Slice ||
         op == OpKind::Expand || op == OpKind::Concat;
}

// The reductions this family emits (Reduce* subset and the global pools; cf. opv::is_reduce).
bool is_reduction_kernel(OpKind op) {
  return op == OpKind::ReduceMean || op == OpKind::ReduceSum || op == OpKind::ReduceMax || op == OpKind::ReduceMin ||
         op == OpKind::GlobalAveragePool || op == OpKind::GlobalMaxPool;
}

// A float unary op's expression, or "" when the op is not a float unary op we can emit.
std::string float_unary(const Kernel& k, const std::string& x) {
  if (k.op == OpKind::Clip) {
    const double lo = k.attrs.f("min", -INFINITY), hi = k.attrs.f("max", INFINITY);
    std::string r = x;
    if (std::isfinite(lo)) r = "fmax(" + r + ", " + flt(lo) + ")";
    if (std::isfinite(hi)) r = "fmin(" + r + ", " + flt(hi) + ")";
    return r;
  }
  if (k.op == OpKind::Cast || k.op == OpKind::Not) return "";
  return unary_expr(unary_post_op(k.op, k.attrs), x);
}

bool small(const Plan& p, const Call& c) {
  for (int b : c.outputs)
    if (numel(p.buffers.at(size_t(b)).shape) >= kMaxIndex) return false;
  for (int b : c.inputs)
    if (b >= 0 && numel(p.buffers.at(size_t(b)).shape) >= kMaxIndex) return false;
  return true;
}

// Number of inputs the op itself reads (the rest are post-op operands).
size_t op_arity(const Kernel& k, const Call& c) {
  if (k.op == OpKind::Concat) {
    size_t n = c.inputs.size();
    for (const PostOp& po : k.post_ops) n = std::min(n, size_t(std::max(po.input, 0)));
    return n;
  }
  if (k.op == OpKind::Where) return 3;
  if (is_binary(k.op)) return 2;
  return 1;
}

// ---- supports ---------------------------------------------------------------------------------

bool supports_impl(const Plan& p, const Call& c, const Kernel& k) {
  if (c.outputs.size() != 1 || !small(p, c)) return false;
  const Buffer& y = out_buf(p, c);
  const size_t arity = op_arity(k, c);
  if (c.inputs.size() < arity) return false;
  for (size_t j = 0; j < arity; ++j)
    if (!has_in(c, j)) return false;
  const bool float_out = is_float_dt(y.dtype);
  if (!k.post_ops.empty() && (!float_out || !post_ops_linear_ok(p, c, k))) return false;
  if (is_movement(k.op) || (k.op == OpKind::Identity && in_buf(p, c, 0).dtype == y.dtype && k.post_ops.empty())) {
    if (!k.post_ops.empty()) return false;
    for (size_t j = 0; j < arity; ++j)
      if (in_buf(p, c, j).dtype != y.dtype) return false;
    const Shape& xs = in_buf(p, c, 0).shape;
    switch (k.op) {
      case OpKind::Transpose: {
        std::vector<int64_t> perm = k.attrs.ints("perm");
        if (perm.empty())
          for (int64_t d = int64_t(xs.size()) - 1; d >= 0; --d) perm.push_back(d);
        if (perm.size() != xs.size() || y.shape.size() != xs.size()) return false;
        for (size_t d = 0; d < perm.size(); ++d)
          if (perm[d] < 0 || perm[d] >= int64_t(xs.size()) || y.shape[d] != xs[size_t(perm[d])]) return false;
        return true;
      }
      case OpKind::Slice: {
        const std::vector<int64_t> st = k.attrs.ints("starts");
        const std::vector<int64_t> sp = k.attrs.ints("steps", std::vector<int64_t>(xs.size(), 1));
        if (st.size() != xs.size() || sp.size() != xs.size() || y.shape.size() != xs.size()) return false;
        for (size_t d = 0; d < xs.size(); ++d) {
          if (y.shape[d] == 0) continue;
          const int64_t last = st[d] + (y.shape[d] - 1) * sp[d];
          if (sp[d] == 0 || st[d] < 0 || st[d] >= xs[d] || last < 0 || last >= xs[d]) return false;
        }
        return true;
      }
      case OpKind::Expand: return broadcasts_to(xs, y.shape);
      case OpKind::Concat: {
        const int64_t r = int64_t(y.shape.size());
        int64_t axis = k.attrs.i("axis", 0);
        if (axis < 0) axis += r;
        if (axis < 0 || axis >= r) return false;
        int64_t total = 0;
        for (size_t j = 0; j < arity; ++j) {
          const Shape& s = in_buf(p, c, j).shape;
          if (int64_t(s.size()) != r) return false;
          for (int64_t d = 0; d < r; ++d)
            if (d != axis && s[size_t(d)] != y.shape[size_t(d)]) return false;
          total += s[size_t(axis)];
        }
        return total == y.shape[size_t(axis)];
      }
      default: return numel(xs) == numel(y.shape);  // Reshape, Identity, Reorder (Linear -> Linear)
    }
  }
  if (is_reduction_kernel(k.op) || k.op == OpKind::Softmax) {
    const Buffer& x = in_buf(p, c, 0);
    if (!is_float_dt(x.dtype) || !float_out || x.shape.empty() || numel(x.shape) == 0) return false;
    const int64_t r = int64_t(x.shape.size());
    if (k.op == OpKind::Softmax) {
      int64_t axis = k.attrs.i("axis", -1);
      if (axis < 0) axis += r;
      return x.shape == y.shape && axis >= 0 && axis < r;
    }
    if (k.op == OpKind::GlobalAveragePool || k.op == OpKind::GlobalMaxPool)
      return r >= 2 && numel(y.shape) == x.shape[0] * x.shape[1];
    // Kept elements (keepdims or not: the same element order) must be the output's.
    int64_t kept = numel(x.shape);
    std::vector<int64_t> axes = k.attrs.ints("axes");
    std::vector<bool> seen(size_t(r), false);
    for (int64_t ax : axes) {
      if (ax < 0) ax += r;
      if (ax < 0 || ax >= r || seen[size_t(ax)]) return false;
      seen[size_t(ax)] = true;
      kept /= x.shape[size_t(ax)];
    }
    if (axes.empty()) kept = 1;
    return numel(y.shape) == kept;
  }
  if (k.op == OpKind::Cast) {
    const DType from = in_buf(p, c, 0).dtype;
    if (from == DType::F64 || y.dtype == DType::F64) return false;
    if (in_buf(p, c, 0).shape != y.shape) return false;
    if (k.attrs.has("round_to") && (k.attrs.i("round_to") != int64_t(DType::F16) || !float_out)) return false;
    return true;
  }
  if (k.op == OpKind::Not)
    return in_buf(p, c, 0).dtype == DType::Bool && y.dtype == DType::Bool && in_buf(p, c, 0).shape == y.shape;
  if (is_unary(k.op)) {
    const Buffer& x = in_buf(p, c, 0);
    return float_out && is_float_dt(x.dtype) && x.shape == y.shape && !float_unary(k, "x").empty();
  }
  if (k.op == OpKind::Where) {
    const Buffer &cd = in_buf(p, c, 0), &a = in_buf(p, c, 1), &b = in_buf(p, c, 2);
    return k.post_ops.empty() && cd.dtype == DType::Bool && a.dtype == y.dtype && b.dtype == y.dtype &&
           broadcasts_to(cd.shape, y.shape) && broadcasts_to(a.shape, y.shape) && broadcasts_to(b.shape, y.shape);
  }
  if (is_binary(k.op)) {
    const Buffer &a = in_buf(p, c, 0), &b = in_buf(p, c, 1);
    if (!broadcasts_to(a.shape, y.shape) || !broadcasts_to(b.shape, y.shape)) return false;
    if (is_comparison(k.op)) {
      if (y.dtype != DType::Bool || !k.post_ops.empty()) return false;
      return (is_float_dt(a.dtype) && is_float_dt(b.dtype)) || (int_like(a.dtype) && int_like(b.dtype));
    }
    if (k.op == OpKind::And || k.op == OpKind::Or)
      return a.dtype == DType::Bool && b.dtype == DType::Bool && y.dtype == DType::Bool && k.post_ops.empty();
    if (!float_out || !is_float_dt(a.dtype) || !is_float_dt(b.dtype)) return false;
    return k.op == OpKind::Mod || !binary_expr(k.op, "a", "b").empty();
  }
  return false;
}

// ---- generators -------------------------------------------------------------------------------

struct Gen {
  std::string name, defs, body;
  std::array<int64_t, 3> global{0, 0, 0};
};

// Prologue of the one-element-per-work-item kernels.
std::string elem_head(int64_t total) {
  return "  const int i = get_global_id(0);\n  if (i >= " + I(total) + ") return;\n";
}

// "float v = ...; <post-ops>; store".
std::string float_tail(const Plan& p, const Call& c, const Kernel& k, const std::string& value) {
  const Buffer& y = out_buf(p, c);
  return "  float v = " + value + ";\n" + emit_post_ops_linear(p, c, k) + "  " + cl_store(y.dtype, "out0", "i", "v") +
         "\n";
}

Gen gen_copy(const Plan& p, const Call& c, const Kernel& k) {
  const Buffer& x = in_buf(p, c, 0);
  const Buffer& y = out_buf(p, c);
  const Shape& xs = x.shape;
  Addressing a;
  a.dims = y.shape;
  a.base = {0};
  std::string what;
  switch (k.op) {
    case OpKind::Transpose: {
      std::vector<int64_t> perm = k.attrs.ints("perm");
      if (perm.empty())
        for (int64_t d = int64_t(xs.size()) - 1; d >= 0; --d) perm.push_back(d);
      const std::vector<int64_t> st = strides_of(xs);
      std::vector<int64_t> s;
      for (int64_t pd : perm) s.push_back(st[size_t(pd)]);
      a.strides = {s};
      what = "transpose_p";
      for (int64_t pd : perm) what += std::to_string(pd);
      break;
    }
    case OpKind::Slice: {
      const std::vector<int64_t> starts = k.attrs.ints("starts");
      const std::vector<int64_t> steps = k.attrs.ints("steps", std::vector<int64_t>(xs.size(), 1));
      const std::vector<int64_t> st = strides_of(xs);
      std::vector<int64_t> s;
      int64_t base = 0;
      for (size_t d = 0; d < xs.size(); ++d) {
        base += starts[d] * st[d];
        s.push_back(steps[d] * st[d]);
      }
      a.base = {base};
      a.strides = {s};
      // Starts and steps are in the source; the name carries their digest.
      uint32_t h = kFnvOffset;
      for (const std::vector<int64_t>* v : {&starts, &steps})
        for (int64_t e : *v) h = (h ^ uint32_t(e & 0xffff)) * kFnvPrime;
      char hex[16];
      std::snprintf(hex, sizeof hex, "%06x", unsigned(h & 0xffffffu));
      what = std::string("slice_") + hex;
      break;
    }
    case OpKind::Expand:
      a.strides = {broadcast_strides(xs, y.shape)};
      what = "expand";
      break;
    default:
      a.dims = {numel(y.shape)};
      a.strides = {{1}};
      what = "copy";
      break;
  }
  a = collapse(a);
  const int64_t total = numel(y.shape);
  Gen g;
  g.body = elem_head(total) + "  " + raw_ptr(y.dtype, "out0", false) + "[i] = " + raw_ptr(x.dtype, "in0", true) + "[" +
           offset_expr(a, 0, "i") + "];\n";
  g.name = "cl_" + what + "_" + dims_str(xs) + "_to_" + dims_str(y.shape) + "_" + dtype_name(y.dtype);
  g.global = {round_up(total, kWave), 0, 0};
  return g;
}

Gen gen_concat(const Plan& p, const Call& c, const Kernel& k) {
  const Buffer& y = out_buf(p, c);
  const int64_t r = int64_t(y.shape.size());
  int64_t axis = k.attrs.i("axis", 0);
  if (axis < 0) axis += r;
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < r; ++d) inner *= y.shape[size_t(d)];
  const int64_t D = y.shape[size_t(axis)], total = numel(y.shape);
  Gen g;
  g.body = elem_head(total);
  std::string a = inner == 1 ? "i" : "(i / " + I(inner) + ")";
  const bool has_outer = total > D * inner;
  g.body += "  const int a = " + (has_outer ? "(" + a + " % " + I(D) + ")" : a) + ";\n";
  if (has_outer) g.body += "  const int o = i / " + I(D * inner) + ";\n";
  if (inner > 1) g.body += "  const int r = i % " + I(inner) + ";\n";
  const std::string dst = raw_ptr(y.dtype, "out0", false) + "[i] = ";
  int64_t start = 0;
  const size_t n = op_arity(k, c);
  for (size_t j = 0; j < n; ++j) {
    const int64_t e = in_buf(p, c, j).shape[size_t(axis)];
    if (e == 0) continue;
    std::string idx = start ? "(a - " + I(start) + ")" : "a";
    if (inner > 1) idx = idx + " * " + I(inner) + " + r";
    if (has_outer) idx = "o * " + I(e * inner) + " + " + idx;
    const std::string src = raw_ptr(y.dtype, "in" + I(int64_t(j)), true) + "[" + idx + "]";
    if (start + e < D)
      g.body += "  if (a < " + I(start + e) + ") { " + dst + src + "; return; }\n";
    else
      g.body += "  " + dst + src + ";\n";
    start += e;
  }
  g.name = "cl_concat" + I(int64_t(n)) + "_axis" + I(axis) + "_" + dims_str(y.shape) + "_" + dtype_name(y.dtype);
  g.global = {round_up(total, kWave), 0, 0};
  return g;
}

// Addressing of the call's operands 0..n-1 broadcast to the output, collapsed.
Addressing broadcast_addressing(const Plan& p, const Call& c, size_t n) {
  const Buffer& y = out_buf(p, c);
  Addressing a;
  a.dims = y.shape;
  for (size_t j = 0; j < n; ++j) {
    a.base.push_back(0);
    a.strides.push_back(broadcast_strides(in_buf(p, c, j).shape, y.shape));
  }
  return collapse(a);
}

Gen gen_elementwise(const Plan& p, const Call& c, const Kernel& k) {
  const Buffer& y = out_buf(p, c);
  const int64_t total = numel(y.shape);
  Gen g;
  g.body = elem_head(total);
  g.global = {round_up(total, kWave), 0, 0};
  std::string tag = lower(op_name(k.op));
  if (k.op == OpKind::Cast) {
    const DType from = in_buf(p, c, 0).dtype;
    if (is_float_dt(y.dtype)) {
      g.body += "  float x = " + cl_load(from, "in0", "i") + ";\n";
      if (k.attrs.has("round_to")) {
        // Round to fp16 precision without cl_khr_fp16: store as half, read back.
        g.body += "  ushort hbits;\n  vstore_half_rte(x, 0, (__private half*)&hbits);\n";
        g.body += "  x = vload_half(0, (const __private half*)&hbits);\n";
        tag += "_round16";
      }
      g.body += float_tail(p, c, k, "x");
    } else if (y.dtype == DType::Bool) {
      const std::string x = is_float_dt(from) ? cl_load(from, "in0", "i") : "in0[i]";
      g.body += "  out0[i] = (uchar)(" + x + " != 0);\n";
    } else if (is_float_dt(from)) {
      g.body += "  " + cl_store(y.dtype, "out0", "i", cl_load(from, "in0", "i")) + "\n";
    } else {
      g.body += "  out0[i] = (" + cl_type(y.dtype) + ")(in0[i]);\n";
    }
    g.name = "cl_" + tag + "_" + std::string(dtype_name(from)) + "_" + dtype_name(y.dtype) + "_" + dims_str(y.shape);
  } else if (k.op == OpKind::Not) {
    g.body += "  out0[i] = (uchar)(in0[i] == 0);\n";
    g.name = "cl_not_" + dims_str(y.shape);
  } else if (k.op == OpKind::Where) {
    const Addressing a = broadcast_addressing(p, c, 3);
    g.body += "  " + raw_ptr(y.dtype, "out0", false) + "[i] = in0[" + offset_expr(a, 0, "i") + "] ? " +
              raw_ptr(y.dtype, "in1", true) + "[" + offset_expr(a, 1, "i") + "] : " + raw_ptr(y.dtype, "in2", true) +
              "[" + offset_expr(a, 2, "i") + "];\n";
    g.name = "cl_where_" + dims_str(in_buf(p, c, 0).shape) + "_" + dims_str(in_buf(p, c, 1).shape) + "_" +
             dims_str(in_buf(p, c, 2).shape) + "_" + dtype_name(y.dtype);
  } else if (is_unary(k.op)) {
    const DType from = in_buf(p, c, 0).dtype;
    g.body += "  const float x = " + cl_load(from, "in0", "i") + ";\n";
    g.body += float_tail(p, c, k, float_unary(k, "x"));
    g.name = "cl_" + tag + "_" + dims_str(y.shape) + "_" + dtype_name(from);
  } else {
    const Buffer &a = in_buf(p, c, 0), &b = in_buf(p, c, 1);
    const Addressing ad = broadcast_addressing(p, c, 2);
    const std::string ia = offset_expr(ad, 0, "i"), ib = offset_expr(ad, 1, "i");
    if (is_comparison(k.op)) {
      const bool fl = is_float_dt(a.dtype);
      const std::string va = fl ? cl_load(a.dtype, "in0", ia) : int_load(a.dtype, "in0", ia);
      const std::string vb = fl ? cl_load(b.dtype, "in1", ib) : int_load(b.dtype, "in1", ib);
      g.body += "  out0[i] = (uchar)" + compare_expr(k.op, va, vb) + ";\n";
    } else if (k.op == OpKind::And || k.op == OpKind::Or) {
      g.body += "  out0[i] = (uchar)((in0[" + ia + "] != 0) " + (k.op == OpKind::And ? "&&" : "||") + " (in1[" + ib +
                "] != 0));\n";
    } else {
      g.body += "  const float a = " + cl_load(a.dtype, "in0", ia) + ";\n";
      g.body += "  const float b = " + cl_load(b.dtype, "in1", ib) + ";\n";
      std::string val;
      if (k.op == OpKind::Mod) {
        g.body += "  float r = fmod(a, b);\n";
        if (k.attrs.i("fmod", 0) == 0) g.body += "  if (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) r += b;\n";
        val = "r";
      } else {
        val = binary_expr(k.op, "a", "b");
      }
      g.body += float_tail(p, c, k, val);
    }
    g.name = "cl_" + tag + "_" + dims_str(a.shape) + "_" + dims_str(b.shape) + "_" + dtype_name(a.dtype) + "_" +
             dtype_name(b.dtype) + "_" + dtype_name(y.dtype);
  }
  g.name += post_ops_suffix(k.post_ops);
  return g;
}

Gen gen_reduce(const Plan& p, const Call& c, const Kernel& k) {
  const Buffer& x = in_buf(p, c, 0);
  const Buffer& y = out_buf(p, c);
  const int64_t r = int64_t(x.shape.size());
  std::vector<bool> red(size_t(r), false);
  OpKind op = k.op;
  if (op == OpKind::GlobalAveragePool || op == OpKind::GlobalMaxPool) {
    for (int64_t d = 2; d < r; ++d) red[size_t(d)] = true;
    op = op == OpKind::GlobalAveragePool ? OpKind::ReduceMean : OpKind::ReduceMax;
  } else {
    std::vector<int64_t> axes = k.attrs.ints("axes");
    if (axes.empty())
      for (int64_t d = 0; d < r; ++d) axes.push_back(d);
    for (int64_t ax : axes) red[size_t(ax < 0 ? ax + r : ax)] = true;
  }
  const std::vector<int64_t> st = strides_of(x.shape);
  Addressing kept, rd;
  kept.base = {0};
  rd.base = {0};
  kept.strides.assign(1, {});
  rd.strides.assign(1, {});
  for (int64_t d = 0; d < r; ++d) {
    Addressing& t = red[size_t(d)] ? rd : kept;
    t.dims.push_back(x.shape[size_t(d)]);
    t.strides[0].push_back(st[size_t(d)]);
  }
  const int64_t total = numel(kept.dims), count = numel(rd.dims);
  OPV_CHECK(total == numel(y.shape), "linear codegen: reduction of ", shape_str(x.shape), " to ", shape_str(y.shape),
            " in call '", c.label, "' keeps ", total, " elements");
  kept = collapse(kept);
  rd = collapse(rd);
  Gen g;
  g.body = elem_head(total);
  g.body += "  const int base = " + offset_expr(kept, 0, "i") + ";\n";
  const bool is_max = op == OpKind::ReduceMax, is_min = op == OpKind::ReduceMin;
  g.body += std::string("  float acc = ") + (is_max ? "-INFINITY" : is_min ? "INFINITY" : "0.0f") + ";\n";
  g.body += "  for (int j = 0; j < " + I(count) + "; ++j) {\n";
  g.body += "    const float e = " + cl_load(x.dtype, "in0", "base + " + offset_expr(rd, 0, "j")) + ";\n";
  g.body += std::string("    acc = ") + (is_max ? "fmax(acc, e)" : is_min ? "fmin(acc, e)" : "acc + e") + ";\n  }\n";
  const std::string value = op == OpKind::ReduceMean ? "acc / " + flt(double(count)) : "acc";
  g.body += float_tail(p, c, k, value);
  g.name = "cl_" + lower(op_name(k.op)) + "_" + dims_str(x.shape) + "_to_" + dims_str(y.shape) + "_" +
           dtype_name(x.dtype) + post_ops_suffix(k.post_ops);
  g.global = {round_up(total, kWave), 0, 0};
  return g;
}

Gen gen_softmax(const Plan& p, const Call& c, const Kernel& k) {
  const Buffer& x = in_buf(p, c, 0);
  const Buffer& y = out_buf(p, c);
  const int64_t r = int64_t(x.shape.size());
  int64_t axis = k.attrs.i("axis", -1);
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[size_t(d)];
  for (int64_t d = axis + 1; d < r; ++d) inner *= x.shape[size_t(d)];
  const int64_t len = x.shape[size_t(axis)], rows = outer * inner;
  Gen g;
  g.body = "  const int t = get_global_id(0);\n  if (t >= " + I(rows) + ") return;\n";
  g.body += inner == 1 ? "  const int base = t * " + I(len) + ";\n"
                       : "  const int base = (t / " + I(inner) + ") * " + I(len * inner) + " + t % " + I(inner) + ";\n";
  const std::string at = inner == 1 ? "base + k" : "base + k * " + I(inner);
  g.body += "  float mx = -INFINITY;\n";
  g.body += "  for (int k = 0; k < " + I(len) + "; ++k) mx = fmax(mx, " + cl_load(x.dtype, "in0", at) + ");\n";
  g.body += "  float sum = 0.0f;\n";
  g.body += "  for (int k = 0; k < " + I(len) + "; ++k) sum += exp(" + cl_load(x.dtype, "in0", at) + " - mx);\n";
  g.body += "  const float inv = 1.0f / sum;\n";
  g.body += "  for (int k = 0; k < " + I(len) + "; ++k) {\n    const int i = " + at + ";\n";
  g.body += "    float v = exp(" + cl_load(x.dtype, "in0", "i") + " - mx) * inv;\n";
  g.body += emit_post_ops_linear(p, c, k) + "    " + cl_store(y.dtype, "out0", "i", "v") + "\n  }\n";
  g.name = "cl_softmax_axis" + I(axis) + "_" + dims_str(x.shape) + "_" + dtype_name(x.dtype) + "_" +
           dtype_name(y.dtype) + post_ops_suffix(k.post_ops);
  g.global = {round_up(rows, kWave), 0, 0};
  return g;
}

}  // namespace

bool misc_supports(const Plan& p, const Call& c, const Kernel& k) { return supports_impl(p, c, k); }

KernelDesc misc_generate(const Plan& p, const Call& c, Kernel& k) {
  OPV_CHECK(supports_impl(p, c, k), "linear codegen: call '", c.label, "' (", op_name(k.op), ") is not supported");
  Gen g;
  const Buffer& y = out_buf(p, c);
  if (k.op == OpKind::Concat)
    g = gen_concat(p, c, k);
  else if (is_movement(k.op) || (k.op == OpKind::Identity && in_buf(p, c, 0).dtype == y.dtype && k.post_ops.empty()))
    g = gen_copy(p, c, k);
  else if (is_reduction_kernel(k.op))
    g = gen_reduce(p, c, k);
  else if (k.op == OpKind::Softmax)
    g = gen_softmax(p, c, k);
  else
    g = gen_elementwise(p, c, k);
  return finish(p, c, k, g.name, g.defs, g.body, "", g.global);
}

}  // namespace opv::plan::cl::lin
