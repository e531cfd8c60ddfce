// Chrome trace-event JSON of profiled runs (see trace.h). The format: a JSON object whose
// "traceEvents" holds complete events ("ph": "X", "ts"/"dur" in microseconds, "pid"/"tid" the
// track) and metadata events ("ph": "M") naming the process and thread tracks.
#include "tools/trace.h"

#include <cmath>

#include "ops/op.h"
#include "tools/common.h"
#include "tools/plan_stats.h"

namespace opv::tools {

namespace {
constexpr int kPid = 1;
constexpr int kStreamTid = 1;  // the backend's stream: inference spans with their calls inside
constexpr double kUsPerMs = 1000.0;
}  // namespace

std::string json_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      r += fmt("\\u%04x", c);
    } else {
      r += c;
    }
  }
  return r;
}

std::vector<TraceRun> profile_runs(backend::Backend& b, const plan::Plan& plan, int64_t runs,
                                   const std::function<void()>& run) {
  std::vector<TraceRun> r;
  b.set_profiling(true);
  try {
    for (int64_t i = 0; i < runs; ++i) {
      TraceRun t;
      t.start_ms = now_ms();
      run();
      t.wall_ms = now_ms() - t.start_ms;
      t.call_ms = b.call_times_ms();
      t.call_start_ms = b.call_starts_ms();
      if (t.call_ms.size() != plan.calls.size()) {
        r.clear();  // no per-call times from this backend
        break;
      }
      r.push_back(std::move(t));
    }
  } catch (...) {
    b.set_profiling(false);
    throw;
  }
  b.set_profiling(false);
  return r;
}

std::string chrome_trace(const plan::Plan& plan, const std::vector<TraceRun>& runs, const std::string& title,
                         const std::string& device, int threads) {
  std::vector<int64_t> bytes, flops;
  for (const plan::Call& c : plan.calls) {
    bytes.push_back(call_bytes(plan, c));
    flops.push_back(call_flops(plan, c).total());
  }
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  out += fmt("{\"ph\": \"M\", \"pid\": %d, \"name\": \"process_name\", \"args\": {\"name\": \"opvision %s on %s (%s)\"}},\n",
             kPid, json_escape(title).c_str(), json_escape(plan.target).c_str(), json_escape(device).c_str());
  out += fmt("{\"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"name\": \"thread_name\", \"args\": {\"name\": \"%s stream, "
             "threads %d (0: backend default)\"}}",
             kPid, kStreamTid, json_escape(plan.target).c_str(), threads);
  const double t0 = runs.empty() ? 0.0 : runs.front().start_ms;
  for (size_t r = 0; r < runs.size(); ++r) {
    const TraceRun& run = runs[r];
    const double run_us = (run.start_ms - t0) * kUsPerMs;
    out += fmt(",\n{\"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"name\": \"inference %zu\", \"cat\": \"run\", "
               "\"ts\": %.3f, \"dur\": %.3f, \"args\": {\"calls\": %zu}}",
               kPid, kStreamTid, r, run_us, run.wall_ms * kUsPerMs, plan.calls.size());
    double next_ms = 0;  // where a call without a start of its own goes: after the one before
    for (size_t i = 0; i < plan.calls.size() && i < run.call_ms.size(); ++i) {
      const plan::Call& c = plan.calls[i];
      const plan::Kernel& k = plan.kernels[size_t(c.kernel)];
      double start = i < run.call_start_ms.size() && std::isfinite(run.call_start_ms[i]) ? run.call_start_ms[i] : next_ms;
      next_ms = start + run.call_ms[i];
      out += fmt(",\n{\"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"name\": \"%s\", \"cat\": \"%s\", \"ts\": %.3f, "
                 "\"dur\": %.3f, \"args\": {\"call\": %zu, \"node\": \"%s\", \"bytes\": %lld, \"flops\": %lld}}",
                 kPid, kStreamTid, json_escape(k.name).c_str(), op_name(k.op), run_us + start * kUsPerMs,
                 run.call_ms[i] * kUsPerMs, i, json_escape(c.label).c_str(), (long long)bytes[i],
                 (long long)flops[i]);
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace opv::tools
