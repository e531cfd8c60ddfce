// Helpers shared by the opvision subcommands (see common.h).
#include "tools/common.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "compiler/compile.h"
#include "core/error.h"
#include "core/file_io.h"
#include "plan/artifact.h"
#include "tools/npy.h"
#if OPV_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace opv::tools {

namespace {
constexpr const char* kArtifactExt = ".opv";
constexpr const char* kOnnxExt = ".onnx";
constexpr double kP90 = 0.9;

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}
}  // namespace

bool parse_or_help(const ArgParser& parser, int argc, char** argv, Args& out) {
  out = parser.parse(argc, argv);
  if (out.help) {
    std::cout << parser.help();
    return false;
  }
  return true;
}

bool is_artifact_path(const std::string& path) {
  if (ends_with(path, kArtifactExt)) return true;
  if (ends_with(path, kOnnxExt)) return false;
  // Sniff the magic from a regular file only: a FIFO, directory or device (/dev/zero) is
  // refused here, before any reader could block on it or try to read it whole.
  uint64_t size = 0;
  int fd = open_regular_file(path, "model", kMaxInputFileBytes, &size);
  char head[plan::kArtifactMagicSize] = {};
  ssize_t got = ::pread(fd, head, sizeof head, 0);
  ::close(fd);
  return got > 0 && plan::has_artifact_magic(head, size_t(got));
}

plan::Plan load_model(const std::string& path, const std::string& backend) {
  if (is_artifact_path(path)) {
    plan::Plan p = plan::load_artifact(path);
    OPV_CHECK(backend.empty() || backend == p.target, path, ": the artifact was compiled for backend '", p.target,
              "', not '", backend, "' (recompile the .onnx with --target ", backend, ")");
    return p;
  }
  CompileOptions opts;
  opts.target = backend.empty() ? kDefaultBackend : backend;
  return compile_onnx(path, opts);
}

ArgParser& backend_flag_options(ArgParser& p) {
  return p
      .option("--cl-command-buffer", "on|off",
              "opencl, replay plans: record the calls once into a cl_khr_command_buffer where the device has a "
              "compatible one (replaces the environment switch OPV_CL_COMMAND_BUFFER=0, no longer read)", "on")
      .option("--cl-qcom-recording", "on|off",
              "opencl, replay plans without a command buffer: record into a cl_qcom_recordable_queues recording "
              "(Adreno; replaces OPV_CL_QCOM_RECORDING=0, no longer read)", "on")
      .option("--cl-cache", "on|off",
              "opencl: keep built kernel binaries in the disk cache ($OPV_CACHE_DIR, else "
              "$XDG_CACHE_HOME/opvision/cl, else ~/.cache/opvision/cl; replaces OPV_CL_CACHE=0, no longer read)",
              "on")
      .option("--cuda-graph", "branches|chain",
              "cuda: the inference's CUDA graph orders calls and copies by the memory they share, so independent "
              "calls run as parallel branches (branches), or runs them one after another in plan order (chain)",
              "branches")
      .option("--cuda-inputs", "copy|mapped|auto|device",
              "cuda: copy, each inference copies its inputs from pinned host memory to the GPU before the first "
              "kernel; mapped, the kernels read them in pinned host memory mapped into the GPU's address space, "
              "over the host link, with no copy; auto, mapped for an input that one element-wise or Concat call "
              "reads once (but copied where bench --inflight N overlaps uploads with kernels), else copy; device, "
              "they stay in device memory between runs, uploaded before the graph, and with --staged-inputs "
              "uploaded once and read there by every run (frames made on the GPU, as openpilot's are)",
              "auto")
      .option("--cuda-outputs", "copy|mapped|auto",
              "cuda: copy, each inference copies its outputs from the GPU to pinned host memory after the last "
              "kernel; mapped, the kernels write them there, in pinned host memory mapped into the GPU's address "
              "space, with no copy; auto, mapped for an output no call reads, else copy",
              "auto")
      .option("--cuda-code", "auto|ptx",
              "cuda: auto loads each kernel's machine code (SASS) where the artifact holds a cubin this GPU runs "
              "(compile --cuda-sass), else JIT-compiles its PTX; ptx JIT-compiles the PTX of every kernel",
              "auto")
      .option("--cpu-precision", "fp32|bf16",
              "cpu: bf16 runs the dense convolutions over >= 128 input channels with bf16 inputs and weights "
              "and fp32 accumulation where oneDNN has a native bf16 kernel (AMX, AVX512-BF16), everything else in "
              "fp32; faster there, with more error (verify reports it; tolerance rel_l2 1e-2)",
              "fp32");
}

