// Tests of plan pass "dedupe" (src/plan/passes/dedupe.cpp) on hand-built plans. Results are checked by
// running the plans on the reference backend before and after: outputs must be bit-identical.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/reference/reference_backend.h"
#include "plan/passes/passes.h"
#include "plan/plan.h"
#include "test_util.h"

namespace opv::plan {
namespace {

// A tiny plan builder: f32 Linear buffers, one call per add().
struct Builder {
  Plan p;
  explicit Builder(const std::string& target = "reference") { p.target = target; }
  int input(const std::string& name, const Shape& s) {
    int id = p.add_buffer({name, DType::F32, s, Layout::Linear, BufferKind::Input});
    p.inputs.push_back(id);
    return id;
  }
  int temp(const Shape& s) {
    return p.add_buffer(
        {"t" + std::to_string(p.buffers.size()), DType::F32, s, Layout::Linear, BufferKind::Intermediate});
  }
  int output(const std::string& name, const Shape& s) {
    int id = p.add_buffer({name, DType::F32, s, Layout::Linear, BufferKind::Output});
    p.outputs.push_back(id);
    return id;
  }
  int constant(const std::string& name, const std::vector<float>& v, const Shape& s) {
    return p.add_constant(name, DType::F32, s, Layout::Linear, v.data(), v.size() * sizeof(float));
  }
  int kernel(const std::string& name, OpKind op, Attrs a = {}) {
    Kernel k;
    k.name = name;
    k.op = op;
    k.attrs = std::move(a);
    return p.add_kernel(std::move(k));
  }
  void call(int k, std::vector<int> ins, std::vector<int> outs, const std::string& label = "") {
    p.calls.push_back(
        {k, std::move(ins), std::move(outs), {}, {}, label.empty() ? "c" + std::to_string(p.calls.size()) : label});
  }
};

// Runs `p` (compacted and memory-planned copy) on the reference backend with inputs from `seed`.
std::vector<Tensor> run_ref(Plan p, uint64_t seed = 1) {
  compact(p);
  plan_memory(p);
  validate(p);
  return test::run_on_reference(p, seed);
}

void expect_same_results(const Plan& a, const Plan& b) {
  std::vector<Tensor> ra = run_ref(a), rb = run_ref(b);
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t i = 0; i < ra.size(); ++i) EXPECT_TRUE(bit_equal(ra[i], rb[i])) << "output " << i;
}

const Shape kS{2, 3};
const std::vector<float> kW{0.5f, -1.f, 2.f, 3.f, 0.25f, -0.75f};

TEST(Dedupe, IdenticalCallsOnSameInput) {
  Builder b;
  int x = b.input("x", kS);
  int relu = b.kernel("relu", OpKind::Relu), add = b.kernel("add", OpKind::Add);
  int t1 = b.temp(kS), t2 = b.temp(kS), out = b.output("y", kS);
  b.call(relu, {x}, {t1});
  b.call(relu, {x}, {t2});
  b.call(add, {t1, t2}, {out});
  Plan before = b.p;
  ASSERT_TRUE(dedupe(b.p, {}));
  validate(b.p);
  ASSERT_EQ(b.p.calls.size(), 2u);
  EXPECT_EQ(b.p.calls[1].inputs, (std::vector<int>{t1, t1}));
  EXPECT_FALSE(dedupe(b.p, {})) << "dedupe must reach a fixed point";
  expect_same_results(before, b.p);
}

TEST(Dedupe, ByteIdenticalSeparateConstantsAndEqualKernelContent) {
  Builder b;
  int x = b.input("x", kS);
  int w1 = b.constant("w1", kW, kS), w2 = b.constant("w2", kW, kS);
  // Two kernel ids with the same content count as the same kernel.
  int mul1 = b.kernel("mul", OpKind::Mul), mul2 = b.kernel("mul", OpKind::Mul), add = b.kernel("add", OpKind::Add);
  int t1 = b.temp(kS), t2 = b.temp(kS), out = b.output("y", kS);
  b.call(mul1, {x, w1}, {t1});
  b.call(mul2, {x, w2}, {t2});
  b.call(add, {t1, t2}, {out});
  Plan before = b.p;
  ASSERT_TRUE(dedupe(b.p, {}));
  validate(b.p);
  EXPECT_EQ(b.p.calls.size(), 2u);
  expect_same_results(before, b.p);
  // compact then drops the second constant: the blob holds one copy.
  compact(b.p);
  validate(b.p);
  EXPECT_EQ(b.p.weights.size(), kW.size() * sizeof(float));
}

// Two 3-call chains x -> Mul(w) -> Gelu -> Add(bias), the second with its own (equal) constants:
// the whole second chain goes, transitively.
TEST(Dedupe, DuplicatedChainVanishes) {
  Builder b;
  int x = b.input("x", kS);
  int mul = b.kernel("mul", OpKind::Mul), gelu = b.kernel("gelu", OpKind::Gelu), add = b.kernel("add", OpKind::Add);
  int sub = b.kernel("sub", OpKind::Sub);
  std::vector<float> bias{1, 2, 3, 4, 5, 6};
  int ends[2];
  for (int h = 0; h < 2; ++h) {
    int w = b.constant("w" + std::to_string(h), kW, kS), c = b.constant("b" + std::to_string(h), bias, kS);
    int t1 = b.temp(kS), t2 = b.temp(kS), t3 = b.temp(kS);
    b.call(mul, {x, w}, {t1});
    b.call(gelu, {t1}, {t2});
    b.call(add, {t2, c}, {t3});
    ends[h] = t3;
  }
  int out = b.output("y", kS);
  b.call(sub, {ends[0], ends[1]}, {out});
  Plan before = b.p;
  ASSERT_TRUE(dedupe(b.p, {}));
  validate(b.p);
  EXPECT_EQ(b.p.calls.size(), 4u);
  EXPECT_EQ(b.p.calls.back().inputs, (std::vector<int>{ends[0], ends[0]}));
  expect_same_results(before, b.p);
  // The removed chain's buffers and constants are unused now.
  size_t nb = b.p.buffers.size();
  ASSERT_TRUE(compact(b.p));
  validate(b.p);
  EXPECT_EQ(b.p.buffers.size(), nb - 5);  // two constants and three temps
  expect_same_results(before, b.p);
}

TEST(Dedupe, KeepsNonDuplicates) {
  Builder b;
  int x = b.input("x", kS);
  std::vector<float> w_other = kW;
  w_other[5] = -0.7499f;  // one element differs
  int w1 = b.constant("w1", kW, kS), w2 = b.constant("w2", w_other, kS);
  int w3 = b.constant("w3", kW, {6});  // same bytes, other shape
  int mul = b.kernel("mul", OpKind::Mul);
  Attrs a1, a2;
  a1.set("alpha", 0.1);
  a2.set("alpha", 0.2);
  int lr1 = b.kernel("leaky", OpKind::LeakyRelu, a1), lr2 = b.kernel("leaky", OpKind::LeakyRelu, a2);
  int add = b.kernel("add", OpKind::Add);
  int t1 = b.temp(kS), t2 = b.temp(kS), t3 = b.temp(kS), t4 = b.temp(kS), t5 = b.temp(kS);
  b.call(mul, {x, w1}, {t1});
  b.call(mul, {x, w2}, {t2});
  b.call(lr1, {x}, {t3});
  b.call(lr2, {x}, {t4});
  int flat = b.temp({6});
  int rs = b.kernel("reshape", OpKind::Reshape);
  b.call(rs, {x}, {flat});
  int t6 = b.temp({6});
  b.call(mul, {flat, w3}, {t6});  // reads the same bytes as w1 but with another shape
  int t7 = b.temp({6});
  b.call(mul, {flat, b.constant("w4", kW, {6})}, {t7});  // a true duplicate of the previous call
  int s1 = b.temp(kS), s2 = b.temp(kS), out = b.output("y", kS), out2 = b.output("z", {6});
  b.call(add, {t1, t2}, {s1});
  b.call(add, {t3, t4}, {s2});
  b.call(add, {s1, s2}, {t5});
  b.call(add, {t5, x}, {out});
  b.call(add, {t6, t7}, {out2});
  Plan before = b.p;
  ASSERT_TRUE(dedupe(b.p, {}));
  validate(b.p);
  EXPECT_EQ(b.p.calls.size(), before.calls.size() - 1) << b.p.dump();
  expect_same_results(before, b.p);
}

TEST(Dedupe, DuplicateWritingAnOutputIsKept) {
  Builder b;
  int x = b.input("x", kS);
  int relu = b.kernel("relu", OpKind::Relu);
  int o1 = b.output("y1", kS), o2 = b.output("y2", kS);
  b.call(relu, {x}, {o1});
  b.call(relu, {x}, {o2});
  EXPECT_FALSE(dedupe(b.p, {}));
  EXPECT_EQ(b.p.calls.size(), 2u);

  // First writes an Intermediate, the duplicate an Output: still kept.
  Builder c;
  int x2 = c.input("x", kS);
  int relu2 = c.kernel("relu", OpKind::Relu), add = c.kernel("add", OpKind::Add);
  int t = c.temp(kS), y = c.output("y", kS), z = c.output("z", kS);
  c.call(relu2, {x2}, {t});
  c.call(relu2, {x2}, {y});
  c.call(add, {t, x2}, {z});
  EXPECT_FALSE(dedupe(c.p, {}));
  EXPECT_EQ(c.p.calls.size(), 3u);
}

TEST(Dedupe, MultiOutputCallsRewireEveryOutput) {
  Builder b;
  int x = b.input("x", {2, 4});
  Attrs sa;
  sa.set("axis", int64_t(1));
  sa.set("split", std::vector<int64_t>{1, 3});
  int split = b.kernel("split", OpKind::Split, sa), relu = b.kernel("relu", OpKind::Relu);
  Attrs ca;
  ca.set("axis", int64_t(1));
  int concat = b.kernel("concat", OpKind::Concat, ca);
  int a0 = b.temp({2, 1}), a1 = b.temp({2, 3}), b0 = b.temp({2, 1}), b1 = b.temp({2, 3});
  b.call(split, {x}, {a0, a1});
  b.call(split, {x}, {b0, b1});
  int r = b.temp({2, 3});
  b.call(relu, {b1}, {r});
  int out = b.output("y", {2, 8});
  b.call(concat, {b0, a1, r, a0}, {out});
  Plan before = b.p;
  ASSERT_TRUE(dedupe(b.p, {}));
  validate(b.p);
  ASSERT_EQ(b.p.calls.size(), 3u);
  EXPECT_EQ(b.p.calls[1].inputs, (std::vector<int>{a1}));
  EXPECT_EQ(b.p.calls[2].inputs, (std::vector<int>{a0, a1, r, a0}));
  expect_same_results(before, b.p);
}

TEST(Dedupe, DifferentLaunchGeometryOrSourceIsNotADuplicate) {
  Builder b("opencl");
  int x = b.input("x", kS);
  Kernel k1;
  k1.name = "relu";
  k1.op = OpKind::Relu;
  k1.source = "src A";
  k1.entry = "relu";
  Kernel k2 = k1;
  k2.source = "src B";
  int ka = b.p.add_kernel(k1), kb = b.p.add_kernel(k2);
  int t1 = b.temp(kS), t2 = b.temp(kS), t3 = b.temp(kS);
  b.call(ka, {x}, {t1});
  b.call(kb, {x}, {t2});  // same op, other source
  b.call(ka, {x}, {t3});
  b.p.calls[2].global = {8, 1, 0};  // same kernel, other launch
  int out = b.output("y", kS);
  int add = b.kernel("add", OpKind::Add);
  int s = b.temp(kS);
  b.call(add, {t1, t2}, {s});
  b.call(add, {s, t3}, {out});
  EXPECT_FALSE(dedupe(b.p, {}));
}

}  // namespace
}  // namespace opv::plan
