// Machine code beside the PTX (compile --cuda-sass; cuda_abi.h "SASS"; src/backend/cuda/sass.h):
// the option's lists, the cubin checks on hand-made ELF headers (no NVRTC needed), NVRTC's cubins
// in a compiled plan (the PTX unchanged by them), and on the device the cubin loaded where the GPU
// runs it, else the PTX, with the same outputs; corrupt SASS attrs refused naming the kernel.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "compiler/compile.h"
#include "core/metrics.h"
#include "target/cuda/codegen.h"
#include "target/cuda/cuda_abi.h"
#include "target/cuda/options.h"
#include "cuda_device.h"
#include "test_util.h"

#if OPV_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/sass.h"
#endif

namespace opv {
namespace {

using plan::cuda::Options;

TEST(CudaSass, OptionNamesTheGpus) {
  EXPECT_EQ(Options::sass_sms("auto", "compute_90"), std::vector<int>{90});
  EXPECT_EQ(Options::sass_sms("auto", "compute_75"), std::vector<int>{75});
  EXPECT_TRUE(Options::sass_sms("none", "compute_80").empty());
  EXPECT_EQ(Options::sass_sms("sm_89,sm_80,sm_86,sm_80", "compute_80"), (std::vector<int>{80, 86, 89}));
  EXPECT_EQ(Options::sass_sms("sm_120", "compute_90"), std::vector<int>{120});
  for (const char* bad : {"sm_75", "sm80", "sm_", "sm_8x", "auto,sm_90", "sm_90,", "", "compute_90"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(test::error_of([&] { Options::sass_sms(bad, "compute_80"); }).empty());
  }
  EXPECT_NE(test::error_of([] { Options::sass_sms("sm_75", "compute_80"); }).find("older than the architecture"),
            std::string::npos);
  // Recorded in the meta when not auto, and read back.
  Options o;
  o.arch = "compute_80";
  o.sass = "sm_80,sm_86";
  Attrs meta;
  o.record(meta);
  EXPECT_EQ(meta.s("cuda_sass"), "sm_80,sm_86");
  EXPECT_EQ(Options::from_meta(meta), o);
  o.sass = "auto";
  o.record(meta);
  EXPECT_FALSE(meta.has("cuda_sass"));
  Attrs bad;
  bad.set("cuda_sass", std::string("sm_70"));
  EXPECT_FALSE(test::error_of([&] { Options::from_meta(bad); }).empty()) << "older than the default compute_75";
}

#if OPV_HAVE_CUDA

// An ELF64 header for EM_CUDA as NVRTC writes it: `abi` the EI_ABIVERSION (8 from CUDA 12.8 on,
// the SM in e_flags bits 8-15; 7 before, the low byte), no tables unless asked, `extra` bytes after.
std::string elf(int sm, int abi = 8, uint16_t machine = 190, size_t extra = 64) {
  std::string b(64 + extra, '\0');
  std::memcpy(b.data(), "\x7f" "ELF", 4);
  b[4] = 2;  // ELFCLASS64
  b[5] = 1;  // little-endian
  b[6] = 1;
  b[7] = 0x41;
  b[8] = char(abi);
  auto put = [&](size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b[at + size_t(i)] = char(v >> (8 * i));
  };
  put(16, 2, 2);  // ET_EXEC
  put(18, machine, 2);
  put(20, 1, 4);
  put(48, abi >= 8 ? (0x6000004u | unsigned(sm) << 8) : (0x500000u | unsigned(sm)), 4);
  put(52, 64, 2);
  put(54, 56, 2);   // e_phentsize
  put(58, 64, 2);   // e_shentsize
  return b;
}
void set_u64(std::string& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + size_t(i)] = char(v >> (8 * i));
}
void set_u16(std::string& b, size_t at, uint16_t v) {
  b[at] = char(v);
  b[at + 1] = char(v >> 8);
}

TEST(CudaSass, CubinHeadersAreChecked) {
  namespace cs = backend::cuda_sass;
  std::string why;
  EXPECT_EQ(cs::cubin_sm(elf(90), &why), 90) << why;
  EXPECT_EQ(cs::cubin_sm(elf(120), &why), 120) << why;
  EXPECT_EQ(cs::cubin_sm(elf(80, 7), &why), 80) << "the older ABI: the SM in the low byte";
  auto rejects = [&](const std::string& image, const char* says) {
    std::string w;
    EXPECT_EQ(cs::cubin_sm(image, &w), 0);
    EXPECT_NE(w.find(says), std::string::npos) << w;
  };
  rejects(elf(90).substr(0, 40), "not an ELF image");
  rejects("garbage, not a cubin at all, garbage, not a cubin at all, garbage!!", "not an ELF image");
  rejects(elf(90, 8, 62), "machine 62");  // x86-64
  std::string tables = elf(90);
  set_u64(tables, 40, 64);   // e_shoff: right after the header
  set_u16(tables, 60, 2);    // two 64-byte entries: 128 bytes, 64 there
  rejects(tables, "outside the image");
  set_u16(tables, 60, 1);
  EXPECT_EQ(cs::cubin_sm(tables, &why), 90) << "one entry fits";
  set_u64(tables, 32, ~uint64_t(0));  // e_phoff far past the end
  set_u16(tables, 56, 1);
  rejects(tables, "outside the image");
  rejects(elf(0), "names no GPU architecture");
}

plan::Kernel kernel_with(const std::vector<int64_t>& sms, const std::vector<std::string>& images) {
  plan::Kernel k;
  k.name = "k";
  k.attrs.set(plan::cuda::kSassSmsAttr, sms);
  for (size_t i = 0; i < images.size() && i < sms.size(); ++i) k.attrs.set(plan::cuda::sass_attr(int(sms[i])), images[i]);
  return k;
}

TEST(CudaSass, KernelAttrsAreCheckedAndTheNewestRunnableCubinPicked) {
  namespace cs = backend::cuda_sass;
  plan::Kernel none;
  EXPECT_EQ(cs::problem(none), "");
  const plan::Kernel k = kernel_with({80, 86, 90}, {elf(80), elf(86), elf(90)});
  EXPECT_EQ(cs::problem(k), "");
  EXPECT_EQ(cs::pick(k, 8, 0), 80);
  EXPECT_EQ(cs::pick(k, 8, 6), 86);
  EXPECT_EQ(cs::pick(k, 8, 9), 86) << "sm_86 SASS runs on 8.9";
  EXPECT_EQ(cs::pick(k, 9, 0), 90);
  EXPECT_EQ(cs::pick(k, 7, 5), 0) << "older GPU: the PTX (which it cannot run either; the driver says so)";
  EXPECT_EQ(cs::pick(k, 10, 0), 0) << "newer major: the PTX, JIT-compiled";
  EXPECT_EQ(cs::pick(k, 12, 0), 0);
  EXPECT_EQ(cs::pick(none, 9, 0), 0);
  auto says = [](const plan::Kernel& bad, const char* what) {
    const std::string p = cs::problem(bad);
    EXPECT_NE(p.find(what), std::string::npos) << "'" << p << "'";
  };
  says(kernel_with({90}, {}), "has no cuda_sass_90");
  says(kernel_with({90}, {elf(86)}), "built for sm_86");
  says(kernel_with({90}, {"not a cubin"}), "not an ELF image");
  says(kernel_with({90, 90}, {elf(90), elf(90)}), "twice");
  says(kernel_with({9000}, {elf(90)}), "no such GPU");
  plan::Kernel stray;
  stray.attrs.set(plan::cuda::sass_attr(90), elf(90));
  says(stray, "but no cuda_sass list");
  plan::Kernel wrong_type;
  wrong_type.attrs.set(plan::cuda::kSassSmsAttr, std::string("sm_90"));
  says(wrong_type, "not a list of integers");
  plan::Kernel int_image = kernel_with({90}, {});
  int_image.attrs.set(plan::cuda::sass_attr(90), int64_t(5));
  says(int_image, "not a cubin");
}

#endif  // OPV_HAVE_CUDA

// x -> Add(c) + Relu -> Mul(c2): two kernels, one edge between them.
ir::Graph two_kernels() {
  ir::Graph g;
  g.source = "cuda_sass_test";
  const Shape s{2, 8, 6, 5};
  const int x = g.add_value({"x0", DType::F32, s, nullptr});
  g.inputs.push_back(x);
  const int c = g.add_const("c", test::random_f32({8, 1, 1}, 3));
  const int c2 = g.add_const("c2", test::random_f32({1, 8, 6, 5}, 4));
  const int y = g.add_value({"y", DType::F32, s, nullptr});
  g.add_node({"add", OpKind::Add, Attrs{}, {x, c}, {y}, {PostOp{OpKind::Relu}}});
  const int z = g.add_value({"z", DType::F32, s, nullptr});
  g.add_node({"mul", OpKind::Mul, Attrs{}, {y, c2}, {z}, {}});
  g.outputs.push_back(z);
  g.validate();
  return g;
}
plan::Plan lower_sass(const std::string& arch, const std::string& sass) {
  CompileOptions o;
  o.target = "cuda";
  o.pass_ctx.cuda.arch = arch;
  o.pass_ctx.cuda.sass = sass;
  return lower(two_kernels(), o);
}

TEST(CudaSass, NvrtcStoresACubinPerGpuBesideTheSamePtx) {
  std::string why;
  if (!plan::cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  const plan::Plan ptx_only = lower_sass("compute_80", "none");
  const plan::Plan auto_sass = lower_sass("compute_80", "auto");
  const plan::Plan listed = lower_sass("compute_80", "sm_86,sm_90");
  EXPECT_EQ(auto_sass.meta.s("cuda_sass", "absent"), "absent");
  EXPECT_EQ(listed.meta.s("cuda_sass"), "sm_86,sm_90");
  ASSERT_EQ(ptx_only.kernels.size(), 2u);
  ASSERT_EQ(auto_sass.kernels.size(), 2u);
  ASSERT_EQ(listed.kernels.size(), 2u);
  for (size_t i = 0; i < ptx_only.kernels.size(); ++i) {
    SCOPED_TRACE(ptx_only.kernels[i].name);
    EXPECT_FALSE(ptx_only.kernels[i].attrs.has(plan::cuda::kSassSmsAttr));
    // One compile for sm_80 gives the PTX too: the same text as compute_80's; for the list the
    // PTX is compute_80's own compile.
    EXPECT_EQ(auto_sass.kernels[i].source, ptx_only.kernels[i].source);
    EXPECT_EQ(listed.kernels[i].source, ptx_only.kernels[i].source);
    EXPECT_NE(ptx_only.kernels[i].source.find(".target sm_80"), std::string::npos);
    EXPECT_EQ(auto_sass.kernels[i].attrs.ints(plan::cuda::kSassSmsAttr), std::vector<int64_t>{80});
    EXPECT_EQ(listed.kernels[i].attrs.ints(plan::cuda::kSassSmsAttr), (std::vector<int64_t>{86, 90}));
#if OPV_HAVE_CUDA
    EXPECT_EQ(backend::cuda_sass::problem(auto_sass.kernels[i]), "");
    EXPECT_EQ(backend::cuda_sass::problem(listed.kernels[i]), "");
    EXPECT_EQ(backend::cuda_sass::cubin_sm(listed.kernels[i].attrs.s(plan::cuda::sass_attr(90)), nullptr), 90);
#endif
  }
  // compile_kernel directly: the arch's own GPU first or not, each cubin for its GPU.
  const std::string src = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }";
  const plan::cuda::CompiledKernel ck = plan::cuda::compile_kernel(src, "k", "compute_90", {90, 100});
  EXPECT_EQ(ck.ptx, plan::cuda::compile_to_ptx(src, "k", "compute_90"));
  ASSERT_EQ(ck.sass.size(), 2u);
  EXPECT_EQ(ck.sass[0].first, 90);
  EXPECT_EQ(ck.sass[1].first, 100);
#if OPV_HAVE_CUDA
  EXPECT_EQ(backend::cuda_sass::cubin_sm(ck.sass[0].second, nullptr), 90);
  EXPECT_EQ(backend::cuda_sass::cubin_sm(ck.sass[1].second, nullptr), 100);
#endif
  EXPECT_NE(test::error_of([&] { plan::cuda::compile_kernel(src, "k", "compute_90", {80}); }).find("older"),
            std::string::npos);
}

// ptxas's -v report: each kernel's registers, stack, spills and static shared memory into its attrs;
// a canned report parses field by field, and real compiles report what their code needs.
TEST(CudaSass, PtxasReportGivesEachKernelsResources) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Function properties for helper\n"
      "ptxas         .     64 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'opv_k' for 'sm_90'\n"
      "ptxas info    : Function properties for opv_k\n"
      "ptxas         .     16 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 130 registers, used 1 barriers, 48256 bytes smem\n"
      "ptxas info    : Compile time = 2.351 ms\n";
  const plan::cuda::SassResources r = plan::cuda::parse_ptxas_report(log);
  EXPECT_EQ(r.registers, 130);
  EXPECT_EQ(r.stack_bytes, 16);
  EXPECT_EQ(r.spill_store_bytes, 4);
  EXPECT_EQ(r.spill_load_bytes, 12);
  EXPECT_EQ(r.static_smem_bytes, 48256);
  EXPECT_EQ(plan::cuda::parse_ptxas_report("ptxas info : Used 8 registers\n").registers, -1) << "no entry";
  const std::string no_smem =
      "ptxas info    : Compiling entry function 'k' for 'sm_80'\nptxas info    : Function properties for k\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 12 registers, used 0 barriers\n";
  EXPECT_EQ(plan::cuda::parse_ptxas_report(no_smem).static_smem_bytes, 0);
  EXPECT_EQ(plan::cuda::parse_ptxas_report(no_smem).registers, 12);

