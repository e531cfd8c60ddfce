// `opvision bench MODEL`: latency (median/min/p90 over timed runs after warm-up) and a per-kernel
// time table from the backend's per-call profile (calls grouped by kernel name), as text or JSON;
// --trace writes the profiled runs as a Chrome/Perfetto timeline (tools/trace.h).
// Timed runs are unprofiled; the profile comes from separate runs so it cannot skew the latency.
// --inflight N (cuda): every timed run replays the inference N times before its one wait; the
// latency figures are per run, and ms per frame = median / N, frames per second = N / median;
// --cuda-overlap on|off: the replays' uploads overlapping the previous replay's kernels (default on).
// --replay-prefixes (cuda): the replayed graph cut after each call and timed, each call's share of
// the replay's critical path (backend::cuda_prefix_times_us).
// --probe N (cuda, an artifact compiled with --cuda-tune probe=1): N replays with every block's
// clocks (backend::cuda_probe_replay); per call of the replay whose span is the median: its blocks,
// SMs, the most blocks on one SM at once, when its first block opened and passed its entry (the
// PDL wait), when its blocks ended (median, last); --probe-csv writes every block of every replay.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

#include "core/file_io.h"
#include "tools/common.h"
#include "tools/qcom_session.h"
#include "tools/trace.h"
#if OPV_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace opv::tools {

namespace {

struct KernelRow {
  std::string name;
  int64_t count = 0;  // calls of this kernel per inference
  double total_ms = 0;  // per inference, averaged over profiled runs
};

// `warmup` untimed runs, then the wall time of each of `iters` runs (ms).
std::vector<double> time_runs(int64_t warmup, int64_t iters, const std::function<void()>& run) {
  for (int64_t i = 0; i < warmup; ++i) run();
  std::vector<double> times;
  for (int64_t i = 0; i < iters; ++i) {
    double t0 = now_ms();
    run();
    times.push_back(now_ms() - t0);
  }
  return times;
}

#if OPV_HAVE_CUDA
// One call's blocks in one probed replay (us since the replay's first block opened).
struct ProbeRow {
  int call = -1;
  int64_t blocks = 0, sms = 0;
  int64_t per_sm = 0;  // the most blocks on one SM at once
  double open = 0, entry = 0, entry_last = 0, end_median = 0, end_last = 0;
  double gap = 0;  // from the row before's last end to this call's first entry (0 for the first)
  int64_t work_cycles = 0;  // the median block's SM cycles from its entry to its end
};

std::vector<ProbeRow> probe_rows(const std::vector<backend::CudaProbeBlock>& recs, size_t calls) {
  std::vector<std::vector<const backend::CudaProbeBlock*>> by_call(calls);
  for (const backend::CudaProbeBlock& r : recs)
    if (r.call >= 0 && size_t(r.call) < calls) by_call[size_t(r.call)].push_back(&r);
  std::vector<ProbeRow> rows;
  for (size_t c = 0; c < calls; ++c) {
    const auto& bs = by_call[c];
    if (bs.empty()) continue;
    ProbeRow row;
    row.call = int(c);
    row.blocks = int64_t(bs.size());
    row.open = row.entry = INFINITY;
    std::vector<double> ends;
    std::vector<int64_t> work;
    std::map<uint32_t, std::vector<std::pair<double, int>>> sm_events;  // SM -> (time, +1 open / -1 end)
    for (const backend::CudaProbeBlock* b : bs) {
      work.push_back(int64_t(b->end_cycles) - int64_t(b->entry_cycles));
      row.open = std::min(row.open, b->open_us);
      row.entry = std::min(row.entry, b->entry_us);
      row.entry_last = std::max(row.entry_last, b->entry_us);
      row.end_last = std::max(row.end_last, b->end_us);
      ends.push_back(b->end_us);
      sm_events[b->sm].push_back({b->open_us, 1});
      sm_events[b->sm].push_back({b->end_us, -1});
    }
    std::nth_element(ends.begin(), ends.begin() + std::ptrdiff_t(ends.size() / 2), ends.end());
    row.end_median = ends[ends.size() / 2];
    std::nth_element(work.begin(), work.begin() + std::ptrdiff_t(work.size() / 2), work.end());
    row.work_cycles = work[work.size() / 2];
    row.sms = int64_t(sm_events.size());
    for (auto& [sm, ev] : sm_events) {
      std::sort(ev.begin(), ev.end());  // an end before an open at the same time
      int64_t now = 0;
      for (const auto& e : ev) row.per_sm = std::max(row.per_sm, now += e.second);
    }
    if (!rows.empty()) row.gap = row.entry - rows.back().end_last;
    rows.push_back(row);
  }
  return rows;
}
#endif

}  // namespace

