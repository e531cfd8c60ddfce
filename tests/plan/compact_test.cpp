// Tests of compact() (src/plan/passes/compact.cpp): unused buffers, kernels and constant bytes go, ids
// are renumbered, the plan stays valid (also after memory planning) and computes bit-identical
// results on the reference backend.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "backend/reference/reference_backend.h"
#include "plan/passes/passes.h"
#include "plan/plan.h"
#include "test_util.h"

namespace opv::plan {
namespace {

std::vector<Tensor> run_planned(const Plan& p, uint64_t seed = 3) {
  return test::run_on_reference(p, seed);
}

// y = relu(x * w1) + w3 with unused constants (w0, w2), an unused temp and unused kernels
// interleaved with the used ones; a second input that no call reads must stay (it is an Input).
Plan messy_plan() {
  Plan p;
  p.target = "reference";
  const Shape s{3, 4};
  auto vals = [](float base) {
    std::vector<float> v(12);
    for (size_t i = 0; i < v.size(); ++i) v[i] = base + 0.125f * float(i);
    return v;
  };
  Kernel unused1, mul, unused2, relu, add;
  unused1.name = "unused_tanh";
  unused1.op = OpKind::Tanh;
  mul.name = "mul";
  mul.op = OpKind::Mul;
  unused2.name = "unused_neg";
  unused2.op = OpKind::Neg;
  relu.name = "relu";
  relu.op = OpKind::Relu;
  add.name = "add";
  add.op = OpKind::Add;
  p.add_kernel(unused1);
  int km = p.add_kernel(mul);
  p.add_kernel(unused2);
  int kr = p.add_kernel(relu), ka = p.add_kernel(add);
  std::vector<float> w0 = vals(-3), w1 = vals(-0.5f), w2 = vals(7), w3 = vals(1);
  p.add_constant("w0", DType::F32, s, Layout::Linear, w0.data(), 48);
  int x = p.add_buffer({"x", DType::F32, s, Layout::Linear, BufferKind::Input});
  int c1 = p.add_constant("w1", DType::F32, s, Layout::Linear, w1.data(), 48);
  p.add_buffer({"dead", DType::F32, s, Layout::Linear, BufferKind::Intermediate});
  p.add_constant("w2", DType::F32, s, Layout::Linear, w2.data(), 48);
  int x2 = p.add_buffer({"x_unused", DType::F32, s, Layout::Linear, BufferKind::Input});
  int c3 = p.add_constant("w3", DType::F32, s, Layout::Linear, w3.data(), 48);
  int t1 = p.add_buffer({"t1", DType::F32, s, Layout::Linear, BufferKind::Intermediate});
  int t2 = p.add_buffer({"t2", DType::F32, s, Layout::Linear, BufferKind::Intermediate});
  int y = p.add_buffer({"y", DType::F32, s, Layout::Linear, BufferKind::Output});
  p.inputs = {x, x2};
  p.outputs = {y};
  p.calls.push_back({km, {x, c1}, {t1}, {}, {}, "mul"});
  p.calls.push_back({kr, {t1}, {t2}, {}, {}, "relu"});
  p.calls.push_back({ka, {t2, c3}, {y}, {}, {}, "add"});
  validate(p);
  return p;
}

std::map<std::string, std::vector<uint8_t>> constants_by_name(const Plan& p) {
  std::map<std::string, std::vector<uint8_t>> r;
  for (size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].kind == BufferKind::Constant) {
      const uint8_t* d = p.constant_data(int(i));
      r[p.buffers[i].name] = std::vector<uint8_t>(d, d + p.buffers[i].bytes);
    }
  return r;
}

TEST(Compact, DropsUnusedAndRenumbers) {
  Plan p = messy_plan();
  Plan ref = p;
  plan_memory(ref);
  std::vector<Tensor> before = run_planned(ref);
  auto consts_before = constants_by_name(p);

  ASSERT_TRUE(compact(p));
  validate(p);
  EXPECT_EQ(p.kernels.size(), 3u);
  EXPECT_EQ(p.buffers.size(), 7u);  // x, w1, x_unused, w3, t1, t2, y
  for (const Buffer& b : p.buffers) EXPECT_TRUE(b.name != "w0" && b.name != "w2" && b.name != "dead") << b.name;
  // Inputs keep their model order, the unused one included.
  ASSERT_EQ(p.inputs.size(), 2u);
  EXPECT_EQ(p.buffers[size_t(p.inputs[0])].name, "x");
  EXPECT_EQ(p.buffers[size_t(p.inputs[1])].name, "x_unused");
  EXPECT_EQ(p.buffers[size_t(p.outputs[0])].name, "y");
  // Two 48-byte constants, the second at the next 64-byte boundary.
  EXPECT_EQ(p.weights.size(), size_t(kAlign + 48));
  auto consts_after = constants_by_name(p);
  ASSERT_EQ(consts_after.size(), 2u);
  EXPECT_EQ(consts_after["w1"], consts_before["w1"]);
  EXPECT_EQ(consts_after["w3"], consts_before["w3"]);
  // Calls point at the same named buffers.
  EXPECT_EQ(p.kernels[size_t(p.calls[1].kernel)].name, "relu");
  EXPECT_EQ(p.buffers[size_t(p.calls[0].inputs[1])].name, "w1");
  EXPECT_EQ(p.buffers[size_t(p.calls[2].inputs[1])].name, "w3");

  plan_memory(p);
  validate(p);
  std::vector<Tensor> after = run_planned(p);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_TRUE(bit_equal(before[0], after[0]));
  EXPECT_FALSE(compact(p)) << "compact is idempotent";
}

TEST(Compact, KeepsMemoryPlannedPlansValid) {
  Plan p = messy_plan();
  plan_memory(p);
  validate(p);
  std::vector<Tensor> before = run_planned(p);
  const int64_t arena = p.arena_bytes;
  std::map<std::string, int64_t> offsets;
  for (const Buffer& b : p.buffers)
    if (b.kind == BufferKind::Intermediate && b.name != "dead") offsets[b.name] = b.offset;
  ASSERT_TRUE(compact(p));
  validate(p);
  EXPECT_EQ(p.arena_bytes, arena);
  for (const Buffer& b : p.buffers)
    if (b.kind == BufferKind::Intermediate) {
      EXPECT_EQ(b.offset, offsets.at(b.name)) << b.name;
    }
  EXPECT_TRUE(bit_equal(before[0], run_planned(p)[0]));
}

TEST(Compact, SharedConstantBytesStayShared) {
  Plan p = messy_plan();
  // A second buffer viewing w1's bytes (as a pass aliasing a constant would make).
  int w1 = -1;
  for (size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].name == "w1") w1 = int(i);
  Buffer alias = p.buffers[size_t(w1)];
  alias.name = "w1_alias";
  int a = p.add_buffer(alias);
  p.calls[2].inputs[1] = a;  // y = relu(x*w1) + w1
  validate(p);
  ASSERT_TRUE(compact(p));
  validate(p);
  int nw1 = -1, na = -1;
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    if (p.buffers[i].name == "w1") nw1 = int(i);
    if (p.buffers[i].name == "w1_alias") na = int(i);
  }
  ASSERT_GE(nw1, 0);
  ASSERT_GE(na, 0);
  EXPECT_EQ(p.buffers[size_t(nw1)].offset, p.buffers[size_t(na)].offset);
  EXPECT_EQ(p.weights.size(), 48u);
}

}  // namespace
}  // namespace opv::plan
