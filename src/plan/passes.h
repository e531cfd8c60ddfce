// Plan passes: `bool pass(Plan&)` returning progress, one file each, validated after each change.
#pragma once
#include <string>
#include <vector>

#include "plan/plan.h"

namespace opv::plan {

// CPU targets: 4-D float activations between layout-agnostic ops get Layout::NHWC, with explicit
// Reorder calls where a consumer needs Linear (src/plan/layout_nhwc.cpp).
bool assign_nhwc_layout(Plan& p);

struct PlanPassInfo {
  const char* name;
  bool (*fn)(Plan&);
  const char* doc;
};
// Plan passes a target runs, in order (memory planning always runs last and is not listed).
std::vector<PlanPassInfo> plan_passes_for(const std::string& target);

// Liveness -> arena offsets for Intermediate buffers (greedy best-fit by size, offsets aligned
// to kAlign); sets arena_bytes. Returns true when it assigned anything.
bool plan_memory(Plan& p);
// Sum of the sizes of all Intermediate buffers (what a plan without reuse would need).
int64_t unplanned_bytes(const Plan& p);

}  // namespace opv::plan
