// ONNX import: canonicalisation of each supported op (attributes and output shapes), opset
// variants, initializer encodings, external data, and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "onnx_test_model.h"
#include "test_util.h"

namespace opv::test {
namespace {

using B = OnnxBuilder;

std::string import_error(const OnnxBuilder& b, const ImportOptions& o = {}) {
  try {
    b.import(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// x:[1,3,8,8] f32 -> op -> y
OnnxBuilder unary_model(const std::string& op, int opset = 17) {
  OnnxBuilder b(opset);
  b.input("x", kF32, {1, 3, 8, 8});
  b.node(op, {"x"}, {"y"}, "/" + op);
  b.output("y");
  return b;
}

TEST(OnnxImport, SimpleUnaryAndBinaryOps) {
  const std::pair<const char*, OpKind> unary[] = {
      {"Relu", OpKind::Relu}, {"Sigmoid", OpKind::Sigmoid}, {"HardSwish", OpKind::HardSwish}, {"Tanh", OpKind::Tanh},
      {"Softplus", OpKind::Softplus}, {"Erf", OpKind::Erf}, {"Exp", OpKind::Exp}, {"Log", OpKind::Log},
      {"Neg", OpKind::Neg}, {"Abs", OpKind::Abs}, {"Reciprocal", OpKind::Reciprocal}, {"Floor", OpKind::Floor},
      {"Ceil", OpKind::Ceil}, {"Sqrt", OpKind::Sqrt}};
  for (auto [name, k] : unary) {
    ir::Graph g = unary_model(name).import();
    ASSERT_EQ(g.nodes.size(), 1u) << name;
    EXPECT_EQ(g.nodes[0].op, k) << name;
    EXPECT_EQ(out_value(g).shape, (Shape{1, 3, 8, 8}));
  }
  const std::pair<const char*, OpKind> binary[] = {
      {"Add", OpKind::Add}, {"Sub", OpKind::Sub}, {"Mul", OpKind::Mul}, {"Div", OpKind::Div}, {"Pow", OpKind::Pow},
      {"Equal", OpKind::Equal}, {"Less", OpKind::Less}, {"Greater", OpKind::Greater},
      {"LessOrEqual", OpKind::LessOrEqual}, {"GreaterOrEqual", OpKind::GreaterOrEqual}};
  for (auto [name, k] : binary) {
    OnnxBuilder b;
    b.input("a", kF32, {2, 1, 5});
    b.input("b", kF32, {4, 1});
    b.node(name, {"a", "b"}, {"y"});
    b.output("y");
    ir::Graph g = b.import();
    ASSERT_EQ(g.nodes.size(), 1u) << name;
    EXPECT_EQ(g.nodes[0].op, k);
    EXPECT_EQ(out_value(g).shape, (Shape{2, 4, 5}));
    bool cmp = k == OpKind::Equal || k == OpKind::Less || k == OpKind::Greater || k == OpKind::LessOrEqual ||
               k == OpKind::GreaterOrEqual;
    EXPECT_EQ(out_value(g).dtype, cmp ? DType::Bool : DType::F32) << name;
  }
}

TEST(OnnxImport, ActivationAttributesGetDefaults) {
  ir::Graph g = unary_model("LeakyRelu").import();
  EXPECT_NEAR(g.nodes[0].attrs.f("alpha"), 0.01, 1e-7);
  g = unary_model("Elu").import();
  EXPECT_EQ(g.nodes[0].attrs.f("alpha"), 1.0);
  OnnxBuilder b = unary_model("HardSigmoid");
  B::attr_f(b.g->mutable_node(0)[0], "alpha", 0.25f);
  g = b.import();
  EXPECT_EQ(g.nodes[0].op, OpKind::HardSigmoid);
  EXPECT_EQ(g.nodes[0].attrs.f("alpha"), 0.25);
  EXPECT_EQ(g.nodes[0].attrs.f("beta"), 0.5);
}

TEST(OnnxImport, GeluApproximate) {
  OnnxBuilder b = unary_model("Gelu", 20);
  EXPECT_EQ(b.import().nodes[0].op, OpKind::Gelu);
  B::attr_s(*b.g->mutable_node(0), "approximate", "tanh");
  EXPECT_EQ(b.import().nodes[0].op, OpKind::GeluTanh);
  b.g->mutable_node(0)->mutable_attribute(0)->set_s("cubic");
  EXPECT_NE(import_error(b).find("node '/Gelu' (Gelu): approximate 'cubic' is not supported"), std::string::npos)
      << import_error(b);
}

TEST(OnnxImport, ClipAttributesVsInputs) {
  OnnxBuilder old(6 + 5);  // opset 11 reads inputs; the attribute form is opset < 11
  old.input("x", kF32, {4});
  old.init(B::tensor_f32("lo", {}, {-1.5f}, true));
  old.node("Clip", {"x", "lo", ""}, {"y"});
  old.output("y");
  ir::Graph g = old.import();
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, OpKind::Clip);
  EXPECT_EQ(g.nodes[0].attrs.f("min"), -1.5);
  EXPECT_TRUE(std::isinf(g.nodes[0].attrs.f("max")));
  EXPECT_EQ(g.nodes[0].inputs.size(), 1u);

  OnnxBuilder b;
  b.input("x", kF32, {4});
  b.input("hi", kF32, {});
  b.node("Clip", {"x", "", "hi"}, {"y"}, "/clip");
  b.output("y");
  EXPECT_NE(import_error(b).find("node '/clip' (Clip): input 'max' must be a constant"), std::string::npos)
      << import_error(b);
}

TEST(OnnxImport, CastAndCastLike) {
  OnnxBuilder b;
  b.input("x", kF32, {3});
  b.input("like", kF16, {1});
  B::attr_i(b.node("Cast", {"x"}, {"h"}), "to", kF16);
  b.node("CastLike", {"h", "x"}, {"y"});
  b.output("y");
  ir::Graph g = b.import();
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].attrs.i("to"), int64_t(DType::F16));
  EXPECT_EQ(g.values[g.nodes[0].outputs[0]].dtype, DType::F16);
  EXPECT_EQ(g.nodes[1].op, OpKind::Cast);
  EXPECT_EQ(g.nodes[1].attrs.i("to"), int64_t(DType::F32));
}

TEST(OnnxImport, IdentityAndDropoutAlias) {
  OnnxBuilder b;
  b.input("x", kF32, {3});
  b.node("Identity", {"x"}, {"a"});
  b.node("Dropout", {"a"}, {"d"});
  b.node("Relu", {"d"}, {"y"});
  b.output("y");
  ir::Graph g = b.import();
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, OpKind::Relu);
  EXPECT_EQ(g.nodes[0].inputs[0], g.inputs[0]);

