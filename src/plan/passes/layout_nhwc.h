// The NHWC (channels-last) policy of the layout-domain pass (layout_domain.h), shared by the
// targets that store 4-D activations channels-last: cpu (pass "layout-nhwc", f32 activations) and
// cuda (pass "cuda-layout", target/cuda/layout.cpp: f16 and f32 activations, only calls its code
// generator has an NHWC form for). layout_nhwc.cpp says which calls can run NHWC and why.
#pragma once
#include <string>
#include <vector>

#include "plan/passes/layout_domain.h"

namespace opv::plan {

struct NhwcPolicy : LayoutPolicy {
  std::vector<DType> dtypes{DType::F32};  // activation dtypes stored NHWC

  NhwcPolicy();
  bool stores(DType dt) const;
  // Spatial ops: Conv, MaxPool, AveragePool, GlobalAverage/MaxPool (they start a domain).
  static bool is_spatial(OpKind k);
  // A target's veto: whether its kernels for call `c` can read and write NHWC at all (after the
  // generic classification found the call layout-agnostic). Default: every such call.
  virtual bool target_capable(const Plan& p, const Call& c) const {
    (void)p, (void)c;
    return true;
  }

  SlotClass classify(const Plan& p, const Call& c) const override;
  bool starts_domain(const Plan& p, const Call& c, bool out_eligible) const override;
  bool eligible(const Buffer& b) const override;
  void convert(Buffer& b, Layout to) const override;
  bool same_bytes(const Buffer& b) const override;
  bool needs_output_copy(const Buffer& b) const override;
  std::string layout_name(Layout l) const override;
  std::string reorder_name(const Buffer& from, const Buffer& to) const override;
};

}  // namespace opv::plan
