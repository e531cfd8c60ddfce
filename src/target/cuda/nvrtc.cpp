/* Plan pass "nvrtc": CUDA C++ -> PTX (and SASS) ahead of time, with NVRTC loaded at run time.
 *   1. NVRTC is found with dlopen (libnvrtc.so, then the CUDA 13 / 12 sonames, then the default
 *      toolkit folder), so opvision needs no CUDA library to build or to run other targets; only
 *      `compile --target cuda` needs it, and says so when it is missing.
 *   2. The functions are declared here from NVRTC's stable C API (nvrtc.h of CUDA 12/13: the
 *      result is an int enum, the program an opaque pointer) so no toolkit header is needed.
 *   3. Every kernel still in CUDA source form is compiled for --gpu-architecture=<ctx.cuda.arch>,
 *      IEEE float (no fast math), with OPV_PDL defined where kernel attr "cuda_pdl" asks for the
 *      programmatic-dependent-launch prologue; the PTX replaces the source (Kernel.options "ptx").
 *   4. SASS (ctx.cuda.sass_sms(), compile --cuda-sass): for the architecture's own GPU one compile
 *      with --gpu-architecture=sm_NN gives both the PTX (the same .target sm_NN text as compute_NN)
 *      and the cubin; each other sm_MM is one more compile, for its cubin. The cubins go into the
 *      kernel's attrs (cuda_abi.h "SASS"), the PTX stays for every other GPU.
 * Invariant: a kernel either compiles or the pass fails with NVRTC's log naming the kernel.
 */
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
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
  nvrtcResult (*cubin_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*cubin)(nvrtcProgram, char*) = nullptr;
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
    n.cubin_size = reinterpret_cast<decltype(n.cubin_size)>(sym("nvrtcGetCUBINSize"));
    n.cubin = reinterpret_cast<decltype(n.cubin)>(sym("nvrtcGetCUBIN"));
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