  OnnxBuilder m;
  m.input("x", kF32, {3});
  m.node("Dropout", {"x"}, {"y", "mask"}, "/drop");
  m.output("y");
  m.output("mask");
  // the mask output is imported (all true in inference), issue 12's conformance work
  EXPECT_EQ(import_error(m), "<no error>");
}

TEST(OnnxImport, VariadicBecomesBinaryChain) {
  OnnxBuilder b;
  for (const char* n : {"a", "b", "c"}) b.input(n, kF32, {2, 3});
  b.node("Max", {"a", "b", "c"}, {"m"});
  b.node("Sum", {"m", "a", "b"}, {"s"});
  b.node("Mean", {"s", "c"}, {"y"});
  b.output("y");
  ir::Graph g = b.import();
  EXPECT_EQ(count_op(g, OpKind::Max), 2);
  EXPECT_EQ(count_op(g, OpKind::Add), 3);
  ASSERT_EQ(count_op(g, OpKind::Div), 1);
  const ir::Node* div = only_node(g, OpKind::Div);
  EXPECT_EQ(g.values[div->inputs[1]].data->get_f64(0), 2.0);
}

TEST(OnnxImport, ConvAttributesAndAutoPad) {
  auto conv = [](const std::string& auto_pad, std::vector<int64_t> strides) {
    OnnxBuilder b;
    b.input("x", kF32, {1, 4, 9, 10});
    b.init_f32("w", {8, 2, 3, 3}, std::vector<float>(8 * 2 * 9, 0.1f));
    b.init_f32("bias", {8}, std::vector<float>(8, 0.f));
    auto& n = b.node("Conv", {"x", "w", "bias"}, {"y"}, "/conv1");
    B::attr_i(n, "group", 2);
    B::attr_ints(n, "strides", strides);
    if (!auto_pad.empty()) B::attr_s(n, "auto_pad", auto_pad);
    else B::attr_ints(n, "pads", {1, 0, 1, 2});
    b.output("y");
    return b;
  };
  ir::Graph g = conv("", {1, 1}).import();
  const ir::Node* n = only_node(g, OpKind::Conv);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attrs.i("group"), 2);
  EXPECT_EQ(n->attrs.ints("pads"), (std::vector<int64_t>{1, 0, 1, 2}));
  EXPECT_EQ(n->attrs.ints("dilations"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(n->inputs.size(), 3u);
  EXPECT_EQ(out_value(g).shape, (Shape{1, 8, 9, 10}));  // 9+2-3+1, 10+2-3+1

  // SAME_UPPER, stride 2: out = ceil(in/2); total pad = (out-1)*2+3-in; extra at the end.
  g = conv("SAME_UPPER", {2, 2}).import();
  n = only_node(g, OpKind::Conv);
  EXPECT_EQ(out_value(g).shape, (Shape{1, 8, 5, 5}));
  EXPECT_EQ(n->attrs.ints("pads"), (std::vector<int64_t>{1, 0, 1, 1}));  // H: total 2; W: total 1
  g = conv("SAME_LOWER", {2, 2}).import();
  EXPECT_EQ(only_node(g, OpKind::Conv)->attrs.ints("pads"), (std::vector<int64_t>{1, 1, 1, 0}));
  g = conv("VALID", {1, 1}).import();
  EXPECT_EQ(out_value(g).shape, (Shape{1, 8, 7, 8}));
  std::string e = import_error(conv("FOO", {1, 1}));
  EXPECT_NE(e.find("node '/conv1' (Conv): auto_pad 'FOO' is not supported"), std::string::npos) << e;
}

TEST(OnnxImport, ConvErrors) {
  OnnxBuilder b;
  b.input("x", kF32, {1, 3, 8, 8});
  b.init_f32("w", {4, 2, 3, 3}, std::vector<float>(72, 0.f));
  b.node("Conv", {"x", "w"}, {"y"}, "/c");
  b.output("y");
  std::string e = import_error(b);
  EXPECT_NE(e.find("node '/c' (Conv): input has 3 channels"), std::string::npos) << e;

  OnnxBuilder one;
  one.input("x", kF32, {1, 3, 8});
  one.init_f32("w", {4, 3, 3}, std::vector<float>(36, 0.f));
  one.node("Conv", {"x", "w"}, {"y"}, "/c1d");
  one.output("y");
  // 1-D convolutions are imported (run as 2-D, issue 12); a 3-D one is still refused by name
  EXPECT_EQ(import_error(one), "<no error>");
  OnnxBuilder three;
  three.input("x", kF32, {1, 3, 4, 4, 4});
  three.init_f32("w", {4, 3, 3, 3, 3}, std::vector<float>(324, 0.f));
  three.node("Conv", {"x", "w"}, {"y"}, "/c3d");
  three.output("y");
  e = import_error(three);
  EXPECT_NE(e.find("node '/c3d' (Conv)"), std::string::npos) << e;
}

TEST(OnnxImport, GemmMatMulBatchNorm) {
  OnnxBuilder b;
  b.input("x", kF32, {2, 5});
  b.init_f32("w", {7, 5}, std::vector<float>(35, 0.f));
  b.init_f32("c", {7}, std::vector<float>(7, 0.f));
  auto& n = b.node("Gemm", {"x", "w", "c"}, {"g"});
  B::attr_i(n, "transB", 1);
  B::attr_f(n, "alpha", 0.5f);
  b.init_f32("m", {7, 3}, std::vector<float>(21, 0.f));
  b.node("MatMul", {"g", "m"}, {"y"});
  b.output("y");
  ir::Graph g = b.import();
  const ir::Node* gm = only_node(g, OpKind::Gemm);
  ASSERT_NE(gm, nullptr);
  EXPECT_EQ(gm->attrs.i("transA"), 0);
  EXPECT_EQ(gm->attrs.i("transB"), 1);
  EXPECT_EQ(gm->attrs.f("alpha"), 0.5);
  EXPECT_EQ(gm->attrs.f("beta"), 1.0);
  EXPECT_EQ(out_value(g).shape, (Shape{2, 3}));

  OnnxBuilder bad;
  bad.input("a", kF32, {2, 5});
  bad.input("b", kF32, {4, 3});
  bad.node("MatMul", {"a", "b"}, {"y"}, "/mm");
  bad.output("y");
  std::string e = import_error(bad);
  EXPECT_NE(e.find("node '/mm' (MatMul): inner dimensions differ"), std::string::npos) << e;

  OnnxBuilder bn;
  bn.input("x", kF32, {1, 3, 4, 4});
  for (const char* p : {"s", "b", "m", "v"}) bn.init_f32(p, {3}, {1.f, 1.f, 1.f});
  B::attr_f(bn.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}), "epsilon", 1e-3f);
  bn.output("y");
  ir::Graph gb = bn.import();
  ASSERT_EQ(gb.nodes.size(), 1u);
  EXPECT_EQ(gb.nodes[0].op, OpKind::BatchNorm);
  EXPECT_NEAR(gb.nodes[0].attrs.f("epsilon"), 1e-3, 1e-9);
}

