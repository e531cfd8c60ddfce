/* Kernel family "linear" (target opencl): every call whose buffers are all Linear (plus the
 * PackedWeight constants this family made itself).
 *   1. Gemm/MatMul (linear_gemm.cpp): a GEMV kernel for M == 1 that streams prepacked F16
 *      weight blocks (pack_weights), and a register-tiled GEMM for the rest; fused epilogue.
 *   2. Element-wise, Where, comparisons, Cast (incl. round_to), copies, Concat, Transpose,
 *      Slice, Expand, reductions, Softmax, GlobalAveragePool (linear_misc.cpp).
 *   3. This file: the family table and the helpers both halves share (compile-time index math
 *      that collapses contiguous axes, the kernel wrapper).
 * Invariant: the generated source depends only on shapes, dtypes, attributes and post-ops — never
 * on buffer or node names — so calls of identical shape get byte-identical kernels (the codegen
 * pass merges them and plan pass "batch" can launch them together).
 */
#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "target/opencl/linear_internal.h"

namespace opv::plan::cl::lin {

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}


std::vector<int64_t> broadcast_strides(const Shape& s, const Shape& out) {
  OPV_CHECK(broadcasts_to(s, out), "linear codegen: ", shape_str(s), " does not broadcast to ", shape_str(out));
  std::vector<int64_t> r(out.size(), 0);
  const std::vector<int64_t> st = strides_of(s);
  const size_t off = out.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1) r[off + d] = st[d];
  return r;
}

Addressing collapse(const Addressing& a) {
  Addressing r;
  r.base = a.base;
  r.strides.assign(a.strides.size(), {});
  for (size_t d = 0; d < a.dims.size(); ++d) {
    if (a.dims[d] == 1) continue;
    bool merge = !r.dims.empty();
    // Axis d joins the previous kept axis p when every operand has stride_p == stride_d * dim_d.
    for (size_t j = 0; merge && j < a.strides.size(); ++j) merge = r.strides[j].back() == a.strides[j][d] * a.dims[d];
    if (merge) {
      r.dims.back() *= a.dims[d];
      for (size_t j = 0; j < a.strides.size(); ++j) r.strides[j].back() = a.strides[j][d];
      continue;
    }
    r.dims.push_back(a.dims[d]);
    for (size_t j = 0; j < a.strides.size(); ++j) r.strides[j].push_back(a.strides[j][d]);
  }
  return r;
}

std::string offset_expr(const Addressing& a, size_t j, const std::string& var) {
  std::vector<std::string> terms;
  if (a.base[j] != 0) terms.push_back(std::to_string(a.base[j]));
  int64_t inner = 1;
  for (size_t d = a.dims.size(); d-- > 0;) {
    const int64_t st = a.strides[j][d];
    if (st != 0) {
      std::string coord = var;
      if (inner != 1) coord = "(" + coord + " / " + std::to_string(inner) + ")";
      if (d != 0) coord = "(" + coord + " % " + std::to_string(a.dims[d]) + ")";
      terms.push_back(st == 1 ? coord : coord + " * " + std::to_string(st));
    }
    inner *= a.dims[d];
  }
  if (terms.empty()) return "0";
  std::string r;
  for (size_t t = 0; t < terms.size(); ++t) r += (t ? " + " : "") + terms[t];
  return terms.size() == 1 ? r : "(" + r + ")";
}

bool is_float_dt(DType dt) { return dt == DType::F32 || dt == DType::F16; }

std::string raw_type(DType dt) {
  switch (dtype_size(dt)) {
    case 1: return "uchar";
    case 2: return "ushort";
    case 4: return "uint";
    case 8: return "ulong";
    default: fail("linear codegen: no raw type for ", dtype_name(dt));
  }
}

std::string raw_ptr(DType dt, const std::string& name, bool is_const) {
  return std::string("((__global ") + (is_const ? "const " : "") + raw_type(dt) + "*)" + name + ")";
}

std::string dims_str(const Shape& s) {
  if (s.empty()) return "s";
  std::string r;
  for (size_t d = 0; d < s.size(); ++d) {
    if (d) r += 'x';
    r += std::to_string(s[d]);
  }
  return r;
}

std::string lower(std::string s) {
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string post_ops_suffix(const std::vector<PostOp>& ops) {
  std::string r;
  for (const PostOp& po : ops) {
    r += '_';
    r += lower(op_name(po.op));
  }
  return r;
}

bool has_in(const Call& c, size_t j) { return j < c.inputs.size() && c.inputs[j] >= 0; }
const Buffer& in_buf(const Plan& p, const Call& c, size_t j) { return p.buffers.at(size_t(c.inputs.at(j))); }
const Buffer& out_buf(const Plan& p, const Call& c, size_t j) { return p.buffers.at(size_t(c.outputs.at(j))); }

bool all_linear(const Plan& p, const Call& c) {
  for (int b : c.outputs)
    if (b < 0 || p.buffers.at(size_t(b)).layout != Layout::Linear) return false;
  for (int b : c.inputs)
    if (b >= 0 && p.buffers.at(size_t(b)).layout != Layout::Linear) return false;
  return true;
}

KernelDesc finish(const Plan& p, const Call& c, Kernel& k, const std::string& name, const std::string& defs,
                  const std::string& body, const std::string& options, std::array<int64_t, 3> global,
                  std::vector<KernelLocal> locals, std::array<int64_t, 3> local) {
  KernelDesc d = describe_call(p, c, kFamilyName, "src/target/opencl/linear*.cpp");
  k.name = name;
  k.options = options;
  k.attrs.set("cl_reads", int64_t(0));
  k.attrs.set("cl_gated", int64_t(0));
  d.entry = name;
  d.prelude = cl_prelude() + defs;
  d.locals = std::move(locals);
  d.body = body;
  d.global = global;
  d.local = local;
  return d;
}

namespace {

bool supports(const Plan& p, const Call& c, const Options& /*o*/) {
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  if (k.op == OpKind::Gemm || k.op == OpKind::MatMul) return gemm_supports(p, c, k);
  if (!all_linear(p, c)) return false;
  return misc_supports(p, c, k);
}

KernelDesc generate(const Plan& p, const Call& c, Kernel& k, const Options& o) {
  OPV_CHECK(supports(p, c, o), "linear codegen: call '", c.label, "' (", op_name(k.op), ") is not supported");
  k.attrs.erase("cl_pack");
  if (k.op == OpKind::Gemm || k.op == OpKind::MatMul) return gemm_generate(p, c, k);
  return misc_generate(p, c, k);
}

bool pack_weights(Plan& p, int call, const Options& o) {
  const Kernel& k = p.kernels.at(size_t(p.calls.at(size_t(call)).kernel));
  if (k.op != OpKind::Gemm && k.op != OpKind::MatMul) return false;
  return gemm_pack_weights(p, call, o);
}

}  // namespace
}  // namespace opv::plan::cl::lin

namespace opv::plan::cl {

const Family& linear_family() {
  static const Family f{lin::kFamilyName, lin::supports, lin::generate, lin::pack_weights};
  return f;
}

}  // namespace opv::plan::cl
