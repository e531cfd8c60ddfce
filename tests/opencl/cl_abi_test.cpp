// Tests of the OpenCL ABI helpers (src/target/opencl/cl_abi.cpp): parameter parsing, the
// cl_wrap / cl_batch_entry program forms and the prelude (the image geometry is tested in
// tests/plan/image_geometry_test.cpp). The batched form is also built and run on an OpenCL
// device when one exists (PoCL here), and its results are compared with the same arithmetic done
// on the host (skipped without a device).
#include <gtest/gtest.h>

#include <CL/cl.h>

#include <cmath>

#include "core/error.h"
#include "plan/plan.h"
#include "target/opencl/cl_abi.h"

namespace opv::plan::cl {
namespace {

TEST(ClAbi, ParseParams) {
  auto ps = parse_params(
      "  write_only image2d_t out0, __global const half* restrict in1 ,read_only image2d_t in2,"
      " __global float* __attribute__((aligned(16, 4))) acc, float w[4]");
  ASSERT_EQ(ps.size(), 5u);
  EXPECT_EQ(ps[0].decl, "write_only image2d_t out0");
  EXPECT_EQ(ps[0].name, "out0");
  EXPECT_EQ(ps[1].decl, "__global const half* restrict in1");
  EXPECT_EQ(ps[1].name, "in1");
  EXPECT_EQ(ps[2].name, "in2");
  EXPECT_EQ(ps[3].name, "acc");  // the comma inside __attribute__(( )) does not split
  EXPECT_EQ(ps[4].name, "w");    // array suffix skipped
  EXPECT_TRUE(parse_params("").empty());
  EXPECT_TRUE(parse_params(" void ").empty());
  EXPECT_THROW(parse_params("int a,, int b"), opv::Error);
  EXPECT_THROW(parse_params("int a, int (b"), opv::Error);
  EXPECT_THROW(parse_params("int a, *"), opv::Error);
}

const char* kParams = "__global float* out0, __global const float* in0, __global const float* w";

TEST(ClAbi, WrapFormsBodyAndEntry) {
  std::string src = cl_wrap("#define X 1", "scale", kParams, "  out0[0] = in0[0] * w[0];");
  EXPECT_EQ(src.find("#define X 1\n"), 0u);
  EXPECT_NE(src.find(std::string("void scale_body(") + kParams + ") {\n  out0[0] = in0[0] * w[0];\n}\n"),
            std::string::npos);
  EXPECT_NE(src.find(std::string("__kernel void scale(") + kParams + ") {\n  scale_body(out0, in0, w);\n}"),
            std::string::npos);
}

TEST(ClAbi, BatchEntry) {
  std::string src = cl_wrap("", "scale", kParams, "  out0[0] = in0[0] * w[0];");
  std::string entry;
  // Output-major form (what plan pass "batch" uses): outputs of all groups, then inputs.
  std::string b = cl_batch_entry(src, "scale", kParams, 3, 1, &entry);
  EXPECT_EQ(entry, "scale_x3");
  EXPECT_EQ(b.find(src), 0u) << "the original program stays in front";
  const std::string params =
      "__global float* out0_0, __global float* out0_1, __global float* out0_2, "
      "__global const float* in0_0, __global const float* w_0, __global const float* in0_1, "
      "__global const float* w_1, __global const float* in0_2, __global const float* w_2";
  EXPECT_EQ(cl_batch_params(kParams, 3, 1), params);
  EXPECT_NE(b.find("__kernel void scale_x3(" + params + ")"), std::string::npos) << b;
  EXPECT_NE(b.find("switch (get_global_id(2))"), std::string::npos);
  EXPECT_NE(b.find("case 0: scale_body(out0_0, in0_0, w_0); break;"), std::string::npos);
  EXPECT_NE(b.find("case 2: scale_body(out0_2, in0_2, w_2); break;"), std::string::npos);
  EXPECT_EQ(b.find("case 3:"), std::string::npos);
  // Group-major form.
  std::string g = cl_batch_entry(src, "scale", kParams, 2, &entry);
  EXPECT_EQ(entry, "scale_x2");
  EXPECT_NE(g.find("__kernel void scale_x2(__global float* out0_0, __global const float* in0_0, "
                   "__global const float* w_0, __global float* out0_1, __global const float* in0_1, "
                   "__global const float* w_1)"),
            std::string::npos)
      << g;
  // A name that is also a substring of the type is renamed at the name only.
  EXPECT_EQ(cl_batch_params("__global float* float_, int i", 2, 0),
            "__global float* float__0, int i_0, __global float* float__1, int i_1");
  // Refusals.
  EXPECT_THROW(cl_batch_entry(src, "scale", kParams, 1, 1, &entry), opv::Error);
  EXPECT_THROW(cl_batch_entry(src, "other", kParams, 2, 1, &entry), opv::Error);
  EXPECT_THROW(cl_batch_entry("__kernel void scale() {}", "scale", kParams, 2, &entry), opv::Error);
  EXPECT_THROW(cl_batch_entry(src, "scale", kParams, 2, 4, &entry), opv::Error);
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

// out = gelu(in * w) + sigmoid(in) per element, built with cl_wrap + the prelude (included twice
// to check the guard), batched over 3 groups with the output-major argument order, and run with
// one launch of global {n, 1, 3}. Each group's output is checked against the host.
TEST(ClAbi, BatchedEntryRunsOnDevice) {
  Cl cl;
  if (!cl.open()) GTEST_SKIP() << "no OpenCL device";
  constexpr int kN = 37, kGroups = 3;
  std::string src = cl_wrap(cl_prelude() + cl_prelude(), "gs", kParams,
                            "  int i = get_global_id(0);\n"
                            "  float4 v4 = opv_sigmoid((float4)(in0[i]));\n"
                            "  out0[i] = opv_gelu(in0[i] * w[i]) + v4.x;\n");
  std::string entry;
  src = cl_batch_entry(src, "gs", kParams, kGroups, 1, &entry);
  const char* text = src.c_str();
  cl_int err = 0;
  cl_program prog = clCreateProgramWithSource(cl.ctx, 1, &text, nullptr, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  err = clBuildProgram(prog, 1, &cl.dev, "", nullptr, nullptr);
  if (err != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(prog, cl.dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string log(n, '\0');
    clGetProgramBuildInfo(prog, cl.dev, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    clReleaseProgram(prog);
    FAIL() << "build failed: " << log << "\n" << src;
  }
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

// A work-group reduction through a cl_wrap local array, batched over 2 groups: the local array
// is declared at kernel scope in both the plain and the batched entry and reaches the body as a
// pointer; barrier() inside the switch is uniform per work-group.
TEST(ClAbi, LocalArraysReachBodyAndBatchedEntry) {
  const std::string params = "__global float* out0, __global const float* in0";
  std::string src = cl_wrap(cl_prelude(), "red", params,
                            "  const int l = get_local_id(0);\n"
                            "  red[l] = in0[get_global_id(0)];\n"
                            "  barrier(CLK_LOCAL_MEM_FENCE);\n"
                            "  for (int s = 32; s > 0; s >>= 1) {\n"
                            "    if (l < s) red[l] += red[l + s];\n"
                            "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                            "  }\n"
                            "  if (l == 0) out0[get_group_id(0)] = red[0];\n",
                            "__local float red[64]");
  EXPECT_NE(src.find("void red_body(__global float* out0, __global const float* in0, __local float* red)"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("  __local float red[64];\n  red_body(out0, in0, red);"), std::string::npos) << src;
  EXPECT_THROW(cl_wrap("", "e", params, "", "float red[4]"), opv::Error);
  std::string entry;
  src = cl_batch_entry(src, "red", params, 2, 1, &entry);
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
