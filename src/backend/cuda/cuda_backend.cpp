// CUDA backend (see cuda_backend.h; the plan contract is src/target/cuda/cuda_abi.h, the driver
// layer cuda_driver.h).
// Creation: the driver (dlopen, cuInit) and the device Options.device selects (index, default 0);
//   no context yet, so caps() and the supports queries cost no device memory.
// supports_buffer/supports_call (the caps query): every buffer Linear or NHWC (Inputs and Outputs
//   Linear: they are the caller's tensors); Intermediates at a
//   kAlign-aligned arena offset inside Plan::arena_bytes, Constants at a kAlign-aligned offset
//   inside Plan::weights; every call's kernel has PTX source (Kernel.options == kPtxFormat) and an
//   entry, well-formed SASS attrs if any (sass.h: each a cubin for the SM it is listed as), an
//   integer attr "cuda_smem" from 0 to kMaxDynamicSmem if any (hostile plans), and a launch
//   geometry within the device's block and grid limits.
// load():
//   1. require_support; drop the previous plan's objects;
//   2. context: the device's primary context (retained once, kept across loads), pushed around
//      every driver call (cu::ScopedContext) so the caller's current context is left alone; one
//      non-blocking stream;
//   3. allocate(): one device allocation each for the arena and the weights (uploaded once), one
//      per Input/Output buffer (Buffer::bytes), all but the weights zero-filled; Intermediates
//      point into the arena and Constants into the weights at Buffer::offset (cuMemAlloc aligns
//      to 256 bytes, so every pointer keeps the contract's kAlign); one pinned staging block per
//      plan input and output; with Options.cuda_inflight > 1 and cuda_overlap_uploads, a second
//      device copy of every input (the upload slot the next replay writes while this one runs);
//      for the inputs (outputs) mapped under Options.cuda_inputs (cuda_outputs; CudaIo, mapped_io),
//      no device buffer: their staging is mapped (CU_MEMHOSTALLOC_DEVICEMAP) and the calls read
//      (write) it there, with no copy nodes or copies;
//      inputs kept on the device (CudaIo::Device) have their device buffer and staging but no copy
//      node: run() uploads them before the graph, run_device_inputs() runs on what is there;
//   4. build(): cuModuleLoadDataEx per kernel a call uses: its stored cubin where it has one this
//      device runs (cuda_abi.h "SASS"; not with Options.cuda_sass false), else, or where the driver
//      refuses the cubin, the PTX, JIT-compiled for the device (a failure quotes the JIT log);
//      cuModuleGetFunction(entry) (kernels compiled for clusters of
//      more than 8 blocks get CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED; kernels with attr
//      "cuda_smem" > 0 get CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = that many bytes, which
//      every launch of them, direct or graph node, passes as sharedMemBytes); per call the argument array
//      (device pointers of the outputs, then the present inputs) checked against the kernel's
//      parameters where the driver can tell (cuFuncGetParamInfo), and grid/block from
//      Call.global/local (0 = 1; grid = ceil(global / local)) checked against the kernel's
//      maximum block size;
//   5. record(): the graph of one inference built node by node (cuGraphCreate, cuGraphAddMemcpyNode
//      for the input copies staging -> device and the output copies device -> staging,
//      cuGraphAddKernelNode per call), each node added with the dependencies graph_deps.h computes
//      from the plan: with Options.cuda_graph Branches (the default) the memory conflicts (RAW,
//      WAR, WAW over arena byte ranges, so buffers that share arena bytes are ordered whatever
//      their ids; calls of one kernel ordered for their module workspace), transitively reduced,
//      so independent calls are parallel branches that the driver runs concurrently; with Chain
//      every node on the one before (plan order, what capturing one stream gives). Built rather
//      than captured from several streams: the edges are exactly the computed ones, with no
//      assignment of calls to streams and no fork/join events. An edge from a kernel node into a
//      kernel compiled with the programmatic-dependent-launch prologue (kernel attr "cuda_pdl",
//      cuda_abi.h) is programmatic where the device (sm_90+) and the driver (cuGraphAddDependencies
//      with edge data) allow: that kernel's blocks may launch before its predecessors have completed
//      (as their blocks exit, or with PdlMode::Early once they have all started) and wait in the
//      prologue. Then cuGraphInstantiate and
//      cuGraphUpload. With the second input slot: two more graphs, the same without the input
//      copies, one reading each slot, a second (copy) stream and the events that order them.
// run(): the caller's inputs into staging (large copies split over threads); cuGraphLaunch (Options.cuda_inflight times back to
//   back, a throughput measurement: N inferences of the same frame in flight, the outputs the
//   last's; with the second slot, replay r's upload on the copy stream into slot r % 2 overlaps
//   replay r-1's kernels, see replay_overlapped), or, while profiling, the same work enqueued
//   call by call in plan order on the one stream with an event before and after each launch and
//   one before the input copies (call_times_ms, call_starts_ms from the run's start); one cuStreamSynchronize (or
//   cuStreamQuery polling with Options.spin_wait); outputs out of staging. The device never
//   touches the caller's tensors, so an error leaves them and the backend consistent.
// Invariants: run() allocates nothing (profiling events are created by set_profiling or load);
// every driver call is checked and its error names the call and the buffer or plan call.
#include "backend/cuda/cuda_backend.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/graph_deps.h"
#include "backend/cuda/sass.h"
#include "core/error.h"
#include "target/cuda/cuda_abi.h"

