// Reference backend: a hand-built plan (Input -> Conv+Relu with constants -> Mul by a
// per-channel constant -> Output) run end to end against a direct computation; load-time
// checks (target, layouts, ids), error prefixes, profiling and input rebinding.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/reference/reference_backend.h"
#include "core/error.h"
#include "kernels/reference.h"
#include "plan/plan.h"
#include "test_util.h"

namespace opv {
namespace {

struct Fixture {
  plan::Plan plan;
  Tensor w, b, s;
};

plan::Buffer buffer(const std::string& name, DType dt, const Shape& shape, plan::BufferKind kind) {
  plan::Buffer b;
  b.name = name;
  b.dtype = dt;
  b.shape = shape;
  b.kind = kind;
  return b;
}

// x[1,2,5,5] --conv 3x3 pad (1,1,1,1) +bias +relu--> t[1,3,5,5] --mul s[3,1,1]--> y[1,3,5,5]
Fixture make_plan() {
  Fixture f;
  f.w = test::random_f32({3, 2, 3, 3}, 1);
  f.b = test::random_f32({3}, 2);
  f.s = test::random_f32({3, 1, 1}, 3, 0.5f, 2.f);
  plan::Plan& p = f.plan;
  p.target = "reference";
  const int x = p.add_buffer(buffer("x", DType::F32, {1, 2, 5, 5}, plan::BufferKind::Input));
  const int w = p.add_constant("w", DType::F32, f.w.shape(), plan::Layout::Linear, f.w.raw(), f.w.nbytes());
  const int b = p.add_constant("b", DType::F32, f.b.shape(), plan::Layout::Linear, f.b.raw(), f.b.nbytes());
  const int s = p.add_constant("s", DType::F32, f.s.shape(), plan::Layout::Linear, f.s.raw(), f.s.nbytes());
  const int t = p.add_buffer(buffer("t", DType::F32, {1, 3, 5, 5}, plan::BufferKind::Intermediate));
  const int y = p.add_buffer(buffer("y", DType::F32, {1, 3, 5, 5}, plan::BufferKind::Output));
  plan::Kernel conv;
  conv.name = "conv2d_3x3_s1_f32_ref";
  conv.op = OpKind::Conv;
  conv.attrs.set("group", int64_t(1));
  conv.attrs.set("strides", std::vector<int64_t>{1, 1});
  conv.attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  conv.attrs.set("dilations", std::vector<int64_t>{1, 1});
  PostOp relu;
  relu.op = OpKind::Relu;
  conv.post_ops.push_back(relu);
  plan::Kernel mul;
  mul.name = "mul_f32_ref";
  mul.op = OpKind::Mul;
  const int kc = p.add_kernel(conv), km = p.add_kernel(mul);
  plan::Call c0;
  c0.kernel = kc;
  c0.inputs = {x, w, b};
  c0.outputs = {t};
  c0.label = "conv0";
  plan::Call c1;
  c1.kernel = km;
  c1.inputs = {t, s};
  c1.outputs = {y};
  c1.label = "mul1";
  p.calls = {c0, c1};
  p.inputs = {x};
  p.outputs = {y};
  return f;
}

std::vector<float> expected(const Fixture& f, const Tensor& x) {
  std::vector<float> out;
  for (int m = 0; m < 3; ++m)
    for (int oh = 0; oh < 5; ++oh)
      for (int ow = 0; ow < 5; ++ow) {
        double acc = f.b.data<float>()[m];
        for (int c = 0; c < 2; ++c)
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
              int ih = oh + i - 1, iw = ow + j - 1;
              if (ih < 0 || ih >= 5 || iw < 0 || iw >= 5) continue;
              acc += double(f.w.data<float>()[((m * 2 + c) * 3 + i) * 3 + j]) * x.data<float>()[(c * 5 + ih) * 5 + iw];
            }
        out.push_back(float(float(std::max(acc, 0.0)) * f.s.data<float>()[m]));
      }
  return out;
}

TEST(ReferenceBackend, RunsHandBuiltPlan) {
  Fixture f = make_plan();
  plan::validate(f.plan);
  auto be = backend::make_reference_backend({});
  EXPECT_EQ(be->name(), "reference");
  EXPECT_EQ(be->tolerance().rel_l2, 1e-5);
  be->load(f.plan);
  be->set_profiling(true);
  for (uint64_t seed : {10u, 11u}) {  // second run rebinds a different input
    Tensor x = test::random_f32({1, 2, 5, 5}, seed);
    Tensor y(DType::F32, {1, 3, 5, 5});
    be->run({&x}, {&y});
    std::vector<float> want = expected(f, x);
    int negatives_clamped = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(y.data<float>()[i], want[i], 1e-6) << i;
      negatives_clamped += want[i] == 0.f;
    }
    EXPECT_GT(negatives_clamped, 0) << "the Relu post-op should have clamped something";
  }
  std::vector<double> times = be->call_times_ms();
  ASSERT_EQ(times.size(), 2u);
  for (double t : times) EXPECT_GE(t, 0.0);
  // Repeated runs are bit-identical.
  Tensor x = test::random_f32({1, 2, 5, 5}, 12);
  Tensor y1(DType::F32, {1, 3, 5, 5}), y2(DType::F32, {1, 3, 5, 5});
  be->run({&x}, {&y1});
  be->run({&x}, {&y2});
  EXPECT_TRUE(bit_equal(y1, y2));
}

