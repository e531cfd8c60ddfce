// OpenCL backend (see opencl_backend.h; the plan contract is src/target/opencl/cl_abi.h).
// supports_buffer/supports_call (the caps query): Inputs/Outputs Linear, ImageRGBA only for
//   Intermediates with dtype F16/F32 and rank 4, images within the device's image2d limits and
//   format support, host-fallback calls (empty source) touching only Linear buffers.
// load():
//   1. require_support: the target "opencl", ids in range, the queries above;
//   2. the device (Options.device, selected once), its shared context, the in-order queue;
//   3. allocate(): one image (or, with plan meta cl_image_storage = "buffer", one buffer of the
//      same texel layout) per distinct (arena offset, geometry, dtype) of ImageRGBA buffers; one
//      arena cl_mem with sub-buffers for Linear/NHWC intermediates whose offset is a multiple of
//      CL_DEVICE_MEM_BASE_ADDR_ALIGN, a separate cl_mem for the others; one read-only cl_mem per
//      constant (uploaded from plan.weights); own cl_mem for Inputs/Outputs; all zero-filled;
//   4. build(): each kernel with a source through the program cache, one cl_kernel per call and
//      its launch geometry from Call.global/local (trailing zeros drop dimensions, all-zero
//      local = NULL); host-fallback calls get their host tensors;
//   5. bind(): each call's arguments, once (outputs, then present inputs);
//   6. record(): replay plans (meta cl_replay) without host-fallback calls on a device with a
//      compatible cl_khr_command_buffer: record every launch once into a command buffer (unless
//      Options.cl_command_buffer is off); else, on a device with cl_qcom_recordable_queues, into
//      a Qualcomm recording (qcom_recording.h; unless Options.cl_qcom_recording is off).
// run(): write inputs; replay the command buffer or enqueue each call (host-fallback calls read
//   their inputs back, run ref::run, write their outputs); without cl_replay clFinish after each
//   call; read outputs and wait once. Profiling: a profiling queue, one event per launch.
#include "backend/opencl/opencl_backend.h"

#include "backend/opencl/qcom_recording.h"

#include <CL/cl_ext.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "backend/opencl/cl_runtime.h"
#include "core/error.h"
#include "kernels/reference.h"
#include "plan/image_geometry.h"

namespace opv::backend {

namespace {

using plan::BufferKind;
using plan::Layout;

// The cl_khr_command_buffer entry points this build's header declares. Headers without the
// version macro (Khronos 2023.02 and older) declare the provisional 0.9.0-0.9.4 signatures.
#ifdef CL_KHR_COMMAND_BUFFER_EXTENSION_VERSION
constexpr cl_version kHeaderCommandBufferVersion = CL_KHR_COMMAND_BUFFER_EXTENSION_VERSION;
constexpr bool kHeaderVersionExact = true;
#else
constexpr cl_version kHeaderCommandBufferVersion = CL_MAKE_VERSION(0, 9, 0);
constexpr bool kHeaderVersionExact = false;
constexpr cl_uint kFirstChangedPatch = 5;  // 0.9.5 changed entry-point signatures
#endif

bool command_buffer_version_ok(cl_version dev) {
  if (dev == 0) return false;  // unknown version: do not guess the ABI
  if (CL_VERSION_MAJOR(dev) != CL_VERSION_MAJOR(kHeaderCommandBufferVersion) ||
      CL_VERSION_MINOR(dev) != CL_VERSION_MINOR(kHeaderCommandBufferVersion))
    return false;
  if (kHeaderVersionExact) return CL_VERSION_PATCH(dev) == CL_VERSION_PATCH(kHeaderCommandBufferVersion);
#ifndef CL_KHR_COMMAND_BUFFER_EXTENSION_VERSION
  return CL_VERSION_PATCH(dev) < kFirstChangedPatch;
#else
  return true;
#endif
}

struct CommandBufferApi {
  clCreateCommandBufferKHR_fn create = nullptr;
  clFinalizeCommandBufferKHR_fn finalize = nullptr;
  clReleaseCommandBufferKHR_fn release = nullptr;
  clEnqueueCommandBufferKHR_fn enqueue = nullptr;
  clCommandNDRangeKernelKHR_fn nd_range = nullptr;

