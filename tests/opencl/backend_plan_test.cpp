// The opencl backend on hand-built plans: tiny kernels written here against cl_abi.h (Linear
// buffers, ImageRGBA images with the CLAMP sampler, host fallback, arena sub-buffers), results
// compared with values computed in the test; replay / command-buffer / plain paths bit-identical;
// profiling; bad plans. Every test skips when no OpenCL device exists.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "backend/backend.h"
#include "backend/opencl/cl_runtime.h"
#include "backend/opencl/opencl_backend.h"
#include "core/error.h"
#include "core/half.h"
#include "runtime/session.h"
#include "test_util.h"

namespace opv::backend {
namespace {

using plan::BufferKind;
using plan::Layout;

bool have_device() {
  try {
    return !cl::list_devices().empty();
  } catch (const Error&) {
    return false;
  }
}

class OpenCLPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_device()) GTEST_SKIP() << "no OpenCL device found";
    setenv("OPV_CACHE_DIR", test::temp_dir().c_str(), 1);
    dev_ = cl::select_device("");
  }
  void TearDown() override { unsetenv("OPV_CACHE_DIR"); }
  cl::DeviceInfo dev_;
};

// Builds a plan for target "opencl" by hand.
struct PlanBuilder {
  plan::Plan p;
  PlanBuilder() { p.target = "opencl"; }
  int buffer(const std::string& name, DType dt, const Shape& s, Layout l, BufferKind k, int64_t offset = -1) {
    plan::Buffer b;
    b.name = name;
    b.dtype = dt;
    b.shape = s;
    b.layout = l;
    b.kind = k;
    b.offset = offset;
    const int id = p.add_buffer(b);
    if (k == BufferKind::Input) p.inputs.push_back(id);
    if (k == BufferKind::Output) p.outputs.push_back(id);
    return id;
  }
  int kernel(const std::string& name, const std::string& source, const std::string& entry,
             const std::string& options = "", OpKind op = OpKind::Identity) {
    plan::Kernel k;
    k.name = name;
    k.op = op;
    k.source = source;
    k.entry = entry;
    k.options = options;
    return p.add_kernel(k);
  }
  void call(int k, std::vector<int> outs, std::vector<int> ins, std::array<int64_t, 3> global,
            std::array<int64_t, 3> local = {0, 0, 0}) {
    plan::Call c;
    c.kernel = k;
    c.outputs = std::move(outs);
    c.inputs = std::move(ins);
    c.global = global;
    c.local = local;
    c.label = "node" + std::to_string(p.calls.size());
    p.calls.push_back(std::move(c));
  }
};

struct Ran {
  std::unique_ptr<Backend> backend;
  std::vector<Tensor> outputs;
};

Ran run_plan(const plan::Plan& p, const std::vector<Tensor>& inputs, bool profiling = false,
             const Options& opts = {}) {
  Ran r;
  r.backend = create("opencl", opts);
  if (profiling) r.backend->set_profiling(true);
  r.backend->load(p);
  std::vector<const Tensor*> ins;
  for (const Tensor& t : inputs) ins.push_back(&t);
  for (int b : p.outputs) r.outputs.emplace_back(p.buffers[size_t(b)].dtype, p.buffers[size_t(b)].shape);
  std::vector<Tensor*> outs;
  for (Tensor& t : r.outputs) outs.push_back(&t);
  r.backend->run(ins, outs);
  return r;
}

using opv::test::error_of;

const char* kAddSource =
    "__kernel void add_f32(__global float* y, __global const float* a, __global const float* b) {\n"
    "  int i = get_global_id(0); y[i] = a[i] + b[i];\n}\n";

