// The CUDA driver API as the cuda backend uses it, with no CUDA library linked:
// 1. the function table: libcuda.so.1 is opened with dlopen on first use and each entry point is
//    looked up with dlsym under the exact name cuda.h maps the API name to (cuMemAlloc ->
//    cuMemAlloc_v2, cuGraphInstantiate -> cuGraphInstantiateWithFlags, cuEventElapsedTime ->
//    cuEventElapsedTime_v2, ...), so each pointer's type is the prototype cuda.h declares for that
//    very symbol (cuGraphAddKernelNode -> cuGraphAddKernelNode_v2, CUDA 12.0+, which takes
//    CUDA_KERNEL_NODE_PARAMS_v2). cuda.h (the toolkit's, found by CMake) supplies types and
//    prototypes only.
//    A driver older than this build's header lacks some of those names: loading then fails with
//    the missing symbol named, except where the older symbol has the same prototype
//    (cuEventElapsedTime: v1 before CUDA 12.8) and is taken instead. Optional entry points
//    (cuFuncGetParamInfo, CUDA 12.4+) are null when absent.
//    (cuGetProcAddress is not used: asked for a version newer than the driver, it returns the
//    driver's newest variant, whose prototype may differ from the header's.)
// 2. check(): every call's CUresult, named with cuGetErrorName/cuGetErrorString, becomes an
//    opv::Error naming the call: "cuda backend: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of
//    memory): arena (1024 bytes)".
// 3. devices: count, properties and selection by index (backend::Options.device).
// Loading is process-wide and happens once; the library is never closed (objects may be released
// from static destructors). Without a driver every use throws "cuda backend: no CUDA driver
// (libcuda.so.1: <dlerror>)"; without a device, "cuda backend: no CUDA device (...)".
#pragma once
#include <cuda.h>

#include <cstdint>
#include <string>

namespace opv::backend::cu {

// Required entry points, by their API names (cuda.h's macros give the versioned symbols).
#define OPV_CUDA_DRIVER_FUNCTIONS(X)                                                                     \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)               \
  X(cuDevicePrimaryCtxRelease) X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuStreamCreate) X(cuStreamDestroy) \
  X(cuStreamSynchronize) X(cuStreamQuery) X(cuStreamWaitEvent) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)    \
  X(cuMemHostGetDevicePointer)                                                                            \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemsetD8Async) X(cuModuleLoadDataEx)       \
  X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuEventCreate)        \
  X(cuEventDestroy) X(cuEventRecord) X(cuEventElapsedTime) X(cuGraphCreate) X(cuGraphAddKernelNode)        \
  X(cuGraphAddMemcpyNode) X(cuGraphInstantiate) X(cuGraphUpload) X(cuGraphLaunch) X(cuGraphDestroy)       \
  X(cuGraphExecDestroy)
// Optional entry points: null when the driver lacks them (cuGraphAddDependencies: the _v2 with
// edge data, CUDA 12.3+, for programmatic edges; cuModuleGetGlobal: only the probe needs it).
#if CUDA_VERSION >= 12030
#define OPV_CUDA_DRIVER_OPTIONAL(X) X(cuFuncGetParamInfo) X(cuModuleGetGlobal) X(cuGraphAddDependencies)
#else
#define OPV_CUDA_DRIVER_OPTIONAL(X) X(cuFuncGetParamInfo) X(cuModuleGetGlobal)
#endif

struct Driver {
#define OPV_CUDA_MEMBER(fn) decltype(&::fn) fn = nullptr;
  OPV_CUDA_DRIVER_FUNCTIONS(OPV_CUDA_MEMBER)
  OPV_CUDA_DRIVER_OPTIONAL(OPV_CUDA_MEMBER)
#undef OPV_CUDA_MEMBER
  int version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor
};

// The process-wide table, loaded (and cuInit(0) called) on first use. Throws opv::Error when there
// is no driver, no device, or a required entry point is missing.
const Driver& driver();

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a code.
std::string error_text(CUresult r);
// Throws opv::Error "cuda backend: <call> failed: <name> (<description>)[: <context>]" unless
// r == CUDA_SUCCESS.
void check(CUresult r, const char* call, const std::string& context = "");

// What the backend needs to know about a device.
struct DeviceInfo {
  int index = 0;
  CUdevice device = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;  // compute capability (sm_XY)
  int64_t total_mem_bytes = 0;
  int multiprocessors = 0;
  int max_threads_per_block = 0;
  int max_block[3] = {0, 0, 0};
  int max_grid[3] = {0, 0, 0};

  std::string sm() const;  // "sm_90"
};

// Number of CUDA devices (throws like driver()).
int device_count();
// The device a selector names: "" = device 0, "N" = device N. Throws opv::Error for a selector that
// is not an index (before touching the driver), and, listing the devices, for one out of range.
DeviceInfo select_device(const std::string& selector);

// Makes a context current on this thread for a scope (cuCtxPushCurrent / cuCtxPopCurrent), so
// the backend leaves the caller's current context as it found it.
class ScopedContext {
 public:
  explicit ScopedContext(CUcontext ctx);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  bool pushed_ = false;
};

}  // namespace opv::backend::cu