namespace opv::backend {

namespace {

using cuda::dense_bytes;
using cuda::storage_of;
using plan::BufferKind;
using plan::Layout;

constexpr size_t kJitLogBytes = 8192;  // JIT error log kept for a failed module load
constexpr int kMaxKernelParams = 4096; // bound of the parameter count probe (cuFuncGetParamInfo)
constexpr int kUnknownParams = -1;      // the driver cannot list a kernel's parameters
constexpr int kPortableClusterBlocks = 8;  // wider thread-block clusters need the function's opt-in
constexpr uint64_t kProbeWords = 5;  // words of a probe record (codegen.cpp kProbePrelude; cuda_abi.h "Probe")
// Bound of a kernel's dynamic shared memory (attr cuda_smem) before the device is asked: above any
// GPU's per-block limit (227 KB on sm_90), so only a corrupt or hostile plan passes it.
constexpr int64_t kMaxDynamicSmem = int64_t(1) << 20;

std::string call_name(size_t i, const plan::Call& c) { return "call " + std::to_string(i) + " (" + c.label + ")"; }

// Launch dimensions of a call per cuda_abi.h: block = local, threads = global, 0 meaning 1.
struct Launch {
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
};
Launch launch_of(const plan::Call& c) {
  Launch l;
  for (int d = 0; d < 3; ++d) {
    const int64_t threads = c.global[size_t(d)] == 0 ? 1 : c.global[size_t(d)];
    l.block[size_t(d)] = c.local[size_t(d)] == 0 ? 1 : c.local[size_t(d)];
    l.grid[size_t(d)] = (threads + l.block[size_t(d)] - 1) / l.block[size_t(d)];
  }
  return l;
}

// Why kernel `k`'s attr "cuda_smem" (bytes of dynamic shared memory per launch, cuda_abi.h) is
// unusable, "" when absent or an integer from 0 to kMaxDynamicSmem.
std::string dynamic_smem_problem(const plan::Kernel& k) {
  const auto it = k.attrs.map().find("cuda_smem");
  if (it == k.attrs.map().end()) return "";
  const int64_t* bytes = std::get_if<int64_t>(&it->second);
  if (!bytes) return "has a non-integer attr cuda_smem (bytes of dynamic shared memory)";
  if (*bytes < 0 || *bytes > kMaxDynamicSmem)
    return detail::concat("asks for ", *bytes, " bytes of dynamic shared memory (attr cuda_smem); 0 to ",
                          kMaxDynamicSmem, " (cuda_abi.h)");
  return "";
}

struct CallRt {
  CUfunction fn = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned smem = 0;               // dynamic shared memory bytes (kernel attr cuda_smem)
  std::vector<int> arg_buffers;    // plan buffers of the arguments: outputs, then present inputs
  std::vector<CUdeviceptr> args;  // their device pointers (input slot 0)
  std::vector<void*> params;      // &args[i], what cuLaunchKernel takes
  bool pdl = false;               // edges from kernel nodes into it may be programmatic (cuda_abi.h)
};

// Pinned host memory one input or output crosses through.
struct Staging {
  void* host = nullptr;
  CUdeviceptr dev = 0;  // the plan buffer's device allocation
  size_t bytes = 0;     // dense bytes of the tensor
};

// One host copy of run(): destination, source, bytes (copy_bytes).
struct HostCopy {
  void* dst;
  const void* src;
  size_t bytes;
};

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(const Options& o) : opts_(o), dev_(cu::select_device(o.device)) {
    OPV_CHECK(o.cuda_inflight >= 1 && o.cuda_inflight <= kMaxCudaInflight, "cuda backend: ", o.cuda_inflight,
              " inferences in flight; 1 to ", kMaxCudaInflight);
    OPV_CHECK(o.cuda_outputs != CudaIo::Device,
              "cuda backend: outputs are not kept on the device (outputs: copy, mapped or auto; device is for inputs)");
  }
  ~CudaBackend() override {
    if (!ctx_) return;
    try {
      cu::ScopedContext scope(ctx_);
      release();
    } catch (const Error&) {  // never throw from a destructor
    }
    cu::driver().cuDevicePrimaryCtxRelease(dev_.device);
  }
  std::string name() const override { return "cuda"; }
  Tolerance tolerance() const override { return {1e-2, 1e-2}; }  // fp16 storage, as opencl
  Caps caps() const override {
    return {{Layout::Linear, Layout::NHWC}, /*per_call_times=*/true, "CUDA: " + dev_.name + " (" + dev_.sm() + ")"};
  }
  Support supports_buffer(const plan::Plan& plan, int buffer) const override;
  Support supports_call(const plan::Plan& plan, int call) const override;
  void load(const plan::Plan& plan) override;
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) override;
  void set_profiling(bool on) override;
  std::vector<double> call_times_ms() const override { return profiling_ ? times_ms_ : std::vector<double>{}; }
  std::vector<double> call_starts_ms() const override { return profiling_ ? starts_ms_ : std::vector<double>{}; }
  const CudaLoadInfo* info() const { return loaded_ ? &info_ : nullptr; }
  void* input_staging(size_t i) override {
    return loaded_ && i < in_stage_.size() && in_stage_[i].bytes ? in_stage_[i].host : nullptr;
  }
  uint64_t input_device(size_t i) const override {
    return loaded_ && i < in_device_.size() && in_device_[i] ? uint64_t(in_stage_[i].dev) : 0;
  }
  void run_device_inputs(const std::vector<Tensor*>& outputs) override;
  std::vector<double> prefix_times_us(int replays);
  std::vector<CudaProbeBlock> probe_replay();

 private:
  // build()'s last step where the kernels were compiled with the probe (cuda_abi.h, "Probe").
  void attach_probe(const std::vector<std::pair<int, CUmodule>>& probed);
  // load()'s phases, in order (see the file comment).
  void allocate(const plan::Plan& plan);
  void build();
  void record(const plan::Plan& plan);
  // The graph of `nodes` instantiated and uploaded: with input_slot < 0 as they are; else without
  // the input copies, the calls reading that device copy of the inputs.
  CUgraphExec instantiate(const std::vector<cuda::GraphNode>& nodes, int input_slot);
  // Replays with uploads overlapped: inputs mapped or kept on the device under Options.cuda_inputs
  // have nothing to upload, so a plan with any such input replays its one graph.
  bool overlapped() const {
    return overlap_asked() && std::find(in_mapped_.begin(), in_mapped_.end(), true) == in_mapped_.end() &&
           std::find(in_device_.begin(), in_device_.end(), true) == in_device_.end();
  }
  // The options ask for replays whose uploads overlap the kernels before (Options.cuda_inflight > 1
  // with cuda_overlap_uploads).
  bool overlap_asked() const { return opts_.cuda_inflight > 1 && opts_.cuda_overlap_uploads; }
  CUdeviceptr input_ptr(size_t i, int slot) const { return slot == 1 ? in_slot1_[i] : in_stage_[i].dev; }
  void replay_overlapped();
  // run()'s and run_device_inputs()'s shared part: the inference on the device (direct when timed,
  // else the graph, cuda_inflight times), the wait, the outputs out of staging, the call times.
  void run_on_device(const std::vector<Tensor*>& outputs);
  // Stream-ordered copies staging -> device of the copied inputs (kept_on_device false: what an
  // enqueued inference copies) or of the inputs kept on the device (true: what run() uploads).
  void upload_inputs(bool kept_on_device);
  CUdeviceptr device_alloc(size_t bytes, const std::string& what, bool zero = true);
  void create_events();
  // Enqueues one inference on the stream in plan order: input copies, launches (between events_
  // when timed), output copies.
  void enqueue(bool timed);
  void wait(const char* what);
  void release();  // every object of the loaded plan; the context must be current

  Options opts_;
  cu::DeviceInfo dev_;
  CUcontext ctx_ = nullptr;  // the primary context, retained by the first load()
  CUstream stream_ = nullptr;
  std::vector<plan::Buffer> buffers_;
  std::vector<plan::Kernel> kernels_;
  std::vector<plan::Call> calls_;
  std::vector<int> inputs_, outputs_;
  RunSignature sig_;
  std::vector<CUdeviceptr> allocs_;  // every device allocation this backend owns
  std::vector<void*> host_allocs_;   // every pinned host block
  std::vector<CUdeviceptr> buf_ptr_; // per plan buffer
  std::vector<CUmodule> modules_;
  std::vector<CallRt> rt_;
  CUdeviceptr probe_ = 0;    // the probe's records (attach_probe), 0 without the probe
  int64_t probe_cap_ = 0;    // records it holds: two replays' blocks
  std::vector<Staging> in_stage_, out_stage_;
  std::vector<bool> in_mapped_, out_mapped_;  // per plan input / output: mapped (mapped_io), no copy
  std::vector<bool> in_device_;  // per plan input: kept in device memory (CudaIo::Device), no copy node
  std::vector<HostCopy> host_copies_;         // run()'s, reused (run allocates nothing once warm)
  CUgraphExec graph_ = nullptr;
  std::vector<cuda::GraphNode> nodes_;  // graph_'s nodes (record())
  // overlapped(): the second device copy of each input (plan.inputs order), the copy stream, the
  // graphs without input copies per slot, per slot the events "uploaded" (copy stream) and
  // "consumed" (the replay that read the slot is done).
  std::vector<CUdeviceptr> in_slot1_;
  CUstream copy_stream_ = nullptr;
  std::array<CUgraphExec, 2> slot_graph_{};
  std::array<CUevent, 2> uploaded_{}, consumed_{};
  // Once profiling was on: the run's start (before the input copies), then per call i the events
  // before and after its launch at 1 + 2i and 2 + 2i.
  std::vector<CUevent> events_;
  bool loaded_ = false;
  bool profiling_ = false;
  std::vector<double> times_ms_, starts_ms_;
  CudaLoadInfo info_;
};

