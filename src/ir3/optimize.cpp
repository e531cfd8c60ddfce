// Pass driver and translation validation (see optimize.h).
#include "ir3/optimize.h"

#include <algorithm>
#include <cstring>
#include <map>
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

namespace {

// How a candidate's pass order differs from the requested one ("" when it is the same).
std::string describe_order(const std::vector<std::string>& order, const std::vector<std::string>& names) {
  auto has = [](const std::vector<std::string>& v, const char* n) { return std::find(v.begin(), v.end(), n) != v.end(); };
  auto at = [](const std::vector<std::string>& v, const char* n) { return std::find(v.begin(), v.end(), n) - v.begin(); };
  std::string d;
  auto add = [&](const char* what) { d += (d.empty() ? "" : ", ") + std::string(what); };
  if (has(names, "rpt") && !has(order, "rpt")) add("without rpt");
  else if (has(order, "rpt") && has(order, "hoist") && (at(order, "rpt") > at(order, "hoist")) != (at(names, "rpt") > at(names, "hoist")))
    add("rpt after hoist");
  if (has(names, "rename") && !has(order, "rename")) add("without rename");
  if (has(names, "accum") && !has(order, "accum")) add("without accum");
  return d;
}

}  // namespace

passes::Code::Grid launch_grid(const Capture& cap, int k) {
  passes::Code::Grid g;
  const CaptureKernel& kern = cap.kernels.at(static_cast<size_t>(k));
  constexpr int kNoReg = 252;
  g.local_reg = kern.local_invocation_id_regid == kNoReg ? -1 : kern.local_invocation_id_regid;
  g.group_reg = kern.work_group_id_regid == kNoReg ? -1 : kern.work_group_id_regid;
  bool launched = false;
  auto take = [&](const CaptureLaunch& l) {
    if (l.kernel != k) return;
    for (int d = 0; d < 3; ++d) {
      g.local_size[d] = std::max(launched ? g.local_size[d] : 0u, l.local_size[size_t(d)]);
      g.num_groups[d] = std::max(launched ? g.num_groups[d] : 0u, l.global_size[size_t(d)]);
    }
    launched = true;
  };
  for (const CaptureStep& s : cap.setup)
    if (s.is_launch) take(s.launch);
  for (const CaptureLaunch& l : cap.schedule) take(l);
  if (!launched) g.local_reg = g.group_reg = -1;  // never launched: nothing to specialise for
  // Mesa's immediates sit in the const file from immediates_const_byte on (one 32-bit word per
  // component); the arguments before them are the launch's and stay unknown.
  for (size_t i = 0; i < kern.immediates.size(); ++i)
    g.consts.emplace_back(static_cast<int>(kern.immediates_const_byte / 4 + i), kern.immediates[i]);
  return g;
}