int cmd_bench(int argc, char** argv) {
  ArgParser p("opvision bench",
              "Measures inference latency (median/min/p90 in ms) and prints a per-kernel time table: calls grouped "
              "by kernel name with count, total ms per inference and share.",
              "MODEL [options]");
  p.positional("MODEL", "an ONNX model (compiled on the fly) or a .opv artifact")
      .option("--backend", "B", "backend to run on (.opv: defaults to the artifact's target)", kDefaultBackend)
      .option("--threads", "N", "CPU threads (0 = backend default)", "0")
      .option("--device", "SEL", "OpenCL device: index N, P:D or a name substring (default: the first GPU, else the first device; see 'opvision devices'); --backend qcom: sim or kgsl (default: kgsl when /dev/kgsl-3d0 exists, else the simulated a630)")
      .option("--model", "MODEL.onnx", "--backend qcom: the ONNX model holding the capture's weights (default: found by name next to the capture)")
      .flag("--spin", "opencl, cuda: wait for each inference's end by polling its completion (lower latency, one busy CPU core)")
      .option("--warmup", "N", "untimed runs first", "10")
      .option("--iters", "N", "timed runs", "50")
      .option("--inflight", "N",
              "cuda: N inferences in flight per timed run (the graph replayed N times back to back, one host "
              "wait; the same frame each time): also prints ms per frame (median / N) and frames per second",
              "1")
      .option("--cuda-overlap", "on|off",
              "cuda, with --inflight N > 1: on, each replay's input upload runs on a second stream into one of two "
              "device copies of the inputs, overlapping the previous replay's kernels; off, every replay uploads "
              "inside its graph after the previous one (one stream)", "on")
      .option("--seed", "S", "seed of the random inputs", "0")
      .flag("--json", "print one JSON object instead of text")
      .option("--trace", "OUT.json", "write the profiled runs (up to 10) as a Chrome trace: one span per inference "
              "and per call (kernel, op, node, bytes, FLOPs); open it in ui.perfetto.dev or chrome://tracing")
      .flag("--replay-prefixes",
            "cuda: also time the replayed graph cut after each call (the first k calls, --iters replays each) and "
            "print what each call adds to the replay's critical path, where the per-kernel table times each call "
            "alone between events")
      .option("--probe", "N",
              "cuda, an artifact compiled with --cuda-tune probe=1: N more replays with every block's clocks; prints, "
              "for the replay of median span, each call's blocks, SMs, most blocks on one SM at once, and when its "
              "blocks opened, passed their entry (the PDL wait) and ended (us)", "0")
      .option("--probe-csv", "OUT.csv", "with --probe: write every block of every probed replay "
              "(replay,call,label,kernel,block,sm,open_us,entry_us,end_us,entry_cycles,end_cycles: the SM clock from "
              "the block's open)");
  backend_flag_options(p);
  staged_inputs_option(p);
  Args a;
  if (!parse_or_help(p, argc, argv, a)) return kExitOk;
  const int64_t warmup = a.get_int("--warmup", 10, 0, kMaxIters), iters = a.get_int("--iters", 50, 1, kMaxIters);

  const std::string& model = a.positionals[0];
  if (a.get("--backend", kDefaultBackend) == kQcomBackend) {  // MODEL is a capture directory
    if (a.has("--trace")) throw UsageError("opvision bench: --trace is not available for --backend qcom yet");
    QcomSession qs(model, a, "bench");
    CaptureFeed feed = capture_inputs(qs.capture(), a, "bench");
    LatencyStats st = latency_stats(time_runs(warmup, iters, [&] { qs.run(feed); }));
    const qcom::StreamStats& ss = qs.stream_stats();
    if (a.has("--json")) {
      std::printf("{\"model\": \"%s\", \"backend\": \"qcom\", \"device\": \"%s\", \"warmup\": %lld, \"iters\": %lld, "
                  "\"median_ms\": %.6f, \"min_ms\": %.6f, \"p90_ms\": %.6f, \"mean_ms\": %.6f, \"submissions\": %llu, "
                  "\"dispatches\": %llu, \"packets\": %llu, \"barriers\": %llu, \"stream_bytes\": %llu}\n",
                  json_escape(model).c_str(), json_escape(qs.device_name()).c_str(), (long long)warmup, (long long)iters,
                  st.median_ms, st.min_ms, st.p90_ms, st.mean_ms, (unsigned long long)ss.submissions,
                  (unsigned long long)ss.dispatches, (unsigned long long)ss.packets, (unsigned long long)ss.barriers,
                  (unsigned long long)ss.bytes);
      return kExitOk;
    }
    std::printf("%s on qcom (%s): median %.3f ms, min %.3f ms, p90 %.3f ms over %lld runs\n", model.c_str(),
                qs.device_name().c_str(), st.median_ms, st.min_ms, st.p90_ms, (long long)iters);
    std::printf("per inference: %llu submission, %llu dispatches, %llu packets, %llu barriers, %llu bytes of command stream\n",
                (unsigned long long)ss.submissions, (unsigned long long)ss.dispatches, (unsigned long long)ss.packets,
                (unsigned long long)ss.barriers, (unsigned long long)ss.bytes);
    if (qs.device_name().find("sim") != std::string::npos)
      std::printf("note: the simulated a630 is functional, not timed: these times are the simulator's, not a GPU's\n");
    return kExitOk;
  }
  backend::Options bopts = backend_options(a);
  plan::Plan loaded = load_model(model, a.get("--backend"));
  if (a.has("--inflight")) {
    bopts.cuda_inflight = int(a.get_int("--inflight", 1, 1, backend::kMaxCudaInflight));
    if (bopts.cuda_inflight > 1 && loaded.target != "cuda")
      throw UsageError("--inflight is for --backend cuda only, not " + loaded.target);
  }
  bopts.cuda_overlap_uploads = on_off(a, "--cuda-overlap", "on");
  const int inflight = bopts.cuda_inflight;
  const bool prefixes = a.has("--replay-prefixes");
  if (prefixes && (loaded.target != "cuda" || inflight > 1))
    throw UsageError("--replay-prefixes is for --backend cuda with one inference in flight");
  const int64_t probes = a.get_int("--probe", 0, 0, 1000);
  if (probes > 0 && loaded.target != "cuda") throw UsageError("--probe is for --backend cuda only, not " + loaded.target);
  if (a.has("--probe-csv") && probes == 0) throw UsageError("--probe-csv needs --probe N");
  runtime::Session session(std::move(loaded), bopts);
  runtime::NamedTensors inputs = session.random_inputs(uint64_t(a.get_int("--seed", 0)));
  maybe_stage_inputs(a, session, &inputs);
  const bool on_device = stage_device_inputs(a, session, inputs);
  // How the timed runs get their inputs, for the report: the numbers differ by the host's copies
  // (staged: none) and the upload to the GPU (device: none).
  const char* inputs_mode = on_device ? "device" : a.has("--staged-inputs") ? "staged" : "given";
  const char* inputs_said = on_device                   ? "kept in device memory (uploaded once; every run reads them there)"
                            : a.has("--staged-inputs") ? "written once where the backend reads them (--staged-inputs)"
                                                       : "the caller's arrays, copied into the backend's memory each run";
  const auto infer = [&] {
    if (on_device)
      session.run_device_inputs();
    else
      session.run(inputs);
  };

  LatencyStats st = latency_stats(time_runs(warmup, iters, infer));
  const double ms_per_frame = st.median_ms / inflight;
  const double frames_per_s = st.median_ms > 0 ? 1e3 * inflight / st.median_ms : 0.0;

  // Per-kernel profile, averaged over a few runs.
  const plan::Plan& plan = session.plan();
  constexpr int64_t kMaxProfileRuns = 10;
  const int64_t profile_runs = std::min(iters, kMaxProfileRuns);
  std::vector<double> per_call(plan.calls.size(), 0.0);
  const std::vector<TraceRun> timelines =
      tools::profile_runs(session.backend(), plan, profile_runs, infer);
  const bool profiled = !timelines.empty();
  for (const TraceRun& t : timelines)
    for (size_t i = 0; i < t.call_ms.size(); ++i) per_call[i] += t.call_ms[i] / double(profile_runs);
  if (a.has("--trace")) {
    if (!profiled) fail("opvision bench --trace: backend ", plan.target, " reports no per-call times");
    write_file_atomic(a.get("--trace"), chrome_trace(plan, timelines, model, session.backend().caps().device, bopts.threads),
                      "trace");
    std::fprintf(stderr, "[bench] wrote %s: %zu inferences, %zu calls each\n", a.get("--trace").c_str(),
                 timelines.size(), plan.calls.size());
  }

  std::vector<double> prefix_us;
#if OPV_HAVE_CUDA
  if (prefixes) {
    std::fprintf(stderr, "[bench] timing the graph cut after each of %zu calls (%lld replays each)\n",
                 plan.calls.size(), (long long)iters);
    prefix_us = backend::cuda_prefix_times_us(session.backend(), int(iters));
  }
  std::vector<ProbeRow> probe;
  double probe_span = 0;
  if (probes > 0) {
    std::vector<std::vector<backend::CudaProbeBlock>> replays;
    std::vector<std::pair<double, size_t>> spans;
    for (int64_t r = 0; r < probes; ++r) {
      replays.push_back(backend::cuda_probe_replay(session.backend()));
      double span = 0;
      for (const backend::CudaProbeBlock& b : replays.back()) span = std::max(span, b.end_us);
      spans.push_back({span, size_t(r)});
    }
    std::sort(spans.begin(), spans.end());
    probe_span = spans[spans.size() / 2].first;
    probe = probe_rows(replays[spans[spans.size() / 2].second], plan.calls.size());
    if (a.has("--probe-csv")) {
      std::string csv = "replay,call,label,kernel,block,sm,open_us,entry_us,end_us,entry_cycles,end_cycles\n";
      for (size_t r = 0; r < replays.size(); ++r)
        for (const backend::CudaProbeBlock& b : replays[r]) {
          const bool known = b.call >= 0 && size_t(b.call) < plan.calls.size();
          csv += detail::concat(r, ",", b.call, ",\"", known ? plan.calls[size_t(b.call)].label : "", "\",",
                                plan.kernels[size_t(b.kernel)].name, ",", b.block, ",", b.sm, ",", b.open_us, ",",
                                b.entry_us, ",", b.end_us, ",", b.entry_cycles, ",", b.end_cycles, "\n");
        }
      write_file_atomic(a.get("--probe-csv"), csv, "probe records");
      std::fprintf(stderr, "[bench] wrote %s: %lld replays\n", a.get("--probe-csv").c_str(), (long long)probes);
    }
  }
#else
  if (probes > 0) throw UsageError("--probe: this build has no cuda backend");
#endif

  std::vector<KernelRow> rows;
  double profile_total = 0;
  if (profiled) {
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < plan.calls.size(); ++i) {
      const std::string& name = plan.kernels[size_t(plan.calls[i].kernel)].name;
      auto [it, fresh] = index.emplace(name, rows.size());
      if (fresh) rows.push_back({name, 0, 0.0});
      rows[it->second].count += 1;
      rows[it->second].total_ms += per_call[i];
      profile_total += per_call[i];
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const KernelRow& x, const KernelRow& y) { return x.total_ms > y.total_ms; });
  }
  auto share = [&](double ms) { return profile_total > 0 ? ms / profile_total : 0.0; };

  if (a.has("--json")) {
    std::printf("{\"model\": \"%s\", \"backend\": \"%s\", \"threads\": %d, \"warmup\": %lld, \"iters\": %lld, "
                "\"median_ms\": %.6f, \"min_ms\": %.6f, \"p90_ms\": %.6f, \"mean_ms\": %.6f, \"calls\": %zu, "
                "\"inflight\": %d, \"ms_per_frame\": %.6f, \"frames_per_s\": %.1f, \"inputs\": \"%s\", \"kernels\": [",
                json_escape(model).c_str(), json_escape(plan.target).c_str(), bopts.threads, (long long)warmup,
                (long long)iters, st.median_ms, st.min_ms, st.p90_ms, st.mean_ms, plan.calls.size(), inflight,
                ms_per_frame, frames_per_s, inputs_mode);
    for (size_t i = 0; i < rows.size(); ++i)
      std::printf("%s{\"name\": \"%s\", \"count\": %lld, \"total_ms\": %.6f, \"share\": %.6f}", i ? ", " : "",
                  json_escape(rows[i].name).c_str(), (long long)rows[i].count, rows[i].total_ms,
                  share(rows[i].total_ms));
    std::printf("]");
    if (!prefix_us.empty()) {
      std::printf(", \"replay_prefixes_us\": [");
      for (size_t i = 0; i < prefix_us.size(); ++i) std::printf("%s%.3f", i ? ", " : "", prefix_us[i]);
      std::printf("], \"replay_prefix_kernels\": [");
      for (size_t i = 0; i < plan.calls.size(); ++i)
        std::printf("%s\"%s\"", i ? ", " : "", json_escape(plan.kernels[size_t(plan.calls[i].kernel)].name).c_str());
      std::printf("]");
    }
#if OPV_HAVE_CUDA
    if (probes > 0) {
      std::printf(", \"probe_span_us\": %.3f, \"probe\": [", probe_span);
      for (size_t i = 0; i < probe.size(); ++i) {
        const ProbeRow& r = probe[i];
        std::printf("%s{\"call\": %d, \"kernel\": \"%s\", \"blocks\": %lld, \"sms\": %lld, \"per_sm\": %lld, "
                    "\"open_us\": %.3f, \"entry_us\": %.3f, \"entry_last_us\": %.3f, \"end_median_us\": %.3f, "
                    "\"end_last_us\": %.3f, \"work_cycles\": %lld}",
                    i ? ", " : "", r.call, json_escape(plan.kernels[size_t(plan.calls[size_t(r.call)].kernel)].name).c_str(),
                    (long long)r.blocks, (long long)r.sms, (long long)r.per_sm, r.open, r.entry, r.entry_last,
                    r.end_median, r.end_last, (long long)r.work_cycles);
      }
      std::printf("]");
    }
    if (const backend::CudaLoadInfo* cu = backend::cuda_load_info(session.backend()))
      std::printf(", \"modules\": %d, \"sass_modules\": %d, \"load_ms\": %.3f", cu->modules, cu->sass_modules,
                  cu->load_ms);
#endif
    std::printf("}\n");
    return kExitOk;
  }

  std::printf("model %s  backend %s  threads %d  calls %zu\n", model.c_str(), plan.target.c_str(), bopts.threads,
              plan.calls.size());
  std::printf("latency over %lld runs (after %lld warm-up): median %.3f ms  min %.3f ms  p90 %.3f ms\n",
              (long long)iters, (long long)warmup, st.median_ms, st.min_ms, st.p90_ms);
  std::printf("inputs: %s\n", inputs_said);
  if (const std::string code = cuda_code_summary(session.backend()); !code.empty())
    std::printf("code: %s\n", code.c_str());
  if (inflight > 1)
    std::printf("throughput, %d inferences in flight per run: %.4f ms per frame, %.0f frames/s\n", inflight,
                ms_per_frame, frames_per_s);
  if (!prefix_us.empty()) {
    std::printf("\nreplay cut after each call (median of %lld replays with the host wait; us):\n", (long long)iters);
    std::printf("  %4s %-40s %-36s %9s %8s %8s\n", "call", "label", "kernel", "replay", "adds", "alone");
    for (size_t i = 0; i < prefix_us.size() && i < plan.calls.size(); ++i) {
      const plan::Call& c = plan.calls[i];
      const double adds = prefix_us[i] - (i ? prefix_us[i - 1] : 0.0);
      std::printf("  %4zu %-40.40s %-36.36s %9.2f %8.2f %8.2f\n", i, c.label.c_str(),
                  plan.kernels[size_t(c.kernel)].name.c_str(), prefix_us[i], adds, profiled ? 1e3 * per_call[i] : 0.0);
    }
  }
