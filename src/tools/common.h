// Helpers shared by the opvision subcommands: loading a model (.onnx compiled on the fly or a
// .opv artifact), gathering inputs, timing statistics, progress messages.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "plan/plan.h"
#include "runtime/session.h"
#include "tools/args.h"

namespace opv::tools {

constexpr const char* kDefaultBackend = "cpu";
constexpr const char* kVersion = "0.1.0";
constexpr int64_t kMaxThreads = 1024;         // --threads range: 0 (backend default) .. kMaxThreads
constexpr int64_t kMaxIters = 1'000'000'000;  // --iters / --warmup upper bound

// Subcommand entry points; argv[0] is the subcommand name. Return the process exit code.
int cmd_demo(int argc, char** argv);
int cmd_make_model(int argc, char** argv);
int cmd_compile(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_verify(int argc, char** argv);
int cmd_ir3(int argc, char** argv);
int cmd_ir3_replay(int argc, char** argv);  // "ir3 replay" (cmd_ir3_replay.cpp)
int cmd_qcom(int argc, char** argv);  // "qcom decode|run" (cmd_qcom.cpp)
int cmd_opt(int argc, char** argv);
int cmd_devices(int argc, char** argv);

// Exit codes of every subcommand.
constexpr int kExitOk = 0;
constexpr int kExitCheckFailed = 1;  // ran fine, but a check (tolerance, determinism) failed
constexpr int kExitError = 2;        // bad usage, bad input, any opv::Error

// Parses argv with `parser`; prints the help and returns false when --help was given.
bool parse_or_help(const ArgParser& parser, int argc, char** argv, Args& out);

// True when `path` is an .opv artifact (by extension, else by its magic bytes).
bool is_artifact_path(const std::string& path);

// MODEL as .onnx: compiled for `backend` (empty: kDefaultBackend). MODEL as .opv: loaded; its
// target must equal `backend` when that is given.
plan::Plan load_model(const std::string& path, const std::string& backend);

// Declares the backend options that backend_options() reads besides --threads/--device/--spin: the
// OpenCL ones (--cl-command-buffer, --cl-qcom-recording, --cl-cache) and the cpu backend's
// --cpu-precision; for the commands that run a model.
ArgParser& backend_flag_options(ArgParser& p);
// Backend options from --threads, --device, --spin, the --cl-* options and --cpu-precision
// (absent: backend default). A --cl-* value other than on/off, or a precision other than fp32 or
// bf16, is a UsageError.
backend::Options backend_options(const Args& a);
// An on|off option's value (`dflt` when absent); anything else is a usage error naming the option.
bool on_off(const Args& a, const std::string& name, const std::string& dflt = "on");

// Model inputs for `session` from --inputs NPZ (keys = input names; other keys are ignored),
// --input NAME=FILE.npy (repeatable, overrides) and, when `allow_random`, random values from
// --seed (default 0) for inputs not given by file: all of them when no file was given, else only
// when --seed is given explicitly. Otherwise a missing input is an error naming it. Dtypes and
// shapes are left to Session::run (the one input check).
runtime::NamedTensors gather_inputs(const Args& a, const runtime::Session& session, bool allow_random);
// --staged-inputs (run, bench): the option's definition; and, when given, `inputs` copied once
// into the memory the backend reads them from (Session::staged_inputs), which then stands in
// for them, so runs copy nothing on the host. Matched by name; an input missing there is left
// to Session::run's check.
ArgParser& staged_inputs_option(ArgParser& p);
void maybe_stage_inputs(const Args& a, runtime::Session& session, runtime::NamedTensors* inputs);
// --staged-inputs where the backend keeps every input in device memory (cuda, --cuda-inputs
// device): `inputs` written there once, by one run, and true: later runs read them where they are
// (Session::run_device_inputs), as a caller whose frames are made on the GPU would. Else false.
bool stage_device_inputs(const Args& a, runtime::Session& session, const runtime::NamedTensors& inputs);

// The cuda backend's loaded code, for run and bench: "26 modules, 26 from SASS (sm_90), the rest
// JIT-compiled from PTX; loaded in 40 ms" (and the driver's answer where it refused a stored cubin);
// "" for other backends or before a load.
std::string cuda_code_summary(const backend::Backend& b);

struct LatencyStats {
  double median_ms = 0, min_ms = 0, p90_ms = 0, mean_ms = 0;
};
LatencyStats latency_stats(std::vector<double> ms);

double now_ms();  // monotonic clock
void progress(const char* phase, const std::string& msg);  // "[phase] msg" on stderr
std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace opv::tools
