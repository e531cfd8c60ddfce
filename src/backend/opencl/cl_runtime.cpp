// OpenCL runtime layer (see cl_runtime.h).
// 1. error names: a table of the OpenCL 3.0 and common extension error codes;
// 2. enumeration: clGetPlatformIDs/clGetDeviceIDs, then one DeviceInfo per device from
//    clGetDeviceInfo (strings, limits, extensions; cl_khr_command_buffer's version from
//    CL_DEVICE_EXTENSIONS_WITH_VERSION when the platform is OpenCL 3.0);
// 3. selection: index, "P:D", or a case-insensitive name substring; errors list the devices;
// 4. program cache: process-wide map (device, options, source) -> cl_program under one mutex;
//    disk files "<hash>.bin" = magic, key hash, binary size, binary; written to a temporary name
//    and renamed, so a reader never sees a half-written file; anything that does not load and
//    build is counted as a reject and replaced by a fresh build.
#include "backend/opencl/cl_runtime.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "core/error.h"

namespace opv::backend::cl {

namespace {

struct ErrorName {
  cl_int code;
  const char* name;
};
#define OPV_CL_ERR(x) {x, #x}
const ErrorName kErrorNames[] = {
    OPV_CL_ERR(CL_SUCCESS),
    OPV_CL_ERR(CL_DEVICE_NOT_FOUND),
    OPV_CL_ERR(CL_DEVICE_NOT_AVAILABLE),
    OPV_CL_ERR(CL_COMPILER_NOT_AVAILABLE),
    OPV_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE),
    OPV_CL_ERR(CL_OUT_OF_RESOURCES),
    OPV_CL_ERR(CL_OUT_OF_HOST_MEMORY),
    OPV_CL_ERR(CL_PROFILING_INFO_NOT_AVAILABLE),
    OPV_CL_ERR(CL_MEM_COPY_OVERLAP),
    OPV_CL_ERR(CL_IMAGE_FORMAT_MISMATCH),
    OPV_CL_ERR(CL_IMAGE_FORMAT_NOT_SUPPORTED),
    OPV_CL_ERR(CL_BUILD_PROGRAM_FAILURE),
    OPV_CL_ERR(CL_MAP_FAILURE),
    OPV_CL_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET),
    OPV_CL_ERR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST),
    OPV_CL_ERR(CL_COMPILE_PROGRAM_FAILURE),
    OPV_CL_ERR(CL_LINKER_NOT_AVAILABLE),
    OPV_CL_ERR(CL_LINK_PROGRAM_FAILURE),
    OPV_CL_ERR(CL_DEVICE_PARTITION_FAILED),
    OPV_CL_ERR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE),
    OPV_CL_ERR(CL_INVALID_VALUE),
    OPV_CL_ERR(CL_INVALID_DEVICE_TYPE),
    OPV_CL_ERR(CL_INVALID_PLATFORM),
    OPV_CL_ERR(CL_INVALID_DEVICE),
    OPV_CL_ERR(CL_INVALID_CONTEXT),
    OPV_CL_ERR(CL_INVALID_QUEUE_PROPERTIES),
    OPV_CL_ERR(CL_INVALID_COMMAND_QUEUE),
    OPV_CL_ERR(CL_INVALID_HOST_PTR),
    OPV_CL_ERR(CL_INVALID_MEM_OBJECT),
    OPV_CL_ERR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR),
    OPV_CL_ERR(CL_INVALID_IMAGE_SIZE),
    OPV_CL_ERR(CL_INVALID_SAMPLER),
    OPV_CL_ERR(CL_INVALID_BINARY),
    OPV_CL_ERR(CL_INVALID_BUILD_OPTIONS),
    OPV_CL_ERR(CL_INVALID_PROGRAM),
    OPV_CL_ERR(CL_INVALID_PROGRAM_EXECUTABLE),
    OPV_CL_ERR(CL_INVALID_KERNEL_NAME),
    OPV_CL_ERR(CL_INVALID_KERNEL_DEFINITION),
    OPV_CL_ERR(CL_INVALID_KERNEL),
    OPV_CL_ERR(CL_INVALID_ARG_INDEX),
    OPV_CL_ERR(CL_INVALID_ARG_VALUE),
    OPV_CL_ERR(CL_INVALID_ARG_SIZE),
    OPV_CL_ERR(CL_INVALID_KERNEL_ARGS),
    OPV_CL_ERR(CL_INVALID_WORK_DIMENSION),
    OPV_CL_ERR(CL_INVALID_WORK_GROUP_SIZE),
    OPV_CL_ERR(CL_INVALID_WORK_ITEM_SIZE),
    OPV_CL_ERR(CL_INVALID_GLOBAL_OFFSET),
    OPV_CL_ERR(CL_INVALID_EVENT_WAIT_LIST),
    OPV_CL_ERR(CL_INVALID_EVENT),
    OPV_CL_ERR(CL_INVALID_OPERATION),
    OPV_CL_ERR(CL_INVALID_GL_OBJECT),
    OPV_CL_ERR(CL_INVALID_BUFFER_SIZE),
    OPV_CL_ERR(CL_INVALID_MIP_LEVEL),
    OPV_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE),
    OPV_CL_ERR(CL_INVALID_PROPERTY),
    OPV_CL_ERR(CL_INVALID_IMAGE_DESCRIPTOR),
    OPV_CL_ERR(CL_INVALID_COMPILER_OPTIONS),
    OPV_CL_ERR(CL_INVALID_LINKER_OPTIONS),
    OPV_CL_ERR(CL_INVALID_DEVICE_PARTITION_COUNT),
    OPV_CL_ERR(CL_INVALID_PIPE_SIZE),
    OPV_CL_ERR(CL_INVALID_DEVICE_QUEUE),
    OPV_CL_ERR(CL_INVALID_SPEC_ID),
    OPV_CL_ERR(CL_MAX_SIZE_RESTRICTION_EXCEEDED),
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
    {-1138, "CL_INVALID_COMMAND_BUFFER_KHR"},
    {-1139, "CL_INVALID_SYNC_POINT_WAIT_LIST_KHR"},
    {-1140, "CL_INCOMPATIBLE_COMMAND_QUEUE_KHR"},
};
#undef OPV_CL_ERR

