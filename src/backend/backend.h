// The backend interface: a backend loads a plan lowered for it (build kernels, upload/pack
// constants, allocate the arena) and then runs inferences. Load and run are separate: run
// binds inputs/outputs and enqueues; it does not allocate (except on first use of profiling).
// New backends (opencl, cuda, qcom) implement this and register in backend/registry.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "plan/plan.h"

namespace opv::backend {

// The CUDA graph of one inference (cuda backend, src/backend/cuda/graph_deps.h): Branches orders
// the calls and copies by the memory they share (independent calls run concurrently); Chain runs
// them one after another in plan order, as one stream would.
enum class CudaGraph { Branches, Chain };
// How the cuda backend moves a plan input or output between the host and the GPU: Copy, the
// inference's graph copies it between pinned host staging and device memory; Mapped, the staging
// is mapped into the GPU's address space and the kernels read (write) it there, with no copy;
// Auto, Mapped where the plan reads the buffer once (an input that one element-wise or Concat
// call reads element by element; an output no call reads), else Copy (graph_deps.h mapped_io);
// but inputs stay Copy where cuda_inflight > 1 overlaps their uploads with the kernels before.
// Device (inputs only): each input lives in device memory that keeps it between runs, and the graph
// has no upload: run() with host tensors uploads them before the graph (stream-ordered copies), and
// Backend::run_device_inputs() runs on what is there, the last run's inputs or what the caller
// wrote at Backend::input_device() on the GPU (openpilot's flow: the frames are warped into the
// model's input on the GPU and never cross the host link).
enum class CudaIo { Copy, Mapped, Auto, Device };
constexpr int kMaxCudaInflight = 4096;

struct Options {
  int threads = 0;         // CPU threads (0 = backend default)
  std::string device;      // device selector for GPU backends
  bool spin_wait = false;  // GPU backends: wait for an inference's end by polling (one busy core)
  // cpu (CLI: --cpu-precision bf16): dense convolutions read a bf16 copy of their input and bf16
  // weights and accumulate in fp32, where oneDNN has a native bf16 kernel for them (AMX or
  // AVX512-BF16); elsewhere, and for everything else, fp32. Opt-in: bf16 keeps 8 mantissa bits, so
  // the error against the reference grows (the backend's tolerance says by how much).
  bool cpu_bf16 = false;
  // OpenCL (CLI: --cl-command-buffer, --cl-qcom-recording, --cl-cache; formerly the environment
  // switches OPV_CL_COMMAND_BUFFER, OPV_CL_QCOM_RECORDING, OPV_CL_CACHE, which are no longer read).
  bool cl_command_buffer = true;  // replay plans: record into a cl_khr_command_buffer where usable
  bool cl_qcom_recording = true;  // ... else into a cl_qcom_recordable_queues recording
  bool cl_disk_cache = true;      // keep built program binaries in the on-disk cache
  // CUDA (CLI: --cuda-graph, --inflight; the latter formerly the environment switch
  // OPV_CUDA_REPLAYS, which the backend no longer reads).
  CudaGraph cuda_graph = CudaGraph::Branches;  // the shape of the inference's CUDA graph
  int cuda_inflight = 1;  // each run() replays the graph this many times back to back before its one
                          // wait (the same frame: a throughput measurement; 1..kMaxCudaInflight)
  // With cuda_inflight > 1 (CLI: --cuda-overlap on|off): on, each replay's input upload runs on a
  // second stream into one of two device copies of the inputs, alternating, so that it overlaps
  // the previous replay's kernels; off, every replay's graph uploads the inputs itself, after the
  // previous replay has finished (one stream).
  bool cuda_overlap_uploads = true;
  // Inputs and outputs (CLI: --cuda-inputs copy|mapped|auto|device, --cuda-outputs
  // copy|mapped|auto; CudaIo). Mapped and Device inputs have no copy node (nothing for
  // cuda_overlap_uploads to overlap); run() copies the outputs from their staging into the
  // caller's tensors either way. Device is for inputs only (load() refuses it for outputs).
  CudaIo cuda_inputs = CudaIo::Auto;
  CudaIo cuda_outputs = CudaIo::Auto;
  // Machine code (CLI: --cuda-code auto|ptx): true (auto) loads a kernel's stored SASS where it has
  // a cubin this GPU runs (compile --cuda-sass; cuda_abi.h "SASS"), else its PTX; false JIT-compiles
  // the PTX of every kernel (a before/after, or a driver whose ptxas is newer than the compiler's).
  bool cuda_sass = true;
};

// What a backend offers, stated before any load (ggml's backend caps).
// A backend runs plans whose target is its name().
struct Caps {
  std::vector<plan::Layout> layouts;  // buffer layouts it can store
  bool per_call_times = false;        // set_profiling(true) yields call_times_ms()
  std::string device;                 // what it runs on: "host", or the OpenCL "platform / device"
};

// The answer of a supports query: ok, or why not (naming the buffer or call).
struct Support {
  bool ok = true;
  std::string why;
  explicit operator bool() const { return ok; }
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

// Error bounds against the reference backend (see DESIGN.md "Numerics and checks").
struct Tolerance {
  double rel_l2;
  double max_abs_rel;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual Tolerance tolerance() const = 0;
  virtual Caps caps() const = 0;
  // ggml's supports_op, per buffer and per call of a plan whose ids are in range (check_plan_ids).
  // The default buffer query accepts the layouts of caps(); the default call query accepts every
  // call (reference kernels run any op). Device limits count: an opencl image too large for the
  // device is refused here. May throw opv::Error when the device itself cannot be found.
  virtual Support supports_buffer(const plan::Plan& plan, int buffer) const;
  virtual Support supports_call(const plan::Plan& plan, int call) const;
  // Prepares everything a run needs. Starts with require_support(*this, plan), so a plan the
  // backend cannot run fails with the query's reason before anything is built.
  virtual void load(const plan::Plan& plan) = 0;
  // One inference. inputs/outputs follow plan.inputs/plan.outputs order, allocated by the caller.
  // runtime::Session is the one place that checks a caller's inputs (names, dtypes, shapes);
  // backends assert the precondition with RunSignature::check (the same message), nothing more.
  virtual void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) = 0;
  // After load(): memory the backend reads input i (plan.inputs order) from in each run, dense
  // bytes of the input's dtype and shape (the cuda backend's pinned staging), or null. A run
  // whose input tensor's bytes are exactly there skips copying it, so a caller may write an input
  // in place (runtime::Session::staged_inputs). Valid until the next load() or the backend's end.
  virtual void* input_staging(size_t i) { (void)i; return nullptr; }
  // After load(): where input i (plan.inputs order) lives on the device between runs, dense bytes
  // of its dtype and shape, for a caller that writes it there itself (its writes complete before
  // the run; the cuda backend: Options.cuda_inputs Device, an address in the device's primary
  // context); 0 where the backend keeps no such memory.
  virtual uint64_t input_device(size_t i) const { (void)i; return 0; }
  // One inference on the inputs as they are at input_device() (each input must have one): the
  // last run's, or what the caller wrote there. opv::Error where an input has none.
  virtual void run_device_inputs(const std::vector<Tensor*>& outputs);
  // Per-call timing of the following runs (for `opvision bench`). Backends that cannot time
  // individual calls leave call_times_ms() empty.
  virtual void set_profiling(bool on) { (void)on; }
  // Milliseconds per plan call of the most recent run, in plan.calls order.
  virtual std::vector<double> call_times_ms() const { return {}; }
  // Start of each plan call of the most recent profiled run, in ms from the run's start, in
  // plan.calls order; NaN for a call without its own start (a call fused into the one before),
  // empty when the backend records none (a trace then lays call_times_ms() back to back).
  virtual std::vector<double> call_starts_ms() const { return {}; }
};

// The tensors a plan's run binds, as the plan declares them, in plan.inputs / plan.outputs order.
// check_bound() is the one input/output check: runtime::Session reports a caller's wrong input with
// it, and every backend's run() asserts its precondition with check(), so a wrong tensor gets the
// same message whichever way it arrives.
struct RunSignature {
  std::vector<plan::Buffer> inputs, outputs;

