// `opvision ir3 replay CAPTURE`: runs a captured a630 model (tools/ir3_capture.py) kernel by
// kernel on the IR3 simulator -- a simulated Adreno 630 for correctness, not a timing model.
// Inputs come from an .npz (by name) or are random (--seed); weights are read from the ONNX
// model the capture was made from (--model, default: the capture's model file name next to the
// capture or in its parent folder). With --ref REF.npz the outputs are compared by name and
// the line `rel_l2=<x> max_abs_rel=<y>` is printed; exit 1 outside --tol.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <cstring>
#include <random>

#include "core/metrics.h"
#include "import/onnx_initializers.h"
#include "ir3/capture.h"
#include "ir3/replay.h"
#include "tools/common.h"
#include "tools/npy.h"

namespace opv::tools {

namespace {

namespace fs = std::filesystem;

DType dtype_of(const std::string& d) {
  if (d == "uint8") return DType::U8;
  if (d == "float16") return DType::F16;
  return DType::F32;
}

std::string find_model(const ir3::Capture& c, const Args& a) {
  if (a.has("--model")) return a.get("--model");
  for (const fs::path& p : {fs::path(c.dir) / c.model_file, fs::path(c.dir) / ".." / c.model_file})
    if (fs::is_regular_file(p)) return p.string();
  fail("ir3 replay: cannot find the capture's model '", c.model_file, "'; give it with --model");
}

}  // namespace

int cmd_ir3_replay(int argc, char** argv) {
  ArgParser p("opvision ir3 replay",
              "Runs a captured Adreno 630 model (tools/ir3_capture.py) kernel by kernel on the IR3 simulator: a "
              "simulated a630 (functional, not timed). Writes the outputs; with --ref compares them and prints "
              "'rel_l2=<x> max_abs_rel=<y>' (exit 0 within --tol, 1 outside, 2 on errors).",
              "CAPTURE_DIR [--inputs IN.npz | --seed S] [-o OUT.npz] [--ref REF.npz]");
  p.positional("CAPTURE_DIR", "a capture directory (capture.json, kernels/, data.bin)")
      .option("--inputs", "IN.npz", "model inputs by name (uint8 NCHW as the ONNX model takes them)")
      .option("--seed", "S", "random uint8 inputs from this seed when --inputs is absent", "0")
      .option("--model", "MODEL.onnx", "the ONNX model the capture was made from (weights); default: found by name")
      .option("--output", "OUT.npz", "write the outputs here", "", "-o")
      .option("--ref", "REF.npz", "reference outputs by name (e.g. onnxruntime's)")
      .option("--tol", "X", "tolerance for rel_l2 and max_abs_rel (fp16 models: 1e-2, DESIGN.md)", "1e-2")
      .flag("--quiet", "no progress lines on stderr");
  Args a;
  if (!parse_or_help(p, argc, argv, a)) return kExitOk;
  ir3::Capture cap = ir3::Capture::load(a.positionals[0]);
  std::string model = find_model(cap, a);
  std::map<std::string, Tensor> inits = read_onnx_initializers(model);
  bool quiet = a.has("--quiet");

  ir3::ReplayOptions opts;
  opts.initializer = [&](const std::string& name) {
    auto it = inits.find(name);
    OPV_CHECK(it != inits.end(), "ir3 replay: model '", model, "' has no initializer '", name, "'");
    const auto* b = static_cast<const uint8_t*>(it->second.raw());
    return std::vector<uint8_t>(b, b + it->second.nbytes());
  };
  auto t0 = std::chrono::steady_clock::now();
  opts.progress = [&](size_t i, size_t n, const std::string& k) {
    if (quiet) return;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "\r[ir3 replay] launch %zu/%zu %-40s %.1f s", i, n, k.c_str(), s);
    if (i == n) std::fprintf(stderr, "\n");
  };
  if (!quiet) std::fprintf(stderr, "[ir3 replay] %zu kernels, %zu setup steps, %zu launches per inference (simulated a630)\n",
                           cap.kernels.size(), cap.setup.size(), cap.schedule.size());
  ir3::Replayer rep(cap, opts);