Support CudaBackend::supports_buffer(const plan::Plan& plan, int buffer) const {
  if (Support s = Backend::supports_buffer(plan, buffer); !s) return s;  // Linear or NHWC
  const plan::Buffer& b = plan.buffers[size_t(buffer)];
  if (b.layout != Layout::Linear && (b.kind == BufferKind::Input || b.kind == BufferKind::Output))
    return Support::no(detail::concat("plan ", plan::buffer_kind_name(b.kind), " '", b.name, "' is ", plan::layout_name(b.layout),
                                      "; the cuda backend copies inputs and outputs as Linear tensors"));
  if (b.bytes < 0 || numel(b.shape) < 0)
    return Support::no(detail::concat("buffer '", b.name, "' has a negative size"));
  const int64_t need = storage_of(b);
  if (b.kind == BufferKind::Intermediate) {
    if (b.offset < 0 || b.offset % plan::kAlign != 0 || b.offset + need > plan.arena_bytes)
      return Support::no(detail::concat("intermediate '", b.name, "' at arena offset ", b.offset, " (", need,
                                        " bytes) is not a ", plan::kAlign, "-byte aligned range inside the arena (",
                                        plan.arena_bytes, " bytes; is the plan memory-planned?)"));
  } else if (b.kind == BufferKind::Constant) {
    if (b.offset < 0 || b.offset % plan::kAlign != 0 || b.offset + dense_bytes(b) > int64_t(plan.weights.size()))
      return Support::no(detail::concat("constant '", b.name, "' at weights offset ", b.offset, " (",
                                        dense_bytes(b), " bytes) is not a ", plan::kAlign,
                                        "-byte aligned range inside the weights (", plan.weights.size(), " bytes)"));
  }
  return Support::yes();
}

Support CudaBackend::supports_call(const plan::Plan& plan, int ci) const {
  const plan::Call& c = plan.calls[size_t(ci)];
  const plan::Kernel& k = plan.kernels[size_t(c.kernel)];
  const std::string who = call_name(size_t(ci), c) + " kernel '" + k.name + "'";
  if (k.source.empty())
    return Support::no(who + " has no source; target cuda has no host fallback (cuda_abi.h)");
  if (k.options != plan::cuda::kPtxFormat)
    return Support::no(detail::concat(who, " has options '", k.options, "', not '", plan::cuda::kPtxFormat,
                                      "': the cuda backend loads only PTX (run the plan pass nvrtc; cuda_abi.h)"));
  if (k.entry.empty()) return Support::no(who + " has PTX but no entry");
  if (const std::string why = cuda_sass::problem(k); !why.empty()) return Support::no(who + " " + why);
  if (const std::string why = dynamic_smem_problem(k); !why.empty()) return Support::no(who + " " + why);
  for (int d = 0; d < 3; ++d)
    if (c.global[size_t(d)] < 0 || c.local[size_t(d)] < 0)
      return Support::no(detail::concat(who, " has a negative launch size in dimension ", d));
  const Launch l = launch_of(c);
  const int64_t threads = l.block[0] * l.block[1] * l.block[2];
  if (threads > dev_.max_threads_per_block)
    return Support::no(detail::concat(who, " has blocks of ", l.block[0], "x", l.block[1], "x", l.block[2], " = ",
                                      threads, " threads; ", dev_.name, " allows ", dev_.max_threads_per_block));
  for (int d = 0; d < 3; ++d) {
    if (l.block[size_t(d)] > dev_.max_block[d])
      return Support::no(detail::concat(who, " has block size ", l.block[size_t(d)], " in dimension ", d, "; ",
                                        dev_.name, " allows ", dev_.max_block[d]));
    if (l.grid[size_t(d)] > dev_.max_grid[d])
      return Support::no(detail::concat(who, " needs ", l.grid[size_t(d)], " blocks in dimension ", d, "; ",
                                        dev_.name, " allows ", dev_.max_grid[d]));
  }
  return Support::yes();
}

void CudaBackend::release() {
  const cu::Driver& d = cu::driver();
  if (stream_) d.cuStreamSynchronize(stream_);
  if (copy_stream_) d.cuStreamSynchronize(copy_stream_);
  if (graph_) d.cuGraphExecDestroy(graph_);
  graph_ = nullptr;
  for (CUgraphExec& g : slot_graph_) {
    if (g) d.cuGraphExecDestroy(g);
    g = nullptr;
  }
  for (auto* evs : {&uploaded_, &consumed_})
    for (CUevent& e : *evs) {
      if (e) d.cuEventDestroy(e);
      e = nullptr;
    }
  if (copy_stream_) d.cuStreamDestroy(copy_stream_);
  copy_stream_ = nullptr;
  in_slot1_.clear();
  for (CUevent e : events_) d.cuEventDestroy(e);
  events_.clear();
  for (CUmodule m : modules_) d.cuModuleUnload(m);
  modules_.clear();
  for (CUdeviceptr p : allocs_) d.cuMemFree(p);
  allocs_.clear();
  probe_ = 0;
  probe_cap_ = 0;
  for (void* h : host_allocs_) d.cuMemFreeHost(h);
  host_allocs_.clear();
  if (stream_) d.cuStreamDestroy(stream_);
  stream_ = nullptr;
  rt_.clear();
  buf_ptr_.clear();
  in_stage_.clear();
  out_stage_.clear();
  in_mapped_.clear();
  out_mapped_.clear();
  in_device_.clear();
  loaded_ = false;
}

