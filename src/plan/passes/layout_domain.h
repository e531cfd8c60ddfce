// The layout-domain pass, one algorithm for every target: 4-D activations between calls that
// can run in a target's storage layout (cpu: NHWC; opencl: RGBA images) are stored in it, with
// explicit Reorder calls at the edges of that domain. A target supplies a LayoutPolicy: which
// calls and operands can live in its layout and how a buffer is converted; the pass does the rest.
//   1. Classify every call (policy): capable or not, and per input slot Data (follows the call's
//      layout), Flex (a [N,C,1,1] operand a policy may read either way) or Other (Linear).
//   2. In call order, a capable call joins the domain when the policy says it starts one (a
//      spatial op with an eligible output, say), or when a Data/Flex input is already in the
//      domain's layout (or is written by a domain call through a domain temporary, step 3: the
//      reader reads that temporary); then its eligible outputs are converted to the domain's
//      layout.
//   3. Rewrite the call list: a slot whose buffer layout differs from what its call needs reads
//      a converted copy made by a Reorder call inserted before it (one copy per buffer and
//      layout, reused by later readers); a domain call writing a buffer of another layout (a plan
//      Output...) writes a domain temporary that a Reorder after it converts. Existing Reorder
//      calls (and calls the policy keeps as they are) are left alone, so the pass is idempotent.
//      Kernels used only inside the domain get the policy's kernel suffix, if any.
// Invariant: every call reads and writes each operand in the layout its kernel expects; values
// change only as the policy's storage allows (fp16 images); Input/Output/Constant buffers keep
// their layout; new buffers are unplanned Intermediates (memory planning runs last).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace opv::plan {

enum class Slot : uint8_t { Other, Data, Flex };

struct SlotClass {
  bool capable = false;
  std::vector<Slot> slot;  // per input slot
};

struct LayoutPolicy {
  Layout domain = Layout::Linear;  // the layout of the domain
  std::string kernel_suffix;       // appended to kernels used only inside the domain ("" = none)

  virtual ~LayoutPolicy() = default;
  virtual SlotClass classify(const Plan& p, const Call& c) const = 0;
  // Whether capable call `c` starts a domain by itself (its output 0 is `out_eligible`).
  virtual bool starts_domain(const Plan& p, const Call& c, bool out_eligible) const = 0;
  // An Intermediate the domain may convert (its layout is still Linear).
  virtual bool eligible(const Buffer& b) const = 0;
  // Converts `b` to layout `to` (the domain's layout, or Linear for a copy back).
  virtual void convert(Buffer& b, Layout to) const = 0;
  // What a Flex slot of call `ci` reads, given the buffer there now.
  virtual Layout flex_layout(const Plan& p, const Call& c, const Buffer& b) const {
    (void)p, (void)c, (void)b;
    return Layout::Linear;
  }
  // A buffer whose bytes are the same in the domain's layout and Linear needs no conversion.
  virtual bool same_bytes(const Buffer& b) const {
    (void)b;
    return false;
  }
  // Whether a domain call's output `b` (not in the domain's layout) is written through a
  // domain temporary and a Reorder.
  virtual bool needs_output_copy(const Buffer& b) const { return b.layout != domain; }
  // Calls left exactly as they are (besides Reorders).
  virtual bool keeps(const Plan& p, const Call& c) const {
    (void)p, (void)c;
    return false;
  }
  // Name of layout `l` in buffer suffixes ("/nhwc") and Reorder labels ("/to_nhwc").
  virtual std::string layout_name(Layout l) const = 0;
  // Name of the Reorder kernel converting `from` into `to`.
  virtual std::string reorder_name(const Buffer& from, const Buffer& to) const = 0;
};

// Runs the pass with `policy`; returns true when the plan changed.
bool assign_layout_domain(Plan& p, const LayoutPolicy& policy);

}  // namespace opv::plan
