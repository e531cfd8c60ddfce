// Timelines of profiled runs as Chrome trace-event JSON (opened by ui.perfetto.dev and
// chrome://tracing): `opvision bench --trace` and the Python session's profile().
// One track per backend stream (the cpu and reference backends run calls in order on one stream;
// an OpenCL queue is one stream too), on it one "inference" span per run and inside it one span
// per plan call, named by its kernel, with the op, the graph node, the bytes it moves and its
// FLOPs as arguments.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "plan/plan.h"

namespace opv::tools {

// One profiled run: when it started (ms, on one clock for all runs) and how long it took, and
// per plan call its start (ms from the run's start; NaN or absent: right after the call before)
// and its duration.
struct TraceRun {
  double start_ms = 0, wall_ms = 0;
  std::vector<double> call_start_ms, call_ms;
};

// Runs `run` `runs` times with the backend's profiling on and returns the timelines; empty when
// the backend reports no per-call times (Caps::per_call_times false). Profiling is off afterwards.
std::vector<TraceRun> profile_runs(backend::Backend& b, const plan::Plan& plan, int64_t runs,
                                   const std::function<void()>& run);

// The trace JSON of `runs` of `plan` on the backend named in the process name: `title` (the model),
// `device` (Caps::device) and the threads setting label the tracks.
std::string chrome_trace(const plan::Plan& plan, const std::vector<TraceRun>& runs, const std::string& title,
                         const std::string& device, int threads);

// `s` with '"', '\' and control characters escaped for a JSON string.
std::string json_escape(const std::string& s);

}  // namespace opv::tools
