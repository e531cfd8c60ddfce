// Live ranges of plan buffers in call order (shared by memory planning and the validator).
#pragma once
#include <vector>

#include "plan/plan.h"

namespace opv::plan {

struct LiveRange {
  int first = -1;  // index of the call that writes the buffer (-1: never written)
  int last = -1;   // index of the last call that reads or writes it
};
std::vector<LiveRange> live_ranges(const Plan& p);

}  // namespace opv::plan