constexpr cl_int kPlatformNotFoundKhr = -1001;  // cl_khr_icd: the loader found no platform
constexpr size_t kMaxBuildLog = 4000;           // characters of a build log quoted in an error

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\0' || std::isspace(static_cast<unsigned char>(s.back())))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

std::string platform_str(cl_platform_id p, cl_platform_info what, const char* label) {
  size_t n = 0;
  check(clGetPlatformInfo(p, what, 0, nullptr, &n), "clGetPlatformInfo", label);
  std::string s(n, '\0');
  if (n) check(clGetPlatformInfo(p, what, n, s.data(), nullptr), "clGetPlatformInfo", label);
  return trim(s);
}

std::string device_str(cl_device_id d, cl_device_info what, const char* label) {
  size_t n = 0;
  check(clGetDeviceInfo(d, what, 0, nullptr, &n), "clGetDeviceInfo", label);
  std::string s(n, '\0');
  if (n) check(clGetDeviceInfo(d, what, n, s.data(), nullptr), "clGetDeviceInfo", label);
  return trim(s);
}

template <typename T>
T device_val(cl_device_id d, cl_device_info what, const char* label) {
  T v{};
  check(clGetDeviceInfo(d, what, sizeof(T), &v, nullptr), "clGetDeviceInfo", label);
  return v;
}

// OpenCL "major.minor" of a platform/device version string "OpenCL 3.0 ...".
int cl_major_version(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "OpenCL %d.%d", &major, &minor) < 1) return 0;
  return major;
}

