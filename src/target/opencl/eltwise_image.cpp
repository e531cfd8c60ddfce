// Kernel family "eltwise_image" (target opencl): unary and binary element-wise ops whose output
// is an ImageRGBA image, plus their post-ops (emit_post_ops_image).
//   1. supports(): a unary op with a unary_expr, or Add/Sub/Mul/Div/Pow/Min/Max, one output
//      image; each operand is a same-shape image, an [N,C,1,1] image (read at texel (cb, n):
//      the squeeze-excite gate), or a per-channel ([C], [C,1,1], [1,C,1,1], [N,C,1,1]) /
//      scalar float Linear vector broadcast over the texel; post-ops pass post_ops_image_ok.
//      Concat on axis 1 of images (any channel counts: see concat_body).
//   2. generate(): one work-item per output texel (x, y) = (w*C4 + cb, n*H + h): read each
//      operand's float4 (unconditional texel reads), apply the op and the post-ops in fp32,
//      zero the padded lanes, write one whole texel.
#include <cctype>

#include "core/error.h"
#include "target/opencl/codegen.h"

namespace opv::plan::cl {
namespace {

bool is_f32_f16(DType dt) { return dt == DType::F32 || dt == DType::F16; }

bool is_supported_binary(OpKind k) {
  return k == OpKind::Add || k == OpKind::Sub || k == OpKind::Mul || k == OpKind::Div || k == OpKind::Pow ||
         k == OpKind::Min || k == OpKind::Max;
}


std::string S(int64_t v) { return std::to_string(v); }

// float4 of channels 4cb..4cb+3 of a Linear per-channel vector starting at element `base`.
std::string channel_vec4(DType dt, const std::string& name, const std::string& base, int64_t C) {
  if (C % 4 == 0) {
    if (dt == DType::F16) return "vload_half4(0, " + name + " + " + base + " + 4 * cb)";
    return "vload4(0, " + name + " + " + base + " + 4 * cb)";
  }
  std::string r = "(float4)(";
  for (int k = 0; k < 4; ++k) {
    const std::string idx = "min(4 * cb + " + std::to_string(k) + ", " + S(C - 1) + ")";
    r += (k ? ", " : "") + cl_load(dt, name, base + " + " + idx);
  }
  return r + ")";  // padded lanes repeat the last channel; the kernel zeroes them at the end
}

// The float4 expression of operand slot j of call c for output shape out.
std::string operand_expr(const Plan& p, const Call& c, const KernelDesc& d, size_t j, const Shape& out) {
  const Buffer& b = p.buffers.at(size_t(c.inputs[j]));
  const std::string name = "in" + std::to_string(j);
  switch (classify_image_operand(b, out)) {
    case ImageOperand::SameImage: return d.read_image(name, "(int2)(x, y)");
    case ImageOperand::ChannelImage: return d.read_image(name, "(int2)(cb, n)");
    case ImageOperand::Channel: return channel_vec4(b.dtype, name, "0", out[1]);
    case ImageOperand::BatchChannel: return channel_vec4(b.dtype, name, "n * " + S(out[1]), out[1]);
    case ImageOperand::Scalar: return "(float4)(" + cl_load(b.dtype, name, "0") + ")";
    case ImageOperand::Bad: break;
  }
  fail("eltwise_image: operand ", j, " of call '", c.label, "' cannot be read on an image output");
}

// Texture reads per work-item: the op's image operands and the image operands of post-ops.
int image_reads(const Plan& p, const Call& c, const Kernel& k, size_t n_ops) {
  auto is_img = [&](int id) { return id >= 0 && p.buffers.at(size_t(id)).layout == Layout::ImageRGBA; };
  int r = 0;
  for (size_t j = 0; j < n_ops; ++j) r += is_img(c.inputs[j]);
  for (const PostOp& po : k.post_ops)
    if (!is_unary(po.op) && po.input >= 0 && size_t(po.input) < c.inputs.size()) r += is_img(c.inputs[size_t(po.input)]);
  return r;
}

// Concat along channels: every input an image of the output's N, H, W; channels add up.
bool concat_ok(const Plan& p, const Call& c, const Shape& out) {
  int64_t channels = 0;
  for (int id : c.inputs) {
    if (id < 0) return false;
    const Buffer& b = p.buffers.at(size_t(id));
    if (b.layout != Layout::ImageRGBA || b.shape.size() != 4 || !is_f32_f16(b.dtype)) return false;
    if (b.shape[0] != out[0] || b.shape[2] != out[2] || b.shape[3] != out[3]) return false;
    channels += b.shape[1];
  }
  return channels == out[1];
}

bool supports(const Plan& p, const Call& c, const Options& /*o*/) {
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  if (c.outputs.size() != 1) return false;
  const Buffer& out = p.buffers.at(size_t(c.outputs[0]));
  if (out.layout != Layout::ImageRGBA || out.shape.size() != 4 || !fits_image(out.shape)) return false;
  if (k.op == OpKind::Concat)
    return k.attrs.i("axis", -1) == 1 && k.post_ops.empty() && !c.inputs.empty() && concat_ok(p, c, out.shape);
  size_t n_ops = 0;
  if (is_unary(k.op)) {
    if (k.op == OpKind::Cast || unary_expr(unary_post_op(k.op, k.attrs), "x").empty()) return false;
    n_ops = 1;
  } else if (is_supported_binary(k.op)) {
    n_ops = 2;
  } else {
    return false;
  }
  if (c.inputs.size() < n_ops) return false;
  for (size_t j = 0; j < n_ops; ++j) {
    if (c.inputs[j] < 0) return false;
    const Buffer& b = p.buffers.at(size_t(c.inputs[j]));
    const ImageOperand o = classify_image_operand(b, out.shape);
    if (o == ImageOperand::Bad) return false;
    if (n_ops == 1 && o != ImageOperand::SameImage) return false;
  }
  return post_ops_image_ok(p, c, k);
}

// Concat on channels: output lane k of block cb is channel d + k of input i, d = 4*cb - off_i.
// d % 4 == (-off_i) % 4 =: s is a compile-time constant, so the lane comes from texel block
// floor(d/4) (lanes s..3) or the next one (lanes 0..s-1): 1 texel read per input when s == 0,
// else 2. Blocks outside the input are pushed to x = -1 (zero border) with select(); lanes
// outside the input's channels are masked to 0; the inputs' masked texels are summed.
std::string concat_body(const Plan& p, const Call& c, const KernelDesc& d, const Shape& out, int& reads) {
  std::string r = "  float4 v = (float4)(0.0f);\n";
  int64_t off = 0;
  reads = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Shape& s = p.buffers.at(size_t(c.inputs[i])).shape;
    const int64_t Ci = s[1], C4i = image_geom(s).c4;  // the input image's texels per pixel
    const int64_t sh = ((-off) % 4 + 4) % 4;
    const std::string I = std::to_string(i), name = "in" + I;
    r += "  {\n    const int d = 4 * cb - " + S(off) + ";\n";
    r += "    const int b0 = (d - " + S(sh) + ") / 4;\n";  // exact: d - sh is a multiple of 4
    auto texel = [&](const std::string& blk) {
      return d.read_image(name, "(int2)(select(-1, w * " + S(C4i) + " + " + blk + ", " + blk + " >= 0 && " + blk +
                                    " < " + S(C4i) + "), y)");
    };
    r += "    const float4 ta = " + texel("b0") + ";\n";
    ++reads;
    std::string lanes[4];
    const char* comp = "xyzw";
    if (sh == 0) {
      r += "    const float4 t = ta;\n";
    } else {
      r += "    const float4 tb = " + texel("(b0 + 1)") + ";\n";
      ++reads;
      std::string e = "(float4)(";
      for (int k = 0; k < 4; ++k) {
        const int64_t src = sh + k;
        e += (k ? ", " : "") + std::string(src < 4 ? "ta." : "tb.") + comp[src % 4];
      }
      r += "    const float4 t = " + e + ");\n";
    }
    r += "    const int4 ch = (int4)(d) + (int4)(0, 1, 2, 3);\n";
    r += "    v += select((float4)(0.0f), t, ch >= (int4)(0) && ch < (int4)(" + S(Ci) + "));\n  }\n";
    off += Ci;
  }
  return r;
}

std::string op_tag(const Kernel& k) {
  std::string s = op_name(k.op);
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  for (const PostOp& po : k.post_ops) {
    std::string t = op_name(po.op);
    for (char& ch : t) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    s += "_" + t;
  }
  return s;
}

KernelDesc generate(const Plan& p, const Call& c, Kernel& k, const Options& o) {
  OPV_CHECK(supports(p, c, o), "eltwise_image: call '", c.label, "' is not supported");
  const Shape& out = p.buffers.at(size_t(c.outputs[0])).shape;
  const ImageGeom g = image_geom(out);
  const int64_t C = out[1];
  KernelDesc d = describe_call(p, c, "eltwise_image", "src/target/opencl/eltwise_image.cpp");
  std::string body;
  body += texel_head(out);
  int reads = 0;
  if (k.op == OpKind::Concat) {
    body += concat_body(p, c, d, out, reads);
  } else if (is_unary(k.op)) {
    reads = image_reads(p, c, k, 1);
    body += "  const float4 a0 = " + operand_expr(p, c, d, 0, out) + ";\n";
    body += "  float4 v = " + unary_expr(unary_post_op(k.op, k.attrs), "a0") + ";\n";
  } else {
    reads = image_reads(p, c, k, 2);
    body += "  const float4 a0 = " + operand_expr(p, c, d, 0, out) + ";\n";
    body += "  const float4 a1 = " + operand_expr(p, c, d, 1, out) + ";\n";
    body += "  float4 v = " + binary_expr(k.op, "a0", "a1") + ";\n";
  }
  body += emit_post_ops_image(p, c, k, d);
  if (C % 4 != 0) body += "  v = select((float4)(0.0f), v, (int4)(4 * cb) + (int4)(0, 1, 2, 3) < (int4)(" + S(C) + "));\n";
  body += "  " + d.write_image("out0", "(int2)(x, y)", "v") + "\n";
  k.name = "cl_eltwise_" + op_tag(k) + "_img_c" + S(C);
  k.options = "-cl-mad-enable";
  k.attrs.set("cl_reads", int64_t(reads));
  k.attrs.set("cl_gated", int64_t(0));
  d.entry = k.name;
  d.prelude = cl_prelude();
  d.body = std::move(body);
  d.global = {g.width, g.height, 0};
  return d;
}

}  // namespace

const Family& eltwise_image_family() {
  static const Family f{"eltwise_image", supports, generate, nullptr};
  return f;
}

}  // namespace opv::plan::cl
