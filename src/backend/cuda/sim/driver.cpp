// libopv_cudasim.so: the entry points of the CUDA driver API that the cuda backend uses
// (cuda_driver.h's table), backed by the PTX simulator (ptx.h) instead of a GPU. Point the backend
// at it with OPV_CUDA_DRIVER=/path/to/libopv_cudasim.so and every `--backend cuda` path (run,
// verify, bench, the tests) runs the generated kernels on the CPU, with their memory accesses
// checked.
// One simulated device, "cudasim", of compute capability OPV_CUDASIM_SM (default 90: clusters
// allowed). Everything is synchronous: a launch, a copy or a graph replay has finished when the
// call returns; streams and events are tokens, graphs are their nodes in the order added (a
// topological order: a node's dependencies exist before it). Modules take PTX text only.
// OPV_CUDASIM_DUMP=DIR writes each module's PTX as loaded to DIR/moduleN.ptx.
// Dynamic shared memory (sharedMemBytes of cuLaunchKernel and of kernel nodes) is checked as a
// GPU checks it: more than 48 KB less the kernel's static bytes needs
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES set at least that high, and static + dynamic
// may not pass the device's opt-in limit per block (smem_optin(): 227 KB on sm_90); either is
// CUDA_ERROR_INVALID_VALUE, as is setting the attribute beyond that limit.
// Errors: a launch that faults returns CUDA_ERROR_ILLEGAL_ADDRESS (memory) or
// CUDA_ERROR_LAUNCH_FAILED (anything else), and cuGetErrorString for that code then gives the
// simulator's message, naming the kernel, block, thread and PTX line (so for any code the
// simulator failed with last, e.g. a refused shared memory size).
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cuda/sim/ptx_internal.h"

