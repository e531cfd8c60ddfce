// Plan passes: `bool pass(Plan&)` returning progress, one file each, validated after each change.
#pragma once
#include <string>
#include <vector>

#include "plan/plan.h"

namespace opv::plan {

// CPU targets: 4-D float activations between layout-agnostic ops get Layout::NHWC, with explicit
// Reorder calls where a consumer needs Linear (src/plan/layout_nhwc.cpp).
bool assign_nhwc_layout(Plan& p);

// ---- target opencl (src/plan/opencl/) ----
// "layout-image": 4-D float activations between calls that have image kernels become
// ImageRGBA (F16 storage), with Reorder calls at the edges (like assign_nhwc_layout).
bool assign_image_layout(Plan& p);
// "codegen": see plan/opencl/codegen.h (always runs).
bool cl_codegen(Plan& p);
// "input-pack": Concat/Cast/normalisation of uint8 model inputs feeding an image -> one kernel.
bool input_pack(Plan& p);
// "weight-pack": every static weight prepacked in the order its kernel reads it.
bool weight_pack(Plan& p);
// "fp16-math" (opt-in): kernels with an fp16-arithmetic variant use it where cl_khr_fp16 exists.
bool fp16_math(Plan& p);

// ---- generic plan passes (src/plan/) ----
// "dedupe": calls with the same kernel and identical inputs (same buffers, or constants with
// byte-identical contents, dtype, shape and layout) are removed and their readers rewired to the
// first call's outputs, to a fixed point (whole duplicated chains disappear). A duplicate that
// writes a plan Output is kept.
bool dedupe(Plan& p);
// "level-schedule": calls ordered by (dependency level, kernel) without breaking a dependency.
bool level_schedule(Plan& p);
// "batch": up to kMaxBatch independent calls of the same kernel and launch geometry, adjacent
// after level scheduling, merged into one launch (cl_batch_entry); GPU kernels only.
// Plan meta "cl_batch_max" overrides the default (compile --cl-batch), up to kMaxBatchLimit.
constexpr int kMaxBatch = 4;
constexpr int kMaxBatchLimit = 64;
bool batch_calls(Plan& p);
// "replay": meta cl_replay=1 (enqueue everything, one wait per inference; recorded command
// buffers where the device has them).
bool replay(Plan& p);
// Drops buffers no call uses (except Inputs/Outputs) and kernels no call uses, renumbers ids,
// and rebuilds the weights blob from the constants still used. Returns true when it removed any.
bool compact(Plan& p);

struct PlanPassInfo {
  const char* name;
  bool (*fn)(Plan&);
  const char* doc;
  bool opt_in = false;  // runs only when asked for (compile --passes, opt --pass), never by default
};
// Plan passes a target runs, in order (memory planning always runs last and is not listed).
std::vector<PlanPassInfo> plan_passes_for(const std::string& target);

// Liveness -> arena offsets for Intermediate buffers (greedy best-fit by size, offsets aligned
// to kAlign); sets arena_bytes. Returns true when it assigned anything.
bool plan_memory(Plan& p);
// Sum of the sizes of all Intermediate buffers (what a plan without reuse would need).
int64_t unplanned_bytes(const Plan& p);

}  // namespace opv::plan
