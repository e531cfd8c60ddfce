// Plan pass `assign_image_layout` ("layout-image", target opencl, first pass): 4-D float
// activations between calls that have image kernels are stored as Layout::ImageRGBA with F16
// storage (half textures, fp32 arithmetic in the kernels), with explicit Reorder calls at the
// edges of that domain. This file is the opencl policy of the layout-domain pass
// (plan/passes/layout_domain.h), which does steps 2-3.
//   1. Classify every call. Image-capable: Conv (input 0 is data; weights/bias are not),
//      GlobalAverage/MaxPool, ReduceMean over {2,3} with keepdims, MaxPool/AveragePool
//      (input 0 is data), unary element-wise ops with a unary_expr, binary Add/Sub/Mul/Div/
//      Pow/Min/Max, Concat on axis 1 (every input is data). Every slot is one of: Data (same
//      shape as the output, the conv/pool input, a concat input: must be an image), Flex ([N,C,1,1] with the output's N and C: read as a 1-pixel
//      image when it is one, else as a per-channel Linear vector), Other (weights, bias,
//      per-channel/scalar constants: Linear). Binary post-op operands are classified the same
//      way (the rule of post_ops_image_ok). A slot of any other shape makes the call Linear.
//      Every image-side shape must fit an image (fits_image).
//   2. In call order, a capable call joins the image domain when it is spatial (conv, pool,
//      reduce) with an eligible output, or is a Conv (there is no Linear conv kernel), or when a
//      Data/Flex input is already an image; then its
//      eligible outputs (Intermediate, float, Linear, fits an image) become ImageRGBA/F16.
//   3. Rewrite the call list: a slot whose buffer layout differs from what its call needs reads
//      a converted copy made by a Reorder call inserted before it (one copy per buffer and
//      layout, reused by later readers); a domain call writing a non-image buffer (a plan
//      Output...) writes an image temporary that a Reorder after it converts. A Reshape whose
//      input is an image and whose output is a float Linear buffer keeps reading the image (the
//      reorder family writes it in row-major NCHW order: no extra call). Existing Reorder calls
//      are left alone, so the pass is idempotent.
// Invariant: every call reads and writes each operand in the layout its kernel expects; values
// change only by the fp16 rounding of image storage; Input/Output/Constant buffers keep their
// layout; new buffers are unplanned Intermediates (memory planning runs last).
#include <optional>

#include "core/error.h"
#include "plan/layout.h"
#include "plan/passes/layout_domain.h"
#include "target/opencl/cl_abi.h"
#include "target/opencl/codegen.h"
#include "target/opencl/passes.h"

namespace opv::plan {
namespace {

bool is_f32_f16(DType dt) { return dt == DType::F32 || dt == DType::F16; }

bool is_image_binary(OpKind k) {
  return k == OpKind::Add || k == OpKind::Sub || k == OpKind::Mul || k == OpKind::Div || k == OpKind::Pow ||
         k == OpKind::Min || k == OpKind::Max;
}

// Calls that make a new 4-D activation from an image input (they start an image domain).
bool is_spatial(const Kernel& k) {
  switch (k.op) {
    case OpKind::Conv:
    case OpKind::MaxPool:
    case OpKind::AveragePool:
    case OpKind::GlobalAveragePool:
    case OpKind::GlobalMaxPool: return true;
    case OpKind::ReduceMean:
      return k.attrs.ints("axes") == std::vector<int64_t>{2, 3} && k.attrs.i("keepdims", 1) == 1;
    default: return false;
  }
}


struct ImagePolicy : LayoutPolicy {
  ImagePolicy() { domain = Layout::ImageRGBA; }

  // Slot class of an element-wise operand of shape s for an output of shape out, or nullopt.
  static std::optional<Slot> operand_slot(const Buffer& b, const Shape& out) {
    if (!is_f32_f16(b.dtype)) return std::nullopt;
    if (b.shape == out) return fits_image(b.shape) ? std::optional<Slot>(Slot::Data) : std::nullopt;
    if (b.shape.size() == 4 && b.shape[0] == out[0] && b.shape[1] == out[1] && b.shape[2] == 1 && b.shape[3] == 1)
      return Slot::Flex;
    if (per_channel_or_scalar(b.shape, out)) return Slot::Other;
    return std::nullopt;
  }