void CudaBackend::load(const plan::Plan& plan) {
  require_support(*this, plan);
  const cu::Driver& d = cu::driver();
  if (!ctx_) cu::check(d.cuDevicePrimaryCtxRetain(&ctx_, dev_.device), "cuDevicePrimaryCtxRetain", dev_.name);
  cu::ScopedContext scope(ctx_);
  release();  // re-loading: drop everything of the previous plan first
  info_ = {};
  info_.device = dev_.name + " (" + dev_.sm() + ")";
  info_.driver_version = d.version;
  buffers_ = plan.buffers;
  kernels_ = plan.kernels;
  calls_ = plan.calls;
  inputs_ = plan.inputs;
  outputs_ = plan.outputs;
  sig_ = RunSignature::of(plan);
  try {
    cu::check(d.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    allocate(plan);  // steps 3-5 of the file comment
    build();
    if (profiling_) create_events();
    record(plan);
    wait("after load");
  } catch (...) {
    release();
    throw;
  }
  times_ms_.assign(calls_.size(), 0.0);
  starts_ms_.assign(calls_.size(), 0.0);
  loaded_ = true;
}

CUdeviceptr CudaBackend::device_alloc(size_t bytes, const std::string& what, bool zero) {
  const cu::Driver& d = cu::driver();
  CUdeviceptr p = 0;
  bytes = std::max<size_t>(bytes, 1);
  cu::check(d.cuMemAlloc(&p, bytes), "cuMemAlloc", detail::concat(what, " (", bytes, " bytes)"));
  allocs_.push_back(p);
  OPV_ASSERT(p % uint64_t(plan::kAlign) == 0);  // cuMemAlloc aligns to at least 256 bytes
  if (zero) cu::check(d.cuMemsetD8Async(p, 0, bytes, stream_), "cuMemsetD8Async", what);
  return p;
}

// load() step 3, allocate: device memory for the arena, the weights (uploaded) and each
// input/output; pointers of every plan buffer; pinned staging for the plan's inputs and outputs.
void CudaBackend::allocate(const plan::Plan& plan) {
  const cu::Driver& d = cu::driver();
  const CUdeviceptr arena = plan.arena_bytes > 0 ? device_alloc(size_t(plan.arena_bytes), "arena") : 0;
  CUdeviceptr weights = 0;
  if (!plan.weights.empty()) {
    // Stream-ordered; from pageable memory the driver stages the bytes before returning.
    weights = device_alloc(plan.weights.size(), "weights", /*zero=*/false);
    cu::check(d.cuMemcpyHtoDAsync(weights, plan.weights.data(), plan.weights.size(), stream_), "cuMemcpyHtoDAsync",
              detail::concat("weights (", plan.weights.size(), " bytes)"));
  }
  // Inputs and outputs read or written in their mapped staging (Options.cuda_inputs, cuda_outputs).
  // Auto keeps the input copies of replays whose uploads overlap the previous replay's kernels:
  // read over the host link, the inputs would hold up the kernels instead.
  const CudaIo in_io = opts_.cuda_inputs == CudaIo::Auto && overlap_asked() ? CudaIo::Copy : opts_.cuda_inputs;
  for (int b : inputs_) {
    in_mapped_.push_back(cuda::mapped_io(plan, b, in_io));
    in_device_.push_back(in_io == CudaIo::Device);
  }
  for (int b : outputs_) out_mapped_.push_back(cuda::mapped_io(plan, b, opts_.cuda_outputs));
  std::vector<bool> mapped_buf(buffers_.size(), false);  // by plan buffer
  for (size_t i = 0; i < inputs_.size(); ++i) mapped_buf[size_t(inputs_[i])] = in_mapped_[i];
  for (size_t i = 0; i < outputs_.size(); ++i) mapped_buf[size_t(outputs_[i])] = out_mapped_[i];
  buf_ptr_.assign(buffers_.size(), 0);
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const plan::Buffer& b = buffers_[i];
    switch (b.kind) {
      case BufferKind::Intermediate: buf_ptr_[i] = arena + CUdeviceptr(b.offset); break;
      case BufferKind::Constant: buf_ptr_[i] = weights + CUdeviceptr(b.offset); break;
      case BufferKind::Input:
      case BufferKind::Output:
        if (mapped_buf[i]) break;  // the mapped staging, below
        buf_ptr_[i] = device_alloc(size_t(storage_of(b)), "buffer '" + b.name + "'");
        break;
    }
  }
  // Mapped (Options.cuda_inputs, cuda_outputs; mapped_io): the staging is also the device buffer
  // the kernels read or write (its whole storage, the bytes past the dense ones zeroed).
  auto stage = [&](int b, bool mapped) {
    Staging s;
    s.dev = buf_ptr_[size_t(b)];
    s.bytes = size_t(dense_bytes(buffers_[size_t(b)]));
    const size_t bytes = std::max<size_t>(mapped ? std::max<size_t>(s.bytes, size_t(storage_of(buffers_[size_t(b)])))
                                                 : s.bytes, 1);
    const std::string what = detail::concat(mapped ? "mapped " : "", "staging of '", buffers_[size_t(b)].name, "' (",
                                            bytes, " bytes)");
    cu::check(d.cuMemHostAlloc(&s.host, bytes, mapped ? CU_MEMHOSTALLOC_DEVICEMAP : 0), "cuMemHostAlloc", what);
    host_allocs_.push_back(s.host);
    if (mapped) {
      std::memset(s.host, 0, bytes);
      cu::check(d.cuMemHostGetDevicePointer(&s.dev, s.host, 0), "cuMemHostGetDevicePointer", what);
      OPV_CHECK(s.dev % uint64_t(plan::kAlign) == 0, "cuda backend: ", what, " is mapped at a device address not aligned to ",
                plan::kAlign, " bytes");
      buf_ptr_[size_t(b)] = s.dev;
    }
    return s;
  };
  for (size_t i = 0; i < inputs_.size(); ++i) {
    in_stage_.push_back(stage(inputs_[i], in_mapped_[i]));
    info_.mapped_inputs += in_mapped_[i];
    info_.device_inputs += in_device_[i];
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    out_stage_.push_back(stage(outputs_[i], out_mapped_[i]));
    info_.mapped_outputs += out_mapped_[i];
  }
  host_copies_.reserve(std::max(inputs_.size(), outputs_.size()));
  if (overlapped())
    for (int b : inputs_)
      in_slot1_.push_back(device_alloc(size_t(storage_of(buffers_[size_t(b)])),
                                       "second upload slot of input '" + buffers_[size_t(b)].name + "'"));
}

// The number of parameters of `fn`, each checked to be a device pointer, where the driver can tell
// (cuFuncGetParamInfo, CUDA 12.4+), else kUnknownParams. The probe asks for the index past the
// last parameter, which answers CUDA_ERROR_INVALID_VALUE: compute-sanitizer lists that one
// expected API error per kernel.
int pointer_params(CUfunction fn, const plan::Kernel& k, const std::string& who) {
  const cu::Driver& d = cu::driver();
  if (!d.cuFuncGetParamInfo) return kUnknownParams;
  size_t offset = 0, size = 0;
  int n = 0;
  CUresult r = CUDA_SUCCESS;
  while (n < kMaxKernelParams && (r = d.cuFuncGetParamInfo(fn, size_t(n), &offset, &size)) == CUDA_SUCCESS) {
    OPV_CHECK(size == sizeof(CUdeviceptr), "cuda backend: ", who, ": kernel '", k.entry, "' parameter ", n, " is ",
              size, " bytes; every parameter is a device pointer (", sizeof(CUdeviceptr), " bytes, cuda_abi.h)");
    ++n;
  }
  return r == CUDA_ERROR_INVALID_VALUE ? n : kUnknownParams;  // anything else: no answer
}

// Whether this build and the driver can add programmatic graph edges (cuGraphAddDependencies_v2).
bool pdl_edges_supported(const cu::Driver& d) {
#if CUDA_VERSION >= 12030
  return d.cuGraphAddDependencies != nullptr;
#else
  (void)d;
  return false;
#endif
}

