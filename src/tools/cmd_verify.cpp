// `opvision verify MODEL --ref REF.npz`: runs MODEL on the npz's inputs, compares every model
// output with the npz entry of the same name and prints exactly one line
// `rel_l2=<x> max_abs_rel=<y>` (worst over outputs). Exit 0 within tolerance, 1 outside, 2 on errors.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/metrics.h"
#include "tools/common.h"
#include "tools/npy.h"
#include "tools/qcom_session.h"

namespace opv::tools {

int cmd_verify(int argc, char** argv) {
  ArgParser p("opvision verify",
              "Runs a model on the inputs stored in a reference .npz and compares each output with the entry of "
              "the same name. Prints one line 'rel_l2=<x> max_abs_rel=<y>' (worst over outputs). Exit status: 0 "
              "within the backend's tolerance, 1 outside it, 2 on errors.",
              "MODEL --ref REF.npz [options]");
  p.positional("MODEL", "an ONNX model (compiled on the fly) or a .opv artifact")
      .option("--ref", "REF.npz", "inputs and reference outputs by name (required)")
      .option("--backend", "B", "backend to run on (.opv: defaults to the artifact's target)", kDefaultBackend)
      .option("--threads", "N", "CPU threads (0 = backend default)", "0")
      .option("--device", "SEL", "OpenCL device: index N, P:D or a name substring (default: the first GPU, else the first device; see 'opvision devices'); --backend qcom: sim or kgsl (default: kgsl when /dev/kgsl-3d0 exists, else the simulated a630)")
      .option("--model", "MODEL.onnx", "--backend qcom: the ONNX model holding the capture's weights (default: found by name next to the capture)");
  backend_flag_options(p);
  Args a;
  if (!parse_or_help(p, argc, argv, a)) return kExitOk;
  if (!a.has("--ref")) throw UsageError("opvision verify: missing --ref REF.npz (see 'opvision verify --help')");

  const std::string ref_path = a.get("--ref");
  if (a.get("--backend", kDefaultBackend) == kQcomBackend) {  // MODEL is a capture directory (fp16 kernels)
    QcomSession qs(a.positionals[0], a, "verify");
    NamedArrays outs = qs.run(capture_inputs_from(qs.capture(), ref_path));
    constexpr double kFp16Tol = 1e-2;  // DESIGN.md: models that compute in fp16
    bool ok = compare_with_reference(outs, ref_path, kFp16Tol);
    std::fprintf(stderr, "[verify] %s on qcom (%s): %s (tolerance rel_l2<=%.1e max_abs_rel<=%.1e)\n",
                 a.positionals[0].c_str(), qs.device_name().c_str(), ok ? "PASS" : "FAIL", kFp16Tol, kFp16Tol);
    return ok ? kExitOk : kExitCheckFailed;
  }
  NamedArrays ref = read_npz(ref_path);
  runtime::Session session(load_model(a.positionals[0], a.get("--backend")), backend_options(a));

  runtime::NamedTensors inputs;
  for (const auto& [name, buf] : session.input_specs()) {
    auto it = std::find_if(ref.begin(), ref.end(), [&](const auto& e) { return e.first == name; });
    OPV_CHECK(it != ref.end(), ref_path, ": no entry for model input '", name, "'");
    inputs.emplace_back(name, it->second);
  }
  const runtime::NamedTensors& outputs = session.run(inputs);

  double worst_l2 = 0, worst_abs = 0;
  bool finite = true, ref_bad = false;
  for (const auto& [name, out] : outputs) {
    auto it = std::find_if(ref.begin(), ref.end(), [&](const auto& e) { return e.first == name; });
    OPV_CHECK(it != ref.end(), ref_path, ": no entry for model output '", name, "'");
    OPV_CHECK(it->second.shape() == out.shape(), ref_path, ": entry '", name, "' has shape ",
              shape_str(it->second.shape()), ", the model output has ", shape_str(out.shape()));
    ErrorMetrics m = compare(out, it->second);
    // A reference with NaN/Inf proves nothing about the model; refuse it rather than skip it.
    if (m.ref_nonfinite > 0) {
      std::fprintf(stderr, "[verify] reference '%s' for output '%s' has %lld non-finite (NaN/Inf) element(s) of %lld\n",
                   ref_path.c_str(), name.c_str(), (long long)m.ref_nonfinite, (long long)it->second.numel());
      ref_bad = true;
    }
    finite &= m.finite && std::isfinite(m.rel_l2) && std::isfinite(m.max_abs_rel);
    worst_l2 = std::max(worst_l2, std::isnan(m.rel_l2) ? INFINITY : m.rel_l2);
    worst_abs = std::max(worst_abs, std::isnan(m.max_abs_rel) ? INFINITY : m.max_abs_rel);
  }
  if (ref_bad) worst_l2 = worst_abs = INFINITY;
  std::printf("rel_l2=%.3e max_abs_rel=%.3e\n", worst_l2, worst_abs);
  backend::Tolerance tol = backend::tolerance_for(session.backend(), session.plan());
  bool ok = finite && !ref_bad && worst_l2 <= tol.rel_l2 && worst_abs <= tol.max_abs_rel;
  std::fprintf(stderr, "[verify] %s on %s: %s (tolerance rel_l2<=%.1e max_abs_rel<=%.1e%s)\n",
               a.positionals[0].c_str(), session.plan().target.c_str(), ok ? "PASS" : "FAIL", tol.rel_l2,
               tol.max_abs_rel,
               ref_bad ? ", non-finite reference" : finite ? "" : ", non-finite values differ from the reference");
  return ok ? kExitOk : kExitCheckFailed;
}

}  // namespace opv::tools
