// Tests of kernel descriptions and their renderer (src/target/opencl/kernel_desc.cpp): parameter
// declarations per storage, the call's parameters from a plan (image and image-in-buffer
// storage), image accesses per storage, the rendered program form, and a rendered image-in-buffer
// kernel run on an OpenCL device when one exists (PoCL here; skipped without a device).
#include <gtest/gtest.h>

#include <CL/cl.h>

#include <vector>

#include "core/error.h"
#include "target/opencl/codegen.h"
#include "target/opencl/kernel_desc.h"

namespace opv::plan::cl {
namespace {

KernelParam param(const std::string& name, ParamStorage s, ParamAccess a, DType dt) {
  return KernelParam{name, s, a, dt, {}};
}

TEST(KernelDesc, ParamDeclFollowsStorageAccessAndDtype) {
  EXPECT_EQ(param("out0", ParamStorage::Image2D, ParamAccess::Write, DType::F16).decl(), "write_only image2d_t out0");
  EXPECT_EQ(param("in1", ParamStorage::Image2D, ParamAccess::Read, DType::F32).decl(), "read_only image2d_t in1");
  EXPECT_EQ(param("out0", ParamStorage::ImageInBuffer, ParamAccess::Write, DType::F16).decl(), "__global half* out0");
  EXPECT_EQ(param("in0", ParamStorage::ImageInBuffer, ParamAccess::Read, DType::F32).decl(),
            "__global const float* in0");
  EXPECT_EQ(param("in2", ParamStorage::Global, ParamAccess::Read, DType::U8).decl(), "__global const uchar* in2");
  EXPECT_EQ(param("out1", ParamStorage::Global, ParamAccess::Write, DType::F16).decl(), "__global half* out1");
}

// A plan with one call: out0 image [1,6,2,3] f16, inputs (image x, absent, linear f32 bias).
Plan one_call_plan(bool images_in_buffers) {
  Plan p;
  p.target = "opencl";
  if (images_in_buffers) p.meta.set("cl_image_storage", std::string("buffer"));
  const Shape s{1, 6, 2, 3};
  int x = p.add_buffer({"x", DType::F16, s, Layout::ImageRGBA, BufferKind::Intermediate});
  int b = p.add_buffer({"b", DType::F32, {6}, Layout::Linear, BufferKind::Input});
  int y = p.add_buffer({"y", DType::F16, s, Layout::ImageRGBA, BufferKind::Intermediate});
  Kernel k;
  k.name = "k";
  k.op = OpKind::Add;
  int kid = p.add_kernel(k);
  p.calls.push_back({kid, {x, -1, b}, {y}, {}, {}, "call"});
  return p;
}

TEST(KernelDesc, CallParamsKeepSlotNamesAndPlanStorage) {
  for (bool in_buffers : {false, true}) {
    SCOPED_TRACE(in_buffers ? "image-in-buffer" : "image2d");
    const Plan p = one_call_plan(in_buffers);
    const std::vector<KernelParam> ps = call_params(p, p.calls[0]);
    ASSERT_EQ(ps.size(), 3u);
    const ParamStorage img = in_buffers ? ParamStorage::ImageInBuffer : ParamStorage::Image2D;
    EXPECT_EQ(ps[0].name, "out0");
    EXPECT_EQ(ps[0].storage, img);
    EXPECT_EQ(ps[0].access, ParamAccess::Write);
    EXPECT_EQ(ps[1].name, "in0");
    EXPECT_EQ(ps[1].storage, img);
    EXPECT_EQ(ps[2].name, "in2");  // the absent slot 1 keeps its index out of the names
    EXPECT_EQ(ps[2].storage, ParamStorage::Global);
    EXPECT_EQ(ps[2].dtype, DType::F32);
    if (in_buffers) {
      EXPECT_EQ(ps[0].geom.width, 6);  // W * C4 = 3 * 2
      EXPECT_EQ(ps[0].geom.height, 2);
    }
    const KernelDesc d = describe_call(p, p.calls[0], "fam", "gen.cpp");
    EXPECT_EQ(d.param_list(), in_buffers ? "__global half* out0, __global const half* in0, __global const float* in2"
                                         : "write_only image2d_t out0, read_only image2d_t in0, __global const float* in2");
  }
}

TEST(KernelDesc, ImageAccessFollowsStorage) {
  KernelDesc d;
  d.entry = "e";
  d.params = {param("out0", ParamStorage::Image2D, ParamAccess::Write, DType::F16),
              param("in0", ParamStorage::ImageInBuffer, ParamAccess::Read, DType::F16),
              param("in1", ParamStorage::Image2D, ParamAccess::Read, DType::F16),
              param("in2", ParamStorage::Global, ParamAccess::Read, DType::F32)};
  EXPECT_EQ(d.read_image("in1", "(int2)(x, y)"), "read_imagef(in1, opv_smp, (int2)(x, y))");
  EXPECT_EQ(d.read_image("in0", "(int2)(x, y)"), "OPV_IMG_RD(in0, opv_smp, (int2)(x, y))");
  EXPECT_EQ(d.write_image("out0", "(int2)(x, y)", "v"), "write_imagef(out0, (int2)(x, y), v);");
  d.params[0].storage = ParamStorage::ImageInBuffer;
  EXPECT_EQ(d.write_image("out0", "c", "v"), "OPV_IMG_WR(out0, c, v);");
  EXPECT_EQ(image_read_half_fn(ParamStorage::Image2D), "read_imageh");
  EXPECT_EQ(image_read_half_fn(ParamStorage::ImageInBuffer), "OPV_IMG_RDH");
  EXPECT_THROW(d.read_image("out0", "c"), opv::Error);       // an output is not read
  EXPECT_THROW(d.write_image("in1", "c", "v"), opv::Error);  // an input is not written
  EXPECT_THROW(d.read_image("in2", "c"), opv::Error);        // not an image
  EXPECT_THROW(d.read_image("in9", "c"), opv::Error);        // no such parameter
}

TEST(KernelDesc, RenderWritesHeaderBodyAndEntryWithLocals) {
  KernelDesc d;
  d.family = "fam";
  d.generator = "src/target/opencl/fam.cpp";
  d.entry = "red";
  d.prelude = "#define X 1";
  d.params = {param("out0", ParamStorage::Global, ParamAccess::Write, DType::F32),
              param("in0", ParamStorage::Global, ParamAccess::Read, DType::F32)};
  d.locals = {{"float", "acc", 64}};
  d.body = "  acc[0] = in0[0];\n  out0[0] = acc[0] * X;";
  const std::string src = render(d);
  EXPECT_EQ(src.rfind("// generated by opvision src/target/opencl/fam.cpp (family fam) -- do not edit\n#define X 1\n", 0),
            0u)
      << src;
  EXPECT_NE(src.find("void red_body(__global float* out0, __global const float* in0, __local float* acc) {\n"
                     "  acc[0] = in0[0];\n  out0[0] = acc[0] * X;\n}\n"
                     "__kernel void red(__global float* out0, __global const float* in0) {\n"
                     "  __local float acc[64];\n  red_body(out0, in0, acc);\n}\n"),
            std::string::npos)
      << src;
  EXPECT_EQ(src.find("OPV_IMG_RD"), std::string::npos);  // no image-in-buffer parameter, no helpers
  d.entry.clear();
  EXPECT_THROW(render(d), opv::Error);
}

TEST(KernelDesc, RenderDefinesImageInBufferGeometryPerParameter) {
  const Plan p = one_call_plan(true);
  KernelDesc d = describe_call(p, p.calls[0], "fam", "gen.cpp");
  d.entry = "e";
  d.body = "  " + d.write_image("out0", "(int2)(0, 0)", d.read_image("in0", "(int2)(0, 0)"));
  const std::string src = render(d);
  for (const char* want : {"#define out0_W 6\n#define out0_H 2\n#define out0_RD opv_img_rd_h\n#define out0_WR opv_img_wr_h\n",
                           "#define in0_W 6\n#define in0_H 2\n", "float4 opv_img_rd_h(", "#define OPV_IMG_WR("})
    EXPECT_NE(src.find(want), std::string::npos) << want << "\n" << src;
  EXPECT_EQ(src.find("in2_W"), std::string::npos) << src;  // the Linear parameter gets no geometry
  EXPECT_LT(src.find("#define OPV_IMG_WR("), src.find("void e_body("));
}

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

// out0(x, y) = 2 * in0(x + 1, y) on image-in-buffer f32 parameters of [1,8,2,3] (6 x 2 texels),
// launched over 7 x 3 work-items: reads past the right edge give 0 and writes outside the grid
// are dropped (the canaries after the output stay untouched).
TEST(KernelDesc, ImageInBufferKernelRunsOnDevice) {
  KernelDesc d;
  d.family = "test";
  d.generator = "tests/opencl/kernel_desc_test.cpp";
  d.entry = "shift2";
  d.prelude = cl_prelude();
  const ImageGeom g = image_geom({1, 8, 2, 3});
  d.params = {KernelParam{"out0", ParamStorage::ImageInBuffer, ParamAccess::Write, DType::F32, g},
              KernelParam{"in0", ParamStorage::ImageInBuffer, ParamAccess::Read, DType::F32, g}};
  d.body = "  const int x = get_global_id(0), y = get_global_id(1);\n"
           "  " + d.write_image("out0", "(int2)(x, y)", "2.0f * " + d.read_image("in0", "(int2)(x + 1, y)")) + "\n";
  const std::string src = render(d);
  Cl cl;
  if (!cl.open()) GTEST_SKIP() << "no OpenCL device";
  const char* text = src.c_str();
  cl_int err = 0;
  cl_program prog = clCreateProgramWithSource(cl.ctx, 1, &text, nullptr, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  ASSERT_EQ(clBuildProgram(prog, 1, &cl.dev, "", nullptr, nullptr), CL_SUCCESS) << src;
  cl_kernel k = clCreateKernel(prog, "shift2", &err);
  ASSERT_EQ(err, CL_SUCCESS);
  const size_t texels = size_t(g.width * g.height), floats = 4 * texels, canaries = 64;
  std::vector<float> in(floats), out(floats + canaries, -7.0f);
  for (size_t i = 0; i < floats; ++i) in[i] = float(i) * 0.5f - 3.0f;
  cl_mem bin = clCreateBuffer(cl.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, floats * sizeof(float), in.data(), &err);
  ASSERT_EQ(err, CL_SUCCESS);
  cl_mem bout =
      clCreateBuffer(cl.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, out.size() * sizeof(float), out.data(), &err);
  ASSERT_EQ(err, CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(k, 0, sizeof(cl_mem), &bout), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(k, 1, sizeof(cl_mem), &bin), CL_SUCCESS);
  const size_t global[2] = {size_t(g.width) + 1, size_t(g.height) + 1};
  ASSERT_EQ(clEnqueueNDRangeKernel(cl.q, k, 2, nullptr, global, nullptr, 0, nullptr, nullptr), CL_SUCCESS);
  ASSERT_EQ(clEnqueueReadBuffer(cl.q, bout, CL_TRUE, 0, out.size() * sizeof(float), out.data(), 0, nullptr, nullptr),
            CL_SUCCESS);
  for (int64_t y = 0; y < g.height; ++y)
    for (int64_t x = 0; x < g.width; ++x)
      for (int l = 0; l < 4; ++l) {
        const size_t at = size_t((y * g.width + x) * 4 + l);
        const float want = x + 1 < g.width ? 2.0f * in[size_t((y * g.width + x + 1) * 4 + l)] : 0.0f;
        EXPECT_EQ(out[at], want) << "texel (" << x << ", " << y << ") lane " << l;
      }
  for (size_t i = floats; i < out.size(); ++i) EXPECT_EQ(out[i], -7.0f) << "canary " << i - floats;
  clReleaseMemObject(bin);
  clReleaseMemObject(bout);
  clReleaseKernel(k);
  clReleaseProgram(prog);
}

}  // namespace
}  // namespace opv::plan::cl
