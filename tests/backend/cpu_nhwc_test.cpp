// The NHWC layout pass (plan/layout_nhwc.cpp) on small multi-call plans: the structure it
// produces (which buffers turn NHWC, where Reorder calls go) and the numbers the cpu backend
// computes on the rewritten plan versus the Linear plan and versus ref::run call by call.
// DISABLED_FastVitStack is the NCHW-vs-NHWC timing on a FastViT-like conv stack; run it with
//   test_backend --gtest_also_run_disabled_tests --gtest_filter='*FastVitStack*'
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>

#include <omp.h>

#include "cpu_test_plan.h"
#include "plan/passes/passes.h"

namespace opv::test {
namespace {

using plan::BufferKind;
using plan::Layout;

// Builds plans call by call; remembers constant/input tensors for the reference evaluation.
struct Builder {
  plan::Plan p;
  std::map<int, Tensor> values;  // inputs and constants
  uint64_t seed = 7;

  Builder() { p.target = "cpu"; }
  int input(const std::string& n, const Shape& s) {
    int id = p.add_buffer({n, DType::F32, s, Layout::Linear, BufferKind::Input});
    p.inputs.push_back(id);
    values[id] = rnd(s, seed++);
    return id;
  }
  int constant(const Shape& s, float lo = -0.5f, float hi = 0.5f) {
    Tensor t = rnd(s, seed++, lo, hi);
    int id = p.add_constant("w" + std::to_string(p.buffers.size()), DType::F32, s, Layout::Linear, t.raw(), t.nbytes());
    values[id] = t;
    return id;
  }
  int call(OpKind op, Attrs a, std::vector<int> ins, Shape out_shape, std::vector<PostOp> post = {},
           BufferKind kind = BufferKind::Intermediate) {
    plan::Kernel k;
    k.name = std::string(op_name(op)) + "_" + std::to_string(p.kernels.size());
    k.op = op;
    k.attrs = std::move(a);
    k.post_ops = std::move(post);
    int kid = p.add_kernel(k);
    int out = p.add_buffer({"t" + std::to_string(p.buffers.size()), DType::F32, out_shape, Layout::Linear, kind});
    if (kind == BufferKind::Output) p.outputs.push_back(out);
    p.calls.push_back({kid, ins, {out}, {}, {}, "n" + std::to_string(p.calls.size()) + "_" + op_name(op)});
    return out;
  }
  int conv(int x, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t group, Shape out_shape,
           std::vector<PostOp> post = {}, std::vector<int> extra = {}) {
    Attrs a;
    const int64_t pd = k / 2;
    a.set("group", group);
    a.set("strides", std::vector<int64_t>{stride, stride});
    a.set("pads", std::vector<int64_t>{pd, pd, pd, pd});
    a.set("dilations", std::vector<int64_t>{1, 1});
    std::vector<int> ins{x, constant({cout, cin / group, k, k}), constant({cout})};
    ins.insert(ins.end(), extra.begin(), extra.end());
    return call(OpKind::Conv, a, ins, out_shape, post);
  }
};

// Evaluates a plan with ref::run call by call over row-major tensors (layouts ignored: the
// logical values are what a correct plan computes whatever the storage).
std::vector<Tensor> reference_eval(const plan::Plan& p, const std::map<int, Tensor>& values) {
  std::map<int, Tensor> v = values;
  for (const plan::Call& c : p.calls) {
    const plan::Kernel& k = p.kernels[size_t(c.kernel)];
    std::vector<const Tensor*> ins;
    for (int id : c.inputs) ins.push_back(id < 0 ? nullptr : &v.at(id));
    std::vector<Tensor> outs;
    for (int id : c.outputs) outs.emplace_back(p.buffers[size_t(id)].dtype, p.buffers[size_t(id)].shape);
    std::vector<Tensor*> op;
    for (auto& t : outs) op.push_back(&t);
    ref::run({k.op, k.attrs, k.post_ops}, ins, op);
    for (size_t i = 0; i < c.outputs.size(); ++i) v[c.outputs[i]] = std::move(outs[i]);
  }
  std::vector<Tensor> r;
  for (int id : p.outputs) r.push_back(v.at(id));
  return r;
}

std::vector<Tensor> run_cpu(const plan::Plan& p, const std::map<int, Tensor>& values, int threads) {
  auto be = backend::make_cpu_backend({threads, ""});
  be->load(p);
  std::vector<const Tensor*> feeds;
  for (int id : p.inputs) feeds.push_back(&values.at(id));
  std::vector<Tensor> outs;
  for (int id : p.outputs) outs.emplace_back(p.buffers[size_t(id)].dtype, p.buffers[size_t(id)].shape);
  std::vector<Tensor*> op;
  for (auto& t : outs) op.push_back(&t);
  be->run(feeds, op);
  return outs;
}

int count_reorders(const plan::Plan& p) {
  return int(std::count_if(p.calls.begin(), p.calls.end(),
                           [&](const plan::Call& c) { return p.kernels[size_t(c.kernel)].op == OpKind::Reorder; }));
}

// x -> conv3x3+gelu (t1) -> dwconv3x3 + residual t1 (t2) -> add per-channel (t3, also an Output)
//   -> maxpool (t4) -> gap (t5 [1,16,1,1]) -> reshape [1,16] -> gemm -> out;  t2 -> transpose -> out2
struct SmallNet {
  Builder b;
  int x, t1, t2, t3, t4, t5, t3_out, tr;
  SmallNet() {
    x = b.input("x", {1, 8, 16, 20});
    t1 = b.conv(x, 8, 16, 3, 1, 1, {1, 16, 16, 20}, {unary_po(OpKind::Gelu)});
    t2 = b.conv(t1, 16, 16, 3, 1, 16, {1, 16, 16, 20}, {binary_po(OpKind::Add, 3)}, {t1});
    t3 = b.call(OpKind::Add, {}, {t2, b.constant({16, 1, 1})}, {1, 16, 16, 20});
    t3_out = b.call(OpKind::Relu, {}, {t3}, {1, 16, 16, 20}, {}, BufferKind::Output);
    Attrs mp;
    mp.set("kernel", std::vector<int64_t>{2, 2});
    mp.set("strides", std::vector<int64_t>{2, 2});
    mp.set("pads", std::vector<int64_t>{0, 0, 0, 0});
    mp.set("dilations", std::vector<int64_t>{1, 1});
    t4 = b.call(OpKind::MaxPool, mp, {t3}, {1, 16, 8, 10});
    t5 = b.call(OpKind::GlobalAveragePool, {}, {t4}, {1, 16, 1, 1});
    int r = b.call(OpKind::Reshape, {}, {t5}, {1, 16});
    Attrs g;
    g.set("transB", int64_t(1));
    b.call(OpKind::Gemm, g, {r, b.constant({10, 16}), b.constant({10})}, {1, 10}, {}, BufferKind::Output);
    Attrs t;
    t.set("perm", std::vector<int64_t>{0, 2, 3, 1});
    tr = b.call(OpKind::Transpose, t, {t2}, {1, 16, 20, 16}, {}, BufferKind::Output);
  }
};

TEST(CpuNhwc, PassStructure) {
  SmallNet n;
  plan::Plan p = n.b.p;
  ASSERT_TRUE(plan::assign_nhwc_layout(p, {}));
  const auto& B = p.buffers;
  EXPECT_EQ(B[size_t(n.t1)].layout, Layout::NHWC);
  EXPECT_EQ(B[size_t(n.t2)].layout, Layout::NHWC);
  EXPECT_EQ(B[size_t(n.t3)].layout, Layout::NHWC);
  EXPECT_EQ(B[size_t(n.t4)].layout, Layout::NHWC);
  EXPECT_EQ(B[size_t(n.t5)].layout, Layout::Linear);      // [1,16,1,1]: same bytes either way
  EXPECT_EQ(B[size_t(n.x)].layout, Layout::Linear);       // inputs keep their layout
  EXPECT_EQ(B[size_t(n.t3_out)].layout, Layout::Linear);  // outputs too
  // Reorders: x -> nhwc before the first conv, relu's NHWC temp -> the Linear output,
  // t2 -> nchw for the transpose.
  EXPECT_EQ(count_reorders(p), 3) << p.dump();
  const plan::Call& first = p.calls[0];
  EXPECT_EQ(p.kernels[size_t(first.kernel)].op, OpKind::Reorder);
  EXPECT_EQ(first.inputs[0], n.x);
  EXPECT_EQ(B[size_t(first.outputs[0])].layout, Layout::NHWC);
  for (const plan::Call& c : p.calls) {
    const plan::Kernel& k = p.kernels[size_t(c.kernel)];
    if (k.op == OpKind::Transpose) {
      EXPECT_EQ(B[size_t(c.inputs[0])].layout, Layout::Linear);
    }
    if (k.op == OpKind::Conv) {
      EXPECT_TRUE(k.name.ends_with("_nhwc")) << k.name;
    }
  }
  // A second run finds nothing to do; memory planning and validation accept the result.
  EXPECT_FALSE(plan::assign_nhwc_layout(p, {}));
  plan::plan_memory(p);
  plan::validate(p);
}

TEST(CpuNhwc, NumericsMatchLinearAndReference) {
  for (int threads : {1, 2}) {
    SmallNet n;
    plan::Plan lin = n.b.p, nhwc = n.b.p;
    plan::assign_nhwc_layout(nhwc, {});
    plan::plan_memory(lin);
    plan::plan_memory(nhwc);
    plan::validate(nhwc);
    auto ref = reference_eval(n.b.p, n.b.values);
    auto a = run_cpu(lin, n.b.values, threads);
    auto b = run_cpu(nhwc, n.b.values, threads);
    ASSERT_EQ(a.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      for (const Tensor* t : {&a[i], &b[i]}) {
        ErrorMetrics m = compare(*t, ref[i]);
        EXPECT_LE(m.rel_l2, kTol) << "output " << i << " threads " << threads;
        EXPECT_LE(m.max_abs_rel, kTol) << "output " << i << " threads " << threads;
      }
    }
  }
}

// Concat on channels stays NHWC; on another axis it needs Linear inputs (Reorders before it).
TEST(CpuNhwc, ConcatChannelsVsSpatial) {
  Builder b;
  int x = b.input("x", {1, 6, 10, 14});
  int a = b.conv(x, 6, 8, 3, 1, 1, {1, 8, 10, 14}, {unary_po(OpKind::Relu)});
  int c = b.conv(x, 6, 4, 1, 1, 1, {1, 4, 10, 14});
  Attrs ch, sp;
  ch.set("axis", int64_t(1));
  sp.set("axis", int64_t(2));
  int cat_c = b.call(OpKind::Concat, ch, {a, c}, {1, 12, 10, 14});
  b.conv(cat_c, 12, 5, 3, 1, 1, {1, 5, 10, 14}, {}, {});
  b.p.buffers.back().kind = BufferKind::Output;
  b.p.outputs.push_back(int(b.p.buffers.size()) - 1);
  b.call(OpKind::Concat, sp, {a, a}, {1, 8, 20, 14}, {}, BufferKind::Output);
  plan::Plan p = b.p;
  ASSERT_TRUE(plan::assign_nhwc_layout(p, {}));
  EXPECT_EQ(p.buffers[size_t(cat_c)].layout, Layout::NHWC);
  for (const plan::Call& call : p.calls) {
    const plan::Kernel& k = p.kernels[size_t(call.kernel)];
    if (k.op == OpKind::Concat && k.attrs.i("axis") == 2) {
      for (int in : call.inputs) EXPECT_EQ(p.buffers[size_t(in)].layout, Layout::Linear);
    }
  }
  plan::plan_memory(p);
  plan::validate(p);
  auto ref = reference_eval(b.p, b.values);
  for (int threads : {1, 2}) {
    // With per-call profiling on: one time per plan call.
    auto be = backend::make_cpu_backend({threads, ""});
    be->load(p);
    be->set_profiling(true);
    std::vector<const Tensor*> feeds{&b.values.at(x)};
    std::vector<Tensor> outs;
    for (int id : p.outputs) outs.emplace_back(DType::F32, p.buffers[size_t(id)].shape);
    std::vector<Tensor*> op{&outs[0], &outs[1]};
    be->run(feeds, op);
    EXPECT_EQ(be->call_times_ms().size(), p.calls.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      EXPECT_LE(compare(outs[i], ref[i]).rel_l2, kTol) << "output " << i;
      EXPECT_LE(compare(outs[i], ref[i]).max_abs_rel, kTol) << "output " << i;
    }
  }
}

// A residual that the memory planner placed at the destination's own bytes (the consumer is
// the residual's last reader): the conv must add the old contents (oneDNN `sum`), in both
// layouts.
TEST(CpuNhwc, ResidualAliasingTheDestination) {
  for (bool nhwc : {false, true}) {
    Builder b;
    int x = b.input("x", {1, 16, 12, 12});
    int t0 = b.conv(x, 16, 16, 3, 1, 1, {1, 16, 12, 12});  // the residual
    int t1 = b.conv(t0, 16, 16, 3, 1, 1, {1, 16, 12, 12});
    int t2 = b.conv(t1, 16, 16, 1, 1, 1, {1, 16, 12, 12}, {binary_po(OpKind::Mul, 3), binary_po(OpKind::Add, 4)},
                    {b.constant({16, 1, 1}), t0});
    // Same with the residual add first in the chain (the form oneDNN's `sum` takes).
    int t3 = b.conv(t2, 16, 16, 1, 1, 1, {1, 16, 12, 12}, {binary_po(OpKind::Add, 3), unary_po(OpKind::Gelu)}, {t1});
    b.call(OpKind::Relu, {}, {t3}, {1, 16, 12, 12}, {}, BufferKind::Output);
    plan::Plan p = b.p;
    if (nhwc) {
      ASSERT_TRUE(plan::assign_nhwc_layout(p, {}));
    }
    for (auto& buf : p.buffers)
      if (buf.kind == BufferKind::Intermediate) buf.offset = -1;  // own storage...
    const int64_t sz = p.buffers[size_t(t0)].bytes;
    p.buffers[size_t(t0)].offset = 0;  // ...except t2, written over its residual t0,
    p.buffers[size_t(t2)].offset = 0;
    p.buffers[size_t(t1)].offset = sz;  // and t3, written over its residual t1
    p.buffers[size_t(t3)].offset = sz;
    p.arena_bytes = 2 * sz;
    auto ref = reference_eval(b.p, b.values);
    for (int threads : {1, 2}) {
      auto got = run_cpu(p, b.values, threads);
      ErrorMetrics m = compare(got[0], ref[0]);
      EXPECT_LE(m.rel_l2, kTol) << (nhwc ? "nhwc" : "nchw") << " threads " << threads;
      EXPECT_LE(m.max_abs_rel, kTol) << (nhwc ? "nhwc" : "nchw") << " threads " << threads;
    }
  }
}

// A FastViT-like stack: per stage, RepMixer (x + dw3x3(x)) then ConvFFN (dw7x7 -> 1x1 expand
// x3 + GELU -> 1x1 project, layer scale, residual), at 64/128/256 channels on 32x64.
plan::Plan fastvit_stack(Builder& b, int64_t H, int64_t W) {
  int x = b.input("x", {1, 64, H, W});
  int64_t C = 64;
  for (int64_t next : {64, 128, 256}) {
    if (next != C) {
      x = b.conv(x, C, next, 3, 1, 1, {1, next, H, W}, {unary_po(OpKind::Gelu)});
      C = next;
    }
    for (int blk = 0; blk < 2; ++blk) {
      const Shape s{1, C, H, W};
      int mix = b.conv(x, C, C, 3, 1, C, s, {binary_po(OpKind::Add, 3)}, {x});
      int dw = b.conv(mix, C, C, 7, 1, C, s);
      int ex = b.conv(dw, C, 3 * C, 1, 1, 1, {1, 3 * C, H, W}, {unary_po(OpKind::Gelu)});
      x = b.conv(ex, 3 * C, C, 1, 1, 1, s, {binary_po(OpKind::Mul, 3), binary_po(OpKind::Add, 4)},
                 {b.constant({C, 1, 1}), mix});
    }
  }
  b.call(OpKind::GlobalAveragePool, {}, {x}, {1, C, 1, 1}, {}, BufferKind::Output);
  return b.p;
}

double time_plan(const plan::Plan& p, const std::map<int, Tensor>& values, int threads, int iters) {
  auto be = backend::make_cpu_backend({threads, ""});
  be->load(p);
  std::vector<const Tensor*> feeds;
  for (int id : p.inputs) feeds.push_back(&values.at(id));
  Tensor out(DType::F32, p.buffers[size_t(p.outputs[0])].shape);
  std::vector<Tensor*> op{&out};
  be->run(feeds, op);  // warm-up
  double best = 1e30;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    be->run(feeds, op);
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

TEST(CpuNhwc, FastVitStackNumerics) {
  Builder b;
  plan::Plan lin = fastvit_stack(b, 8, 12);
  plan::Plan nhwc = lin;
  ASSERT_TRUE(plan::assign_nhwc_layout(nhwc, {}));
  plan::plan_memory(lin);
  plan::plan_memory(nhwc);
  auto ref = reference_eval(b.p, b.values);
  auto a = run_cpu(lin, b.values, 2), c = run_cpu(nhwc, b.values, 2);
  EXPECT_LE(compare(a[0], ref[0]).rel_l2, kTol);
  EXPECT_LE(compare(c[0], ref[0]).rel_l2, kTol);
  EXPECT_LE(compare(c[0], ref[0]).max_abs_rel, kTol);
}

TEST(CpuNhwc, DISABLED_FastVitStack) {
  Builder b;
  plan::Plan lin = fastvit_stack(b, 32, 64);
  plan::Plan nhwc = lin;
  plan::assign_nhwc_layout(nhwc, {});
  plan::plan_memory(lin);
  plan::plan_memory(nhwc);
  for (int threads : {1, 2, 4, 8, 16}) {
    if (threads > 1 && threads > omp_get_num_procs()) break;
    double tl = 1e30, tn = 1e30;
    for (int rep = 0; rep < 3; ++rep) {  // interleaved, best of
      tl = std::min(tl, time_plan(lin, b.values, threads, 5));
      tn = std::min(tn, time_plan(nhwc, b.values, threads, 5));
    }
    std::printf("fastvit-like stack 32x64, threads=%d: nchw %.2f ms, nhwc %.2f ms (%.2fx)\n", threads, tl, tn, tl / tn);
  }
}

}  // namespace
}  // namespace opv::test

namespace opv::test {
namespace {

// uint8 image -> Cast(f32) with per-channel Sub/Div post-ops -> conv: the normalisation runs on
// the row-major image (long inner rows; measured faster than channels-last here) and one Reorder
// hands the float image to the NHWC conv.
TEST(CpuNhwc, InputNormalisationBeforeConv) {
  for (int threads : {1, 2}) {
    Builder b;
    const Shape s{1, 6, 9, 11};
    int x = b.p.add_buffer({"img", DType::U8, s, Layout::Linear, BufferKind::Input});
    b.p.inputs.push_back(x);
    Tensor img(DType::U8, s);
    for (int64_t i = 0; i < img.numel(); ++i) img.data<uint8_t>()[i] = uint8_t((i * 37 + 11) % 256);
    b.values[x] = img;
    Attrs cast;
    cast.set("to", int64_t(DType::F32));
    int mean = b.constant({6, 1, 1}, 100.f, 150.f), stdev = b.constant({6, 1, 1}, 40.f, 60.f);
    int f = b.call(OpKind::Cast, cast, {x, mean, stdev}, s,
                   {binary_po(OpKind::Sub, 1), binary_po(OpKind::Div, 2)});
    int y = b.conv(f, 6, 8, 3, 2, 1, {1, 8, 5, 6}, {unary_po(OpKind::Relu)});
    b.call(OpKind::Identity, {}, {y}, {1, 8, 5, 6}, {}, BufferKind::Output);
    plan::Plan p = b.p;
    ASSERT_TRUE(plan::assign_nhwc_layout(p, {}));
    EXPECT_EQ(p.buffers[size_t(f)].layout, Layout::Linear) << p.dump();
    EXPECT_EQ(count_reorders(p), 2) << p.dump();  // before the conv, after it (the output is Linear)
    const plan::Call& second = p.calls[1];
    ASSERT_EQ(p.kernels[size_t(second.kernel)].op, OpKind::Reorder) << p.dump();
    EXPECT_EQ(second.inputs[0], f);
    plan::plan_memory(p);
    plan::validate(p);
    auto ref = reference_eval(b.p, b.values);
    auto got = run_cpu(p, b.values, threads);
    ErrorMetrics m = compare(got[0], ref[0]);
    EXPECT_LE(m.rel_l2, kTol) << "threads " << threads;
    EXPECT_LE(m.max_abs_rel, kTol) << "threads " << threads;
  }
}

}  // namespace
}  // namespace opv::test
