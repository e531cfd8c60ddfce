// A thin C++ layer over the Khronos OpenCL ICD loader, used by the opencl backend and the CLI:
// 1. every CL call is checked: check() throws opv::Error naming the call and the error code
//    ("clEnqueueNDRangeKernel failed: CL_INVALID_WORK_GROUP_SIZE (-54): call 3 (conv1)");
// 2. move-only RAII handles for contexts, queues, memory objects, programs, kernels, events;
// 3. platform/device enumeration with a capability summary, and device selection from a selector
//    string (see select_device());
// 4. one shared context per device (process-wide) and program builds through a cache: an
//    in-process map keyed by (device, source, options) and an on-disk cache of program binaries
//    (see build_program()).
// Process-wide state is created on first use and deliberately never destroyed: releasing CL
// objects from static destructors can run after the ICD has been unloaded.
#pragma once
#include <CL/cl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace opv::backend::cl {

// "CL_INVALID_WORK_GROUP_SIZE" for -54; "CL_UNKNOWN_ERROR" for a code not in the table.
const char* error_name(cl_int err);
// Throws opv::Error "<call> failed: <NAME> (<code>)[: <context>]" when err != CL_SUCCESS.
void check(cl_int err, const char* call, const std::string& context = "");

// Move-only owner of one CL object; releases it with the matching clRelease* on destruction.
template <typename T, cl_int(CL_API_CALL* Release)(T)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T h) : h_(h) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  T get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }
  void reset(T h = nullptr) {
    if (h_) Release(h_);
    h_ = h;
  }
  T release() { return std::exchange(h_, nullptr); }

 private:
  T h_ = nullptr;
};
using Context = Handle<cl_context, clReleaseContext>;
using Queue = Handle<cl_command_queue, clReleaseCommandQueue>;
using Mem = Handle<cl_mem, clReleaseMemObject>;
using Program = Handle<cl_program, clReleaseProgram>;
using Kernel = Handle<cl_kernel, clReleaseKernel>;
using Event = Handle<cl_event, clReleaseEvent>;

// What the backend needs to know about a device.
struct DeviceInfo {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  int platform_index = 0;   // among the platforms
  int device_index = 0;     // among that platform's devices
  int global_index = 0;     // among all devices of all platforms ("N" selector)
  std::string platform_name, platform_version;
  std::string name, vendor, version, driver_version;
  cl_device_type type = 0;
  std::vector<std::string> extensions;
  bool has_fp16 = false;                  // cl_khr_fp16
  bool image_support = false;
  int64_t image2d_max_width = 0, image2d_max_height = 0;
  int64_t image_pitch_alignment = 0;      // pixels (CL 2.0+; 0 when not reported)
  int64_t mem_base_addr_align = 0;        // bytes (the device reports bits)
  int64_t max_work_group_size = 0;
  int64_t compute_units = 0;
  int64_t global_mem_bytes = 0;
  bool has_command_buffer = false;        // cl_khr_command_buffer
  cl_version command_buffer_version = 0;  // from CL_DEVICE_EXTENSIONS_WITH_VERSION (0: unknown)
  bool has_qcom_recordable_queues = false;  // cl_qcom_recordable_queues

  bool has_extension(const std::string& ext) const;
  const char* type_name() const;  // "GPU", "CPU", "accelerator", ...
  std::string summary() const;    // one line: fp16, images + max size, command buffers, extensions
};

// Every device of every platform, in (platform, device) order. Empty when there is no OpenCL
// platform (CL_PLATFORM_NOT_FOUND_KHR); other enumeration failures throw.
std::vector<DeviceInfo> list_devices();
// "  [0] 0:0 Portable Computing Language / pthread-... (CPU)" lines, or "  (none)".
std::string describe_devices(const std::vector<DeviceInfo>& devs);

// Selects a device: "" = the first GPU, else the first device of any type; "N" = global index;
// "P:D" = platform P, device D; anything else = the first device whose device or platform name
// contains the selector (case-insensitive), else whose vendor or platform/device version string
// does ("pocl" matches PoCL through its version string "OpenCL 3.0 PoCL 3.1 ..."). Throws opv::Error listing the devices when nothing
// matches or when no OpenCL platform exists.
DeviceInfo select_device(const std::string& selector);
DeviceInfo select_device(const std::vector<DeviceInfo>& devs, const std::string& selector);

// The process-wide context of a device (created on first use, shared by every backend).
cl_context shared_context(const DeviceInfo& dev);

// Build statistics of build_program(), process-wide, for tests and diagnostics.
struct BuildStats {
  int64_t memory_hits = 0;  // served from the in-process map
  int64_t disk_hits = 0;    // created from a cached binary
  int64_t disk_rejects = 0; // cache files that could not be used (corrupt, stale) and were rebuilt
  int64_t compiles = 0;     // built from source
};
BuildStats build_stats();
// Drops the in-process program map (programs still referenced elsewhere stay alive), so that
// the next build_program() goes to the disk cache; for tests and long-running tools.
void clear_memory_cache();

// The on-disk cache directory: $OPV_CACHE_DIR, else $XDG_CACHE_HOME/opvision/cl, else
// ~/.cache/opvision/cl; "" when no home is known. (Whether the cache is used is build_program's
// `disk_cache`, backend::Options.cl_disk_cache; the OPV_CL_CACHE switch is no longer read.)
std::string cache_dir();
// The cache file a program would use (for tests); "" when no cache directory is known.
std::string cache_path(const DeviceInfo& dev, const std::string& source, const std::string& options);

// Builds `source` with `options` for `dev` in shared_context(dev), through the in-process map and,
// when `disk_cache`, the disk cache. A corrupt or unloadable cache file is ignored and replaced.
// On a build failure throws opv::Error naming `entry` and quoting the (trimmed) build log.
// Returns a new reference.
Program build_program(const DeviceInfo& dev, const std::string& source, const std::string& options,
                      const std::string& entry, bool disk_cache = true);

}  // namespace opv::backend::cl
