// Live ranges of plan buffers (liveness.h): runtime code, since the plan validator needs them;
// memory planning (plan/passes/memory_plan.cpp) uses the same function.
#include "plan/liveness.h"

#include <algorithm>

namespace opv::plan {

std::vector<LiveRange> live_ranges(const Plan& p) {
  std::vector<LiveRange> r(p.buffers.size());
  for (int c = 0; c < int(p.calls.size()); ++c) {
    for (int b : p.calls[c].inputs)
      if (b >= 0) r[b].last = std::max(r[b].last, c);
    for (int b : p.calls[c].outputs) {
      if (r[b].first < 0) r[b].first = c;
      r[b].last = std::max(r[b].last, c);
    }
  }
  return r;
}

}  // namespace opv::plan
