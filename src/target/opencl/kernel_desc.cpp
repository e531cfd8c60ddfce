/* Kernel descriptions and their one renderer (kernel_desc.h).
 *   1. call_params: the call's ABI parameters (cl_abi.h); an ImageRGBA buffer is an Image2D
 *      parameter, or ImageInBuffer when the plan stores images in buffers (plan meta
 *      "cl_image_storage" = "buffer", compile --cl-images buffer).
 *   2. Families build their bodies with KernelDesc::read_image / write_image, which emit the access
 *      for the parameter's storage: read_imagef/write_imagef on images, the OPV_IMG_RD/OPV_IMG_WR
 *      macros on image-in-buffer parameters.
 *   3. render: header line, prelude, (image-in-buffer helpers and per-parameter geometry), the
 *      body function and the one-group entry that declares the locals and calls it.
 *   4. render_batched: render() plus an entry taking n argument groups (names suffixed _<g>,
 *      outputs of every group first) that declares the locals and switches on get_global_id(2).
 * Image-in-buffer storage: the texel layout of plan/image_geometry.h (x = w * C4 + c / 4,
 * y = n * H + h, RGBA = 4 channels) in a plain global buffer of width x height texels, row-major,
 * so that GPUs whose driver makes image -> image kernel chains expensive run the same kernels on
 * buffers (measured on an H200 through NVIDIA OpenCL, bench/cl_launch_floor.cpp: 7.7-8.2 us per
 * launch for a chain of image read+write kernels, 3.8-4.0 us for the same chain on half4 buffers;
 * BENCHMARKS.md). Border semantics as with the zero-border sampler: a read outside [0,W) x [0,H)
 * gives 0; a write outside is dropped (as image writes out of range are); stores round to nearest.
 * Invariants: the same family with either storage computes, texel for texel, the same values (up
 * to the rounding of fp16 stores, which is to nearest in buffers and driver-defined on images);
 * a batched group calls the same <entry>_body as the one-group entry, so it computes exactly what
 * the single call computed. Nothing here reads generated text back.
 */
#include "target/opencl/kernel_desc.h"

#include "core/error.h"
#include "target/opencl/codegen.h"

