#include <gtest/gtest.h>

#include "plan/liveness.h"
#include "plan/passes/passes.h"
#include "core/error.h"
#include "plan/plan.h"

namespace opv::plan {
namespace {

// A chain in -> t0 -> t1 -> ... -> out of Relu calls, each temp `bytes` big.
Plan chain(int n, const std::vector<int64_t>& sizes) {
  Plan p;
  p.target = "reference";
  Buffer in{"in", DType::F32, {sizes[0] / 4}, Layout::Linear, BufferKind::Input};
  p.inputs.push_back(p.add_buffer(in));
  // Each call pads (or crops) its input to the next size, so the plan stays consistent for the
  // validator's shape check while the buffer sizes differ.
  int prev = p.inputs[0];
  int64_t prev_n = sizes[0] / 4;
  for (int i = 0; i < n; ++i) {
    bool last = i == n - 1;
    int64_t nn = sizes[i] / 4;
    Kernel k;
    k.op = OpKind::Pad;
    k.name = "pad_f32_" + std::to_string(i);
    k.attrs.set("pads", std::vector<int64_t>{0, nn - prev_n});
    int kid = p.add_kernel(k);
    Buffer b{"t" + std::to_string(i), DType::F32, {nn}, Layout::Linear,
             last ? BufferKind::Output : BufferKind::Intermediate};
    int id = p.add_buffer(b);
    p.calls.push_back({kid, {prev}, {id}, {}, {}, "c" + std::to_string(i)});
    prev = id;
    prev_n = nn;
  }
  p.outputs.push_back(prev);
  return p;
}

TEST(MemoryPlan, ChainReusesTwoSlots) {
  Plan p = chain(6, {1024, 1024, 1024, 1024, 1024, 1024});
  ASSERT_TRUE(plan_memory(p));
  validate(p);
  // Each temp is live only from its producer to its single consumer: two slots suffice.
  EXPECT_EQ(p.arena_bytes, 2 * 1024);
  EXPECT_EQ(unplanned_bytes(p), 5 * 1024);
}

TEST(MemoryPlan, LongLivedBufferIsNotOverwritten) {
  Plan p = chain(4, {256, 256, 256, 256});
  // Make t0 also feed the last call (a residual): it must not share bytes with t1/t2.
  Kernel add;
  add.op = OpKind::Add;
  add.name = "add_f32";
  int kid = p.add_kernel(add);
  p.calls.back().kernel = kid;
  p.calls.back().inputs.push_back(1);  // buffer 1 = t0
  ASSERT_TRUE(plan_memory(p));
  validate(p);
  const Buffer& t0 = p.buffers[1];
  for (int b : {2, 3}) {
    const Buffer& o = p.buffers[b];
    bool overlap = o.offset < t0.offset + t0.bytes && t0.offset < o.offset + o.bytes;
    EXPECT_FALSE(overlap) << o.name;
  }
}

TEST(MemoryPlan, OffsetsAligned) {
  Plan p = chain(5, {100 * 4, 30 * 4, 7 * 4, 1000 * 4, 12});
  plan_memory(p);
  for (const Buffer& b : p.buffers) {
    if (b.kind == BufferKind::Intermediate) {
      EXPECT_EQ(b.offset % kAlign, 0);
    }
  }
  validate(p);
}

TEST(Validate, CatchesOverlapAndBadIds) {
  Plan p = chain(4, {256, 256, 256, 256});
  plan_memory(p);
  Plan bad = p;
  bad.buffers[2].offset = bad.buffers[1].offset;  // t0 and t1 live together at c1
  EXPECT_THROW(validate(bad), opv::Error);
  bad = p;
  bad.calls[1].inputs[0] = 99;
  EXPECT_THROW(validate(bad), opv::Error);
  bad = p;
  bad.calls[0].outputs[0] = 0;  // writes the input buffer
  EXPECT_THROW(validate(bad), opv::Error);
  bad = p;
  std::swap(bad.calls[0], bad.calls[1]);  // reads before written
  EXPECT_THROW(validate(bad), opv::Error);
  bad = p;
  bad.outputs.clear();
  EXPECT_THROW(validate(bad), opv::Error);
}

TEST(Validate, ConstantsInsideWeights) {
  Plan p = chain(2, {64, 64});
  float w[4] = {1, 2, 3, 4};
  int c = p.add_constant("w", DType::F32, {4}, Layout::Linear, w, sizeof w);
  validate(p);
  p.buffers[c].offset = int64_t(p.weights.size());
  EXPECT_THROW(validate(p), opv::Error);
}

}  // namespace
}  // namespace opv::plan
