// The "codegen" plan pass for target opencl and the helpers every kernel family shares: OpenCL C
// types and loads per dtype, the default parameter list, unary/binary expressions and post-op
// epilogues for image and linear outputs. Families (one file each) only write their op's core.
#include "target/opencl/codegen.h"

#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "target/opencl/passes.h"

namespace opv::plan::cl {

std::string cl_type(DType dt) {
  switch (dt) {
    case DType::F32: return "float";
    case DType::F16: return "half";
    case DType::F64: return "double";
    case DType::U8: return "uchar";
    case DType::Bool: return "uchar";
    case DType::I8: return "char";
    case DType::I32: return "int";
    case DType::I64: return "long";
    default: fail("OpenCL codegen: no OpenCL C type for dtype ", dtype_name(dt));
  }
}

std::string cl_load(DType dt, const std::string& name, const std::string& idx) {
  if (dt == DType::F16) return "vload_half(" + idx + ", " + name + ")";
  if (dt == DType::F32) return name + "[" + idx + "]";
  return "(float)(" + name + "[" + idx + "])";
}

std::string cl_store(DType dt, const std::string& name, const std::string& idx, const std::string& val) {
  if (dt == DType::F16) return "vstore_half_rte(" + val + ", " + idx + ", " + name + ");";
  if (dt == DType::F32) return name + "[" + idx + "] = " + val + ";";
  if (dt == DType::Bool) return name + "[" + idx + "] = (uchar)((" + val + ") != 0.0f);";
  if (dt == DType::F64) return name + "[" + idx + "] = (double)(" + val + ");";
  // Integer stores from float: convert with saturation like a C cast of an in-range value.
  return name + "[" + idx + "] = convert_" + cl_type(dt) + "_sat_rtz(" + val + ");";
}

// ---- post-ops on image outputs ---------------------------------------------------------------

namespace {

bool is_f32_f16(DType dt) { return dt == DType::F32 || dt == DType::F16; }

const Buffer* operand_buffer(const Plan& p, const Call& c, const PostOp& po) {
  if (po.input < 0 || size_t(po.input) >= c.inputs.size() || c.inputs[size_t(po.input)] < 0) return nullptr;
  return &p.buffers.at(size_t(c.inputs[size_t(po.input)]));
}

// float4 of channels 4cb..4cb+3 from a Linear per-channel vector starting at element `base`.
std::string channel_vec4(const Buffer& b, const std::string& name, const std::string& base, int64_t C) {
  if (C % 4 == 0) {
    if (b.dtype == DType::F16) return "vload_half4(0, " + name + " + " + base + " + 4 * cb)";
    if (b.dtype == DType::F32) return "vload4(0, " + name + " + " + base + " + 4 * cb)";
  }
  std::string r = "(float4)(";
  for (int k = 0; k < 4; ++k) {
    std::string idx = "4 * cb + " + std::to_string(k);
    r += (k ? ", " : "") + std::string("(") + idx + " < " + std::to_string(C) + " ? " +
         cl_load(b.dtype, name, base + " + " + idx) + " : 0.0f)";
  }
  return r + ")";
}

}  // namespace

std::string texel_head(const Shape& out) {
  const ImageGeom g = image_geom(out);
  const std::string H = std::to_string(out.at(2)), C4 = std::to_string(g.c4);
  return "  const int x = get_global_id(0), y = get_global_id(1);\n"
         "  if (x >= " + std::to_string(g.width) + " || y >= " + std::to_string(g.height) + ") return;\n"
         "  const int w = x / " + C4 + ", cb = x - w * " + C4 + ";\n"
         "  const int n = y / " + H + ", h = y - n * " + H + ";\n";
}

ImageOperand classify_image_operand(const Buffer& b, const Shape& out) {
  if (!is_f32_f16(b.dtype)) return ImageOperand::Bad;
  if (b.layout == Layout::ImageRGBA) {
    if (b.shape == out) return ImageOperand::SameImage;
    if (b.shape.size() == 4 && b.shape[0] == out[0] && b.shape[1] == out[1] && b.shape[2] == 1 && b.shape[3] == 1)
      return ImageOperand::ChannelImage;
    return ImageOperand::Bad;
  }
  if (b.layout != Layout::Linear) return ImageOperand::Bad;
  if (numel(b.shape) == 1) return ImageOperand::Scalar;
  if (b.shape.size() > 4) return ImageOperand::Bad;
  Shape s(4 - b.shape.size(), 1);
  s.insert(s.end(), b.shape.begin(), b.shape.end());
  if (s[2] != 1 || s[3] != 1 || s[1] != out[1]) return ImageOperand::Bad;
  if (s[0] == 1) return ImageOperand::Channel;
  if (s[0] == out[0]) return ImageOperand::BatchChannel;
  return ImageOperand::Bad;
}

// Every post-op has an OpenCL expression and every binary one's operand passes `operand_ok`.
static bool post_ops_ok(const Plan& p, const Call& c, const Kernel& k,
                        const std::function<bool(const Buffer&)>& operand_ok) {
  for (const PostOp& po : k.post_ops) {
    if (is_unary(po.op)) {
      if (unary_expr(po, "x").empty()) return false;
      continue;
    }
    if (binary_expr(po.op, "a", "b").empty()) return false;
    const Buffer* b = operand_buffer(p, c, po);
    if (!b || !operand_ok(*b)) return false;
  }
  return true;
}

bool post_ops_image_ok(const Plan& p, const Call& c, const Kernel& k) {
  if (c.outputs.size() != 1) return k.post_ops.empty();
  const Buffer& out = p.buffers.at(size_t(c.outputs[0]));
  if (out.shape.size() != 4) return k.post_ops.empty();
  return post_ops_ok(p, c, k, [&](const Buffer& b) { return classify_image_operand(b, out.shape) != ImageOperand::Bad; });
}

std::string emit_post_ops_image(const Plan& p, const Call& c, const Kernel& k, const KernelDesc& d) {
  OPV_CHECK(post_ops_image_ok(p, c, k), "OpenCL codegen: post-ops ", post_ops_str(k.post_ops), " of call '", c.label,
            "' cannot run on an image output");
  std::string r;
  if (k.post_ops.empty()) return r;
  const Shape& out = p.buffers.at(size_t(c.outputs[0])).shape;
  const ImageGeom g = image_geom(out);
  const std::string H = std::to_string(out[2]), C4 = std::to_string(g.c4);
  for (const PostOp& po : k.post_ops) {
    if (is_unary(po.op)) {
      r += "  v = " + unary_expr(po, "v") + ";\n";
      continue;
    }
    const Buffer& b = *operand_buffer(p, c, po);
    const std::string name = "in" + std::to_string(po.input);
    std::string operand;
    switch (classify_image_operand(b, out)) {
      case ImageOperand::SameImage:
        operand = d.read_image(name, "(int2)(w * " + C4 + " + cb, n * " + H + " + h)");
        break;
      case ImageOperand::ChannelImage: operand = d.read_image(name, "(int2)(cb, n)"); break;
      case ImageOperand::Channel: operand = channel_vec4(b, name, "0", out[1]); break;
      case ImageOperand::BatchChannel:
        operand = channel_vec4(b, name, "n * " + std::to_string(out[1]), out[1]);
        break;
      case ImageOperand::Scalar: operand = "(float4)(" + cl_load(b.dtype, name, "0") + ")"; break;
      case ImageOperand::Bad: fail("unreachable");
    }
    r += "  v = " + (po.swapped ? binary_expr(po.op, operand, "v") : binary_expr(po.op, "v", operand)) + ";\n";
  }
  return r;
}

int post_ops_image_reads(const Plan& p, const Call& c, const Kernel& k) {
  if (k.post_ops.empty()) return 0;
  const Shape& out = p.buffers.at(size_t(c.outputs.at(0))).shape;
  int n = 0;
  for (const PostOp& po : k.post_ops) {
    if (is_unary(po.op)) continue;
    const Buffer* b = operand_buffer(p, c, po);
    if (!b) continue;
    const ImageOperand o = classify_image_operand(*b, out);
    n += o == ImageOperand::SameImage || o == ImageOperand::ChannelImage;
  }
  return n;
}

// ---- post-ops on linear outputs --------------------------------------------------------------

namespace {
// Index expression into a row-major operand of shape `s` broadcast to `out`, from flat index i.
std::string broadcast_index(const Shape& s, const Shape& out) {
  if (numel(s) == 1) return "0";
  if (s.size() == out.size() && s == out) return "i";
  size_t off = out.size() - s.size();
  std::string r;
  int64_t out_stride = 1, in_stride = 1;
  std::vector<std::string> terms;
  for (size_t d = out.size(); d-- > 0;) {
    int64_t od = out[d];
    bool present = d >= off && s[d - off] != 1;
    if (present) {
      std::string coord = "((i / " + std::to_string(out_stride) + ") % " + std::to_string(od) + ")";
      terms.push_back(coord + " * " + std::to_string(in_stride));
      in_stride *= s[d - off];
    }
    out_stride *= od;
  }
  for (size_t t = 0; t < terms.size(); ++t) r += (t ? " + " : "") + terms[t];
  return r.empty() ? "0" : "(" + r + ")";
}
}  // namespace

bool post_ops_linear_ok(const Plan& p, const Call& c, const Kernel& k) {
  if (c.outputs.size() != 1) return k.post_ops.empty();
  const Buffer& out = p.buffers.at(size_t(c.outputs[0]));
  return post_ops_ok(p, c, k, [&](const Buffer& b) {
    return b.layout == Layout::Linear && is_f32_f16(b.dtype) && broadcasts_to(b.shape, out.shape);
  });
}

std::string emit_post_ops_linear(const Plan& p, const Call& c, const Kernel& k) {
  OPV_CHECK(post_ops_linear_ok(p, c, k), "OpenCL codegen: post-ops ", post_ops_str(k.post_ops), " of call '", c.label,
            "' cannot run on a linear output");
  std::string r;
  if (k.post_ops.empty()) return r;
  const Shape& out = p.buffers.at(size_t(c.outputs[0])).shape;
  for (const PostOp& po : k.post_ops) {
    if (is_unary(po.op)) {
      r += "  v = " + unary_expr(po, "v") + ";\n";
      continue;
    }
    const Buffer& b = *operand_buffer(p, c, po);
    std::string operand = cl_load(b.dtype, "in" + std::to_string(po.input), broadcast_index(b.shape, out));
    r += "  v = " + (po.swapped ? binary_expr(po.op, operand, "v") : binary_expr(po.op, "v", operand)) + ";\n";
  }
  return r;
}

// ---- packed constants ------------------------------------------------------------------------

int add_packed_constant(Plan& p, int src, const std::string& packing, DType dt, const Shape& shape,
                        const std::vector<uint8_t>& bytes) {
  const std::string name = p.buffers.at(size_t(src)).name + "@" + packing;
  for (size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].kind == BufferKind::Constant && p.buffers[i].name == name) return int(i);
  int id = p.add_constant(name, dt, shape, Layout::PackedWeight, bytes.data(), bytes.size());
  p.buffers[size_t(id)].bytes = int64_t(bytes.size());
  return id;
}

