// Tests of the OpenCL ABI program forms of cl_abi.h: the batched entry rendered from a kernel
// description (render_batched, src/target/opencl/kernel_desc.cpp) and the prelude (the image
// geometry is tested in tests/plan/image_geometry_test.cpp, the one-group form in
// kernel_desc_test.cpp). The batched form is also built and run on an OpenCL device when one
// exists (PoCL here), and its results are compared with the same arithmetic done on the host
// (skipped without a device).
#include <gtest/gtest.h>

#include <CL/cl.h>

#include <cmath>

#include "core/error.h"
#include "plan/plan.h"
#include "target/opencl/cl_abi.h"
#include "target/opencl/kernel_desc.h"

namespace opv::plan::cl {
namespace {

KernelParam global_param(const std::string& name, ParamAccess a) {
  return KernelParam{name, ParamStorage::Global, a, DType::F32, {}};
}

// out0 = in0 * w on f32 buffers (w: a parameter name that is not a slot name), `body` as given.
KernelDesc scale_desc(const std::string& entry, const std::string& prelude, const std::string& body) {
  KernelDesc d;
  d.family = "test";
  d.generator = "tests/opencl/cl_abi_test.cpp";
  d.entry = entry;
  d.prelude = prelude;
  d.params = {global_param("out0", ParamAccess::Write), global_param("in0", ParamAccess::Read),
              global_param("w", ParamAccess::Read)};
  d.body = body;
  return d;
}

TEST(ClAbi, BatchedEntryFollowsTheCallArgumentOrder) {
  const KernelDesc d = scale_desc("scale", "", "  out0[0] = in0[0] * w[0];");
  // Output-major form (what plan pass "batch" uses): outputs of all groups, then inputs.
  const BatchedKernel b = render_batched(d, 3, 1);
  EXPECT_EQ(b.entry, "scale_x3");
  EXPECT_EQ(b.source.find(render(d)), 0u) << "the one-group program stays in front";
  const std::string params =
      "__global float* out0_0, __global float* out0_1, __global float* out0_2, "
      "__global const float* in0_0, __global const float* w_0, __global const float* in0_1, "
      "__global const float* w_1, __global const float* in0_2, __global const float* w_2";
  EXPECT_EQ(b.params, params);
  EXPECT_NE(b.source.find("__kernel void scale_x3(" + params + ")"), std::string::npos) << b.source;
  EXPECT_NE(b.source.find("switch (get_global_id(2))"), std::string::npos);
  EXPECT_NE(b.source.find("case 0: scale_body(out0_0, in0_0, w_0); break;"), std::string::npos);
  EXPECT_NE(b.source.find("case 2: scale_body(out0_2, in0_2, w_2); break;"), std::string::npos);
  EXPECT_EQ(b.source.find("case 3:"), std::string::npos);
  // Group-major form.
  const BatchedKernel g = render_batched(d, 2, 0);
  EXPECT_EQ(g.entry, "scale_x2");
  EXPECT_EQ(g.params,
            "__global float* out0_0, __global const float* in0_0, __global const float* w_0, "
            "__global float* out0_1, __global const float* in0_1, __global const float* w_1");
  // Refusals.
  EXPECT_THROW(render_batched(d, 1, 1), opv::Error);
  EXPECT_THROW(render_batched(d, 2, 4), opv::Error);
  EXPECT_THROW(render_batched(d, 2, -1), opv::Error);
}

TEST(ClAbi, PreludeIsGuarded) {
  const std::string& p = cl_prelude();
  EXPECT_EQ(p.find("#ifndef OPV_PRELUDE\n#define OPV_PRELUDE\n"), 0u);
  EXPECT_NE(p.find("__constant sampler_t opv_smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | "
                   "CLK_FILTER_NEAREST;"),
            std::string::npos);
  EXPECT_NE(p.find("opv_gelu"), std::string::npos);
  EXPECT_NE(p.find("opv_sigmoid"), std::string::npos);
  EXPECT_EQ(p.substr(p.size() - 7), "#endif\n");
}

// ---- on a device ----

struct Cl {
  cl_context ctx = nullptr;
  cl_command_queue q = nullptr;
  cl_device_id dev = nullptr;
  ~Cl() {
    if (q) clReleaseCommandQueue(q);
    if (ctx) clReleaseContext(ctx);
  }
  bool open() {
    cl_uint np = 0;
    if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0) return false;
    std::vector<cl_platform_id> plats(np);
    clGetPlatformIDs(np, plats.data(), nullptr);
    for (cl_platform_id pl : plats) {
      cl_uint nd = 0;
      if (clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 1, &dev, &nd) == CL_SUCCESS && nd > 0) break;
      dev = nullptr;
    }
    if (!dev) return false;
    cl_int err = 0;
    ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
    if (err != CL_SUCCESS) return false;
    q = clCreateCommandQueueWithProperties(ctx, dev, nullptr, &err);
    return err == CL_SUCCESS;
  }
};

