// `opvision run MODEL`: one inference on inputs from files or seeded random values; prints a
// summary of each output and optionally writes them to an .npz.
#include <cmath>
#include <cstdio>

#include "backend/opencl/opencl_backend.h"
#if OPV_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif
#include "tools/common.h"
#include "tools/npy.h"
#include "tools/qcom_session.h"

namespace opv::tools {

namespace {
constexpr int64_t kPreviewValues = 6;  // output values shown in the summary

void print_summary(const std::string& name, const Tensor& t) {
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.get_f64(i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  std::printf("%s: %s%s min=%.6g max=%.6g mean=%.6g  [", name.c_str(), dtype_name(t.dtype()),
              shape_str(t.shape()).c_str(), lo, hi, t.numel() ? sum / double(t.numel()) : 0.0);
  for (int64_t i = 0; i < std::min(t.numel(), kPreviewValues); ++i) std::printf("%s%.6g", i ? ", " : "", t.get_f64(i));
  std::printf("%s]\n", t.numel() > kPreviewValues ? ", ..." : "");
}
}  // namespace

int cmd_run(int argc, char** argv) {
  ArgParser p("opvision run", "Runs a model once and prints a summary of each output.",
              "MODEL(.onnx|.opv) [options]   (--backend qcom: MODEL is a capture directory)");
  p.positional("MODEL", "an ONNX model (compiled on the fly) or a .opv artifact")
      .option("--inputs", "IN.npz", "inputs by name (keys = model input names)")
      .option("--input", "NAME=FILE.npy", "one input from an .npy file", "", "", true)
      .option("--seed", "S", "seed of the random values for inputs not given by file", "0")
      .option("--output", "OUT.npz", "write the outputs (keys = model output names)", "", "-o")
      .option("--backend", "B", "backend to run on (.opv: defaults to the artifact's target)", kDefaultBackend)
      .option("--threads", "N", "CPU threads (0 = backend default)", "0")
      .option("--device", "SEL", "OpenCL device: index N, P:D or a name substring (default: the first GPU, else the first device; see 'opvision devices'); --backend qcom: sim or kgsl (default: kgsl when /dev/kgsl-3d0 exists, else the simulated a630)")
      .option("--model", "MODEL.onnx", "--backend qcom: the ONNX model holding the capture's weights (default: found by name next to the capture)")
      .flag("--spin", "opencl, cuda: wait for each inference's end by polling its completion (lower latency, one busy CPU core)");
  backend_flag_options(p);
  staged_inputs_option(p);
  Args a;
  if (!parse_or_help(p, argc, argv, a)) return kExitOk;

  const std::string& model = a.positionals[0];
  if (a.get("--backend", kDefaultBackend) == kQcomBackend) {  // MODEL is a capture directory
    QcomSession qs(model, a, "run");
    CaptureFeed feed = capture_inputs(qs.capture(), a, "run");
    double t0 = now_ms();
    NamedArrays outputs = qs.run(feed);
    double t1 = now_ms();
    std::fprintf(stderr, "[run] %s on qcom (%s): %.3f ms, one submission of %llu packets, %llu barriers\n", model.c_str(),
                 qs.device_name().c_str(), t1 - t0, (unsigned long long)qs.stream_stats().packets,
                 (unsigned long long)qs.stream_stats().barriers);
    for (const auto& [name, t] : outputs) print_summary(name, t);
    if (a.has("--output")) write_npz(a.get("--output"), outputs);
    return kExitOk;
  }
  runtime::Session session(load_model(model, a.get("--backend")), backend_options(a));
  runtime::NamedTensors inputs = gather_inputs(a, session, true);
  maybe_stage_inputs(a, session, &inputs);
  double t0 = now_ms();
  const runtime::NamedTensors& outputs = session.run(inputs);
  double t1 = now_ms();
  std::fprintf(stderr, "[run] %s on %s: %.3f ms\n", model.c_str(), session.plan().target.c_str(), t1 - t0);
  if (const backend::OpenCLLoadInfo* cl = backend::opencl_load_info(session.backend()))
    std::fprintf(stderr, "[run] opencl device %s: calls %s\n", cl->device.c_str(),
                 cl->command_buffer   ? "replayed from a command buffer"
                 : cl->qcom_recording ? "replayed from a qcom recording"
                 : cl->replay         ? "enqueued without host synchronisation"
                                      : "enqueued, the host waiting after each");
#if OPV_HAVE_CUDA
  if (const backend::CudaLoadInfo* cu = backend::cuda_load_info(session.backend()))
    std::fprintf(stderr,
                 "[run] cuda device %s: one CUDA graph (%s) of %d nodes, %d edges (%d programmatic), depth %d, width %d%s%s%s\n",
                 cu->device.c_str(), cu->branches ? "branches" : "chain", cu->graph_nodes, cu->graph_edges,
                 cu->pdl_edges, cu->graph_depth, cu->graph_width,
                 cu->mapped_inputs ? detail::concat("; ", cu->mapped_inputs, " input(s) read in mapped host memory").c_str() : "",
                 cu->device_inputs ? detail::concat("; ", cu->device_inputs, " input(s) kept in device memory").c_str() : "",
                 cu->mapped_outputs ? detail::concat("; ", cu->mapped_outputs, " output(s) written in mapped host memory").c_str() : "");
#endif
  if (const std::string code = cuda_code_summary(session.backend()); !code.empty())
    std::fprintf(stderr, "[run] cuda code: %s\n", code.c_str());
  for (const auto& [name, t] : outputs) print_summary(name, t);
  if (a.has("--output")) {
    write_npz(a.get("--output"), outputs);
    std::fprintf(stderr, "[run] wrote %s\n", a.get("--output").c_str());
  }
  return kExitOk;
}

}  // namespace opv::tools
