// What every backend shares (backend.h): the supports query's driver and defaults, the id
// checks every load needs, and the one check of the tensors a run binds (RunSignature).
#include "backend/backend.h"

#include <algorithm>

#include "core/error.h"

namespace opv::backend {

namespace {
std::string call_name(const plan::Plan& p, size_t ci) {
  return "call " + std::to_string(ci) + " (" + p.calls[ci].label + ")";
}
}  // namespace

std::string layout_list(const std::vector<plan::Layout>& layouts) {
  std::string r;
  for (plan::Layout l : layouts) r += (r.empty() ? "" : ", ") + std::string(plan::layout_name(l));
  return r;
}

Support Backend::supports_buffer(const plan::Plan& plan, int buffer) const {
  const plan::Buffer& b = plan.buffers[size_t(buffer)];
  const Caps c = caps();
  if (std::find(c.layouts.begin(), c.layouts.end(), b.layout) != c.layouts.end()) return Support::yes();
  return Support::no(detail::concat("buffer ", buffer, " '", b.name, "' has layout ", plan::layout_name(b.layout),
                                    "; the ", name(), " backend stores only ", layout_list(c.layouts)));
}

Support Backend::supports_call(const plan::Plan& plan, int call) const {
  (void)plan;
  (void)call;
  return Support::yes();
}

void Backend::run_device_inputs(const std::vector<Tensor*>& outputs) {
  (void)outputs;
  throw Error(name() + " backend: keeps no inputs in device memory (a run on device inputs needs --backend cuda "
              "with --cuda-inputs device)");
}

void check_plan_ids(const plan::Plan& plan, const std::string& who) {
  const int nb = int(plan.buffers.size());
  for (size_t ci = 0; ci < plan.calls.size(); ++ci) {
    const plan::Call& c = plan.calls[ci];
    OPV_CHECK(c.kernel >= 0 && c.kernel < int(plan.kernels.size()), who, ": ", call_name(plan, ci), " uses kernel ",
              c.kernel, " of ", plan.kernels.size());
    for (int b : c.inputs)
      OPV_CHECK(b >= -1 && b < nb, who, ": ", call_name(plan, ci), " reads buffer ", b, " of ", nb);
    for (int b : c.outputs) {
      OPV_CHECK(b >= 0 && b < nb, who, ": ", call_name(plan, ci), " writes buffer ", b, " of ", nb);
      const plan::BufferKind k = plan.buffers[size_t(b)].kind;
      OPV_CHECK(k != plan::BufferKind::Input && k != plan::BufferKind::Constant, who, ": ", call_name(plan, ci),
                " writes ", plan::buffer_kind_name(k), " buffer '", plan.buffers[size_t(b)].name, "'");
    }
  }
  for (int b : plan.inputs)
    OPV_CHECK(b >= 0 && b < nb && plan.buffers[size_t(b)].kind == plan::BufferKind::Input, who, ": plan input ", b,
              " is not an Input buffer");
  for (int b : plan.outputs) OPV_CHECK(b >= 0 && b < nb, who, ": plan output ", b, " out of range");
}

Support supports(const Backend& be, const plan::Plan& plan) {
  if (plan.target != be.name())
    return Support::no(detail::concat("plan was lowered for target '", plan.target, "', not '", be.name(), "'"));
  check_plan_ids(plan, be.name() + " backend");
  for (int b = 0; b < int(plan.buffers.size()); ++b)
    if (Support s = be.supports_buffer(plan, b); !s) return s;
  for (int ci = 0; ci < int(plan.calls.size()); ++ci)
    if (Support s = be.supports_call(plan, ci); !s) return s;
  return Support::yes();
}

void require_support(const Backend& be, const plan::Plan& plan) {
  if (Support s = supports(be, plan); !s) fail(be.name(), " backend: ", s.why);
}

RunSignature RunSignature::of(const plan::Plan& plan) {
  RunSignature s;
  for (int b : plan.inputs) s.inputs.push_back(plan.buffers.at(size_t(b)));
  for (int b : plan.outputs) s.outputs.push_back(plan.buffers.at(size_t(b)));
  return s;
}

void check_bound(const plan::Buffer& spec, const Tensor* t, const char* role) {
  if (t != nullptr && t->dtype() == spec.dtype && t->shape() == spec.shape) return;  // no allocation on success
  const std::string want = dtype_name(spec.dtype) + shape_str(spec.shape);
  if (t == nullptr) fail_argument(role, " '", spec.name, "' must be ", want, ", got no tensor");
  const bool dtype_differs = t->dtype() != spec.dtype, shape_differs = t->shape() != spec.shape;
  fail_argument(role, " '", spec.name, "' must be ", want, ", got ", dtype_name(t->dtype()), shape_str(t->shape()), " (the ",
       dtype_differs && shape_differs ? "dtype and shape differ" : dtype_differs ? "dtype differs" : "shape differs",
       ")");
}

void RunSignature::check(const std::vector<const Tensor*>& ins, const std::vector<Tensor*>& outs) const {
  OPV_CHECK(ins.size() == inputs.size(), ins.size(), " inputs given, the plan has ", inputs.size());
  check_outputs(outs);
  for (size_t i = 0; i < ins.size(); ++i) check_bound(inputs[i], ins[i], "input");
}

void RunSignature::check_outputs(const std::vector<Tensor*>& outs) const {
  OPV_CHECK(outs.size() == outputs.size(), outs.size(), " outputs given, the plan has ", outputs.size());
  for (size_t i = 0; i < outs.size(); ++i) check_bound(outputs[i], outs[i], "output");
}

}  // namespace opv::backend