  std::map<std::string, std::vector<uint8_t>> feed;
  NamedArrays in_arrays;
  if (a.has("--inputs")) {
    NamedArrays npz = read_npz(a.get("--inputs"));
    for (const ir3::CaptureTensor& t : cap.inputs) {
      auto it = std::find_if(npz.begin(), npz.end(), [&](const auto& e) { return e.first == t.name; });
      OPV_CHECK(it != npz.end(), a.get("--inputs"), ": no entry for input '", t.name, "'");
      OPV_CHECK(it->second.dtype() == dtype_of(t.dtype) && it->second.nbytes() == t.bytes(), a.get("--inputs"), ": entry '",
                t.name, "' must be ", t.dtype, " with ", t.bytes(), " bytes");
      const auto* b = static_cast<const uint8_t*>(it->second.raw());
      feed[t.name].assign(b, b + t.bytes());
    }
  } else {
    std::mt19937_64 rng(static_cast<uint64_t>(a.get_int("--seed", 0, 0, INT64_MAX)));
    for (const ir3::CaptureTensor& t : cap.inputs) {
      OPV_CHECK(t.dtype == "uint8", "ir3 replay: random inputs are uint8 only; give --inputs for '", t.name, "'");
      Tensor x(DType::U8, Shape(t.shape.begin(), t.shape.end()));
      auto* b = static_cast<uint8_t*>(x.raw());
      for (size_t i = 0; i < x.nbytes(); ++i) b[i] = static_cast<uint8_t>(rng() & 0xff);
      feed[t.name].assign(b, b + x.nbytes());
      in_arrays.emplace_back(t.name, std::move(x));
    }
  }
  std::vector<std::vector<uint8_t>> outs = rep.run(feed);
  const ir3::ReplayStats& st = rep.stats();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!quiet)
    std::fprintf(stderr, "[ir3 replay] %llu launches, %llu wave instructions, %llu fiber instructions in %.1f s\n",
                 (unsigned long long)st.launches, (unsigned long long)st.instructions,
                 (unsigned long long)st.fiber_instructions, secs);
  NamedArrays out_arrays;
  for (size_t i = 0; i < cap.outputs.size(); ++i) {
    const ir3::CaptureTensor& t = cap.outputs[i];
    Tensor x(dtype_of(t.dtype), Shape(t.shape.begin(), t.shape.end()));
    std::memcpy(x.raw(), outs[i].data(), x.nbytes());
    out_arrays.emplace_back(t.name, std::move(x));
  }
  if (a.has("--output")) {
    NamedArrays all = in_arrays;
    for (auto& e : out_arrays) all.push_back(e);
    write_npz(a.get("--output"), all);
  }
  if (!a.has("--ref")) return kExitOk;
  NamedArrays ref = read_npz(a.get("--ref"));
  double tol = a.get_double("--tol", 1e-2), worst_l2 = 0, worst_abs = 0;
  bool ok = true;
  for (const auto& [name, out] : out_arrays) {
    auto it = std::find_if(ref.begin(), ref.end(), [&](const auto& e) { return e.first == name; });
    OPV_CHECK(it != ref.end(), a.get("--ref"), ": no entry for output '", name, "'");
    ErrorMetrics m = compare(out, it->second);
    ok &= m.finite && m.ref_nonfinite == 0;
    worst_l2 = std::max(worst_l2, std::isnan(m.rel_l2) ? INFINITY : m.rel_l2);
    worst_abs = std::max(worst_abs, std::isnan(m.max_abs_rel) ? INFINITY : m.max_abs_rel);
  }
  std::printf("rel_l2=%.3e max_abs_rel=%.3e\n", worst_l2, worst_abs);
  ok &= worst_l2 <= tol && worst_abs <= tol;
  return ok ? kExitOk : kExitCheckFailed;
}

}  // namespace opv::tools
