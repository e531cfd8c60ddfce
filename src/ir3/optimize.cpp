// Pass driver and translation validation (see optimize.h).
#include "ir3/optimize.h"

#include <cstring>
#include <random>

#include "core/error.h"
#include "core/half.h"
#include "ir3/legalize.h"
#include "ir3/replay.h"

namespace opv::ir3 {

namespace {

const CaptureLaunch* first_launch(const Capture& cap, int kernel) {
  for (const CaptureLaunch& l : cap.schedule)
    if (l.kernel == kernel) return &l;
  for (const CaptureStep& s : cap.setup)
    if (s.is_launch && s.launch.kernel == kernel) return &s.launch;
  return nullptr;
}

// Fills every range the launch binds with random finite values of the argument's type.
void fill(Replayer& r, const CaptureLaunch& l, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (const CaptureArg& a : l.args) {
    if (a.kind == CaptureArg::Kind::Value) continue;
    std::vector<uint8_t> b(a.bytes);
    int eb = capture_dtype_bytes(a.dtype);
    if (a.dtype == "half") {
      for (size_t i = 0; i + 1 < b.size(); i += 2) {
        uint16_t h = float_to_half(u(rng));
        std::memcpy(&b[i], &h, 2);
      }
    } else if (a.dtype == "float") {
      for (size_t i = 0; i + 3 < b.size(); i += 4) {
        float f = u(rng);
        std::memcpy(&b[i], &f, 4);
      }
    } else {
      (void)eb;
      for (auto& x : b) x = static_cast<uint8_t>(rng());
    }
    r.sim().write(r.address(a.buffer) + a.offset, b.data(), b.size());
  }
}

std::vector<std::vector<uint8_t>> snapshot(Replayer& r, const CaptureLaunch& l) {
  std::vector<std::vector<uint8_t>> out;
  for (const CaptureArg& a : l.args) {
    if (a.kind == CaptureArg::Kind::Value) continue;
    std::vector<uint8_t> b(a.bytes);
    r.sim().read(r.address(a.buffer) + a.offset, b.data(), b.size());
    out.push_back(std::move(b));
  }
  return out;
}

// Runs `code` for kernel k against the original on `sets` random inputs; "" if identical.
std::string differs(const Capture& cap, int k, const std::vector<uint64_t>& code, int sets, uint64_t seed) {
  const CaptureLaunch* l = first_launch(cap, k);
  if (!l) return "the capture never launches it";
  ReplayOptions ro;
  ro.skip_setup = true;
  std::vector<std::vector<uint64_t>> orig_code, new_code;
  for (const CaptureKernel& x : cap.kernels) orig_code.push_back(x.code), new_code.push_back(x.code);
  new_code[static_cast<size_t>(k)] = code;
  Replayer a(cap, ro, orig_code), b(cap, ro, new_code);
  for (int s = 0; s < sets; ++s) {
    std::mt19937_64 ra(seed * 1000003u + static_cast<uint64_t>(s)), rb = ra;
    fill(a, *l, ra);
    fill(b, *l, rb);
    try {
      a.launch(*l);
    } catch (const Error& e) {
      return std::string("the original faults on random inputs: ") + e.what();
    }
    try {
      b.launch(*l);
    } catch (const Error& e) {
      return std::string("the rewrite faults: ") + e.what();
    }
    auto x = snapshot(a, *l), y = snapshot(b, *l);
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i] != y[i]) {
        size_t at = 0;
        while (at < x[i].size() && x[i][at] == y[i][at]) ++at;
        return "results differ on random set " + std::to_string(s) + " (bound range " + std::to_string(i) + ", byte " +
               std::to_string(at) + ")";
      }
  }
  return "";
}

}  // namespace

std::string validate_kernel(const Capture& cap, int k, const std::vector<uint64_t>& code, int sets, uint64_t seed) {
  OPV_CHECK(k >= 0 && static_cast<size_t>(k) < cap.kernels.size(), "ir3 opt: no kernel ", k);
  return differs(cap, k, code, sets, seed);
}

std::vector<uint64_t> run_passes(const std::vector<uint64_t>& words, const std::vector<std::string>& names, int gen) {
  passes::Code c(words, gen);
  for (const std::string& n : names) passes::run_pass(n, c);
  return c.emit();
}

std::vector<KernelOpt> optimize_capture(Capture& cap, const OptOptions& opts) {
  std::vector<std::string> names = opts.passes.empty() ? passes::pass_names() : opts.passes;
  std::vector<KernelOpt> out;
  for (size_t k = 0; k < cap.kernels.size(); ++k) {
    CaptureKernel& kern = cap.kernels[k];
    KernelOpt r;
    r.name = kern.name;
    for (const CaptureLaunch& l : cap.schedule) r.launches_per_inference += l.kernel == static_cast<int>(k);
    if (opts.progress) opts.progress(k, cap.kernels.size(), kern.name);
    std::vector<uint64_t> orig = kern.code;
    r.before = r.after = passes::stats(orig);
    // run the pipeline, keeping each stage for diagnosis
    std::vector<std::vector<uint64_t>> stage;
    try {
      passes::Code c(orig, kGenA6xx, kern.mergedregs);
      for (const std::string& n : names) {
        passes::run_pass(n, c);
        stage.push_back(c.emit());
      }
    } catch (const Error& e) {
      r.failed_pass = names[stage.size()];
      r.reason = e.what();
      out.push_back(r);
      continue;
    }
    std::vector<uint64_t> fin = stage.empty() ? orig : stage.back();
    passes::Code co(orig, kGenA6xx, kern.mergedregs), cf(fin, kGenA6xx, kern.mergedregs);
    if (co.emit() == cf.emit()) {  // nothing to keep
      r.validated = true;
      out.push_back(r);
      continue;
    }
    std::vector<Hazard> hz = check_hazards(fin, kGenA6xx, kern.mergedregs);
    std::string why = hz.empty() ? "" : "hazard: " + to_string(hz.front());
    if (why.empty() && opts.validate_sets > 0) why = differs(cap, static_cast<int>(k), fin, opts.validate_sets, opts.seed);
    if (!why.empty()) {
      r.reason = why;
      r.failed_pass = names.back();
      if (why.rfind("hazard", 0) != 0)  // find the first stage whose function already differs
        for (size_t s = 0; s < stage.size(); ++s)
          if (!differs(cap, static_cast<int>(k), stage[s], 1, opts.seed).empty()) {
            r.failed_pass = names[s];
            break;
          }
      out.push_back(r);
      continue;
    }
    r.validated = opts.validate_sets > 0;
    r.changed = true;
    r.after = passes::stats(fin);
    kern.code = fin;
    kern.max_reg = r.after.max_reg;
    kern.max_half_reg = r.after.max_half_reg;
    out.push_back(r);
  }
  return out;
}

}  // namespace opv::ir3
