// The contract between the OpenCL code generator (src/target/opencl, compile time) and the OpenCL
// backend (src/backend/opencl, run time). Everything a plan for target "opencl" means is written
// down here; the generator writes kernels as descriptions rendered by kernel_desc.h (the program
// forms below, the batched entry) and shares the prelude declared here; that code is linked into
// the compiler only. The backend needs none of it: it binds
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
//                      `__kernel void <entry>(<params>) { <entry>_body(<names>); }` (render() of
//                      kernel_desc.h); work-group local arrays are declared by each entry and
//                      passed to the body as pointers. Plan pass "batch" adds an entry that
//                      takes N argument groups and dispatches on get_global_id(2)
//                      (render_batched()). Kernel attr "cl_params" records the entry's
//                      parameter list (informational: no pass parses it).
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

// Common prelude: the sampler, GELU/sigmoid helpers, half load/store macros.
const std::string& cl_prelude();

}  // namespace opv::plan::cl