TEST(OnnxImport, PoolsWithCeilModeAndAutoPad) {
  auto pool = [](const std::string& op, bool ceil_mode, const std::string& auto_pad) {
    OnnxBuilder b;
    b.input("x", kF32, {1, 2, 7, 8});
    auto& n = b.node(op, {"x"}, {"y"}, "/pool");
    B::attr_ints(n, "kernel_shape", {3, 3});
    B::attr_ints(n, "strides", {2, 2});
    if (ceil_mode) B::attr_i(n, "ceil_mode", 1);
    if (!auto_pad.empty()) B::attr_s(n, "auto_pad", auto_pad);
    b.output("y");
    return b;
  };
  ir::Graph g = pool("MaxPool", false, "").import();
  EXPECT_EQ(out_value(g).shape, (Shape{1, 2, 3, 3}));
  const ir::Node* n = only_node(g, OpKind::MaxPool);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attrs.ints("kernel"), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(n->attrs.ints("pads"), (std::vector<int64_t>{0, 0, 0, 0}));
  g = pool("MaxPool", true, "").import();
  EXPECT_EQ(out_value(g).shape, (Shape{1, 2, 3, 4}));  // H: (7-3)/2+1=3 both ways; W: ceil(5/2)+1=4
  g = pool("AveragePool", false, "SAME_UPPER").import();
  EXPECT_EQ(out_value(g).shape, (Shape{1, 2, 4, 4}));
  EXPECT_EQ(only_node(g, OpKind::AveragePool)->attrs.i("count_include_pad"), 0);

  OnnxBuilder idx = pool("MaxPool", false, "");
  idx.g->mutable_node(0)->add_output("ind");
  idx.output("ind");
  std::string e = import_error(idx);
  EXPECT_NE(e.find("node '/pool' (MaxPool): output 1 ('ind', Indices) is used"), std::string::npos) << e;

  OnnxBuilder gp;
  gp.input("x", kF32, {1, 2, 7, 8});
  gp.node("GlobalAveragePool", {"x"}, {"y"});
  gp.output("y");
  EXPECT_EQ(out_value(gp.import()).shape, (Shape{1, 2, 1, 1}));
}

TEST(OnnxImport, ReduceAxesAsAttributeOrInput) {
  // opset 13: ReduceMean takes an attribute, ReduceSum an input.
  OnnxBuilder b(13);
  b.input("x", kF32, {2, 3, 4});
  B::attr_ints(b.node("ReduceMean", {"x"}, {"m"}), "axes", {-1, 1});
  b.init_i64("ax", {0});
  B::attr_i(b.node("ReduceSum", {"m", "ax"}, {"y"}), "keepdims", 0);
  b.output("y");
  ir::Graph g = b.import();
  EXPECT_EQ(only_node(g, OpKind::ReduceMean)->attrs.ints("axes"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(only_node(g, OpKind::ReduceMean)->attrs.i("keepdims"), 1);
  EXPECT_EQ(only_node(g, OpKind::ReduceSum)->attrs.ints("axes"), (std::vector<int64_t>{0}));
  EXPECT_EQ(out_value(g).shape, (Shape{1, 1}));

  // opset 18: axes input for ReduceMax; empty axes + noop -> identity; empty -> all axes.
  OnnxBuilder c(18);
  c.input("x", kF32, {2, 3});
  c.init_i64("ax", {1});
  c.node("ReduceMax", {"x", "ax"}, {"a"});
  B::attr_i(c.node("ReduceMin", {"a"}, {"b"}), "noop_with_empty_axes", 1);
  c.node("ReduceMean", {"b"}, {"y"});
  c.output("y");
  g = c.import();
  EXPECT_EQ(only_node(g, OpKind::ReduceMax)->attrs.ints("axes"), (std::vector<int64_t>{1}));
  EXPECT_EQ(count_op(g, OpKind::ReduceMin), 0);
  EXPECT_EQ(only_node(g, OpKind::ReduceMean)->attrs.ints("axes"), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(out_value(g).shape, (Shape{1, 1}));
}

TEST(OnnxImport, SoftmaxOpset11VsOpset13) {
  auto model = [](int opset, int64_t axis) {
    OnnxBuilder b(opset);
    b.input("x", kF32, {2, 3, 4});
    B::attr_i(b.node("Softmax", {"x"}, {"y"}), "axis", axis);
    b.output("y");
    return b;
  };
  ir::Graph g = model(13, 1).import();
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].attrs.i("axis"), 1);
  g = model(11, 1).import();  // coerced to [2,12]: Reshape -> Softmax(axis=1) -> Reshape
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].op, OpKind::Reshape);
  EXPECT_EQ(g.values[g.nodes[0].outputs[0]].shape, (Shape{2, 12}));
  EXPECT_EQ(g.nodes[1].op, OpKind::Softmax);
  EXPECT_EQ(g.nodes[1].attrs.i("axis"), 1);
  EXPECT_EQ(out_value(g).shape, (Shape{2, 3, 4}));
  g = model(11, -1).import();
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].attrs.i("axis"), 2);
}