TEST(ReferenceBackend, RejectsForeignPlans) {
  Fixture f = make_plan();
  auto be = backend::make_reference_backend({});
  f.plan.target = "cpu";
  EXPECT_THROW(be->load(f.plan), Error);
  f = make_plan();
  f.plan.buffers[4].layout = plan::Layout::NHWC;
  try {
    be->load(f.plan);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'t'"), std::string::npos) << e.what();
  }
  f = make_plan();
  f.plan.calls[1].kernel = 7;
  EXPECT_THROW(be->load(f.plan), Error);
  Tensor x = test::random_f32({1, 2, 5, 5}, 1);
  Tensor y(DType::F32, {1, 3, 5, 5});
  auto fresh = backend::make_reference_backend({});
  EXPECT_THROW(fresh->run({&x}, {&y}), Error);  // run before load
}

TEST(ReferenceBackend, CallErrorsNameTheCall) {
  Fixture f = make_plan();
  f.plan.kernels[0].attrs.set("pads", std::vector<int64_t>{0, 0, 0, 0});  // output shape no longer fits
  auto be = backend::make_reference_backend({});
  be->load(f.plan);
  Tensor x = test::random_f32({1, 2, 5, 5}, 1);
  Tensor y(DType::F32, {1, 3, 5, 5});
  try {
    be->run({&x}, {&y});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("call 0 (conv0): Conv", 0), 0u) << msg;
  }
  Tensor wrong(DType::F32, {1, 2, 5, 4});
  be = backend::make_reference_backend({});
  be->load(make_plan().plan);
  EXPECT_THROW(be->run({&wrong}, {&y}), Error);
}

// The reference GELU, x Phi(x), in double: accurate in the far negative tail too, where the
// form 0.5 x (1 + erf(x / sqrt 2)) (up to session 31) returned 0 (erf(x / sqrt 2) rounds to -1
// below x ~ -8.3) and lost digits before that.
TEST(ReferenceKernels, GeluKeepsItsNegativeTail) {
  const Attrs attrs;
  const std::vector<PostOp> none;
  Tensor x(DType::F64, {4}), y(DType::F64, {4});
  const double xs[4] = {-12.0, -9.0, -5.0, 1.5};
  for (int i = 0; i < 4; ++i) x.data<double>()[i] = xs[i];
  ref::run({OpKind::Gelu, attrs, none}, {&x}, {&y});
  for (int i = 0; i < 4; ++i) {
    const double want = xs[i] * 0.5 * std::erfc(-xs[i] / std::sqrt(2.0));
    EXPECT_NE(y.data<double>()[i], 0.0) << "x = " << xs[i];
    EXPECT_NEAR(y.data<double>()[i], want, 1e-12 * std::fabs(want)) << "x = " << xs[i];
  }
}

}  // namespace
}  // namespace opv
