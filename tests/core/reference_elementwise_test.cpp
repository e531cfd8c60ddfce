// Reference element-wise kernels: unary closed forms, numpy broadcasting, integer semantics
// (ONNX Div/Mod, wrap-free shape arithmetic), Bool ops, Where, Cast, F16 and post-ops.
#include <cmath>
#include <limits>

#include "core/error.h"
#include "reference_test_util.h"
#include "test_util.h"

namespace opv {
namespace {

using reftest::boolean;
using reftest::expect_near;
using reftest::f32;
using reftest::i64;
using reftest::ints;
using reftest::run1;
using reftest::values;

Attrs none() { return {}; }

TEST(ReferenceUnary, KnownValues) {
  Tensor x = f32({5}, {-3.f, -1.f, 0.f, 1.f, 3.f});
  // Gelu(1) = Phi(1) = 0.8413447460685429; Gelu(-1) = -(1 - Phi(1)).
  expect_near(run1(OpKind::Gelu, none(), {&x}, DType::F32, {5}),
              {-3 * 0.0013498980316301, -0.15865525393145707, 0, 0.8413447460685429, 3 * 0.9986501019683699});
  // GeluTanh(1) = 0.5*(1+tanh(sqrt(2/pi)*1.044715)) = 0.8411919906082768.
  expect_near(run1(OpKind::GeluTanh, none(), {&x}, DType::F32, {5}),
              {-0.0036373920817729, -0.15880800939172324, 0, 0.8411919906082768, 2.9963626079182271});
  expect_near(run1(OpKind::HardSwish, none(), {&x}, DType::F32, {5}), {0, -1.0 / 3, 0, 2.0 / 3, 3});
  expect_near(run1(OpKind::Relu, none(), {&x}, DType::F32, {5}), {0, 0, 0, 1, 3});
  expect_near(run1(OpKind::Softplus, none(), {&x}, DType::F32, {5}),
              {std::log1p(std::exp(-3.0)), std::log1p(std::exp(-1.0)), std::log(2.0), 1 + std::log1p(std::exp(-1.0)),
               3 + std::log1p(std::exp(-3.0))});
  Attrs leaky;
  leaky.set("alpha", 0.1);
  expect_near(run1(OpKind::LeakyRelu, leaky, {&x}, DType::F32, {5}), {-0.3, -0.1, 0, 1, 3});
  Attrs elu;
  elu.set("alpha", 2.0);
  expect_near(run1(OpKind::Elu, elu, {&x}, DType::F32, {5}), {2 * (std::exp(-3.0) - 1), 2 * (std::exp(-1.0) - 1), 0, 1, 3});
  Attrs hs;
  hs.set("alpha", 0.25);
  hs.set("beta", 0.5);
  expect_near(run1(OpKind::HardSigmoid, hs, {&x}, DType::F32, {5}), {0, 0.25, 0.5, 0.75, 1});
  Attrs clip;
  clip.set("min", -1.5);
  clip.set("max", 2.0);
  expect_near(run1(OpKind::Clip, clip, {&x}, DType::F32, {5}), {-1.5, -1, 0, 1, 2});
  expect_near(run1(OpKind::Sigmoid, none(), {&x}, DType::F32, {5}),
              {1 / (1 + std::exp(3.0)), 1 / (1 + std::exp(1.0)), 0.5, 1 / (1 + std::exp(-1.0)), 1 / (1 + std::exp(-3.0))});
  Tensor p = f32({4}, {0.25f, 1.f, 4.f, 2.5f});
  expect_near(run1(OpKind::Sqrt, none(), {&p}, DType::F32, {4}), {0.5, 1, 2, std::sqrt(2.5)});
  expect_near(run1(OpKind::Reciprocal, none(), {&p}, DType::F32, {4}), {4, 1, 0.25, 0.4});
  expect_near(run1(OpKind::Log, none(), {&p}, DType::F32, {4}), {std::log(0.25), 0, std::log(4.0), std::log(2.5)});
  Tensor q = f32({4}, {-2.5f, -0.5f, 0.5f, 2.5f});
  expect_near(run1(OpKind::Floor, none(), {&q}, DType::F32, {4}), {-3, -1, 0, 2});
  expect_near(run1(OpKind::Ceil, none(), {&q}, DType::F32, {4}), {-2, -0.0, 1, 3});
  expect_near(run1(OpKind::Abs, none(), {&q}, DType::F32, {4}), {2.5, 0.5, 0.5, 2.5});
  expect_near(run1(OpKind::Neg, none(), {&q}, DType::F32, {4}), {2.5, 0.5, -0.5, -2.5});
}

TEST(ReferenceUnary, IntegerAndBool) {
  Tensor x = i64({4}, {-5, -1, 0, 7});
  EXPECT_EQ(ints(run1(OpKind::Neg, none(), {&x}, DType::I64, {4})), (std::vector<int64_t>{5, 1, 0, -7}));
  EXPECT_EQ(ints(run1(OpKind::Abs, none(), {&x}, DType::I64, {4})), (std::vector<int64_t>{5, 1, 0, 7}));
  EXPECT_EQ(ints(run1(OpKind::Relu, none(), {&x}, DType::I64, {4})), (std::vector<int64_t>{0, 0, 0, 7}));
  // Integer Clip keeps its bounds exact (beyond float precision).
  Tensor big = i64({3}, {-5, 16777217, 16777219});
  Attrs clip;
  clip.set("min", 0.0);
  clip.set("max", 16777218.0);
  EXPECT_EQ(ints(run1(OpKind::Clip, clip, {&big}, DType::I64, {3})), (std::vector<int64_t>{0, 16777217, 16777218}));
  // Bounds beyond int64 saturate (casting them is undefined behaviour, which UBSan reports).
  Tensor ends = i64({2}, {INT64_MIN, INT64_MAX});
  Attrs wide;
  wide.set("min", 1e300);
  wide.set("max", -1e300);
  EXPECT_EQ(ints(run1(OpKind::Clip, wide, {&ends}, DType::I64, {2})), (std::vector<int64_t>{INT64_MIN, INT64_MIN}));
  Attrs huge_min;
  huge_min.set("min", 1e300);
  EXPECT_EQ(ints(run1(OpKind::Clip, huge_min, {&ends}, DType::I64, {2})), (std::vector<int64_t>{INT64_MAX, INT64_MAX}));
  Tensor b = boolean({3}, {1, 0, 1});
  EXPECT_EQ(ints(run1(OpKind::Not, none(), {&b}, DType::Bool, {3})), (std::vector<int64_t>{0, 1, 0}));
  // Float-only ops on integers are an error naming the op.
  try {
    run1(OpKind::Exp, none(), {&x}, DType::I64, {4});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Exp"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("i64"), std::string::npos) << e.what();
  }
}

TEST(ReferenceBinary, BroadcastRankMismatch) {
  Tensor a = test::random_f32({2, 3, 4}, 1);
  Tensor b = test::random_f32({3, 1}, 2);
  Tensor y = run1(OpKind::Sub, none(), {&a, &b}, DType::F32, {2, 3, 4});
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        want.push_back(double(a.data<float>()[(i * 3 + j) * 4 + k] - b.data<float>()[j]));
  expect_near(y, want, 0, 0);
  // Both operands broadcast: [4,1] x [1,3] -> [4,3]; and a scalar.
  Tensor c = f32({4, 1}, {1, 2, 3, 4});
  Tensor d = f32({1, 3}, {10, 20, 30});
  expect_near(run1(OpKind::Mul, none(), {&c, &d}, DType::F32, {4, 3}),
              {10, 20, 30, 20, 40, 60, 30, 60, 90, 40, 80, 120}, 0, 0);
  Tensor s = Tensor::scalar_f32(2.f);
  expect_near(run1(OpKind::Pow, none(), {&c, &s}, DType::F32, {4, 1}), {1, 4, 9, 16}, 0, 0);
  expect_near(run1(OpKind::Max, none(), {&s, &c}, DType::F32, {4, 1}), {2, 2, 3, 4}, 0, 0);
  expect_near(run1(OpKind::Div, none(), {&c, &s}, DType::F32, {4, 1}), {0.5, 1, 1.5, 2}, 0, 0);
  // Output shape that is not the broadcast shape is rejected.
  EXPECT_THROW(run1(OpKind::Add, none(), {&c, &d}, DType::F32, {4, 4}), Error);
  Tensor e = f32({3}, {1, 2, 3});
  EXPECT_THROW(run1(OpKind::Add, none(), {&c, &e}, DType::F32, {4, 4}), Error);
}

TEST(ReferenceBinary, IntegerSemantics) {
  Tensor a = i64({6}, {-7, 7, -7, 7, 6, 0});
  Tensor b = i64({6}, {2, 2, -2, -2, 3, 5});
  EXPECT_EQ(ints(run1(OpKind::Div, none(), {&a, &b}, DType::I64, {6})), (std::vector<int64_t>{-3, 3, 3, -3, 2, 0}));
  // Mod with fmod=0 takes the sign of the divisor, fmod=1 that of the dividend.
  EXPECT_EQ(ints(run1(OpKind::Mod, none(), {&a, &b}, DType::I64, {6})), (std::vector<int64_t>{1, 1, -1, -1, 0, 0}));
  Attrs fm;
  fm.set("fmod", int64_t(1));
  EXPECT_EQ(ints(run1(OpKind::Mod, fm, {&a, &b}, DType::I64, {6})), (std::vector<int64_t>{-1, 1, -1, 1, 0, 0}));
  EXPECT_EQ(ints(run1(OpKind::Pow, none(), {&a, &b}, DType::I64, {6})), (std::vector<int64_t>{49, 49, 0, 0, 216, 0}));
  // Shape arithmetic: values beyond 2^53 stay exact (Slice ends are often INT64_MAX).
  const int64_t big = std::numeric_limits<int64_t>::max();
  Tensor c = i64({3}, {big, big - 1, 9007199254740993});
  Tensor one = i64({}, {1});
  EXPECT_EQ(ints(run1(OpKind::Sub, none(), {&c, &one}, DType::I64, {3})),
            (std::vector<int64_t>{big - 1, big - 2, 9007199254740992}));
  Tensor dims = i64({4}, {1, 24, 128, 256});
  Tensor two = i64({1}, {2});
  EXPECT_EQ(ints(run1(OpKind::Mul, none(), {&dims, &two}, DType::I64, {4})), (std::vector<int64_t>{2, 48, 256, 512}));
  EXPECT_THROW(run1(OpKind::Min, none(), {&c, &dims}, DType::I64, {4}), Error);  // [3] vs [4]
  EXPECT_EQ(ints(run1(OpKind::Min, none(), {&c, &one}, DType::I64, {3})), (std::vector<int64_t>{1, 1, 1}));
}

TEST(ReferenceBinary, IntegerErrors) {
  Tensor a = i64({2}, {1, 2});
  Tensor z = i64({2}, {1, 0});
  EXPECT_THROW(run1(OpKind::Div, none(), {&a, &z}, DType::I64, {2}), Error);
  EXPECT_THROW(run1(OpKind::Mod, none(), {&a, &z}, DType::I64, {2}), Error);
  Tensor b = boolean({2}, {1, 0});
  try {
    run1(OpKind::Add, none(), {&b, &b}, DType::Bool, {2});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Add"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bool"), std::string::npos) << e.what();
  }
}

