#include "test_util.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "backend/reference/reference_backend.h"
#include "core/error.h"

namespace opv::test {

Tensor random_f32(const Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor t(DType::F32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

Tensor sample(const Tensor& t, int64_t k) {
  Shape s = t.shape();
  OPV_CHECK(!s.empty() && s[0] > 0, "sample: tensor of shape ", shape_str(s), " has no leading dimension to index");
  const int64_t n = s[0];
  OPV_CHECK(k >= 0 && k < n, "sample: index ", k, " outside the leading dimension ", n);
  s[0] = 1;
  Tensor r(t.dtype(), s);
  const size_t bytes = t.nbytes() / size_t(n);
  std::memcpy(r.raw(), static_cast<const uint8_t*>(t.raw()) + size_t(k) * bytes, bytes);
  return r;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string shared_models_dir() {
  namespace fs = std::filesystem;
  // $OPV_SHARED (bench/device_env.sh sets it to the bundle's copy on the lent GPU machine, where
  // the source tree's ../shared is absent), else the source tree's ../shared.
  if (const char* env = std::getenv("OPV_SHARED"); env && *env) {
    const fs::path e = fs::path(env) / "models";
    if (fs::exists(e / "opvision_t12_fp16.onnx")) return fs::canonical(e).string();
  }
  fs::path p = fs::path(OPV_SOURCE_DIR) / ".." / "shared" / "models";
  return fs::exists(p / "opvision_t12_fp16.onnx") ? fs::canonical(p).string() : "";
}

std::string temp_dir() {
  // mkdtemp gives a new, empty directory every time: a name built from the pid alone could meet a
  // directory left by an earlier test process that had the same pid (CI runs thousands of them).
  namespace fs = std::filesystem;
  std::string tmpl = (fs::temp_directory_path() / ("opv_test_" + std::to_string(::getpid()) + "_XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw Error("temp_dir: mkdtemp failed for " + tmpl);
  return tmpl;
}

std::vector<Tensor> run_on(backend::Backend& be, const plan::Plan& p, uint64_t seed) {
  be.load(p);
  std::vector<Tensor> ins, outs;
  for (size_t i = 0; i < p.inputs.size(); ++i) ins.push_back(random_f32(p.buffers[size_t(p.inputs[i])].shape, seed + i));
  for (int o : p.outputs) outs.emplace_back(p.buffers[size_t(o)].dtype, p.buffers[size_t(o)].shape);
  std::vector<const Tensor*> ip;
  std::vector<Tensor*> op;
  for (auto& t : ins) ip.push_back(&t);
  for (auto& t : outs) op.push_back(&t);
  be.run(ip, op);
  return outs;
}

std::vector<Tensor> run_on_reference(const plan::Plan& p, uint64_t seed) {
  auto be = backend::make_reference_backend({});
  return run_on(*be, p, seed);
}

}  // namespace opv::test
