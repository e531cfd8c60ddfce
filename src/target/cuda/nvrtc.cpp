/* Plan pass "nvrtc": CUDA C++ -> PTX ahead of time, with NVRTC loaded at run time.
 *   1. NVRTC is found with dlopen (libnvrtc.so, then the CUDA 13 / 12 sonames, then the default
 *      toolkit folder), so opvision needs no CUDA library to build or to run other targets; only
 *      `compile --target cuda` needs it, and says so when it is missing.
 *   2. The functions are declared here from NVRTC's stable C API (nvrtc.h of CUDA 12/13: the
 *      result is an int enum, the program an opaque pointer) so no toolkit header is needed.
 *   3. Every kernel still in CUDA source form is compiled for --gpu-architecture=<ctx.cuda.arch>,
 *      IEEE float (no fast math), with OPV_PDL defined where kernel attr "cuda_pdl" asks for the
 *      programmatic-dependent-launch prologue; the PTX replaces the source (Kernel.options "ptx").
 * Invariant: a kernel either compiles or the pass fails with NVRTC's log naming the kernel.
 */
#include <dlfcn.h>

#include <mutex>
#include <vector>

#include "core/error.h"
#include "target/cuda/codegen.h"
#include "target/cuda/cuda_abi.h"

namespace opv::plan::cuda {

namespace {

using nvrtcResult = int;
struct NvrtcProgramImpl;
using nvrtcProgram = NvrtcProgramImpl*;
constexpr nvrtcResult kNvrtcSuccess = 0;

struct Nvrtc {
  void* lib = nullptr;
  std::string error;
  nvrtcResult (*create)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  nvrtcResult (*compile)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*ptx_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*ptx)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*log_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*log)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*destroy)(nvrtcProgram*) = nullptr;
  const char* (*error_string)(nvrtcResult) = nullptr;
};

const Nvrtc& nvrtc() {
  static Nvrtc n;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"};
    for (const char* name : names)
      if ((n.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!n.lib) {
      const char* e = dlerror();
      n.error = std::string("NVRTC not found (") + (e ? e : "dlopen failed") +
                "); install the CUDA toolkit's NVRTC (libnvrtc.so) to compile for target cuda";
      return;
    }
    auto sym = [&](const char* s) {
      void* f = dlsym(n.lib, s);
      if (!f && n.error.empty()) n.error = std::string("NVRTC lacks ") + s;
      return f;
    };
    n.create = reinterpret_cast<decltype(n.create)>(sym("nvrtcCreateProgram"));
    n.compile = reinterpret_cast<decltype(n.compile)>(sym("nvrtcCompileProgram"));
    n.ptx_size = reinterpret_cast<decltype(n.ptx_size)>(sym("nvrtcGetPTXSize"));
    n.ptx = reinterpret_cast<decltype(n.ptx)>(sym("nvrtcGetPTX"));
    n.log_size = reinterpret_cast<decltype(n.log_size)>(sym("nvrtcGetProgramLogSize"));
    n.log = reinterpret_cast<decltype(n.log)>(sym("nvrtcGetProgramLog"));
    n.destroy = reinterpret_cast<decltype(n.destroy)>(sym("nvrtcDestroyProgram"));
    n.error_string = reinterpret_cast<decltype(n.error_string)>(sym("nvrtcGetErrorString"));
  });
  return n;
}

}  // namespace

bool nvrtc_available(std::string* why) {
  const Nvrtc& n = nvrtc();
  if (why) *why = n.error;
  return n.error.empty();
}

std::string compile_to_ptx(const std::string& source, const std::string& name, const std::string& arch,
                           const std::vector<std::string>& defines) {
  const Nvrtc& n = nvrtc();
  OPV_CHECK(n.error.empty(), "target cuda: ", n.error);
  Options::check_arch(arch);
  auto check = [&](nvrtcResult r, const char* what) {
    OPV_CHECK(r == kNvrtcSuccess, "NVRTC ", what, " for kernel ", name, ": ", n.error_string(r));
  };
  nvrtcProgram prog = nullptr;
  check(n.create(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  struct Guard {
    const Nvrtc& n;
    nvrtcProgram* p;
    ~Guard() { n.destroy(p); }
  } guard{n, &prog};
  const std::string arch_opt = "--gpu-architecture=" + arch;
  std::vector<std::string> defs;
  for (const std::string& d : defines) defs.push_back("-D" + d);
  std::vector<const char*> opts = {arch_opt.c_str(), "--std=c++17", "--fmad=true", "-default-device"};
  for (const std::string& d : defs) opts.push_back(d.c_str());
  const nvrtcResult r = n.compile(prog, int(opts.size()), opts.data());
  if (r != kNvrtcSuccess) {
    size_t size = 0;
    std::string log;
    if (n.log_size(prog, &size) == kNvrtcSuccess && size > 1) {
      log.resize(size);
      n.log(prog, log.data());
      log.resize(size - 1);
    }
    fail("NVRTC cannot compile kernel ", name, " (", n.error_string(r), "):\n", log);
  }
  size_t size = 0;
  check(n.ptx_size(prog, &size), "nvrtcGetPTXSize");
  std::string ptx(size, '\0');
  check(n.ptx(prog, ptx.data()), "nvrtcGetPTX");
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

bool nvrtc_compile(Plan& p, const PassCtx& ctx) {
  OPV_CHECK(p.target == "cuda", "nvrtc: plan targets '", p.target, "', not cuda");
  bool changed = false;
  for (Kernel& k : p.kernels) {
    if (k.options == kPtxFormat) continue;
    OPV_CHECK(k.options == "cuda", "nvrtc: kernel ", k.name, " has no CUDA source (options '", k.options, "')");
    std::vector<std::string> defines;
    if (const int64_t pdl = k.attrs.i("cuda_pdl", 0); pdl != 0) defines.push_back("OPV_PDL=" + std::to_string(pdl));
    k.source = compile_to_ptx(k.source, k.name, ctx.cuda.arch, defines);
    k.options = kPtxFormat;
    changed = true;
  }
  return changed;
}

}  // namespace opv::plan::cuda
