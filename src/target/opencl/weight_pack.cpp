// Plan pass "weight-pack" (target opencl): every call whose kernel family can prepack its static
// weights gets them as PackedWeight constants in exactly the order its kernel reads them (see
// each family's pack_weights), and its kernel is regenerated to read them contiguously. The
// original constants become unused and are dropped by compact() in the driver.
#include "target/opencl/codegen.h"
#include "target/opencl/passes.h"

namespace opv::plan {

bool weight_pack(Plan& p, const PassCtx& ctx) {
  bool changed = false;
  for (size_t i = 0; i < p.calls.size(); ++i) {
    const std::string fam = p.kernels.at(size_t(p.calls[i].kernel)).attrs.s("cl_family");
    for (const cl::Family* f : cl::families())
      if (fam == f->name && f->pack_weights) changed |= f->pack_weights(p, int(i), ctx.cl);
  }
  if (changed) cl::intern_kernels(p);  // calls regenerated one by one may share kernels again
  return changed;
}

}  // namespace opv::plan
