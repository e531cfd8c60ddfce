// A generated OpenCL kernel as a structured description (issue 14, deliverable 2): a family
// fills a KernelDesc — parameters (name, storage, access, dtype), work-group locals, prelude and
// body pieces, launch geometry — and render() turns it into source once, at the end. Everything
// that used to rewrite or re-parse generated text reads the description instead:
//   * image-in-buffer storage (plan meta "cl_image_storage" = "buffer") is a parameter's storage
//     (ParamStorage::ImageInBuffer): its declaration, its image accesses (read_image/write_image
//     below) and the helpers and geometry #defines render() emits follow from it;
//   * the ABI form of cl_abi.h (`<entry>_body` plus a one-group `__kernel <entry>`), the batched
//     entry of plan pass "batch" (render_batched) and the kernel-scope declaration of locals in
//     both are the renderer's;
//   * every rendered kernel opens with a "generated" line naming its family and generator file.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "plan/image_geometry.h"
#include "plan/plan.h"

namespace opv::plan::cl {

// Where a kernel parameter's data lives and hence how it is declared and accessed.
enum class ParamStorage {
  Image2D,        // an ImageRGBA buffer in an image2d_t (read_imagef / write_imagef)
  ImageInBuffer,  // an ImageRGBA buffer whose texels live in a __global half/float buffer
                  // (OPV_IMG_RD / OPV_IMG_WR with the parameter's compiled-in geometry)
  Global,         // any other layout: a __global T* of the buffer's element type
};
enum class ParamAccess { Read, Write };

struct KernelParam {
  std::string name;  // "out0", "in2": the call's argument slot (cl_abi.h)
  ParamStorage storage = ParamStorage::Global;
  ParamAccess access = ParamAccess::Read;
  DType dtype = DType::F32;
  ImageGeom geom{};  // ImageInBuffer only: the texel grid (plan/image_geometry.h)

  // The declaration in a parameter list, e.g. "read_only image2d_t in0", "__global const half* in0".
  std::string decl() const;
};

// A work-group local array, declared at kernel scope (OpenCL C allows __local variables only
// there) and passed to the body as a pointer.
struct KernelLocal {
  std::string type;  // element type, e.g. "float4"
  std::string name;
  int64_t count = 0;
};

struct KernelDesc {
  std::string family;     // the family's name, e.g. "conv_image"
  std::string generator;  // the file that wrote it, e.g. "src/target/opencl/conv_image.cpp"
  std::string entry;      // the __kernel function (the body is <entry>_body)
  std::string prelude;    // helpers and #defines before the body (usually cl_prelude() + ...)
  std::vector<KernelParam> params;
  std::vector<KernelLocal> locals;
  std::string body;  // statements of <entry>_body
  std::array<int64_t, 3> global{0, 0, 0};
  std::array<int64_t, 3> local{0, 0, 0};

  // The parameter named `name` (throws when there is none).
  const KernelParam& param(const std::string& name) const;
  // "decl, decl, ...": the entry's parameter list (kept in kernel attr "cl_params").
  std::string param_list() const;
  // A float4 read of image parameter `name` at int2 expression `coord` for its storage.
  std::string read_image(const std::string& name, const std::string& coord) const;
  // The statement writing float4 `value` to image parameter `name` at `coord` (with ';').
  std::string write_image(const std::string& name, const std::string& coord, const std::string& value) const;
};

// The function (or macro) an image access of a parameter with storage `s` calls, taking the same
// arguments as read_imagef(img, sampler, coord) / read_imageh(...) / write_imagef(img, coord, v).
std::string image_read_fn(ParamStorage s);
std::string image_read_half_fn(ParamStorage s);
std::string image_write_fn(ParamStorage s);

// The parameters of call `c` in ABI order (outputs, then present inputs; names out<i>, in<j> keep
// the slot index), with the storage the plan gives them: ImageRGBA buffers are Image2D, or
// ImageInBuffer when images_in_buffers(p).
std::vector<KernelParam> call_params(const Plan& p, const Call& c);
// A description with family, generator and call_params(p, c) filled in.
KernelDesc describe_call(const Plan& p, const Call& c, const std::string& family, const std::string& generator);

// The complete program: the "generated" header line, the prelude, image-in-buffer helpers and
// geometry when a parameter needs them, `void <entry>_body(<params>, <locals as pointers>)` and
// `__kernel void <entry>(<params>)`, which declares the locals and calls the body.
std::string render(const KernelDesc& d);

// The batching form of cl_abi.h for n >= 2 argument groups: render(d) followed by
// `__kernel void <entry>_x<n>(<params>)` that declares the locals and runs group
// get_global_id(2) through <entry>_body. Its parameters are the first `n_outputs` parameters of
// groups 0..n-1, then the remaining ones of groups 0..n-1, each named <name>_<group> (the order
// in which the backend binds a batched call's outputs, then its inputs).
struct BatchedKernel {
  std::string source;
  std::string entry;   // <entry>_x<n>
  std::string params;  // the batched entry's parameter list (kernel attr "cl_params")
};
BatchedKernel render_batched(const KernelDesc& d, int n, int n_outputs);

}  // namespace opv::plan::cl
