// runtime::Session is the one input check (issue 14, deliverable 5): a wrong input name, dtype or
// shape gets one message from every backend (reference, cpu, opencl where a device exists),
// whether it reaches Session::run or a backend's run() directly (backend::check_bound); and
// Session::run reuses its output tensors across runs while copies the caller keeps stay intact.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/opencl/cl_runtime.h"
#include "core/error.h"
#include "runtime/session.h"
#include "test_util.h"

namespace opv {
namespace {

const Shape kShape{1, 2, 3, 4};

using opv::test::error_of;

bool have_opencl_device() {
  try {
    return !backend::cl::list_devices().empty();
  } catch (const Error&) {
    return false;
  }
}

std::vector<std::string> backends_here() {
  std::vector<std::string> r{"reference", "cpu"};
  if (have_opencl_device()) r.push_back("opencl");
  return r;
}

// y = Relu(x) for `target`; the kernel has no OpenCL source, so the opencl backend runs it on the
// host (cl_abi.h) and every backend can load the same plan.
plan::Plan relu_plan(const std::string& target) {
  plan::Plan p;
  p.target = target;
  plan::Buffer x{}, y{};
  x.name = "x";
  x.dtype = DType::F32;
  x.shape = kShape;
  x.kind = plan::BufferKind::Input;
  y = x;
  y.name = "y";
  y.kind = plan::BufferKind::Output;
  p.inputs.push_back(p.add_buffer(x));
  p.outputs.push_back(p.add_buffer(y));
  plan::Kernel k;
  k.name = "relu";
  k.op = OpKind::Relu;
  plan::Call c;
  c.kernel = p.add_kernel(k);
  c.inputs = {p.inputs[0]};
  c.outputs = {p.outputs[0]};
  c.label = "the_relu";
  p.calls.push_back(c);
  plan::validate(p);
  return p;
}

float relu(float v) { return v > 0 ? v : 0; }

TEST(SessionInputs, OneMessagePerMistakeOnEveryBackend) {
  const Tensor good = test::random_f32(kShape, 1);
  const Tensor wrong_dtype(DType::I32, kShape);
  const Tensor wrong_shape(DType::F32, {1, 2, 3, 5});
  const std::vector<std::pair<std::string, std::function<runtime::NamedTensors()>>> cases = {
      {"unknown input 'z' (model inputs: x:f32[1,2,3,4])", [&] { return runtime::NamedTensors{{"x", good}, {"z", good}}; }},
      {"missing input 'x' (model inputs: x:f32[1,2,3,4])", [&] { return runtime::NamedTensors{}; }},
      {"input 'x' must be f32[1,2,3,4], got i32[1,2,3,4] (the dtype differs)",
       [&] { return runtime::NamedTensors{{"x", wrong_dtype}}; }},
      {"input 'x' must be f32[1,2,3,4], got f32[1,2,3,5] (the shape differs)",
       [&] { return runtime::NamedTensors{{"x", wrong_shape}}; }},
  };
  for (const std::string& be : backends_here()) {
    SCOPED_TRACE(be);
    runtime::Session s(relu_plan(be));
    for (const auto& [want, inputs] : cases) EXPECT_EQ(error_of([&, &inputs = inputs] { s.run(inputs()); }), want);
    // A backend called directly asserts the same precondition with the same message.
    Tensor y(DType::F32, kShape), y_bad(DType::F16, kShape);
    EXPECT_EQ(error_of([&] { s.backend().run({&wrong_shape}, {&y}); }),
              "input 'x' must be f32[1,2,3,4], got f32[1,2,3,5] (the shape differs)");
    EXPECT_EQ(error_of([&] { s.backend().run({&good}, {&y_bad}); }),
              "output 'y' must be f32[1,2,3,4], got f16[1,2,3,4] (the dtype differs)");
    EXPECT_EQ(error_of([&] { s.backend().run({}, {&y}); }), "0 inputs given, the plan has 1");
    // And the session still runs after the refusals.
    EXPECT_EQ(error_of([&] { s.run({{"x", good}}); }), "");
  }
}

TEST(SessionOutputs, ReusedAcrossRunsWhileKeptCopiesStay) {
  const Tensor a = test::random_f32(kShape, 2), b = test::random_f32(kShape, 3);
  for (const std::string& be : backends_here()) {
    SCOPED_TRACE(be);
    runtime::Session s(relu_plan(be));
    const runtime::NamedTensors& first = s.run({{"x", a}});
    const void* storage = first[0].second.raw();
    const runtime::NamedTensors kept = first;  // the copying form: survives later runs
    const runtime::NamedTensors& second = s.run({{"x", b}});
    EXPECT_EQ(&second, &first) << "run() returns the session's own outputs";
    EXPECT_EQ(second[0].second.raw(), storage) << "the output tensor is not reallocated";
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0].first, "y");
    for (int64_t i = 0; i < a.numel(); ++i) {
      EXPECT_EQ(kept[0].second.data<float>()[i], relu(a.data<float>()[i])) << i;
      EXPECT_EQ(second[0].second.data<float>()[i], relu(b.data<float>()[i])) << i;
    }
  }
}