  bool load(cl_platform_id p) {
    auto get = [&](const char* name) { return clGetExtensionFunctionAddressForPlatform(p, name); };
    create = reinterpret_cast<clCreateCommandBufferKHR_fn>(get("clCreateCommandBufferKHR"));
    finalize = reinterpret_cast<clFinalizeCommandBufferKHR_fn>(get("clFinalizeCommandBufferKHR"));
    release = reinterpret_cast<clReleaseCommandBufferKHR_fn>(get("clReleaseCommandBufferKHR"));
    enqueue = reinterpret_cast<clEnqueueCommandBufferKHR_fn>(get("clEnqueueCommandBufferKHR"));
    nd_range = reinterpret_cast<clCommandNDRangeKernelKHR_fn>(get("clCommandNDRangeKernelKHR"));
    return create && finalize && release && enqueue && nd_range;
  }
};

// Owner of a recorded command buffer.
class CommandBuffer {
 public:
  CommandBuffer() = default;
  ~CommandBuffer() { reset(); }
  CommandBuffer(const CommandBuffer&) = delete;
  CommandBuffer& operator=(const CommandBuffer&) = delete;
  void reset(const CommandBufferApi* api = nullptr, cl_command_buffer_khr cb = nullptr) {
    if (cb_ && api_) api_->release(cb_);
    api_ = api;
    cb_ = cb;
  }
  cl_command_buffer_khr get() const { return cb_; }
  explicit operator bool() const { return cb_ != nullptr; }
  // Gives up ownership without releasing.
  cl_command_buffer_khr release() {
    api_ = nullptr;
    return std::exchange(cb_, nullptr);
  }

 private:
  const CommandBufferApi* api_ = nullptr;
  cl_command_buffer_khr cb_ = nullptr;
};

bool meta_flag(const Attrs& a, const std::string& key) {
  auto it = a.map().find(key);
  if (it == a.map().end()) return false;
  if (const int64_t* i = std::get_if<int64_t>(&it->second)) return *i != 0;
  if (const std::string* s = std::get_if<std::string>(&it->second)) return *s == "1" || *s == "true";
  return false;
}

std::string call_name(size_t i, const plan::Call& c) { return "call " + std::to_string(i) + " (" + c.label + ")"; }

// Bytes a Linear-like buffer needs: its declared storage, at least the dense size, never 0.
size_t buffer_size(const plan::Buffer& b) {
  const int64_t dense = numel(b.shape) * int64_t(dtype_size(b.dtype));
  return size_t(std::max<int64_t>({b.bytes, dense, 1}));
}

struct CallRt {
  bool host = false;
  cl::Kernel kernel;
  cl_uint dims = 0;
  std::array<size_t, 3> global{0, 0, 0}, local{0, 0, 0};
  bool has_local = false;
  // Host fallback: tensors the call reads back and computes into (allocated at load).
  std::vector<Tensor> host_in;   // empty tensor for an absent input
  std::vector<Tensor> host_out;
};

class OpenCLBackend : public Backend {
 public:
  explicit OpenCLBackend(const Options& o) : opts_(o) {}
  ~OpenCLBackend() override {
    if (queue_) clFinish(queue_.get());
    cb_.reset();
    qrec_.reset();
    // Release in dependency order: events and kernels (which hold their arguments), then the
    // memory objects newest first (sub-buffers and shared images before their parents), then
    // the queue.
    events_.clear();
    rt_.clear();
    while (!mems_.empty()) mems_.pop_back();
    queue_ = cl::Queue();
  }
  std::string name() const override { return "opencl"; }
  Tolerance tolerance() const override { return {1e-2, 1e-2}; }  // fp16 storage
  Caps caps() const override {
    const cl::DeviceInfo& d = device();
    return {{Layout::Linear, Layout::NHWC, Layout::PackedWeight, Layout::ImageRGBA},
            /*per_call_times=*/true, d.platform_name + " / " + d.name};
  }
  Support supports_buffer(const plan::Plan& plan, int buffer) const override;
  Support supports_call(const plan::Plan& plan, int call) const override;
  void load(const plan::Plan& plan) override;
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) override;
  void set_profiling(bool on) override;
  std::vector<double> call_times_ms() const override { return profiling_ ? times_ms_ : std::vector<double>{}; }
  const OpenCLLoadInfo* info() const { return loaded_ ? &info_ : nullptr; }

 private:
  const cl::DeviceInfo& device() const;  // Options.device, selected on first use
  bool rgba_format(DType dtype) const;   // CL_RGBA images of dtype's channel type, read/write
  void create_queue(bool profiling);
  // load()'s phases, in order (see the file comment).
  void allocate(const plan::Plan& plan);
  void build();
  void bind();
  void record();
  void record_command_buffer();
  void host_call(size_t ci);

