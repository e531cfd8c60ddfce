// Helpers of the image-layout / image-family / input-pack tests: lower one ir::Graph for target
// "opencl" and for "reference", run both on the same random inputs and compare every output
// with the fp16 bounds of DESIGN.md; find which family generated the call of a graph node.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "compiler/compile.h"
#include "core/metrics.h"
#include "plan/passes/passes.h"
#include "runtime/session.h"
#include "target/opencl/codegen.h"
#include "target/opencl/passes.h"
#include "test_util.h"

namespace opv::test {

// Whether backend "opencl" can be created here (a device exists).
// Adds a node with a given output shape, dtype and post-ops, without shape inference.
inline int raw_node(ir::Graph& g, const std::string& name, OpKind op, Attrs a, std::vector<int> ins, const Shape& out,
             DType dt = DType::F32, std::vector<PostOp> post = {}) {
  ir::Value v;
  v.name = name + "_out";
  v.dtype = dt;
  v.shape = out;
  int id = g.add_value(std::move(v));
  ir::Node n;
  n.name = name;
  n.op = op;
  n.attrs = std::move(a);
  n.inputs = std::move(ins);
  n.outputs = {id};
  n.post_ops = std::move(post);
  g.add_node(std::move(n));
  return id;
}

inline bool opencl_available() {
  static const bool ok = [] {
    try {
      (void)backend::create("opencl");
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }();
  return ok;
}

#define OPV_REQUIRE_OPENCL()                                              \
  do {                                                                    \
    if (!::opv::test::opencl_available()) GTEST_SKIP() << "no OpenCL device"; \
  } while (0)

inline plan::Plan lower_for(const ir::Graph& g, const std::string& target,
                            const std::vector<std::string>& disable = {}) {
  CompileOptions o;
  o.target = target;
  o.disable_passes = disable;
  return lower(g, o);
}

// Random inputs: floats uniform in [-1, 1), uint8 0..255.
inline runtime::NamedTensors inputs_for(const plan::Plan& p, uint64_t seed) {
  runtime::NamedTensors r;
  for (int id : p.inputs) {
    const plan::Buffer& b = p.buffers[size_t(id)];
    if (b.dtype == DType::U8) {
      Tensor t(DType::U8, b.shape);
      std::mt19937_64 rng(seed++);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = uint8_t(rng() & 0xff);
      r.push_back({b.name, std::move(t)});
    } else {
      r.push_back({b.name, random_f32(b.shape, seed++).cast(b.dtype)});
    }
  }
  return r;
}

inline runtime::NamedTensors run_plan(const plan::Plan& p, const runtime::NamedTensors& in) {
  runtime::Session s(p);
  return s.run(in);
}

// Runs `cl` on backend opencl (twice: bit-identical) and `ref` on backend reference; every
// output within rel_l2 and max_abs_rel <= tol.
inline void expect_close(const plan::Plan& cl, const plan::Plan& ref, uint64_t seed, const std::string& what,
                         double tol = 1e-2) {
  runtime::NamedTensors in = inputs_for(ref, seed);
  runtime::NamedTensors a = run_plan(cl, in);
  runtime::NamedTensors a2 = run_plan(cl, in);
  runtime::NamedTensors b = run_plan(ref, in);
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].second.nbytes(), a2[i].second.nbytes());
    EXPECT_EQ(0, std::memcmp(a[i].second.raw(), a2[i].second.raw(), a[i].second.nbytes()))
        << what << ": repeated runs differ";
    ErrorMetrics m = compare(a[i].second.cast(DType::F32), b[i].second.cast(DType::F32));
    EXPECT_TRUE(m.finite) << what << " output " << a[i].first;
    EXPECT_LE(m.rel_l2, tol) << what << " output " << a[i].first;
    EXPECT_LE(m.max_abs_rel, tol) << what << " output " << a[i].first;
  }
}

// The family of the call whose label is `label` (or starts with it), "" when host fallback,
// "?" when no such call.
inline std::string family_of(const plan::Plan& p, const std::string& label) {
  for (const plan::Call& c : p.calls)
    if (c.label == label) return p.kernels[size_t(c.kernel)].attrs.s("cl_family");
  return "?";
}

inline int count_op(const plan::Plan& p, OpKind op) {
  int n = 0;
  for (const plan::Call& c : p.calls) n += p.kernels[size_t(c.kernel)].op == op;
  return n;
}

// Every call has a generated kernel (no host fallback).
inline void expect_all_generated(const plan::Plan& p, const std::string& what) {
  for (const plan::Call& c : p.calls)
    EXPECT_FALSE(p.kernels[size_t(c.kernel)].source.empty()) << what << ": call '" << c.label << "' has no kernel";
}

}  // namespace opv::test
