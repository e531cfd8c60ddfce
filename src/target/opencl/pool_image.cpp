// Kernel family "pool_image" (target opencl): pooling from an ImageRGBA input to an ImageRGBA
// output, with post-ops (emit_post_ops_image).
//   1. Global pooling (GlobalAveragePool, ReduceMean over {2,3} with keepdims, GlobalMaxPool):
//      one work-item per output texel (cb, n) of the [N,C,1,1] output; it walks the H*W texels
//      of its channel block with 4 independent fp32 accumulators (w unrolled by 4 when W % 4 ==
//      0), combines them and scales by 1/(H*W). No work-group tree reduction in local memory
//      (KernelDesc locals would allow one): the serial walk is what the fixture's 4x8 SE map
//      needs.
//   2. MaxPool / AveragePool kxk (strides, pads, dilations, count_include_pad): one work-item per
//      output texel; every tap is read unconditionally, invalid coordinates are pushed to -1
//      (outside the image: the zero border) with select(); max pool replaces invalid taps by
//      -inf with a branch-free select, average pool sums the zero border and divides by the
//      count of valid (or, with count_include_pad, in-padded-extent) taps.
// Padded output lanes are written as zero.
#include <cctype>

#include "core/error.h"
#include "target/opencl/codegen.h"

namespace opv::plan::cl {
namespace {

std::string S(int64_t v) { return std::to_string(v); }
bool is_f32_f16(DType dt) { return dt == DType::F32 || dt == DType::F16; }

bool is_global(const Kernel& k) {
  if (k.op == OpKind::GlobalAveragePool || k.op == OpKind::GlobalMaxPool) return true;
  return k.op == OpKind::ReduceMean && k.attrs.ints("axes") == std::vector<int64_t>{2, 3} &&
         k.attrs.i("keepdims", 1) == 1;
}

bool is_window(const Kernel& k) {
  if (k.op != OpKind::MaxPool && k.op != OpKind::AveragePool) return false;
  return k.attrs.ints("kernel").size() == 2 && k.attrs.ints("strides", {1, 1}).size() == 2 &&
         k.attrs.ints("pads", {0, 0, 0, 0}).size() == 4 && k.attrs.ints("dilations", {1, 1}).size() == 2;
}

bool supports(const Plan& p, const Call& c, const Options& /*o*/) {
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  if (!is_global(k) && !is_window(k)) return false;
  if (c.outputs.size() != 1 || c.inputs.empty() || c.inputs[0] < 0) return false;
  const Buffer& in = p.buffers.at(size_t(c.inputs[0]));
  const Buffer& out = p.buffers.at(size_t(c.outputs[0]));
  if (in.layout != Layout::ImageRGBA || out.layout != Layout::ImageRGBA || !is_f32_f16(in.dtype)) return false;
  if (in.shape.size() != 4 || out.shape.size() != 4 || in.shape[0] != out.shape[0] || in.shape[1] != out.shape[1])
    return false;
  if (is_global(k) && (out.shape[2] != 1 || out.shape[3] != 1)) return false;
  return post_ops_image_ok(p, c, k);
}

// "_gelu_mul" for post-ops +Gelu +Mul(..): kernel names spell out the epilogue.
std::string post_tag(const Kernel& k) {
  std::string r;
  for (const PostOp& po : k.post_ops) {
    std::string t = op_name(po.op);
    for (char& ch : t) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    r += "_" + t;
  }
  return r;
}

std::string mask_lanes(int64_t C) {
  if (C % 4 == 0) return "";
  return "  v = select((float4)(0.0f), v, (int4)(4 * cb) + (int4)(0, 1, 2, 3) < (int4)(" + S(C) + "));\n";
}

void generate_global(const Plan& p, const Call& c, Kernel& k, KernelDesc& d, int64_t& reads) {
  std::string& body = d.body;
  const Shape& in = p.buffers.at(size_t(c.inputs[0])).shape;
  const ImageGeom g = image_geom(in);
  const int64_t N = in[0], C = in[1], H = in[2], W = in[3];
  const bool is_max = k.op == OpKind::GlobalMaxPool;
  const int unroll = W % 4 == 0 ? 4 : 1;
  const std::string init = is_max ? "(float4)(-INFINITY)" : "(float4)(0.0f)";
  auto acc = [&](const std::string& a, const std::string& t) {
    return is_max ? a + " = fmax(" + a + ", " + t + ");" : a + " += " + t + ";";
  };
  body += "  const int cb = get_global_id(0), n = get_global_id(1);\n";
  body += "  if (cb >= " + S(g.c4) + " || n >= " + S(N) + ") return;\n";
  body += "  const int w = 0, h = 0;\n";
  for (int u = 0; u < 4; ++u) body += "  float4 s" + S(u) + " = " + init + ";\n";
  body += "  for (int ih = 0; ih < " + S(H) + "; ++ih) {\n";
  body += "    const int yy = n * " + S(H) + " + ih;\n";
  body += "    for (int iw = 0; iw < " + S(W) + "; iw += " + S(unroll) + ") {\n";
  for (int u = 0; u < unroll; ++u) {
    const std::string read = d.read_image("in0", "(int2)((iw + " + S(u) + ") * " + S(g.c4) + " + cb, yy)");
    body.append("      ").append(acc(std::string("s").append(S(u)), read)).append("\n");
  }
  body += "    }\n  }\n";
  if (is_max) {
    body += "  float4 v = fmax(fmax(s0, s1), fmax(s2, s3));\n";
  } else {
    body += "  float4 v = ((s0 + s1) + (s2 + s3)) * " + S(1) + ".0f / " + S(H * W) + ".0f;\n";
  }
  body += emit_post_ops_image(p, c, k, d);
  body += mask_lanes(C);
  body += "  " + d.write_image("out0", "(int2)(cb, n)", "v") + "\n";
  d.global = {g.c4, N, 0};
  reads = H * W;
  k.name = std::string(is_max ? "cl_global_maxpool" : "cl_global_avgpool") + "_img_c" + S(C) + "_" + S(H) + "x" + S(W);
}

void generate_window(const Plan& p, const Call& c, Kernel& k, KernelDesc& d, int64_t& reads) {
  std::string& body = d.body;
  const Shape& in = p.buffers.at(size_t(c.inputs[0])).shape;
  const Shape& out = p.buffers.at(size_t(c.outputs[0])).shape;
  const ImageGeom gi = image_geom(in), go = image_geom(out);
  const int64_t C = in[1], H = in[2], W = in[3];
  const auto kk = k.attrs.ints("kernel");
  const auto st = k.attrs.ints("strides", {1, 1});
  const auto pd = k.attrs.ints("pads", {0, 0, 0, 0});
  const auto dl = k.attrs.ints("dilations", {1, 1});
  const bool is_max = k.op == OpKind::MaxPool;
  const bool include_pad = k.attrs.i("count_include_pad", 0) != 0;
  body += texel_head(out);
  body += "  const int ih0 = h * " + S(st[0]) + " - " + S(pd[0]) + ", iw0 = w * " + S(st[1]) + " - " + S(pd[1]) + ";\n";
  body += std::string("  float4 acc = ") + (is_max ? "(float4)(-INFINITY)" : "(float4)(0.0f)") + ";\n";
  if (!is_max) body += "  int cnt = 0;\n";
  body += "  for (int kh = 0; kh < " + S(kk[0]) + "; ++kh) {\n";
  body += "    const int ih = ih0 + kh * " + S(dl[0]) + ";\n";
  body += "    const int vh = ih >= 0 && ih < " + S(H) + ";\n";
  body += "    const int yy = select(-1, n * " + S(H) + " + ih, vh);\n";
  if (!is_max && include_pad) body += "    const int ph = ih >= -" + S(pd[0]) + " && ih < " + S(H + pd[2]) + ";\n";
  body += "    for (int kw = 0; kw < " + S(kk[1]) + "; ++kw) {\n";
  body += "      const int iw = iw0 + kw * " + S(dl[1]) + ";\n";
  body += "      const int vw = iw >= 0 && iw < " + S(W) + ";\n";
  body += "      const float4 t = " + d.read_image("in0", "(int2)(select(-1, iw * " + S(gi.c4) + " + cb, vw), yy)") + ";\n";
  if (is_max) {
    body += "      acc = fmax(acc, select((float4)(-INFINITY), t, (int4)(-(vh & vw))));\n";
  } else {
    body += "      acc += t;\n";
    if (include_pad)
      body += "      cnt += ph & (iw >= -" + S(pd[1]) + " && iw < " + S(W + pd[3]) + ");\n";
    else
      body += "      cnt += vh & vw;\n";
  }
  body += "    }\n  }\n";
  body += is_max ? "  float4 v = acc;\n" : "  float4 v = acc / (float)max(cnt, 1);\n";
  body += emit_post_ops_image(p, c, k, d);
  body += mask_lanes(C);
  body += "  " + d.write_image("out0", "(int2)(x, y)", "v") + "\n";
  d.global = {go.width, go.height, 0};
  reads = kk[0] * kk[1];
  k.name = std::string(is_max ? "cl_maxpool" : "cl_avgpool") + S(kk[0]) + "x" + S(kk[1]) + "_s" + S(st[0]) +
           "_img_c" + S(C);
}

KernelDesc generate(const Plan& p, const Call& c, Kernel& k, const Options& o) {
  OPV_CHECK(supports(p, c, o), "pool_image: call '", c.label, "' is not supported");
  KernelDesc d = describe_call(p, c, "pool_image", "src/target/opencl/pool_image.cpp");
  int64_t reads = 0;
  if (is_global(k))
    generate_global(p, c, k, d, reads);
  else
    generate_window(p, c, k, d, reads);
  k.name += post_tag(k);
  reads += post_ops_image_reads(p, c, k);
  k.options = "-cl-mad-enable";
  k.attrs.set("cl_reads", reads);
  k.attrs.set("cl_gated", int64_t(0));
  d.entry = k.name;
  d.prelude = cl_prelude();
  return d;
}

}  // namespace

const Family& pool_image_family() {
  static const Family f{"pool_image", supports, generate, nullptr};
  return f;
}

}  // namespace opv::plan::cl
