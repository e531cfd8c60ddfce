// tidy: after scheduling, propagate copies and remove dead code once more, then schedule again.
//
// cp runs first in the pipeline, when most loads still sit in guarded blocks of their own: a
// texture/sampler index pair (`mov.u16u16 hrN.x, 21` twice) or an immediate set up inside one
// block is not known on the path that skipped it, so a later read of the same value keeps a
// fresh copy. After guards has merged the blocks of one predicate and hoist has moved the set-up
// moves in front of their branches, the same value is known on every path: cp now lets the later
// reads use the earlier register, and dce removes the moves left without readers. Removing
// instructions from a schedule leaves it shaped for the old code, so hoist runs again on the
// result (it keeps a new order only where the cost model says it is faster; passes.h).
//
// Each step is one of the pipeline's passes, with their safety rules; tidy adds no rewrite of
// its own. The optimiser keeps the result only if the simulator and the hazard checker agree
// (ir3/optimize.h), like every other pass.
// Progress: true when cp or dce changed the program.
#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

bool tidy(Code& c) {
  bool changed = cp(c);
  changed = dce(c) || changed;
  if (changed) hoist(c);
  return changed;
}

}  // namespace opv::ir3::passes