TEST(OnnxImport, LayerNormalization) {
  OnnxBuilder b;
  b.input("x", kF32, {2, 5, 8});
  b.init_f32("s", {8}, std::vector<float>(8, 1.f));
  b.init_f32("b", {8}, std::vector<float>(8, 0.f));
  b.node("LayerNormalization", {"x", "s", "b"}, {"y", "mean"}, "/ln");
  b.output("y");
  ir::Graph g = b.import();
  const ir::Node* n = only_node(g, OpKind::LayerNorm);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attrs.i("axis"), 2);
  EXPECT_NEAR(n->attrs.f("epsilon"), 1e-5, 1e-10);
  b.output("mean");
  std::string e = import_error(b);
  EXPECT_NE(e.find("node '/ln' (LayerNormalization): output 1"), std::string::npos) << e;
}

TEST(OnnxImport, ReshapeFamily) {
  OnnxBuilder b(11);  // Squeeze/Unsqueeze axes as attributes before opset 13
  b.input("x", kF32, {2, 1, 3, 4});
  B::attr_ints(b.node("Squeeze", {"x"}, {"s"}), "axes", {1});
  B::attr_ints(b.node("Unsqueeze", {"s"}, {"u"}), "axes", {0, -1});
  b.init_i64("shape", {0, 0, -1});
  b.node("Reshape", {"u", "shape"}, {"r"});
  B::attr_i(b.node("Flatten", {"r"}, {"y"}), "axis", 2);
  b.output("y");
  ir::Graph g = b.import();
  ASSERT_EQ(count_op(g, OpKind::Reshape), 4);
  std::vector<Shape> shapes;
  for (const auto& n : g.nodes) shapes.push_back(g.values[n.outputs[0]].shape);
  EXPECT_EQ(shapes, (std::vector<Shape>{{2, 3, 4}, {1, 2, 3, 4, 1}, {1, 2, 12}, {2, 12}}));

  OnnxBuilder c(13);  // axes as inputs
  c.input("x", kF32, {1, 3, 1});
  c.node("Squeeze", {"x"}, {"s"});  // no axes: drop every 1
  c.init_i64("ax", {1});
  c.node("Unsqueeze", {"s", "ax"}, {"y"});
  c.output("y");
  g = c.import();
  EXPECT_EQ(out_value(g).shape, (Shape{3, 1}));

  OnnxBuilder z(14);  // allowzero: a 0 is a real zero-size dim
  z.input("x", kF32, {0, 4});
  z.init_i64("shape", {4, 0});
  B::attr_i(z.node("Reshape", {"x", "shape"}, {"y"}), "allowzero", 1);
  z.output("y");
  EXPECT_EQ(out_value(z.import()).shape, (Shape{4, 0}));

  OnnxBuilder bad;
  bad.input("x", kF32, {2, 3});
  bad.input("shape", kI64, {2});
  bad.node("Reshape", {"x", "shape"}, {"y"}, "/rs");
  bad.output("y");
  std::string e = import_error(bad);
  EXPECT_NE(e.find("node '/rs' (Reshape): input 'shape' must be a constant"), std::string::npos) << e;
}