// Builds `src` for cl's device: the program, or nullptr with the build log in *log.
cl_program build_program(const Cl& cl, const std::string& src, std::string* log) {
  const char* text = src.c_str();
  cl_int err = 0;
  cl_program prog = clCreateProgramWithSource(cl.ctx, 1, &text, nullptr, &err);
  if (err != CL_SUCCESS) return *log = "clCreateProgramWithSource failed", nullptr;
  if (clBuildProgram(prog, 1, &cl.dev, "", nullptr, nullptr) != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(prog, cl.dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    log->assign(n, '\0');
    clGetProgramBuildInfo(prog, cl.dev, CL_PROGRAM_BUILD_LOG, n, log->data(), nullptr);
    clReleaseProgram(prog);
    return nullptr;
  }
  return prog;
}

// out = gelu(in * w) + sigmoid(in) per element, rendered with the prelude (included twice
// to check the guard), batched over 3 groups with the output-major argument order, and run with
// one launch of global {n, 1, 3}. Each group's output is checked against the host.
TEST(ClAbi, BatchedEntryRunsOnDevice) {
  Cl cl;
  if (!cl.open()) GTEST_SKIP() << "no OpenCL device";
  constexpr int kN = 37, kGroups = 3;
  const BatchedKernel b = render_batched(scale_desc("gs", cl_prelude() + cl_prelude(),
                                                   "  int i = get_global_id(0);\n"
                                                   "  float4 v4 = opv_sigmoid((float4)(in0[i]));\n"
                                                   "  out0[i] = opv_gelu(in0[i] * w[i]) + v4.x;\n"),
                                        kGroups, 1);
  const std::string& src = b.source;
  const std::string& entry = b.entry;
  std::string log;
  cl_program prog = build_program(cl, src, &log);
  ASSERT_NE(prog, nullptr) << "build failed: " << log << "\n" << src;
  cl_int err = 0;
  cl_kernel k = clCreateKernel(prog, entry.c_str(), &err);
  ASSERT_EQ(err, CL_SUCCESS);
  std::vector<std::vector<float>> in(kGroups, std::vector<float>(kN)), w = in;
  for (int g = 0; g < kGroups; ++g)
    for (int i = 0; i < kN; ++i) {
      in[size_t(g)][size_t(i)] = 0.1f * float(i - 18) + float(g);
      w[size_t(g)][size_t(i)] = 0.5f - 0.25f * float(g) + 0.01f * float(i);
    }
  std::vector<cl_mem> outs, ins;
  for (int g = 0; g < kGroups; ++g) {
    outs.push_back(clCreateBuffer(cl.ctx, CL_MEM_READ_WRITE, kN * sizeof(float), nullptr, &err));
    ins.push_back(clCreateBuffer(cl.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, kN * sizeof(float),
                                 in[size_t(g)].data(), &err));
    ins.push_back(clCreateBuffer(cl.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, kN * sizeof(float),
                                 w[size_t(g)].data(), &err));
  }
  // Arguments as the backend binds a batched call: outputs (group 0..2), then inputs (group 0..2).
  cl_uint arg = 0;
  for (cl_mem m : outs) ASSERT_EQ(clSetKernelArg(k, arg++, sizeof(cl_mem), &m), CL_SUCCESS);
  for (cl_mem m : ins) ASSERT_EQ(clSetKernelArg(k, arg++, sizeof(cl_mem), &m), CL_SUCCESS);
  size_t global[3] = {kN, 1, kGroups};
  ASSERT_EQ(clEnqueueNDRangeKernel(cl.q, k, 3, nullptr, global, nullptr, 0, nullptr, nullptr), CL_SUCCESS);
  for (int g = 0; g < kGroups; ++g) {
    std::vector<float> got(kN);
    ASSERT_EQ(clEnqueueReadBuffer(cl.q, outs[size_t(g)], CL_TRUE, 0, kN * sizeof(float), got.data(), 0, nullptr,
                                  nullptr),
              CL_SUCCESS);
    for (int i = 0; i < kN; ++i) {
      double x = in[size_t(g)][size_t(i)], y = x * w[size_t(g)][size_t(i)];
      double want = 0.5 * y * (1 + std::erf(y / std::sqrt(2.0))) + 1 / (1 + std::exp(-x));
      EXPECT_NEAR(got[size_t(i)], want, 1e-5 * (1 + std::fabs(want))) << "group " << g << " element " << i;
    }
  }
  for (cl_mem m : outs) clReleaseMemObject(m);
  for (cl_mem m : ins) clReleaseMemObject(m);
  clReleaseKernel(k);
  clReleaseProgram(prog);
}

// The prelude's GELU, x Phi(x) = 0.5 x erfc(-x / sqrt 2), on a 1/512 grid over [-12, 12], scalar
// and float4: within 2e-5 of the double-precision GELU where |GELU| >= 1e-6 (and 1e-11 absolute
// below). 0.5 x (1 + erf(x / sqrt 2)), its form up to session 31, cancels for negative x: 1 + erf
// is a difference of nearly equal floats (4 % off at x = -5, 57 % at -5.5, with a correctly rounded float erf).
TEST(ClAbi, GeluIsAccurateOnDevice) {
  Cl cl;
  if (!cl.open()) GTEST_SKIP() << "no OpenCL device";
  constexpr int kN = 24 * 512 + 4;  // a multiple of 4: the float4 form covers it too
  const std::string src = cl_prelude() +
                          "__kernel void g(__global float* out, __global float* out4, __global const float* in) {\n"
                          "  const int i = get_global_id(0);\n"
                          "  out[i] = opv_gelu(in[i]);\n"
                          "  if (i % 4 == 0) vstore4(opv_gelu4(vload4(i / 4, in)), i / 4, out4);\n"
                          "}\n";
  std::string log;
  cl_program prog = build_program(cl, src, &log);
  ASSERT_NE(prog, nullptr) << "build failed: " << log;
  cl_int err = 0;
  cl_kernel k = clCreateKernel(prog, "g", &err);
  ASSERT_EQ(err, CL_SUCCESS);
  std::vector<float> in(kN), got(kN), got4(kN);
  for (int i = 0; i < kN; ++i) in[size_t(i)] = -12.0f + float(i) / 512.0f;
  cl_mem o = clCreateBuffer(cl.ctx, CL_MEM_WRITE_ONLY, kN * sizeof(float), nullptr, &err);
  cl_mem o4 = clCreateBuffer(cl.ctx, CL_MEM_WRITE_ONLY, kN * sizeof(float), nullptr, &err);
  cl_mem x = clCreateBuffer(cl.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, kN * sizeof(float), in.data(), &err);
  ASSERT_EQ(clSetKernelArg(k, 0, sizeof(cl_mem), &o), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(k, 1, sizeof(cl_mem), &o4), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(k, 2, sizeof(cl_mem), &x), CL_SUCCESS);
  size_t global[1] = {kN};
  ASSERT_EQ(clEnqueueNDRangeKernel(cl.q, k, 1, nullptr, global, nullptr, 0, nullptr, nullptr), CL_SUCCESS);
  ASSERT_EQ(clEnqueueReadBuffer(cl.q, o, CL_TRUE, 0, kN * sizeof(float), got.data(), 0, nullptr, nullptr), CL_SUCCESS);
  ASSERT_EQ(clEnqueueReadBuffer(cl.q, o4, CL_TRUE, 0, kN * sizeof(float), got4.data(), 0, nullptr, nullptr), CL_SUCCESS);
  for (const std::vector<float>* g : {&got, &got4}) {
    double worst_rel = 0, worst_abs = 0;
    float at_rel = 0, at_abs = 0;
    for (int i = 0; i < kN; ++i) {
      const double v = in[size_t(i)], want = 0.5 * v * std::erfc(-v / std::sqrt(2.0));
      const double e = std::fabs(double((*g)[size_t(i)]) - want);
      if (std::fabs(want) >= 1e-6) {
        if (e / std::fabs(want) > worst_rel) worst_rel = e / std::fabs(want), at_rel = float(v);
      } else if (e > worst_abs) {
        worst_abs = e, at_abs = float(v);
      }
    }
    EXPECT_LT(worst_rel, 2e-5) << (g == &got ? "scalar" : "float4") << ", at x = " << at_rel;
    EXPECT_LT(worst_abs, 1e-11) << (g == &got ? "scalar" : "float4") << ", at x = " << at_abs;
  }
  for (cl_mem m : {o, o4, x}) clReleaseMemObject(m);
  clReleaseKernel(k);
  clReleaseProgram(prog);
}

// A work-group reduction through a described local array, batched over 2 groups: the local array
// is declared at kernel scope in both the plain and the batched entry and reaches the body as a
// pointer; barrier() inside the switch is uniform per work-group.
TEST(ClAbi, LocalArraysReachBodyAndBatchedEntry) {
  KernelDesc d;
  d.family = "test";
  d.generator = "tests/opencl/cl_abi_test.cpp";
  d.entry = "red";
  d.prelude = cl_prelude();
  d.params = {global_param("out0", ParamAccess::Write), global_param("in0", ParamAccess::Read)};
  d.locals = {{"float", "red", 64}};
  d.body =
      "  const int l = get_local_id(0);\n"
      "  red[l] = in0[get_global_id(0)];\n"
      "  barrier(CLK_LOCAL_MEM_FENCE);\n"
      "  for (int s = 32; s > 0; s >>= 1) {\n"
      "    if (l < s) red[l] += red[l + s];\n"
      "    barrier(CLK_LOCAL_MEM_FENCE);\n"
      "  }\n"
      "  if (l == 0) out0[get_group_id(0)] = red[0];\n";
  const BatchedKernel b = render_batched(d, 2, 1);
  const std::string& src = b.source;
  const std::string& entry = b.entry;
  EXPECT_NE(src.find("void red_body(__global float* out0, __global const float* in0, __local float* red)"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("  __local float red[64];\n  red_body(out0, in0, red);"), std::string::npos) << src;
  EXPECT_NE(src.find("  __local float red[64];\n  switch (get_global_id(2)) {\n"
                     "    case 0: red_body(out0_0, in0_0, red); break;\n"),
            std::string::npos)
      << src;
  Cl cl;
  if (!cl.open()) GTEST_SKIP() << "no OpenCL device";
  const char* text = src.c_str();
  cl_int err = 0;
  cl_program prog = clCreateProgramWithSource(cl.ctx, 1, &text, nullptr, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  ASSERT_EQ(clBuildProgram(prog, 1, &cl.dev, "", nullptr, nullptr), CL_SUCCESS) << src;
  cl_kernel k = clCreateKernel(prog, entry.c_str(), &err);
  ASSERT_EQ(err, CL_SUCCESS);
  constexpr int kN = 128;
  std::vector<std::vector<float>> in(2, std::vector<float>(kN));
  for (int g = 0; g < 2; ++g)
    for (int i = 0; i < kN; ++i) in[size_t(g)][size_t(i)] = float((i * 7 + g * 3) % 11) - 5.0f;
  cl_mem outs[2], ins[2];
  for (int g = 0; g < 2; ++g) {
    outs[g] = clCreateBuffer(cl.ctx, CL_MEM_READ_WRITE, 2 * sizeof(float), nullptr, &err);
    ins[g] = clCreateBuffer(cl.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, kN * sizeof(float), in[size_t(g)].data(),
                            &err);
  }
  cl_uint arg = 0;
  for (cl_mem& m : outs) ASSERT_EQ(clSetKernelArg(k, arg++, sizeof(cl_mem), &m), CL_SUCCESS);
  for (cl_mem& m : ins) ASSERT_EQ(clSetKernelArg(k, arg++, sizeof(cl_mem), &m), CL_SUCCESS);
  size_t global[3] = {kN, 1, 2}, local[3] = {64, 1, 1};
  ASSERT_EQ(clEnqueueNDRangeKernel(cl.q, k, 3, nullptr, global, local, 0, nullptr, nullptr), CL_SUCCESS);
  for (int g = 0; g < 2; ++g) {
    float got[2];
    ASSERT_EQ(clEnqueueReadBuffer(cl.q, outs[g], CL_TRUE, 0, sizeof got, got, 0, nullptr, nullptr), CL_SUCCESS);
    for (int half = 0; half < 2; ++half) {
      float want = 0;
      for (int i = 0; i < 64; ++i) want += in[size_t(g)][size_t(half * 64 + i)];
      EXPECT_EQ(got[half], want) << "group " << g << " work-group " << half;
    }
    clReleaseMemObject(outs[g]);
    clReleaseMemObject(ins[g]);
  }
  clReleaseKernel(k);
  clReleaseProgram(prog);
}

}  // namespace
}  // namespace opv::plan::cl