  static RunSignature of(const plan::Plan& plan);
  // Throws opv::Error unless the counts match and every tensor passes check_bound().
  void check(const std::vector<const Tensor*>& ins, const std::vector<Tensor*>& outs) const;
  // The outputs' half of check() (a run on inputs already on the device binds only outputs).
  void check_outputs(const std::vector<Tensor*>& outs) const;
};
// Throws opv::InvalidArgument "<role> '<name>' must be f32[1,3,8,8], got f32[1,3,8,9] (the shape differs)"
// unless `t` is non-null with the buffer's dtype and shape. role: "input" or "output".
void check_bound(const plan::Buffer& spec, const Tensor* t, const char* role);

// The bound a run of `plan` on `b` is checked against: the backend's own tolerance, loosened to
// the fp16 bound (1e-2) when the model itself computes in fp16 (plan.meta "precision" = "f16"),
// since then even the reference output carries fp16 rounding.
Tolerance tolerance_for(const Backend& b, const plan::Plan& plan);

// Whether `b` can run `plan`: the plan's target, then every buffer, then every call; the first
// refusal. Throws opv::Error for a structurally broken plan (check_plan_ids).
Support supports(const Backend& b, const plan::Plan& plan);
// Throws opv::Error "<backend> backend: <why>" unless supports(b, plan).
void require_support(const Backend& b, const plan::Plan& plan);
// The ids every backend indexes by: call kernels and buffers in range, calls never write Input or
// Constant buffers, plan.inputs are Input buffers, plan.outputs in range. plan::validate checks
// these and more; this is the part a backend cannot load without. Errors name `who` and the call.
void check_plan_ids(const plan::Plan& plan, const std::string& who);
// "linear, nhwc"
std::string layout_list(const std::vector<plan::Layout>& layouts);

// Backend names known to this build ("reference", "cpu", ...).
std::vector<std::string> available();
// Creates a backend by name; throws opv::Error listing the available ones on an unknown name.
std::unique_ptr<Backend> create(const std::string& name, const Options& opts = {});

}  // namespace opv::backend
