// plan::validate on tampered plans (issue 13): a checksum proves integrity, not sanity, so a
// loaded plan's kernel settings must agree with its buffers before any kernel runs: pool
// windows/strides, reduce axes, conv strides, and buffer sizes under the per-tensor limits.
#include <gtest/gtest.h>

#include <functional>

#include "core/error.h"
#include "plan/plan.h"

namespace opv::plan {
namespace {

// x f32[1,2,8,8] -> op -> y (Output) with the given output shape and kernel attributes.
Plan one_call(OpKind op, const Shape& y_shape, const Attrs& attrs) {
  Plan p;
  p.target = "reference";
  Buffer x;
  x.name = "x";
  x.shape = {1, 2, 8, 8};
  x.kind = BufferKind::Input;
  int bx = p.add_buffer(x);
  Buffer y;
  y.name = "y";
  y.shape = y_shape;
  y.kind = BufferKind::Output;
  int by = p.add_buffer(y);
  p.inputs = {bx};
  p.outputs = {by};
  Kernel k;
  k.name = "k";
  k.op = op;
  k.attrs = attrs;
  p.kernels.push_back(k);
  Call c;
  c.kernel = 0;
  c.inputs = {bx};
  c.outputs = {by};
  c.label = "node";
  p.calls.push_back(c);
  return p;
}

Attrs pool(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> pads, std::vector<int64_t> d = {1, 1}) {
  Attrs a;
  a.set("kernel", k);
  a.set("strides", s);
  a.set("pads", pads);
  a.set("dilations", d);
  return a;
}

std::string error_of(const Plan& p) {
  try {
    validate(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

#define EXPECT_HAS(hay, needle) EXPECT_NE((hay).find(needle), std::string::npos) << (hay)

TEST(ValidateHostile, PoolSettingsMustFitTheBuffers) {
  EXPECT_EQ(error_of(one_call(OpKind::MaxPool, {1, 2, 4, 4}, pool({2, 2}, {2, 2}, {0, 0, 0, 0}))), "<no error>");
  EXPECT_EQ(error_of(one_call(OpKind::AveragePool, {1, 2, 8, 8}, pool({3, 3}, {1, 1}, {1, 1, 1, 1}))), "<no error>");
  // ceil-mode output (k=3 s=2 over 8: floor 3, ceil 4) is accepted as well as floor.
  EXPECT_EQ(error_of(one_call(OpKind::MaxPool, {1, 2, 4, 4}, pool({3, 3}, {2, 2}, {0, 0, 0, 0}))), "<no error>");
  EXPECT_EQ(error_of(one_call(OpKind::MaxPool, {1, 2, 3, 3}, pool({3, 3}, {2, 2}, {0, 0, 0, 0}))), "<no error>");
  EXPECT_HAS(error_of(one_call(OpKind::MaxPool, {1, 2, 4, 4}, pool({2, 2}, {0, 2}, {0, 0, 0, 0}))),
             "call 0 (k, 'node'): kernel, strides and dilations must be >= 1");
  EXPECT_HAS(error_of(one_call(OpKind::MaxPool, {1, 2, 1, 1}, pool({int64_t(1) << 40, 2}, {1, 1}, {0, 0, 0, 0}))),
             "does not fit the padded input");
  EXPECT_HAS(error_of(one_call(OpKind::MaxPool, {1, 2, 1, 1},
                               pool({int64_t(1) << 40, 2}, {1, 1}, {0, 0, 0, 0}, {int64_t(1) << 40, 1}))),
             "overflow");
  // A huge window hidden by huge pads (a reference-kernel hang before).
  EXPECT_HAS(error_of(one_call(OpKind::MaxPool, {1, 2, 1, 7},
                               pool({10000000, 2}, {100000000, 1}, {9999999, 0, 9999999, 0}))),
             "taps is implausible");
  EXPECT_HAS(error_of(one_call(OpKind::AveragePool, {1, 2, 4, 4}, pool({2, 2}, {2, 2}, {2, 0, 0, 0}))),
             "pads must be smaller than the window");
  EXPECT_HAS(error_of(one_call(OpKind::MaxPool, {1, 2, 3, 4}, pool({2, 2}, {2, 2}, {0, 0, 0, 0}))),
             "does not follow from input [1,2,8,8]");
  EXPECT_HAS(error_of(one_call(OpKind::MaxPool, {1, 3, 4, 4}, pool({2, 2}, {2, 2}, {0, 0, 0, 0}))),
             "does not match input");
  Attrs three = pool({2, 2, 2}, {2, 2}, {0, 0, 0, 0});
  EXPECT_HAS(error_of(one_call(OpKind::MaxPool, {1, 2, 4, 4}, three)), "attribute 'kernel' has 3 values");
}

TEST(ValidateHostile, ReduceAxesAndConvStrides) {
  Attrs r;
  r.set("axes", std::vector<int64_t>{2, 3});
  r.set("keepdims", int64_t(1));
  EXPECT_EQ(error_of(one_call(OpKind::ReduceMean, {1, 2, 1, 1}, r)), "<no error>");
  r.set("axes", std::vector<int64_t>{7});
  EXPECT_HAS(error_of(one_call(OpKind::ReduceSum, {1, 2, 8, 8}, r)), "reduce axis 7 is out of range");
  r.set("axes", std::vector<int64_t>{1, -3});
  EXPECT_HAS(error_of(one_call(OpKind::ReduceMax, {1, 1, 8, 8}, r)), "reduce axis -3 is repeated");
  r.set("axes", std::vector<int64_t>{1});
  EXPECT_HAS(error_of(one_call(OpKind::ReduceMin, {1, 4, 8, 8}, r)), "is larger than its input");
  Attrs c;
  c.set("strides", std::vector<int64_t>{1, 0});
  EXPECT_HAS(error_of(one_call(OpKind::Conv, {1, 2, 8, 8}, c)), "strides must be >= 1");
}

TEST(ValidateHostile, BuffersBeyondThePerTensorLimitsAreRefused) {
  // A 70 TB output buffer with matching byte count used to be allocated by reduce.
  Attrs r;
  r.set("axes", std::vector<int64_t>{1});
  Plan p = one_call(OpKind::ReduceSum, {1, 1, 8, 8}, r);
  p.buffers[1].shape = {1, 1, int64_t(1) << 22, int64_t(1) << 22};
  p.buffers[1].bytes = (int64_t(1) << 44) * 4;
  EXPECT_HAS(error_of(p), "buffer 1 'y': tensor f32[1,1,4194304,4194304] has more than 268435456 elements");
}

// Every op, not only the hand-checked ones: shape inference re-run on the call's buffers must give
// its output buffers (a tampered Transpose perm read past its input in the cpu backend's strided
// copy: tests/fuzz/repro/opv/asan-cpu-copy-row-heap-overflow.opv).
TEST(ValidateHostile, EveryCallsOutputsMustFollowFromItsInputsAndSettings) {
  Attrs t;
  t.set("perm", std::vector<int64_t>{0, 2, 3, 1});
  EXPECT_EQ(error_of(one_call(OpKind::Transpose, {1, 8, 8, 2}, t)), "<no error>");
  EXPECT_HAS(error_of(one_call(OpKind::Transpose, {1, 8, 8, 4}, t)), "but the kernel's settings make [1,8,8,2]");
  t.set("perm", std::vector<int64_t>{0, 2, 3, 7});
  EXPECT_HAS(error_of(one_call(OpKind::Transpose, {1, 8, 8, 2}, t)), "kernel settings do not fit its buffers");
  EXPECT_EQ(error_of(one_call(OpKind::Relu, {1, 2, 8, 8}, Attrs{})), "<no error>");
  EXPECT_HAS(error_of(one_call(OpKind::Relu, {1, 2, 8, 9}, Attrs{})), "has shape [1,2,8,9]");
}

}  // namespace
}  // namespace opv::plan
