// compile --batch N (ir::set_batch, src/ir/passes/set_batch.cpp): a batch-N artifact run on N
// different samples gives, sample by sample, what the batch-1 artifact gives on each alone
// (reference backend: bit for bit; cpu: within its tolerance), on make-model variants and the
// shared fixture; models that cannot be batched soundly are refused naming the node, and the
// graph is left unchanged.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "compiler/compile.h"
#include "core/error.h"
#include "core/metrics.h"
#include "ir/passes/passes.h"
#include "onnx_test_model.h"
#include "runtime/session.h"
#include "test_util.h"
#include "tools/make_model.h"

namespace opv::test {
namespace {

plan::Plan compile_at(const std::string& path, const std::string& target, int64_t batch) {
  CompileOptions o;
  o.target = target;
  o.batch = batch;
  return compile_onnx(path, o);
}

std::string write_model(const std::string& bytes, const std::string& name) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// Runs the batch-N plan once on N random samples and the batch-1 plan on each sample; every
// output sample must match (bit for bit when `exact`, else within tol). Also checks that the
// samples' outputs differ (the inputs reach them).
void expect_per_sample(const plan::Plan& p1, const plan::Plan& pn, int64_t n, bool exact, double tol, int threads = 1) {
  runtime::Session s1(p1, {threads, ""}), sn(pn, {threads, ""});
  std::vector<runtime::NamedTensors> per;
  for (int64_t k = 0; k < n; ++k) per.push_back(s1.random_inputs(100 + uint64_t(k)));
  runtime::NamedTensors batched;
  for (size_t i = 0; i < per[0].size(); ++i) {
    const Tensor& t0 = per[0][i].second;
    Shape s = t0.shape();
    ASSERT_EQ(s[0], 1);
    s[0] = n;
    Tensor t(t0.dtype(), s);
    for (int64_t k = 0; k < n; ++k)
      std::memcpy(static_cast<uint8_t*>(t.raw()) + size_t(k) * t0.nbytes(), per[size_t(k)][i].second.raw(),
                  t0.nbytes());
    batched.emplace_back(per[0][i].first, std::move(t));
  }
  const runtime::NamedTensors outn = sn.run(batched);  // a copy: s1's runs do not touch it
  std::vector<runtime::NamedTensors> out1;
  for (int64_t k = 0; k < n; ++k) out1.push_back(s1.run(per[size_t(k)]));
  ASSERT_EQ(outn.size(), out1[0].size());
  for (size_t o = 0; o < outn.size(); ++o) {
    SCOPED_TRACE(outn[o].first);
    ASSERT_EQ(outn[o].second.shape()[0], n);
    for (int64_t k = 0; k < n; ++k) {
      const Tensor got = sample(outn[o].second, k);
      const Tensor& want = out1[size_t(k)][o].second;
      ASSERT_EQ(got.shape(), want.shape());
      if (exact) {
        EXPECT_TRUE(bit_equal(got, want)) << "sample " << k;
      } else {
        const ErrorMetrics m = compare(got, want);
        EXPECT_TRUE(m.finite) << "sample " << k;
        EXPECT_LE(m.rel_l2, tol) << "sample " << k;
        EXPECT_LE(m.max_abs_rel, tol) << "sample " << k;
      }
    }
    EXPECT_FALSE(bit_equal(out1[0][o].second, out1[1][o].second)) << "samples 0 and 1 give the same output";
  }
}

tools::MakeModelOptions small_model(bool fp16) {
  tools::MakeModelOptions m;
  m.height = 64, m.width = 128;
  m.widths = {16, 32, 32, 64};
  m.depths = {1, 1, 2, 1};
  m.hidden = 64;
  m.fp16 = fp16;
  m.seed = 7;
  return m;
}

TEST(BatchCompile, MakeModelPerSampleOnReferenceAndCpu) {
  for (bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    const std::string path = write_model(tools::make_model_bytes(small_model(fp16)), "m.onnx");
    const plan::Plan r1 = compile_at(path, "reference", 0), r3 = compile_at(path, "reference", 3);
    EXPECT_FALSE(r1.meta.has("batch"));
    EXPECT_EQ(r3.meta.i("batch"), 3);
    for (int64_t in : r3.inputs) EXPECT_EQ(r3.buffers[size_t(in)].shape[0], 3);
    for (int64_t out : r3.outputs) EXPECT_EQ(r3.buffers[size_t(out)].shape[0], 3);
    expect_per_sample(r1, r3, 3, true, 0);
    const plan::Plan c1 = compile_at(path, "cpu", 0), c3 = compile_at(path, "cpu", 3);
    for (int threads : {1, 2}) expect_per_sample(c1, c3, 3, false, 1e-4, threads);
  }
}

TEST(BatchCompile, FixturePerSampleOnReferenceAndCpu) {
  const std::string dir = shared_models_dir();
  if (dir.empty()) GTEST_SKIP() << "fixtures not found";
  const std::string path = dir + "/opvision_t12_fp16.onnx";
  expect_per_sample(compile_at(path, "reference", 0), compile_at(path, "reference", 3), 3, true, 0);
  expect_per_sample(compile_at(path, "cpu", 0), compile_at(path, "cpu", 3), 3, false, 1e-4, 2);
}

TEST(BatchCompile, BatchOfTheModelItselfChangesNothing) {
  const std::string path = write_model(tools::make_model_bytes(small_model(false)), "m.onnx");
  const plan::Plan p0 = compile_at(path, "reference", 0), p1 = compile_at(path, "reference", 1);
  EXPECT_EQ(p1.meta.i("batch"), 1);
  ASSERT_EQ(p0.calls.size(), p1.calls.size());
  ASSERT_EQ(p0.buffers.size(), p1.buffers.size());
  for (size_t i = 0; i < p0.buffers.size(); ++i) EXPECT_EQ(p0.buffers[i].shape, p1.buffers[i].shape);
}

// ---- the rewrite on small graphs -------------------------------------------------------------

// x [1,2,3,4] -> Relu -> Reshape(shape const) -> y
OnnxBuilder reshape_model(const std::vector<int64_t>& target) {
  OnnxBuilder b;
  b.input("x", kF32, {1, 2, 3, 4});
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.init_i64("shape", target);
  b.node("Reshape", {"r", "shape"}, {"y"}, "reshape");
  b.output("y");
  return b;
}

TEST(BatchRewrite, ReshapeToLeadingOneBecomesTheBatch) {
  for (const std::vector<int64_t>& t : {std::vector<int64_t>{1, 24}, {1, -1}, {0, 6, 4}, {1, 2, 12}}) {
    ir::Graph g = reshape_model(t).import();
    EXPECT_TRUE(ir::set_batch(g, 5));
    EXPECT_EQ(out_value(g).shape[0], 5);
    EXPECT_EQ(g.values[size_t(g.inputs[0])].shape, (Shape{5, 2, 3, 4}));
  }
  // Symbolic batch in the model: imported at 1, rewritten the same way.
  OnnxBuilder b;
  b.input("x", kF32, {-1, 2, 3, 4});
  b.node("Flatten", {"x"}, {"y"}, "flat");
  b.output("y");
  ir::Graph g = b.import();
  EXPECT_TRUE(ir::set_batch(g, 2));
  EXPECT_EQ(out_value(g).shape, (Shape{2, 24}));
}

// The refusal names the node and the reason, and the graph is untouched.
void expect_refused(const OnnxBuilder& b, const std::string& node, const std::string& why) {
  ir::Graph g = b.import();
  const std::string before = g.dump();
  const std::string e = error_of([&] { ir::set_batch(g, 4); });
  EXPECT_NE(e.find("cannot batch the model to 4"), std::string::npos) << e;
  EXPECT_NE(e.find(node), std::string::npos) << e;
  EXPECT_NE(e.find(why), std::string::npos) << e;
  EXPECT_EQ(g.dump(), before);
}

TEST(BatchRewrite, RefusesWhatMixesOrDropsTheBatch) {
  expect_refused(reshape_model({2, 12}), "'reshape'", "leading dimension is not the batch");
  expect_refused(reshape_model({24}), "'reshape'", "leading dimension is not the batch");
  {
    OnnxBuilder b;
    b.input("x", kF32, {1, 8});
    auto& n = b.node("Softmax", {"x"}, {"y"}, "sm");
    OnnxBuilder::attr_i(n, "axis", 0);
    b.output("y");
    expect_refused(b, "'sm'", "axis 0, the batch");
  }
  {
    OnnxBuilder b;
    b.input("x", kF32, {1, 8});
    auto& n = b.node("ReduceMean", {"x"}, {"y"}, "mean");
    OnnxBuilder::attr_ints(n, "axes", {0, 1});
    b.output("y");
    expect_refused(b, "'mean'", "reduces over axis 0");
  }
  {
    OnnxBuilder b;
    b.input("x", kF32, {1, 8});
    b.init_f32("c", {1, 8}, std::vector<float>(8, 1.f));
    auto& n = b.node("Concat", {"x", "c"}, {"y"}, "cat0");
    OnnxBuilder::attr_i(n, "axis", 0);
    b.output("y");
    expect_refused(b, "'cat0'", "leading dimension is not the batch");  // [2,8] at batch 1
  }
  {
    OnnxBuilder b;
    b.input("x", kF32, {1, 2, 3});
    auto& n = b.node("Transpose", {"x"}, {"y"}, "tr");
    OnnxBuilder::attr_ints(n, "perm", {1, 0, 2});
    b.output("y");
    expect_refused(b, "'tr'", "leading dimension is not the batch");
  }
  {
    OnnxBuilder b;  // the batch would land on K
    b.input("x", kF32, {1, 1});
    b.init_f32("w", {1, 4}, {1, 2, 3, 4});
    auto& n = b.node("Gemm", {"x", "w"}, {"y"}, "gemm");
    OnnxBuilder::attr_i(n, "transA", 1);
    b.output("y");
    expect_refused(b, "'gemm'", "A is transposed");
  }
  {
    OnnxBuilder b;  // an input that is already batch 2
    b.input("x", kF32, {2, 8});
    b.node("Relu", {"x"}, {"y"}, "relu");
    b.output("y");
    expect_refused(b, "input 'x'", "leading dimension is 2");
  }
  {
    OnnxBuilder b;  // MatMul with the batched value as a rank-2 B: the batch would be K
    b.input("x", kF32, {1, 3});
    b.init_f32("a", {2, 1}, {1, 2});
    b.node("MatMul", {"a", "x"}, {"y"}, "mm");
    b.output("y");
    expect_refused(b, "'mm'", "leading dimension is not the batch");
  }
}

TEST(BatchRewrite, ConcatWithAConstantTilesIt) {
  OnnxBuilder b;
  b.input("x", kF32, {1, 3});
  b.init_f32("c", {1, 2}, {7, 8});
  auto& n = b.node("Concat", {"x", "c"}, {"y"}, "cat");
  OnnxBuilder::attr_i(n, "axis", 1);
  b.output("y");
  ir::Graph g1 = b.import(), g3 = b.import();
  ASSERT_TRUE(ir::set_batch(g3, 3));
  EXPECT_EQ(out_value(g3).shape, (Shape{3, 5}));
  CompileOptions o;
  o.target = "reference";
  const plan::Plan p1 = lower(g1, o), p3 = lower(g3, o);
  expect_per_sample(p1, p3, 3, true, 0);
}

TEST(BatchRewrite, OutputWithoutTheBatchIsRefused) {
  OnnxBuilder b;
  b.input("x", kF32, {1, 3});
  b.node("Relu", {"x"}, {"y"}, "relu");
  b.init_f32("c", {1, 2}, {7, 8});
  b.node("Identity", {"c"}, {"k"}, "const_out");
  b.output("y");
  b.output("k");
  ir::Graph g = b.import();
  const std::string e = error_of([&] { ir::set_batch(g, 2); });
  EXPECT_NE(e.find("output 'k'"), std::string::npos) << e;
  EXPECT_NE(e.find("no batch axis"), std::string::npos) << e;
}

}  // namespace
}  // namespace opv::test
