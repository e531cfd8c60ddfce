/* Image storage in buffers (plan meta "cl_image_storage" = "buffer"; compile --cl-images buffer):
 * every ImageRGBA buffer keeps its texel layout (plan/image_geometry.h: x = w * C4 + c / 4,
 * y = n * H + h, RGBA = 4 channels) but lives in a plain global buffer of width x height texels, row-major, so
 * that GPUs whose driver makes image -> image kernel chains expensive run the same kernels on
 * buffers (measured on an H200 through NVIDIA OpenCL, bench/cl_launch_floor.cpp: 7.7-8.2 us per
 * launch for a chain of image read+write kernels, 3.8-4.0 us for the same chain on half4 buffers;
 * BENCHMARKS.md). Applied by the codegen driver to each generated kernel, whatever its family:
 *   1. Parameters: "write_only image2d_t outI" -> "__global half* outI" (float* for F32 images),
 *      "read_only image2d_t inJ" -> "__global const half* inJ", in the source and in
 *      attr "cl_params" (so plan pass batch sees buffer parameters).
 *   2. Accesses: read_imagef / read_imageh / write_imagef calls become the macros OPV_IMG_RD /
 *      OPV_IMG_RDH / OPV_IMG_WR, which call the parameter's load/store helper with its
 *      compile-time geometry (#define inJ_W / inJ_H / inJ_RD / inJ_WR before the body).
 *   3. Border semantics as with the zero-border sampler: a read outside [0,W) x [0,H) gives 0;
 *      a write outside is dropped (as image writes out of range are); stores round to nearest.
 * Invariant: the rewritten kernel computes, texel for texel, what the image kernel computes
 * (up to the rounding of fp16 stores, which is to nearest here and driver-defined on images).
 */
#include <cctype>
#include <string>

#include "core/error.h"
#include "target/opencl/codegen.h"

namespace opv::plan::cl {

namespace {

const char* kHelpers =
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

bool ident_char(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; }

// Replaces every `from` in s that is not followed by an identifier character.
void replace_token(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at)) {
    const size_t end = at + from.size();
    if (end < s.size() && ident_char(s[end])) {
      at = end;
      continue;
    }
    s.replace(at, from.size(), to);
    at += to.size();
  }
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

}  // namespace

bool images_in_buffers(const Plan& p) { return p.meta.s("cl_image_storage", "image") == "buffer"; }

void store_images_in_buffers(const Plan& p, const Call& c, Kernel& k) {
  if (k.source.empty()) return;
  std::string params = k.attrs.s("cl_params");
  std::string defines;
  auto param = [&](int buf, const std::string& name, bool out) {
    const Buffer& b = p.buffers.at(size_t(buf));
    if (b.layout != Layout::ImageRGBA) return;
    OPV_CHECK(b.shape.size() == 4, "image storage: image buffer '", b.name, "' is not 4-D");
    OPV_CHECK(b.dtype == DType::F16 || b.dtype == DType::F32, "image storage: image buffer '", b.name,
              "' holds ", dtype_name(b.dtype));
    const ImageGeom g = image_geom(b.shape);
    const bool half = b.dtype == DType::F16;
    const std::string from = std::string(out ? "write_only" : "read_only") + " image2d_t " + name;
    const std::string to = std::string("__global ") + (out ? "" : "const ") + (half ? "half* " : "float* ") + name;
    replace_token(k.source, from, to);
    replace_token(params, from, to);
    defines += "#define " + name + "_W " + std::to_string(g.width) + "\n#define " + name + "_H " + std::to_string(g.height) +
               "\n#define " + name + "_RD opv_img_rd_" + (half ? "h" : "f") + "\n#define " + name + "_WR opv_img_wr_" +
               (half ? "h" : "f") + "\n";
  };
  for (size_t i = 0; i < c.outputs.size(); ++i) param(c.outputs[i], "out" + std::to_string(i), true);
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (c.inputs[j] >= 0) param(c.inputs[j], "in" + std::to_string(j), false);
  if (defines.empty()) return;
  replace_all(k.source, "read_imagef(", "OPV_IMG_RD(");
  replace_all(k.source, "read_imageh(", "OPV_IMG_RDH(");
  replace_all(k.source, "write_imagef(", "OPV_IMG_WR(");
  OPV_CHECK(k.source.find("image2d_t") == std::string::npos && k.source.find("write_imageh(") == std::string::npos,
            "image storage: kernel '", k.name, "' keeps an image access the buffer form does not cover");
  // Helpers and geometry go before the body function (after the prelude and its pragmas).
  const std::string body = "void " + k.entry + "_body(";
  size_t at = k.source.find(body);
  if (at == std::string::npos) at = k.source.find("__kernel");
  OPV_CHECK(at != std::string::npos, "image storage: kernel '", k.name, "' has no entry");
  k.source.insert(at, std::string("// image storage: buffers (src/target/opencl/image_storage.cpp)\n") + kHelpers + defines);
  k.attrs.set("cl_params", params);
  k.attrs.set("cl_image_storage", std::string("buffer"));
}

}  // namespace opv::plan::cl
