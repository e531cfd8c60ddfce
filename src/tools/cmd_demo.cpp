// `opvision demo [MODEL.onnx]`: the whole pipeline with every check of DESIGN.md, in one go.
// 1. Without MODEL, generate the default openpilot-architecture model into WORKDIR.
// 2. Compile for the backend; save the .opv; reload it; the reloaded plan re-serialises to the
//    same bytes.
// 3. Run the compiled plan and the reloaded artifact on seeded random inputs: bit-identical.
// 4. Compile for the reference backend and compare (rel_l2, max_abs_rel against the backend's
//    tolerance); the inputs and reference outputs are written to WORKDIR/ref.npz for `verify`.
// 5. Two more runs are bit-identical to the first; other inputs give other outputs.
// 6. Benchmark (median/min/p90 ms).
// Progress on stderr per phase; exit 0 exactly when every check passes.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "compiler/compile.h"
#include "core/metrics.h"
#include "plan/artifact.h"
#include "tools/common.h"
#include "tools/make_model.h"
#include "tools/npy.h"

namespace opv::tools {

namespace {

constexpr const char* kPhase = "demo";
constexpr const char* kReferenceBackend = "reference";
constexpr int64_t kDemoWarmup = 3;

bool all_bit_equal(const runtime::NamedTensors& a, const runtime::NamedTensors& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || !bit_equal(a[i].second, b[i].second)) return false;
  return true;
}

std::string make_workdir(const std::string& given) {
  namespace fs = std::filesystem;
  if (!given.empty()) {
    std::error_code ec;
    fs::create_directories(given, ec);
    OPV_CHECK(!ec && fs::is_directory(given), "cannot create work directory '", given, "': ", ec.message());
    return given;
  }
  std::string templ = (fs::temp_directory_path() / "opvision-demo-XXXXXX").string();
  OPV_CHECK(::mkdtemp(templ.data()) != nullptr, "cannot create a temporary work directory from '", templ, "'");
  return templ;
}

struct Checks {
  int passed = 0, failed = 0;
  void record(const std::string& name, bool ok, const std::string& detail) {
    (ok ? passed : failed) += 1;
    progress(kPhase, fmt("%-12s %s  %s", name.c_str(), ok ? "PASS" : "FAIL", detail.c_str()));
  }
};

}  // namespace

