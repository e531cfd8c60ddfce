// Plan pass "cuda-layout" of target "cuda" (layout.cpp): NHWC activations where
// Options::layout asks for them (or, for auto, where the plan's tensor-core 1x1 convs gain), through
// the shared layout-domain pass and its NHWC policy (plan/passes/layout_nhwc.h).
#pragma once
#include "plan/passes/passes.h"
#include "plan/plan.h"

namespace opv::plan::cuda {

// Plan meta key of the layout the pass chose: "nchw" or "nhwc" (plan dumps and inspect show it).
constexpr const char* kLayoutPlanKey = "cuda_layout_plan";

// Whether call `c` is a dense 1x1 conv the tensor-core family takes at virtual architecture `sm`
// (fp16 X and W, more than one pixel and channel).
bool tensor_core_1x1(const Plan& p, const Call& c, int sm);
// The layout options `o` choose for plan `p`: true = NHWC (Nhwc, or Auto with a tensor-core 1x1).
bool nhwc_chosen(const Plan& p, const Options& o);
// The pass: records the choice (kLayoutPlanKey), then builds the NHWC domain when chosen.
bool assign_layout(Plan& p, const PassCtx& ctx);

}  // namespace opv::plan::cuda
