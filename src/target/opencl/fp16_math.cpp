// Plan pass "fp16-math" (target opencl, opt-in): the kernels of families that have an
// fp16-arithmetic variant (conv_image) are rebuilt with it: -DOPV_FP16_MATH, so that on a device
// with cl_khr_fp16 (Adreno) they accumulate in half registers (half the register footprint, twice
// the ALU rate); on devices without it (PoCL, NVIDIA) the same source compiles to the fp32 path.
// Not run by default: fp16 accumulation over long reductions must first be checked against the
// oracle on the device (`opvision verify ... --backend opencl`).
#include "target/opencl/codegen.h"
#include "target/opencl/passes.h"

namespace opv::plan {

bool fp16_math(Plan& p, const PassCtx& ctx) {
  bool changed = false;
  for (size_t i = 0; i < p.calls.size(); ++i) {
    const Kernel& k = p.kernels.at(size_t(p.calls[i].kernel));
    if (k.attrs.s("cl_family") != "conv_image" || k.attrs.i("cl_fp16_math", 0)) continue;
    Kernel mine = k;
    mine.attrs.set("cl_fp16_math", int64_t(1));
    p.calls[i].kernel = p.add_kernel(std::move(mine));
    cl::regenerate(p, int(i), ctx.cl);
    changed = true;
  }
  if (changed) cl::intern_kernels(p);
  return changed;
}

}  // namespace opv::plan
