// runtime::Session — loads an artifact (or takes a plan), creates its backend, checks inputs
// by name, dtype and shape (the one place that does: the tools and backends rely on it), and
// runs. Depends on plan + backends only (no ONNX).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "plan/plan.h"

namespace opv::runtime {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
// Output tensors the caller owns, by name (Session::run_into).
using NamedOutputs = std::vector<std::pair<std::string, Tensor*>>;

class Session {
 public:
  // Creates the plan's backend, asks it whether it supports the plan (backend::require_support:
  // opv::Error "<backend> backend: <why>" if not), then loads it.
  Session(plan::Plan plan, const backend::Options& opts = {});
  static Session open(const std::string& artifact_path, const backend::Options& opts = {});

  const plan::Plan& plan() const { return plan_; }
  backend::Backend& backend() { return *backend_; }
  // Input/output names with dtype and shape, in model order.
  std::vector<std::pair<std::string, const plan::Buffer*>> input_specs() const;
  std::vector<std::pair<std::string, const plan::Buffer*>> output_specs() const;
  // The output named `name`; opv::InvalidArgument listing the model's outputs when none is.
  const plan::Buffer& output_spec(const std::string& name) const;

  // Runs with inputs matched by name. Missing/extra names, wrong dtype or shape: opv::Error
  // (backend::check_bound's message). Returns the session's own output tensors, in model order,
  // allocated once and overwritten by the next run(): the reference is valid until then (or the
  // session's end). To keep outputs across runs, copy them: `NamedTensors kept = s.run(in);`.
  const NamedTensors& run(const NamedTensors& inputs);
  // Like run(), but each output named in `outputs` is written into the caller's tensor (typically
  // a Tensor::view of the caller's memory; checked like the inputs, role "output") instead of
  // the session's own; outputs not named there go to the session's own tensors. Unknown or
  // repeated names: opv::InvalidArgument. The inputs are read where they are (views included;
  // note that copying a NamedTensors, e.g. from an initializer list, copies view bytes).
  void run_into(const NamedTensors& inputs, const NamedOutputs& outputs);
  // Random inputs for every model input, deterministic in `seed` (uint8: 0..255, floats: N(0,1),
  // bool: 0/1, ints: 0..9).
  NamedTensors random_inputs(uint64_t seed) const;
  // One tensor per model input, in model order, for a caller that writes its inputs in place:
  // views of the memory the backend reads them from (backend::Backend::input_staging: the cuda
  // backend's pinned staging), so a run() with them copies nothing on the host; zero-filled
  // tensors of their own for inputs the backend has no such memory for. The views stay valid for
  // the session's life; pass this NamedTensors itself to run() (copying it copies view bytes).
  NamedTensors staged_inputs();
  // Inputs the backend keeps in device memory between runs (backend::Backend::input_device: the
  // cuda backend under --cuda-inputs device), in model order: each input's device address, 0
  // where it has none. A caller that writes its frames there on the GPU itself (in the device's
  // primary context, finished before the run) then runs with run_device_inputs().
  std::vector<std::pair<std::string, uint64_t>> device_inputs() const;
  // One inference on the inputs as they are in device memory (the last run's, or what the caller
  // wrote at device_inputs()); outputs as run()'s. opv::Error where an input is not kept there.
  const NamedTensors& run_device_inputs();
  // run_device_inputs() writing the outputs named in `outputs` into the caller's tensors, as run_into.
  void run_device_inputs_into(const NamedOutputs& outputs);

 private:
  // "x:f32[1,3,8,8], ..." for messages: the model's inputs or outputs.
  static std::string describe(const std::vector<plan::Buffer>& specs);
  void bind_inputs(const NamedTensors& inputs);  // checks them and fills in_ptrs_
  void bind_outputs(const NamedOutputs& outputs);  // run_into's check; fills out_ptrs_

  plan::Plan plan_;
  std::unique_ptr<backend::Backend> backend_;
  backend::RunSignature sig_;
  NamedTensors outputs_;                // reused by every run
  std::vector<const Tensor*> in_ptrs_;  // per run, in plan order (capacity kept)
  std::vector<Tensor*> out_ptrs_;
};

}  // namespace opv::runtime
