#include "plan/passes.h"

namespace opv::plan {

std::vector<PlanPassInfo> plan_passes_for(const std::string& target) {
  if (target == "cpu")
    return {{"layout-nhwc", assign_nhwc_layout,
             "store 4-D activations NHWC between layout-agnostic ops, with explicit reorders"}};
  return {};
}

}  // namespace opv::plan