namespace {

// Whether a rewrite is slower than the original by the cost model (with loops, then straight).
bool slower(const passes::Stats& a, const passes::Stats& orig) {
  return a.loop_cycles > orig.loop_cycles || (a.loop_cycles == orig.loop_cycles && a.cycles() > orig.cycles());
}

}  // namespace

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
    if (!opts.only.empty() && !opts.only.at(k)) {
      r.note = "not selected";
      r.validated = true;  // its own code is kept
      out.push_back(r);
      continue;
    }
    // Candidates: the pipeline, and when it runs rpt before hoist, the same with rpt after hoist
    // and without rpt. A packed group issues only when all its sources are ready, which can cost
    // hoist more than packing saves (the largest fixture kernel: 9,233 cycles packed first, 8,242
    // unpacked), and rpt keeps a packing by a straight-line estimate that cannot see a wait it
    // moves into a loop. So the kernel keeps the validated candidate with the fewest
    // cycles (counted loops weighted by their trip counts, Stats::loop_cycles; then the static
    // cycles), and its own code when none is faster (never a slowdown by the model).
    std::vector<std::vector<std::string>> plans{names};
    std::vector<std::string> no_rpt, rpt_late;
    for (const std::string& n : names)
      if (n != "rpt") no_rpt.push_back(n);
    if (no_rpt.size() != names.size()) {
      // rpt after hoist: packs what the schedule left adjacent instead of constraining it.
      const auto h = std::find(no_rpt.begin(), no_rpt.end(), "hoist");
      if (h != no_rpt.end() && std::find(names.begin(), names.end(), "rpt") < std::find(names.begin(), names.end(), "hoist")) {
        rpt_late = no_rpt;
        rpt_late.insert(rpt_late.begin() + (h - no_rpt.begin()) + 1, "rpt");
        plans.push_back(rpt_late);
      }
      plans.push_back(no_rpt);
    }
    // rename frees hoist where a reused temporary orders independent chains, but it can also
    // hand hoist more freedom than its greedy list schedule uses well (the largest fixture
    // kernel: 276 cycles more): every order is also tried without it.
    // accum moves values into registers that other code used just before, where a texture or
    // SFU read can make the new write wait ((ss)/(sy)) in ways its placement does not foresee:
    // every order is also tried without it (the kernel then keeps the better one).
    for (const char* optional : {"rename", "accum"}) {
      if (std::find(names.begin(), names.end(), optional) == names.end()) continue;
      size_t base = plans.size();
      for (size_t pi = 0; pi < base; ++pi) {
        std::vector<std::string> v;
        for (const std::string& n : plans[pi])
          if (n != optional) v.push_back(n);
        plans.push_back(v);
      }
    }
    struct Candidate {
      size_t plan;
      std::vector<std::vector<uint64_t>> stage;  // code after each pass, for diagnosis
      passes::Stats st;
    };
    std::vector<Candidate> cands;
    const std::vector<uint64_t> orig_emitted = passes::Code(orig, kGenA6xx, kern.mergedregs).emit();
    // The plans share most of their stages (every one starts fold, cp, ... and a pass that makes
    // no progress leaves the code as it was): each (code, pass) step runs once.
    std::map<std::pair<std::vector<uint64_t>, std::string>, std::vector<uint64_t>> steps;
    const passes::Code::Grid grid = launch_grid(cap, static_cast<int>(k));
    for (size_t pi = 0; pi < plans.size(); ++pi) {
      Candidate c{pi, {}, {}};
      try {
        std::vector<uint64_t> words = orig_emitted;
        for (const std::string& n : plans[pi]) {
          auto key = std::make_pair(words, n);
          auto hit = steps.find(key);
          if (hit == steps.end()) {
            passes::Code code(words, kGenA6xx, kern.mergedregs);
            code.grid = grid;
            passes::run_pass(n, code);
            hit = steps.emplace(std::move(key), code.emit()).first;
          }
          words = hit->second;
          c.stage.push_back(words);
        }
      } catch (const Error& e) {
        if (pi == 0) {
          r.failed_pass = plans[pi][c.stage.size()];
          r.reason = e.what();
        }
        continue;
      }
      const std::vector<uint64_t>& fin = c.stage.empty() ? orig : c.stage.back();
      if (passes::Code(fin, kGenA6xx, kern.mergedregs).emit() == orig_emitted) continue;  // nothing to keep
      c.st = passes::stats(fin);
      cands.push_back(std::move(c));
    }
    std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
      if (a.st.loop_cycles != b.st.loop_cycles) return a.st.loop_cycles < b.st.loop_cycles;
      return a.st.cycles() != b.st.cycles() ? a.st.cycles() < b.st.cycles() : a.st.instructions < b.st.instructions;
    });
    // Among the candidates within OptOptions::pack_tolerance_permille of the fastest (with loops),
    // the one that packs the most mad.f32 goes first: an (rptN) group is one instruction to fetch
    // instead of N+1, which the cost model does not count, so a near-tie is settled by packing.
    // Only the count with loops decides: where a kernel has no counted loop it equals the static
    // count, and where it has one the static count weighs the body once against the code around
    // it run once per fiber (r_8_8_16_4_4_128_4: the loop packed into sixteen (rpt3) groups costs
    // 1.8 % more with its 128 trips, but 4 % more statically, from the epilogue's schedule).
    if (!cands.empty()) {
      const passes::Stats best = cands.front().st;
      const int64_t tol = opts.pack_tolerance_permille;
      auto near = [&](const Candidate& c) {
        return c.st.loop_cycles * 1000 <= best.loop_cycles * (1000 + tol) && !slower(c.st, r.before);
      };
      auto split = std::stable_partition(cands.begin(), cands.end(), near);
      std::stable_sort(cands.begin(), split, [](const Candidate& a, const Candidate& b) {
        return a.st.mad_f32_packed > b.st.mad_f32_packed;
      });
    }
    bool kept = false;
    for (const Candidate& c : cands) {
      if (slower(c.st, r.before)) {
        if (r.failed_pass.empty()) r.note = "kept the original: no rewrite is faster by the cost model";
        break;
      }
      const std::vector<std::string>& ns = plans[c.plan];
      const std::vector<uint64_t>& fin = c.stage.back();
      std::vector<Hazard> hz = check_hazards(fin, kGenA6xx, kern.mergedregs);
      std::string why = hz.empty() ? "" : "hazard: " + to_string(hz.front());
      if (why.empty() && opts.validate_sets > 0) why = differs(cap, static_cast<int>(k), fin, opts.validate_sets, opts.seed);
      if (!why.empty()) {
        if (r.failed_pass.empty()) {  // report the first failure: which pass broke it
          r.reason = why;
          r.failed_pass = ns.back();
          if (why.rfind("hazard", 0) != 0)  // find the first stage whose function already differs
            for (size_t st = 0; st < c.stage.size(); ++st)
              if (!differs(cap, static_cast<int>(k), c.stage[st], 1, opts.seed).empty()) {
                r.failed_pass = ns[st];
                break;
              }
        }
        continue;
      }
      r.note = describe_order(plans[c.plan], names);
      if (!r.failed_pass.empty())
        r.note += std::string(r.note.empty() ? "" : "; ") + "a faster rewrite failed in " + r.failed_pass + ": " + r.reason;
      else if (c.plan != 0)
        r.note += " (fewer cycles than the pipeline's order)";
      r.failed_pass.clear();
      r.reason.clear();
      r.validated = opts.validate_sets > 0;
      r.changed = true;
      r.after = c.st;
      kern.code = fin;
      kern.max_reg = r.after.max_reg;
      kern.max_half_reg = r.after.max_half_reg;
      kept = true;
      break;
    }
    if (!kept && r.failed_pass.empty()) r.validated = true;  // the original is kept: nothing to validate
    out.push_back(r);
  }
  return out;
}

}  // namespace opv::ir3