  SlotClass classify(const Plan& p, const Call& c) const override {
    auto buf = [&](int id) -> const Buffer& { return p.buffers.at(size_t(id)); };
    SlotClass r;
    r.slot.assign(c.inputs.size(), Slot::Other);
    const Kernel& k = p.kernels.at(size_t(c.kernel));
    if (k.op == OpKind::Reorder || c.outputs.size() != 1 || c.inputs.empty() || c.inputs[0] < 0) return r;
    const Buffer& out = buf(c.outputs[0]);
    if (!is_f32_f16(out.dtype) || !fits_image(out.shape)) return r;
    if (is_spatial(k)) {
      const Buffer& x = buf(c.inputs[0]);
      if (!is_f32_f16(x.dtype) || !fits_image(x.shape)) return r;
      r.slot[0] = Slot::Data;
    } else if (is_unary(k.op)) {
      if (k.op == OpKind::Cast || unary_expr(unary_post_op(k.op, k.attrs), "x").empty()) return r;
      const Buffer& x = buf(c.inputs[0]);
      if (!is_f32_f16(x.dtype) || x.shape != out.shape) return r;
      r.slot[0] = Slot::Data;
    } else if (is_image_binary(k.op)) {
      if (c.inputs.size() < 2 || c.inputs[1] < 0) return r;
      bool any_data = false;
      for (size_t i = 0; i < 2; ++i) {
        auto s = operand_slot(buf(c.inputs[i]), out.shape);
        if (!s) return r;
        r.slot[i] = *s;
        any_data |= *s == Slot::Data;
      }
      if (!any_data) return r;
    } else if (k.op == OpKind::Concat && k.attrs.i("axis", -1) == 1) {
      if (!k.post_ops.empty()) return r;
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        if (c.inputs[i] < 0) return r;
        const Buffer& b = buf(c.inputs[i]);
        if (!is_f32_f16(b.dtype) || !fits_image(b.shape)) return r;
        r.slot[i] = Slot::Data;
      }
    } else {
      return r;
    }
    for (const PostOp& po : k.post_ops) {
      if (is_unary(po.op)) {
        if (unary_expr(po, "x").empty()) return r;
        continue;
      }
      if (binary_expr(po.op, "a", "b").empty()) return r;
      if (po.input < 0 || size_t(po.input) >= c.inputs.size() || c.inputs[size_t(po.input)] < 0) return r;
      auto s = operand_slot(buf(c.inputs[size_t(po.input)]), out.shape);
      if (!s) return r;
      Slot& cur = r.slot[size_t(po.input)];
      if (cur == Slot::Other || *s == Slot::Data) cur = *s;
    }
    r.capable = true;
    return r;
  }

  // Conv has no Linear kernel on this target: it joins even when it writes a plan Output.
  bool starts_domain(const Plan& p, const Call& c, bool out_eligible) const override {
    const Kernel& k = p.kernels[size_t(c.kernel)];
    return is_spatial(k) && (out_eligible || k.op == OpKind::Conv);
  }

  bool eligible(const Buffer& b) const override {
    return b.kind == BufferKind::Intermediate && is_f32_f16(b.dtype) && b.layout == Layout::Linear &&
           fits_image(b.shape);
  }

  // Images hold F16; a copy back to Linear is F32.
  void convert(Buffer& b, Layout to) const override {
    if (to == Layout::ImageRGBA) {
      b.layout = Layout::ImageRGBA;
      b.dtype = DType::F16;
      b.offset = -1;
    } else {
      b.layout = to;
      b.dtype = DType::F32;
    }
    b.bytes = storage_bytes(b.dtype, b.shape, b.layout);
  }

  // A [N,C,1,1] operand is read as a 1-pixel image when it is one, else as a per-channel vector.
  Layout flex_layout(const Plan& p, const Call& c, const Buffer& b) const override {
    const Shape& out = p.buffers.at(size_t(c.outputs[0])).shape;
    return b.layout == Layout::ImageRGBA && b.shape[0] == out[0] ? Layout::ImageRGBA : Layout::Linear;
  }

  // A Reshape that reads an image and writes float Linear data (reorder family, no extra call).
  bool keeps(const Plan& p, const Call& c) const override {
    const Kernel& k = p.kernels.at(size_t(c.kernel));
    if (k.op != OpKind::Reshape || c.inputs.size() != 1 || c.outputs.size() != 1 || c.inputs[0] < 0) return false;
    const Buffer& in = p.buffers.at(size_t(c.inputs[0]));
    const Buffer& out = p.buffers.at(size_t(c.outputs[0]));
    return in.layout == Layout::ImageRGBA && out.layout == Layout::Linear && is_f32_f16(out.dtype) &&
           numel(in.shape) == numel(out.shape) && k.post_ops.empty();
  }

  std::string layout_name(Layout l) const override { return l == Layout::ImageRGBA ? "image" : "linear"; }

  std::string reorder_name(const Buffer& from, const Buffer& to) const override {
    auto side = [](const Buffer& b) {
      return std::string(dtype_name(b.dtype)) + (b.layout == Layout::ImageRGBA ? "_image" : "_linear");
    };
    return "reorder_" + side(from) + "_to_" + side(to);
  }
};

}  // namespace

bool assign_image_layout(Plan& p, const PassCtx& /*ctx*/) {
  OPV_CHECK(p.target == "opencl", "layout-image: plan targets '", p.target, "', not opencl");
  return assign_layout_domain(p, ImagePolicy{});
}

}  // namespace opv::plan
