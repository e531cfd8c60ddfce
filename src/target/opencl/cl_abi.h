// The contract between the OpenCL code generator (src/target/opencl, compile time) and the OpenCL
// backend (src/backend/opencl, run time). Everything a plan for target "opencl" means is written
// down here; the code declared below (parameter parsing, cl_wrap, the batched entry, the prelude)
// is the generator's and is linked into the compiler only. The backend needs none of it: it binds
// arguments by the rule below and takes the image geometry from plan/image_geometry.h.
//
// Buffers
//   Layout::ImageRGBA  a 4-D logical [N,C,H,W] tensor in one image2d, CL_RGBA, channel type
//                      CL_HALF_FLOAT for DType::F16, CL_FLOAT for DType::F32. Texel
//                      (x, y) = (w*C4 + c/4, n*H + h), C4 = ceil(C/4), rgba = channels c%4 = 0..3
//                      (computed by plan/image_geometry.h only); padded channels hold zeros.
//                      Kernels read with
//                      CLK_NORMALIZED_COORDS_FALSE|CLK_ADDRESS_CLAMP|CLK_FILTER_NEAREST: any w
//                      outside [0,W) lands outside [0,width) and reads zero, as does h outside
//                      [0,H) when N == 1 (N > 1 kernels force bad rows to -1 with select()).
//                      Images are never Inputs/Outputs/Constants. Two ImageRGBA buffers with the
//                      same arena offset and geometry are never live together (memory planning),
//                      so the backend may give them one cl_mem.
//   Linear / NHWC      a cl_mem buffer; element type from dtype (F16 = `half` storage read with
//                      vload_half*, so no cl_khr_fp16 is needed).
//   PackedWeight       a Constant cl_mem buffer whose order is defined by the reading kernel
//                      (kernel attrs say which packing: "cl_pack").
// Kernels
//   Kernel.source      complete OpenCL C program; empty = host fallback: the backend runs the
//                      reference kernel (ref::run with op/attrs/post_ops) on the host, and every
//                      buffer the call touches must then be Linear.
//   Kernel.entry       the __kernel function; Kernel.options the build options.
//   Arguments          the call's outputs, then its inputs (absent inputs, id -1, are skipped),
//                      one argument each: image2d_t for ImageRGBA (write_only for outputs,
//                      read_only for inputs), a __global pointer for every other layout. No
//                      scalar arguments: shapes are compiled in.
//   Launch             Call.global: trailing zeros = fewer dimensions; Call.local all zero = NULL
//                      (the runtime picks). Bodies use only get_global_id(0..1); dimension 2 is
//                      reserved for batching (plan pass "batch").
//   Batching form      every generated kernel is `void <entry>_body(<params>) {...}` plus
//                      `__kernel void <entry>(<params>) { <entry>_body(<names>); }`; Kernel attrs
//                      "cl_params" hold <params> verbatim, so a pass can emit an entry that takes
//                      N argument groups and dispatches on get_global_id(2) (see cl_wrap()).
//   Plan meta          "cl_replay" = 1: enqueue the whole plan without host synchronisation and
//                      wait once per inference (plan pass "replay"); absent or 0: the backend
//                      waits after every call (the unoptimised baseline the report measures).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/shape.h"
#include "plan/image_geometry.h"  // ImageGeom, image_geom, image_bytes, fits_image
#include "plan/plan.h"

namespace opv::plan::cl {

// One parameter of a kernel's entry, split into its declaration and its name.
struct Param {
  std::string decl;  // e.g. "__global const float* w"
  std::string name;  // e.g. "w"
};
std::vector<Param> parse_params(const std::string& params);

// Emits `void <entry>_body(<params>) { <body> }` and the one-group entry that calls it.
// `prelude` (helpers, #defines) goes first. The result is a complete program.
// `locals` (optional): work-group local arrays, "__local float red[256]; __local float4 t[64]";
// OpenCL C allows them only at kernel scope, so every entry (also batched ones) declares them and
// passes them to the body as pointers ("__local float* red"). The body may use barrier(); the
// batch form keeps that legal since all work-items of a work-group share get_global_id(2).
std::string cl_wrap(const std::string& prelude, const std::string& entry, const std::string& params,
                    const std::string& body, const std::string& locals = "");
// A program whose entry `<entry>_x<n>` takes n argument groups (names suffixed _0.._n-1) and runs
// group get_global_id(2). `source` must have come from cl_wrap() with the same entry/params.
std::string cl_batch_entry(const std::string& source, const std::string& entry, const std::string& params,
                           int n, std::string* batched_entry);
// The same with the parameter order a batched Call needs (its arguments are still "outputs, then
// inputs"): the first `n_outputs` parameters (the outputs) of groups 0..n-1, then the remaining
// parameters (the inputs) of groups 0..n-1. The overload above is n_outputs = 0 (group-major).
// Plan pass "batch" uses this form: batched Call.outputs = outputs of group 0, 1, ..; Call.inputs
// = inputs of group 0, 1, .. (absent inputs stay -1 and are skipped as usual).
std::string cl_batch_entry(const std::string& source, const std::string& entry, const std::string& params,
                           int n, int n_outputs, std::string* batched_entry);
// The parameter list of that batched entry (kept in the batched kernel's "cl_params").
std::string cl_batch_params(const std::string& params, int n, int n_outputs);

// Common prelude: the sampler, GELU/sigmoid helpers, half load/store macros.
const std::string& cl_prelude();

}  // namespace opv::plan::cl