// ---- the pass --------------------------------------------------------------------------------

namespace {

const Family* family_named(const std::string& name) {
  for (const Family* f : families())
    if (name == f->name) return f;
  return nullptr;
}

const Family* pick_family(const Plan& p, const Call& c, const Kernel& k, const Options& o) {
  // A kernel made by a pass (input-pack, a batched kernel) keeps its family when it still applies.
  if (const Family* f = family_named(k.attrs.s("cl_family")); f && f->supports(p, c, o)) return f;
  for (const Family* f : families())
    if (f->supports(p, c, o)) return f;
  return nullptr;
}

// Generates (or clears, for host fallback) the kernel of call `ci` into `k`.
void generate_into(const Plan& p, Call& c, Kernel& k, const Options& o) {
  if (k.attrs.i("cl_batch", 0) > 0) return;  // batched kernels are made by the batch pass only
  const Family* f = pick_family(p, c, k, o);
  for (const char* a : {"cl_family", "cl_params"}) k.attrs.erase(a);
  k.source.clear();
  k.entry.clear();
  k.options.clear();
  c.global = {0, 0, 0};
  c.local = {0, 0, 0};
  if (f) emit(*f, p, c, k, o);
}

using KernelKey = std::tuple<std::string, uint16_t, std::string, std::string, std::string, std::string, std::string>;
KernelKey key_of(const Kernel& k) {
  return {k.name, uint16_t(k.op), k.attrs.str(), post_ops_str(k.post_ops), k.source, k.entry, k.options};
}

}  // namespace