  Options opts_;
  mutable std::optional<cl::DeviceInfo> device_;  // device(): selected once, kept across loads
  mutable std::optional<bool> rgba_half_;          // rgba_format(): queried once
  mutable bool rgba_float_ = false;
  cl::DeviceInfo dev_;
  cl_context ctx_ = nullptr;  // shared, owned by the runtime
  cl::Queue queue_;
  bool queue_profiling_ = false;
  CommandBufferApi cb_api_;
  bool cb_eligible_ = false;  // replay plan, no host calls, compatible extension, not disabled
  CommandBuffer cb_;
  qcom::PlanRecording qrec_;  // cl_qcom_recordable_queues replay where no command buffer is used

  std::vector<plan::Buffer> buffers_;
  std::vector<plan::Kernel> kernels_;
  std::vector<plan::Call> calls_;
  std::vector<int> inputs_, outputs_;
  RunSignature sig_;
  std::vector<cl::Mem> mems_;    // every cl_mem this backend owns (sub-buffers after the arena)
  std::vector<cl_mem> buf_mem_;  // per plan buffer
  std::vector<CallRt> rt_;
  std::vector<cl::Event> events_;
  bool replay_ = false;
  bool loaded_ = false;
  bool profiling_ = false;
  std::vector<double> times_ms_;
  OpenCLLoadInfo info_;
};

const cl::DeviceInfo& OpenCLBackend::device() const {
  if (!device_) device_ = cl::select_device(opts_.device);
  return *device_;
}

bool OpenCLBackend::rgba_format(DType dtype) const {
  if (!rgba_half_) {
    const cl::DeviceInfo& dev = device();
    cl_context ctx = cl::shared_context(dev);
    cl_uint n = 0;
    cl::check(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, nullptr, &n),
              "clGetSupportedImageFormats");
    std::vector<cl_image_format> fmts(n);
    if (n)
      cl::check(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, n, fmts.data(), nullptr),
                "clGetSupportedImageFormats");
    auto has = [&](cl_channel_type t) {
      for (const cl_image_format& f : fmts)
        if (f.image_channel_order == CL_RGBA && f.image_channel_data_type == t) return true;
      return false;
    };
    rgba_half_ = has(CL_HALF_FLOAT);
    rgba_float_ = has(CL_FLOAT);
  }
  return dtype == DType::F16 ? *rgba_half_ : rgba_float_;
}

// Inputs/Outputs Linear; ImageRGBA only for F16/F32 4-D Intermediates, within the device's image2d
// limits and formats (unless plan meta cl_image_storage = "buffer": image-layout buffers are then
// global buffers of the same texel layout, src/target/opencl, and need no image support).
Support OpenCLBackend::supports_buffer(const plan::Plan& plan, int buffer) const {
  if (Support s = Backend::supports_buffer(plan, buffer); !s) return s;
  const plan::Buffer& b = plan.buffers[size_t(buffer)];
  if ((b.kind == BufferKind::Input || b.kind == BufferKind::Output) && b.layout != Layout::Linear)
    return Support::no(detail::concat(plan::buffer_kind_name(b.kind), " buffer '", b.name, "' has layout ",
                                      plan::layout_name(b.layout), "; inputs and outputs must be linear"));
  if (b.layout != Layout::ImageRGBA) return Support::yes();
  if (b.kind != BufferKind::Intermediate)
    return Support::no(detail::concat("image buffer '", b.name, "' is a ", plan::buffer_kind_name(b.kind),
                                      "; images must be intermediates (cl_abi.h)"));
  if (b.dtype != DType::F16 && b.dtype != DType::F32)
    return Support::no(detail::concat("image buffer '", b.name, "' has dtype ", dtype_name(b.dtype),
                                      "; images hold f16 or f32"));
  if (b.shape.size() != 4)
    return Support::no(detail::concat("image buffer '", b.name, "' has shape ", shape_str(b.shape),
                                      "; images hold 4-D [N,C,H,W] tensors"));
  const plan::ImageGeom g = plan::image_geom(b.shape);
  if (g.width < 1 || g.height < 1) return Support::no(detail::concat("image buffer '", b.name, "' is empty"));
  if (plan.meta.s("cl_image_storage", "image") == "buffer") return Support::yes();
  const cl::DeviceInfo& dev = device();
  if (!dev.image_support)
    return Support::no(detail::concat("device '", dev.name, "' has no image support, but the plan uses image buffer '",
                                      b.name, "'"));
  if (g.width > dev.image2d_max_width)
    return Support::no(detail::concat("image buffer '", b.name, "' ", shape_str(b.shape), " needs an image ", g.width,
                                      " texels wide; device '", dev.name, "' allows CL_DEVICE_IMAGE2D_MAX_WIDTH = ",
                                      dev.image2d_max_width));
  if (g.height > dev.image2d_max_height)
    return Support::no(detail::concat("image buffer '", b.name, "' ", shape_str(b.shape), " needs an image ",
                                      g.height, " texels high; device '", dev.name,
                                      "' allows CL_DEVICE_IMAGE2D_MAX_HEIGHT = ", dev.image2d_max_height));
  if (!rgba_format(b.dtype))
    return Support::no(detail::concat("device '", dev.name, "' does not support CL_RGBA/",
                                      b.dtype == DType::F16 ? "CL_HALF_FLOAT" : "CL_FLOAT", " images"));
  return Support::yes();
}

