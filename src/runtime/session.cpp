#include "runtime/session.h"

#include <random>

#include "core/error.h"
#include "plan/artifact.h"

namespace opv::runtime {

Session::Session(plan::Plan plan, const backend::Options& opts) : plan_(std::move(plan)) {
  backend_ = backend::create(plan_.target, opts);
  // Ask before loading (the backend's caps query): a plan the backend cannot run is refused with
  // its reason, naming the buffer or call, before anything is built or allocated.
  backend::require_support(*backend_, plan_);
  backend_->load(plan_);
  sig_ = backend::RunSignature::of(plan_);
  for (const plan::Buffer& b : sig_.outputs) outputs_.emplace_back(b.name, Tensor(b.dtype, b.shape));
}

Session Session::open(const std::string& artifact_path, const backend::Options& opts) {
  return Session(plan::load_artifact(artifact_path), opts);
}

std::vector<std::pair<std::string, const plan::Buffer*>> Session::input_specs() const {
  std::vector<std::pair<std::string, const plan::Buffer*>> r;
  for (int b : plan_.inputs) r.push_back({plan_.buffers[b].name, &plan_.buffers[b]});
  return r;
}

std::vector<std::pair<std::string, const plan::Buffer*>> Session::output_specs() const {
  std::vector<std::pair<std::string, const plan::Buffer*>> r;
  for (int b : plan_.outputs) r.push_back({plan_.buffers[b].name, &plan_.buffers[b]});
  return r;
}

const plan::Buffer& Session::output_spec(const std::string& name) const {
  for (const plan::Buffer& b : sig_.outputs)
    if (b.name == name) return b;
  fail_argument("unknown output '", name, "' (model outputs: ", describe(sig_.outputs), ")");
}

std::string Session::describe(const std::vector<plan::Buffer>& specs) {
  std::string r;
  for (const plan::Buffer& b : specs) r += (r.empty() ? "" : ", ") + b.name + ":" + dtype_name(b.dtype) + shape_str(b.shape);
  return r;
}

void Session::bind_inputs(const NamedTensors& inputs) {
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const plan::Buffer& b : sig_.inputs) known |= b.name == name;
    if (!known) fail_argument("unknown input '", name, "' (model inputs: ", describe(sig_.inputs), ")");
  }
  in_ptrs_.clear();
  for (const plan::Buffer& b : sig_.inputs) {
    const Tensor* found = nullptr;
    for (const auto& [n, t] : inputs)
      if (n == b.name) found = &t;
    if (found == nullptr) fail_argument("missing input '", b.name, "' (model inputs: ", describe(sig_.inputs), ")");
    backend::check_bound(b, found, "input");
    in_ptrs_.push_back(found);
  }
}

const NamedTensors& Session::run(const NamedTensors& inputs) {
  bind_inputs(inputs);
  bind_outputs({});
  backend_->run(in_ptrs_, out_ptrs_);
  return outputs_;
}

void Session::run_into(const NamedTensors& inputs, const NamedOutputs& outputs) {
  bind_inputs(inputs);
  bind_outputs(outputs);
  backend_->run(in_ptrs_, out_ptrs_);
}

void Session::bind_outputs(const NamedOutputs& outputs) {
  out_ptrs_.clear();
  for (auto& o : outputs_) out_ptrs_.push_back(&o.second);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [name, t] = outputs[i];
    const size_t k = size_t(&output_spec(name) - sig_.outputs.data());
    for (size_t j = 0; j < i; ++j)
      if (outputs[j].first == name) fail_argument("output '", name, "' is given twice");
    backend::check_bound(sig_.outputs[k], t, "output");
    out_ptrs_[k] = t;
  }
}

std::vector<std::pair<std::string, uint64_t>> Session::device_inputs() const {
  std::vector<std::pair<std::string, uint64_t>> r;
  size_t i = 0;
  for (const auto& [name, buf] : input_specs()) r.emplace_back(name, backend_->input_device(i++));
  return r;
}

const NamedTensors& Session::run_device_inputs() {
  run_device_inputs_into({});
  return outputs_;
}

void Session::run_device_inputs_into(const NamedOutputs& outputs) {
  bind_outputs(outputs);
  backend_->run_device_inputs(out_ptrs_);
}

NamedTensors Session::random_inputs(uint64_t seed) const {
  NamedTensors r;
  std::mt19937_64 rng(seed);
  for (const auto& [name, buf] : input_specs()) {
    Tensor t(buf->dtype, buf->shape);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v;
      switch (buf->dtype) {
        case DType::U8: v = double(rng() % 256); break;
        case DType::Bool: v = double(rng() % 2); break;
        case DType::I8:
        case DType::I32:
        case DType::I64: v = double(rng() % 10); break;
        default: v = normal(rng); break;
      }
      t.set_f64(i, v);
    }
    r.emplace_back(name, std::move(t));
  }
  return r;
}

NamedTensors Session::staged_inputs() {
  NamedTensors r;
  size_t i = 0;
  for (const auto& [name, buf] : input_specs()) {
    void* at = backend_->input_staging(i++);
    r.emplace_back(name, at ? Tensor::view(buf->dtype, buf->shape, at) : Tensor(buf->dtype, buf->shape));
  }
  return r;
}

}  // namespace opv::runtime