TEST(OnnxImport, TransposeConcatGatherExpandTile) {
  OnnxBuilder b;
  b.input("x", kF32, {2, 3, 4});
  b.node("Transpose", {"x"}, {"t"});  // default perm reverses
  b.input("z", kF32, {4, 3, 5});
  B::attr_i(b.node("Concat", {"t", "z"}, {"c"}), "axis", -1);
  b.init_i64("idx", {0, -1});
  B::attr_i(b.node("Gather", {"c", "idx"}, {"g"}), "axis", 1);
  b.init_i64("eshape", {2, 1, 1, 1});
  b.node("Expand", {"g", "eshape"}, {"e"});
  b.init_i64("reps", {1, 1, 2, 1});
  b.node("Tile", {"e", "reps"}, {"y"});
  b.output("y");
  ir::Graph g = b.import();
  EXPECT_EQ(only_node(g, OpKind::Transpose)->attrs.ints("perm"), (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(only_node(g, OpKind::Concat)->attrs.i("axis"), 2);
  EXPECT_EQ(only_node(g, OpKind::Gather)->attrs.i("axis"), 1);
  EXPECT_EQ(only_node(g, OpKind::Tile)->attrs.ints("repeats"), (std::vector<int64_t>{1, 1, 2, 1}));
  EXPECT_EQ(g.values[only_node(g, OpKind::Expand)->outputs[0]].shape, (Shape{2, 4, 2, 7}));
  EXPECT_EQ(out_value(g).shape, (Shape{2, 4, 4, 7}));

  OnnxBuilder bad;
  bad.input("a", kF32, {2, 3});
  bad.input("b", kF32, {3, 3});
  B::attr_i(bad.node("Concat", {"a", "b"}, {"y"}, "/cat"), "axis", 1);
  bad.output("y");
  std::string e = import_error(bad);
  EXPECT_NE(e.find("node '/cat' (Concat): input 1 [3,3] differs from [2,3] in dim 0"), std::string::npos) << e;
}

TEST(OnnxImport, SplitVariants) {
  // opset 11: split attribute.
  OnnxBuilder a(11);
  a.input("x", kF32, {6, 4});
  B::attr_ints(a.node("Split", {"x"}, {"p", "q"}), "split", {2, 4});
  a.output("p");
  a.output("q");
  ir::Graph g = a.import();
  EXPECT_EQ(only_node(g, OpKind::Split)->attrs.ints("split"), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(out_value(g, 1).shape, (Shape{4, 4}));
  // opset 13: sizes input; equal split without one.
  OnnxBuilder b(13);
  b.input("x", kF32, {6, 4});
  b.init_i64("sz", {1, 3});
  B::attr_i(b.node("Split", {"x", "sz"}, {"p", "q"}), "axis", 1);
  b.node("Split", {"x"}, {"r", "s", "t"});
  for (const char* o : {"p", "q", "r", "s", "t"}) b.output(o);
  g = b.import();
  EXPECT_EQ(out_value(g, 1).shape, (Shape{6, 3}));
  EXPECT_EQ(out_value(g, 4).shape, (Shape{2, 4}));
  // opset 18: num_outputs with a smaller last chunk.
  OnnxBuilder c(18);
  c.input("x", kF32, {7});
  B::attr_i(c.node("Split", {"x"}, {"p", "q", "r"}), "num_outputs", 3);
  for (const char* o : {"p", "q", "r"}) c.output(o);
  g = c.import();
  EXPECT_EQ(only_node(g, OpKind::Split)->attrs.ints("split"), (std::vector<int64_t>{3, 3, 1}));
}

TEST(OnnxImport, SliceNormalisedToEveryAxis) {
  OnnxBuilder b;
  b.input("x", kF32, {4, 10, 6});
  b.init_i64("starts", {-1, 1});
  b.init_i64("ends", {INT64_MIN, 1000});
  b.init_i64("axes", {1, 2});
  b.init_i64("steps", {-3, 2});
  b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  b.output("y");
  ir::Graph g = b.import();
  const ir::Node* n = only_node(g, OpKind::Slice);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attrs.ints("starts"), (std::vector<int64_t>{0, 9, 1}));
  EXPECT_EQ(n->attrs.ints("steps"), (std::vector<int64_t>{1, -3, 2}));
  EXPECT_EQ(out_value(g).shape, (Shape{4, 4, 3}));  // 9,6,3,0 and 1,3,5

  OnnxBuilder whole;  // a slice that keeps everything disappears
  whole.input("x", kF32, {4, 5});
  whole.init_i64("s", {0});
  whole.init_i64("e", {100});
  whole.node("Slice", {"x", "s", "e"}, {"sl"});
  whole.node("Relu", {"sl"}, {"y"});
  whole.output("y");
  g = whole.import();
  EXPECT_EQ(count_op(g, OpKind::Slice), 0);

  OnnxBuilder bad;
  bad.input("x", kF32, {4});
  bad.input("s", kI64, {1});
  bad.init_i64("e", {3});
  bad.node("Slice", {"x", "s", "e"}, {"y"}, "/sl");
  bad.output("y");
  std::string e = import_error(bad);
  EXPECT_NE(e.find("node '/sl' (Slice): input 'starts' must be a constant"), std::string::npos) << e;
}

TEST(OnnxImport, PadOpsetVariants) {
  OnnxBuilder a(11);
  a.input("x", kF32, {1, 2, 3, 3});
  a.init_i64("pads", {0, 0, 1, 2, 0, 0, 1, 0});
  a.init(B::tensor_f32("v", {}, {1.5f}, false));
  B::attr_s(a.node("Pad", {"x", "pads", "v"}, {"y"}), "mode", "reflect");
  a.output("y");
  ir::Graph g = a.import();
  const ir::Node* n = only_node(g, OpKind::Pad);
  EXPECT_EQ(n->attrs.s("mode"), "reflect");
  EXPECT_EQ(n->attrs.ints("pads"), (std::vector<int64_t>{0, 0, 1, 2, 0, 0, 1, 0}));
  EXPECT_EQ(n->attrs.f("value"), 1.5);
  EXPECT_EQ(out_value(g).shape, (Shape{1, 2, 5, 5}));

  OnnxBuilder b(18);  // axes input
  b.input("x", kF32, {1, 2, 3, 3});
  b.init_i64("pads", {1, 2, 3, 4});
  b.init_i64("axes", {-1, 1});
  b.node("Pad", {"x", "pads", "", "axes"}, {"y"});
  b.output("y");
  g = b.import();
  EXPECT_EQ(only_node(g, OpKind::Pad)->attrs.ints("pads"), (std::vector<int64_t>{0, 2, 0, 1, 0, 4, 0, 3}));
  EXPECT_EQ(only_node(g, OpKind::Pad)->attrs.s("mode"), "constant");

  OnnxBuilder w;
  w.input("x", kF32, {3});
  w.init_i64("pads", {1, 1});
  B::attr_s(w.node("Pad", {"x", "pads"}, {"y"}, "/pad"), "mode", "wrap");
  w.output("y");
  std::string e = import_error(w);
  EXPECT_NE(e.find("node '/pad' (Pad): mode 'wrap' is not supported"), std::string::npos) << e;
}

TEST(OnnxImport, ResizeScalesAndSizes) {
  OnnxBuilder a(13);
  a.input("x", kF32, {1, 3, 5, 8});
  a.init(B::tensor_f32("scales", {4}, {1.f, 1.f, 2.f, 0.5f}, true));
  auto& n = a.node("Resize", {"x", "", "scales"}, {"y"});
  B::attr_s(n, "mode", "linear");
  B::attr_s(n, "coordinate_transformation_mode", "align_corners");
  a.output("y");
  ir::Graph g = a.import();
  const ir::Node* r = only_node(g, OpKind::Resize);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->attrs.s("mode"), "linear");
  EXPECT_EQ(r->attrs.s("coord"), "align_corners");
  EXPECT_EQ(r->attrs.floats("scales"), (std::vector<double>{1, 1, 2, 0.5}));
  EXPECT_EQ(out_value(g).shape, (Shape{1, 3, 10, 4}));

  OnnxBuilder b(11);  // roi + empty scales + sizes
  b.input("x", kF32, {1, 3, 5, 8});
  b.init(B::tensor_f32("roi", {0}, {}, true));
  b.init(B::tensor_f32("sc", {0}, {}, true));
  b.init_i64("sizes", {1, 3, 15, 4});
  b.node("Resize", {"x", "roi", "sc", "sizes"}, {"y"});
  b.output("y");
  g = b.import();
  r = only_node(g, OpKind::Resize);
  EXPECT_EQ(r->attrs.s("mode"), "nearest");
  EXPECT_EQ(r->attrs.s("coord"), "half_pixel");
  EXPECT_EQ(r->attrs.s("nearest_mode"), "round_prefer_floor");
  EXPECT_EQ(r->attrs.floats("scales"), (std::vector<double>{1, 1, 3, 0.5}));
  EXPECT_EQ(out_value(g).shape, (Shape{1, 3, 15, 4}));

  OnnxBuilder c(13);
  c.input("x", kF32, {1, 1, 2, 2});
  c.init(B::tensor_f32("scales", {4}, {1.f, 1.f, 2.f, 2.f}, true));
  B::attr_s(c.node("Resize", {"x", "", "scales"}, {"y"}, "/rz"), "mode", "cubic");
  c.output("y");
  std::string e = import_error(c);
  EXPECT_NE(e.find("node '/rz' (Resize): mode 'cubic' is not supported"), std::string::npos) << e;

  // An infinite scale on an empty axis: 0 * inf is NaN, which must be refused, not cast to a dim
  // (found by the onnx fuzzer under UBSan).
  for (float s : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    OnnxBuilder d(13);
    d.input("x", kF32, {1, 1, 0, 4});
    d.init(B::tensor_f32("scales", {4}, {1.f, 1.f, s, 1.f}, true));
    d.node("Resize", {"x", "", "scales"}, {"y"}, "/rz");
    d.output("y");
    e = import_error(d);
    EXPECT_NE(e.find("node '/rz' (Resize): scale"), std::string::npos) << e;
    EXPECT_NE(e.find("must be positive, finite"), std::string::npos) << e;
  }
}

TEST(OnnxImport, ConstantsShapeSizeRangeConstantOfShape) {
  OnnxBuilder b;
  b.input("x", kF32, {2, 3, 4});
  auto& k = b.node("Constant", {}, {"k"});
  B::attr_ints(k, "value_ints", {5, 6});
  auto& s = b.node("Shape", {"x"}, {"sh"});
  B::attr_i(s, "start", -2);
  b.node("Size", {"x"}, {"sz"});
  b.node("Concat", {"k", "sh"}, {"cat"});
  B::attr_i(b.g->mutable_node(3)[0], "axis", 0);
  onnx::TensorProto v = B::tensor_f32("", {1}, {7.f}, false);
  B::attr_t(b.node("ConstantOfShape", {"cat"}, {"cos"}), "value", v);
  b.init(B::tensor_i64("zero", {0}, true, true));
  b.init(B::tensor_i64("one", {1}, true, true));
  b.node("Range", {"zero", "sz", "one"}, {"rg"});
  for (const char* o : {"cat", "sz", "cos", "rg"}) b.output(o);
  ir::Graph g = b.import();
  EXPECT_TRUE(g.nodes.empty()) << g.dump();
  const Tensor& cat = *out_value(g, 0).data;
  ASSERT_EQ(cat.numel(), 4);
  EXPECT_EQ((std::vector<int64_t>{cat.get_i64(0), cat.get_i64(1), cat.get_i64(2), cat.get_i64(3)}),
            (std::vector<int64_t>{5, 6, 3, 4}));
  EXPECT_EQ(out_value(g, 1).data->get_i64(0), 24);
  EXPECT_EQ(out_value(g, 1).shape, Shape{});
  EXPECT_EQ(out_value(g, 2).shape, (Shape{5, 6, 3, 4}));
  EXPECT_EQ(out_value(g, 2).data->get_f64(17), 7.0);
  EXPECT_EQ(out_value(g, 3).shape, (Shape{24}));
  EXPECT_EQ(out_value(g, 3).data->get_i64(23), 23);
}

TEST(OnnxImport, ShapeArithmeticFoldsToOneReshape) {
  // y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1]))  -> x reshaped to [2, 12]
  OnnxBuilder b(13);
  b.input("x", kF32, {2, 3, 4});
  b.node("Shape", {"x"}, {"shape"});
  b.init(B::tensor_i64("i0", {0}, true, true));
  b.node("Gather", {"shape", "i0"}, {"d0"});
  b.init_i64("ax0", {0});
  b.node("Unsqueeze", {"d0", "ax0"}, {"d0u"});
  b.init_i64("m1", {-1});
  B::attr_i(b.node("Concat", {"d0u", "m1"}, {"target"}), "axis", 0);
  b.node("Reshape", {"x", "target"}, {"y"});
  b.output("y");
  ir::Graph g = b.import();
  ASSERT_EQ(g.nodes.size(), 1u) << g.dump();
  EXPECT_EQ(g.nodes[0].op, OpKind::Reshape);
  EXPECT_EQ(out_value(g).shape, (Shape{2, 12}));
  // Only the input and the output value remain.
  EXPECT_EQ(g.values.size(), 2u) << g.dump();
}

TEST(OnnxImport, InitializerEncodings) {
  // fp16 raw and typed, uint8 typed, f32 typed, i64 typed: each feeds an Add with a runtime input.
  OnnxBuilder b;
  b.input("h", kF16, {3});
  b.input("u", kU8, {2});
  b.input("f", kF32, {2});
  b.init_f16("h_raw", {3}, {1.f, -2.5f, 0.125f}, true);
  b.init_f16("h_typed", {3}, {1.f, -2.5f, 0.125f}, false);
  onnx::TensorProto u8;
  u8.set_name("u_typed");
  u8.set_data_type(kU8);
  u8.add_dims(2);
  u8.add_int32_data(7);
  u8.add_int32_data(255);
  b.init(u8);
  b.init_f32("f_typed", {2}, {0.5f, -1.f}, false);
  b.init_i64("i_typed", {3, -4}, false);
  b.node("Add", {"h", "h_raw"}, {"y1"});
  b.node("Add", {"h", "h_typed"}, {"y2"});
  b.node("Add", {"u", "u_typed"}, {"y3"});
  b.node("Add", {"f", "f_typed"}, {"y4"});
  b.node("Identity", {"i_typed"}, {"y5"});
  for (const char* o : {"y1", "y2", "y3", "y4", "y5"}) b.output(o);
  ir::Graph g = b.import();
  auto const_in = [&](int node, int in) -> const Tensor& { return *g.values[g.nodes[size_t(node)].inputs[size_t(in)]].data; };
  EXPECT_EQ(g.values[g.inputs[0]].dtype, DType::F16);
  EXPECT_EQ(g.values[g.inputs[1]].dtype, DType::U8);
  EXPECT_TRUE(bit_equal(const_in(0, 1), const_in(1, 1)));
  EXPECT_EQ(const_in(0, 1).get_f64(1), -2.5);
  EXPECT_EQ(const_in(2, 1).dtype(), DType::U8);
  EXPECT_EQ(const_in(2, 1).get_i64(1), 255);
  EXPECT_EQ(const_in(3, 1).get_f64(0), 0.5);
  EXPECT_EQ(out_value(g, 4).data->get_i64(1), -4);
  EXPECT_EQ(out_value(g, 4).name, "y5");
}

TEST(OnnxImport, ExternalData) {
  std::string dir = temp_dir();
  std::vector<float> w = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  {
    std::ofstream f(dir + "/weights.bin", std::ios::binary);
    std::string pad(16, 'x');  // the tensor starts at offset 16
    f.write(pad.data(), 16);
    f.write(reinterpret_cast<const char*>(w.data()), 24);
  }
  auto model = [&](const std::string& loc, int64_t offset) {
    OnnxBuilder b;
    b.input("x", kF32, {2, 3});
    onnx::TensorProto t;
    t.set_name("w");
    t.set_data_type(kF32);
    t.add_dims(2);
    t.add_dims(3);
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto kv = [&](const char* k, const std::string& v) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    kv("location", loc);
    kv("offset", std::to_string(offset));
    kv("length", "24");
    b.init(t);
    b.node("Mul", {"x", "w"}, {"y"});
    b.output("y");
    return b;
  };
  std::string path = dir + "/model.onnx";
  {
    std::ofstream f(path, std::ios::binary);
    f << model("weights.bin", 16).bytes();
  }
  ir::Graph g = import_onnx(path);
  const Tensor& t = *g.values[g.nodes.at(0).inputs[1]].data;
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.get_f64(i), w[size_t(i)]);

  std::string e;
  try {
    import_onnx_bytes(model("weights.bin", 8).bytes(), dir);
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_EQ(e, "");  // offset 8 still fits the 40-byte file
  try {
    import_onnx_bytes(model("weights.bin", 20).bytes(), dir);
    e = "<no error>";
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("initializer 'w': external data range offset 20 length 24 is outside"), std::string::npos) << e;
  try {
    import_onnx_bytes(model("missing.bin", 0).bytes(), dir);
    e = "<no error>";
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("initializer 'w': cannot open external data file"), std::string::npos) << e;
  std::filesystem::remove_all(dir);
}

TEST(OnnxImport, SymbolicInputDims) {
  OnnxBuilder b;
  b.input("x", kF32, {-1, 3});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  EXPECT_EQ(out_value(b.import()).shape, (Shape{1, 3}));
  ImportOptions o;
  o.input_shapes = {{"x", {5, 3}}};
  EXPECT_EQ(out_value(b.import(o)).shape, (Shape{5, 3}));
  o.input_shapes = {{"x", {5, 4}}};
  EXPECT_NE(import_error(b, o).find("conflicts with the model's dim 1"), std::string::npos) << import_error(b, o);
  o.input_shapes = {{"nope", {5, 3}}};
  EXPECT_NE(import_error(b, o).find("'nope'"), std::string::npos);
}

TEST(OnnxImport, ErrorsNameTheProblem) {
  OnnxBuilder u;
  u.input("x", kF32, {3});
  u.node("NonMaxSuppression", {"x"}, {"y"}, "/nms");
  u.output("y");
  EXPECT_NE(import_error(u).find("node '/nms' (NonMaxSuppression): operator 'NonMaxSuppression' is not supported"),
            std::string::npos)
      << import_error(u);

  OnnxBuilder d;
  d.input("x", kF32, {3});
  d.node("Relu", {"x"}, {"y"}, "/ms").set_domain("com.microsoft");
  d.output("y");
  EXPECT_NE(import_error(d).find("node '/ms' (Relu): operator domain 'com.microsoft' is not supported"),
            std::string::npos);

  OnnxBuilder o(30);
  o.input("x", kF32, {3});
  o.output("x");
  EXPECT_NE(import_error(o).find("opset 30 is not supported"), std::string::npos) << import_error(o);

  // Before opset 7 only ops unchanged since opset 1 are accepted (7-10 are upgraded on import).
  OnnxBuilder old(5);
  old.input("x", kF32, {3});
  old.node("Relu", {"x"}, {"y"}, "/r5");
  old.output("y");
  EXPECT_NE(import_error(old).find("operator 'Relu' changed before opset 7"), std::string::npos) << import_error(old);

  OnnxBuilder a;
  a.input("x", kF32, {3});
  B::attr_i(a.node("Relu", {"x"}, {"y"}, "/r"), "bogus", 1);
  a.output("y");
  EXPECT_NE(import_error(a).find("node '/r' (Relu): attribute 'bogus' is not supported"), std::string::npos);

  OnnxBuilder m;
  m.input("x", kF32, {3});
  m.node("Relu", {"nowhere"}, {"y"}, "/r");
  m.output("y");
  EXPECT_NE(import_error(m).find("input 'nowhere' is not produced by any node"), std::string::npos)
      << import_error(m);

  // Corrupt initializers: wrong raw_data size, too few typed values, absurd dims.
  auto bad_init = [](onnx::TensorProto t) {
    OnnxBuilder b;
    b.input("x", kF32, {2});
    b.init(t);
    b.node("Add", {"x", t.name()}, {"y"});
    b.output("y");
    return import_error(b);
  };
  onnx::TensorProto raw = B::tensor_f32("w_raw", {2}, {1.f, 2.f}, true);
  raw.mutable_raw_data()->resize(7);
  EXPECT_NE(bad_init(raw).find("initializer 'w_raw': raw_data has 7 bytes, f32[2] needs 8"), std::string::npos)
      << bad_init(raw);
  onnx::TensorProto typed = B::tensor_f32("w_typed", {2}, {1.f}, false);
  EXPECT_NE(bad_init(typed).find("initializer 'w_typed': has 1 typed values, f32[2] needs 2"), std::string::npos)
      << bad_init(typed);
  onnx::TensorProto huge = B::tensor_f32("w_huge", {1000000, 1000000, 1000000}, {}, true);
  EXPECT_NE(bad_init(huge).find("initializer 'w_huge': dims are too large"), std::string::npos) << bad_init(huge);

  // Absurd sizes are errors, not overflows or huge allocations.
  OnnxBuilder big;
  big.input("x", kF32, {int64_t(1) << 30, int64_t(1) << 30});
  big.output("x");
  EXPECT_NE(import_error(big).find("graph input 'x': shape [1073741824,1073741824] is too large"), std::string::npos)
      << import_error(big);
  OnnxBuilder tile;
  tile.input("x", kF32, {1 << 20});
  tile.init_i64("r", {int64_t(1) << 30});
  tile.node("Tile", {"x", "r"}, {"y"}, "/tile");
  tile.output("y");
  EXPECT_NE(import_error(tile).find("node '/tile' (Tile): repeats [1073741824] make the output too large"),
            std::string::npos)
      << import_error(tile);

  // Garbage and truncated files.
  auto err = [](const std::string& bytes) {
    try {
      import_onnx_bytes(bytes, "");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_NE(err("").find("file is empty"), std::string::npos);
  EXPECT_NE(err("this is definitely not a protobuf \xff\xff\xff").find("not"), std::string::npos);
  std::string full = unary_model("Relu").bytes();
  std::string e = err(full.substr(0, full.size() / 2));
  EXPECT_NE(e, "<no error>");
  EXPECT_NE(e.find("<memory>"), std::string::npos) << e;

  std::string missing;
  try {
    import_onnx("/nonexistent/dir/model.onnx");
  } catch (const Error& ex) {
    missing = ex.what();
  }
  EXPECT_NE(missing.find("cannot open ONNX model '/nonexistent/dir/model.onnx'"), std::string::npos);
}

TEST(OnnxImport, ValueNamesAreUniqueAndGraphValidates) {
  OnnxBuilder b(11);
  b.input("x", kF32, {2, 3, 4});
  B::attr_i(b.node("Softmax", {"x"}, {"y"}, "/sm"), "axis", 0);  // Reshape/Softmax/Reshape
  b.node("Softmax", {"y"}, {"z"}, "/sm");                          // same node name again
  b.output("z");
  ir::Graph g = b.import();
  std::set<std::string> names;
  for (const auto& v : g.values) EXPECT_TRUE(names.insert(v.name).second) << v.name;
  EXPECT_EQ(out_value(g).name, "z");
  g.validate();
}

TEST(OnnxImport, UnsortedNodesAndAliasedOutputs) {
  OnnxBuilder b;
  b.input("x", kF32, {3});
  b.node("Neg", {"r"}, {"n"});       // listed before its producer
  b.node("Relu", {"x"}, {"r"});
  b.node("Identity", {"n"}, {"y"});  // an aliased graph output keeps its name
  b.node("Identity", {"x"}, {"xi"});
  b.output("y");
  b.output("xi");
  ir::Graph g = b.import();
  g.validate();
  EXPECT_EQ(g.nodes[0].op, OpKind::Relu);
  EXPECT_EQ(out_value(g, 0).name, "y");
  EXPECT_EQ(out_value(g, 1).name, "xi");
}

TEST(OnnxImport, HugeConstantOfShapeIsNotMaterialised) {
  OnnxBuilder b;
  b.input("x", kF32, {4096, 1024});
  b.init_i64("shape", {4096, 1024});
  b.node("ConstantOfShape", {"shape"}, {"c"});
  b.node("Add", {"x", "c"}, {"y"});
  b.output("y");
  ir::Graph g = b.import();
  const ir::Node* n = only_node(g, OpKind::ConstantOfShape);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attrs.i("dtype"), int64_t(DType::F32));
  EXPECT_EQ(n->attrs.f("value_f"), 0.0);
  EXPECT_EQ(g.values[n->outputs[0]].shape, (Shape{4096, 1024}));
}

TEST(OnnxImport, FixtureModel) {
  std::string dir = shared_models_dir();
  if (dir.empty()) GTEST_SKIP() << "shared fixture models not present";
  ir::Graph g = import_onnx(dir + "/opvision_t12_fp16.onnx");
  g.validate();
  ASSERT_EQ(g.inputs.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const ir::Value& v = g.values[g.inputs[size_t(i)]];
    EXPECT_EQ(v.name, i == 0 ? "img" : "big_img");
    EXPECT_EQ(v.dtype, DType::U8);
    EXPECT_EQ(v.shape, (Shape{1, 12, 128, 256}));
  }
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(out_value(g).dtype, DType::F32);
  EXPECT_EQ(out_value(g).shape, (Shape{1, 632}));
  EXPECT_EQ(count_op(g, OpKind::Identity), 0);
  EXPECT_EQ(count_op(g, OpKind::ConstantOfShape), 0);
  EXPECT_GT(count_op(g, OpKind::Conv), 10);
  for (const auto& n : g.nodes)
    for (int in : n.inputs) EXPECT_GE(in, 0);
}

}  // namespace
}  // namespace opv::test
