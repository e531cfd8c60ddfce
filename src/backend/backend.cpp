// The one check of the tensors a run binds (backend.h: RunSignature, check_bound).
#include "backend/backend.h"

#include "core/error.h"

namespace opv::backend {

RunSignature RunSignature::of(const plan::Plan& plan) {
  RunSignature s;
  for (int b : plan.inputs) s.inputs.push_back(plan.buffers.at(size_t(b)));
  for (int b : plan.outputs) s.outputs.push_back(plan.buffers.at(size_t(b)));
  return s;
}

void check_bound(const plan::Buffer& spec, const Tensor* t, const char* role) {
  if (t != nullptr && t->dtype() == spec.dtype && t->shape() == spec.shape) return;  // no allocation on success
  const std::string want = dtype_name(spec.dtype) + shape_str(spec.shape);
  OPV_CHECK(t != nullptr, role, " '", spec.name, "' must be ", want, ", got no tensor");
  const bool dtype_differs = t->dtype() != spec.dtype, shape_differs = t->shape() != spec.shape;
  fail(role, " '", spec.name, "' must be ", want, ", got ", dtype_name(t->dtype()), shape_str(t->shape()), " (the ",
       dtype_differs && shape_differs ? "dtype and shape differ" : dtype_differs ? "dtype differs" : "shape differs",
       ")");
}

void RunSignature::check(const std::vector<const Tensor*>& ins, const std::vector<Tensor*>& outs) const {
  OPV_CHECK(ins.size() == inputs.size(), ins.size(), " inputs given, the plan has ", inputs.size());
  OPV_CHECK(outs.size() == outputs.size(), outs.size(), " outputs given, the plan has ", outputs.size());
  for (size_t i = 0; i < ins.size(); ++i) check_bound(inputs[i], ins[i], "input");
  for (size_t i = 0; i < outs.size(); ++i) check_bound(outputs[i], outs[i], "output");
}

}  // namespace opv::backend
