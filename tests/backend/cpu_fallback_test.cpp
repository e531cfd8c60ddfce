// The cpu backend's reference-kernel fallback (issue 12: never a refusal for a supported op).
// Plans built by hand put the call under test between Reorder calls so that its buffers are
// NHWC (and, for fp16, F16 buffers the native loops do not take); the cpu backend must run them
// through ref::run with the layout conversions, match ref::run on the logical tensors, and
// report the call as a reference fallback in cpu_call_paths (what `opvision inspect` prints).
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "backend/cpu/cpu_backend.h"
#include "core/metrics.h"
#include "kernels/reference.h"
#include "plan/passes/passes.h"
#include "test_util.h"

namespace opv::test {
namespace {

using plan::BufferKind;
using plan::Layout;

struct FallbackPlan {
  plan::Plan p;
  std::map<int, Tensor> values;  // inputs and constants (logical, row-major)
  uint64_t seed = 21;
  FallbackPlan() { p.target = "cpu"; }

  int kernel(OpKind op, Attrs a = {}, std::vector<PostOp> post = {}) {
    plan::Kernel k;
    k.name = std::string(op_name(op)) + "_" + std::to_string(p.kernels.size());
    k.op = op;
    k.attrs = std::move(a);
    k.post_ops = std::move(post);
    return p.add_kernel(k);
  }
  int input(const Shape& s, DType dt) {
    Tensor t = random_f32(s, seed++);
    if (dt != DType::F32) t = t.cast(dt);
    int id = p.add_buffer({"x" + std::to_string(p.buffers.size()), dt, s, Layout::Linear, BufferKind::Input});
    p.inputs.push_back(id);
    values[id] = std::move(t);
    return id;
  }
  int constant(const Shape& s, DType dt) {
    Tensor t = random_f32(s, seed++, 0.5f, 1.5f);
    if (dt != DType::F32) t = t.cast(dt);
    int id = p.add_constant("c" + std::to_string(p.buffers.size()), dt, s, Layout::Linear, t.raw(), t.nbytes());
    values[id] = std::move(t);
    return id;
  }
  int buffer(const Shape& s, DType dt, Layout l, BufferKind k = BufferKind::Intermediate) {
    int id = p.add_buffer({"t" + std::to_string(p.buffers.size()), dt, s, l, k});
    if (k == BufferKind::Output) p.outputs.push_back(id);
    return id;
  }
  void call(int kid, std::vector<int> ins, std::vector<int> outs, const std::string& label) {
    p.calls.push_back({kid, std::move(ins), std::move(outs), {}, {}, label});
  }
  // A Reorder from `src` into a new buffer of layout `l` (its logical shape and dtype).
  int reorder(int src, Layout l, BufferKind k = BufferKind::Intermediate) {
    const plan::Buffer b = p.buffers[size_t(src)];
    int out = buffer(b.shape, b.dtype, l, k);
    call(kernel(OpKind::Reorder), {src}, {out}, "reorder");
    return out;
  }
};

// ref::run call by call on logical tensors: what any correct plan computes whatever the layout.
std::vector<Tensor> reference_eval(const plan::Plan& p, std::map<int, Tensor> v) {
  for (const plan::Call& c : p.calls) {
    const plan::Kernel& k = p.kernels[size_t(c.kernel)];
    std::vector<const Tensor*> ins;
    for (int id : c.inputs) ins.push_back(id < 0 ? nullptr : &v.at(id));
    std::vector<Tensor> outs;
    for (int id : c.outputs) outs.emplace_back(p.buffers[size_t(id)].dtype, p.buffers[size_t(id)].shape);
    std::vector<Tensor*> op;
    for (auto& t : outs) op.push_back(&t);
    if (k.op == OpKind::Reorder) std::memcpy(outs[0].raw(), ins[0]->raw(), ins[0]->nbytes());
    else ref::run({k.op, k.attrs, k.post_ops}, ins, op);
    for (size_t i = 0; i < c.outputs.size(); ++i) v[c.outputs[i]] = std::move(outs[i]);
  }
  std::vector<Tensor> r;
  for (int id : p.outputs) r.push_back(v.at(id));
  return r;
}

// Runs the plan on the cpu backend (1 and 2 threads, twice each: bit-identical), compares with
// reference_eval and returns how each call ran.
std::vector<backend::CallPath> check_plan(FallbackPlan& f, const std::string& what) {
  plan::plan_memory(f.p);
  plan::validate(f.p);
  const std::vector<Tensor> expect = reference_eval(f.p, f.values);
  for (int threads : {1, 2}) {
    backend::Options o;
    o.threads = threads;
    auto be = backend::make_cpu_backend(o);
    be->load(f.p);
    std::vector<const Tensor*> feeds;
    for (int id : f.p.inputs) feeds.push_back(&f.values.at(id));
    std::vector<Tensor> first;
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<Tensor> outs;
      for (int id : f.p.outputs) outs.emplace_back(f.p.buffers[size_t(id)].dtype, f.p.buffers[size_t(id)].shape);
      std::vector<Tensor*> op;
      for (auto& t : outs) op.push_back(&t);
      be->run(feeds, op);
      if (pass == 0) {
        first = outs;
        for (size_t i = 0; i < outs.size(); ++i) {
          ErrorMetrics m = compare(outs[i], expect[i]);
          EXPECT_TRUE(m.finite) << what;
          EXPECT_LE(m.rel_l2, 1e-5) << what << " output " << i << " threads " << threads;
          EXPECT_LE(m.max_abs_rel, 1e-5) << what << " output " << i << " threads " << threads;
        }
      } else {
        for (size_t i = 0; i < outs.size(); ++i) EXPECT_TRUE(bit_equal(outs[i], first[i])) << what;
      }
    }
  }
  return backend::cpu_call_paths(f.p);
}

const backend::CallPath& path_of(const std::vector<backend::CallPath>& paths, const std::string& label) {
  for (const auto& c : paths)
    if (c.label == label) return c;
  ADD_FAILURE() << "no call " << label;
  return paths.front();
}

// x (linear) -> Reorder -> NHWC -> op -> NHWC (4-D) or linear -> Reorder -> Output.
void check_nhwc_op(OpKind op, Attrs a, const Shape& in, const Shape& out, DType dt, const std::string& what,
                   std::vector<PostOp> post = {}, bool const_operand = false, bool self_operand = false) {
  FallbackPlan f;
  int x = f.input(in, dt);
  int xn = f.reorder(x, Layout::NHWC);
  std::vector<int> ins{xn};
  if (const_operand) ins.push_back(f.constant({in[1], 1, 1}, dt));
  if (self_operand) ins.push_back(xn);
  const bool out4 = out.size() == 4 && out[1] > 1 && out[2] * out[3] > 1;
  int y = f.buffer(out, dt, out4 ? Layout::NHWC : Layout::Linear);
  f.call(f.kernel(op, std::move(a), std::move(post)), ins, {y}, "under_test");
  if (out4) f.reorder(y, Layout::Linear, BufferKind::Output);
  else f.p.buffers[size_t(y)].kind = BufferKind::Output, f.p.outputs.push_back(y);
  auto paths = check_plan(f, what);
  const backend::CallPath& c = path_of(paths, "under_test");
  EXPECT_EQ(c.impl, backend::CallImpl::Reference) << what << ": expected the reference fallback";
  EXPECT_FALSE(c.why.empty()) << what;
}

TEST(CpuFallback, ResizeOnNhwc) {
  Attrs a;
  a.set("mode", std::string("linear"));
  a.set("coord", std::string("half_pixel"));
  a.set("scales", std::vector<double>{1, 1, 2, 2});
  check_nhwc_op(OpKind::Resize, a, {1, 6, 5, 7}, {1, 6, 10, 14}, DType::F32, "resize linear nhwc");
}

TEST(CpuFallback, LayerNormOnNhwcInput) {
  Attrs a;
  a.set("axis", int64_t(3));
  a.set("epsilon", 1e-5);
  FallbackPlan f;
  int x = f.input({1, 6, 5, 7}, DType::F32);
  int xn = f.reorder(x, Layout::NHWC);
  int s = f.constant({7}, DType::F32);
  int y = f.buffer({1, 6, 5, 7}, DType::F32, Layout::NHWC);
  f.call(f.kernel(OpKind::LayerNorm, a), {xn, s}, {y}, "under_test");
  f.reorder(y, Layout::Linear, BufferKind::Output);
  auto paths = check_plan(f, "layernorm nhwc");
  EXPECT_EQ(path_of(paths, "under_test").impl, backend::CallImpl::Reference);
}

TEST(CpuFallback, ReflectPadOnNhwc) {
  Attrs a;
  a.set("mode", std::string("reflect"));
  a.set("pads", std::vector<int64_t>{0, 0, 1, 2, 0, 0, 2, 1});
  check_nhwc_op(OpKind::Pad, a, {1, 4, 5, 6}, {1, 4, 8, 9}, DType::F32, "reflect pad nhwc");
}

// fp16 buffers (which cpu plans do not make, but a plan may hold): Mul by a per-channel
// constant with a residual post-op on NHWC F16 data: the native loops take neither.
TEST(CpuFallback, F16MulWithPostOpsOnNhwc) {
  check_nhwc_op(OpKind::Mul, {}, {1, 8, 4, 6}, {1, 8, 4, 6}, DType::F16, "f16 mul nhwc",
                {PostOp{OpKind::Relu}, PostOp{OpKind::Add, 0.f, 0.f, 2, false}}, true, true);
}

// A Gather (the own loop needs Linear) reading an NHWC buffer, output 3-D linear.
TEST(CpuFallback, GatherFromNhwc) {
  FallbackPlan f;
  int x = f.input({1, 5, 4, 3}, DType::F32);
  int xn = f.reorder(x, Layout::NHWC);
  Tensor idx(DType::I64, {2});
  idx.data<int64_t>()[0] = 3;
  idx.data<int64_t>()[1] = -1;
  int i = f.p.add_constant("idx", DType::I64, {2}, Layout::Linear, idx.raw(), idx.nbytes());
  f.values[i] = idx;
  Attrs a;
  a.set("axis", int64_t(1));
  int y = f.buffer({1, 2, 4, 3}, DType::F32, Layout::Linear, BufferKind::Output);
  f.call(f.kernel(OpKind::Gather, a), {xn, i}, {y}, "under_test");
  auto paths = check_plan(f, "gather nhwc");
  EXPECT_EQ(path_of(paths, "under_test").impl, backend::CallImpl::Reference);
}

// The issue-12 case at plan level: Mul by a per-channel constant on NHWC f32 data with post-ops
// whose residual operand is the Mul's own input (slot 3 = slot 0). It runs natively now.
TEST(CpuFallback, MulWithPostOpOperandsRunsNatively) {
  FallbackPlan f;
  int x = f.input({1, 8, 4, 6}, DType::F32);
  int xn = f.reorder(x, Layout::NHWC);
  int s = f.constant({8, 1, 1}, DType::F32), t = f.constant({8, 1, 1}, DType::F32);
  int y = f.buffer({1, 8, 4, 6}, DType::F32, Layout::NHWC);
  std::vector<PostOp> post{PostOp{OpKind::Add, 0.f, 0.f, 2, false}, PostOp{OpKind::Relu},
                           PostOp{OpKind::Add, 0.f, 0.f, 3, false}};
  f.call(f.kernel(OpKind::Mul, {}, post), {xn, s, t, xn}, {y}, "under_test");
  f.reorder(y, Layout::Linear, BufferKind::Output);
  auto paths = check_plan(f, "mul + post-ops nhwc");
  EXPECT_NE(path_of(paths, "under_test").impl, backend::CallImpl::Reference);
}

}  // namespace
}  // namespace opv::test