int cmd_demo(int argc, char** argv) {
  ArgParser p("opvision demo",
              "Without MODEL, generates the default openpilot-architecture model; then compiles it for the backend, "
              "saves and reloads the .opv, runs it on seeded random inputs, verifies against the reference backend, "
              "checks determinism and input sensitivity, and benchmarks. Exit status 0 exactly when every check "
              "passes.",
              "[MODEL.onnx] [options]");
  p.positional("MODEL.onnx", "model to use instead of the generated one", false)
      .option("--backend", "B", "backend to compile for and run on", kDefaultBackend)
      .option("--threads", "N", "CPU threads (0 = backend default)", "0")
      .option("--device", "SEL", "OpenCL device: index N, P:D or a name substring (default: the first GPU, else the first device; see 'opvision devices')")
      .option("--iters", "N", "timed benchmark runs", "20")
      .option("--seed", "S", "seed of the random inputs", "0")
      .option("--workdir", "DIR", "where model.onnx, model.opv and ref.npz go", "a fresh temporary directory");
  backend_flag_options(p);
  Args a;
  if (!parse_or_help(p, argc, argv, a)) return kExitOk;
  const std::string backend_name = a.get("--backend", kDefaultBackend);
  const int64_t iters = a.get_int("--iters", 20, 1, kMaxIters);
  const uint64_t seed = uint64_t(a.get_int("--seed", 0));
  const backend::Options bopts = backend_options(a);
  const std::string workdir = make_workdir(a.get("--workdir"));
  progress(kPhase, "work directory " + workdir);

  // 1. Model.
  std::string model;
  if (!a.positionals.empty()) {
    model = a.positionals[0];
    OPV_CHECK(!is_artifact_path(model), "demo needs an ONNX model (it compiles it twice), got artifact '", model, "'");
  } else {
    model = workdir + "/model.onnx";
    double t0 = now_ms();
    make_model(MakeModelOptions{}, model);
    progress(kPhase, fmt("generated the default model %s (%.0f ms)", model.c_str(), now_ms() - t0));
  }

  // 2. Compile, save, reload.
  Checks checks;
  CompileOptions copts;
  copts.target = backend_name;
  double t0 = now_ms();
  plan::Plan plan = compile_onnx(model, copts);
  progress(kPhase, fmt("compiled for %s: %zu calls, %zu kernels, weights %zu B, arena %lld B (%.0f ms)",
                       backend_name.c_str(), plan.calls.size(), plan.kernels.size(), plan.weights.size(),
                       (long long)plan.arena_bytes, now_ms() - t0));
  const std::string artifact = workdir + "/model.opv";
  plan::save_artifact(plan, artifact);
  plan::Plan reloaded = plan::load_artifact(artifact);
  {
    const std::vector<uint8_t> saved = plan::serialize(plan);
    checks.record("artifact", plan::serialize(reloaded) == saved,
                  fmt("saved and reloaded %s (%zu bytes), re-serialises identically", artifact.c_str(), saved.size()));
  }

  // 3. Capture run (compiled plan) vs reloaded artifact.
  runtime::Session capture(std::move(plan), bopts);
  runtime::Session session(std::move(reloaded), bopts);
  runtime::NamedTensors inputs = session.random_inputs(seed);
  runtime::NamedTensors out0 = capture.run(inputs);
  runtime::NamedTensors out1 = session.run(inputs);
  checks.record("reload", all_bit_equal(out0, out1),
                "reloaded artifact output is bit-identical to the compiled plan's");

  // 4. Agreement with the reference backend.
  {
    runtime::NamedTensors ref_out;
    if (backend_name == kReferenceBackend) {
      ref_out = out1;
      progress(kPhase, "the backend is the reference itself; agreement is trivial");
    } else {
      CompileOptions ropts;
      ropts.target = kReferenceBackend;
      double r0 = now_ms();
      runtime::Session ref(compile_onnx(model, ropts));
      ref_out = ref.run(inputs);
      progress(kPhase, fmt("reference run done (%.0f ms incl. compile)", now_ms() - r0));
    }
    double worst_l2 = 0, worst_abs = 0;
    bool finite = true;
    for (size_t i = 0; i < out1.size(); ++i) {
      ErrorMetrics m = compare(out1[i].second, ref_out[i].second);
      finite &= m.finite && std::isfinite(m.rel_l2) && std::isfinite(m.max_abs_rel);
      worst_l2 = std::max(worst_l2, m.rel_l2);
      worst_abs = std::max(worst_abs, m.max_abs_rel);
    }
    backend::Tolerance tol = backend::tolerance_for(session.backend(), session.plan());
    bool ok = finite && worst_l2 <= tol.rel_l2 && worst_abs <= tol.max_abs_rel;
    std::printf("rel_l2=%.3e max_abs_rel=%.3e %s\n", worst_l2, worst_abs, ok ? "PASS" : "FAIL");
    checks.record("reference", ok,
                  fmt("rel_l2=%.3e max_abs_rel=%.3e (tolerance %.1e / %.1e%s)", worst_l2, worst_abs, tol.rel_l2,
                      tol.max_abs_rel, finite ? "" : ", non-finite values"));
    NamedArrays ref_file;
    for (const auto& e : inputs) ref_file.push_back(e);
    for (const auto& e : ref_out) ref_file.push_back(e);
    write_npz(workdir + "/ref.npz", ref_file);
  }

  // 5. Determinism and input sensitivity.
  runtime::NamedTensors out2 = session.run(inputs);
  runtime::NamedTensors out3 = session.run(inputs);
  checks.record("determinism", all_bit_equal(out1, out2) && all_bit_equal(out1, out3),
                "two more runs are bit-identical");
  runtime::NamedTensors other = session.run(session.random_inputs(seed + 1));
  bool all_changed = true;
  for (size_t i = 0; i < other.size(); ++i) all_changed &= !bit_equal(other[i].second, out1[i].second);
  checks.record("sensitivity", all_changed, "every output changes when the inputs change");

  // 6. Benchmark.
  for (int64_t i = 0; i < kDemoWarmup; ++i) session.run(inputs);
  std::vector<double> times;
  for (int64_t i = 0; i < iters; ++i) {
    double b0 = now_ms();
    session.run(inputs);
    times.push_back(now_ms() - b0);
  }
  LatencyStats st = latency_stats(times);
  std::printf("latency %s: median %.3f ms  min %.3f ms  p90 %.3f ms  (%lld runs)\n", backend_name.c_str(),
              st.median_ms, st.min_ms, st.p90_ms, (long long)iters);

  bool ok = checks.failed == 0;
  progress(kPhase, fmt("%d/%d checks passed: %s  (verify again with: opvision verify %s --ref %s/ref.npz)",
                       checks.passed, checks.passed + checks.failed, ok ? "PASS" : "FAIL", artifact.c_str(),
                       workdir.c_str()));
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? kExitOk : kExitCheckFailed;
}

}  // namespace opv::tools