DeviceInfo query_device(cl_platform_id p, cl_device_id d) {
  DeviceInfo di;
  di.platform = p;
  di.device = d;
  di.platform_name = platform_str(p, CL_PLATFORM_NAME, "CL_PLATFORM_NAME");
  di.platform_version = platform_str(p, CL_PLATFORM_VERSION, "CL_PLATFORM_VERSION");
  di.name = device_str(d, CL_DEVICE_NAME, "CL_DEVICE_NAME");
  di.vendor = device_str(d, CL_DEVICE_VENDOR, "CL_DEVICE_VENDOR");
  di.version = device_str(d, CL_DEVICE_VERSION, "CL_DEVICE_VERSION");
  di.driver_version = device_str(d, CL_DRIVER_VERSION, "CL_DRIVER_VERSION");
  di.type = device_val<cl_device_type>(d, CL_DEVICE_TYPE, "CL_DEVICE_TYPE");
  std::istringstream ext(device_str(d, CL_DEVICE_EXTENSIONS, "CL_DEVICE_EXTENSIONS"));
  for (std::string e; ext >> e;) di.extensions.push_back(e);
  di.has_fp16 = di.has_extension("cl_khr_fp16");
  di.image_support = device_val<cl_bool>(d, CL_DEVICE_IMAGE_SUPPORT, "CL_DEVICE_IMAGE_SUPPORT") != CL_FALSE;
  if (di.image_support) {
    di.image2d_max_width = int64_t(device_val<size_t>(d, CL_DEVICE_IMAGE2D_MAX_WIDTH, "CL_DEVICE_IMAGE2D_MAX_WIDTH"));
    di.image2d_max_height =
        int64_t(device_val<size_t>(d, CL_DEVICE_IMAGE2D_MAX_HEIGHT, "CL_DEVICE_IMAGE2D_MAX_HEIGHT"));
    if (cl_major_version(di.version) >= 2) {
      cl_uint v = 0;
      if (clGetDeviceInfo(d, CL_DEVICE_IMAGE_PITCH_ALIGNMENT, sizeof(v), &v, nullptr) == CL_SUCCESS)
        di.image_pitch_alignment = v;
    }
  }
  const cl_uint align_bits = device_val<cl_uint>(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN, "CL_DEVICE_MEM_BASE_ADDR_ALIGN");
  di.mem_base_addr_align = std::max<int64_t>(1, int64_t(align_bits) / 8);
  di.max_work_group_size = int64_t(device_val<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, "CL_DEVICE_MAX_WORK_GROUP_SIZE"));
  di.compute_units = device_val<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS, "CL_DEVICE_MAX_COMPUTE_UNITS");
  di.global_mem_bytes = int64_t(device_val<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE, "CL_DEVICE_GLOBAL_MEM_SIZE"));
  di.has_command_buffer = di.has_extension("cl_khr_command_buffer");
  di.has_qcom_recordable_queues = di.has_extension("cl_qcom_recordable_queues");
  if (di.has_command_buffer && cl_major_version(di.version) >= 3) {
    size_t n = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS_WITH_VERSION, 0, nullptr, &n) == CL_SUCCESS && n) {
      std::vector<cl_name_version> nv(n / sizeof(cl_name_version));
      if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS_WITH_VERSION, nv.size() * sizeof(cl_name_version), nv.data(),
                          nullptr) == CL_SUCCESS)
        for (const cl_name_version& e : nv)
          if (std::strcmp(e.name, "cl_khr_command_buffer") == 0) di.command_buffer_version = e.version;
    }
  }
  return di;
}

// Process-wide state: contexts per device, the program map and the build statistics.
struct Registry {
  std::mutex mu;
  std::map<cl_device_id, cl_context> contexts;
  std::map<std::tuple<cl_device_id, std::string, std::string>, cl_program> programs;
  BuildStats stats;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed, see cl_runtime.h
  return *r;
}

// 64-bit FNV-1a, seeded, so that two seeds give a 128-bit key.
uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;  // FNV-1a 64-bit prime
  }
  return h;
}
constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;  // FNV-1a 64-bit offset basis
constexpr uint64_t kFnvOffsetAlt = 0x84222325cbf29ce4ull;

