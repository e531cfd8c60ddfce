// relocate: (not implemented yet) rename registers so accumulators become contiguous runs.
// Returns false (no progress) until written; the pipeline and reports list it honestly.
#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

bool relocate(Code& c) {
  (void)c;
  return false;
}

}  // namespace opv::ir3::passes
