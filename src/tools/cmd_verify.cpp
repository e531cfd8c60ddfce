// `opvision verify MODEL --ref REF.npz`: runs MODEL on the npz's inputs, compares every model
// output with the npz entry of the same name and prints exactly one line
// `rel_l2=<x> max_abs_rel=<y>` (worst over outputs). Exit 0 within tolerance, 1 outside, 2 on errors.
// A batch-N model (compile --batch N) takes a batch-N reference as is, or a batch-1 reference:
// then every sample slot is checked against it, with different inputs in the neighbouring slots.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/metrics.h"
#include "tools/common.h"
#include "tools/npy.h"
#include "tools/qcom_session.h"

namespace opv::tools {

int cmd_verify(int argc, char** argv) {
  ArgParser p("opvision verify",
              "Runs a model on the inputs stored in a reference .npz and compares each output with the entry of "
              "the same name. Prints one line 'rel_l2=<x> max_abs_rel=<y>' (worst over outputs). Exit status: 0 "
              "within the backend's tolerance, 1 outside it, 2 on errors. A batch-N artifact (compile --batch N) "
              "with a batch-1 reference runs twice, the reference inputs in the even then the odd sample slots and a "
              "different input (the reference rotated by a third of its elements) in the others, and compares every "
              "slot with the reference outputs.",
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
  auto ref_entry = [&](const std::string& name, const char* what) -> const Tensor& {
    auto it = std::find_if(ref.begin(), ref.end(), [&](const auto& e) { return e.first == name; });
    OPV_CHECK(it != ref.end(), ref_path, ": no entry for model ", what, " '", name, "'");
    return it->second;
  };

  // A batch-B model (compile --batch B) and a batch-1 reference: sample k of a run is checked
  // against the reference where slot k holds the reference inputs. Two runs, the reference in the
  // even slots then in the odd ones, every other slot a different input (the reference rotated by
  // a third of its elements), so a kernel that mixes samples or indexes one sample for another
  // shows up; every slot is compared once.
  int64_t batch = 0;  // > 0: batch mode with this many slots
  for (const auto& [name, spec] : session.input_specs()) {
    const Tensor& r = ref_entry(name, "input");
    if (r.shape() == spec->shape) continue;
    const bool tiles = !r.shape().empty() && r.shape()[0] == 1 && spec->shape.size() == r.shape().size() &&
                       spec->shape[0] > 1 && std::equal(r.shape().begin() + 1, r.shape().end(), spec->shape.begin() + 1);
    OPV_CHECK(tiles && (batch == 0 || batch == spec->shape[0]), ref_path, ": entry '", name, "' has shape ",
              shape_str(r.shape()), ", the model input has ", shape_str(spec->shape));
    batch = spec->shape[0];
  }
  if (batch > 0)
    for (const auto& [name, spec] : session.input_specs())
      OPV_CHECK(spec->shape[0] == batch && ref_entry(name, "input").shape()[0] == 1, ref_path, ": entry '", name,
                "' has shape ", shape_str(ref_entry(name, "input").shape()), ", the model input has ",
                shape_str(spec->shape), " (a batch-", batch, " model takes a batch-1 reference in every input)");

  double worst_l2 = 0, worst_abs = 0;
  bool finite = true, ref_bad = false;
  auto account = [&](const std::string& name, const Tensor& out, const Tensor& expect, bool first) {
    ErrorMetrics m = compare(out, expect);
    // A reference with NaN/Inf proves nothing about the model; refuse it rather than skip it.
    if (m.ref_nonfinite > 0 && first) {
      std::fprintf(stderr, "[verify] reference '%s' for output '%s' has %lld non-finite (NaN/Inf) element(s) of %lld\n",
                   ref_path.c_str(), name.c_str(), (long long)m.ref_nonfinite, (long long)expect.numel());
      ref_bad = true;
    }
    finite &= m.finite && std::isfinite(m.rel_l2) && std::isfinite(m.max_abs_rel);
    worst_l2 = std::max(worst_l2, std::isnan(m.rel_l2) ? INFINITY : m.rel_l2);
    worst_abs = std::max(worst_abs, std::isnan(m.max_abs_rel) ? INFINITY : m.max_abs_rel);
  };
  const int64_t runs = batch > 1 ? 2 : 1;
  for (int64_t parity = 0; parity < runs; ++parity) {
    runtime::NamedTensors inputs;
    for (const auto& [name, spec] : session.input_specs()) {
      const Tensor& r = ref_entry(name, "input");
      if (batch == 0) {
        inputs.emplace_back(name, r);
        continue;
      }
      Tensor in(r.dtype(), spec->shape);
      const size_t bytes = r.nbytes(), esz = dtype_size(r.dtype()), shift = size_t(r.numel() / 3) * esz;
      const uint8_t* src = static_cast<const uint8_t*>(r.raw());
      for (int64_t k = 0; k < batch; ++k) {
        uint8_t* dst = static_cast<uint8_t*>(in.raw()) + size_t(k) * bytes;
        if (k % 2 == parity) {
          std::memcpy(dst, src, bytes);
        } else {  // another sample: the reference's elements rotated by a third
          std::memcpy(dst, src + shift, bytes - shift);
          std::memcpy(dst + (bytes - shift), src, shift);
        }
      }
      inputs.emplace_back(name, std::move(in));
    }
    const runtime::NamedTensors& outputs = session.run(inputs);
    for (const auto& [name, out] : outputs) {
      const Tensor& expect = ref_entry(name, "output");
      if (batch == 0) {
        OPV_CHECK(expect.shape() == out.shape(), ref_path, ": entry '", name, "' has shape ", shape_str(expect.shape()),
                  ", the model output has ", shape_str(out.shape()));
        account(name, out, expect, true);
        continue;
      }
      Shape per = out.shape();
      OPV_CHECK(!per.empty() && per[0] == batch, "output '", name, "' has shape ", shape_str(per),
                ": no leading batch of ", batch);
      per[0] = 1;
      OPV_CHECK(expect.shape() == per, ref_path, ": entry '", name, "' has shape ", shape_str(expect.shape()),
                ", a sample of the model output has ", shape_str(per));
      const size_t bytes = expect.nbytes();
      for (int64_t k = parity; k < batch; k += 2) {
        Tensor sample(out.dtype(), per);
        std::memcpy(sample.raw(), static_cast<const uint8_t*>(out.raw()) + size_t(k) * bytes, bytes);
        account(name, sample, expect, parity == 0 && k == 0);
      }
    }
  }
  if (batch > 0)
    std::fprintf(stderr,
                 "[verify] batch-%lld model, batch-1 reference: %lld runs, the reference inputs in every %s slot and a "
                 "different input (the reference rotated) in the others; all %lld slots compared\n",
                 (long long)batch, (long long)runs, runs > 1 ? "other" : "", (long long)batch);
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
