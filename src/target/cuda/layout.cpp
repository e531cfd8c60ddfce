/* Plan pass "cuda-layout": the activation layout of a cuda plan (Options::layout, compile
 * --cuda-layout). The NHWC policy of the layout-domain pass (plan/passes/layout_nhwc.h, the cpu
 * target's, which does the domain growth and the Reorder calls at its edges) with what the CUDA
 * code generator can do:
 *   1. Choose: nchw does nothing; nhwc always builds the NHWC domain; auto builds it where the plan
 *      has tensor-core 1x1 convs (compute_80+, fp16 X and W, more than one pixel), whose GEMM reads
 *      both operands along the channels in NHWC (codegen.cpp, conv1x1_mma). The choice is recorded
 *      in plan meta "cuda_layout_plan" (nchw / nhwc) beside the option itself ("cuda_layout").
 *   2. Classify (NhwcPolicy: spatial ops, element-wise ops and Concat on axis 1 with per-channel
 *      or scalar operands), f16 and f32 activations. The CUDA families index every operand through
 *      its own layout (codegen.cpp strides_of / coords), so their data slots are Flex: they read a
 *      buffer in the layout it has, no Reorder. Only a tensor-core 1x1 conv's X is Data (it must be
 *      NHWC when its output is), and a plan Output a domain call wrote (its NHWC copy is read).
 *   3. A domain starts at a conv with an NHWC-eligible output (not at the input pack: the first
 *      conv reads the NCHW frames and writes NHWC, see starts_domain); everything
 *      capable that reads its outputs joins (layout_domain.cpp). Ops without an NHWC form (Reshape,
 *      Gemm, MatMul, Softmax, Transpose, ...) read Linear copies made by Reorder calls; domain calls
 *      writing plan Outputs write through a Reorder.
 * Invariant: as layout_domain.h; additionally every NHWC buffer is read and written only by calls
 * whose family has an NHWC form (codegen.cpp nhwc_family), and Input/Output buffers stay Linear.
 */
#include "target/cuda/layout.h"

#include "plan/layout.h"
#include "plan/passes/layout_nhwc.h"
#include "target/cuda/cuda_abi.h"

namespace opv::plan::cuda {
namespace {

struct CudaNhwcPolicy : NhwcPolicy {
  int sm = 75;

  CudaNhwcPolicy() { dtypes = {DType::F16, DType::F32}; }

  SlotClass classify(const Plan& p, const Call& c) const override {
    SlotClass r = NhwcPolicy::classify(p, c);
    if (!r.capable) return r;
    // Data stays Data for the tensor-core 1x1's X, and where the buffer is a plan Output (Linear):
    // a domain call that wrote it left an NHWC copy (layout_domain.h, step 3), read that one.
    const bool mma = tensor_core_1x1(p, c, sm);
    for (size_t i = 0; i < r.slot.size(); ++i)
      if (r.slot[i] == Slot::Data && !(mma && i == 0) && p.buffers.at(size_t(c.inputs[i])).kind != BufferKind::Output)
        r.slot[i] = Slot::Flex;
    return r;
  }

  // Convs start the domain; the input pack does not (it stays NCHW and the first conv converts as it
  // reads: on the H200 the stem conv read NHWC frames at 41 us a call against 17 us NCHW, run 19).
  bool starts_domain(const Plan& p, const Call& c, bool out_eligible) const override {
    return out_eligible && p.kernels[size_t(c.kernel)].op == OpKind::Conv;
  }

  Layout flex_layout(const Plan& p, const Call& c, const Buffer& b) const override {
    (void)p, (void)c;
    return b.layout == Layout::NHWC ? Layout::NHWC : Layout::Linear;  // read as stored
  }
};

}  // namespace

bool tensor_core_1x1(const Plan& p, const Call& c, int sm) {
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  if (sm < 80 || k.op != OpKind::Conv || c.inputs.size() < 2 || c.inputs[0] < 0 || c.inputs[1] < 0 ||
      c.outputs.size() != 1 || k.attrs.i("group", 1) != 1 ||
      k.attrs.ints("strides", {1, 1}) != std::vector<int64_t>{1, 1} ||
      k.attrs.ints("pads", {0, 0, 0, 0}) != std::vector<int64_t>{0, 0, 0, 0})
    return false;
  const Buffer& x = p.buffers.at(size_t(c.inputs[0]));
  const Buffer& w = p.buffers.at(size_t(c.inputs[1]));
  return x.dtype == DType::F16 && w.dtype == DType::F16 && x.shape.size() == 4 && w.shape.size() == 4 &&
         w.shape[2] == 1 && w.shape[3] == 1 && !layout_free(x.shape);
}

bool nhwc_chosen(const Plan& p, const Options& o) {
  if (o.layout != LayoutChoice::Auto) return o.layout == LayoutChoice::Nhwc;
  const int sm = arch_number(o.arch);
  for (const Call& c : p.calls)
    if (tensor_core_1x1(p, c, sm)) return true;
  return false;
}

bool assign_layout(Plan& p, const PassCtx& ctx) {
  const bool nhwc = nhwc_chosen(p, ctx.cuda);
  p.meta.set(kLayoutPlanKey, std::string(nhwc ? "nhwc" : "nchw"));
  if (!nhwc) return false;
  CudaNhwcPolicy pol;
  pol.sm = arch_number(ctx.cuda.arch);
  return assign_layout_domain(p, pol);
}

}  // namespace opv::plan::cuda