// Session::run_into (the Python binding's zero-copy run): inputs and outputs are Tensor views of
// the caller's memory, read and written in place; outputs not named go to the session's own
// tensors; the caller's mistakes are opv::InvalidArgument with the same messages as run().
TEST(SessionRunInto, WritesTheCallersMemoryInPlace) {
  const Tensor a = test::random_f32(kShape, 4);
  std::vector<float> in_mem(size_t(a.numel())), out_mem(size_t(a.numel()), -1.0f);
  std::memcpy(in_mem.data(), a.raw(), a.nbytes());
  for (const std::string& be : backends_here()) {
    SCOPED_TRACE(be);
    runtime::Session s(relu_plan(be));
    runtime::NamedTensors in;
    in.emplace_back("x", Tensor::view(DType::F32, kShape, in_mem.data()));  // moved: still a view
    EXPECT_EQ(in[0].second.raw(), in_mem.data());
    Tensor y = Tensor::view(DType::F32, kShape, out_mem.data());
    const runtime::NamedOutputs out{{"y", &y}};
    s.run_into(in, out);
    for (size_t i = 0; i < out_mem.size(); ++i) EXPECT_EQ(out_mem[i], relu(in_mem[i])) << i;
    // No output named: the session's own tensor gets it.
    s.run_into(in, {});
    EXPECT_EQ(s.run(in)[0].second.data<float>()[0], relu(in_mem[0]));

    std::vector<float> small(4);
    Tensor y_small = Tensor::view(DType::F32, {1, 4}, small.data());
    const runtime::NamedOutputs wrong_shape{{"y", &y_small}}, unknown{{"z", &y}}, twice{{"y", &y}, {"y", &y}};
    EXPECT_THROW(s.run_into(in, wrong_shape), InvalidArgument);
    EXPECT_EQ(error_of([&] { s.run_into(in, wrong_shape); }),
              "output 'y' must be f32[1,2,3,4], got f32[1,4] (the shape differs)");
    EXPECT_EQ(error_of([&] { s.run_into(in, unknown); }), "unknown output 'z' (model outputs: y:f32[1,2,3,4])");
    EXPECT_EQ(error_of([&] { s.run_into(in, twice); }), "output 'y' is given twice");
    EXPECT_THROW(s.run_into({}, out), InvalidArgument);
  }
}

TEST(TensorView, BorrowsUntilCopied) {
  float mem[6] = {1, 2, 3, 4, 5, 6};
  {
    Tensor v = Tensor::view(DType::F32, {2, 3}, mem);
    EXPECT_EQ(v.raw(), mem);
    EXPECT_EQ(v.numel(), 6);
    Tensor copy = v;  // owns its bytes
    EXPECT_NE(copy.raw(), mem);
    EXPECT_TRUE(bit_equal(copy, v));
    Tensor moved = std::move(v);  // still a view, freed by nobody
    EXPECT_EQ(moved.raw(), mem);
  }
  EXPECT_EQ(mem[5], 6.0f);
  EXPECT_THROW(Tensor::view(DType::F32, {-1}, mem), Error);
  EXPECT_THROW(Tensor::view(DType::F32, {2}, nullptr), Error);
}

}  // namespace
}  // namespace opv