  std::string why;
  if (!plan::cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  // A local array indexed at run time lives on the stack; a plain kernel has none.
  const std::string local =
      "extern \"C\" __global__ void k(float* x, int i) { float a[64]; for (int j = 0; j < 64; ++j) a[j] = x[j];"
      " a[i & 63] += 1.0f; __shared__ float s[32]; s[threadIdx.x & 31] = a[(i >> 6) & 63]; __syncthreads();"
      " x[threadIdx.x] = s[i & 31]; }";
  const plan::cuda::SassResources lr = plan::cuda::compile_kernel(local, "k", "compute_80", {80}).resources;
  EXPECT_GT(lr.registers, 0);
  EXPECT_GE(lr.stack_bytes, 256) << "64 floats on the stack";
  EXPECT_EQ(lr.static_smem_bytes, 128);
  EXPECT_EQ(plan::cuda::compile_kernel(local, "k", "compute_80", {}).resources.registers, -1) << "no SASS, no report";
  const plan::Plan p = lower_sass("compute_90", "auto");
  for (const plan::Kernel& k : p.kernels) {
    SCOPED_TRACE(k.name);
    EXPECT_GT(k.attrs.i(plan::cuda::kRegistersAttr, -1), 0);
    EXPECT_EQ(k.attrs.ints(plan::cuda::kSpillAttr), (std::vector<int64_t>{0, 0}));
    EXPECT_EQ(k.attrs.i(plan::cuda::kStackAttr, -1), 0);
    EXPECT_EQ(k.attrs.i(plan::cuda::kStaticSmemAttr, -1), 0) << "element-wise kernels use no shared memory";
  }
  EXPECT_FALSE(lower_sass("compute_90", "none").kernels[0].attrs.has(plan::cuda::kRegistersAttr));
}

#if OPV_HAVE_CUDA

// The cubin where this GPU runs it (a 9.x GPU: sm_90's), else the PTX; the simulator refuses
// cubins, so there every module falls back to the PTX and says why. Either way the outputs are the
// PTX-only plan's, bit for bit, and the reference's. --cuda-code ptx (Options.cuda_sass false)
// never tries the cubin.
TEST(CudaSass, StoredCubinRunsOrFallsBackToPtxOnTheDevice) {
  std::unique_ptr<backend::Backend> cu;
  if (std::string why = test::open_cuda(&cu); !why.empty()) GTEST_SKIP() << why;
  const plan::Plan with = lower_sass("compute_90", "auto");
  const plan::Plan without = lower_sass("compute_90", "none");
  const std::vector<Tensor> want = test::run_on(*cu, without, 7);
  EXPECT_EQ(backend::cuda_load_info(*cu)->sass_modules, 0);
  const std::vector<Tensor> got = test::run_on(*cu, with, 7);
  const backend::CudaLoadInfo* info = backend::cuda_load_info(*cu);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->modules, 2);
  std::printf("device %s: %d of %d modules from SASS%s%s\n", info->device.c_str(), info->sass_modules, info->modules,
              info->sass_refused.empty() ? "" : "; refused: ", info->sass_refused.c_str());
  const bool sm9 = info->device.find("(sm_9") != std::string::npos;
  if (test::on_cudasim()) {
    EXPECT_EQ(info->sass_modules, 0);
    EXPECT_NE(info->sass_refused.find("cudasim"), std::string::npos) << info->sass_refused;
  } else {
    EXPECT_EQ(info->sass_modules, sm9 ? 2 : 0);
    EXPECT_EQ(info->sass_sm, sm9 ? 90 : 0);
    EXPECT_EQ(info->sass_refused, "");
  }
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].nbytes(), want[i].nbytes());
    EXPECT_EQ(std::memcmp(got[i].raw(), want[i].raw(), got[i].nbytes()), 0) << "output " << i;
  }
  CompileOptions ro;
  ro.target = "reference";
  const std::vector<Tensor> ref = test::run_on_reference(lower(two_kernels(), ro), 7);
  ASSERT_EQ(ref.size(), got.size());
  EXPECT_LT(compare(got[0], ref[0]).rel_l2, 1e-6);

  backend::Options jit;
  jit.cuda_sass = false;
  auto cu_jit = backend::create("cuda", jit);
  test::run_on(*cu_jit, with, 7);
  EXPECT_EQ(backend::cuda_load_info(*cu_jit)->sass_modules, 0);
  EXPECT_EQ(backend::cuda_load_info(*cu_jit)->sass_refused, "");
}

