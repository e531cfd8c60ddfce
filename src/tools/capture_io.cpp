// Capture inputs, outputs, weights and reference comparison (see capture_io.h).
#include "tools/capture_io.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/error.h"
#include "core/metrics.h"
#include "import/onnx_initializers.h"

namespace opv::tools {

namespace {

namespace fs = std::filesystem;

DType dtype_of(const std::string& d) {
  if (d == "uint8") return DType::U8;
  if (d == "float16") return DType::F16;
  return DType::F32;
}

}  // namespace

std::string capture_model_path(const ir3::Capture& c, const Args& a, const char* who) {
  if (a.has("--model")) return a.get("--model");
  for (const fs::path& p : {fs::path(c.dir) / c.model_file, fs::path(c.dir) / ".." / c.model_file})
    if (fs::is_regular_file(p)) return p.string();
  fail(who, ": cannot find the capture's model '", c.model_file, "'; give it with --model");
}

std::function<std::vector<uint8_t>(const std::string&)> initializer_reader(const std::string& model, const char* who) {
  auto inits = std::make_shared<std::map<std::string, Tensor>>(read_onnx_initializers(model));
  std::string w = who;
  return [inits, model, w](const std::string& name) {
    auto it = inits->find(name);
    OPV_CHECK(it != inits->end(), w, ": model '", model, "' has no initializer '", name, "'");
    const auto* b = static_cast<const uint8_t*>(it->second.raw());
    return std::vector<uint8_t>(b, b + it->second.nbytes());
  };
}

CaptureFeed capture_inputs_from(const ir3::Capture& c, const std::string& npz_path) {
  CaptureFeed f;
  NamedArrays npz = read_npz(npz_path);
  for (const ir3::CaptureTensor& t : c.inputs) {
    auto it = std::find_if(npz.begin(), npz.end(), [&](const auto& e) { return e.first == t.name; });
    OPV_CHECK(it != npz.end(), npz_path, ": no entry for input '", t.name, "'");
    OPV_CHECK(it->second.dtype() == dtype_of(t.dtype) && it->second.nbytes() == t.bytes(), npz_path, ": entry '", t.name,
              "' must be ", t.dtype, " with ", t.bytes(), " bytes");
    const auto* b = static_cast<const uint8_t*>(it->second.raw());
    f.bytes[t.name].assign(b, b + t.bytes());
  }
  return f;
}

CaptureFeed capture_inputs(const ir3::Capture& c, const Args& a, const char* who) {
  if (a.has("--inputs")) return capture_inputs_from(c, a.get("--inputs"));
  CaptureFeed f;
  std::mt19937_64 rng(static_cast<uint64_t>(a.get_int("--seed", 0, 0, INT64_MAX)));
  for (const ir3::CaptureTensor& t : c.inputs) {
    OPV_CHECK(t.dtype == "uint8", who, ": random inputs are uint8 only; give --inputs for '", t.name, "'");
    Tensor x(DType::U8, Shape(t.shape.begin(), t.shape.end()));
    auto* b = static_cast<uint8_t*>(x.raw());
    for (size_t i = 0; i < x.nbytes(); ++i) b[i] = static_cast<uint8_t>(rng() & 0xff);
    f.bytes[t.name].assign(b, b + x.nbytes());
    f.arrays.emplace_back(t.name, std::move(x));
  }
  return f;
}

NamedArrays capture_outputs(const ir3::Capture& c, const std::vector<std::vector<uint8_t>>& outs) {
  NamedArrays out;
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    const ir3::CaptureTensor& t = c.outputs[i];
    Tensor x(dtype_of(t.dtype), Shape(t.shape.begin(), t.shape.end()));
    OPV_CHECK(outs.at(i).size() == x.nbytes(), "capture output '", t.name, "' has ", outs[i].size(), " bytes, expected ",
              x.nbytes());
    std::memcpy(x.raw(), outs[i].data(), x.nbytes());
    out.emplace_back(t.name, std::move(x));
  }
  return out;
}

bool compare_with_reference(const NamedArrays& outs, const std::string& ref_path, double tol) {
  NamedArrays ref = read_npz(ref_path);
  double worst_l2 = 0, worst_abs = 0;
  bool ok = true;
  for (const auto& [name, out] : outs) {
    auto it = std::find_if(ref.begin(), ref.end(), [&name = name](const auto& e) { return e.first == name; });
    OPV_CHECK(it != ref.end(), ref_path, ": no entry for output '", name, "'");
    ErrorMetrics m = compare(out, it->second);
    ok &= m.finite && m.ref_nonfinite == 0;
    worst_l2 = std::max(worst_l2, std::isnan(m.rel_l2) ? INFINITY : m.rel_l2);
    worst_abs = std::max(worst_abs, std::isnan(m.max_abs_rel) ? INFINITY : m.max_abs_rel);
  }
  std::printf("rel_l2=%.3e max_abs_rel=%.3e\n", worst_l2, worst_abs);
  return ok && worst_l2 <= tol && worst_abs <= tol;
}

}  // namespace opv::tools