// load() step 4, build: one module per kernel a call uses, one function each; per call the
// argument array and the launch dimensions, checked against the kernel.
void CudaBackend::build() {
  const cu::Driver& d = cu::driver();
  std::vector<CUfunction> fns(kernels_.size(), nullptr);
  std::vector<std::pair<int, CUmodule>> probed;  // kernels compiled with the probe, their modules
  for (const plan::Call& c : calls_) {
    const plan::Kernel& k = kernels_[size_t(c.kernel)];
    CUfunction& fn = fns[size_t(c.kernel)];
    if (fn) continue;
    std::vector<char> log(kJitLogBytes, '\0');
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* vals[] = {log.data(), reinterpret_cast<void*>(uintptr_t(log.size() - 1))};
    CUmodule m = nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    // The stored SASS this GPU runs, if any (cuda_abi.h "SASS"); where the driver refuses it (an
    // older driver than the compiler's cubin format, a simulator), the PTX as without it.
    if (const int sm = opts_.cuda_sass ? cuda_sass::pick(k, dev_.cc_major, dev_.cc_minor) : 0; sm) {
      const std::string& cubin = k.attrs.s(plan::cuda::sass_attr(sm));
      if (const CUresult rs = d.cuModuleLoadDataEx(&m, cubin.data(), 2, opts, vals); rs == CUDA_SUCCESS) {
        ++info_.sass_modules;
        info_.sass_sm = std::max(info_.sass_sm, sm);
      } else {
        m = nullptr;
        if (info_.sass_refused.empty()) {
          const std::string text = cu::error_text(rs);
          const bool log_new = log[0] && text.find(log.data()) == std::string::npos;
          info_.sass_refused = detail::concat("kernel '", k.name, "' sm_", sm, ": ", text,
                                              log_new ? detail::concat(" (", log.data(), ")") : std::string());
        }
        log.assign(log.size(), '\0');
      }
    }
    const CUresult r = m ? CUDA_SUCCESS : d.cuModuleLoadDataEx(&m, k.source.c_str(), 2, opts, vals);
    info_.load_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r != CUDA_SUCCESS) {
      std::string text(log.data());
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      cu::check(r, "cuModuleLoadDataEx",
                detail::concat("kernel '", k.name, "' (entry '", k.entry, "')", text.empty() ? "" : "; JIT log:\n",
                               text));
    }
    modules_.push_back(m);
    ++info_.modules;
    CUdeviceptr var = 0;
    if (d.cuModuleGetGlobal && d.cuModuleGetGlobal(&var, nullptr, m, "opv_probe_dst") == CUDA_SUCCESS)
      probed.push_back({c.kernel, m});
    cu::check(d.cuModuleGetFunction(&fn, m, k.entry.c_str()), "cuModuleGetFunction",
              detail::concat("kernel '", k.name, "' entry '", k.entry, "'"));
    // A kernel compiled for thread-block clusters wider than the portable 8 (ffn.cpp's hidden
    // split of 12 blocks) launches only once the function allows it.
    int cluster = 0;
    if (d.cuFuncGetAttribute(&cluster, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, fn) == CUDA_SUCCESS &&
        cluster > kPortableClusterBlocks)
      cu::check(d.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1), "cuFuncSetAttribute",
                detail::concat("kernel '", k.name, "': a cluster of ", cluster, " blocks"));
    // Dynamic shared memory beyond the default 48 KB (less the static bytes) launches only once the
    // function allows it; set whenever there is any, so the limit is the device's alone.
    if (const int64_t smem = k.attrs.i("cuda_smem", 0); smem > 0)  // 0 to kMaxDynamicSmem (supports_call)
      cu::check(d.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(smem)),
                "cuFuncSetAttribute",
                detail::concat("kernel '", k.name, "': ", smem, " bytes of dynamic shared memory (attr cuda_smem)"));
  }
  std::vector<int> params(kernels_.size(), kUnknownParams);  // per kernel, counted once
  // Programmatic edges need a Hopper-or-newer device and a driver with edge data (and, per call,
  // the kernel's prologue: attr cuda_pdl).
  const bool pdl_ok = dev_.cc_major >= 9 && pdl_edges_supported(d);
  rt_.resize(calls_.size());
  for (size_t ci = 0; ci < calls_.size(); ++ci) {
    const plan::Call& c = calls_[ci];
    const plan::Kernel& k = kernels_[size_t(c.kernel)];
    CallRt& r = rt_[ci];
    r.fn = fns[size_t(c.kernel)];
    r.smem = unsigned(k.attrs.i("cuda_smem", 0));
    std::vector<int>& args = r.arg_buffers;
    args = c.outputs;
    for (int b : c.inputs)
      if (b >= 0) args.push_back(b);
    for (int b : args) r.args.push_back(buf_ptr_[size_t(b)]);
    for (CUdeviceptr& p : r.args) r.params.push_back(&p);
    int& n = params[size_t(c.kernel)];
    if (n == kUnknownParams) n = pointer_params(r.fn, k, call_name(ci, c));
    OPV_CHECK(n == kUnknownParams || size_t(n) == args.size(), "cuda backend: ", call_name(ci, c), ": kernel '",
              k.entry, "' takes ", n, " parameters, the call binds ", args.size(),
              " (outputs then present inputs, cuda_abi.h)");
    const Launch l = launch_of(c);
    for (int dim = 0; dim < 3; ++dim) {
      r.grid[dim] = unsigned(l.grid[size_t(dim)]);  // within the device limits (supports_call)
      r.block[dim] = unsigned(l.block[size_t(dim)]);
    }
    int max_threads = 0;
    cu::check(d.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, r.fn), "cuFuncGetAttribute",
              call_name(ci, c));
    const int64_t threads = l.block[0] * l.block[1] * l.block[2];
    OPV_CHECK(threads <= max_threads, "cuda backend: ", call_name(ci, c), ": blocks of ", threads,
              " threads, but kernel '", k.entry, "' allows at most ", max_threads, " on ", dev_.name,
              " (registers or __launch_bounds__)");
    r.pdl = pdl_ok && k.attrs.i("cuda_pdl", 0) != 0;
    ++info_.launches;
  }
  if (!probed.empty()) attach_probe(probed);
}

// The probe (--cuda-tune probe=1; codegen.cpp kProbePrelude): one device buffer of records, [0] the
// count written, [1] the capacity, records of kProbeWords words from [4]; each probed module's
// opv_probe_dst points at it and its opv_probe_kernel holds the plan's kernel index.
void CudaBackend::attach_probe(const std::vector<std::pair<int, CUmodule>>& probed) {
  const cu::Driver& d = cu::driver();
  int64_t blocks = 0;
  for (const CallRt& r : rt_) blocks += int64_t(r.grid[0]) * r.grid[1] * r.grid[2];
  probe_cap_ = 2 * blocks;
  probe_ = device_alloc(size_t(4 + kProbeWords * probe_cap_) * sizeof(uint64_t), "probe records");
  const uint64_t cap = uint64_t(probe_cap_);
  cu::check(d.cuMemcpyHtoDAsync(probe_ + sizeof(uint64_t), &cap, sizeof cap, stream_), "cuMemcpyHtoDAsync",
            "probe capacity");
  std::vector<uint32_t> ids;
  ids.reserve(probed.size());  // stable addresses until the stream wait below
  for (const auto& [kernel, m] : probed) {
    CUdeviceptr dst = 0, id = 0;
    size_t dst_bytes = 0, id_bytes = 0;
    const std::string what = "kernel '" + kernels_[size_t(kernel)].name + "' probe";
    cu::check(d.cuModuleGetGlobal(&dst, &dst_bytes, m, "opv_probe_dst"), "cuModuleGetGlobal", what);
    cu::check(d.cuModuleGetGlobal(&id, &id_bytes, m, "opv_probe_kernel"), "cuModuleGetGlobal", what);
    OPV_CHECK(dst_bytes == sizeof(uint64_t) && id_bytes == sizeof(uint32_t), "cuda backend: ", what,
              ": opv_probe_dst / opv_probe_kernel are ", dst_bytes, " / ", id_bytes, " bytes, not 8 / 4");
    ids.push_back(uint32_t(kernel));
    cu::check(d.cuMemcpyHtoDAsync(dst, &probe_, sizeof probe_, stream_), "cuMemcpyHtoDAsync", what);
    cu::check(d.cuMemcpyHtoDAsync(id, &ids.back(), sizeof(uint32_t), stream_), "cuMemcpyHtoDAsync", what);
  }
  wait("probe setup");
}