bool on_off(const Args& a, const std::string& name, const std::string& dflt) {
  const std::string v = a.get(name, dflt);
  if (v != "on" && v != "off") throw UsageError(name + " must be on or off, not '" + v + "'");
  return v == "on";
}

static backend::CudaIo cuda_io(const Args& a, const std::string& name, bool inputs) {
  const std::string v = a.get(name, "auto");
  if (v == "copy") return backend::CudaIo::Copy;
  if (v == "mapped") return backend::CudaIo::Mapped;
  if (v == "auto") return backend::CudaIo::Auto;
  if (v == "device" && inputs) return backend::CudaIo::Device;
  throw UsageError(name + " must be copy, mapped" + (inputs ? ", auto or device" : " or auto") + ", not '" + v + "'");
}

backend::Options backend_options(const Args& a) {
  backend::Options o;
  o.threads = int(a.get_int("--threads", 0, 0, kMaxThreads));
  o.device = a.get("--device", "");
  o.spin_wait = a.has("--spin");
  o.cl_command_buffer = on_off(a, "--cl-command-buffer");
  o.cl_qcom_recording = on_off(a, "--cl-qcom-recording");
  o.cl_disk_cache = on_off(a, "--cl-cache");
  const std::string graph = a.get("--cuda-graph", "branches");
  if (graph != "branches" && graph != "chain")
    throw UsageError("--cuda-graph must be branches or chain, not '" + graph + "'");
  o.cuda_graph = graph == "chain" ? backend::CudaGraph::Chain : backend::CudaGraph::Branches;
  o.cuda_inputs = cuda_io(a, "--cuda-inputs", true);
  o.cuda_outputs = cuda_io(a, "--cuda-outputs", false);
  const std::string code = a.get("--cuda-code", "auto");
  if (code != "auto" && code != "ptx") throw UsageError("--cuda-code must be auto or ptx, not '" + code + "'");
  o.cuda_sass = code == "auto";
  const std::string prec = a.get("--cpu-precision", "fp32");
  if (prec != "fp32" && prec != "bf16")
    throw UsageError("--cpu-precision must be fp32 or bf16, not '" + prec + "'");
  o.cpu_bf16 = prec == "bf16";
  return o;
}

ArgParser& staged_inputs_option(ArgParser& p) {
  return p.flag("--staged-inputs",
                "write the inputs once where the backend reads them from (cuda: its pinned staging; with "
                "--cuda-inputs device, bench: its device memory) and run from "
                "there, so no run copies them on the host, as a caller that writes its frames in place would "
                "(Session::staged_inputs; backends without such memory: no effect)");
}

void maybe_stage_inputs(const Args& a, runtime::Session& session, runtime::NamedTensors* inputs) {
  if (!a.has("--staged-inputs")) return;
  runtime::NamedTensors staged = session.staged_inputs();
  if (staged.size() != inputs->size()) return;  // left to Session::run, which names what is wrong
  for (auto& [name, t] : staged) {
    const Tensor* given = nullptr;
    for (const auto& [n, v] : *inputs)
      if (n == name) given = &v;
    if (!given || given->dtype() != t.dtype() || given->shape() != t.shape()) return;  // likewise
    std::memcpy(t.raw(), given->raw(), t.nbytes());
  }
  *inputs = std::move(staged);
}

bool stage_device_inputs(const Args& a, runtime::Session& session, const runtime::NamedTensors& inputs) {
  if (!a.has("--staged-inputs")) return false;
  for (const auto& [name, address] : session.device_inputs())
    if (address == 0) return false;
  session.run(inputs);  // uploads them (Session::run checks them as always)
  return true;
}

