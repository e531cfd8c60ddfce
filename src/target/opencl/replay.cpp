/* Plan pass "replay": marks the plan for replay execution (cl_abi.h, "Plan meta").
 *   1. Sets meta "cl_replay" = 1: the backend enqueues every call without host synchronisation
 *      between kernels and waits once per inference (recorded command buffers where the device
 *      has them).
 * Invariant: calls, buffers and kernels are untouched; in-order queues keep every dependency.
 * Returns false when the plan is already marked.
 */
#include "target/opencl/passes.h"

namespace opv::plan {

bool replay(Plan& p, const PassCtx& /*ctx*/) {
  constexpr int64_t kReplayOn = 1;
  if (p.meta.has("cl_replay") && p.meta.i("cl_replay", 0) == kReplayOn) return false;
  p.meta.set("cl_replay", kReplayOn);
  return true;
}

}  // namespace opv::plan
