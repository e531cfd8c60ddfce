// opvision: the command-line tool. Dispatches to one cmd_<name>() per subcommand (one file
// each in src/tools/); every error becomes `opvision: error: ...` on stderr and exit code 2.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "backend/backend.h"
#include "core/error.h"
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
  std::printf("\noptions:\n  -h, --help   show this help\n  --version    show the version\n");
  std::string backends;
  for (const std::string& b : opv::backend::available()) backends += (backends.empty() ? "" : ", ") + b;
  std::printf("\nbackends in this build: %s (default: %s)\n", backends.c_str(), opv::tools::kDefaultBackend);
}

int dispatch(int argc, char** argv) {
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
