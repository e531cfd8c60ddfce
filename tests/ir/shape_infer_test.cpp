// Shape inference for canonical ops: derived shapes/dtypes and the errors on mismatches.
#include <gtest/gtest.h>

#include "ops/shape_infer.h"

namespace opv {
namespace {

std::vector<ValueInfo> vi(std::initializer_list<Shape> shapes, DType t = DType::F32) {
  std::vector<ValueInfo> r;
  for (const Shape& s : shapes) r.push_back({t, s, nullptr});
  return r;
}

ValueInfo infer1(OpKind op, const Attrs& a, const std::vector<ValueInfo>& ins, const Shape& preset = {}) {
  std::vector<ValueInfo> outs(1);
  outs[0].shape = preset;
  infer_shapes(op, a, ins, outs);
  return outs[0];
}

std::string infer_error(OpKind op, const Attrs& a, const std::vector<ValueInfo>& ins, size_t n_out = 1,
                        const Shape& preset = {}) {
  std::vector<ValueInfo> outs(n_out);
  if (n_out) outs[0].shape = preset;
  try {
    infer_shapes(op, a, ins, outs);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(ShapeInfer, ElementwiseFamilies) {
  EXPECT_EQ(infer1(OpKind::Relu, {}, vi({{2, 3}})).shape, (Shape{2, 3}));
  ValueInfo c = infer1(OpKind::Less, {}, vi({{2, 1, 4}, {3, 1}}));
  EXPECT_EQ(c.shape, (Shape{2, 3, 4}));
  EXPECT_EQ(c.dtype, DType::Bool);
  Attrs to;
  to.set("to", int64_t(DType::F16));
  EXPECT_EQ(infer1(OpKind::Cast, to, vi({{5}})).dtype, DType::F16);
  auto mixed = vi({{2}, {2}});
  mixed[1].dtype = DType::F16;
  EXPECT_NE(infer_error(OpKind::Add, {}, mixed).find("operand dtypes differ: f32 vs f16"), std::string::npos);
  EXPECT_NE(infer_error(OpKind::Add, {}, vi({{2, 3}, {4}})).find("[2,3]"), std::string::npos);
  EXPECT_NE(infer_error(OpKind::Not, {}, vi({{2}})).find("bool"), std::string::npos);
}

TEST(ShapeInfer, ConvChecksChannelsAndComputesOutput) {
  Attrs a;
  a.set("group", int64_t(2));
  a.set("strides", std::vector<int64_t>{2, 1});
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.set("dilations", std::vector<int64_t>{1, 2});
  ValueInfo y = infer1(OpKind::Conv, a, vi({{1, 4, 9, 9}, {6, 2, 3, 3}, {6}}));
  EXPECT_EQ(y.shape, (Shape{1, 6, 5, 7}));  // (9+2-3)/2+1=5, (9+2-5)/1+1=7
  std::string e = infer_error(OpKind::Conv, a, vi({{1, 3, 9, 9}, {6, 2, 3, 3}}));
  EXPECT_NE(e.find("input has 3 channels but weight [6,2,3,3] with group 2 expects 4"), std::string::npos) << e;
  e = infer_error(OpKind::Conv, a, vi({{1, 4, 9, 9}, {6, 2, 3, 3}, {5}}));
  EXPECT_NE(e.find("bias must be [6]"), std::string::npos) << e;
}

TEST(ShapeInfer, MatMulGemm) {
  EXPECT_EQ(infer1(OpKind::MatMul, {}, vi({{5, 1, 2, 3}, {4, 3, 7}})).shape, (Shape{5, 4, 2, 7}));
  EXPECT_EQ(infer1(OpKind::MatMul, {}, vi({{3}, {2, 3, 7}})).shape, (Shape{2, 7}));
  EXPECT_EQ(infer1(OpKind::MatMul, {}, vi({{2, 3}, {3}})).shape, (Shape{2}));
  std::string e = infer_error(OpKind::MatMul, {}, vi({{2, 3}, {4, 5}}));
  EXPECT_NE(e.find("inner dimensions differ: [2,3] x [4,5]"), std::string::npos) << e;
  Attrs t;
  t.set("transA", int64_t(1));
  EXPECT_EQ(infer1(OpKind::Gemm, t, vi({{3, 2}, {3, 5}, {5}})).shape, (Shape{2, 5}));
  EXPECT_NE(infer_error(OpKind::Gemm, t, vi({{3, 2}, {3, 5}, {3}})).find("does not broadcast"), std::string::npos);
}

TEST(ShapeInfer, ConcatSplitReduceTransposeGather) {
  Attrs ax1;
  ax1.set("axis", int64_t(1));
  EXPECT_EQ(infer1(OpKind::Concat, ax1, vi({{2, 3}, {2, 5}})).shape, (Shape{2, 8}));
  std::string e = infer_error(OpKind::Concat, ax1, vi({{2, 3}, {3, 5}}));
  EXPECT_NE(e.find("input 1 [3,5] differs from [2,3] in dim 0"), std::string::npos) << e;
  Attrs sp = ax1;
  sp.set("split", std::vector<int64_t>{1, 4});
  std::vector<ValueInfo> outs(2);
  infer_shapes(OpKind::Split, sp, vi({{2, 5}}), outs);
  EXPECT_EQ(outs[1].shape, (Shape{2, 4}));
  EXPECT_NE(infer_error(OpKind::Split, sp, vi({{2, 6}}), 2).find("sum to 5"), std::string::npos);
  Attrs r;
  r.set("axes", std::vector<int64_t>{0, 2});
  r.set("keepdims", int64_t(0));
  EXPECT_EQ(infer1(OpKind::ReduceSum, r, vi({{2, 3, 4}})).shape, (Shape{3}));
  Attrs p;
  p.set("perm", std::vector<int64_t>{1, 2, 0});
  EXPECT_EQ(infer1(OpKind::Transpose, p, vi({{2, 3, 4}})).shape, (Shape{3, 4, 2}));
  auto gi = vi({{5, 6}, {2, 3}});
  gi[1].dtype = DType::I64;
  EXPECT_EQ(infer1(OpKind::Gather, ax1, gi).shape, (Shape{5, 2, 3}));
}

TEST(ShapeInfer, PresetShapesAreValidated) {
  EXPECT_EQ(infer1(OpKind::Reshape, {}, vi({{2, 6}}), {3, 4}).shape, (Shape{3, 4}));
  EXPECT_NE(infer_error(OpKind::Reshape, {}, vi({{2, 6}}), 1, {5}).find("cannot reshape [2,6] to [5]"),
            std::string::npos);
  EXPECT_NE(infer_error(OpKind::Expand, {}, vi({{2, 3}}), 1, {4, 3}).find("cannot expand"), std::string::npos);
  Attrs s;
  s.set("starts", std::vector<int64_t>{0, 5});
  s.set("steps", std::vector<int64_t>{1, -2});
  EXPECT_EQ(infer1(OpKind::Slice, s, vi({{2, 6}}), {2, 3}).shape, (Shape{2, 3}));
  EXPECT_NE(infer_error(OpKind::Slice, s, vi({{2, 6}}), 1, {2, 4}).find("leaves the input extent"), std::string::npos);
  Attrs pool;
  pool.set("kernel", std::vector<int64_t>{3, 3});
  pool.set("strides", std::vector<int64_t>{2, 2});
  EXPECT_EQ(infer1(OpKind::MaxPool, pool, vi({{1, 1, 8, 8}})).shape, (Shape{1, 1, 3, 3}));
  EXPECT_EQ(infer1(OpKind::MaxPool, pool, vi({{1, 1, 8, 8}}), {1, 1, 4, 4}).shape, (Shape{1, 1, 4, 4}));
  EXPECT_NE(infer_error(OpKind::MaxPool, pool, vi({{1, 1, 8, 8}}), 1, {1, 1, 5, 5}).find("matches neither"),
            std::string::npos);
}

TEST(ShapeInfer, PadTileRangeLayerNorm) {
  Attrs p;
  p.set("pads", std::vector<int64_t>{1, 0, 2, -1});
  EXPECT_EQ(infer1(OpKind::Pad, p, vi({{3, 4}})).shape, (Shape{6, 3}));
  Attrs t;
  t.set("repeats", std::vector<int64_t>{2, 3});
  EXPECT_EQ(infer1(OpKind::Tile, t, vi({{3, 4}})).shape, (Shape{6, 12}));
  Tensor s = Tensor::from_i64({10}).reshaped({}), l = Tensor::from_i64({1}).reshaped({}),
         d = Tensor::from_i64({-3}).reshaped({});
  std::vector<ValueInfo> ri = {{DType::I64, {}, &s}, {DType::I64, {}, &l}, {DType::I64, {}, &d}};
  EXPECT_EQ(infer1(OpKind::Range, {}, ri).shape, (Shape{3}));  // 10, 7, 4
  Attrs ln;
  ln.set("axis", int64_t(1));
  EXPECT_EQ(infer1(OpKind::LayerNorm, ln, vi({{2, 3, 4}, {3, 4}, {4}})).shape, (Shape{2, 3, 4}));
  EXPECT_NE(infer_error(OpKind::LayerNorm, ln, vi({{2, 3, 4}, {2, 4}})).find("scale [2,4] does not broadcast"),
            std::string::npos);
}

}  // namespace
}  // namespace opv