TEST(ReferenceBinary, OtherIntegerWidths) {
  Tensor a(DType::I32, {3}), b(DType::I32, {3});
  for (int i = 0; i < 3; ++i) {
    a.data<int32_t>()[i] = 10 * (i + 1);
    b.data<int32_t>()[i] = -3;
  }
  EXPECT_EQ(ints(run1(OpKind::Div, none(), {&a, &b}, DType::I32, {3})), (std::vector<int64_t>{-3, -6, -10}));
  Tensor u(DType::U8, {2}), v(DType::U8, {2});
  u.data<uint8_t>()[0] = 200;
  u.data<uint8_t>()[1] = 3;
  v.data<uint8_t>()[0] = 100;
  v.data<uint8_t>()[1] = 4;
  EXPECT_EQ(ints(run1(OpKind::Add, none(), {&u, &v}, DType::U8, {2})), (std::vector<int64_t>{44, 7}));  // wraps mod 256
  Tensor s(DType::I8, {2});
  s.data<int8_t>()[0] = -100;
  s.data<int8_t>()[1] = 5;
  EXPECT_EQ(ints(run1(OpKind::Max, none(), {&s, &s}, DType::I8, {2})), (std::vector<int64_t>{-100, 5}));
}

TEST(ReferenceBinary, ComparisonsAndLogic) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4});
  Tensor b = f32({2}, {2, 3});
  EXPECT_EQ(ints(run1(OpKind::Less, none(), {&a, &b}, DType::Bool, {2, 2})), (std::vector<int64_t>{1, 1, 0, 0}));
  EXPECT_EQ(ints(run1(OpKind::Equal, none(), {&a, &b}, DType::Bool, {2, 2})), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(ints(run1(OpKind::GreaterOrEqual, none(), {&a, &b}, DType::Bool, {2, 2})),
            (std::vector<int64_t>{0, 0, 1, 1}));
  Tensor c = i64({3}, {-1, 5, 7});
  Tensor d = i64({}, {5});
  EXPECT_EQ(ints(run1(OpKind::Equal, none(), {&c, &d}, DType::Bool, {3})), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(ints(run1(OpKind::Greater, none(), {&c, &d}, DType::Bool, {3})), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(ints(run1(OpKind::LessOrEqual, none(), {&c, &d}, DType::Bool, {3})), (std::vector<int64_t>{1, 1, 0}));
  Tensor p = boolean({4}, {0, 0, 1, 1});
  Tensor q = boolean({4}, {0, 1, 0, 1});
  EXPECT_EQ(ints(run1(OpKind::And, none(), {&p, &q}, DType::Bool, {4})), (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(ints(run1(OpKind::Or, none(), {&p, &q}, DType::Bool, {4})), (std::vector<int64_t>{0, 1, 1, 1}));
  Tensor fl = f32({4}, {0, 0, 1, 1});
  EXPECT_THROW(run1(OpKind::And, none(), {&fl, &q}, DType::Bool, {4}), Error);
  EXPECT_THROW(run1(OpKind::Less, none(), {&a, &b}, DType::F32, {2, 2}), Error);
}

TEST(ReferenceWhere, BroadcastsAllThree) {
  Tensor cond = boolean({2, 1}, {1, 0});
  Tensor x = i64({3}, {1, 2, 3});
  Tensor y = i64({2, 3}, {10, 20, 30, 40, 50, 60});
  EXPECT_EQ(ints(run1(OpKind::Where, none(), {&cond, &x, &y}, DType::I64, {2, 3})),
            (std::vector<int64_t>{1, 2, 3, 40, 50, 60}));
  Tensor c2 = boolean({3}, {0, 1, 0});
  Tensor xf = f32({2, 1}, {-1, -2});
  Tensor yf = Tensor::scalar_f32(9.f);
  expect_near(run1(OpKind::Where, none(), {&c2, &xf, &yf}, DType::F32, {2, 3}), {9, -1, 9, 9, -2, 9}, 0, 0);
  EXPECT_THROW(run1(OpKind::Where, none(), {&xf, &xf, &yf}, DType::F32, {2, 1}), Error);  // cond not bool
}

TEST(ReferenceCast, OnnxConversions) {
  Tensor x = f32({6}, {-2.7f, -0.5f, 0.f, 0.5f, 2.7f, 300.f});
  Attrs to;
  to.set("to", int64_t(DType::I64));
  EXPECT_EQ(ints(run1(OpKind::Cast, to, {&x}, DType::I64, {6})), (std::vector<int64_t>{-2, 0, 0, 0, 2, 300}));
  to.set("to", int64_t(DType::Bool));
  EXPECT_EQ(ints(run1(OpKind::Cast, to, {&x}, DType::Bool, {6})), (std::vector<int64_t>{1, 1, 0, 1, 1, 1}));
  to.set("to", int64_t(DType::F16));
  Tensor h = run1(OpKind::Cast, to, {&x}, DType::F16, {6});
  for (int i = 0; i < 6; ++i) EXPECT_EQ(h.data<uint16_t>()[i], float_to_half(x.data<float>()[i]));
  Tensor n = i64({3}, {-1, 256, 7});
  to.set("to", int64_t(DType::F32));
  expect_near(run1(OpKind::Cast, to, {&n}, DType::F32, {3}), {-1, 256, 7}, 0, 0);
  to.set("to", int64_t(DType::I32));
  EXPECT_EQ(ints(run1(OpKind::Cast, to, {&n}, DType::I32, {3})), (std::vector<int64_t>{-1, 256, 7}));
  // `to` must agree with the output dtype.
  EXPECT_THROW(run1(OpKind::Cast, to, {&n}, DType::F32, {3}), Error);
}

TEST(ReferenceF16, ComputesInFloatRoundsOnce) {
  Tensor a32 = test::random_f32({3, 5}, 7, -4, 4);
  Tensor b32 = test::random_f32({5}, 8, -4, 4);
  Tensor a = a32.cast(DType::F16), b = b32.cast(DType::F16);
  Tensor y = run1(OpKind::Mul, none(), {&a, &b}, DType::F16, {3, 5});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      float want = half_to_float(a.data<uint16_t>()[i * 5 + j]) * half_to_float(b.data<uint16_t>()[j]);
      EXPECT_EQ(y.data<uint16_t>()[i * 5 + j], float_to_half(want));
    }
  Tensor g = run1(OpKind::Gelu, none(), {&a}, DType::F16, {3, 5});
  for (int i = 0; i < 15; ++i) {
    double v = half_to_float(a.data<uint16_t>()[i]);
    EXPECT_EQ(g.data<uint16_t>()[i], float_to_half(float(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))))));
  }
}

