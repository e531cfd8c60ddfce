// opvision: the command-line tool. Dispatches to one cmd_<name>() per subcommand (one file
// each in src/tools/); every error becomes `opvision: error: ...` on stderr and exit code 2.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "backend/backend.h"
#include "core/error.h"
#include "core/limits.h"
#include "plan/artifact.h"
#include "tools/common.h"

namespace {

using opv::tools::kExitError;
using opv::tools::kExitOk;

struct Command {
  const char* name;
  int (*fn)(int, char**);
  const char* summary;
};

const Command kCommands[] = {
    {"demo", opv::tools::cmd_demo, "generate/compile/save/reload/run/verify/benchmark a model in one go"},
    {"make-model", opv::tools::cmd_make_model, "write an openpilot-architecture ONNX model with random weights"},
    {"compile", opv::tools::cmd_compile, "compile an ONNX model into a .opv artifact"},
    {"opt", opv::tools::cmd_opt, "run plan passes on a saved .opv artifact"},
    {"run", opv::tools::cmd_run, "run a model on inputs from .npz/.npy files or random inputs"},
    {"bench", opv::tools::cmd_bench, "measure latency and per-kernel time"},
    {"inspect", opv::tools::cmd_inspect, "ops, kernels, buffers, memory, FLOPs of a model's plan"},
    {"verify", opv::tools::cmd_verify, "compare a model's outputs with a reference .npz"},
    {"devices", opv::tools::cmd_devices, "list OpenCL platforms and devices with their capabilities"},
    {"ir3", opv::tools::cmd_ir3, "Adreno IR3 tools: dis, asm, sim, check"},
    {"qcom", opv::tools::cmd_qcom, "qcom backend: decode PM4 streams, run a capture through KGSL or the simulated a630"},
};

void print_help() {
  std::printf("usage: opvision <command> [options]   (opvision <command> --help for details)\n\n");
  std::printf("opvision compiles openpilot's driving-vision ONNX network ahead of time and runs it.\n\n");
  std::printf("commands:\n");
  for (const Command& c : kCommands) std::printf("  %-12s %s\n", c.name, c.summary);
  std::printf("\noptions (before the command):\n");
  std::printf("  -h, --help              show this help\n  --version               show the version\n");
  std::printf("  --max-tensor-elems N    refuse any tensor with more than N elements (default 2^28)\n");
  std::printf("  --max-tensor-bytes N    refuse any tensor larger than N bytes; K/M/G suffixes (default 1G)\n");
  std::printf("                          Both apply to models at import, artifacts at load and .npy/.npz inputs.\n");
  std::string backends;
  for (const std::string& b : opv::backend::available()) backends += (backends.empty() ? "" : ", ") + b;
  std::printf("\nbackends in this build: %s (default: %s)\n", backends.c_str(), opv::tools::kDefaultBackend);
}

// "1073741824", "64M", "2G": a positive count with an optional binary K/M/G/T suffix.
int64_t parse_size(const char* opt, const std::string& v) {
  size_t n = 0;
  while (n < v.size() && v[n] >= '0' && v[n] <= '9') ++n;
  int shift = 0;
  std::string suffix = v.substr(n);
  if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else if (suffix == "T" || suffix == "t") shift = 40;
  else if (!suffix.empty()) n = 0;
  int64_t x = 0;
  bool ok = n > 0 && n <= 18;
  for (size_t i = 0; ok && i < n; ++i) x = x * 10 + (v[i] - '0');
  ok = ok && x > 0 && x <= (INT64_MAX >> shift);
  if (!ok)
    throw opv::tools::UsageError(std::string(opt) + ": expected a positive count with an optional K/M/G/T suffix, got '" +
                                 v + "'");
  return x << shift;
}

int dispatch(int argc, char** argv) {
  // global options before the command: the process-wide tensor limits (core/limits.h)
  opv::Limits lim = opv::default_limits();
  while (argc >= 2 && (!std::strncmp(argv[1], "--max-tensor-elems", 18) || !std::strncmp(argv[1], "--max-tensor-bytes", 18))) {
    std::string a = argv[1];
    std::string name = a.substr(0, 18), value;
    if (a.size() > 18 && a[18] == '=') {
      value = a.substr(19);
    } else if (a.size() > 18) {
      throw opv::tools::UsageError("unknown option '" + a + "' (see 'opvision --help')");
    } else if (argc >= 3) {
      value = argv[2];
      --argc, ++argv;
    } else {
      throw opv::tools::UsageError(name + " needs a value (see 'opvision --help')");
    }
    (name == "--max-tensor-elems" ? lim.max_tensor_elems : lim.max_tensor_bytes) = parse_size(name.c_str(), value);
    --argc, ++argv;
  }
  opv::set_default_limits(lim);
  if (argc < 2) {
    print_help();
    return kExitError;
  }
  const char* cmd = argv[1];
  if (!std::strcmp(cmd, "--help") || !std::strcmp(cmd, "-h") || !std::strcmp(cmd, "help")) {
    print_help();
    return kExitOk;
  }
  if (!std::strcmp(cmd, "--version")) {
    std::printf("opvision %s (artifact format %u)\n", opv::tools::kVersion, opv::plan::kArtifactVersion);
    return kExitOk;
  }
  for (const Command& c : kCommands)
    if (!std::strcmp(cmd, c.name)) return c.fn(argc - 1, argv + 1);
  throw opv::tools::UsageError(std::string("unknown command '") + cmd + "' (see 'opvision --help')");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "opvision: error: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opvision: error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "opvision: error: unknown exception\n");
  }
  return kExitError;
}
