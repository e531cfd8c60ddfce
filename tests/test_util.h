// Shared helpers for the C++ unit tests.
#pragma once
#include <functional>
#include <random>
#include <string>

#include "backend/backend.h"
#include "core/tensor.h"
#include "plan/plan.h"

namespace opv::test {

// Uniform random floats in [lo, hi), deterministic in seed.
Tensor random_f32(const Shape& shape, uint64_t seed, float lo = -1.f, float hi = 1.f);
// Path of the shared fixtures folder (../shared/models beside the repo) or "" when absent.
std::string shared_models_dir();
// The message of the opv::Error that f throws, or "" when it throws none.
std::string error_of(const std::function<void()>& f);
// Sample k of t along its leading (batch) dimension, as a tensor with leading dimension 1.
// Throws opv::Error when t has no leading dimension or k is outside it.
Tensor sample(const Tensor& t, int64_t k);
// A fresh temporary directory for this test.
std::string temp_dir();
// Loads a memory-planned plan on backend `be` and runs it once with random f32 inputs (input i
// from seed + i); returns its outputs.
std::vector<Tensor> run_on(backend::Backend& be, const plan::Plan& p, uint64_t seed);
// run_on the reference backend.
std::vector<Tensor> run_on_reference(const plan::Plan& p, uint64_t seed);

}  // namespace opv::test
