// Helpers for the cpu backend tests: build a one-call plan by hand, run it on the cpu backend
// and compare with ref::run on the same inputs.
#pragma once
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/metrics.h"
#include "kernels/reference.h"
#include "ops/shape_infer.h"
#include "plan/passes/passes.h"
#include "plan/plan.h"
#include "test_util.h"

namespace opv::test {

// One input of the call under test.
struct Arg {
  Tensor t;
  bool constant = false;  // Constant buffer (else an Input buffer)
  bool absent = false;    // optional input left out
};
inline Arg in(Tensor t) { return {std::move(t), false, false}; }
inline Arg cst(Tensor t) { return {std::move(t), true, false}; }
inline Arg none() { return {Tensor(), false, true}; }

inline Tensor rnd(const Shape& s, uint64_t seed, float lo = -1.f, float hi = 1.f) { return random_f32(s, seed, lo, hi); }

// Output shapes/dtypes from shape inference unless given.
inline std::vector<ValueInfo> infer_outs(OpKind op, const Attrs& a, const std::vector<Arg>& args,
                                         std::vector<ValueInfo> outs, const std::vector<PostOp>& post = {}) {
  auto referenced_by_post_op = [&](size_t i) {
    for (const PostOp& p : post)
      if (p.input == int(i)) return true;
    return false;
  };
  // Shape inference sees the op's own inputs: not the trailing post-op operands, not trailing
  // absent optional inputs.
  size_t n = args.size();
  while (n > 0 && (args[n - 1].absent || referenced_by_post_op(n - 1))) --n;
  std::vector<ValueInfo> ins;
  for (size_t i = 0; i < n; ++i)
    ins.push_back(args[i].absent ? ValueInfo{} : ValueInfo{args[i].t.dtype(), args[i].t.shape(), &args[i].t});
  infer_shapes(op, a, ins, outs);
  return outs;
}

struct OneCallResult {
  std::vector<Tensor> cpu, ref;
  std::vector<backend::CallPath> paths;  // how the cpu backend ran each plan call
};

// Builds the plan, runs it on the cpu backend (twice: runs must be bit-identical) and ref::run.
inline OneCallResult run_one_call(OpKind op, const Attrs& a, const std::vector<PostOp>& post,
                                  const std::vector<Arg>& args, std::vector<ValueInfo> outs, int threads,
                                  bool nhwc = false, bool bf16 = false) {
  plan::Plan p;
  p.target = "cpu";
  plan::Kernel k;
  k.name = std::string("test_") + op_name(op);
  k.op = op;
  k.attrs = a;
  k.post_ops = post;
  const int kid = p.add_kernel(k);
  plan::Call c;
  c.kernel = kid;
  c.label = std::string("node_") + op_name(op);
  std::vector<const Tensor*> feeds;
  // In nhwc mode the call's activations are temporaries copied from/to the plan's Inputs and
  // Outputs by Identity calls, so that the NHWC pass can give them NHWC storage.
  plan::Kernel idk;
  idk.name = "copy";
  idk.op = OpKind::Identity;
  const int copy_kid = nhwc ? p.add_kernel(idk) : -1;
  // 4-D f32 inputs come through a 1x1 MaxPool (an exact identity that the pass treats as a
  // spatial op), so element-wise calls under test see NHWC inputs too.
  plan::Kernel mpk;
  mpk.name = "maxpool_1x1";
  mpk.op = OpKind::MaxPool;
  mpk.attrs.set("kernel", std::vector<int64_t>{1, 1});
  mpk.attrs.set("strides", std::vector<int64_t>{1, 1});
  mpk.attrs.set("pads", std::vector<int64_t>{0, 0, 0, 0});
  mpk.attrs.set("dilations", std::vector<int64_t>{1, 1});
  const int pool_kid = nhwc ? p.add_kernel(mpk) : -1;
  std::vector<plan::Call> before, after;
  auto wrap = [&](int id, bool is_input) {
    if (!nhwc) return id;
    plan::Buffer t = p.buffers[size_t(id)];
    t.name += "_tmp";
    t.kind = plan::BufferKind::Intermediate;
    int tid = p.add_buffer(t);
    const bool spatial = t.shape.size() == 4 && t.dtype == DType::F32;
    if (is_input) before.push_back({spatial ? pool_kid : copy_kid, {id}, {tid}, {}, {}, "copy_in"});
    else after.push_back({copy_kid, {tid}, {id}, {}, {}, "copy_out"});
    return tid;
  };
  for (const Arg& x : args) {
    if (x.absent) {
      c.inputs.push_back(-1);
      continue;
    }
    if (x.constant) {
      c.inputs.push_back(p.add_constant("c" + std::to_string(c.inputs.size()), x.t.dtype(), x.t.shape(),
                                        plan::Layout::Linear, x.t.raw(), x.t.nbytes()));
    } else {
      plan::Buffer b{"in" + std::to_string(c.inputs.size()), x.t.dtype(), x.t.shape(), plan::Layout::Linear,
                     plan::BufferKind::Input};
      int id = p.add_buffer(b);
      p.inputs.push_back(id);
      c.inputs.push_back(wrap(id, true));
      feeds.push_back(&x.t);
    }
  }
  OneCallResult r;
  for (size_t i = 0; i < outs.size(); ++i) {
    plan::Buffer b{"out" + std::to_string(i), outs[i].dtype, outs[i].shape, plan::Layout::Linear,
                   plan::BufferKind::Output};
    int id = p.add_buffer(b);
    p.outputs.push_back(id);
    c.outputs.push_back(wrap(id, false));
    r.cpu.emplace_back(outs[i].dtype, outs[i].shape);
    r.ref.emplace_back(outs[i].dtype, outs[i].shape);
  }
  p.calls = before;
  p.calls.push_back(c);
  p.calls.insert(p.calls.end(), after.begin(), after.end());
  if (nhwc) {
    // Through the NHWC pass: Reorders around the call, which then runs on NHWC temporaries.
    EXPECT_TRUE(plan::assign_nhwc_layout(p, {})) << "nhwc pass did not apply to " << op_name(op);
    plan::plan_memory(p);
    plan::validate(p);
  }

  backend::Options o;
  o.threads = threads;
  o.cpu_bf16 = bf16;
  auto be = backend::make_cpu_backend(o);
  be->load(p);
  r.paths = backend::cpu_call_paths(p, o);
  std::vector<Tensor*> outp;
  for (auto& t : r.cpu) outp.push_back(&t);
  be->run(feeds, outp);
  std::vector<Tensor> again;
  for (auto& t : r.cpu) again.emplace_back(t.dtype(), t.shape());
  std::vector<Tensor*> againp;
  for (auto& t : again) againp.push_back(&t);
  be->run(feeds, againp);
  for (size_t i = 0; i < again.size(); ++i) EXPECT_TRUE(bit_equal(again[i], r.cpu[i])) << "run is not deterministic";

  std::vector<const Tensor*> rin;
  for (const Arg& x : args) rin.push_back(x.absent ? nullptr : &x.t);
  std::vector<Tensor*> rout;
  for (auto& t : r.ref) rout.push_back(&t);
  ref::run({op, a, post}, rin, rout);
  return r;
}

constexpr double kTol = 1e-4;  // the cpu backend's stated tolerance

// Float outputs within tolerance, others bit-equal.
inline void expect_close(const OneCallResult& r, const std::string& what) {
  for (size_t i = 0; i < r.cpu.size(); ++i) {
    if (is_float(r.cpu[i].dtype())) {
      ErrorMetrics m = compare(r.cpu[i], r.ref[i]);
      EXPECT_TRUE(m.finite) << what;
      EXPECT_LE(m.rel_l2, kTol) << what << " output " << i;
      EXPECT_LE(m.max_abs_rel, kTol) << what << " output " << i;
    } else {
      EXPECT_TRUE(bit_equal(r.cpu[i], r.ref[i])) << what << " output " << i;
    }
  }
}

inline void check(OpKind op, const Attrs& a, const std::vector<PostOp>& post, const std::vector<Arg>& args,
                  int threads, const std::string& what, std::vector<ValueInfo> outs = {ValueInfo{}},
                  bool nhwc = false) {
  std::vector<ValueInfo> o = infer_outs(op, a, args, std::move(outs), post);
  expect_close(run_one_call(op, a, post, args, o, threads, nhwc), what + (nhwc ? " [nhwc]" : ""));
}

inline PostOp unary_po(OpKind k, float alpha = 0.f, float beta = 0.f) {
  PostOp p;
  p.op = k;
  p.alpha = alpha;
  p.beta = beta;
  return p;
}
inline PostOp binary_po(OpKind k, int input, bool swapped = false) {
  PostOp p;
  p.op = k;
  p.input = input;
  p.swapped = swapped;
  return p;
}

}  // namespace opv::test
