// Plan passes of target "opencl" (src/target/opencl/), in the order plan_passes_for("opencl")
// runs them (plan/passes/pass_table.cpp). Compile time only: linked into opv_compiler, never
// into the runtime. The plan they produce follows target/opencl/cl_abi.h.
#pragma once
#include "plan/plan.h"

namespace opv::plan {

// "layout-image": 4-D float activations between calls that have image kernels become
// ImageRGBA (F16 storage), with Reorder calls at the edges (like assign_nhwc_layout).
bool assign_image_layout(Plan& p);
// "codegen": see target/opencl/codegen.h (always runs).
bool cl_codegen(Plan& p);
// "input-pack": Concat/Cast/normalisation of uint8 model inputs feeding an image -> one kernel.
bool input_pack(Plan& p);
// "weight-pack": every static weight prepacked in the order its kernel reads it.
bool weight_pack(Plan& p);
// "fp16-math" (opt-in): kernels with an fp16-arithmetic variant use it where cl_khr_fp16 exists.
bool fp16_math(Plan& p);

// "batch": up to kMaxBatch independent calls of the same kernel and launch geometry, adjacent
// after level scheduling, merged into one launch (render_batched of kernel_desc.h); GPU kernels only.
// Plan meta "cl_batch_max" overrides the default (compile --cl-batch), up to kMaxBatchLimit.
constexpr int kMaxBatch = 4;
constexpr int kMaxBatchLimit = 64;
bool batch_calls(Plan& p);
// "replay": meta cl_replay=1 (enqueue everything, one wait per inference; recorded command
// buffers where the device has them).
bool replay(Plan& p);

}  // namespace opv::plan