// Image kernels for a [1,C,H,W] tensor, geometry from cl_abi.h (x = w*C4 + c/4, y = n*H + h).
const char* kImageSource = R"CL(
__constant sampler_t smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;
__kernel void to_img(__write_only image2d_t out, __global const float* x) {
  int tx = get_global_id(0), ty = get_global_id(1);
  int w = tx / C4, c4 = tx % C4, n = ty / H, h = ty % H;
  float t[4];
  for (int k = 0; k < 4; ++k) {
    int c = c4 * 4 + k;
    t[k] = c < C ? x[((n * C + c) * H + h) * W + w] : 0.0f;
  }
  write_imagef(out, (int2)(tx, ty), (float4)(t[0], t[1], t[2], t[3]));
}
// left + right + up neighbour; reads beyond the edges land outside the image and give zero.
__kernel void shift_sum(__write_only image2d_t out, __read_only image2d_t in) {
  int tx = get_global_id(0), ty = get_global_id(1);
  float4 l = read_imagef(in, smp, (int2)(tx - C4, ty));
  float4 r = read_imagef(in, smp, (int2)(tx + C4, ty));
  float4 u = read_imagef(in, smp, (int2)(tx, ty - 1));
  write_imagef(out, (int2)(tx, ty), l + r + u);
}
__kernel void from_img(__global float* y, __read_only image2d_t in) {
  int tx = get_global_id(0), ty = get_global_id(1);
  int w = tx / C4, c4 = tx % C4, n = ty / H, h = ty % H;
  float4 v = read_imagef(in, smp, (int2)(tx, ty));
  float t[4] = {v.x, v.y, v.z, v.w};
  for (int k = 0; k < 4; ++k) {
    int c = c4 * 4 + k;
    if (c < C) y[((n * C + c) * H + h) * W + w] = t[k];
  }
}
)CL";

constexpr int64_t kC = 6, kH = 3, kW = 5, kC4 = 2;
const Shape kShape{1, kC, kH, kW};
const std::string kImageOptions = "-DC=6 -DH=3 -DW=5 -DC4=2";

// x -> to_img -> A -> shift -> B -> shift -> C (same offset and geometry as A) -> from_img -> y.
plan::Plan image_chain_plan(DType img_dtype, bool replay) {
  PlanBuilder b;
  const int x = b.buffer("x", DType::F32, kShape, Layout::Linear, BufferKind::Input);
  const int ia = b.buffer("img_a", img_dtype, kShape, Layout::ImageRGBA, BufferKind::Intermediate, 0);
  const int ib = b.buffer("img_b", img_dtype, kShape, Layout::ImageRGBA, BufferKind::Intermediate, 4096);
  const int ic = b.buffer("img_c", img_dtype, kShape, Layout::ImageRGBA, BufferKind::Intermediate, 0);
  const int y = b.buffer("y", DType::F32, kShape, Layout::Linear, BufferKind::Output);
  b.p.arena_bytes = 8192;
  const int k_to = b.kernel("to_img", kImageSource, "to_img", kImageOptions);
  const int k_shift = b.kernel("shift_sum", kImageSource, "shift_sum", kImageOptions);
  const int k_from = b.kernel("from_img", kImageSource, "from_img", kImageOptions);
  const std::array<int64_t, 3> g{kW * kC4, kH, 0};
  b.call(k_to, {ia}, {x}, g);
  b.call(k_shift, {ib}, {ia}, g);
  b.call(k_shift, {ic}, {ib}, g);
  b.call(k_from, {y}, {ic}, g);
  if (replay) b.p.meta.set("cl_replay", int64_t(1));
  return b.p;
}

