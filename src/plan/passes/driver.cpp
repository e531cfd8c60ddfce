/* The plan-pass driver (the twin of the graph-pass driver, src/ir/passes/driver.cpp): runs plan
 * passes from the table in pass_table.cpp on a plan; one PassDriver per compile or opt run.
 *   1. run(): the pass runs with the driver's PassCtx (the run's typed options); when it reports a change, plan::validate() checks the plan (an error
 *      names the pass). With verbose, one progress line on stderr; an observer (compile/opt
 *      --report) sees the plan before and after the pass.
 *   2. Dump points (compile --dump-after): "lower" (the plan as lowered, before any pass; the
 *      caller marks it with checkpoint()), every plan pass of the target, "compact" and
 *      "memory-plan" (the final plan). After a requested point the plan is written to
 *      DriverOptions::dump_to as dump_plan_text(), under a header line naming the point.
 *   3. finish(): compact() (run like a pass), memory planning, final validation.
 * Invariant: the plan leaves run() and finish() valid, and the driver changes it only through
 * the passes it runs; dumps read a const plan.
 */
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ostream>

#include "core/error.h"
#include "plan/passes/passes.h"

namespace opv::plan {

namespace {

constexpr const char* kCompactPoint = "compact";
constexpr const char* kMemoryPoint = "memory-plan";

// FNV-1a, 64 bit: a stable digest of kernel sources and weights for dumps.
constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;
uint64_t fnv1a(const void* data, size_t n) {
  uint64_t h = kFnvOffset;
  const auto* b = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * kFnvPrime;
  return h;
}
std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

std::string join(const std::vector<std::string>& names) {
  std::string r;
  for (const std::string& n : names) r += (r.empty() ? "" : ", ") + n;
  return r.empty() ? "none" : r;
}

bool listed(const std::vector<std::string>& names, const std::string& n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

}  // namespace

std::string plan_pass_list(const std::string& target) {
  std::vector<std::string> names;
  for (const PlanPassInfo& p : plan_passes_for(target)) names.push_back(p.name);
  return join(names);
}

PlanPassFn find_plan_pass(const std::string& target, const std::string& name) {
  for (const PlanPassInfo& p : plan_passes_for(target))
    if (name == p.name) return p.fn;
  return nullptr;
}

std::vector<std::string> dump_points(const std::string& target) {
  std::vector<std::string> points{kLowerDumpPoint};
  for (const PlanPassInfo& p : plan_passes_for(target)) points.push_back(p.name);
  points.push_back(kCompactPoint);
  points.push_back(kMemoryPoint);
  return points;
}

void check_dump_points(const std::string& target, const std::vector<std::string>& names,
                       const std::vector<std::string>& scheduled) {
  const std::vector<std::string> points = dump_points(target);
  for (const std::string& n : names)
    if (n != kAllDumpPoints && !listed(points, n))
      fail("--dump-after: '", n, "' is not a dump point of target ", target, " (dump points: ", join(points),
           "; or '", kAllDumpPoints, "')");
  std::vector<std::string> reached{kLowerDumpPoint};
  reached.insert(reached.end(), scheduled.begin(), scheduled.end());
  reached.insert(reached.end(), {kCompactPoint, kMemoryPoint});
  for (const std::string& n : names)
    if (n != kAllDumpPoints && !listed(reached, n))
      fail("--dump-after ", n, ": plan pass '", n, "' does not run here (disabled, opt-in or left out by --passes); "
           "dump points of this run: ", join(reached));
}

std::string dump_plan_text(const Plan& p) {
  std::string s = p.dump();
  s += "sources:\n";
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const Kernel& k = p.kernels[i];
    s += "  k" + std::to_string(i);
    if (k.source.empty()) {
      s += " (no source)\n";
      continue;
    }
    s += " entry=" + k.entry + " options='" + k.options + "' " + std::to_string(k.source.size()) +
         "B fnv1a=" + hex64(fnv1a(k.source.data(), k.source.size())) + "\n";
  }
  s += "weights: " + std::to_string(p.weights.size()) + "B fnv1a=" + hex64(fnv1a(p.weights.data(), p.weights.size())) +
       "\n";
  return s;
}

PassDriver::PassDriver(std::string target, const std::vector<std::string>& scheduled, DriverOptions opts, PassCtx ctx)
    : target_(std::move(target)), opts_(std::move(opts)), ctx_(std::move(ctx)) {
  check_dump_points(target_, opts_.dump_after, scheduled);
  OPV_CHECK(opts_.dump_after.empty() || opts_.dump_to, "plan pass driver: dump points asked for without a stream");
}

bool PassDriver::wants(const std::string& point) const {
  return listed(opts_.dump_after, kAllDumpPoints) || listed(opts_.dump_after, point);
}

void PassDriver::checkpoint(const Plan& p, const std::string& point, bool changed) {
  if (!wants(point)) return;
  *opts_.dump_to << "== plan after " << point << " (" << (changed ? "changed" : "no change") << ") ==\n"
                 << dump_plan_text(p);
}

bool PassDriver::run(Plan& p, const std::string& name, PlanPassFn fn) {
  Plan before;
  if (opts_.observer) before = p;
  const size_t calls = p.calls.size();
  bool changed = false;
  try {
    changed = fn(p, ctx_);
    if (changed) validate(p);
  } catch (const Error& e) {
    fail("plan pass '", name, "': ", e.what());
  }
  if (opts_.verbose)
    std::fprintf(stderr, "[plan] %-14s %s calls %zu -> %zu\n", name.c_str(), changed ? "changed" : "no change", calls,
                 p.calls.size());
  if (opts_.observer) (*opts_.observer)(name, before, p, changed);
  checkpoint(p, name, changed);
  return changed;
}

void PassDriver::finish(Plan& p) {
  run(p, kCompactPoint, [](Plan& q, const PassCtx&) { return compact(q); });
  const bool planned = plan_memory(p);
  validate(p);
  if (opts_.verbose)
    std::fprintf(stderr, "[plan] memory: arena %lld bytes (unplanned %lld)\n", (long long)p.arena_bytes,
                 (long long)unplanned_bytes(p));
  checkpoint(p, kMemoryPoint, planned);
}

}  // namespace opv::plan
