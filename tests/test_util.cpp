#include "test_util.h"

#include <unistd.h>

#include <filesystem>

namespace opv::test {

Tensor random_f32(const Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor t(DType::F32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

std::string shared_models_dir() {
  namespace fs = std::filesystem;
  fs::path p = fs::path(OPV_SOURCE_DIR) / ".." / "shared" / "models";
  return fs::exists(p / "opvision_t12_fp16.onnx") ? fs::canonical(p).string() : "";
}

std::string temp_dir() {
  namespace fs = std::filesystem;
  static int counter = 0;
  fs::path p = fs::temp_directory_path() / ("opv_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  fs::create_directories(p);
  return p.string();
}

}  // namespace opv::test