std::string cache_key_text(const DeviceInfo& dev, const std::string& source, const std::string& options) {
  // Lengths keep the fields from running into each other.
  return detail::concat("opvision-cl-cache-v1\n", dev.platform_name.size(), ":", dev.platform_name, "\n",
                        dev.name.size(), ":", dev.name, "\n", dev.driver_version.size(), ":", dev.driver_version,
                        "\n", options.size(), ":", options, "\n", source.size(), ":", source);
}

std::pair<uint64_t, uint64_t> cache_key(const DeviceInfo& dev, const std::string& source, const std::string& options) {
  const std::string text = cache_key_text(dev, source, options);
  return {fnv1a(text, kFnvOffset), fnv1a(text, kFnvOffsetAlt)};
}

constexpr char kCacheMagic[8] = {'O', 'P', 'V', 'C', 'L', 'B', 'N', '1'};

std::string build_log(cl_program prog, cl_device_id dev) {
  size_t n = 0;
  if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS) return "(no build log)";
  std::string s(n, '\0');
  if (n && clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, s.data(), nullptr) != CL_SUCCESS)
    return "(no build log)";
  s = trim(s);
  if (s.size() > kMaxBuildLog) s = s.substr(0, kMaxBuildLog) + "\n... (build log trimmed)";
  return s.empty() ? "(empty build log)" : s;
}

// A program from a cache file, built; nullptr when the file is absent, corrupt or rejected.
Program load_cached(const std::string& path, cl_context ctx, const DeviceInfo& dev, const std::string& options,
                    std::pair<uint64_t, uint64_t> key, bool* rejected) {
  *rejected = false;
  std::ifstream f(path, std::ios::binary);
  if (!f) return Program();
  *rejected = true;
  char magic[sizeof kCacheMagic];
  uint64_t k0 = 0, k1 = 0, size = 0;
  f.read(magic, sizeof magic);
  f.read(reinterpret_cast<char*>(&k0), sizeof k0);
  f.read(reinterpret_cast<char*>(&k1), sizeof k1);
  f.read(reinterpret_cast<char*>(&size), sizeof size);
  constexpr uint64_t kMaxBinary = uint64_t(1) << 30;
  if (!f || std::memcmp(magic, kCacheMagic, sizeof magic) != 0 || k0 != key.first || k1 != key.second ||
      size == 0 || size > kMaxBinary)
    return Program();
  std::vector<unsigned char> bin(size);
  f.read(reinterpret_cast<char*>(bin.data()), std::streamsize(size));
  if (!f || f.gcount() != std::streamsize(size) || f.peek() != std::char_traits<char>::eof()) return Program();
  const unsigned char* ptr = bin.data();
  const size_t len = bin.size();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  Program prog(clCreateProgramWithBinary(ctx, 1, &dev.device, &len, &ptr, &status, &err));
  if (err != CL_SUCCESS || status != CL_SUCCESS || !prog) return Program();
  if (clBuildProgram(prog.get(), 1, &dev.device, options.c_str(), nullptr, nullptr) != CL_SUCCESS) return Program();
  *rejected = false;
  return prog;
}

