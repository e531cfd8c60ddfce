// The plan-pass report (see pass_report.h).
#include "tools/pass_report.h"

#include <algorithm>
#include <chrono>

#include "backend/backend.h"
#include "plan/passes/passes.h"
#include "runtime/session.h"

namespace opv::tools {

namespace {
constexpr int kWarmups = 2;
constexpr double kSlowRunMs = 250;  // beyond this per warm-up run, measure only kSlowRuns runs
constexpr int kSlowRuns = 3;
constexpr size_t kNoteChars = 160;

double wall_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

std::string first_line(const std::string& s) {
  std::string r = s.substr(0, s.find('\n'));
  if (r.size() > kNoteChars) r = r.substr(0, kNoteChars) + "...";
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string arrow(int64_t a, int64_t b) { return std::to_string(a) + " -> " + std::to_string(b); }

std::string time_str(const PlanMetrics& m) {
  if (m.time_ms < 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", m.time_ms);
  return buf;
}
}  // namespace

std::vector<std::string> split_names(const std::vector<std::string>& values) {
  std::vector<std::string> r;
  for (const std::string& v : values) {
    size_t at = 0;
    while (at <= v.size()) {
      size_t comma = v.find(',', at);
      if (comma == std::string::npos) comma = v.size();
      std::string name = v.substr(at, comma - at);
      while (!name.empty() && name.back() == ' ') name.pop_back();
      while (!name.empty() && name.front() == ' ') name.erase(name.begin());
      if (!name.empty()) r.push_back(name);
      at = comma + 1;
    }
  }
  return r;
}

PlanMetrics plan_metrics(const plan::Plan& p, bool measure, int runs) {
  PlanMetrics m;
  m.launches = int64_t(p.calls.size());
  for (const plan::Call& c : p.calls)
    m.kernel_calls += std::max<int64_t>(1, p.kernels[size_t(c.kernel)].attrs.i("cl_batch", 1));
  plan::Plan q = p;
  for (plan::Buffer& b : q.buffers)
    if (b.kind == plan::BufferKind::Intermediate) b.offset = -1;
  plan::compact(q);
  m.weight_bytes = int64_t(q.weights.size());
  if (!measure) {
    m.time_note = "not measured";
    return m;
  }
  try {
    plan::plan_memory(q);
    plan::validate(q);
    runtime::Session s(std::move(q));
    runtime::NamedTensors in = s.random_inputs(0);
    double slowest = 0;
    for (int i = 0; i < kWarmups; ++i) {
      double t0 = wall_ms();
      s.run(in);
      slowest = std::max(slowest, wall_ms() - t0);
    }
    if (slowest > kSlowRunMs) runs = std::min(runs, kSlowRuns);
    std::vector<double> ms;
    for (int i = 0; i < std::max(runs, 1); ++i) {
      double t0 = wall_ms();
      s.run(in);
      ms.push_back(wall_ms() - t0);
    }
    m.time_ms = median(ms);
  } catch (const std::exception& e) {
    m.time_ms = -1;
    m.time_note = first_line(e.what());
  }
  return m;
}

PassObserver PassReport::observer() {
  return [this](const std::string& pass, const plan::Plan& before, const plan::Plan& after, bool changed) {
    target_ = after.target;
    Row r;
    r.pass = pass;
    r.changed = changed;
    // The driver reports consecutive states: this pass's "before" is the last pass's "after".
    r.before = rows_.empty() ? plan_metrics(before, measure_) : rows_.back().after;
    r.after = changed ? plan_metrics(after, measure_) : r.before;
    rows_.push_back(std::move(r));
  };
}

void PassReport::print(std::FILE* f) const {
  std::fprintf(f, "pass report (target %s; time = median wall time of one inference on backend %s, random inputs)\n",
               target_.c_str(), target_.c_str());
  std::fprintf(f, "%-16s %-7s %-16s %-16s %-24s %s\n", "pass", "changed", "launches", "kernel calls", "weight bytes",
               "time ms");
  for (const Row& r : rows_) {
    std::string t = time_str(r.before) + " -> " + time_str(r.after);
    std::fprintf(f, "%-16s %-7s %-16s %-16s %-24s %s\n", r.pass.c_str(), r.changed ? "yes" : "no",
                 arrow(r.before.launches, r.after.launches).c_str(),
                 arrow(r.before.kernel_calls, r.after.kernel_calls).c_str(),
                 arrow(r.before.weight_bytes, r.after.weight_bytes).c_str(), t.c_str());
  }
  // Why times are missing, once per distinct reason.
  std::vector<std::string> notes;
  for (const Row& r : rows_)
    for (const PlanMetrics* m : {&r.before, &r.after})
      if (m->time_ms < 0 && std::find(notes.begin(), notes.end(), m->time_note) == notes.end())
        notes.push_back(m->time_note);
  for (const std::string& n : notes) std::fprintf(f, "time: n/a (%s)\n", n.c_str());
  if (rows_.empty()) std::fprintf(f, "(no plan passes ran)\n");
}

}  // namespace opv::tools
