// Reference backend.
// caps(): Linear buffers only, every op (the reference kernels), per-call
//   times.
// load(): 1. require_support (the target, ids in range, every buffer Linear); 2. give every
//   non-Input buffer its own tensor (constants copied from the weights blob; the arena offsets
//   are ignored).
// run(): bind the input tensors, execute the calls in order with ref::run (kernel op, attrs,
//   post-ops), copy the Output buffers into the caller's tensors. Errors name the call.
#include "backend/reference/reference_backend.h"

#include <chrono>

#include "core/error.h"
#include "kernels/reference.h"

namespace opv::backend {

namespace {

class ReferenceBackend : public Backend {
 public:
  std::string name() const override { return "reference"; }
  Tolerance tolerance() const override { return {1e-5, 1e-5}; }
  Caps caps() const override { return {{plan::Layout::Linear}, /*per_call_times=*/true, "host"}; }
  void load(const plan::Plan& plan) override;
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) override;
  void set_profiling(bool on) override { profiling_ = on; }
  std::vector<double> call_times_ms() const override { return profiling_ ? times_ms_ : std::vector<double>{}; }
  std::vector<double> call_starts_ms() const override { return profiling_ ? starts_ms_ : std::vector<double>{}; }

 private:
  std::vector<plan::Buffer> buffers_;
  std::vector<plan::Kernel> kernels_;
  std::vector<plan::Call> calls_;
  std::vector<int> inputs_, outputs_;
  RunSignature sig_;
  std::vector<Tensor> store_;           // one tensor per buffer (empty for Input buffers)
  std::vector<const Tensor*> bound_;    // per buffer: what calls read
  bool loaded_ = false;
  bool profiling_ = false;
  std::vector<double> times_ms_;
  std::vector<double> starts_ms_;  // per call, ms from the run's start (profiling)
};

void ReferenceBackend::load(const plan::Plan& plan) {
  require_support(*this, plan);
  const int nb = int(plan.buffers.size());

  std::vector<Tensor> store(static_cast<size_t>(nb));
  for (int i = 0; i < nb; ++i) {
    const plan::Buffer& b = plan.buffers[size_t(i)];
    if (b.kind == plan::BufferKind::Input) continue;
    Tensor t(b.dtype, b.shape);
    if (b.kind == plan::BufferKind::Constant) {
      OPV_CHECK(b.bytes >= int64_t(t.nbytes()), "reference backend: constant '", b.name, "' holds ", b.bytes,
                " bytes, needs ", t.nbytes());
      const uint8_t* src = plan.constant_data(i);
      if (t.nbytes()) std::memcpy(t.raw(), src, t.nbytes());
    }
    store[size_t(i)] = std::move(t);
  }
  buffers_ = plan.buffers;
  kernels_ = plan.kernels;
  calls_ = plan.calls;
  inputs_ = plan.inputs;
  outputs_ = plan.outputs;
  sig_ = RunSignature::of(plan);
  store_ = std::move(store);
  bound_.assign(size_t(nb), nullptr);
  for (int i = 0; i < nb; ++i)
    if (buffers_[size_t(i)].kind != plan::BufferKind::Input) bound_[size_t(i)] = &store_[size_t(i)];
  times_ms_.assign(calls_.size(), 0.0);
  loaded_ = true;
}

void ReferenceBackend::run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
  OPV_CHECK(loaded_, "reference backend: run() before load()");
  sig_.check(inputs, outputs);  // Session checked them; this asserts the precondition
  for (size_t i = 0; i < inputs.size(); ++i) bound_[size_t(inputs_[i])] = inputs[i];
  std::vector<const Tensor*> ins;
  std::vector<Tensor*> outs;
  const auto run_t0 = std::chrono::steady_clock::now();
  if (profiling_) starts_ms_.assign(calls_.size(), 0.0);
  for (size_t ci = 0; ci < calls_.size(); ++ci) {
    const plan::Call& c = calls_[ci];
    const plan::Kernel& k = kernels_[size_t(c.kernel)];
    ins.clear();
    outs.clear();
    for (int b : c.inputs) {
      if (b >= 0 && bound_[size_t(b)] == nullptr) fail("call ", ci, " (", c.label, "): input buffer '",
                                                       buffers_[size_t(b)].name, "' is not bound");
      ins.push_back(b < 0 ? nullptr : bound_[size_t(b)]);
    }
    for (int b : c.outputs) outs.push_back(&store_[size_t(b)]);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      ref::run({k.op, k.attrs, k.post_ops}, ins, outs);
    } catch (const Error& e) {
      fail("call ", ci, " (", c.label, "): ", e.what());
    }
    if (profiling_) {
      times_ms_[ci] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      starts_ms_[ci] = std::chrono::duration<double, std::milli>(t0 - run_t0).count();
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const int b = outputs_[i];
    const Tensor* src = bound_[size_t(b)];
    Tensor* dst = outputs[i];
    OPV_CHECK(src != nullptr, "reference backend: output '", buffers_[size_t(b)].name, "' is not bound");
    if (src->nbytes()) std::memcpy(dst->raw(), src->raw(), src->nbytes());
  }
  for (int b : inputs_) bound_[size_t(b)] = nullptr;
}

}  // namespace

std::unique_ptr<Backend> make_reference_backend(const Options& opts) {
  (void)opts;
  return std::make_unique<ReferenceBackend>();
}

}  // namespace opv::backend