void store_cached(const std::string& path, cl_program prog, std::pair<uint64_t, uint64_t> key) {
  size_t size = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS || size == 0) return;
  std::vector<unsigned char> bin(size);
  unsigned char* ptr = bin.data();
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS) return;
  std::error_code ec;
  const std::filesystem::path p(path);
  std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) return;  // an unwritable cache only costs rebuilds
  const std::string tmp = path + ".tmp" + std::to_string(reinterpret_cast<uintptr_t>(&bin));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return;
    const uint64_t n = size;
    f.write(kCacheMagic, sizeof kCacheMagic);
    f.write(reinterpret_cast<const char*>(&key.first), sizeof key.first);
    f.write(reinterpret_cast<const char*>(&key.second), sizeof key.second);
    f.write(reinterpret_cast<const char*>(&n), sizeof n);
    f.write(reinterpret_cast<const char*>(bin.data()), std::streamsize(size));
    if (!f) {
      f.close();
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, p, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace

const char* error_name(cl_int err) {
  for (const ErrorName& e : kErrorNames)
    if (e.code == err) return e.name;
  return "CL_UNKNOWN_ERROR";
}

void check(cl_int err, const char* call, const std::string& context) {
  if (err == CL_SUCCESS) return;
  if (context.empty()) fail(call, " failed: ", error_name(err), " (", err, ")");
  fail(call, " failed: ", error_name(err), " (", err, "): ", context);
}

bool DeviceInfo::has_extension(const std::string& ext) const {
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

const char* DeviceInfo::type_name() const {
  if (type & CL_DEVICE_TYPE_GPU) return "GPU";
  if (type & CL_DEVICE_TYPE_CPU) return "CPU";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  if (type & CL_DEVICE_TYPE_CUSTOM) return "custom";
  return "other";
}

std::string DeviceInfo::summary() const {
  std::ostringstream os;
  os << "fp16 " << (has_fp16 ? "yes" : "no") << ", images ";
  if (image_support)
    os << "yes (max " << image2d_max_width << "x" << image2d_max_height << ")";
  else
    os << "no";
  os << ", command buffers ";
  if (has_command_buffer) {
    os << "yes";
    if (command_buffer_version)
      os << " (" << CL_VERSION_MAJOR(command_buffer_version) << "." << CL_VERSION_MINOR(command_buffer_version) << "."
         << CL_VERSION_PATCH(command_buffer_version) << ")";
  } else {
    os << "no";
  }
  if (has_qcom_recordable_queues) os << ", qcom recordable queues";
  os << ", " << extensions.size() << " extensions";
  return os.str();
}

std::vector<DeviceInfo> list_devices() {
  cl_uint np = 0;
  const cl_int err = clGetPlatformIDs(0, nullptr, &np);
  if (err == kPlatformNotFoundKhr || (err == CL_SUCCESS && np == 0)) return {};
  check(err, "clGetPlatformIDs");
  std::vector<cl_platform_id> plats(np);
  check(clGetPlatformIDs(np, plats.data(), nullptr), "clGetPlatformIDs");
  std::vector<DeviceInfo> out;
  for (cl_uint pi = 0; pi < np; ++pi) {
    cl_uint nd = 0;
    const cl_int e = clGetDeviceIDs(plats[pi], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd);
    if (e == CL_DEVICE_NOT_FOUND || nd == 0) continue;
    check(e, "clGetDeviceIDs", detail::concat("platform ", pi));
    std::vector<cl_device_id> devs(nd);
    check(clGetDeviceIDs(plats[pi], CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr), "clGetDeviceIDs");
    for (cl_uint di = 0; di < nd; ++di) {
      DeviceInfo info = query_device(plats[pi], devs[di]);
      info.platform_index = int(pi);
      info.device_index = int(di);
      info.global_index = int(out.size());
      out.push_back(std::move(info));
    }
  }
  return out;
}

std::string describe_devices(const std::vector<DeviceInfo>& devs) {
  if (devs.empty()) return "  (none: no OpenCL platform or device found)\n";
  std::ostringstream os;
  for (const DeviceInfo& d : devs)
    os << "  [" << d.global_index << "] " << d.platform_index << ":" << d.device_index << " " << d.platform_name
       << " / " << d.name << " (" << d.type_name() << ")\n";
  return os.str();
}

DeviceInfo select_device(const std::string& selector) { return select_device(list_devices(), selector); }

DeviceInfo select_device(const std::vector<DeviceInfo>& devs, const std::string& selector) {
  OPV_CHECK(!devs.empty(), "opencl: no OpenCL platform/device found (install an ICD, e.g. pocl-opencl-icd, or "
                           "register a driver in /etc/OpenCL/vendors)");
  const std::string sel = trim(selector);
  if (sel.empty()) {
    for (const DeviceInfo& d : devs)
      if (d.type & CL_DEVICE_TYPE_GPU) return d;
    return devs.front();
  }
  const bool digits = std::all_of(sel.begin(), sel.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (digits && sel.size() < 9) {
    const int n = std::stoi(sel);
    for (const DeviceInfo& d : devs)
      if (d.global_index == n) return d;
  } else {
    int p = -1, q = -1;
    char tail = 0;
    if (std::sscanf(sel.c_str(), "%d:%d%c", &p, &q, &tail) == 2) {
      for (const DeviceInfo& d : devs)
        if (d.platform_index == p && d.device_index == q) return d;
    } else {
      const std::string needle = lower(sel);
      // Names first; then vendor and version strings, where e.g. PoCL says "PoCL".
      for (const DeviceInfo& d : devs)
        if (lower(d.name).find(needle) != std::string::npos || lower(d.platform_name).find(needle) != std::string::npos)
          return d;
      for (const DeviceInfo& d : devs)
        for (const std::string* s : {&d.vendor, &d.platform_version, &d.version})
          if (lower(*s).find(needle) != std::string::npos) return d;
    }
  }
  fail("opencl: no device matches --device '", selector, "' (use an index N, P:D, or part of a platform/device "
       "name, vendor or version); "
       "devices:\n", describe_devices(devs));
}

cl_context shared_context(const DeviceInfo& dev) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.contexts.find(dev.device);
  if (it != r.contexts.end()) return it->second;
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(dev.platform),
                                         0};
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(props, 1, &dev.device, nullptr, nullptr, &err);
  check(err, "clCreateContext", "device '" + dev.name + "'");
  r.contexts[dev.device] = ctx;
  return ctx;
}

BuildStats build_stats() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.stats;
}

