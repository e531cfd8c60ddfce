// Plan passes of target "cuda" (src/target/cuda/), in the order plan_passes_for("cuda") runs
// them (plan/passes/pass_table.cpp). Compile time only. The plan they produce follows
// target/cuda/cuda_abi.h.
#pragma once
#include "target/cuda/codegen.h"
#include "target/cuda/layout.h"

namespace opv::plan {

// "cuda-layout" (always runs): NHWC activations where compile --cuda-layout chooses them
// (target/cuda/layout.h).
inline bool cuda_layout(Plan& p, const PassCtx& ctx) { return cuda::assign_layout(p, ctx); }
// "cuda-codegen" (always runs): a CUDA C++ kernel per call (target/cuda/codegen.h).
inline bool cuda_codegen(Plan& p, const PassCtx& ctx) { return cuda::codegen(p, ctx); }
// "nvrtc" (always runs, last): the kernels' CUDA C++ compiled to PTX ahead of time.
inline bool cuda_nvrtc(Plan& p, const PassCtx& ctx) { return cuda::nvrtc_compile(p, ctx); }

}  // namespace opv::plan
