// Layout predicates shared by the layout-domain passes (plan/passes/layout_domain.h), the targets'
// packing passes and the backends.
#pragma once
#include "core/shape.h"

namespace opv::plan {

// A 4-D shape whose NCHW and NHWC storage are the same bytes (one channel, or one pixel).
inline bool channels_trivial(const Shape& s) { return s.size() == 4 && (s[1] == 1 || s[2] * s[3] == 1); }

// Storage that does not depend on a 4-D layout choice: not 4-D, or channels_trivial.
inline bool layout_free(const Shape& s) { return s.size() != 4 || channels_trivial(s); }

// A per-channel ([C], [C,1,1], [1,C,1,1]) or scalar operand of a 4-D output [N,C,H,W]: its bytes
// do not depend on the output's layout.
inline bool per_channel_or_scalar(const Shape& s, const Shape& out) {
  if (numel(s) == 1) return true;
  if (out.size() != 4 || s.size() > 4) return false;
  Shape p(4 - s.size(), 1);
  p.insert(p.end(), s.begin(), s.end());
  return p[0] == 1 && p[1] == out[1] && p[2] == 1 && p[3] == 1;
}

}  // namespace opv::plan