// One replay of the inference with the probe's count reset before it; its records, each block's
// call found by its kernel: that kernel's calls in plan order take its records in the order their
// blocks passed the entry, a grid's worth each (a call's blocks all pass it after those of the
// kernel's call before it: the later call depends on the earlier's outputs or on a call that
// does, through the calls between).
std::vector<CudaProbeBlock> CudaBackend::probe_replay() {
  OPV_CHECK(loaded_, "cuda backend: probe before load()");
  OPV_CHECK(probe_ != 0, "cuda backend: the plan's kernels have no probe (compile with --cuda-tune probe=1)");
  const cu::Driver& d = cu::driver();
  cu::ScopedContext scope(ctx_);
  cu::check(d.cuMemsetD8Async(probe_, 0, sizeof(uint64_t), stream_), "cuMemsetD8Async", "probe count");
  if (graph_)
    cu::check(d.cuGraphLaunch(graph_, stream_), "cuGraphLaunch", "probe replay");
  else
    enqueue(false);
  wait("probe replay");
  uint64_t n = 0;
  cu::check(d.cuMemcpyDtoHAsync(&n, probe_, sizeof n, stream_), "cuMemcpyDtoHAsync", "probe count");
  wait("probe count");
  OPV_CHECK(n <= uint64_t(probe_cap_), "cuda backend: the probe replay wrote ", n, " records, room for ", probe_cap_);
  std::vector<uint64_t> raw(size_t(kProbeWords * n));
  if (n)
    cu::check(d.cuMemcpyDtoHAsync(raw.data(), probe_ + 4 * sizeof(uint64_t), raw.size() * sizeof(uint64_t), stream_),
              "cuMemcpyDtoHAsync", "probe records");
  wait("probe records");
  std::vector<CudaProbeBlock> out(static_cast<size_t>(n));
  uint64_t t0 = UINT64_MAX;
  for (uint64_t i = 0; i < n; ++i) t0 = std::min(t0, raw[kProbeWords * i]);
  std::vector<std::vector<size_t>> by_kernel(kernels_.size());
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t* r = &raw[kProbeWords * i];
    CudaProbeBlock& b = out[size_t(i)];
    b.kernel = int(r[3] >> 40);
    b.sm = uint32_t((r[3] >> 32) & 0xff);
    b.block = uint32_t(r[3]);
    b.open_us = 1e-3 * double(r[0] - t0);
    b.entry_us = 1e-3 * double(r[1] - t0);
    b.end_us = 1e-3 * double(r[2] - t0);
    b.entry_cycles = uint32_t(r[4] >> 32);
    b.end_cycles = uint32_t(r[4]);
    OPV_CHECK(b.kernel >= 0 && size_t(b.kernel) < kernels_.size(), "cuda backend: probe record ", i, " names kernel ",
              b.kernel, " of ", kernels_.size());
    by_kernel[size_t(b.kernel)].push_back(size_t(i));
  }
  for (size_t k = 0; k < by_kernel.size(); ++k) {
    std::vector<size_t>& recs = by_kernel[k];
    std::stable_sort(recs.begin(), recs.end(), [&](size_t a, size_t b) { return out[a].entry_us < out[b].entry_us; });
    size_t next = 0;
    for (size_t ci = 0; ci < calls_.size() && next < recs.size(); ++ci) {
      if (size_t(calls_[ci].kernel) != k) continue;
      const CallRt& r = rt_[ci];
      const size_t blocks = size_t(r.grid[0]) * r.grid[1] * r.grid[2];
      for (size_t j = 0; j < blocks && next < recs.size(); ++j) out[recs[next++]].call = int(ci);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const CudaProbeBlock& a, const CudaProbeBlock& b) {
    return a.call != b.call ? a.call < b.call : a.block < b.block;
  });
  return out;
}

void CudaBackend::enqueue(bool timed) {
  const cu::Driver& d = cu::driver();
  if (timed) cu::check(d.cuEventRecord(events_[0], stream_), "cuEventRecord", "start of inference");
  upload_inputs(/*kept_on_device=*/false);  // device inputs: uploaded by run()
  for (size_t ci = 0; ci < rt_.size(); ++ci) {
    CallRt& r = rt_[ci];
    if (timed) cu::check(d.cuEventRecord(events_[1 + 2 * ci], stream_), "cuEventRecord", call_name(ci, calls_[ci]));
    cu::check(d.cuLaunchKernel(r.fn, r.grid[0], r.grid[1], r.grid[2], r.block[0], r.block[1], r.block[2], r.smem,
                               stream_, r.params.empty() ? nullptr : r.params.data(), nullptr),
              "cuLaunchKernel",
              detail::concat(call_name(ci, calls_[ci]), " kernel '", kernels_[size_t(calls_[ci].kernel)].entry,
                             "' grid ", r.grid[0], "x", r.grid[1], "x", r.grid[2], " block ", r.block[0], "x",
                             r.block[1], "x", r.block[2],
                             r.smem ? detail::concat(" dynamic shared memory ", r.smem, " bytes") : ""));
    if (timed) cu::check(d.cuEventRecord(events_[2 + 2 * ci], stream_), "cuEventRecord", call_name(ci, calls_[ci]));
  }
  for (size_t i = 0; i < out_stage_.size(); ++i)
    if (out_stage_[i].bytes && !out_mapped_[i])
      cu::check(d.cuMemcpyDtoHAsync(out_stage_[i].host, out_stage_[i].dev, out_stage_[i].bytes, stream_),
                "cuMemcpyDtoHAsync", "output '" + buffers_[size_t(outputs_[i])].name + "'");
}

// A 1-D copy of `bytes` as a memcpy node's parameters; the caller sets the two ends.
CUDA_MEMCPY3D copy_1d(size_t bytes) {
  CUDA_MEMCPY3D m{};
  m.WidthInBytes = bytes;
  m.Height = m.Depth = 1;
  m.srcPitch = m.dstPitch = bytes;
  m.srcHeight = m.dstHeight = 1;
  return m;
}