// A kernel with source needs an entry and a launch geometry; one without runs on the host (the
// reference kernel, any op) and may touch only Linear buffers.
Support OpenCLBackend::supports_call(const plan::Plan& plan, int ci) const {
  const plan::Call& c = plan.calls[size_t(ci)];
  const plan::Kernel& k = plan.kernels[size_t(c.kernel)];
  if (!k.source.empty()) {
    if (k.entry.empty()) return Support::no(detail::concat("kernel '", k.name, "' has source but no entry"));
    bool any = false;
    for (int64_t g : c.global) any |= g > 0;
    if (!any) return Support::no(detail::concat(call_name(size_t(ci), c), " has no launch geometry (global all zero)"));
    return Support::yes();
  }
  std::vector<int> touched = c.outputs;
  touched.insert(touched.end(), c.inputs.begin(), c.inputs.end());
  for (int b : touched) {
    if (b < 0) continue;
    const plan::Buffer& buf = plan.buffers[size_t(b)];
    if (buf.layout != Layout::Linear)
      return Support::no(detail::concat(call_name(size_t(ci), c), " runs kernel '", k.name,
                                        "' on the host (no source) but touches buffer '", buf.name, "' with layout ",
                                        plan::layout_name(buf.layout), "; host fallback needs linear buffers"));
  }
  return Support::yes();
}

void OpenCLBackend::create_queue(bool profiling) {
  if (queue_) cl::check(clFinish(queue_.get()), "clFinish");
  cb_.reset();
  events_.clear();
  const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES,
                                       profiling ? cl_queue_properties(CL_QUEUE_PROFILING_ENABLE) : 0, 0};
  cl_int err = CL_SUCCESS;
  cl::Queue q(clCreateCommandQueueWithProperties(ctx_, dev_.device, props, &err));
  cl::check(err, "clCreateCommandQueueWithProperties", "device '" + dev_.name + "'");
  queue_ = std::move(q);
  queue_profiling_ = profiling;
  if (loaded_ || !rt_.empty()) record_command_buffer();
}

// Records every launch, each waiting on the previous one, into one command buffer. Leaves cb_
// empty (plain enqueue) when the plan or device does not qualify.
void OpenCLBackend::record_command_buffer() {
  cb_.reset();
  info_.command_buffer = false;
  if (!cb_eligible_) return;
  cl_command_queue_properties required = 0;
  if (clGetDeviceInfo(dev_.device, CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR, sizeof required, &required,
                      nullptr) != CL_SUCCESS)
    return;
  const cl_command_queue_properties have = queue_profiling_ ? CL_QUEUE_PROFILING_ENABLE : 0;
  if ((required & ~have) != 0) return;
  cl_int err = CL_SUCCESS;
  cl_command_queue q = queue_.get();
  CommandBuffer cb;
  cb.reset(&cb_api_, cb_api_.create(1, &q, nullptr, &err));
  cl::check(err, "clCreateCommandBufferKHR", "device '" + dev_.name + "'");
  cl_sync_point_khr prev = 0;
  bool have_prev = false;
  for (size_t ci = 0; ci < rt_.size(); ++ci) {
    const CallRt& r = rt_[ci];
    cl_sync_point_khr sp = 0;
    cl::check(cb_api_.nd_range(cb.get(), nullptr, nullptr, r.kernel.get(), r.dims, nullptr, r.global.data(),
                               r.has_local ? r.local.data() : nullptr, have_prev ? 1 : 0,
                               have_prev ? &prev : nullptr, &sp, nullptr),
              "clCommandNDRangeKernelKHR", call_name(ci, calls_[ci]));
    prev = sp;
    have_prev = true;
  }
  cl::check(cb_api_.finalize(cb.get()), "clFinalizeCommandBufferKHR");
  cb_.reset(&cb_api_, cb.release());
  info_.command_buffer = true;
}