void clear_memory_cache() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& [key, prog] : r.programs) clReleaseProgram(prog);
  r.programs.clear();
}

std::string cache_dir() {
  if (const char* d = std::getenv("OPV_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/opvision/cl";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/opvision/cl";
  return "";
}

std::string cache_path(const DeviceInfo& dev, const std::string& source, const std::string& options) {
  const std::string dir = cache_dir();
  if (dir.empty()) return "";
  const auto key = cache_key(dev, source, options);
  char name[64];
  std::snprintf(name, sizeof name, "%016llx%016llx.bin", static_cast<unsigned long long>(key.first),
                static_cast<unsigned long long>(key.second));
  return dir + "/" + name;
}

Program build_program(const DeviceInfo& dev, const std::string& source, const std::string& options,
                      const std::string& entry, bool disk_cache) {
  cl_context ctx = shared_context(dev);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const auto mkey = std::make_tuple(dev.device, options, source);
  if (auto it = r.programs.find(mkey); it != r.programs.end()) {
    ++r.stats.memory_hits;
    check(clRetainProgram(it->second), "clRetainProgram", "kernel '" + entry + "'");
    return Program(it->second);
  }
  const std::string path = disk_cache ? cache_path(dev, source, options) : std::string();
  const auto dkey = cache_key(dev, source, options);
  Program prog;
  if (!path.empty()) {
    bool rejected = false;
    prog = load_cached(path, ctx, dev, options, dkey, &rejected);
    if (prog) ++r.stats.disk_hits;
    if (rejected) ++r.stats.disk_rejects;
  }
  if (!prog) {
    const char* src = source.c_str();
    const size_t len = source.size();
    cl_int err = CL_SUCCESS;
    prog.reset(clCreateProgramWithSource(ctx, 1, &src, &len, &err));
    check(err, "clCreateProgramWithSource", "kernel '" + entry + "'");
    const cl_int berr = clBuildProgram(prog.get(), 1, &dev.device, options.c_str(), nullptr, nullptr);
    if (berr != CL_SUCCESS)
      fail("clBuildProgram failed: ", error_name(berr), " (", berr, "): kernel '", entry, "' (options '", options,
           "') on '", dev.name, "'; build log:\n", build_log(prog.get(), dev.device));
    ++r.stats.compiles;
    if (!path.empty()) store_cached(path, prog.get(), dkey);
  }
  check(clRetainProgram(prog.get()), "clRetainProgram", "kernel '" + entry + "'");
  r.programs[mkey] = prog.get();  // the map keeps its own reference
  return prog;
}

}  // namespace opv::backend::cl
