#include "runtime/session.h"

#include <random>

#include "core/error.h"
#include "plan/artifact.h"

namespace opv::runtime {

Session::Session(plan::Plan plan, const backend::Options& opts) : plan_(std::move(plan)) {
  backend_ = backend::create(plan_.target, opts);
  backend_->load(plan_);
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

NamedTensors Session::run(const NamedTensors& inputs) {
  std::vector<const Tensor*> ins;
  std::string expected;
  for (const auto& [name, buf] : input_specs())
    expected += (expected.empty() ? "" : ", ") + name + ":" + dtype_name(buf->dtype) + shape_str(buf->shape);
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const auto& spec : input_specs()) known |= spec.first == name;
    OPV_CHECK(known, "unknown input '", name, "' (model inputs: ", expected, ")");
  }
  for (const auto& [name, buf] : input_specs()) {
    const Tensor* found = nullptr;
    for (const auto& [n, t] : inputs)
      if (n == name) found = &t;
    OPV_CHECK(found != nullptr, "missing input '", name, "' (model inputs: ", expected, ")");
    OPV_CHECK(found->dtype() == buf->dtype, "input '", name, "' has dtype ", dtype_name(found->dtype()),
              ", the model expects ", dtype_name(buf->dtype));
    OPV_CHECK(found->shape() == buf->shape, "input '", name, "' has shape ", shape_str(found->shape()),
              ", the model expects ", shape_str(buf->shape));
    ins.push_back(found);
  }
  NamedTensors outs;
  for (const auto& [name, buf] : output_specs()) outs.emplace_back(name, Tensor(buf->dtype, buf->shape));
  std::vector<Tensor*> out_ptrs;
  for (auto& o : outs) out_ptrs.push_back(&o.second);
  backend_->run(ins, out_ptrs);
  return outs;
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

}  // namespace opv::runtime
