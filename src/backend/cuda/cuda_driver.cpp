// CUDA driver layer (see cuda_driver.h).
// 1. load(): dlopen("libcuda.so.1") (or the library OPV_CUDA_DRIVER names), dlsym every entry point under the symbol cuda.h maps its API
//    name to (two-level stringizing expands the macro: OPV_CUDA_SYMBOL(cuMemAlloc) =
//    "cuMemAlloc_v2"), cuInit(0), cuDriverGetVersion; any failure is kept as the message every
//    later driver() call throws;
// 2. errors: cuGetErrorName / cuGetErrorString of the loaded driver;
// 3. devices: cuDeviceGetCount, cuDeviceGet, name, compute capability, limits.
#include "backend/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <cctype>
#include <cstdlib>

#include "core/error.h"

namespace opv::backend::cu {

namespace {

#define OPV_CUDA_STRINGIZE(x) #x
#define OPV_CUDA_SYMBOL(fn) OPV_CUDA_STRINGIZE(fn)  // the argument is macro-expanded first

constexpr const char* kLibrary = "libcuda.so.1";

struct Loaded {
  Driver table;
  std::string error;  // empty when the table is usable
};

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// Symbols with an older name of the same prototype, taken when the header's name is missing.
const char* older_same_prototype(const std::string& symbol) {
  if (symbol == "cuEventElapsedTime_v2") return "cuEventElapsedTime";  // v2: CUDA 12.8
  return nullptr;
}

Loaded load() {
  Loaded l;
  dlerror();
  // OPV_CUDA_DRIVER: another library with the driver's entry points in place of libcuda.so.1
  // (libopv_cudasim.so, the PTX simulator: sim/driver.cpp).
  const char* env = std::getenv("OPV_CUDA_DRIVER");
  const std::string path = env && *env ? env : kLibrary;
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    l.error = detail::concat("cuda backend: no CUDA driver (", why ? why : path,
                             env && *env ? "; named by OPV_CUDA_DRIVER" : "", ")");
    return l;
  }
  std::string missing;
  auto find = [&](const char* api, const char* symbol, bool required) -> void* {
    void* p = dlsym(lib, symbol);
    if (!p)
      if (const char* older = older_same_prototype(symbol)) p = dlsym(lib, older);
    if (!p && required)
      missing += detail::concat(missing.empty() ? "" : ", ", symbol,
                                std::string(api) == symbol ? "" : " (" + std::string(api) + ")");
    return p;
  };
#define OPV_CUDA_LOAD(fn) l.table.fn = reinterpret_cast<decltype(l.table.fn)>(find(#fn, OPV_CUDA_SYMBOL(fn), true));
  OPV_CUDA_DRIVER_FUNCTIONS(OPV_CUDA_LOAD)
#undef OPV_CUDA_LOAD
#define OPV_CUDA_LOAD_OPTIONAL(fn) \
  l.table.fn = reinterpret_cast<decltype(l.table.fn)>(find(#fn, OPV_CUDA_SYMBOL(fn), false));
  OPV_CUDA_DRIVER_OPTIONAL(OPV_CUDA_LOAD_OPTIONAL)
#undef OPV_CUDA_LOAD_OPTIONAL
  if (l.table.cuDriverGetVersion) l.table.cuDriverGetVersion(&l.table.version);
  if (!missing.empty()) {
    l.error = detail::concat("cuda backend: the CUDA driver in ", path, " (CUDA ", version_text(l.table.version),
                             ") lacks entry points this build (cuda.h of CUDA ", version_text(CUDA_VERSION),
                             ") needs: ", missing, "; update the driver");
    return l;
  }
  const CUresult r = l.table.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    const char* text = nullptr;
    l.table.cuGetErrorName(r, &name);
    l.table.cuGetErrorString(r, &text);
    l.error = detail::concat("cuda backend: ", r == CUDA_ERROR_NO_DEVICE ? "no CUDA device" : "the CUDA driver failed",
                             " (cuInit: ", name ? name : "CUDA_ERROR_UNKNOWN", ": ", text ? text : "unknown error",
                             ")");
  }
  return l;
}

int attribute(const Driver& d, CUdevice dev, CUdevice_attribute a, const char* what) {
  int v = 0;
  check(d.cuDeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute", what);
  return v;
}

DeviceInfo info_of(int index) {
  const Driver& d = driver();
  DeviceInfo i;
  i.index = index;
  check(d.cuDeviceGet(&i.device, index), "cuDeviceGet", "device " + std::to_string(index));
  char name[256] = {};
  check(d.cuDeviceGetName(name, int(sizeof name) - 1, i.device), "cuDeviceGetName");
  i.name = name;
  i.cc_major = attribute(d, i.device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability");
  i.cc_minor = attribute(d, i.device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability");
  i.multiprocessors = attribute(d, i.device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessors");
  i.max_threads_per_block = attribute(d, i.device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads");
  const CUdevice_attribute block[3] = {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                                       CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
  const CUdevice_attribute grid[3] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                      CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
  for (int k = 0; k < 3; ++k) {
    i.max_block[k] = attribute(d, i.device, block[k], "max block dimension");
    i.max_grid[k] = attribute(d, i.device, grid[k], "max grid dimension");
  }
  size_t mem = 0;
  check(d.cuDeviceTotalMem(&mem, i.device), "cuDeviceTotalMem");
  i.total_mem_bytes = int64_t(mem);
  return i;
}

}  // namespace

const Driver& driver() {
  static const Loaded loaded = load();  // thread-safe, once
  if (!loaded.error.empty()) throw Error(loaded.error);
  return loaded.table;
}

std::string error_text(CUresult r) {
  const Driver& d = driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) name = "CUDA_ERROR_UNKNOWN";
  if (d.cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) text = "unknown error";
  return detail::concat(name, " (", text, ")");
}

void check(CUresult r, const char* call, const std::string& context) {
  if (r == CUDA_SUCCESS) return;
  fail("cuda backend: ", call, " failed: ", error_text(r), context.empty() ? "" : ": ", context);
}

std::string DeviceInfo::sm() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }

int device_count() {
  const Driver& d = driver();
  int n = 0;
  check(d.cuDeviceGetCount(&n), "cuDeviceGetCount");
  return n;
}

DeviceInfo select_device(const std::string& selector) {
  int index = 0;
  if (!selector.empty()) {
    bool digits = selector.size() <= 6;
    for (char c : selector) digits &= std::isdigit(static_cast<unsigned char>(c)) != 0;
    OPV_CHECK(digits, "cuda backend: device selector '", selector,
              "' is not a device index (the cuda backend selects devices by index: 0, 1, ...)");
    index = std::atoi(selector.c_str());
  }
  const int n = device_count();
  OPV_CHECK(n > 0, "cuda backend: no CUDA device (cuDeviceGetCount: 0)");
  if (index >= n) {
    std::string list;
    for (int i = 0; i < n; ++i) {
      const DeviceInfo d = info_of(i);
      list += detail::concat("\n  [", i, "] ", d.name, " (", d.sm(), ")");
    }
    fail("cuda backend: no CUDA device ", index, " (", n, " device", n == 1 ? "" : "s", "):", list);
  }
  return info_of(index);
}

ScopedContext::ScopedContext(CUcontext ctx) {
  check(driver().cuCtxPushCurrent(ctx), "cuCtxPushCurrent");
  pushed_ = true;
}

ScopedContext::~ScopedContext() {
  if (!pushed_) return;
  CUcontext popped = nullptr;
  driver().cuCtxPopCurrent(&popped);
}

}  // namespace opv::backend::cu