#if OPV_HAVE_CUDA
  if (!probe.empty()) {
    std::printf("\nprobe: the replay of median span (%.2f us) of %lld; us since its first block opened\n", probe_span,
                (long long)probes);
    std::printf("  (gap: from the call before's last end to this call's first entry; tail: from its median end to "
                "its last; cycles: the median block's SM clock from its entry to its end)\n");
    std::printf("  %4s %-36s %6s %4s %6s %8s %8s %8s %8s %8s %6s %6s %7s\n", "call", "kernel", "blocks", "SMs", "per_SM",
                "open", "entry", "entry<", "end_p50", "end", "gap", "tail", "cycles");
    for (const ProbeRow& r : probe) {
      std::printf("  %4d %-36.36s %6lld %4lld %6lld %8.2f %8.2f %8.2f %8.2f %8.2f %6.2f %6.2f %7lld\n", r.call,
                  plan.kernels[size_t(plan.calls[size_t(r.call)].kernel)].name.c_str(), (long long)r.blocks,
                  (long long)r.sms, (long long)r.per_sm, r.open, r.entry, r.entry_last, r.end_median, r.end_last,
                  r.gap, r.end_last - r.end_median, (long long)r.work_cycles);
    }
    double gaps = 0, tails = 0;  // in plan order; calls on parallel branches overlap (negative gaps)
    for (const ProbeRow& r : probe) {
      gaps += r.gap;
      tails += r.end_last - r.end_median;
    }
    std::printf("  sums over the calls: gaps %.2f us, tails %.2f us, of the replay's %.2f us from the first open to the "
                "last end\n", gaps, tails, probe_span);
  }
#endif
  if (!profiled) {
    std::printf("(backend %s reports no per-call times)\n", plan.target.c_str());
    return kExitOk;
  }
  std::printf("\nper kernel (profiled, mean of %lld runs; profiled total %.3f ms):\n", (long long)profile_runs,
              profile_total);
  std::printf("  %-48s %6s %10s %7s\n", "kernel", "count", "total ms", "share");
  for (const KernelRow& r : rows)
    std::printf("  %-48s %6lld %10.3f %6.1f%%\n", r.name.c_str(), (long long)r.count, r.total_ms,
                100.0 * share(r.total_ms));
  return kExitOk;
}

}  // namespace opv::tools
