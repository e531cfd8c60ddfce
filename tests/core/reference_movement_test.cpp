// Reference movement and generator kernels: hand-written expected layouts, negative Slice
// steps, Gather with negative indices, int64 shape arithmetic, F16 bytes preserved.
#include "core/error.h"
#include "reference_test_util.h"
#include "test_util.h"

namespace opv {
namespace {

using reftest::expect_near;
using reftest::f32;
using reftest::i64;
using reftest::ints;
using reftest::run1;

Tensor iota(const Shape& s) {
  Tensor t(DType::I64, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = i;
  return t;
}

TEST(ReferenceMovement, ReshapeAndReorder) {
  Tensor x = iota({2, 3});
  EXPECT_EQ(ints(run1(OpKind::Reshape, {}, {&x}, DType::I64, {3, 1, 2})), ints(x));
  EXPECT_EQ(ints(run1(OpKind::Reorder, {}, {&x}, DType::I64, {2, 3})), ints(x));
  EXPECT_THROW(run1(OpKind::Reshape, {}, {&x}, DType::I64, {4}), Error);
  EXPECT_THROW(run1(OpKind::Reshape, {}, {&x}, DType::I32, {6}), Error);
}

TEST(ReferenceMovement, Transpose) {
  Tensor x = iota({2, 3, 4});
  Attrs a;
  a.set("perm", std::vector<int64_t>{2, 0, 1});
  Tensor y = run1(OpKind::Transpose, a, {&x}, DType::I64, {4, 2, 3});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(y.data<int64_t>()[(i * 2 + j) * 3 + k], (j * 3 + k) * 4 + i);
  // Default perm reverses the axes; F16 bytes move unchanged.
  Tensor h = test::random_f32({2, 3}, 1).cast(DType::F16);
  Tensor ht = run1(OpKind::Transpose, {}, {&h}, DType::F16, {3, 2});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(ht.data<uint16_t>()[j * 2 + i], h.data<uint16_t>()[i * 3 + j]);
  a.set("perm", std::vector<int64_t>{0, 0, 1});
  EXPECT_THROW(run1(OpKind::Transpose, a, {&x}, DType::I64, {2, 2, 3}), Error);
}

TEST(ReferenceMovement, ConcatAndSplit) {
  Tensor a = i64({2, 1}, {1, 2});
  Tensor b = i64({2, 2}, {3, 4, 5, 6});
  Attrs ax;
  ax.set("axis", int64_t(1));
  Tensor y = run1(OpKind::Concat, ax, {&a, &b}, DType::I64, {2, 3});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{1, 3, 4, 2, 5, 6}));
  // Shape vectors: concat of 1-D int64 along axis 0 (common in shape arithmetic).
  Tensor s0 = i64({1}, {1}), s1 = i64({2}, {-1, 512});
  Attrs a0;
  a0.set("axis", int64_t(0));
  EXPECT_EQ(ints(run1(OpKind::Concat, a0, {&s0, &s1}, DType::I64, {3})), (std::vector<int64_t>{1, -1, 512}));
  // Split is the inverse.
  Tensor p0(DType::I64, {2, 1}), p1(DType::I64, {2, 2});
  std::vector<Tensor*> outs{&p0, &p1};
  Attrs sp = ax;
  sp.set("split", std::vector<int64_t>{1, 2});
  ref::run({OpKind::Split, sp, {}}, {&y}, outs);
  EXPECT_EQ(ints(p0), ints(a));
  EXPECT_EQ(ints(p1), ints(b));
  sp.set("split", std::vector<int64_t>{2, 1});
  EXPECT_THROW(ref::run({OpKind::Split, sp, {}}, {&y}, outs), Error);
  EXPECT_THROW(run1(OpKind::Concat, ax, {&a, &b}, DType::I64, {2, 4}), Error);
}

TEST(ReferenceMovement, SliceStepsIncludingNegative) {
  Tensor x = iota({3, 5});
  Attrs a;
  a.set("starts", std::vector<int64_t>{2, 4});
  a.set("steps", std::vector<int64_t>{-1, -2});
  // rows 2,1,0 ; cols 4,2,0
  EXPECT_EQ(ints(run1(OpKind::Slice, a, {&x}, DType::I64, {3, 3})),
            (std::vector<int64_t>{14, 12, 10, 9, 7, 5, 4, 2, 0}));
  a.set("starts", std::vector<int64_t>{1, 1});
  a.set("steps", std::vector<int64_t>{1, 3});
  EXPECT_EQ(ints(run1(OpKind::Slice, a, {&x}, DType::I64, {2, 2})), (std::vector<int64_t>{6, 9, 11, 14}));
  // Reading outside the input is an error, not a crash.
  EXPECT_THROW(run1(OpKind::Slice, a, {&x}, DType::I64, {3, 2}), Error);
}

TEST(ReferenceMovement, GatherNegativeIndices) {
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor idx(DType::I32, {2, 2});
  const int32_t iv[] = {-1, 0, 1, -3};
  for (int i = 0; i < 4; ++i) idx.data<int32_t>()[i] = iv[i];
  Attrs a;
  a.set("axis", int64_t(0));
  expect_near(run1(OpKind::Gather, a, {&x, &idx}, DType::F32, {2, 2, 2}), {5, 6, 1, 2, 3, 4, 1, 2}, 0, 0);
  a.set("axis", int64_t(1));
  Tensor one = i64({}, {-1});
  expect_near(run1(OpKind::Gather, a, {&x, &one}, DType::F32, {3}), {2, 4, 6}, 0, 0);
  // Shape[i] extraction on int64 data.
  Tensor shape = i64({4}, {1, 24, 128, 256});
  Tensor two = i64({1}, {2});
  a.set("axis", int64_t(0));
  EXPECT_EQ(ints(run1(OpKind::Gather, a, {&shape, &two}, DType::I64, {1})), (std::vector<int64_t>{128}));
  Tensor bad = i64({1}, {3});
  EXPECT_THROW(run1(OpKind::Gather, a, {&x, &bad}, DType::F32, {1, 2}), Error);
}

TEST(ReferenceMovement, ExpandAndTile) {
  Tensor x = i64({3, 1}, {1, 2, 3});
  EXPECT_EQ(ints(run1(OpKind::Expand, {}, {&x}, DType::I64, {2, 3, 2})),
            (std::vector<int64_t>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  EXPECT_THROW(run1(OpKind::Expand, {}, {&x}, DType::I64, {2, 2}), Error);
  Tensor t = i64({2, 2}, {1, 2, 3, 4});
  Attrs a;
  a.set("repeats", std::vector<int64_t>{2, 3});
  EXPECT_EQ(ints(run1(OpKind::Tile, a, {&t}, DType::I64, {4, 6})),
            (std::vector<int64_t>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
}

TEST(ReferenceMovement, PadModes) {
  Tensor x = f32({1, 3}, {1, 2, 3});
  Attrs a;
  a.set("pads", std::vector<int64_t>{0, 2, 0, 1});  // begins (axis0, axis1), ends
  a.set("value", 9.0);
  expect_near(run1(OpKind::Pad, a, {&x}, DType::F32, {1, 6}), {9, 9, 1, 2, 3, 9}, 0, 0);
  a.set("mode", std::string("reflect"));
  expect_near(run1(OpKind::Pad, a, {&x}, DType::F32, {1, 6}), {3, 2, 1, 2, 3, 2}, 0, 0);
  a.set("mode", std::string("edge"));
  expect_near(run1(OpKind::Pad, a, {&x}, DType::F32, {1, 6}), {1, 1, 1, 2, 3, 3}, 0, 0);
  // Negative pads crop; on 2 axes at once.
  Tensor y = iota({3, 4});
  Attrs c;
  c.set("pads", std::vector<int64_t>{1, -1, 0, 1});
  EXPECT_EQ(ints(run1(OpKind::Pad, c, {&y}, DType::I64, {4, 4})),
            (std::vector<int64_t>{0, 0, 0, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11, 0}));
}

TEST(ReferenceGenerate, RangeAndConstantOfShape) {
  Tensor s = i64({}, {10}), l = i64({}, {1}), d = i64({}, {-3});
  EXPECT_EQ(ints(run1(OpKind::Range, {}, {&s, &l, &d}, DType::I64, {3})), (std::vector<int64_t>{10, 7, 4}));
  EXPECT_THROW(run1(OpKind::Range, {}, {&s, &l, &d}, DType::I64, {4}), Error);
  Tensor fs = Tensor::scalar_f32(0.5f), fl = Tensor::scalar_f32(2.f), fd = Tensor::scalar_f32(0.5f);
  expect_near(run1(OpKind::Range, {}, {&fs, &fl, &fd}, DType::F32, {3}), {0.5, 1, 1.5}, 0, 0);
  // A length that is NaN or beyond int64 is an error, not a cast (undefined for such doubles).
  Tensor inf = Tensor::scalar_f32(INFINITY), tiny = Tensor::scalar_f32(1e-30f);
  EXPECT_THROW(run1(OpKind::Range, {}, {&inf, &inf, &fd}, DType::F32, {3}), Error);
  EXPECT_THROW(run1(OpKind::Range, {}, {&fs, &inf, &fd}, DType::F32, {3}), Error);
  EXPECT_THROW(run1(OpKind::Range, {}, {&fs, &fl, &tiny}, DType::F32, {3}), Error);
  Attrs a;
  a.set("value_f", 3.0);
  a.set("dtype", int64_t(DType::I64));
  EXPECT_EQ(ints(run1(OpKind::ConstantOfShape, a, {}, DType::I64, {2, 2})), (std::vector<int64_t>{3, 3, 3, 3}));
  EXPECT_THROW(run1(OpKind::ConstantOfShape, a, {}, DType::F32, {2}), Error);
  a.set("dtype", int64_t(DType::F16));
  a.set("value_f", -1.5);
  Tensor h = run1(OpKind::ConstantOfShape, a, {}, DType::F16, {3});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(half_to_float(h.data<uint16_t>()[i]), -1.5f);
}

}  // namespace
}  // namespace opv
