// Plan pass `assign_nhwc_layout` (cpu target): store 4-D f32 activations NHWC between the ops
// that run as fast or faster on channels-last data, with explicit Reorder calls at the edges.
// This file is the NHWC policy of the layout-domain pass (layout_domain.h, which does steps 2-3;
// layout_nhwc.h), used by the cpu target as is (f32) and by the cuda target with its own dtypes
// and veto (target/cuda/layout.cpp).
//   1. Classify every call. "Spatial" (Conv, MaxPool, AveragePool, GlobalAverage/MaxPool) and
//      "agnostic" (unary element-wise; binary element-wise and Concat on axis 1) calls can run in
//      NHWC; their data slots are input 0 of spatial calls, every input of the shape of the
//      output of agnostic calls, and full-shape operands of binary post-ops. Other slots of
//      these calls must be broadcast operands of per-channel ([1,C,1,1], [C,1,1]) or
//      scalar shape (layout-free), else the call is not NHWC-capable. All other ops need Linear.
//   2. In call order, a capable call joins the NHWC domain when it is spatial with a 4-D f32
//      output, or when one of its data inputs is already NHWC; then its 4-D f32 Intermediate
//      outputs whose NHWC and Linear bytes differ become NHWC.
//   3. Rewrite the call list: a slot whose buffer layout differs from what the call needs (the
//      domain layout for data slots, Linear elsewhere) reads a converted copy made by a Reorder
//      call inserted before it (one copy per buffer and layout, reused by later readers); a
//      domain-NHWC call writing a Linear buffer (a plan Output, ...) writes an NHWC temporary
//      that a Reorder after it converts. Existing Reorder calls are left alone, so the pass is
//      idempotent. Kernels used only by NHWC calls get a "_nhwc" suffix.
// Invariant: every call reads and writes each operand in the layout its kernel expects, the
// values computed are unchanged, Input/Output/Constant buffers keep their layout; new buffers
// are unplanned Intermediates (memory planning runs after this pass).
#include "core/error.h"
#include "plan/layout.h"
#include "plan/passes/layout_nhwc.h"
#include "plan/passes/passes.h"

namespace opv::plan {

NhwcPolicy::NhwcPolicy() {
  domain = Layout::NHWC;
  kernel_suffix = "_nhwc";
}

bool NhwcPolicy::stores(DType dt) const {
  for (DType d : dtypes)
    if (d == dt) return true;
  return false;
}

bool NhwcPolicy::is_spatial(OpKind k) {
  return k == OpKind::Conv || k == OpKind::MaxPool || k == OpKind::AveragePool || k == OpKind::GlobalAveragePool ||
         k == OpKind::GlobalMaxPool;
}

SlotClass NhwcPolicy::classify(const Plan& p, const Call& c) const {
  auto buf = [&](int id) -> const Buffer& { return p.buffers.at(size_t(id)); };
  SlotClass r;
  r.slot.assign(c.inputs.size(), Slot::Other);
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  if (c.outputs.size() != 1 || c.inputs.empty() || c.inputs[0] < 0) return r;
  const Buffer& out = buf(c.outputs[0]);
  if (!stores(out.dtype) || out.shape.size() != 4) return r;
  if (is_spatial(k.op)) {
    if (buf(c.inputs[0]).shape.size() != 4) return r;
    r.slot[0] = Slot::Data;  // weights, bias: Other
  } else if (is_unary(k.op) || is_binary(k.op) || (k.op == OpKind::Concat && k.attrs.i("axis", -1) == 1)) {
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (c.inputs[i] < 0) continue;
      const Buffer& b = buf(c.inputs[i]);
      if (k.op == OpKind::Concat) {
        if (b.shape.size() != 4) return r;
        r.slot[i] = Slot::Data;
      } else if (b.shape == out.shape) {
        r.slot[i] = Slot::Data;
      } else if (!per_channel_or_scalar(b.shape, out.shape)) {
        return r;
      }
    }
    if (is_unary(k.op) && !stores(buf(c.inputs[0]).dtype)) return r;
  } else {
    return r;
  }
  for (const PostOp& po : k.post_ops) {
    if (po.input < 0) continue;
    if (size_t(po.input) >= c.inputs.size() || c.inputs[size_t(po.input)] < 0) return r;
    const Buffer& b = buf(c.inputs[size_t(po.input)]);
    if (b.shape == out.shape) r.slot[size_t(po.input)] = Slot::Data;
    else if (!per_channel_or_scalar(b.shape, out.shape)) return r;
  }
  r.capable = target_capable(p, c);
  return r;
}

bool NhwcPolicy::starts_domain(const Plan& p, const Call& c, bool out_eligible) const {
  return is_spatial(p.kernels[size_t(c.kernel)].op) && out_eligible;
}

bool NhwcPolicy::eligible(const Buffer& b) const {
  return b.kind == BufferKind::Intermediate && stores(b.dtype) && b.layout == Layout::Linear && !layout_free(b.shape);
}

void NhwcPolicy::convert(Buffer& b, Layout to) const {
  b.layout = to;
  b.bytes = storage_bytes(b.dtype, b.shape, to);
}

bool NhwcPolicy::same_bytes(const Buffer& b) const { return layout_free(b.shape); }

bool NhwcPolicy::needs_output_copy(const Buffer& b) const {
  return b.layout != Layout::NHWC && !layout_free(b.shape) && stores(b.dtype);
}

std::string NhwcPolicy::layout_name(Layout l) const { return l == Layout::NHWC ? "nhwc" : "nchw"; }

std::string NhwcPolicy::reorder_name(const Buffer& from, const Buffer& to) const {
  return std::string(to.layout == Layout::NHWC ? "reorder_nchw_to_nhwc_" : "reorder_nhwc_to_nchw_") +
         dtype_name(from.dtype);
}

bool assign_nhwc_layout(Plan& p, const PassCtx& /*ctx*/) { return assign_layout_domain(p, NhwcPolicy{}); }

}  // namespace opv::plan