// load() step 5, record: the graph of one inference built with the dependencies of graph_deps.h,
// instantiated and uploaded; with overlapped(), also one graph per input slot without the input
// copies, the copy stream and the slot events.
void CudaBackend::record(const plan::Plan& plan) {
  const cu::Driver& d = cu::driver();
  std::vector<cuda::GraphNode> nodes = cuda::graph_nodes(plan, opts_.cuda_graph);
  std::vector<bool> in_no_copy = in_mapped_;  // the kernels read those stagings, or the device inputs
  for (size_t i = 0; i < in_no_copy.size(); ++i) in_no_copy[i] = in_no_copy[i] || in_device_[i];
  nodes = cuda::without_copies(nodes, in_no_copy, out_mapped_);
  graph_ = instantiate(nodes, -1);
  nodes_ = nodes;
  if (overlapped()) {
    for (int slot : {0, 1}) slot_graph_[size_t(slot)] = instantiate(nodes, slot);
    cu::check(d.cuStreamCreate(&copy_stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate", "upload stream");
    for (auto* evs : {&uploaded_, &consumed_})
      for (CUevent& e : *evs) cu::check(d.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate", "upload slot");
    info_.overlapped_uploads = true;
  }
  const cuda::GraphStats st = cuda::graph_stats(nodes);
  info_.graph = true;
  info_.branches = opts_.cuda_graph == CudaGraph::Branches;
  info_.graph_nodes = st.nodes;
  info_.graph_edges = st.edges;
  info_.graph_depth = st.depth;
  info_.graph_width = st.width;
}

CUgraphExec CudaBackend::instantiate(const std::vector<cuda::GraphNode>& nodes, int input_slot) {
  const cu::Driver& d = cu::driver();
  // Plan buffer -> position in plan.inputs, for the calls' arguments in input_slot.
  std::vector<int> input_of(buffers_.size(), -1);
  for (size_t i = 0; i < inputs_.size(); ++i) input_of[size_t(inputs_[i])] = int(i);
  CUgraph g = nullptr;
  CUgraphExec exec = nullptr;
  cu::check(d.cuGraphCreate(&g, 0), "cuGraphCreate");
  try {
    std::vector<CUgraphNode> made(nodes.size(), nullptr);
    std::vector<CUgraphNode> deps, prog;  // ordinary and programmatic dependencies of a node
    int pdl_edges = 0;
    std::vector<CUdeviceptr> args;
    std::vector<void*> params;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const cuda::GraphNode& n = nodes[i];
      // Without the input copies (graph roots), their edges go too: the replay's stream waits
      // for the upload before the launch (replay_overlapped).
      if (n.kind == cuda::NodeKind::InputCopy && input_slot >= 0) continue;
      deps.clear();
      prog.clear();
      const bool pdl = n.kind == cuda::NodeKind::Call && rt_[size_t(n.index)].pdl;
      for (int j : n.deps)
        if (made[size_t(j)]) (pdl && nodes[size_t(j)].kind == cuda::NodeKind::Call ? prog : deps).push_back(made[size_t(j)]);
      const CUgraphNode* dep_ptr = deps.empty() ? nullptr : deps.data();
      switch (n.kind) {
        case cuda::NodeKind::InputCopy: {
          const Staging& st = in_stage_[size_t(n.index)];
          CUDA_MEMCPY3D m = copy_1d(st.bytes);
          m.srcMemoryType = CU_MEMORYTYPE_HOST;
          m.srcHost = st.host;
          m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
          m.dstDevice = st.dev;
          cu::check(d.cuGraphAddMemcpyNode(&made[i], g, dep_ptr, deps.size(), &m, ctx_), "cuGraphAddMemcpyNode",
                    "input '" + buffers_[size_t(inputs_[size_t(n.index)])].name + "'");
          break;
        }
        case cuda::NodeKind::OutputCopy: {
          const Staging& st = out_stage_[size_t(n.index)];
          CUDA_MEMCPY3D m = copy_1d(st.bytes);
          m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
          m.srcDevice = st.dev;
          m.dstMemoryType = CU_MEMORYTYPE_HOST;
          m.dstHost = st.host;
          cu::check(d.cuGraphAddMemcpyNode(&made[i], g, dep_ptr, deps.size(), &m, ctx_), "cuGraphAddMemcpyNode",
                    "output '" + buffers_[size_t(outputs_[size_t(n.index)])].name + "'");
          break;
        }
        case cuda::NodeKind::Call: {
          CallRt& r = rt_[size_t(n.index)];
          args = r.args;
          if (input_slot >= 0)
            for (size_t a = 0; a < args.size(); ++a)
              if (const int in = input_of[size_t(r.arg_buffers[a])]; in >= 0) args[a] = input_ptr(size_t(in), input_slot);
          params.clear();
          for (CUdeviceptr& p : args) params.push_back(&p);
          CUDA_KERNEL_NODE_PARAMS k{};
          k.func = r.fn;
          k.gridDimX = r.grid[0];
          k.gridDimY = r.grid[1];
          k.gridDimZ = r.grid[2];
          k.blockDimX = r.block[0];
          k.blockDimY = r.block[1];
          k.blockDimZ = r.block[2];
          k.sharedMemBytes = r.smem;
          k.kernelParams = params.empty() ? nullptr : params.data();  // copied by the driver
          cu::check(d.cuGraphAddKernelNode(&made[i], g, dep_ptr, deps.size(), &k), "cuGraphAddKernelNode",
                    detail::concat(call_name(size_t(n.index), calls_[size_t(n.index)]), " kernel '",
                                   kernels_[size_t(calls_[size_t(n.index)].kernel)].entry, "'"));
#if CUDA_VERSION >= 12030
          if (!prog.empty()) {  // the kernel waits for these in its prologue (cuda_abi.h "cuda_pdl")
            CUgraphEdgeData e{};
            e.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
            e.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
            const std::vector<CUgraphEdgeData> edges(prog.size(), e);
            const std::vector<CUgraphNode> to(prog.size(), made[i]);
            cu::check(d.cuGraphAddDependencies(g, prog.data(), to.data(), edges.data(), prog.size()),
                      "cuGraphAddDependencies", detail::concat(call_name(size_t(n.index), calls_[size_t(n.index)]),
                                                               ": ", prog.size(), " programmatic edge(s)"));
            pdl_edges += int(prog.size());
          }
#endif
          break;
        }
      }
    }
    info_.pdl_edges = pdl_edges;
    cu::check(d.cuGraphInstantiate(&exec, g, 0), "cuGraphInstantiate",
              detail::concat(nodes.size(), " nodes, ", calls_.size(), " launches",
                             input_slot >= 0 ? detail::concat(", input slot ", input_slot) : std::string()));
  } catch (...) {
    d.cuGraphDestroy(g);
    throw;
  }
  d.cuGraphDestroy(g);
  try {
    cu::check(d.cuGraphUpload(exec, stream_), "cuGraphUpload");
  } catch (...) {
    d.cuGraphExecDestroy(exec);
    throw;
  }
  return exec;
}

void CudaBackend::create_events() {
  const cu::Driver& d = cu::driver();
  while (events_.size() < 1 + 2 * calls_.size()) {
    CUevent e = nullptr;
    cu::check(d.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate", "profiling");
    events_.push_back(e);
  }
}

void CudaBackend::set_profiling(bool on) {
  profiling_ = on;
  if (on && loaded_) {
    cu::ScopedContext scope(ctx_);
    create_events();
  }
}

void CudaBackend::wait(const char* what) {
  const cu::Driver& d = cu::driver();
  if (opts_.spin_wait) {  // Options.spin_wait: poll instead of blocking in the driver
    CUresult r = CUDA_ERROR_NOT_READY;
    while ((r = d.cuStreamQuery(stream_)) == CUDA_ERROR_NOT_READY) {
    }
    cu::check(r, "cuStreamQuery", what);
    return;
  }
  cu::check(d.cuStreamSynchronize(stream_), "cuStreamSynchronize", what);
}

// A run's host copies (each: destination, source, bytes), split over threads in runs of at least
// kCopyPerThread bytes: on the lent GPU machines one thread copied the batch-1 fixture's 786 KB of
// frames in ~60 us of a 0.24 ms inference at times, ~10 us at others (session 34), and a batch-32
// artifact's 25 MB in ~1.8 ms of 4.2 (BENCHMARKS.md "Batch-N artifacts").
constexpr size_t kCopyPerThread = 128 << 10;
constexpr int kCopyMaxThreads = 8;
void copy_bytes(const std::vector<HostCopy>& copies) {
  size_t total = 0;
  for (const HostCopy& c : copies) total += c.bytes;
  const int threads = int(std::min<size_t>(kCopyMaxThreads, total / kCopyPerThread));
  if (threads < 2) {
    for (const HostCopy& c : copies) std::memcpy(c.dst, c.src, c.bytes);
    return;
  }
  const size_t per = (total + size_t(threads) - 1) / size_t(threads);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    // Thread t copies bytes [t * per, (t + 1) * per) of the copies laid end to end.
    size_t lo = size_t(t) * per, hi = std::min(total, lo + per), at = 0;
    for (const HostCopy& c : copies) {
      const size_t b = std::max(lo, at), e = std::min(hi, at + c.bytes);
      if (b < e) std::memcpy(static_cast<char*>(c.dst) + (b - at), static_cast<const char*>(c.src) + (b - at), e - b);
      at += c.bytes;
    }
  }
}

// Options.cuda_inflight = N replays with overlapped uploads: replay r copies the inputs from the
// staging into slot r % 2 on the copy stream, and the main stream waits for that copy, then
// replays that slot's graph. The copy into a slot first waits for the replay two back, the last
// to read it (its whole graph: the slot's "consumed" event). So replay r+1's upload runs while
// replay r's kernels do; the main stream's order still keeps the replays' kernels (arena) and
// output copies apart. Each upload precedes a replay the main stream waits for, so the one wait
// on the main stream at the end covers the copy stream too.
void CudaBackend::replay_overlapped() {
  const cu::Driver& d = cu::driver();
  for (int r = 0; r < opts_.cuda_inflight; ++r) {
    const size_t slot = size_t(r % 2);
    if (r >= 2) cu::check(d.cuStreamWaitEvent(copy_stream_, consumed_[slot], 0), "cuStreamWaitEvent", "upload slot");
    for (size_t i = 0; i < in_stage_.size(); ++i)
      if (in_stage_[i].bytes)
        cu::check(d.cuMemcpyHtoDAsync(input_ptr(i, int(slot)), in_stage_[i].host, in_stage_[i].bytes, copy_stream_),
                  "cuMemcpyHtoDAsync", detail::concat("input '", buffers_[size_t(inputs_[i])].name, "' slot ", slot));
    cu::check(d.cuEventRecord(uploaded_[slot], copy_stream_), "cuEventRecord", "upload slot");
    cu::check(d.cuStreamWaitEvent(stream_, uploaded_[slot], 0), "cuStreamWaitEvent", "upload slot");
    cu::check(d.cuGraphLaunch(slot_graph_[slot], stream_), "cuGraphLaunch", detail::concat("input slot ", slot));
    cu::check(d.cuEventRecord(consumed_[slot], stream_), "cuEventRecord", "upload slot");
  }
  info_.overlapped_replays += opts_.cuda_inflight;
}

void CudaBackend::run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
  OPV_CHECK(loaded_, "cuda backend: run() before load()");
  sig_.check(inputs, outputs);  // Session checked them; this asserts the precondition
  cu::ScopedContext scope(ctx_);
  host_copies_.clear();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (in_stage_[i].bytes && inputs[i]->raw() != in_stage_[i].host)  // else written in place
      host_copies_.push_back({in_stage_[i].host, inputs[i]->raw(), in_stage_[i].bytes});
  copy_bytes(host_copies_);
  upload_inputs(/*kept_on_device=*/true);  // once, before the run's replays
  run_on_device(outputs);
}

void CudaBackend::upload_inputs(bool kept_on_device) {
  const cu::Driver& d = cu::driver();
  for (size_t i = 0; i < in_stage_.size(); ++i)
    if (in_stage_[i].bytes && !in_mapped_[i] && in_device_[i] == kept_on_device)
      cu::check(d.cuMemcpyHtoDAsync(in_stage_[i].dev, in_stage_[i].host, in_stage_[i].bytes, stream_),
                "cuMemcpyHtoDAsync", "input '" + buffers_[size_t(inputs_[i])].name + "'");
}

void CudaBackend::run_device_inputs(const std::vector<Tensor*>& outputs) {
  OPV_CHECK(loaded_, "cuda backend: run_device_inputs() before load()");
  for (size_t i = 0; i < inputs_.size(); ++i)
    OPV_CHECK(in_device_[i], "cuda backend: input '", buffers_[size_t(inputs_[i])].name,
              "' is not kept on the device (load with --cuda-inputs device, Options.cuda_inputs Device)");
  sig_.check_outputs(outputs);
  cu::ScopedContext scope(ctx_);
  run_on_device(outputs);
}

void CudaBackend::run_on_device(const std::vector<Tensor*>& outputs) {
  const cu::Driver& d = cu::driver();
  const bool timed = profiling_ && events_.size() == 1 + 2 * calls_.size();
  try {
    if (timed || !graph_) {
      enqueue(timed);
      ++info_.direct_runs;
    } else {
      // Options.cuda_inflight = N (a throughput measurement, `opvision bench --inflight N`): the
      // graph replayed N times back to back on the stream before the one wait, the same frame each
      // time (its upload and read-back inside every replay; stream order keeps replays apart): N
      // inferences in flight, no host sync between them. The outputs are the last replay's.
      if (overlapped()) {
        replay_overlapped();
      } else {
        for (int r = 0; r < opts_.cuda_inflight; ++r) cu::check(d.cuGraphLaunch(graph_, stream_), "cuGraphLaunch");
      }
      info_.graph_runs += opts_.cuda_inflight;
    }
    wait("end of inference");
  } catch (...) {
    d.cuStreamSynchronize(stream_);  // leave the streams idle; the staging is ours
    if (copy_stream_) d.cuStreamSynchronize(copy_stream_);
    throw;
  }
  host_copies_.clear();
  for (size_t i = 0; i < outputs.size(); ++i)
    if (out_stage_[i].bytes) host_copies_.push_back({outputs[i]->raw(), out_stage_[i].host, out_stage_[i].bytes});
  copy_bytes(host_copies_);
  if (timed) {
    for (size_t ci = 0; ci < calls_.size(); ++ci) {
      float ms = 0.f, start = 0.f;
      cu::check(d.cuEventElapsedTime(&ms, events_[1 + 2 * ci], events_[2 + 2 * ci]), "cuEventElapsedTime",
                call_name(ci, calls_[ci]));
      cu::check(d.cuEventElapsedTime(&start, events_[0], events_[1 + 2 * ci]), "cuEventElapsedTime",
                call_name(ci, calls_[ci]));
      times_ms_[ci] = double(ms);
      starts_ms_[ci] = double(start);
    }
  }
}

// The replayed graph cut after each call: for k = 1..calls, the graph of the first k calls (in the
// recorded graph's order, with the input copies before them, no output copies) replayed `replays`
// times after a warm-up, each replay followed by the stream wait run() does; the median wall time
// in us. t[k] - t[k-1] is what call k adds to the replay's critical path: its launch, its wait on
// the calls before it and its work, as the whole graph runs them (programmatic edges included),
// where per-call events serialise the calls and time each alone.
std::vector<double> CudaBackend::prefix_times_us(int replays) {
  OPV_CHECK(loaded_, "cuda backend: prefix times before load()");
  OPV_CHECK(replays >= 1, "cuda backend: prefix times need at least one replay");
  const cu::Driver& d = cu::driver();
  cu::ScopedContext scope(ctx_);
  const int pdl_edges = info_.pdl_edges;  // instantiate() records the full graph's count
  std::vector<double> times;
  std::vector<cuda::GraphNode> prefix;
  std::vector<double> walls;
  for (const cuda::GraphNode& n : nodes_) {
    if (n.kind == cuda::NodeKind::OutputCopy) continue;
    prefix.push_back(n);
    if (n.kind != cuda::NodeKind::Call) continue;
    CUgraphExec exec = instantiate(prefix, -1);
    try {
      walls.clear();
      for (int r = -std::min(replays, 10); r < replays; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        cu::check(d.cuGraphLaunch(exec, stream_), "cuGraphLaunch", "prefix replay");
        wait("prefix replay");
        if (r >= 0) walls.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
    } catch (...) {
      d.cuGraphExecDestroy(exec);
      throw;
    }
    d.cuGraphExecDestroy(exec);
    std::nth_element(walls.begin(), walls.begin() + std::ptrdiff_t(walls.size() / 2), walls.end());
    times.push_back(walls[walls.size() / 2]);
  }
  info_.pdl_edges = pdl_edges;
  return times;
}

}  // namespace

std::vector<double> cuda_prefix_times_us(Backend& b, int replays) {
  auto* c = dynamic_cast<CudaBackend*>(&b);
  OPV_CHECK(c != nullptr, "prefix replay times are for the cuda backend only, not ", b.name());
  return c->prefix_times_us(replays);
}

std::vector<CudaProbeBlock> cuda_probe_replay(Backend& b) {
  auto* c = dynamic_cast<CudaBackend*>(&b);
  OPV_CHECK(c != nullptr, "the probe is for the cuda backend only, not ", b.name());
  return c->probe_replay();
}

std::unique_ptr<Backend> make_cuda_backend(const Options& opts) { return std::make_unique<CudaBackend>(opts); }

const CudaLoadInfo* cuda_load_info(const Backend& b) {
  const auto* c = dynamic_cast<const CudaBackend*>(&b);
  return c ? c->info() : nullptr;
}

}  // namespace opv::backend
