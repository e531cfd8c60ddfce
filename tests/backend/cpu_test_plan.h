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
                                         std::vector<ValueInfo> outs) {
  std::vector<ValueInfo> ins;
  for (const Arg& x : args) ins.push_back(x.absent ? ValueInfo{} : ValueInfo{x.t.dtype(), x.t.shape(), &x.t});
  infer_shapes(op, a, ins, outs);
  return outs;
}

struct OneCallResult {
  std::vector<Tensor> cpu, ref;
};

// Builds the plan, runs it on the cpu backend (twice: runs must be bit-identical) and ref::run.
inline OneCallResult run_one_call(OpKind op, const Attrs& a, const std::vector<PostOp>& post,
                                  const std::vector<Arg>& args, std::vector<ValueInfo> outs, int threads,
                                  std::vector<plan::Layout> in_layouts = {}) {
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
      c.inputs.push_back(id);
      feeds.push_back(&x.t);
    }
  }
  OneCallResult r;
  for (size_t i = 0; i < outs.size(); ++i) {
    plan::Buffer b{"out" + std::to_string(i), outs[i].dtype, outs[i].shape, plan::Layout::Linear,
                   plan::BufferKind::Output};
    int id = p.add_buffer(b);
    p.outputs.push_back(id);
    c.outputs.push_back(id);
    r.cpu.emplace_back(outs[i].dtype, outs[i].shape);
    r.ref.emplace_back(outs[i].dtype, outs[i].shape);
  }
  p.calls.push_back(c);
  (void)in_layouts;

  backend::Options o;
  o.threads = threads;
  auto be = backend::make_cpu_backend(o);
  be->load(p);
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
                  int threads, const std::string& what, std::vector<ValueInfo> outs = {ValueInfo{}}) {
  std::vector<ValueInfo> o = infer_outs(op, a, args, std::move(outs));
  expect_close(run_one_call(op, a, post, args, o, threads), what);
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