void OpenCLBackend::load(const plan::Plan& plan) {
  require_support(*this, plan);
  // Re-loading: drop everything of the previous plan first.
  if (queue_) clFinish(queue_.get());
  cb_.reset();
  qrec_.reset();
  events_.clear();
  rt_.clear();
  buf_mem_.clear();
  mems_.clear();
  loaded_ = false;
  info_ = {};

  dev_ = device();
  ctx_ = cl::shared_context(dev_);
  buffers_ = plan.buffers;
  kernels_ = plan.kernels;
  calls_ = plan.calls;
  inputs_ = plan.inputs;
  outputs_ = plan.outputs;
  sig_ = RunSignature::of(plan);
  replay_ = meta_flag(plan.meta, "cl_replay");
  info_.device = dev_.platform_name + " / " + dev_.name;
  info_.replay = replay_;
  create_queue(profiling_);
  allocate(plan);  // steps 3-6 of the file comment
  build();
  bind();
  record();
  cl::check(clFinish(queue_.get()), "clFinish", "after load");
  times_ms_.assign(calls_.size(), 0.0);
  events_.resize(calls_.size());
  loaded_ = true;
}

// load() step 3, allocate: every cl_mem of the plan (images, arena and its sub-buffers, constants
// uploaded, inputs/outputs), zero-filled; fills buf_mem_.
void OpenCLBackend::allocate(const plan::Plan& plan) {
  const size_t nb = buffers_.size();
  buf_mem_.assign(nb, nullptr);
  auto make_buffer = [&](cl_mem_flags flags, size_t size, const void* host, const std::string& what) {
    cl_int err = CL_SUCCESS;
    cl::Mem m(clCreateBuffer(ctx_, flags, size, const_cast<void*>(host), &err));
    cl::check(err, "clCreateBuffer", detail::concat(what, " (", size, " bytes)"));
    mems_.push_back(std::move(m));
    return mems_.back().get();
  };
  const uint8_t zero = 0;
  auto zero_fill = [&](cl_mem m, size_t size, const std::string& what) {
    cl::check(clEnqueueFillBuffer(queue_.get(), m, &zero, sizeof zero, 0, size, 0, nullptr, nullptr),
              "clEnqueueFillBuffer", what);
  };
  // Which Linear-like intermediates go into the arena.
  const int64_t align = std::max<int64_t>(1, dev_.mem_base_addr_align);
  std::vector<bool> in_arena(nb, false);
  for (size_t i = 0; i < nb; ++i) {
    const plan::Buffer& b = buffers_[i];
    if (b.kind != BufferKind::Intermediate || b.layout == Layout::ImageRGBA || b.offset < 0) continue;
    in_arena[i] = b.offset % align == 0 && b.offset + int64_t(buffer_size(b)) <= plan.arena_bytes;
  }
  cl_mem arena = nullptr;
  if (std::find(in_arena.begin(), in_arena.end(), true) != in_arena.end()) {
    arena = make_buffer(CL_MEM_READ_WRITE, size_t(plan.arena_bytes), nullptr, "arena");
    zero_fill(arena, size_t(plan.arena_bytes), "arena");
  }
  std::map<std::tuple<int64_t, int64_t, int64_t, DType>, cl_mem> shared_images;
  const bool image_buffers = plan.meta.s("cl_image_storage", "image") == "buffer";
  for (size_t i = 0; i < nb; ++i) {
    const plan::Buffer& b = buffers_[i];
    const std::string what = "buffer '" + b.name + "'";
    if (b.layout == Layout::ImageRGBA) {
      const plan::ImageGeom g = plan::image_geom(b.shape);
      const auto key = std::make_tuple(b.offset, g.width, g.height, b.dtype);
      if (b.offset >= 0) {
        if (auto it = shared_images.find(key); it != shared_images.end()) {
          buf_mem_[i] = it->second;
          continue;
        }
      }
      if (image_buffers) {
        const size_t bytes = size_t(plan::image_bytes(b.dtype, b.shape));
        buf_mem_[i] = make_buffer(CL_MEM_READ_WRITE, bytes, nullptr, what + " (image layout in a buffer)");
        zero_fill(buf_mem_[i], bytes, what);
        if (b.offset >= 0) shared_images[key] = buf_mem_[i];
        ++info_.images;
        continue;
      }
      const cl_image_format fmt{CL_RGBA, cl_channel_type(b.dtype == DType::F16 ? CL_HALF_FLOAT : CL_FLOAT)};
      cl_image_desc desc{};
      desc.image_type = CL_MEM_OBJECT_IMAGE2D;
      desc.image_width = size_t(g.width);
      desc.image_height = size_t(g.height);
      cl_int err = CL_SUCCESS;
      cl::Mem m(clCreateImage(ctx_, CL_MEM_READ_WRITE, &fmt, &desc, nullptr, &err));
      cl::check(err, "clCreateImage", detail::concat(what, " (", g.width, "x", g.height, " RGBA ", dtype_name(b.dtype), ")"));
      const float zeros[4] = {0, 0, 0, 0};
      const size_t origin[3] = {0, 0, 0}, region[3] = {size_t(g.width), size_t(g.height), 1};
      cl::check(clEnqueueFillImage(queue_.get(), m.get(), zeros, origin, region, 0, nullptr, nullptr),
                "clEnqueueFillImage", what);
      mems_.push_back(std::move(m));
      buf_mem_[i] = mems_.back().get();
      if (b.offset >= 0) shared_images[key] = buf_mem_[i];
      ++info_.images;
      continue;
    }
    const size_t size = buffer_size(b);
    switch (b.kind) {
      case BufferKind::Constant: {
        const int64_t dense = numel(b.shape) * int64_t(dtype_size(b.dtype));
        const int64_t need = b.layout == Layout::PackedWeight ? b.bytes : std::max(b.bytes, dense);
        OPV_CHECK(b.offset >= 0 && b.offset + need <= int64_t(plan.weights.size()), "opencl backend: constant '",
                  b.name, "' at offset ", b.offset, " (", need, " bytes) lies outside the weights (",
                  plan.weights.size(), " bytes)");
        const uint8_t one_byte = 0;  // an empty constant still gets a (1-byte) cl_mem
        const void* src = need > 0 ? static_cast<const void*>(plan.weights.data() + b.offset) : &one_byte;
        buf_mem_[i] = make_buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, size_t(std::max<int64_t>(need, 1)), src, what);
        break;
      }
      case BufferKind::Intermediate:
        if (in_arena[i]) {
          const cl_buffer_region region{size_t(b.offset), size};
          cl_int err = CL_SUCCESS;
          cl::Mem m(clCreateSubBuffer(arena, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err));
          cl::check(err, "clCreateSubBuffer", detail::concat(what, " at arena offset ", b.offset));
          mems_.push_back(std::move(m));
          buf_mem_[i] = mems_.back().get();
          ++info_.arena_sub_buffers;
          break;
        }
        ++info_.separate_buffers;
        [[fallthrough]];
      case BufferKind::Input:
      case BufferKind::Output:
        buf_mem_[i] = make_buffer(CL_MEM_READ_WRITE, size, nullptr, what);
        zero_fill(buf_mem_[i], size, what);
        break;
    }
  }
}