TEST(ReferencePostOps, ChainInOrder) {
  Tensor a = test::random_f32({2, 3, 2, 2}, 11);
  Tensor bias = f32({3, 1, 1}, {0.5f, -0.25f, 1.f});
  Tensor scale = f32({3, 1, 1}, {2.f, 3.f, -1.f});
  // y = Relu(a) ; y = y + bias ; y = scale - y (swapped Sub)
  std::vector<PostOp> post(3);
  post[0].op = OpKind::Relu;
  post[1].op = OpKind::Add;
  post[1].input = 1;
  post[2].op = OpKind::Sub;
  post[2].input = 2;
  post[2].swapped = true;
  Tensor y = run1(OpKind::Identity, none(), {&a, &bias, &scale}, DType::F32, a.shape(), post);
  std::vector<double> want;
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int s = 0; s < 4; ++s) {
        double v = a.data<float>()[(n * 3 + c) * 4 + s];
        v = std::max(v, 0.0) + bias.data<float>()[c];
        want.push_back(scale.data<float>()[c] - v);
      }
  expect_near(y, want, 1e-6, 1e-6);
  // A post-op reading a missing input is an error naming the op.
  std::vector<PostOp> bad(1);
  bad[0].op = OpKind::Mul;
  bad[0].input = 5;
  EXPECT_THROW(run1(OpKind::Relu, none(), {&a}, DType::F32, a.shape(), bad), Error);
  // Clip post-op uses alpha/beta as min/max.
  std::vector<PostOp> clip(1);
  clip[0].op = OpKind::Clip;
  clip[0].alpha = 0.f;
  clip[0].beta = 6.f;
  Tensor big = f32({3}, {-1, 3, 9});
  expect_near(run1(OpKind::Identity, none(), {&big}, DType::F32, {3}, clip), {0, 3, 6}, 0, 0);
}

TEST(ReferencePostOps, F16OutputKeepsFloatBetweenOpAndEpilogue) {
  Tensor a = f32({4}, {1.f, 1.f, 1.f, 1.f}).cast(DType::F16);
  Tensor b = f32({4}, {0.00048828125f, 0.0003f, 1e-4f, 2.f}).cast(DType::F16);  // tiny addends
  Tensor c = f32({4}, {-1.f, -1.f, -1.f, -1.f}).cast(DType::F16);
  std::vector<PostOp> post(1);
  post[0].op = OpKind::Add;
  post[0].input = 2;
  // (a + b) + c computed in float and rounded once: the tiny addends survive.
  Tensor y = run1(OpKind::Add, none(), {&a, &b, &c}, DType::F16, {4}, post);
  for (int i = 0; i < 4; ++i) {
    float want = (half_to_float(a.data<uint16_t>()[i]) + half_to_float(b.data<uint16_t>()[i])) +
                 half_to_float(c.data<uint16_t>()[i]);
    EXPECT_EQ(y.data<uint16_t>()[i], float_to_half(want)) << i;
  }
}

}  // namespace
}  // namespace opv