// A plan whose SASS attrs are wrong is refused before any load, naming the kernel and what is wrong.
TEST(CudaSass, CorruptSassIsRefusedOnTheDevice) {
  std::unique_ptr<backend::Backend> cu;
  if (std::string why = test::open_cuda(&cu); !why.empty()) GTEST_SKIP() << why;
  const plan::Plan good = lower_sass("compute_90", "auto");
  ASSERT_TRUE(backend::supports(*cu, good)) << backend::supports(*cu, good).why;
  plan::Plan bad = good;
  bad.kernels[1].attrs.set(plan::cuda::sass_attr(90), bad.kernels[1].attrs.s(plan::cuda::sass_attr(90)).substr(0, 48));
  const backend::Support s = backend::supports(*cu, bad);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.why.find("kernel '" + bad.kernels[1].name + "'"), std::string::npos) << s.why;
  EXPECT_NE(s.why.find("not an ELF image"), std::string::npos) << s.why;
  EXPECT_NE(test::error_of([&] { cu->load(bad); }).find("not an ELF image"), std::string::npos);
  plan::Plan other = good;
  other.kernels[0].attrs.set(plan::cuda::kSassSmsAttr, std::vector<int64_t>{90, 86});
  EXPECT_NE(backend::supports(*cu, other).why.find("has no cuda_sass_86"), std::string::npos);
}

#endif  // OPV_HAVE_CUDA

}  // namespace
}  // namespace opv