namespace {

std::string program_log(const Nvrtc& n, nvrtcProgram prog) {
  size_t size = 0;
  std::string log;
  if (n.log_size(prog, &size) == kNvrtcSuccess && size > 1) {
    log.resize(size);
    n.log(prog, log.data());
    log.resize(size - 1);
  }
  return log;
}

// One NVRTC compile of `source` for --gpu-architecture=`gpu` (compute_NN or sm_NN): the PTX into
// *ptx and, for sm_NN, the cubin into *cubin and ptxas's -v report into *report (any may be null).
void nvrtc_build(const std::string& source, const std::string& name, const std::string& gpu,
                 const std::vector<std::string>& defines, std::string* ptx, std::string* cubin,
                 std::string* report = nullptr) {
  const Nvrtc& n = nvrtc();
  OPV_CHECK(n.error.empty(), "target cuda: ", n.error);
  auto check = [&](nvrtcResult r, const char* what) {
    OPV_CHECK(r == kNvrtcSuccess, "NVRTC ", what, " for kernel ", name, " (", gpu, "): ", n.error_string(r));
  };
  nvrtcProgram prog = nullptr;
  check(n.create(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  struct Guard {
    const Nvrtc& n;
    nvrtcProgram* p;
    ~Guard() { n.destroy(p); }
  } guard{n, &prog};
  const std::string arch_opt = "--gpu-architecture=" + gpu;
  std::vector<std::string> defs;
  for (const std::string& d : defines) defs.push_back("-D" + d);
  std::vector<const char*> opts = {arch_opt.c_str(), "--std=c++17", "--fmad=true", "-default-device"};
  for (const std::string& d : defs) opts.push_back(d.c_str());
  if (report) opts.push_back("--ptxas-options=-v");
  const nvrtcResult r = n.compile(prog, int(opts.size()), opts.data());
  if (r != kNvrtcSuccess)
    fail("NVRTC cannot compile kernel ", name, " for ", gpu, " (", n.error_string(r), "):\n", program_log(n, prog));
  if (report) *report = program_log(n, prog);
  if (ptx) {
    size_t size = 0;
    check(n.ptx_size(prog, &size), "nvrtcGetPTXSize");
    ptx->assign(size, '\0');
    check(n.ptx(prog, ptx->data()), "nvrtcGetPTX");
    while (!ptx->empty() && ptx->back() == '\0') ptx->pop_back();
  }
  if (cubin) {
    size_t size = 0;
    check(n.cubin_size(prog, &size), "nvrtcGetCUBINSize");
    OPV_CHECK(size > 0, "NVRTC gave kernel ", name, " an empty cubin for ", gpu);
    cubin->assign(size, '\0');
    check(n.cubin(prog, cubin->data()), "nvrtcGetCUBIN");
  }
}

}  // namespace

std::string compile_to_ptx(const std::string& source, const std::string& name, const std::string& arch,
                           const std::vector<std::string>& defines) {
  Options::check_arch(arch);
  std::string ptx;
  nvrtc_build(source, name, arch, defines, &ptx, nullptr);
  return ptx;
}

SassResources parse_ptxas_report(const std::string& log) {
  SassResources r;
  // "ptxas info    : Compiling entry function 'E' for 'sm_90'", then "Function properties for E",
  // "N bytes stack frame, S bytes spill stores, L bytes spill loads", "Used R registers, ... M
  // bytes smem" (no smem part without shared memory; device functions that stay calls have
  // properties blocks of their own).
  const std::string open = "Compiling entry function '";
  const size_t at = log.find(open);
  const size_t name_end = at == std::string::npos ? at : log.find('\'', at + open.size());
  if (name_end == std::string::npos) return r;
  const std::string entry = log.substr(at + open.size(), name_end - at - open.size());
  const size_t props = log.find("Function properties for " + entry + "\n", name_end);
  if (props == std::string::npos) return r;
  auto line_at = [&](size_t from) {  // the line after the one `from` is on
    const size_t b = std::min(log.find('\n', from), log.size());
    const size_t e = std::min(log.find('\n', b + 1), log.size());
    return b < log.size() ? log.substr(b + 1, e - b - 1) : std::string();
  };
  auto number_before = [](const std::string& line, const char* what) -> int64_t {  // "N what" -> N
    size_t e = line.find(what);
    if (e == std::string::npos) return -1;
    while (e > 0 && line[e - 1] == ' ') --e;
    size_t b = e;
    while (b > 0 && std::isdigit(static_cast<unsigned char>(line[b - 1]))) --b;
    return b == e ? -1 : std::atoll(line.substr(b, e - b).c_str());
  };
  const std::string frame = line_at(props);
  r.stack_bytes = number_before(frame, "bytes stack frame");
  r.spill_store_bytes = number_before(frame, "bytes spill stores");
  r.spill_load_bytes = number_before(frame, "bytes spill loads");
  const size_t used_at = log.find("Used ", props);
  if (used_at != std::string::npos) {
    const std::string used = log.substr(used_at, std::min(log.find('\n', used_at), log.size()) - used_at);
    r.registers = number_before(used, "registers");
    r.static_smem_bytes = used.find("bytes smem") == std::string::npos ? 0 : number_before(used, "bytes smem");
  }
  return r;
}

CompiledKernel compile_kernel(const std::string& source, const std::string& name, const std::string& arch,
                              const std::vector<int>& sass_sms, const std::vector<std::string>& defines) {
  Options::check_arch(arch);
  const int own = arch_number(arch);
  CompiledKernel out;
  bool have_ptx = false;
  for (int sm : sass_sms) {
    OPV_CHECK(sm >= own, "kernel ", name, ": SASS for sm_", sm, " is older than ", arch);
    std::string cubin, report;
    // The architecture's own GPU: one compile for both (the PTX targets sm_NN either way).
    const bool both = sm == own;
    nvrtc_build(source, name, "sm_" + std::to_string(sm), defines, both ? &out.ptx : nullptr, &cubin,
                out.sass.empty() ? &report : nullptr);
    if (out.sass.empty()) out.resources = parse_ptxas_report(report);
    have_ptx |= both;
    out.sass.emplace_back(sm, std::move(cubin));
  }
  if (!have_ptx) nvrtc_build(source, name, arch, defines, &out.ptx, nullptr);
  return out;
}

bool nvrtc_compile(Plan& p, const PassCtx& ctx) {
  OPV_CHECK(p.target == "cuda", "nvrtc: plan targets '", p.target, "', not cuda");
  bool changed = false;
  const std::vector<int> sms = ctx.cuda.sass_sms();
  for (Kernel& k : p.kernels) {
    if (k.options == kPtxFormat) continue;
    OPV_CHECK(k.options == "cuda", "nvrtc: kernel ", k.name, " has no CUDA source (options '", k.options, "')");
    std::vector<std::string> defines;
    if (const int64_t pdl = k.attrs.i("cuda_pdl", 0); pdl != 0) defines.push_back("OPV_PDL=" + std::to_string(pdl));
    CompiledKernel ck = compile_kernel(k.source, k.name, ctx.cuda.arch, sms, defines);
    k.source = std::move(ck.ptx);
    k.options = kPtxFormat;
    std::vector<int64_t> have;
    for (auto& [sm, cubin] : ck.sass) {
      have.push_back(sm);
      k.attrs.set(sass_attr(sm), std::move(cubin));
    }
    if (!have.empty()) k.attrs.set(kSassSmsAttr, have);
    const SassResources& res = ck.resources;  // of the first (oldest) SM's cubin
    if (res.registers >= 0) {
      k.attrs.set(kRegistersAttr, res.registers);
      k.attrs.set(kStackAttr, res.stack_bytes);
      k.attrs.set(kSpillAttr, std::vector<int64_t>{res.spill_store_bytes, res.spill_load_bytes});
      k.attrs.set(kStaticSmemAttr, res.static_smem_bytes);
    }
    changed = true;
  }
  return changed;
}

}  // namespace opv::plan::cuda
