// fuse_gelu: erf and tanh GELU subgraphs in their export variants become one node; values kept;
// near-misses are left alone.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "graph_builder.h"
#include "ir/passes/passes.h"

namespace opv {
namespace {

using test::GraphBuilder;

constexpr float kSqrt2 = 1.41421356f;

enum class Tail { XaHalf, HalfXa, XaHalfInner, XaDivTwo };

struct ErfSpec {
  bool mul_form = false;    // x * (1/sqrt2) instead of x / sqrt2
  bool one_first = false;   // 1 + erf
  Tail tail = Tail::XaHalf;
  float sqrt2 = kSqrt2;
  float half = 0.5f;
  bool erf_also_output = false;
  bool t_two_readers = false;
};

// Builds Relu(in) -> erf GELU -> out. Returns the builder.
GraphBuilder erf_gelu(const ErfSpec& s) {
  GraphBuilder b;
  int in = b.input("in", {2, 3, 4});
  int x = b.node(OpKind::Relu, {in});  // x has several readers, as in real graphs
  x = b.node(OpKind::Sub, {x, b.scalar("c", 0.7f)});
  int t = s.mul_form ? b.node(OpKind::Mul, {b.scalar("r", 1.f / s.sqrt2), x})
                     : b.node(OpKind::Div, {x, b.scalar("r", s.sqrt2)});
  int e = b.node(OpKind::Erf, {t});
  int one = b.scalar("one", 1.f);
  int a = s.one_first ? b.node(OpKind::Add, {one, e}) : b.node(OpKind::Add, {e, one});
  int y = -1;
  switch (s.tail) {
    case Tail::XaHalf: y = b.node(OpKind::Mul, {b.node(OpKind::Mul, {x, a}), b.scalar("h", s.half)}); break;
    case Tail::XaDivTwo: y = b.node(OpKind::Div, {b.node(OpKind::Mul, {a, x}), b.scalar("h", 1.f / s.half)}); break;
    case Tail::HalfXa: y = b.node(OpKind::Mul, {b.node(OpKind::Mul, {b.scalar("h", s.half), x}), a}); break;
    case Tail::XaHalfInner: y = b.node(OpKind::Mul, {x, b.node(OpKind::Mul, {a, b.scalar("h", s.half)})}); break;
  }
  b.output(y);
  if (s.erf_also_output) b.output(e);
  if (s.t_two_readers) b.output(b.node(OpKind::Neg, {t}));
  return b;
}

TEST(FuseGelu, ErfVariants) {
  for (bool mul_form : {false, true})
    for (bool one_first : {false, true})
      for (Tail tail : {Tail::XaHalf, Tail::HalfXa, Tail::XaHalfInner, Tail::XaDivTwo}) {
        ErfSpec s;
        s.mul_form = mul_form;
        s.one_first = one_first;
        s.tail = tail;
        GraphBuilder b = erf_gelu(s);
        ir::Graph before = b.g;
        SCOPED_TRACE(testing::Message() << "mul_form " << mul_form << " one_first " << one_first << " tail "
                                        << int(tail));
        ASSERT_TRUE(ir::fuse_gelu(b.g));
        b.g.validate();
        EXPECT_EQ(test::live_count(b.g), 3);  // Relu, Sub, Gelu
        EXPECT_EQ(test::count_op(b.g, OpKind::Gelu), 1);
        EXPECT_EQ(b.g.values[b.g.outputs[0]].name, before.values[before.outputs[0]].name);
        test::expect_same_numbers(before, b.g);
      }
}

TEST(FuseGelu, HalfPrecisionRoundedSqrt2IsAccepted) {
  ErfSpec s;
  s.sqrt2 = 1.4140625f;  // sqrt(2) rounded to fp16, as fp16 exports carry it
  GraphBuilder b = erf_gelu(s);
  ir::Graph before = b.g;
  ASSERT_TRUE(ir::fuse_gelu(b.g));
  EXPECT_EQ(test::count_op(b.g, OpKind::Gelu), 1);
  test::expect_same_numbers(before, b.g, 1e-3);  // the pattern itself was off by 1e-4
}

TEST(FuseGelu, NearMissesAreNotFused) {
  {
    ErfSpec s;
    s.sqrt2 = 1.5f;
    GraphBuilder b = erf_gelu(s);
    EXPECT_FALSE(ir::fuse_gelu(b.g));
  }
  {
    ErfSpec s;
    s.half = 0.6f;
    GraphBuilder b = erf_gelu(s);
    EXPECT_FALSE(ir::fuse_gelu(b.g));
  }
  {
    ErfSpec s;
    s.erf_also_output = true;
    GraphBuilder b = erf_gelu(s);
    EXPECT_FALSE(ir::fuse_gelu(b.g));
  }
  {
    ErfSpec s;
    s.t_two_readers = true;
    GraphBuilder b = erf_gelu(s);
    EXPECT_FALSE(ir::fuse_gelu(b.g));
  }
  {  // the tail multiplies by a different tensor than the erf argument
    GraphBuilder b;
    int x = b.input("x", {8});
    int z = b.input("z", {8});
    int e = b.node(OpKind::Erf, {b.node(OpKind::Div, {x, b.scalar("r", kSqrt2)})});
    int a = b.node(OpKind::Add, {e, b.scalar("one", 1.f)});
    b.output(b.node(OpKind::Mul, {b.node(OpKind::Mul, {z, a}), b.scalar("h", 0.5f)}));
    EXPECT_FALSE(ir::fuse_gelu(b.g));
  }
}

struct TanhSpec {
  bool pow = true;
  bool cube_sq_first = true;
  float coeff = 0.044715f;
  float k = 0.7978845608f;
  bool x_first_in_sum = true;
  Tail tail = Tail::HalfXa;
};

GraphBuilder tanh_gelu(const TanhSpec& s) {
  GraphBuilder b;
  int in = b.input("in", {3, 16});
  int x = b.node(OpKind::Mul, {in, b.scalar("g", 1.3f)});
  int cube;
  if (s.pow) {
    cube = b.node(OpKind::Pow, {x, b.scalar("three", 3.f)});
  } else {
    int sq = b.node(OpKind::Mul, {x, x});
    cube = s.cube_sq_first ? b.node(OpKind::Mul, {sq, x}) : b.node(OpKind::Mul, {x, sq});
  }
  int kc = b.node(OpKind::Mul, {b.scalar("coeff", s.coeff), cube});
  int sum = s.x_first_in_sum ? b.node(OpKind::Add, {x, kc}) : b.node(OpKind::Add, {kc, x});
  int u = b.node(OpKind::Mul, {sum, b.scalar("k", s.k)});
  int e = b.node(OpKind::Tanh, {u});
  int a = b.node(OpKind::Add, {b.scalar("one", 1.f), e});
  int y = -1;
  switch (s.tail) {
    case Tail::HalfXa: y = b.node(OpKind::Mul, {b.node(OpKind::Mul, {x, b.scalar("h", 0.5f)}), a}); break;
    default: y = b.node(OpKind::Mul, {b.node(OpKind::Mul, {x, a}), b.scalar("h", 0.5f)}); break;
  }
  b.output(y);
  return b;
}

TEST(FuseGelu, TanhVariants) {
  for (bool pow : {true, false})
    for (bool sq_first : {true, false})
      for (bool x_first : {true, false})
        for (Tail tail : {Tail::HalfXa, Tail::XaHalf}) {
          TanhSpec s;
          s.pow = pow;
          s.cube_sq_first = sq_first;
          s.x_first_in_sum = x_first;
          s.tail = tail;
          GraphBuilder b = tanh_gelu(s);
          ir::Graph before = b.g;
          SCOPED_TRACE(testing::Message() << "pow " << pow << " sq_first " << sq_first << " x_first " << x_first);
          ASSERT_TRUE(ir::fuse_gelu(b.g));
          b.g.validate();
          EXPECT_EQ(test::live_count(b.g), 2);
          EXPECT_EQ(test::count_op(b.g, OpKind::GeluTanh), 1);
          test::expect_same_numbers(before, b.g);
        }
}

TEST(FuseGelu, TanhWithWrongCoefficientIsNotFused) {
  TanhSpec s;
  s.coeff = 0.05f;
  GraphBuilder b = tanh_gelu(s);
  EXPECT_FALSE(ir::fuse_gelu(b.g));
  TanhSpec s2;
  s2.k = 0.75f;
  GraphBuilder b2 = tanh_gelu(s2);
  EXPECT_FALSE(ir::fuse_gelu(b2.g));
}

// Independent check of what the fused node computes: Gelu(x) = x * Phi(x).
TEST(FuseGelu, FusedNodeMatchesClosedForm) {
  GraphBuilder b = erf_gelu(ErfSpec{});
  ASSERT_TRUE(ir::fuse_gelu(b.g));
  Tensor in = test::random_f32({2, 3, 4}, 5, -3.f, 3.f);
  std::vector<Tensor> out = ir::evaluate(b.g, {{"in", in}});
  for (int64_t i = 0; i < in.numel(); ++i) {
    double x = std::max(0.0, double(in.data<float>()[i])) - double(0.7f);
    double want = 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
    EXPECT_NEAR(out[0].data<float>()[i], want, 1e-5);
  }
}

}  // namespace
}  // namespace opv
