// Tests of plan pass "input-pack" and the input_pack family (src/target/opencl/input_pack.cpp):
//  1. Two uint8 inputs -> Concat(axis 1) -> Cast(+Sub +Div normalisation) -> conv: the pass
//     leaves one packed call (no Concat/Cast/Reorder), on random shapes (C and W not multiples
//     of 4); numerics of the packed and the unpacked plans both against the reference backend,
//     and against each other.
//  2. One input with a scalar Sub and a per-channel Div; fp32 input with round_to fp16.
//  3. No pattern (float input straight into a conv; a Cast read twice): the plan is unchanged.
#include <gtest/gtest.h>

#include <random>

#include "image_test_util.h"
#include "passes/graph_builder.h"

namespace opv::test {
namespace {

using plan::Layout;

struct PackCase {
  std::vector<int64_t> channels;  // per input
  int64_t H = 8, W = 8;
  DType dt = DType::U8;
  bool scalar_mean = false;
  bool read_twice = false;  // the normalised tensor also feeds a second consumer (no pack)
};

// inputs -> [Concat] -> Cast(to f32, round_to f16) +Sub(mean) +Div(std) -> conv3x3 -> y
ir::Graph pack_graph(const PackCase& pc, uint64_t seed) {
  GraphBuilder b;
  b.g.source = "test";
  int64_t C = 0;
  std::vector<int> ins;
  for (size_t i = 0; i < pc.channels.size(); ++i) {
    ins.push_back(b.input("img" + std::to_string(i), {1, pc.channels[i], pc.H, pc.W}, pc.dt));
    C += pc.channels[i];
  }
  const Shape s = {1, C, pc.H, pc.W};
  int x = ins[0];
  if (ins.size() > 1) {
    Attrs ca;
    ca.set("axis", int64_t(1));
    x = raw_node(b.g, "concat", OpKind::Concat, ca, ins, s, pc.dt);
  }
  int mean = pc.scalar_mean ? b.scalar("mean", 127.5f) : b.random_const("mean", {1, C, 1, 1}, seed, 100.f, 150.f);
  int stdv = b.random_const("std", {C, 1, 1}, seed + 1, 40.f, 80.f);
  Attrs cast;
  cast.set("to", int64_t(DType::F32));
  cast.set("round_to", int64_t(DType::F16));
  int n = raw_node(b.g, "cast", OpKind::Cast, cast, {x, mean, stdv}, s, DType::F32,
                   {PostOp{OpKind::Sub, 0, 0, 1}, PostOp{OpKind::Div, 0, 0, 2}});
  int w = b.random_const("w", {8, C, 3, 3}, seed + 2, -0.2f, 0.2f);
  int bias = b.random_const("b", {8}, seed + 3, -0.1f, 0.1f);
  int y = b.conv(n, w, bias);
  b.output(y);
  if (pc.read_twice) b.output(raw_node(b.g, "relu", OpKind::Relu, {}, {n}, s));
  return b.g;
}

int packed_calls(const plan::Plan& p) {
  int k = 0;
  for (const plan::Call& c : p.calls) k += p.kernels[size_t(c.kernel)].attrs.s("cl_family") == "input_pack";
  return k;
}

// Reorder calls that write an image (the packed call replaces the one of the inputs).
int reorders_to_image(const plan::Plan& p) {
  int n = 0;
  for (const plan::Call& c : p.calls)
    n += p.kernels[size_t(c.kernel)].op == OpKind::Reorder &&
         p.buffers[size_t(c.outputs[0])].layout == Layout::ImageRGBA;
  return n;
}

void check_packed(const PackCase& pc, uint64_t seed, const std::string& what) {
  ir::Graph g = pack_graph(pc, seed);
  plan::Plan packed = lower_for(g, "opencl");
  plan::Plan unpacked = lower_for(g, "opencl", {"input-pack"});
  EXPECT_EQ(packed_calls(packed), 1) << what << "\n" << packed.dump();
  EXPECT_EQ(packed_calls(unpacked), 0) << what;
  EXPECT_EQ(count_op(packed, OpKind::Concat), 0) << what;
  EXPECT_EQ(reorders_to_image(packed), 0) << what << "\n" << packed.dump();
  EXPECT_EQ(reorders_to_image(unpacked), 1) << what;
  EXPECT_EQ(count_op(packed, OpKind::Cast), 1) << what;  // the packed call itself
  EXPECT_LT(packed.calls.size(), unpacked.calls.size()) << what;
  for (const plan::Call& c : packed.calls) {
    const plan::Kernel& k = packed.kernels[size_t(c.kernel)];
    if (k.attrs.s("cl_family") != "input_pack") continue;
    EXPECT_EQ(c.inputs.size(), pc.channels.size() + 2) << what;
    for (size_t i = 0; i < pc.channels.size(); ++i) EXPECT_EQ(c.inputs[i], packed.inputs[i]) << what;
    EXPECT_EQ(packed.buffers[size_t(c.outputs[0])].layout, Layout::ImageRGBA);
    EXPECT_NE(k.name.find("input_pack"), std::string::npos);
  }
  if (!opencl_available()) return;
  plan::Plan ref = lower_for(g, "reference");
  expect_close(packed, ref, seed + 10, what + " packed");
  expect_close(unpacked, ref, seed + 10, what + " unpacked");
  runtime::NamedTensors in = inputs_for(ref, seed + 10);
  runtime::NamedTensors a = run_plan(packed, in), b = run_plan(unpacked, in);
  ErrorMetrics m = compare(a[0].second, b[0].second);
  EXPECT_LE(m.max_abs_rel, 1e-5) << what << ": packed and unpacked plans disagree";
}

TEST(InputPack, TwoUint8InputsRandomShapes) {
  std::mt19937 rng(5);
  auto in = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int trial = 0; trial < 4; ++trial) {
    PackCase pc;
    pc.channels = trial == 0 ? std::vector<int64_t>{12, 12} : std::vector<int64_t>{in(1, 7), in(1, 7)};
    pc.H = in(3, 9);
    pc.W = trial == 0 ? 16 : in(3, 13);
    check_packed(pc, 40 + trial * 7, "two inputs " + std::to_string(pc.channels[0]) + "+" +
                                         std::to_string(pc.channels[1]) + " " + std::to_string(pc.H) + "x" +
                                         std::to_string(pc.W));
  }
}

TEST(InputPack, ThreeInputs) {
  PackCase pc;
  pc.channels = {2, 3, 4};
  pc.H = 5;
  pc.W = 12;
  check_packed(pc, 90, "three inputs");
}

TEST(InputPack, SingleInputScalarMean) {
  PackCase pc;
  pc.channels = {5};
  pc.H = 6;
  pc.W = 10;
  pc.scalar_mean = true;
  check_packed(pc, 100, "single u8 input");
}

TEST(InputPack, SingleFloatInputRoundsToHalf) {
  PackCase pc;
  pc.channels = {4};
  pc.dt = DType::F32;
  check_packed(pc, 110, "single f32 input");
}

TEST(InputPack, NoPatternLeavesPlanUnchanged) {
  // A float input straight into a conv: the Reorder's input is a plan Input, not a Cast.
  GraphBuilder b;
  b.g.source = "test";
  int x = b.input("x", {1, 3, 6, 6});
  int w = b.random_const("w", {4, 3, 3, 3}, 1);
  b.output(b.conv(x, w));
  plan::Plan p = lower_for(b.g, "opencl", {"input-pack"});
  const std::string before = p.dump();
  EXPECT_FALSE(plan::input_pack(p, {}));
  EXPECT_EQ(p.dump(), before);

  // The normalised tensor has a second reader: packing would compute it twice.
  PackCase pc;
  pc.channels = {3, 3};
  pc.read_twice = true;
  plan::Plan q = lower_for(pack_graph(pc, 7), "opencl", {"input-pack"});
  const std::string qb = q.dump();
  EXPECT_FALSE(plan::input_pack(q, {}));
  EXPECT_EQ(q.dump(), qb);
}

}  // namespace
}  // namespace opv::test