// load() step 4, build: one program per used kernel with source (program cache), one cl_kernel
// and launch geometry per call; host-fallback calls get their host tensors.
void OpenCLBackend::build() {
  std::vector<cl::Program> programs(kernels_.size());
  for (size_t ki = 0; ki < kernels_.size(); ++ki) {
    const plan::Kernel& k = kernels_[ki];
    bool used = false;
    for (const plan::Call& c : calls_) used |= c.kernel == int(ki);
    if (!k.source.empty() && used)
      programs[ki] = cl::build_program(dev_, k.source, k.options, k.entry, opts_.cl_disk_cache);
  }
  rt_.resize(calls_.size());
  for (size_t ci = 0; ci < calls_.size(); ++ci) {
    const plan::Call& c = calls_[ci];
    const plan::Kernel& k = kernels_[size_t(c.kernel)];
    CallRt& r = rt_[ci];
    if (k.source.empty()) {
      r.host = true;
      ++info_.host_calls;
      for (int b : c.inputs)
        r.host_in.push_back(b < 0 ? Tensor() : Tensor(buffers_[size_t(b)].dtype, buffers_[size_t(b)].shape));
      for (int b : c.outputs) r.host_out.emplace_back(buffers_[size_t(b)].dtype, buffers_[size_t(b)].shape);
      continue;
    }
    cl_int err = CL_SUCCESS;
    r.kernel.reset(clCreateKernel(programs[size_t(c.kernel)].get(), k.entry.c_str(), &err));
    cl::check(err, "clCreateKernel", detail::concat(call_name(ci, c), " entry '", k.entry, "'"));
    cl_uint dims = 3;
    while (dims > 0 && c.global[dims - 1] == 0) --dims;
    for (cl_uint d = 0; d < dims; ++d) {
      OPV_CHECK(c.global[d] > 0, "opencl backend: ", call_name(ci, c), ": global size ", c.global[d],
                " in dimension ", d, " before a non-zero one");
      r.global[d] = size_t(c.global[d]);
    }
    r.dims = dims;
    r.has_local = c.local[0] != 0 || c.local[1] != 0 || c.local[2] != 0;
    if (r.has_local) {
      for (cl_uint d = 0; d < dims; ++d) {
        OPV_CHECK(c.local[d] > 0 && c.global[d] % c.local[d] == 0, "opencl backend: ", call_name(ci, c),
                  ": local size ", c.local[d], " does not divide global size ", c.global[d], " in dimension ", d);
        r.local[d] = size_t(c.local[d]);
      }
    }
  }
}

