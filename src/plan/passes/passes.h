// Plan passes: `bool pass(Plan&)` returning progress, one file each, validated after each change.
// Compile time only (opv_compiler): the runtime (opv_runtime) links src/plan/*.cpp, not these.
// The passes of a target live with the target (target/opencl/passes.h); the table below lists
// them per target.
#pragma once
#include <string>
#include <vector>

#include "plan/plan.h"

namespace opv::plan {

// CPU targets: 4-D float activations between layout-agnostic ops get Layout::NHWC, with explicit
// Reorder calls where a consumer needs Linear (src/plan/passes/layout_nhwc.cpp).
bool assign_nhwc_layout(Plan& p);

// ---- generic plan passes (src/plan/passes/) ----
// "dedupe": calls with the same kernel and identical inputs (same buffers, or constants with
// byte-identical contents, dtype, shape and layout) are removed and their readers rewired to the
// first call's outputs, to a fixed point (whole duplicated chains disappear). A duplicate that
// writes a plan Output is kept.
bool dedupe(Plan& p);
// "level-schedule": calls ordered by (dependency level, kernel) without breaking a dependency.
bool level_schedule(Plan& p);
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
