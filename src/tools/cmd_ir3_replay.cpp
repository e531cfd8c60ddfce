// `opvision ir3 replay CAPTURE`: runs a captured a630 model (tools/ir3_capture.py) kernel by
// kernel on the IR3 simulator -- a simulated Adreno 630 for correctness, not a timing model.
// Inputs come from an .npz (by name) or are random (--seed); weights are read from the ONNX
// model the capture was made from (--model, default: the capture's model file name next to the
// capture or in its parent folder). With --ref REF.npz the outputs are compared by name and
// the line `rel_l2=<x> max_abs_rel=<y>` is printed; exit 1 outside --tol.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <cstring>
#include <random>

#include "ir3/capture.h"
#include "ir3/replay.h"
#include "tools/capture_io.h"
#include "tools/common.h"
#include "tools/npy.h"

namespace opv::tools {

int cmd_ir3_replay(int argc, char** argv) {
  ArgParser p("opvision ir3 replay",
              "Runs a captured Adreno 630 model (tools/ir3_capture.py) kernel by kernel on the IR3 simulator: a "
              "simulated a630 (functional, not timed). Writes the outputs; with --ref compares them and prints "
              "'rel_l2=<x> max_abs_rel=<y>' (exit 0 within --tol, 1 outside, 2 on errors).",
              "CAPTURE_DIR [--inputs IN.npz | --seed S] [-o OUT.npz] [--ref REF.npz]");
  p.positional("CAPTURE_DIR", "a capture directory (capture.json, kernels/, data.bin)")
      .option("--inputs", "IN.npz", "model inputs by name (uint8 NCHW as the ONNX model takes them)")
      .option("--seed", "S", "random uint8 inputs from this seed when --inputs is absent", "0")
      .option("--model", "MODEL.onnx", "the ONNX model the capture was made from (weights); default: found by name")
      .option("--output", "OUT.npz", "write the outputs here", "", "-o")
      .option("--ref", "REF.npz", "reference outputs by name (e.g. onnxruntime's)")
      .option("--tol", "X", "tolerance for rel_l2 and max_abs_rel (fp16 models: 1e-2, DESIGN.md)", "1e-2")
      .option("--trace", "K:G:L", "debugging: print every instruction lane L of work-group G runs in kernel K (index in capture.json), with its result, to stderr")
      .flag("--quiet", "no progress lines on stderr");
  Args a;
  if (!parse_or_help(p, argc, argv, a)) return kExitOk;
  ir3::Capture cap = ir3::Capture::load(a.positionals[0]);
  bool quiet = a.has("--quiet");

  ir3::ReplayOptions opts;
  if (a.has("--trace")) {
    std::vector<int64_t> t;
    const std::string spec = a.get("--trace");
    for (size_t b = 0;;) {
      size_t c = spec.find(':', b);
      std::string x = spec.substr(b, c == std::string::npos ? std::string::npos : c - b);
      char* end = nullptr;
      long long v = std::strtoll(x.c_str(), &end, 10);
      if (x.empty() || *end != '\0' || v < 0 || v > (1 << 30)) throw UsageError("option --trace: expected K:G:L, got '" + spec + "'");
      t.push_back(v);
      if (c == std::string::npos) break;
      b = c + 1;
    }
    if (t.size() != 3) throw UsageError("option --trace: expected K:G:L (kernel, work-group, lane)");
    opts.trace_kernel = static_cast<int>(t[0]), opts.trace_group = static_cast<int>(t[1]), opts.trace_lane = static_cast<int>(t[2]);
  }
  opts.initializer = initializer_reader(capture_model_path(cap, a, "ir3 replay"), "ir3 replay");
  auto t0 = std::chrono::steady_clock::now();
  opts.progress = [&](size_t i, size_t n, const std::string& k) {
    if (quiet) return;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "\r[ir3 replay] launch %zu/%zu %-40s %.1f s", i, n, k.c_str(), s);
    if (i == n) std::fprintf(stderr, "\n");
  };
  if (!quiet) std::fprintf(stderr, "[ir3 replay] %zu kernels, %zu setup steps, %zu launches per inference (simulated a630)\n",
                           cap.kernels.size(), cap.setup.size(), cap.schedule.size());
  ir3::Replayer rep(cap, opts);
  CaptureFeed feed = capture_inputs(cap, a, "ir3 replay");
  NamedArrays outs = capture_outputs(cap, rep.run(feed.bytes));
  const ir3::ReplayStats& st = rep.stats();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!quiet) {
    std::fprintf(stderr, "[ir3 replay] %llu launches, %llu wave instructions, %llu fiber instructions in %.1f s\n",
                 (unsigned long long)st.launches, (unsigned long long)st.instructions,
                 (unsigned long long)st.fiber_instructions, secs);
    std::fprintf(stderr, "[ir3 replay] mad.f32 issued per wave: %llu, in (rpt) groups %llu (%.1f %%)\n",
                 (unsigned long long)st.mad_f32, (unsigned long long)st.mad_f32_packed,
                 st.mad_f32 ? 100.0 * static_cast<double>(st.mad_f32_packed) / static_cast<double>(st.mad_f32) : 0.0);
  }
  if (a.has("--output")) {
    NamedArrays all = feed.arrays;
    for (auto& e : outs) all.push_back(e);
    write_npz(a.get("--output"), all);
  }
  if (!a.has("--ref")) return kExitOk;
  return compare_with_reference(outs, a.get("--ref"), a.get_double("--tol", 1e-2)) ? kExitOk : kExitCheckFailed;
}

}  // namespace opv::tools