// load() step 5, bind: each call's arguments, once (outputs, then present inputs; cl_abi.h),
// after checking the kernel takes that many.
void OpenCLBackend::bind() {
  for (size_t ci = 0; ci < calls_.size(); ++ci) {
    const plan::Call& c = calls_[ci];
    const plan::Kernel& k = kernels_[size_t(c.kernel)];
    CallRt& r = rt_[ci];
    if (r.host) continue;
    std::vector<int> args = c.outputs;
    for (int b : c.inputs)
      if (b >= 0) args.push_back(b);
    cl_uint nargs = 0;
    cl::check(clGetKernelInfo(r.kernel.get(), CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, nullptr), "clGetKernelInfo",
              call_name(ci, c));
    OPV_CHECK(nargs == args.size(), "opencl backend: ", call_name(ci, c), ": kernel '", k.entry, "' takes ", nargs,
              " arguments, the call binds ", args.size(), " (outputs then present inputs, cl_abi.h)");
    for (size_t a = 0; a < args.size(); ++a) {
      const cl_mem m = buf_mem_[size_t(args[a])];
      cl::check(clSetKernelArg(r.kernel.get(), cl_uint(a), sizeof(cl_mem), &m), "clSetKernelArg",
                detail::concat(call_name(ci, c), " argument ", a, " = buffer '", buffers_[size_t(args[a])].name, "'"));
    }
  }
}

// load() step 6, record: replay plans (cl_replay) without host calls are recorded once, into a
// command buffer or else a Qualcomm recording, where the device allows.
void OpenCLBackend::record() {
  // Replay from a command buffer where possible.
  cb_eligible_ = replay_ && info_.host_calls == 0 && !calls_.empty() && dev_.has_command_buffer &&
                 command_buffer_version_ok(dev_.command_buffer_version) && opts_.cl_command_buffer &&
                 cb_api_.load(dev_.platform);
  record_command_buffer();
  // Else, on the Adreno driver, a cl_qcom_recordable_queues recording (qcom_recording.h).
  if (!cb_ && replay_ && info_.host_calls == 0 && !calls_.empty() && dev_.has_qcom_recordable_queues &&
      opts_.cl_qcom_recording) {
    std::vector<qcom::Launch> launches;
    for (const CallRt& r : rt_)
      launches.push_back({r.kernel.get(), r.dims, r.global.data(), r.has_local ? r.local.data() : nullptr});
    info_.qcom_recording = qrec_.record(dev_.platform, ctx_, dev_.device, launches, &info_.qcom_recording_skipped);
  }
}

void OpenCLBackend::set_profiling(bool on) {
  profiling_ = on;
  if (on && queue_ && !queue_profiling_) {
    create_queue(true);
    events_.resize(calls_.size());
  }
}

void OpenCLBackend::host_call(size_t ci) {
  const plan::Call& c = calls_[ci];
  const plan::Kernel& k = kernels_[size_t(c.kernel)];
  CallRt& r = rt_[ci];
  std::vector<const Tensor*> ins;
  std::vector<Tensor*> outs;
  for (size_t j = 0; j < c.inputs.size(); ++j) {
    const int b = c.inputs[j];
    if (b < 0) {
      ins.push_back(nullptr);
      continue;
    }
    Tensor& t = r.host_in[j];
    if (t.nbytes())
      cl::check(clEnqueueReadBuffer(queue_.get(), buf_mem_[size_t(b)], CL_TRUE, 0, t.nbytes(), t.raw(), 0, nullptr,
                                    nullptr),
                "clEnqueueReadBuffer", call_name(ci, c) + " host input '" + buffers_[size_t(b)].name + "'");
    ins.push_back(&t);
  }
  for (Tensor& t : r.host_out) outs.push_back(&t);
  try {
    ref::run({k.op, k.attrs, k.post_ops}, ins, outs);
  } catch (const Error& e) {
    fail("opencl backend: ", call_name(ci, c), " (host fallback '", k.name, "'): ", e.what());
  }
  for (size_t j = 0; j < c.outputs.size(); ++j) {
    const Tensor& t = r.host_out[j];
    // Non-blocking: the tensor is not touched again before the run's final wait.
    if (t.nbytes())
      cl::check(clEnqueueWriteBuffer(queue_.get(), buf_mem_[size_t(c.outputs[j])], CL_FALSE, 0, t.nbytes(), t.raw(),
                                     0, nullptr, nullptr),
                "clEnqueueWriteBuffer", call_name(ci, c) + " host output '" + buffers_[size_t(c.outputs[j])].name + "'");
  }
}