namespace opv::plan::cl {

namespace {

const char* kImageInBufferHelpers =
    "float4 opv_img_rd_h(__global const half* p, int w, int h, int2 c) {\n"
    "  return ((uint)c.x < (uint)w && (uint)c.y < (uint)h) ? vload_half4(c.y * w + c.x, p) : (float4)(0.0f);\n"
    "}\n"
    "void opv_img_wr_h(__global half* p, int w, int h, int2 c, float4 v) {\n"
    "  if ((uint)c.x < (uint)w && (uint)c.y < (uint)h) vstore_half4_rte(v, c.y * w + c.x, p);\n"
    "}\n"
    "float4 opv_img_rd_f(__global const float* p, int w, int h, int2 c) {\n"
    "  return ((uint)c.x < (uint)w && (uint)c.y < (uint)h) ? vload4(c.y * w + c.x, p) : (float4)(0.0f);\n"
    "}\n"
    "void opv_img_wr_f(__global float* p, int w, int h, int2 c, float4 v) {\n"
    "  if ((uint)c.x < (uint)w && (uint)c.y < (uint)h) vstore4(v, c.y * w + c.x, p);\n"
    "}\n"
    "#define OPV_IMG_RD(img, smp, c) img##_RD(img, img##_W, img##_H, c)\n"
    "#define OPV_IMG_RDH(img, smp, c) convert_half4(OPV_IMG_RD(img, smp, c))\n"
    "#define OPV_IMG_WR(img, c, v) img##_WR(img, img##_W, img##_H, c, v)\n";

std::string local_decl(const KernelLocal& l) {
  return "__local " + l.type + " " + l.name + "[" + std::to_string(l.count) + "]";
}

// Kernel-scope declarations of the locals, one line each.
std::string local_decls(const KernelDesc& d) {
  std::string r;
  for (const KernelLocal& l : d.locals) r += "  " + local_decl(l) + ";\n";
  return r;
}

// "_<g>" (built by append: GCC 12 warns falsely about `"_" + std::to_string(g)`).
std::string group_suffix(int g) {
  std::string s(1, '_');
  s += std::to_string(g);
  return s;
}

KernelParam call_param(const Plan& p, int buf, const std::string& name, ParamAccess access) {
  const Buffer& b = p.buffers.at(size_t(buf));
  KernelParam kp{name, ParamStorage::Global, access, b.dtype, {}};
  if (b.layout != Layout::ImageRGBA) return kp;
  if (!images_in_buffers(p)) {
    kp.storage = ParamStorage::Image2D;
    return kp;
  }
  OPV_CHECK(b.shape.size() == 4, "image storage: image buffer '", b.name, "' is not 4-D");
  OPV_CHECK(b.dtype == DType::F16 || b.dtype == DType::F32, "image storage: image buffer '", b.name, "' holds ",
            dtype_name(b.dtype));
  kp.storage = ParamStorage::ImageInBuffer;
  kp.geom = image_geom(b.shape);
  return kp;
}

}  // namespace

bool images_in_buffers(const Plan& p) { return p.meta.s("cl_image_storage", "image") == "buffer"; }

std::string KernelParam::decl() const {
  const bool out = access == ParamAccess::Write;
  switch (storage) {
    case ParamStorage::Image2D: return std::string(out ? "write_only" : "read_only") + " image2d_t " + name;
    case ParamStorage::ImageInBuffer:
      return std::string("__global ") + (out ? "" : "const ") + (dtype == DType::F16 ? "half* " : "float* ") + name;
    case ParamStorage::Global: return std::string("__global ") + (out ? "" : "const ") + cl_type(dtype) + "* " + name;
  }
  fail("unreachable");
}

const KernelParam& KernelDesc::param(const std::string& name) const {
  for (const KernelParam& kp : params)
    if (kp.name == name) return kp;
  fail("kernel '", entry, "' has no parameter '", name, "'");
}

std::string KernelDesc::param_list() const {
  std::string r;
  for (const KernelParam& kp : params) r += (r.empty() ? "" : ", ") + kp.decl();
  return r;
}

std::string image_read_fn(ParamStorage s) {
  OPV_CHECK(s != ParamStorage::Global, "image read of a parameter that is not an image");
  return s == ParamStorage::Image2D ? "read_imagef" : "OPV_IMG_RD";
}
std::string image_read_half_fn(ParamStorage s) {
  OPV_CHECK(s != ParamStorage::Global, "image read of a parameter that is not an image");
  return s == ParamStorage::Image2D ? "read_imageh" : "OPV_IMG_RDH";
}
std::string image_write_fn(ParamStorage s) {
  OPV_CHECK(s != ParamStorage::Global, "image write of a parameter that is not an image");
  return s == ParamStorage::Image2D ? "write_imagef" : "OPV_IMG_WR";
}

std::string KernelDesc::read_image(const std::string& name, const std::string& coord) const {
  const KernelParam& kp = param(name);
  OPV_CHECK(kp.access == ParamAccess::Read, "kernel '", entry, "': image read of output parameter '", name, "'");
  return image_read_fn(kp.storage) + "(" + name + ", opv_smp, " + coord + ")";
}

std::string KernelDesc::write_image(const std::string& name, const std::string& coord, const std::string& value) const {
  const KernelParam& kp = param(name);
  OPV_CHECK(kp.access == ParamAccess::Write, "kernel '", entry, "': image write of input parameter '", name, "'");
  return image_write_fn(kp.storage) + "(" + name + ", " + coord + ", " + value + ");";
}

std::vector<KernelParam> call_params(const Plan& p, const Call& c) {
  std::vector<KernelParam> r;
  for (size_t i = 0; i < c.outputs.size(); ++i)
    r.push_back(call_param(p, c.outputs[i], "out" + std::to_string(i), ParamAccess::Write));
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (c.inputs[j] >= 0) r.push_back(call_param(p, c.inputs[j], "in" + std::to_string(j), ParamAccess::Read));
  return r;
}

KernelDesc describe_call(const Plan& p, const Call& c, const std::string& family, const std::string& generator) {
  KernelDesc d;
  d.family = family;
  d.generator = generator;
  d.params = call_params(p, c);
  return d;
}

std::string render(const KernelDesc& d) {
  OPV_CHECK(!d.entry.empty(), "render: kernel of family '", d.family, "' has no entry name");
  std::string r = "// generated by opvision " + d.generator + " (family " + d.family + ") -- do not edit\n";
  r += d.prelude;
  if (!r.empty() && r.back() != '\n') r += '\n';
  std::string defines;
  for (const KernelParam& kp : d.params) {
    if (kp.storage != ParamStorage::ImageInBuffer) continue;
    const std::string hf = kp.dtype == DType::F16 ? "h" : "f";
    defines += "#define " + kp.name + "_W " + std::to_string(kp.geom.width) + "\n#define " + kp.name + "_H " +
               std::to_string(kp.geom.height) + "\n#define " + kp.name + "_RD opv_img_rd_" + hf + "\n#define " +
               kp.name + "_WR opv_img_wr_" + hf + "\n";
  }
  if (!defines.empty())
    r += std::string("// image storage: buffers (src/target/opencl/kernel_desc.cpp)\n") + kImageInBufferHelpers + defines;
  const std::string params = d.param_list();
  std::string body_params = params, args;
  for (const KernelParam& kp : d.params) args += (args.empty() ? "" : ", ") + kp.name;
  for (const KernelLocal& l : d.locals) {
    body_params += (body_params.empty() ? "" : ", ") + ("__local " + l.type + "* " + l.name);
    args += (args.empty() ? "" : ", ") + l.name;
  }
  r += "void " + d.entry + "_body(" + body_params + ") {\n" + d.body;
  if (!d.body.empty() && d.body.back() != '\n') r += '\n';
  r += "}\n";
  r += "__kernel void " + d.entry + "(" + params + ") {\n" + local_decls(d) + "  " + d.entry + "_body(" + args + ");\n}\n";
  return r;
}

BatchedKernel render_batched(const KernelDesc& d, int n, int n_outputs) {
  OPV_CHECK(n >= 2, "render_batched: a batch needs at least 2 groups, got ", n);
  OPV_CHECK(n_outputs >= 0 && size_t(n_outputs) <= d.params.size(), "render_batched: ", n_outputs,
            " outputs but kernel '", d.entry, "' has ", d.params.size(), " parameters");
  BatchedKernel b;
  b.entry = d.entry + "_x" + std::to_string(n);
  // The first n_outputs parameters of every group, then the rest of every group.
  auto add_range = [&](size_t from, size_t to) {
    for (int g = 0; g < n; ++g)
      for (size_t i = from; i < to; ++i) {
        KernelParam kp = d.params[i];
        kp.name += group_suffix(g);
        b.params += (b.params.empty() ? "" : ", ") + kp.decl();
      }
  };
  add_range(0, size_t(n_outputs));
  add_range(size_t(n_outputs), d.params.size());
  b.source = render(d);
  b.source += "__kernel void " + b.entry + "(" + b.params + ") {\n" + local_decls(d) + "  switch (get_global_id(2)) {\n";
  for (int g = 0; g < n; ++g) {
    std::string args;
    for (const KernelParam& kp : d.params) args += (args.empty() ? "" : ", ") + kp.name + group_suffix(g);
    for (const KernelLocal& l : d.locals) args += (args.empty() ? "" : ", ") + l.name;
    b.source += "    case " + std::to_string(g) + ": " + d.entry + "_body(" + args + "); break;\n";
  }
  b.source += "  }\n}\n";
  return b;
}

}  // namespace opv::plan::cl