void emit(const Family& f, const Plan& p, Call& c, Kernel& k, const Options& o) {
  const KernelDesc d = f.generate(p, c, k, o);
  OPV_CHECK(d.family == f.name, "codegen: family '", f.name, "' described a kernel of family '", d.family, "'");
  k.entry = d.entry;
  k.source = render(d);
  k.attrs.set("cl_family", std::string(f.name));
  k.attrs.set("cl_params", d.param_list());
  for (const KernelParam& kp : d.params)
    if (kp.storage == ParamStorage::ImageInBuffer) k.attrs.set("cl_image_storage", std::string("buffer"));
  c.global = d.global;
  c.local = d.local;
}

std::optional<KernelDesc> describe(const Plan& p, const Call& c, const Options& o) {
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  if (k.source.empty() || k.attrs.i("cl_batch", 0) > 0) return std::nullopt;
  const Family* f = family_named(k.attrs.s("cl_family"));
  if (!f || !f->supports(p, c, o)) return std::nullopt;
  Kernel scratch = k;
  KernelDesc d = f->generate(p, c, scratch, o);
  if (d.entry != k.entry || render(d) != k.source) return std::nullopt;
  return d;
}

bool codegen(Plan& p, const Options& o) {
  OPV_CHECK(p.target == "opencl", "codegen: plan targets '", p.target, "', not opencl");
  std::vector<Kernel> kernels;
  std::map<KernelKey, int> interned;
  bool changed = false;
  for (Call& c : p.calls) {
    Kernel k = p.kernels.at(size_t(c.kernel));
    Call before = c;
    generate_into(p, c, k, o);
    const Kernel& old = p.kernels[size_t(c.kernel)];
    if (k.source != old.source || k.options != old.options || k.entry != old.entry || c.global != before.global ||
        c.local != before.local)
      changed = true;
    auto [it, fresh] = interned.emplace(key_of(k), int(kernels.size()));
    if (fresh) kernels.push_back(std::move(k));
    c.kernel = it->second;
  }
  if (kernels.size() != p.kernels.size()) changed = true;
  p.kernels = std::move(kernels);
  return changed;
}