void OpenCLBackend::run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
  OPV_CHECK(loaded_, "opencl backend: run() before load()");
  sig_.check(inputs, outputs);  // Session checked them; this asserts the precondition
  cl_command_queue q = queue_.get();
  const bool timed = profiling_ && queue_profiling_;
  std::vector<double> host_ms(calls_.size(), 0.0);
  try {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i]->nbytes())
        cl::check(clEnqueueWriteBuffer(q, buf_mem_[size_t(inputs_[i])], CL_FALSE, 0, inputs[i]->nbytes(),
                                       inputs[i]->raw(), 0, nullptr, nullptr),
                  "clEnqueueWriteBuffer", "input '" + buffers_[size_t(inputs_[i])].name + "'");
    if (cb_ && !timed) {
      // An event is requested although unused: PoCL's generic command-buffer path dereferences it.
      cl_event ev = nullptr;
      cl::check(cb_api_.enqueue(0, nullptr, cb_.get(), 0, nullptr, &ev), "clEnqueueCommandBufferKHR");
      cl::Event done(ev);
    } else if (qrec_ && !timed) {
      cl::check(qrec_.replay(q), "clEnqueueRecordingQCOM");
    } else {
      for (size_t ci = 0; ci < calls_.size(); ++ci) {
        CallRt& r = rt_[ci];
        if (r.host) {
          const auto t0 = std::chrono::steady_clock::now();
          host_call(ci);
          host_ms[ci] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          continue;
        }
        cl_event ev = nullptr;
        cl::check(clEnqueueNDRangeKernel(q, r.kernel.get(), r.dims, nullptr, r.global.data(),
                                         r.has_local ? r.local.data() : nullptr, 0, nullptr, timed ? &ev : nullptr),
                  "clEnqueueNDRangeKernel",
                  detail::concat(call_name(ci, calls_[ci]), " kernel '", kernels_[size_t(calls_[ci].kernel)].entry,
                                 "' global ", r.global[0], "x", r.global[1], "x", r.global[2]));
        if (timed) events_[ci].reset(ev);
        if (!replay_) cl::check(clFinish(q), "clFinish", call_name(ci, calls_[ci]));
      }
    }
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i]->nbytes())
        cl::check(clEnqueueReadBuffer(q, buf_mem_[size_t(outputs_[i])], CL_FALSE, 0, outputs[i]->nbytes(),
                                      outputs[i]->raw(), 0, nullptr, nullptr),
                  "clEnqueueReadBuffer", "output '" + buffers_[size_t(outputs_[i])].name + "'");
    if (opts_.spin_wait) {
      // Poll a marker after the read-backs instead of sleeping in clFinish (Options.spin_wait).
      cl_event ev = nullptr;
      cl::check(clEnqueueMarkerWithWaitList(q, 0, nullptr, &ev), "clEnqueueMarkerWithWaitList", "end of inference");
      cl::Event done(ev);
      cl::check(clFlush(q), "clFlush", "end of inference");
      cl_int st = CL_QUEUED;
      do {
        cl::check(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr), "clGetEventInfo",
                  "end of inference");
      } while (st > CL_COMPLETE);
      OPV_CHECK(st == CL_COMPLETE, "opencl backend: the inference ended with status ", cl::error_name(st));
    }
    cl::check(clFinish(q), "clFinish", "end of inference");
  } catch (...) {
    clFinish(q);  // never return while the device may still touch the caller's tensors
    throw;
  }
  if (timed) {
    for (size_t ci = 0; ci < calls_.size(); ++ci) {
      if (rt_[ci].host) {
        times_ms_[ci] = host_ms[ci];
        continue;
      }
      cl_ulong t0 = 0, t1 = 0;
      cl::check(clGetEventProfilingInfo(events_[ci].get(), CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr),
                "clGetEventProfilingInfo", call_name(ci, calls_[ci]));
      cl::check(clGetEventProfilingInfo(events_[ci].get(), CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr),
                "clGetEventProfilingInfo", call_name(ci, calls_[ci]));
      constexpr double kNsPerMs = 1e6;
      times_ms_[ci] = t1 >= t0 ? double(t1 - t0) / kNsPerMs : 0.0;
    }
  }
}

}  // namespace

std::unique_ptr<Backend> make_opencl_backend(const Options& opts) { return std::make_unique<OpenCLBackend>(opts); }

const OpenCLLoadInfo* opencl_load_info(const Backend& b) {
  const auto* cl = dynamic_cast<const OpenCLBackend*>(&b);
  return cl ? cl->info() : nullptr;
}

}  // namespace opv::backend
