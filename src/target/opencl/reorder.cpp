// Kernel family "reorder" (target opencl): layout conversions between NCHW Linear buffers and
// ImageRGBA images, written by plan pass layout-image at the edges of the image domain.
//   1. Linear (F32/F16/U8 and the other integer dtypes) -> ImageRGBA: a work-item owns 4
//      consecutive texels along w of one channel block: it loads 4 consecutive w of each of the
//      block's 4 channel planes (one vload4 per lane when W % 4 == 0), transposes them into
//      texels and writes 4 whole texels; lanes of padded channels are written as zero.
//   2. ImageRGBA -> Linear (F32/F16): the reverse, 4 unconditional texel reads (texels beyond W
//      land outside the image and read zero), one vstore4 per valid lane.
//   3. Reshape whose input is an image and whose output is float Linear: the same kernel as 2
//      over the input's shape, since a Reshape is the row-major NCHW order of its input.
// The helpers of image_pack.h live here; the input-pack family reuses them.
#include "core/error.h"
#include "target/opencl/codegen.h"
#include "target/opencl/image_pack.h"

namespace opv::plan::cl {

namespace pack {

namespace {
constexpr int kTexelsPerItem = 4;  // texels along w per work-item
std::string S(int64_t v) { return std::to_string(v); }

// float4 of elements idx..idx+3 of parameter `name`.
std::string load4(DType dt, const std::string& name, const std::string& idx) {
  if (dt == DType::F32) return "vload4(0, " + name + " + " + idx + ")";
  if (dt == DType::F16) return "vload_half4(0, " + name + " + " + idx + ")";
  return "convert_float4(vload4(0, " + name + " + " + idx + "))";
}
}  // namespace

bool loadable(DType dt) {
  switch (dt) {
    case DType::F32:
    case DType::F16:
    case DType::U8:
    case DType::I8:
    case DType::I32:
    case DType::Bool: return true;
    default: return false;
  }
}

std::array<int64_t, 3> global_4w(const Shape& s) {
  const ImageGeom g = image_geom(s);
  return {(s[3] + kTexelsPerItem - 1) / kTexelsPerItem * g.c4, g.height, 0};
}

namespace {
// Common head: ids, bounds check, cb/w0/n/h.
std::string head(const Shape& s) {
  const ImageGeom g = image_geom(s);
  const auto gl = global_4w(s);
  std::string r;
  r += "  const int gx = get_global_id(0), y = get_global_id(1);\n";
  r += "  if (gx >= " + S(gl[0]) + " || y >= " + S(gl[1]) + ") return;\n";
  r += "  const int cb = gx % " + S(g.c4) + ", w0 = (gx / " + S(g.c4) + ") * 4;\n";
  r += "  const int n = y / " + S(s[2]) + ", h = y - n * " + S(s[2]) + ";\n";
  return r;
}
}  // namespace

std::string linear_to_image_body(const KernelDesc& d, const std::vector<Plane>& planes, const Shape& out, bool round_f16,
                                 const std::string& post_ops) {
  const ImageGeom g = image_geom(out);
  const int64_t C = out[1], H = out[2], W = out[3];
  int64_t total = 0;
  for (const Plane& pl : planes) {
    OPV_CHECK(loadable(pl.dtype), "image pack: cannot load dtype ", dtype_name(pl.dtype), " of ", pl.name);
    total += pl.channels;
  }
  OPV_CHECK(total == C, "image pack: input planes hold ", total, " channels, the image ", C);
  const bool vec = W % kTexelsPerItem == 0;
  std::string r = head(out);
  r += "  float4 l[4];\n";
  for (int k = 0; k < 4; ++k) {
    const std::string lk = "l[" + std::to_string(k) + "]";
    r += "  { const int c = 4 * cb + " + std::to_string(k) + ";\n    " + lk + " = (float4)(0.0f);\n";
    int64_t off = 0;
    for (size_t i = 0; i < planes.size(); ++i) {
      const Plane& pl = planes[i];
      const std::string cc = off ? "(c - " + S(off) + ")" : "c";
      const std::string base = "((long)(n * " + S(pl.channels) + " + " + cc + ") * " + S(H) + " + h) * " + S(W);
      r += std::string("    ") + (i ? "else " : "") + "if (c < " + S(off + pl.channels) + ") {\n";
      if (vec) {
        r += "      " + lk + " = " + load4(pl.dtype, pl.name, base + " + w0") + ";\n";
      } else {
        r += "      const long b = " + base + ";\n";
        for (int j = 0; j < 4; ++j)
          r += "      " + lk + ".s" + std::to_string(j) + " = " +
               cl_load(pl.dtype, pl.name, "b + min(w0 + " + std::to_string(j) + ", " + S(W - 1) + ")") + ";\n";
      }
      r += "    }\n";
      off += pl.channels;
    }
    if (round_f16) {
      // fp16 rounding without cl_khr_fp16: store as half through a private buffer and reload.
      r += "    { ushort t[4]; vstore_half4_rte(" + lk + ", 0, (__private half*)t); " + lk +
           " = vload_half4(0, (__private half*)t); }\n";
    }
    r += "  }\n";
  }
  for (int j = 0; j < 4; ++j) {
    const std::string sj = ".s" + std::to_string(j);
    r += "  {\n    const int w = w0 + " + std::to_string(j) + ";\n";
    r += "    float4 v = (float4)(l[0]" + sj + ", l[1]" + sj + ", l[2]" + sj + ", l[3]" + sj + ");\n";
    r += post_ops;
    if (C % 4 != 0) r += "    v = select((float4)(0.0f), v, (int4)(4 * cb) + (int4)(0, 1, 2, 3) < (int4)(" + S(C) + "));\n";
    r += std::string("    ") + (vec ? "" : "if (w < " + S(W) + ") ") +
         d.write_image("out0", "(int2)(w * " + S(g.c4) + " + cb, y)", "v") + "\n  }\n";
  }
  return r;
}

std::string image_to_linear_body(const KernelDesc& d, const Shape& in, DType out_dt) {
  OPV_CHECK(out_dt == DType::F32 || out_dt == DType::F16, "image unpack: output dtype ", dtype_name(out_dt),
            " is not float");
  const ImageGeom g = image_geom(in);
  const int64_t C = in[1], H = in[2], W = in[3];
  const bool vec = W % kTexelsPerItem == 0;
  std::string r = head(in);
  for (int j = 0; j < 4; ++j)
    r += "  const float4 t" + std::to_string(j) + " = " +
         d.read_image("in0", "(int2)((w0 + " + std::to_string(j) + ") * " + S(g.c4) + " + cb, y)") + ";\n";
  for (int k = 0; k < 4; ++k) {
    const std::string sk = ".s" + std::to_string(k);
    r += "  {\n    const int c = 4 * cb + " + std::to_string(k) + ";\n";
    r += "    const float4 v = (float4)(t0" + sk + ", t1" + sk + ", t2" + sk + ", t3" + sk + ");\n";
    r += "    const long b = ((long)(n * " + S(C) + " + c) * " + S(H) + " + h) * " + S(W) + " + w0;\n";
    r += "    if (c < " + S(C) + ") {\n";
    if (vec) {
      r += std::string("      ") +
           (out_dt == DType::F32 ? "vstore4(v, 0, out0 + b);" : "vstore_half4_rte(v, 0, out0 + b);") + "\n";
    } else {
      for (int j = 0; j < 4; ++j)
        r += "      if (w0 + " + std::to_string(j) + " < " + S(W) + ") " +
             cl_store(out_dt, "out0", "b + " + std::to_string(j), "v.s" + std::to_string(j)) + "\n";
    }
    r += "    }\n  }\n";
  }
  return r;
}

}  // namespace pack

namespace {

bool is_f32_f16(DType dt) { return dt == DType::F32 || dt == DType::F16; }

enum class Kind { None, ToImage, ToLinear };

Kind kind_of(const Plan& p, const Call& c) {
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  if (c.inputs.size() != 1 || c.outputs.size() != 1 || c.inputs[0] < 0 || !k.post_ops.empty()) return Kind::None;
  const Buffer& in = p.buffers.at(size_t(c.inputs[0]));
  const Buffer& out = p.buffers.at(size_t(c.outputs[0]));
  if (k.op == OpKind::Reorder) {
    if (in.shape != out.shape || !fits_image(in.shape)) return Kind::None;
    if (in.layout == Layout::Linear && out.layout == Layout::ImageRGBA && pack::loadable(in.dtype) &&
        is_f32_f16(out.dtype))
      return Kind::ToImage;
    if (in.layout == Layout::ImageRGBA && out.layout == Layout::Linear && is_f32_f16(in.dtype) && is_f32_f16(out.dtype))
      return Kind::ToLinear;
    return Kind::None;
  }
  if (k.op == OpKind::Reshape && in.layout == Layout::ImageRGBA && fits_image(in.shape) &&
      out.layout == Layout::Linear && is_f32_f16(out.dtype) && numel(in.shape) == numel(out.shape))
    return Kind::ToLinear;
  return Kind::None;
}

bool supports(const Plan& p, const Call& c, const Options& /*o*/) { return kind_of(p, c) != Kind::None; }

KernelDesc generate(const Plan& p, const Call& c, Kernel& k, const Options& /*o*/) {
  const Kind kind = kind_of(p, c);
  OPV_CHECK(kind != Kind::None, "reorder family: call '", c.label, "' is not a supported layout conversion");
  const Buffer& in = p.buffers.at(size_t(c.inputs[0]));
  const Buffer& out = p.buffers.at(size_t(c.outputs[0]));
  KernelDesc d = describe_call(p, c, "reorder", "src/target/opencl/reorder.cpp");
  const Shape& s = in.shape;
  std::string body;
  std::string name;
  const std::string dims = std::to_string(s[1]) + "x" + std::to_string(s[2]) + "x" + std::to_string(s[3]);
  if (kind == Kind::ToImage) {
    body = pack::linear_to_image_body(d, {{"in0", in.dtype, s[1]}}, out.shape, false, "");
    name = std::string("cl_reorder_") + dtype_name(in.dtype) + "_linear_to_image_" + dims;
    k.attrs.set("cl_reads", int64_t(0));
  } else {
    body = pack::image_to_linear_body(d, s, out.dtype);
    name = std::string(k.op == OpKind::Reshape ? "cl_reshape_image_to_" : "cl_reorder_image_to_") +
           dtype_name(out.dtype) + "_linear_" + dims;
    k.attrs.set("cl_reads", int64_t(4));
  }
  k.name = name;
  k.options = "-cl-mad-enable";
  k.attrs.set("cl_gated", int64_t(0));
  d.entry = name;
  d.prelude = cl_prelude();
  d.body = std::move(body);
  d.global = pack::global_4w(s);
  return d;
}

}  // namespace

const Family& reorder_family() {
  static const Family f{"reorder", supports, generate, nullptr};
  return f;
}

}  // namespace opv::plan::cl
