// The backends' caps query (issue 14, deliverable 4; ggml's supports_op): each backend states the
// layouts it stores and answers per buffer and per call from its real coverage; runtime::Session
// asks before load() and refuses with the backend's reason; load() asserts the same answer.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "test_util.h"
#include "backend/backend.h"
#include "core/error.h"
#include "runtime/session.h"

namespace opv {
namespace {

using plan::BufferKind;
using plan::Layout;

using opv::test::error_of;

// x -> Relu -> t -> Relu -> y, every buffer f32[1,3,4,5] in `layout` (x and y stay Linear).
plan::Plan relu_chain(const std::string& target, Layout t_layout, Shape shape = {1, 3, 4, 5}) {
  plan::Plan p;
  p.target = target;
  auto buffer = [&](const char* name, Layout l, BufferKind k) {
    plan::Buffer b;
    b.name = name;
    b.dtype = DType::F32;
    b.shape = shape;
    b.layout = l;
    b.kind = k;
    return p.add_buffer(b);
  };
  const int x = buffer("x", Layout::Linear, BufferKind::Input);
  const int t = buffer("t", t_layout, BufferKind::Intermediate);
  const int y = buffer("y", Layout::Linear, BufferKind::Output);
  p.inputs = {x};
  p.outputs = {y};
  plan::Kernel k;
  k.name = "relu";
  k.op = OpKind::Relu;
  const int kid = p.add_kernel(k);
  p.calls.push_back({kid, {x}, {t}, {0, 0, 0}, {0, 0, 0}, "first_relu"});
  p.calls.push_back({kid, {t}, {y}, {0, 0, 0}, {0, 0, 0}, "second_relu"});
  return p;
}

bool stores(const backend::Caps& c, Layout l) { return std::count(c.layouts.begin(), c.layouts.end(), l) == 1; }

TEST(BackendCaps, StateTheirLayouts) {
  const backend::Caps ref = backend::create("reference")->caps();
  EXPECT_TRUE(stores(ref, Layout::Linear));
  EXPECT_FALSE(stores(ref, Layout::NHWC));
  EXPECT_EQ(ref.device, "host");
  const backend::Caps cpu = backend::create("cpu")->caps();
  EXPECT_TRUE(stores(cpu, Layout::Linear));
  EXPECT_TRUE(stores(cpu, Layout::NHWC));
  EXPECT_FALSE(stores(cpu, Layout::ImageRGBA));
  EXPECT_FALSE(stores(cpu, Layout::PackedWeight));
  EXPECT_TRUE(ref.per_call_times && cpu.per_call_times);
  EXPECT_EQ(backend::layout_list(cpu.layouts), "linear, nhwc");
}

TEST(BackendCaps, AnswerBeforeLoad) {
  auto ref = backend::create("reference");
  auto cpu = backend::create("cpu");
  EXPECT_TRUE(backend::supports(*ref, relu_chain("reference", Layout::Linear)));
  EXPECT_TRUE(backend::supports(*cpu, relu_chain("cpu", Layout::Linear)));
  EXPECT_TRUE(backend::supports(*cpu, relu_chain("cpu", Layout::NHWC)));
  // The reference backend stores only Linear buffers: the answer names the buffer.
  backend::Support s = backend::supports(*ref, relu_chain("reference", Layout::NHWC));
  EXPECT_FALSE(s);
  EXPECT_EQ(s.why, "buffer 1 't' has layout nhwc; the reference backend stores only linear");
  // The per-buffer query itself.
  EXPECT_FALSE(ref->supports_buffer(relu_chain("reference", Layout::NHWC), 1));
  EXPECT_TRUE(ref->supports_buffer(relu_chain("reference", Layout::NHWC), 0));
  // Another target's plan.
  s = backend::supports(*cpu, relu_chain("reference", Layout::Linear));
  EXPECT_FALSE(s);
  EXPECT_EQ(s.why, "plan was lowered for target 'reference', not 'cpu'");
  // cpu: no images, no packed weights; an NHWC input only with trivial channels.
  s = backend::supports(*cpu, relu_chain("cpu", Layout::ImageRGBA));
  EXPECT_EQ(s.why, "buffer 1 't' has layout image_rgba; the cpu backend stores only linear, nhwc");
  plan::Plan nhwc_in = relu_chain("cpu", Layout::Linear);
  nhwc_in.buffers[0].layout = Layout::NHWC;
  EXPECT_EQ(backend::supports(*cpu, nhwc_in).why, "input buffer 'x' must have linear layout");
  plan::Plan trivial = relu_chain("cpu", Layout::Linear, {1, 1, 4, 5});
  trivial.buffers[0].layout = Layout::NHWC;
  EXPECT_TRUE(backend::supports(*cpu, trivial)) << backend::supports(*cpu, trivial).why;
  // A structurally broken plan is an error, not a "no".
  plan::Plan broken = relu_chain("cpu", Layout::Linear);
  broken.calls[1].kernel = 7;
  EXPECT_NE(error_of([&] { (void)backend::supports(*cpu, broken); }).find("call 1 (second_relu) uses kernel 7 of 1"),
            std::string::npos);
}

TEST(BackendCaps, SessionAndLoadRefuseWithTheAnswer) {
  const std::string want = "reference backend: buffer 1 't' has layout nhwc; the reference backend stores only linear";
  EXPECT_EQ(error_of([&] { runtime::Session s(relu_chain("reference", Layout::NHWC)); }), want);
  auto ref = backend::create("reference");
  EXPECT_EQ(error_of([&] { ref->load(relu_chain("reference", Layout::NHWC)); }), want);
  // What is supported also runs.
  runtime::Session s(relu_chain("cpu", Layout::NHWC));
  Tensor x(DType::F32, {1, 3, 4, 5});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(i % 7) - 3.f;
  const runtime::NamedTensors& out = s.run({{"x", x}});
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(out[0].second.data<float>()[i], std::max(0.f, x.data<float>()[i]));
}

}  // namespace
}  // namespace opv
