// Plan passes: `bool pass(Plan&)` returning progress, one file each, validated after each change.
#pragma once
#include <string>
#include <vector>

#include "plan/plan.h"

namespace opv::plan {

// Liveness -> arena offsets for Intermediate buffers (greedy best-fit by size, offsets aligned
// to kAlign); sets arena_bytes. Returns true when it assigned anything.
bool plan_memory(Plan& p);
// Sum of the sizes of all Intermediate buffers (what a plan without reuse would need).
int64_t unplanned_bytes(const Plan& p);

}  // namespace opv::plan
