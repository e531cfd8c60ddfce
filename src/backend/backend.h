// The backend interface: a backend loads a plan lowered for it (build kernels, upload/pack
// constants, allocate the arena) and then runs inferences. Load and run are separate: run
// binds inputs/outputs and enqueues; it does not allocate (except on first use of profiling).
// New backends (opencl, cuda, qcom) implement this and register in backend/registry.cpp.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "plan/plan.h"

namespace opv::backend {

struct Options {
  int threads = 0;         // CPU threads (0 = backend default)
  std::string device;      // device selector for GPU backends
  bool spin_wait = false;  // GPU backends: wait for an inference's end by polling (one busy core)
};

// Error bounds against the reference backend (see DESIGN.md "Numerics and checks").
struct Tolerance {
  double rel_l2;
  double max_abs_rel;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual Tolerance tolerance() const = 0;
  // Prepares everything a run needs. Throws opv::Error if the plan targets another backend or
  // uses a kernel this backend does not implement (naming the call).
  virtual void load(const plan::Plan& plan) = 0;
  // One inference. inputs/outputs follow plan.inputs/plan.outputs order, allocated by the caller.
  // runtime::Session is the one place that checks a caller's inputs (names, dtypes, shapes);
  // backends assert the precondition with RunSignature::check (the same message), nothing more.
  virtual void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) = 0;
  // Per-call timing of the following runs (for `opvision bench`). Backends that cannot time
  // individual calls leave call_times_ms() empty.
  virtual void set_profiling(bool on) { (void)on; }
  // Milliseconds per plan call of the most recent run, in plan.calls order.
  virtual std::vector<double> call_times_ms() const { return {}; }
};

// The tensors a plan's run binds, as the plan declares them, in plan.inputs / plan.outputs order.
// check_bound() is the one input/output check: runtime::Session reports a caller's wrong input with
// it, and every backend's run() asserts its precondition with check(), so a wrong tensor gets the
// same message whichever way it arrives.
struct RunSignature {
  std::vector<plan::Buffer> inputs, outputs;

  static RunSignature of(const plan::Plan& plan);
  // Throws opv::Error unless the counts match and every tensor passes check_bound().
  void check(const std::vector<const Tensor*>& ins, const std::vector<Tensor*>& outs) const;
};
// Throws opv::Error "<role> '<name>' must be f32[1,3,8,8], got f32[1,3,8,9] (the shape differs)"
// unless `t` is non-null with the buffer's dtype and shape. role: "input" or "output".
void check_bound(const plan::Buffer& spec, const Tensor* t, const char* role);

// The bound a run of `plan` on `b` is checked against: the backend's own tolerance, loosened to
// the fp16 bound (1e-2) when the model itself computes in fp16 (plan.meta "precision" = "f16"),
// since then even the reference output carries fp16 rounding.
Tolerance tolerance_for(const Backend& b, const plan::Plan& plan);

// Backend names known to this build ("reference", "cpu", ...).
std::vector<std::string> available();
// Creates a backend by name; throws opv::Error listing the available ones on an unknown name.
std::unique_ptr<Backend> create(const std::string& name, const Options& opts = {});

}  // namespace opv::backend