// The same computation on the host, rounding every image store to the image's precision.
std::vector<float> image_chain_expected(const Tensor& x, DType img_dtype) {
  auto store = [&](float v) { return img_dtype == DType::F16 ? round_to_half(v) : v; };
  std::vector<float> a(size_t(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) a[size_t(i)] = store(float(x.get_f64(i)));
  auto idx = [](int64_t c, int64_t h, int64_t w) { return size_t((c * kH + h) * kW + w); };
  auto shift = [&](const std::vector<float>& in) {
    std::vector<float> out(in.size());
    for (int64_t c = 0; c < kC; ++c)
      for (int64_t h = 0; h < kH; ++h)
        for (int64_t w = 0; w < kW; ++w) {
          const float l = w > 0 ? in[idx(c, h, w - 1)] : 0.f;
          const float r = w + 1 < kW ? in[idx(c, h, w + 1)] : 0.f;
          const float u = h > 0 ? in[idx(c, h - 1, w)] : 0.f;
          out[idx(c, h, w)] = store((l + r) + u);
        }
    return out;
  };
  return shift(shift(a));
}

// Tolerance for results that went through half images: the rounding of write_imagef into a
// CL_HALF_FLOAT image differs between drivers (PoCL rounds to nearest even; NVIDIA's OpenCL on an
// H200 was seen rounding toward zero, 1-2 half ulps below after two stages), so compare within a
// few half ulps; a wrong border would be off by O(1).
constexpr double kHalfImageTol = 4e-3;

void expect_close(const Tensor& got, const std::vector<float>& want, double tol) {
  ASSERT_EQ(got.numel(), int64_t(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i)
    EXPECT_NEAR(got.get_f64(i), want[size_t(i)], tol * (1.0 + std::abs(want[size_t(i)]))) << "element " << i;
}

TEST_F(OpenCLPlan, LinearAdd) {
  PlanBuilder b;
  const Shape s{1, 4, 3, 5};
  const int a = b.buffer("a", DType::F32, s, Layout::Linear, BufferKind::Input);
  const int c = b.buffer("b", DType::F32, s, Layout::Linear, BufferKind::Input);
  const int y = b.buffer("y", DType::F32, s, Layout::Linear, BufferKind::Output);
  b.call(b.kernel("add", kAddSource, "add_f32"), {y}, {a, c}, {60, 0, 0});
  const Tensor ta = test::random_f32(s, 1), tb = test::random_f32(s, 2);
  Ran r = run_plan(b.p, {ta, tb});
  for (int64_t i = 0; i < 60; ++i) EXPECT_EQ(r.outputs[0].data<float>()[i], ta.data<float>()[i] + tb.data<float>()[i]);
  EXPECT_EQ(r.backend->name(), "opencl");
  EXPECT_EQ(r.backend->tolerance().rel_l2, 1e-2);
}

TEST_F(OpenCLPlan, HalfLinearInputAndLocalSize) {
  PlanBuilder b;
  const int x = b.buffer("x", DType::F16, {16}, Layout::Linear, BufferKind::Input);
  const int y = b.buffer("y", DType::F32, {16}, Layout::Linear, BufferKind::Output);
  const char* src =
      "__kernel void twice_h(__global float* y, __global const half* x) {\n"
      "  int i = get_global_id(0); y[i] = 2.0f * vload_half(i, x);\n}\n";
  b.call(b.kernel("twice", src, "twice_h"), {y}, {x}, {16, 0, 0}, {4, 0, 0});
  const Tensor xf = test::random_f32({16}, 3);
  const Tensor xh = xf.cast(DType::F16);
  Ran r = run_plan(b.p, {xh});
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(r.outputs[0].data<float>()[i], 2.0f * float(xh.get_f64(i)));
}

TEST_F(OpenCLPlan, ImagesWithZeroBordersAndSharing) {
  if (!dev_.image_support) GTEST_SKIP() << "device has no images";
  for (DType dt : {DType::F16, DType::F32}) {
    const Tensor x = test::random_f32(kShape, 7);
    Ran r = run_plan(image_chain_plan(dt, false), {x});
    expect_close(r.outputs[0], image_chain_expected(x, dt), dt == DType::F16 ? kHalfImageTol : 1e-6);
    const OpenCLLoadInfo* info = opencl_load_info(*r.backend);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->images, 2) << "img_a and img_c share one image";
  }
}

TEST_F(OpenCLPlan, ReplayCommandBufferAndPlainAreBitIdentical) {
  if (!dev_.image_support) GTEST_SKIP() << "device has no images";
  const Tensor x = test::random_f32(kShape, 11);
  Ran plain = run_plan(image_chain_plan(DType::F16, false), {x});
  EXPECT_FALSE(opencl_load_info(*plain.backend)->replay);
  EXPECT_FALSE(opencl_load_info(*plain.backend)->command_buffer);
  Ran replay = run_plan(image_chain_plan(DType::F16, true), {x});
  const OpenCLLoadInfo* info = opencl_load_info(*replay.backend);
  EXPECT_TRUE(info->replay);
  if (dev_.has_command_buffer && dev_.command_buffer_version == CL_MAKE_VERSION(0, 9, 0)) {
    EXPECT_TRUE(info->command_buffer) << "PoCL's cl_khr_command_buffer 0.9.0 should be used";
  }
  std::printf("device %s: command buffer %s\n", info->device.c_str(), info->command_buffer ? "used" : "not used");
  Options no_cb_opts;
  no_cb_opts.cl_command_buffer = false;  // --cl-command-buffer off
  Ran no_cb = run_plan(image_chain_plan(DType::F16, true), {x}, false, no_cb_opts);
  EXPECT_FALSE(opencl_load_info(*no_cb.backend)->command_buffer);
  // The former environment switch is no longer read: only the option decides.
  setenv("OPV_CL_COMMAND_BUFFER", "0", 1);
  Ran env_set = run_plan(image_chain_plan(DType::F16, true), {x});
  unsetenv("OPV_CL_COMMAND_BUFFER");
  EXPECT_EQ(opencl_load_info(*env_set.backend)->command_buffer, info->command_buffer);
  EXPECT_TRUE(bit_equal(plain.outputs[0], replay.outputs[0]));
  EXPECT_TRUE(bit_equal(plain.outputs[0], no_cb.outputs[0]));
  expect_close(replay.outputs[0], image_chain_expected(x, DType::F16), kHalfImageTol);
  // Repeated runs of the same backend (command buffer replayed again) are bit-identical, and
  // follow a change of input.
  std::vector<Tensor> again{Tensor(DType::F32, kShape)};
  const Tensor x2 = test::random_f32(kShape, 12);
  for (int rep = 0; rep < 3; ++rep) {
    replay.backend->run({&x}, {&again[0]});
    EXPECT_TRUE(bit_equal(again[0], plain.outputs[0])) << "run " << rep;
  }
  replay.backend->run({&x2}, {&again[0]});
  expect_close(again[0], image_chain_expected(x2, DType::F16), kHalfImageTol);
}

TEST_F(OpenCLPlan, HostFallbackBetweenDeviceCalls) {
  const Shape s{60};
  for (bool replay : {false, true}) {
    PlanBuilder b;
    const int x = b.buffer("x", DType::F32, s, Layout::Linear, BufferKind::Input);
    const int l1 = b.buffer("l1", DType::F32, s, Layout::Linear, BufferKind::Intermediate);
    const int l2 = b.buffer("l2", DType::F32, s, Layout::Linear, BufferKind::Intermediate);
    const int y = b.buffer("y", DType::F32, s, Layout::Linear, BufferKind::Output);
    const int k_add = b.kernel("add", kAddSource, "add_f32");
    b.call(k_add, {l1}, {x, x}, {60, 0, 0});
    b.call(b.kernel("relu_host", "", "", "", OpKind::Relu), {l2}, {l1}, {0, 0, 0});
    b.call(k_add, {y}, {l2, x}, {60, 0, 0});
    if (replay) b.p.meta.set("cl_replay", std::string("1"));
    const Tensor tx = test::random_f32(s, 5);
    Ran r = run_plan(b.p, {tx}, /*profiling=*/replay);
    const OpenCLLoadInfo* info = opencl_load_info(*r.backend);
    EXPECT_EQ(info->host_calls, 1);
    EXPECT_EQ(info->replay, replay);
    EXPECT_FALSE(info->command_buffer) << "host calls rule out a command buffer";
    for (int64_t i = 0; i < 60; ++i) {
      const float v = tx.data<float>()[i];
      EXPECT_EQ(r.outputs[0].data<float>()[i], std::max(v + v, 0.0f) + v) << i;
    }
    if (replay) {
      EXPECT_EQ(r.backend->call_times_ms().size(), 3u);
    }
  }
}

TEST_F(OpenCLPlan, ArenaSubBuffersAndUnalignedOffsets) {
  const Shape s{60};
  const int64_t align = dev_.mem_base_addr_align;
  const int64_t bytes = 60 * 4;
  const int64_t off2 = plan::align_up(bytes, align);           // aligned: a sub-buffer
  const int64_t off3 = plan::align_up(off2 + bytes, align) + 4; // unaligned: its own cl_mem
  PlanBuilder b;
  const int x = b.buffer("x", DType::F32, s, Layout::Linear, BufferKind::Input);
  const int l1 = b.buffer("l1", DType::F32, s, Layout::Linear, BufferKind::Intermediate, 0);
  const int l2 = b.buffer("l2", DType::F32, s, Layout::Linear, BufferKind::Intermediate, off2);
  const int l3 = b.buffer("l3", DType::F32, s, Layout::Linear, BufferKind::Intermediate, off3);
  const int y = b.buffer("y", DType::F32, s, Layout::Linear, BufferKind::Output);
  b.p.arena_bytes = off3 + bytes;
  const int k = b.kernel("add", kAddSource, "add_f32");
  b.call(k, {l1}, {x, x}, {60, 0, 0});   // 2x
  b.call(k, {l2}, {l1, x}, {60, 0, 0});  // 3x
  b.call(k, {l3}, {l2, l1}, {60, 0, 0}); // 5x
  b.call(k, {y}, {l3, x}, {60, 0, 0});   // 6x
  const Tensor tx = test::random_f32(s, 9);
  Ran r = run_plan(b.p, {tx});
  const OpenCLLoadInfo* info = opencl_load_info(*r.backend);
  EXPECT_EQ(info->arena_sub_buffers, 2);
  EXPECT_EQ(info->separate_buffers, 1);
  for (int64_t i = 0; i < 60; ++i) {
    const float v = tx.data<float>()[i];
    const float v1 = v + v, v2 = v1 + v, v3 = v2 + v1;
    EXPECT_EQ(r.outputs[0].data<float>()[i], v3 + v) << i;
  }
}

TEST_F(OpenCLPlan, ProfilingGivesOneTimePerCall) {
  if (!dev_.image_support) GTEST_SKIP() << "device has no images";
  for (bool replay : {false, true}) {
    const plan::Plan p = image_chain_plan(DType::F16, replay);
    const Tensor x = test::random_f32(kShape, 13);
    Ran r = run_plan(p, {x});
    EXPECT_TRUE(r.backend->call_times_ms().empty()) << "profiling is off";
    r.backend->set_profiling(true);  // recreates the queue after load
    Tensor y(DType::F32, kShape);
    r.backend->run({&x}, {&y});
    const std::vector<double> t = r.backend->call_times_ms();
    ASSERT_EQ(t.size(), p.calls.size());
    for (double ms : t) EXPECT_GE(ms, 0.0);
    EXPECT_TRUE(bit_equal(y, r.outputs[0]));
    r.backend->set_profiling(false);
    r.backend->run({&x}, {&y});
    EXPECT_TRUE(bit_equal(y, r.outputs[0]));
    EXPECT_TRUE(r.backend->call_times_ms().empty());
  }
}

TEST_F(OpenCLPlan, BadPlansGiveErrors) {
  auto load_error = [](const plan::Plan& p) {
    return error_of([&] {
      auto be = create("opencl");
      be->load(p);
    });
  };
  {  // wrong target
    plan::Plan p = image_chain_plan(DType::F16, false);
    p.target = "cpu";
    EXPECT_NE(load_error(p).find("lowered for target 'cpu', not 'opencl'"), std::string::npos);
  }
  if (dev_.image_support) {  // images beyond the device limits
    for (int side = 0; side < 2; ++side) {
      PlanBuilder b;
      const Shape big = side == 0 ? Shape{1, 4, 1, dev_.image2d_max_width + 1} : Shape{1, 4, dev_.image2d_max_height + 1, 1};
      const int x = b.buffer("x", DType::F32, big, Layout::Linear, BufferKind::Input);
      const int img = b.buffer("too_big_img", DType::F16, big, Layout::ImageRGBA, BufferKind::Intermediate);
      b.call(b.kernel("to_img", kImageSource, "to_img", kImageOptions), {img}, {x}, {1, 1, 0});
      const std::string msg = load_error(b.p);
      EXPECT_NE(msg.find("too_big_img"), std::string::npos) << msg;
      EXPECT_NE(msg.find(side == 0 ? "CL_DEVICE_IMAGE2D_MAX_WIDTH" : "CL_DEVICE_IMAGE2D_MAX_HEIGHT"), std::string::npos)
          << msg;
    }
  }
  {  // host fallback touching an image
    plan::Plan p = image_chain_plan(DType::F16, false);
    plan::Kernel relu;
    relu.name = "relu_host";
    relu.op = OpKind::Relu;
    p.kernels.push_back(relu);
    p.calls[2].kernel = int(p.kernels.size()) - 1;
    p.calls[2].label = "the_relu_node";
    const std::string msg = load_error(p);
    EXPECT_NE(msg.find("the_relu_node"), std::string::npos) << msg;
    EXPECT_NE(msg.find("host fallback needs linear buffers"), std::string::npos) << msg;
  }
  {  // argument count differs from the kernel's parameters
    PlanBuilder b;
    const int x = b.buffer("x", DType::F32, {8}, Layout::Linear, BufferKind::Input);
    const int y = b.buffer("y", DType::F32, {8}, Layout::Linear, BufferKind::Output);
    b.call(b.kernel("add", kAddSource, "add_f32"), {y}, {x}, {8, 0, 0});
    const std::string msg = load_error(b.p);
    EXPECT_NE(msg.find("takes 3 arguments, the call binds 2"), std::string::npos) << msg;
  }
  {  // a kernel that does not compile names its entry and quotes the log
    PlanBuilder b;
    const int x = b.buffer("x", DType::F32, {8}, Layout::Linear, BufferKind::Input);
    const int y = b.buffer("y", DType::F32, {8}, Layout::Linear, BufferKind::Output);
    b.call(b.kernel("bad", "__kernel void bad_entry(__global float* y, __global const float* x) { y[0] = x[; }",
                    "bad_entry"),
           {y}, {x}, {8, 0, 0});
    const std::string msg = load_error(b.p);
    EXPECT_NE(msg.find("kernel 'bad_entry'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("build log"), std::string::npos) << msg;
  }
  {  // an input stored as an image
    PlanBuilder b;
    const int x = b.buffer("x_img", DType::F16, kShape, Layout::ImageRGBA, BufferKind::Input);
    const int y = b.buffer("y", DType::F32, kShape, Layout::Linear, BufferKind::Output);
    b.call(b.kernel("from_img", kImageSource, "from_img", kImageOptions), {y}, {x}, {10, 3, 0});
    EXPECT_NE(load_error(b.p).find("'x_img'"), std::string::npos);
  }
  {  // a bad device selector
    Options o;
    o.device = "no-such-device-xyz";
    auto be = create("opencl", o);
    const std::string msg = error_of([&] { be->load(image_chain_plan(DType::F16, false)); });
    EXPECT_NE(msg.find("no device matches"), std::string::npos) << msg;
  }
  {  // run before load, wrong input shape
    auto be = create("opencl");
    Tensor x(DType::F32, kShape), y(DType::F32, kShape);
    EXPECT_NE(error_of([&] { be->run({&x}, {&y}); }).find("before load"), std::string::npos);
    be->load(image_chain_plan(DType::F16, false));
    Tensor wrong(DType::F32, {1, 6, 3, 4});
    EXPECT_NE(error_of([&] { be->run({&wrong}, {&y}); }).find("input 'x' must be f32[1,6,3,5]"), std::string::npos);
  }
}

// The caps query (backend.h): the device's image limits and the host-fallback rule answer before
// load, naming the buffer or call; Session refuses with that answer and nothing is loaded.
TEST_F(OpenCLPlan, CapsQueryAnswersBeforeLoad) {
  auto be = create("opencl");
  const Caps caps = be->caps();
  EXPECT_EQ(caps.device, dev_.platform_name + " / " + dev_.name);
  EXPECT_EQ(std::count(caps.layouts.begin(), caps.layouts.end(), Layout::ImageRGBA), 1);
  EXPECT_TRUE(caps.per_call_times);
  EXPECT_TRUE(supports(*be, image_chain_plan(DType::F16, true)));
  if (dev_.image_support) {
    PlanBuilder b;
    const Shape big{1, 4, 1, dev_.image2d_max_width + 1};
    const int x = b.buffer("x", DType::F32, big, Layout::Linear, BufferKind::Input);
    const int img = b.buffer("too_big_img", DType::F16, big, Layout::ImageRGBA, BufferKind::Intermediate);
    b.call(b.kernel("to_img", kImageSource, "to_img", kImageOptions), {img}, {x}, {1, 1, 0});
    const Support s = supports(*be, b.p);
    EXPECT_FALSE(s);
    EXPECT_NE(s.why.find("image buffer 'too_big_img'"), std::string::npos) << s.why;
    EXPECT_NE(s.why.find("CL_DEVICE_IMAGE2D_MAX_WIDTH"), std::string::npos) << s.why;
    EXPECT_FALSE(be->supports_buffer(b.p, img));
    EXPECT_TRUE(be->supports_buffer(b.p, x));
    EXPECT_EQ(opencl_load_info(*be), nullptr) << "asking loads nothing";
    EXPECT_EQ(error_of([&] { runtime::Session session(b.p); }), "opencl backend: " + s.why);
    // Stored as buffers of the image texel layout (cl_image_storage = buffer), no limit applies.
    b.p.meta.set("cl_image_storage", std::string("buffer"));
    EXPECT_TRUE(supports(*be, b.p)) << supports(*be, b.p).why;
  }
  {  // a host-fallback call touching an image: the call is named
    plan::Plan p = image_chain_plan(DType::F16, false);
    plan::Kernel relu;
    relu.name = "relu_host";
    relu.op = OpKind::Relu;
    p.kernels.push_back(relu);
    p.calls[2].kernel = int(p.kernels.size()) - 1;
    p.calls[2].label = "the_relu_node";
    EXPECT_FALSE(be->supports_call(p, 2));
    EXPECT_TRUE(be->supports_call(p, 0));
    const Support s = supports(*be, p);
    EXPECT_NE(s.why.find("call 2 (the_relu_node)"), std::string::npos) << s.why;
    EXPECT_NE(s.why.find("host fallback needs linear buffers"), std::string::npos) << s.why;
  }
}

TEST_F(OpenCLPlan, DeviceOptionSelects) {
  Options o;
  o.device = std::to_string(dev_.global_index);
  o.threads = 3;  // ignored
  auto be = create("opencl", o);
  PlanBuilder b;
  const int a = b.buffer("a", DType::F32, {4}, Layout::Linear, BufferKind::Input);
  const int y = b.buffer("y", DType::F32, {4}, Layout::Linear, BufferKind::Output);
  b.call(b.kernel("add", kAddSource, "add_f32"), {y}, {a, a}, {4, 0, 0});
  be->load(b.p);
  EXPECT_EQ(opencl_load_info(*be)->device, dev_.platform_name + " / " + dev_.name);
}

}  // namespace
}  // namespace opv::backend