runtime::NamedTensors gather_inputs(const Args& a, const runtime::Session& session, bool allow_random) {
  auto specs = session.input_specs();
  std::vector<bool> have(specs.size(), false);
  runtime::NamedTensors inputs;
  auto index_of = [&](const std::string& name) -> int {
    for (size_t i = 0; i < specs.size(); ++i)
      if (specs[i].first == name) return int(i);
    return -1;
  };
  auto put = [&](const std::string& name, Tensor t) {
    int i = index_of(name);
    for (auto& [n, v] : inputs)
      if (n == name) {
        v = std::move(t);
        return;
      }
    inputs.emplace_back(name, std::move(t));
    have[size_t(i)] = true;
  };
  if (a.has("--inputs")) {
    std::string path = a.get("--inputs");
    for (auto& [name, t] : read_npz(path))
      if (index_of(name) >= 0) put(name, std::move(t));
  }
  for (const std::string& spec : a.all("--input")) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw UsageError("--input expects NAME=FILE.npy, got '" + spec + "'");
    std::string name = spec.substr(0, eq);
    OPV_CHECK(index_of(name) >= 0, "--input ", name, ": the model has no input of that name");
    put(name, read_npy(spec.substr(eq + 1)));
  }
  bool missing = std::find(have.begin(), have.end(), false) != have.end();
  if (missing) {
    // Inputs from files are all-or-nothing unless --seed asks for random values for the rest.
    bool from_files = a.has("--inputs") || a.has("--input");
    if (!allow_random || (from_files && !a.has("--seed"))) {
      std::string names;
      for (size_t i = 0; i < specs.size(); ++i)
        if (!have[i]) names += (names.empty() ? "" : ", ") + specs[i].first;
      fail("missing model input(s): ", names,
           a.has("--inputs") ? " (not in " + a.get("--inputs") + ")" : std::string(),
           allow_random ? "; give them with --input NAME=FILE.npy or add --seed S for random values" : "");
    }
    uint64_t seed = uint64_t(a.get_int("--seed", 0));
    for (auto& [name, t] : session.random_inputs(seed))
      if (!have[size_t(index_of(name))]) put(name, std::move(t));
  }
  // Model order. Dtypes and shapes are checked by Session::run, the one input check.
  runtime::NamedTensors ordered;
  for (const auto& [name, buf] : specs)
    for (auto& [n, t] : inputs)
      if (n == name) ordered.emplace_back(name, std::move(t));
  return ordered;
}

LatencyStats latency_stats(std::vector<double> ms) {
  LatencyStats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  s.min_ms = ms.front();
  s.median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  // Nearest-rank percentile.
  size_t rank = size_t(kP90 * double(n) + 0.999999);
  s.p90_ms = ms[std::min(n, std::max<size_t>(rank, 1)) - 1];
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean_ms = sum / double(n);
  return s;
}

std::string cuda_code_summary(const backend::Backend& b) {
#if OPV_HAVE_CUDA
  if (const backend::CudaLoadInfo* cu = backend::cuda_load_info(b))
    return detail::concat(cu->modules, " modules, ", cu->sass_modules, " from SASS",
                          cu->sass_sm ? detail::concat(" (sm_", cu->sass_sm, ")") : std::string(),
                          ", the rest JIT-compiled from PTX; loaded in ", int64_t(cu->load_ms + 0.5), " ms",
                          cu->sass_refused.empty() ? "" : "; the driver refused a stored cubin: ", cu->sass_refused);
#else
  (void)b;
#endif
  return "";
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

void progress(const char* phase, const std::string& msg) {
  std::fprintf(stderr, "[%s] %s\n", phase, msg.c_str());
  std::fflush(stderr);
}

std::string fmt(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, format, ap);
  va_end(ap);
  std::string s(size_t(n > 0 ? n : 0), '\0');
  if (n > 0) std::vsnprintf(s.data(), size_t(n) + 1, format, ap2);
  va_end(ap2);
  return s;
}

}  // namespace opv::tools
