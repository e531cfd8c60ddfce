// Plan passes of target "opencl" (src/target/opencl/), in the order plan_passes_for("opencl")
// runs them (plan/passes/pass_table.cpp). Compile time only: linked into opv_compiler, never
// into the runtime. The plan they produce follows target/opencl/cl_abi.h.
#pragma once
#include "plan/passes/passes.h"
#include "plan/plan.h"

namespace opv::plan {

// "layout-image": 4-D float activations between calls that have image kernels become
// ImageRGBA (F16 storage), with Reorder calls at the edges (like assign_nhwc_layout).
bool assign_image_layout(Plan& p, const PassCtx& ctx);
// "codegen": see target/opencl/codegen.h (always runs).
bool cl_codegen(Plan& p, const PassCtx& ctx);
// "input-pack": Concat/Cast/normalisation of uint8 model inputs feeding an image -> one kernel.
bool input_pack(Plan& p, const PassCtx& ctx);
// "weight-pack": every static weight prepacked in the order its kernel reads it.
bool weight_pack(Plan& p, const PassCtx& ctx);
// "fp16-math" (opt-in): kernels with an fp16-arithmetic variant use it where cl_khr_fp16 exists.
bool fp16_math(Plan& p, const PassCtx& ctx);

// "batch": up to ctx.cl.batch_max (default 4) independent calls of the same kernel and launch geometry, adjacent
// after level scheduling, merged into one launch (render_batched of kernel_desc.h); GPU kernels only.
// compile --cl-batch sets it; clamped to 1..kMaxBatchLimit.
bool batch_calls(Plan& p, const PassCtx& ctx);
// "replay": meta cl_replay=1 (enqueue everything, one wait per inference; recorded command
// buffers where the device has them).
bool replay(Plan& p, const PassCtx& ctx);

}  // namespace opv::plan