bool intern_kernels(Plan& p) {
  std::vector<Kernel> kernels;
  std::map<KernelKey, int> interned;
  std::map<int, int> remap;
  for (Call& c : p.calls) {
    auto done = remap.find(c.kernel);
    if (done == remap.end()) {
      const Kernel& k = p.kernels.at(size_t(c.kernel));
      auto [it, fresh] = interned.emplace(key_of(k), int(kernels.size()));
      if (fresh) kernels.push_back(k);
      done = remap.emplace(c.kernel, it->second).first;
    }
    c.kernel = done->second;
  }
  const bool changed = kernels.size() != p.kernels.size();
  p.kernels = std::move(kernels);
  return changed;
}

void regenerate(Plan& p, int call, const Options& o) {
  Call& c = p.calls.at(size_t(call));
  Kernel k = p.kernels.at(size_t(c.kernel));
  generate_into(p, c, k, o);
  int users = 0;
  for (const Call& o : p.calls) users += o.kernel == c.kernel;
  if (users == 1) {
    p.kernels[size_t(c.kernel)] = std::move(k);
  } else {
    c.kernel = p.add_kernel(std::move(k));
  }
}

}  // namespace opv::plan::cl

namespace opv::plan {
bool cl_codegen(Plan& p, const PassCtx& ctx) { return cl::codegen(p, ctx.cl); }
}  // namespace opv::plan
