// Batch-N cuda artifacts (compile --batch N): every CUDA kernel family the make-model variants and
// the fixture use (stem conv, tensor-core and tiled 1x1s with and without split-K, the fused
// ConvFFN with and without its depthwise conv, depthwise pairs in bands, the input pack alone and
// inside the stem, NHWC kernels and reorders, Gemm heads, reductions, Concat+Cast) computes N
// images: sample k of a batch-3 run on 3 different inputs matches the reference backend's batch-1
// run on input k. Without NVRTC the compile cases skip; without a GPU the device cases skip.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "backend/cuda/cuda_backend.h"
#include "compiler/compile.h"
#include "core/metrics.h"
#include "cuda_device.h"
#include "runtime/session.h"
#include "target/cuda/codegen.h"
#include "target/cuda/cuda_abi.h"
#include "target/cuda/options.h"
#include "test_util.h"
#include "tools/make_model.h"

namespace opv::test {
namespace {

struct Variant {
  const char* name;
  tools::MakeModelOptions model;
};

std::vector<Variant> variants() {
  tools::MakeModelOptions small;
  small.height = 64, small.width = 128;
  small.widths = {16, 32, 32, 64};
  small.depths = {1, 1, 2, 1};
  small.hidden = 64;
  small.seed = 7;
  tools::MakeModelOptions f16 = small;
  f16.fp16 = true;
  tools::MakeModelOptions wide = f16;  // stage 0 with enough pixel tiles for the ConvFFN's 7x7
  wide.height = 128, wide.width = 256;
  wide.widths = {64, 16, 16, 16};
  wide.depths = {1, 1, 1, 1};
  wide.hidden = 32;
  wide.heads = {12, 6};
  return {{"fp32_small", small}, {"fp16_small", f16}, {"fp16_wide", wide}};
}

struct CudaFlags {
  const char* name;
  const char* arch;
  plan::cuda::LayoutChoice layout;
  bool ffn_dw, pack;
};
const CudaFlags kFlags[] = {
    {"compute_80", "compute_80", plan::cuda::LayoutChoice::Nchw, false, false},
    {"compute_75", "compute_75", plan::cuda::LayoutChoice::Nchw, false, false},
    {"compute_80 nhwc", "compute_80", plan::cuda::LayoutChoice::Nhwc, false, false},
    {"compute_80 ffn-dw pack", "compute_80", plan::cuda::LayoutChoice::Nchw, true, true},
};

std::string write_model(const tools::MakeModelOptions& m) {
  const std::string path = temp_dir() + "/m.onnx";
  std::ofstream(path, std::ios::binary) << tools::make_model_bytes(m);
  return path;
}

plan::Plan compile_cuda(const std::string& path, const CudaFlags& f, int64_t batch) {
  CompileOptions o;
  o.target = "cuda";
  o.batch = batch;
  o.pass_ctx.cuda.arch = f.arch;
  o.pass_ctx.cuda.layout = f.layout;
  o.pass_ctx.cuda.fuse_ffn_dw = f.ffn_dw;
  o.pass_ctx.cuda.fuse_pack = f.pack;
  return compile_onnx(path, o);
}

plan::Plan compile_ref(const std::string& path) {
  CompileOptions o;
  o.target = "reference";
  return compile_onnx(path, o);
}

// Sample k of the batch-n cuda plan's outputs against the reference batch-1 plan on input k;
// the batch run replayed three times (split-K counters must reset), bit-identical each time.
void expect_cuda_per_sample(const plan::Plan& ref1, const plan::Plan& cun, int64_t n, double tol) {
  runtime::Session r(ref1), c(cun);
  std::vector<runtime::NamedTensors> per;
  for (int64_t k = 0; k < n; ++k) per.push_back(r.random_inputs(200 + uint64_t(k)));
  runtime::NamedTensors batched;
  for (size_t i = 0; i < per[0].size(); ++i) {
    const Tensor& t0 = per[0][i].second;
    Shape s = t0.shape();
    s[0] = n;
    Tensor t(t0.dtype(), s);
    for (int64_t k = 0; k < n; ++k)
      std::memcpy(static_cast<uint8_t*>(t.raw()) + size_t(k) * t0.nbytes(), per[size_t(k)][i].second.raw(),
                  t0.nbytes());
    batched.emplace_back(per[0][i].first, std::move(t));
  }
  const runtime::NamedTensors first = c.run(batched);
  for (int rep = 0; rep < 2; ++rep) {
    const runtime::NamedTensors& again = c.run(batched);
    for (size_t o = 0; o < first.size(); ++o)
      EXPECT_TRUE(bit_equal(first[o].second, again[o].second)) << first[o].first << " replay " << rep + 1;
  }
  for (int64_t k = 0; k < n; ++k) {
    const runtime::NamedTensors& want = r.run(per[size_t(k)]);
    ASSERT_EQ(want.size(), first.size());
    for (size_t o = 0; o < first.size(); ++o) {
      const Tensor got = sample(first[o].second, k).cast(DType::F32);
      const ErrorMetrics m = compare(got, want[o].second.cast(DType::F32));
      EXPECT_TRUE(m.finite) << first[o].first << " sample " << k;
      EXPECT_LE(m.rel_l2, tol) << first[o].first << " sample " << k;
      EXPECT_LE(m.max_abs_rel, tol) << first[o].first << " sample " << k;
    }
  }
}

TEST(CudaBatch, VariantsCompileAtBatch3) {
  std::string why;
  if (!plan::cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  for (const Variant& v : variants()) {
    const std::string path = write_model(v.model);
    for (const CudaFlags& f : kFlags) {
      SCOPED_TRACE(std::string(v.name) + " " + f.name);
      const plan::Plan p = compile_cuda(path, f, 3);
      EXPECT_EQ(p.meta.i("batch"), 3);
      for (int in : p.inputs) EXPECT_EQ(p.buffers[size_t(in)].shape[0], 3);
      for (const plan::Kernel& k : p.kernels) {
        if (!k.source.empty()) {
          EXPECT_EQ(k.options, plan::cuda::kPtxFormat) << k.name;  // every kernel went through NVRTC
        }
      }
    }
  }
}

TEST(CudaBatch, VariantsMatchReferencePerSampleOnTheDevice) {
  std::unique_ptr<backend::Backend> cu;
  if (std::string why = open_cuda(&cu); !why.empty()) GTEST_SKIP() << why;
  for (const Variant& v : variants()) {
    const std::string path = write_model(v.model);
    const plan::Plan ref = compile_ref(path);
    for (const CudaFlags& f : kFlags) {
      SCOPED_TRACE(std::string(v.name) + " " + f.name);
      expect_cuda_per_sample(ref, compile_cuda(path, f, 3), 3, v.model.fp16 ? 1e-2 : 1e-4);
    }
  }
}

TEST(CudaBatch, FixtureMatchesReferencePerSampleOnTheDevice) {
  std::unique_ptr<backend::Backend> cu;
  if (std::string why = open_cuda(&cu); !why.empty()) GTEST_SKIP() << why;
  const std::string dir = shared_models_dir();
  if (dir.empty()) GTEST_SKIP() << "fixtures not found";
  const std::string path = dir + "/opvision_t12_fp16.onnx";
  const plan::Plan ref = compile_ref(path);
  for (const CudaFlags& f : kFlags) {
    SCOPED_TRACE(f.name);
    expect_cuda_per_sample(ref, compile_cuda(path, f, 4), 4, 1e-2);
  }
}

// Four batches in flight with overlapped uploads (backend::Options.cuda_inflight 4, the default
// cuda_overlap_uploads: replays alternate between two device copies of the inputs, each upload on
// a second stream): run after run on changing inputs, the batch-4 fixture gives the outputs of one
// replay per run bit for bit (a replay that read its input slot before the upload landed, or the
// wrong slot, would give an earlier run's frames).
TEST(CudaBatch, FixtureInflightWithOverlappedUploadsMatchesOneReplay) {
  std::unique_ptr<backend::Backend> cu;
  if (std::string why = open_cuda(&cu); !why.empty()) GTEST_SKIP() << why;
  const std::string dir = shared_models_dir();
  if (dir.empty()) GTEST_SKIP() << "fixtures not found";
  const plan::Plan p = compile_cuda(dir + "/opvision_t12_fp16.onnx", kFlags[0], 4);
  backend::Options four;
  four.cuda_inflight = 4;
  runtime::Session one(p), inflight(p, four);
  const backend::CudaLoadInfo* info = backend::cuda_load_info(inflight.backend());
  ASSERT_NE(info, nullptr);
  EXPECT_TRUE(info->overlapped_uploads);
  runtime::NamedTensors previous;
  for (uint64_t seed = 300; seed < 306; ++seed) {
    const runtime::NamedTensors in = one.random_inputs(seed);
    const runtime::NamedTensors want = one.run(in);
    const runtime::NamedTensors got = inflight.run(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t o = 0; o < got.size(); ++o) {
      EXPECT_TRUE(bit_equal(got[o].second, want[o].second)) << got[o].first << " seed " << seed;
      if (!previous.empty()) {
        EXPECT_FALSE(bit_equal(got[o].second, previous[o].second)) << "inputs reach outputs";
      }
    }
    previous = got;
  }
  EXPECT_EQ(info->overlapped_replays, 6 * 4);
}

}  // namespace
}  // namespace opv::test