namespace {

using opv::cudasim::Dim3;
using opv::cudasim::Kernel;
using opv::cudasim::Memory;
using opv::cudasim::Module;

std::mutex g_lock;
Memory g_mem;
std::string g_last_error;  // the simulator's message for the last failed call
CUresult g_last_code = CUDA_SUCCESS;  // and its code

struct Node {
  bool kernel = true;
  const Kernel* k = nullptr;
  Dim3 grid, block;
  unsigned shared = 0;  // dynamic shared memory bytes
  std::vector<uint8_t> params;
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
};
struct Graph {
  std::vector<std::unique_ptr<int>> handles;  // node handles, each holding its node's index
  std::vector<Node> nodes;
};
struct Exec {
  std::vector<Node> nodes;
};
struct Event {
  std::chrono::steady_clock::time_point at;
};
int g_token_context = 0, g_token_stream = 0;

int sm() {
  const char* e = std::getenv("OPV_CUDASIM_SM");
  if (!e || !*e) return 90;
  const int v = std::atoi(e);
  return v >= 50 && v < 200 ? v : 90;
}

CUresult fail(CUresult r, const std::string& message) {
  g_last_error = message;
  g_last_code = r;
  return r;
}

// The most shared memory a block may have (static + dynamic) once the kernel opts in
// (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN), per compute capability as the CUDA
// programming guide lists it; 48 KB, the limit without opting in, before Volta.
constexpr int kDefaultSharedPerBlock = 48 * 1024;
int smem_optin() {
  const int s = sm();
  if (s >= 90) return 227 * 1024;             // 232448
  if (s == 80 || s == 87) return 163 * 1024;  // A100, Orin
  if (s >= 86) return 99 * 1024;              // 86, 89
  if (s >= 75) return 64 * 1024;
  if (s >= 70) return 96 * 1024;
  return kDefaultSharedPerBlock;
}

// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: as set, else 48 KB less the static bytes.
int64_t max_dynamic(const Kernel& k) {
  if (k.max_dynamic_shared >= 0) return k.max_dynamic_shared;
  return std::max<int64_t>(0, int64_t(kDefaultSharedPerBlock) - int64_t(k.shared_bytes));
}

// A launch's dynamic shared memory against the kernel's attribute and the device's limit.
CUresult check_shared(const Kernel& k, unsigned bytes) {
  if (bytes == 0) return CUDA_SUCCESS;
  if (int64_t(bytes) > max_dynamic(k))
    return fail(CUDA_ERROR_INVALID_VALUE,
                "cudasim: kernel '" + k.name + "': " + std::to_string(bytes) + " bytes of dynamic shared memory, "
                "more than its CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (" + std::to_string(max_dynamic(k)) +
                (k.max_dynamic_shared < 0 ? ", never set: 48 KB less its static bytes" : "") + ")");
  if (int64_t(k.shared_bytes) + bytes > smem_optin())
    return fail(CUDA_ERROR_INVALID_VALUE,
                "cudasim: kernel '" + k.name + "': " + std::to_string(k.shared_bytes) + " static + " +
                    std::to_string(bytes) + " dynamic bytes of shared memory, more than sm_" + std::to_string(sm()) +
                    " allows a block (" + std::to_string(smem_optin()) + ")");
  return CUDA_SUCCESS;
}

std::vector<uint8_t> pack_params(const Kernel& k, void** params) {
  std::vector<uint8_t> buf(k.param_bytes);
  for (size_t i = 0; i < k.params.size(); ++i)
    if (params && params[i]) std::memcpy(buf.data() + k.params[i].offset, params[i], k.params[i].size);
  return buf;
}

CUresult run(const Node& n) {
  if (!n.kernel) {
    std::memcpy(n.dst, n.src, n.bytes);
    return CUDA_SUCCESS;
  }
  try {
    opv::cudasim::launch(*n.k, n.grid, n.block, n.params.data(), g_mem, 0, n.shared);
  } catch (const std::exception& e) {
    const std::string m = e.what();
    const bool memory = m.find("outside every") != std::string::npos || m.find("beyond") != std::string::npos ||
                        m.find("misaligned") != std::string::npos;
    return fail(memory ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_ERROR_LAUNCH_FAILED, m);
  }
  return CUDA_SUCCESS;
}

const char* name_of(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
    case CUDA_ERROR_INVALID_PTX: return "CUDA_ERROR_INVALID_PTX";
    case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case CUDA_ERROR_LAUNCH_FAILED: return "CUDA_ERROR_LAUNCH_FAILED";
    case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    default: return "CUDA_ERROR_UNKNOWN";
  }
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuDriverGetVersion(int* v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = CUDA_VERSION;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorName(CUresult r, const char** s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  *s = name_of(r);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult r, const char** s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  static thread_local std::string text;
  std::lock_guard<std::mutex> g(g_lock);
  text = (r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED || r == CUDA_ERROR_INVALID_PTX ||
          r == CUDA_ERROR_INVALID_IMAGE || r == g_last_code) && !g_last_error.empty()
             ? g_last_error
             : std::string(name_of(r)) + " (cudasim)";
  *s = text.c_str();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetCount(int* n) {
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice* d, int ordinal) {
  if (!d || ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice) {
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  const std::string n = "cudasim (PTX simulator on the CPU, sm_" + std::to_string(sm()) + ")";
  std::snprintf(name, size_t(len), "%s", n.c_str());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = sm() / 10; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = sm() % 10; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 0x7fffffff; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = kDefaultSharedPerBlock; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = smem_optin(); break;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: *v = sm() >= 90; break;
    default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = size_t(8) << 30;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  *c = reinterpret_cast<CUcontext>(&g_token_context);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxPushCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxPopCurrent(CUcontext* c) {
  if (c) *c = reinterpret_cast<CUcontext>(&g_token_context);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamCreate(CUstream* s, unsigned int) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  *s = reinterpret_cast<CUstream>(&g_token_stream);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamDestroy(CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamQuery(CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamWaitEvent(CUstream, CUevent, unsigned int) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* p, size_t bytes) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  void* m = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(m, 0xcd, (bytes + 255) / 256 * 256 + 256);  // uninitialised, visibly
  std::lock_guard<std::mutex> g(g_lock);
  g_mem.add(reinterpret_cast<uint64_t>(m), bytes);
  *p = reinterpret_cast<CUdeviceptr>(m);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr p) {
  std::lock_guard<std::mutex> g(g_lock);
  if (!g_mem.contains(uint64_t(p))) return CUDA_ERROR_INVALID_VALUE;
  g_mem.remove(uint64_t(p));
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
// Pinned host memory; with CU_MEMHOSTALLOC_DEVICEMAP also device memory (kernels may access it:
// the simulated global memory is host memory, so its device pointer is its host pointer).
CUresult CUDAAPI cuMemHostAlloc(void** p, size_t bytes, unsigned int flags) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (!*p) return CUDA_ERROR_OUT_OF_MEMORY;
  if (flags & CU_MEMHOSTALLOC_DEVICEMAP) {
    std::lock_guard<std::mutex> g(g_lock);
    g_mem.add(reinterpret_cast<uint64_t>(*p), bytes);
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr* d, void* p, unsigned int flags) {
  if (!d || flags) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> g(g_lock);
  if (!g_mem.contains(reinterpret_cast<uint64_t>(p))) return CUDA_ERROR_INVALID_VALUE;  // not mapped
  *d = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFreeHost(void* p) {
  {
    std::lock_guard<std::mutex> g(g_lock);
    if (g_mem.contains(reinterpret_cast<uint64_t>(p))) g_mem.remove(reinterpret_cast<uint64_t>(p));
  }
  std::free(p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes, CUstream) {
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream) {
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream) {
  std::memset(reinterpret_cast<void*>(dst), v, n);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* m, const void* image, unsigned int n, CUjit_option* opts, void** vals) {
  if (!m || !image) return CUDA_ERROR_INVALID_VALUE;
  const char* text = static_cast<const char*>(image);
  char* log = nullptr;
  size_t log_size = 0;
  for (unsigned i = 0; i < n && opts && vals; ++i) {
    if (opts[i] == CU_JIT_ERROR_LOG_BUFFER) log = static_cast<char*>(vals[i]);
    if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) log_size = size_t(reinterpret_cast<uintptr_t>(vals[i]));
  }
  auto report = [&](CUresult r, const std::string& msg) {
    if (log && log_size) std::snprintf(log, log_size, "%s", msg.c_str());
    std::lock_guard<std::mutex> g(g_lock);
    return fail(r, msg);
  };
  if (const char* dir = std::getenv("OPV_CUDASIM_DUMP"); dir && *dir) {  // the PTX as loaded, for reading
    static int serial = 0;
    const std::string path = std::string(dir) + "/module" + std::to_string(serial++) + ".ptx";
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
      std::fputs(text, f);
      std::fclose(f);
    }
  }
  if (std::memcmp(text, "\x7f" "ELF", 4) == 0 || std::memcmp(text, "\x50\xed\x55\xba", 4) == 0)
    return report(CUDA_ERROR_INVALID_IMAGE, "cudasim: the module is a cubin or fatbinary; the simulator runs PTX only");
  try {
    std::unique_ptr<Module> mod = opv::cudasim::parse_module(text);
    std::lock_guard<std::mutex> g(g_lock);
    for (const opv::cudasim::GlobalVar& v : mod->globals) g_mem.add(reinterpret_cast<uint64_t>(v.data), v.bytes);
    *m = reinterpret_cast<CUmodule>(mod.release());
  } catch (const std::exception& e) {
    return report(CUDA_ERROR_INVALID_PTX, e.what());
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleUnload(CUmodule m) {
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> g(g_lock);
  for (const opv::cudasim::GlobalVar& v : reinterpret_cast<Module*>(m)->globals)
    g_mem.remove(reinterpret_cast<uint64_t>(v.data));
  delete reinterpret_cast<Module*>(m);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  if (!f || !m || !name) return CUDA_ERROR_INVALID_VALUE;
  const Kernel* k = reinterpret_cast<Module*>(m)->find(name);
  if (!k) return CUDA_ERROR_NOT_FOUND;
  *f = reinterpret_cast<CUfunction>(const_cast<Kernel*>(k));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUmodule m, const char* name) {
  if (!m || !name) return CUDA_ERROR_INVALID_VALUE;
  for (const opv::cudasim::GlobalVar& g : reinterpret_cast<Module*>(m)->globals)
    if (g.name == name) {
      if (dptr) *dptr = reinterpret_cast<CUdeviceptr>(g.data);
      if (bytes) *bytes = size_t(g.bytes);
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}
CUresult CUDAAPI cuFuncGetAttribute(int* v, CUfunction_attribute a, CUfunction f) {
  if (!v || !f) return CUDA_ERROR_INVALID_VALUE;
  const Kernel& k = *reinterpret_cast<const Kernel*>(f);
  switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = int(k.max_threads); break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = int(k.shared_bytes); break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: {
      std::lock_guard<std::mutex> g(g_lock);
      *v = int(max_dynamic(k));
      break;
    }
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = int(k.registers); break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: *v = int(k.cluster[0]); break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT: *v = int(k.cluster[1]); break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *v = int(k.cluster[2]); break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = sm(); break;
    default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}
// MAX_DYNAMIC_SHARED_SIZE_BYTES is kept (the launches check against it); other attributes
// (NON_PORTABLE_CLUSTER_SIZE_ALLOWED, ...) are accepted and change nothing here.
CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_SUCCESS;
  Kernel& k = *reinterpret_cast<Kernel*>(f);
  std::lock_guard<std::mutex> g(g_lock);
  if (v < 0 || int64_t(k.shared_bytes) + v > smem_optin())
    return fail(CUDA_ERROR_INVALID_VALUE,
                "cudasim: cuFuncSetAttribute: kernel '" + k.name + "': MAX_DYNAMIC_SHARED_SIZE_BYTES " +
                    std::to_string(v) + " with " + std::to_string(k.shared_bytes) + " static bytes; sm_" +
                    std::to_string(sm()) + " allows a block " + std::to_string(smem_optin()) + " in all");
  k.max_dynamic_shared = v;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetParamInfo(CUfunction f, size_t index, size_t* offset, size_t* size) {
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  const Kernel& k = *reinterpret_cast<const Kernel*>(f);
  if (index >= k.params.size()) return CUDA_ERROR_INVALID_VALUE;
  if (offset) *offset = k.params[index].offset;
  if (size) *size = k.params[index].size;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned shared, CUstream, void** params, void** extra) {
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> g(g_lock);
  if (extra) return fail(CUDA_ERROR_LAUNCH_FAILED, "cudasim: 'extra' parameters are not simulated");
  Node n;
  n.k = reinterpret_cast<const Kernel*>(f);
  if (const CUresult r = check_shared(*n.k, shared); r != CUDA_SUCCESS) return r;
  n.grid = {gx, gy, gz};
  n.block = {bx, by, bz};
  n.shared = shared;
  n.params = pack_params(*n.k, params);
  return run(n);
}

CUresult CUDAAPI cuEventCreate(CUevent* e, unsigned int) {
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  *e = reinterpret_cast<CUevent>(new Event{});
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent e) {
  delete reinterpret_cast<Event*>(e);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecord(CUevent e, CUstream) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  reinterpret_cast<Event*>(e)->at = std::chrono::steady_clock::now();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent a, CUevent b) {
  if (!ms || !a || !b) return CUDA_ERROR_INVALID_VALUE;
  *ms = std::chrono::duration<float, std::milli>(reinterpret_cast<Event*>(b)->at - reinterpret_cast<Event*>(a)->at)
            .count();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphCreate(CUgraph* g, unsigned int) {
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  *g = reinterpret_cast<CUgraph>(new Graph{});
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode* node, CUgraph g, const CUgraphNode*, size_t,
                                      const CUDA_KERNEL_NODE_PARAMS* p) {
  if (!node || !g || !p || !p->func) return CUDA_ERROR_INVALID_VALUE;
  if (p->extra) return CUDA_ERROR_INVALID_VALUE;
  Graph& gr = *reinterpret_cast<Graph*>(g);
  Node n;
  n.k = reinterpret_cast<const Kernel*>(p->func);
  {  // checked when the node is added, against the attribute as it is then
    std::lock_guard<std::mutex> lock(g_lock);
    if (const CUresult r = check_shared(*n.k, p->sharedMemBytes); r != CUDA_SUCCESS) return r;
  }
  n.grid = {p->gridDimX, p->gridDimY, p->gridDimZ};
  n.block = {p->blockDimX, p->blockDimY, p->blockDimZ};
  n.shared = p->sharedMemBytes;
  n.params = pack_params(*n.k, p->kernelParams);
  gr.nodes.push_back(std::move(n));
  gr.handles.push_back(std::make_unique<int>(int(gr.nodes.size()) - 1));
  *node = reinterpret_cast<CUgraphNode>(gr.handles.back().get());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode* node, CUgraph g, const CUgraphNode*, size_t, const CUDA_MEMCPY3D* c,
                                      CUcontext) {
  if (!node || !g || !c) return CUDA_ERROR_INVALID_VALUE;
  if (c->Height > 1 || c->Depth > 1 || c->srcXInBytes || c->dstXInBytes) return CUDA_ERROR_INVALID_VALUE;
  Graph& gr = *reinterpret_cast<Graph*>(g);
  Node n;
  n.kernel = false;
  n.src = c->srcMemoryType == CU_MEMORYTYPE_HOST ? c->srcHost : reinterpret_cast<const void*>(c->srcDevice);
  n.dst = c->dstMemoryType == CU_MEMORYTYPE_HOST ? c->dstHost : reinterpret_cast<void*>(c->dstDevice);
  n.bytes = c->WidthInBytes;
  gr.nodes.push_back(std::move(n));
  gr.handles.push_back(std::make_unique<int>(int(gr.nodes.size()) - 1));
  *node = reinterpret_cast<CUgraphNode>(gr.handles.back().get());
  return CUDA_SUCCESS;
}
// Edges, checked as the driver checks them (nodes of this graph; a programmatic edge only between
// kernel nodes, from port PROGRAMMATIC or LAUNCH_ORDER, on sm_90+) and, since a replay runs the
// nodes in the order added, only from an earlier node to a later one. Not checked: an edge given
// twice (the driver refuses it; the simulator keeps no edges).
CUresult CUDAAPI cuGraphAddDependencies(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                        const CUgraphEdgeData* edges, size_t n) {
  if (!g || (n && (!from || !to))) return CUDA_ERROR_INVALID_VALUE;
  Graph& gr = *reinterpret_cast<Graph*>(g);
  auto index = [&](CUgraphNode h) -> int {
    for (const auto& p : gr.handles)
      if (reinterpret_cast<CUgraphNode>(p.get()) == h) return *p;
    return -1;
  };
  for (size_t i = 0; i < n; ++i) {
    const int a = index(from[i]), b = index(to[i]);
    if (a < 0 || b < 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuGraphAddDependencies: a node of another graph");
    if (a >= b)
      return fail(CUDA_ERROR_NOT_SUPPORTED, "cudasim: an edge from node " + std::to_string(a) + " to node " +
                                                std::to_string(b) + " (replays run the nodes in the order added)");
    if (!edges) continue;
    const CUgraphEdgeData& e = edges[i];
    if (e.to_port != 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuGraphAddDependencies: to_port must be 0");
    for (unsigned char r : e.reserved)
      if (r) return fail(CUDA_ERROR_INVALID_VALUE, "cuGraphAddDependencies: reserved bytes must be 0");
    if (e.type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC) {
      if (sm() < 90) return fail(CUDA_ERROR_NOT_SUPPORTED, "cudasim: programmatic edges need sm_90+");
      if (!gr.nodes[size_t(a)].kernel || !gr.nodes[size_t(b)].kernel)
        return fail(CUDA_ERROR_INVALID_VALUE, "cuGraphAddDependencies: a programmatic edge joins kernel nodes only");
      if (e.from_port != CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC && e.from_port != CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER)
        return fail(CUDA_ERROR_INVALID_VALUE, "cuGraphAddDependencies: a programmatic edge needs from port "
                                              "PROGRAMMATIC or LAUNCH_ORDER");
    } else if (e.type != CU_GRAPH_DEPENDENCY_TYPE_DEFAULT || e.from_port != CU_GRAPH_KERNEL_NODE_PORT_DEFAULT) {
      return fail(CUDA_ERROR_INVALID_VALUE, "cuGraphAddDependencies: unknown edge type or port");
    }
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphInstantiate(CUgraphExec* e, CUgraph g, unsigned long long) {
  if (!e || !g) return CUDA_ERROR_INVALID_VALUE;
  *e = reinterpret_cast<CUgraphExec>(new Exec{reinterpret_cast<Graph*>(g)->nodes});
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphUpload(CUgraphExec, CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuGraphLaunch(CUgraphExec e, CUstream) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> g(g_lock);
  for (const Node& n : reinterpret_cast<Exec*>(e)->nodes)
    if (const CUresult r = run(n); r != CUDA_SUCCESS) return r;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphDestroy(CUgraph g) {
  delete reinterpret_cast<Graph*>(g);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec e) {
  delete reinterpret_cast<Exec*>(e);
  return CUDA_SUCCESS;
}

}  // extern "C"
