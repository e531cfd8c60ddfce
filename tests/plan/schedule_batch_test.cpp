// Tests of plan passes "level-schedule" (src/plan/passes/level_schedule.cpp) and "batch"
// (src/target/opencl/batch.cpp): random DAGs keep every dependency and their reference results; batching
// merges independent same-kernel calls with the documented argument order and refuses others.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "backend/reference/reference_backend.h"
#include "plan/passes/passes.h"
#include "plan/plan.h"
#include "target/opencl/codegen.h"
#include "target/opencl/passes.h"
#include "test_util.h"

namespace opv::plan {
namespace {

std::vector<Tensor> run_ref(Plan p, uint64_t seed = 7) {
  compact(p);
  bool planned = false;
  for (const Buffer& b : p.buffers) planned |= b.kind == BufferKind::Intermediate && b.offset >= 0;
  if (!planned) plan_memory(p);
  validate(p);
  return test::run_on_reference(p, seed);
}

// A random DAG of element-wise calls over [4,5] f32 buffers: each call reads 1 or 2 earlier
// buffers (inputs, constants or temps) and writes one temp; the last few temps become outputs
// through a final Add chain so that every temp is used.
Plan random_dag(uint64_t seed, int ncalls) {
  std::mt19937_64 rng(seed);
  Plan p;
  p.target = "reference";
  const Shape s{4, 5};
  std::vector<int> avail;
  for (int i = 0; i < 2; ++i) {
    int id = p.add_buffer({"x" + std::to_string(i), DType::F32, s, Layout::Linear, BufferKind::Input});
    p.inputs.push_back(id);
    avail.push_back(id);
  }
  std::vector<float> w(20);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 5) * 0.25f - 0.5f;
  avail.push_back(p.add_constant("w", DType::F32, s, Layout::Linear, w.data(), w.size() * 4));
  const OpKind unary[] = {OpKind::Relu, OpKind::Tanh, OpKind::Neg}, binary[] = {OpKind::Add, OpKind::Mul, OpKind::Max};
  std::map<int, int> kernel_of;
  auto kernel = [&](OpKind op) {
    auto it = kernel_of.find(int(op));
    if (it != kernel_of.end()) return it->second;
    Kernel k;
    k.name = std::string("k_") + op_name(op);
    k.op = op;
    return kernel_of[int(op)] = p.add_kernel(k);
  };
  std::vector<int> temps;
  for (int c = 0; c < ncalls; ++c) {
    int out = p.add_buffer({"t" + std::to_string(c), DType::F32, s, Layout::Linear, BufferKind::Intermediate});
    bool bin = rng() % 2;
    int a = avail[rng() % avail.size()], b = avail[rng() % avail.size()];
    if (bin)
      p.calls.push_back({kernel(binary[rng() % 3]), {a, b}, {out}, {}, {}, "c" + std::to_string(c)});
    else
      p.calls.push_back({kernel(unary[rng() % 3]), {a}, {out}, {}, {}, "c" + std::to_string(c)});
    avail.push_back(out);
    temps.push_back(out);
  }
  // Sum all temps into one output (keeps everything live and observable).
  int acc = temps[0];
  for (size_t i = 1; i < temps.size(); ++i) {
    bool last = i + 1 == temps.size();
    int o = last ? p.add_buffer({"y", DType::F32, s, Layout::Linear, BufferKind::Output})
                 : p.add_buffer({"s" + std::to_string(i), DType::F32, s, Layout::Linear, BufferKind::Intermediate});
    p.calls.push_back({kernel(OpKind::Add), {acc, temps[i]}, {o}, {}, {}, "sum" + std::to_string(i)});
    acc = o;
  }
  p.outputs.push_back(acc);
  validate(p);
  return p;
}

// Level of every call computed independently (longest producer path, RAW only: plans without
// memory planning have unique buffers).
std::vector<int> raw_levels(const Plan& p) {
  std::map<int, int> level_of_buffer;
  std::vector<int> lv;
  for (const Call& c : p.calls) {
    int l = 0;
    for (int b : c.inputs) {
      auto it = level_of_buffer.find(b);
      if (it != level_of_buffer.end()) l = std::max(l, it->second + 1);
    }
    for (int b : c.outputs) level_of_buffer[b] = l;
    lv.push_back(l);
  }
  return lv;
}

TEST(LevelSchedule, RandomDagsKeepDependenciesAndResults) {
  for (uint64_t seed = 1; seed <= 25; ++seed) {
    Plan p = random_dag(seed, 6 + int(seed % 20));
    Plan before = p;
    level_schedule(p, {});
    validate(p);  // every read after its write, outputs written once
    // Every call is after its producers (checked directly too) and levels never decrease.
    std::map<int, size_t> writer;
    for (size_t i = 0; i < p.calls.size(); ++i)
      for (int b : p.calls[i].outputs) writer[b] = i;
    for (size_t i = 0; i < p.calls.size(); ++i)
      for (int b : p.calls[i].inputs)
        if (writer.count(b)) {
          EXPECT_LT(writer[b], i) << "seed " << seed;
        }
    std::vector<int> lv = raw_levels(p);
    for (size_t i = 1; i < lv.size(); ++i) EXPECT_LE(lv[i - 1], lv[i]) << "seed " << seed;
    // Within a level, calls of one kernel are contiguous.
    for (size_t i = 0; i < p.calls.size(); ++i)
      for (size_t j = i + 2; j < p.calls.size() && lv[j] == lv[i]; ++j)
        if (p.calls[j].kernel == p.calls[i].kernel) {
          for (size_t m = i + 1; m < j; ++m) EXPECT_EQ(p.calls[m].kernel, p.calls[i].kernel) << "seed " << seed;
        }
    // Same multiset of calls, same results.
    EXPECT_EQ(p.calls.size(), before.calls.size());
    std::vector<Tensor> a = run_ref(before), b = run_ref(p);
    EXPECT_TRUE(bit_equal(a[0], b[0])) << "seed " << seed;
    // Idempotent.
    EXPECT_FALSE(level_schedule(p, {})) << "seed " << seed;
  }
}

TEST(LevelSchedule, GroupsSameKernelCallsOfOneLevel) {
  Plan p;
  p.target = "reference";
  const Shape s{3};
  int x = p.add_buffer({"x", DType::F32, s, Layout::Linear, BufferKind::Input});
  p.inputs.push_back(x);
  Kernel kr, kt, ka;
  kr.name = "relu";
  kr.op = OpKind::Relu;
  kt.name = "tanh";
  kt.op = OpKind::Tanh;
  ka.name = "add";
  ka.op = OpKind::Add;
  int r = p.add_kernel(kr), t = p.add_kernel(kt), a = p.add_kernel(ka);
  std::vector<int> outs;
  for (int i = 0; i < 4; ++i)
    outs.push_back(p.add_buffer({"t" + std::to_string(i), DType::F32, s, Layout::Linear, BufferKind::Intermediate}));
  // relu, tanh, relu, tanh, all on x (level 0)
  for (int i = 0; i < 4; ++i)
    p.calls.push_back({i % 2 ? t : r, {x}, {outs[size_t(i)]}, {}, {}, "c" + std::to_string(i)});
  int s1 = p.add_buffer({"s1", DType::F32, s, Layout::Linear, BufferKind::Intermediate});
  int s2 = p.add_buffer({"s2", DType::F32, s, Layout::Linear, BufferKind::Intermediate});
  int y = p.add_buffer({"y", DType::F32, s, Layout::Linear, BufferKind::Output});
  p.outputs.push_back(y);
  p.calls.push_back({a, {outs[0], outs[1]}, {s1}, {}, {}, "a1"});
  p.calls.push_back({a, {outs[2], outs[3]}, {s2}, {}, {}, "a2"});
  p.calls.push_back({a, {s1, s2}, {y}, {}, {}, "a3"});
  Plan before = p;
  ASSERT_TRUE(level_schedule(p, {}));
  validate(p);
  std::vector<std::string> labels;
  for (const Call& c : p.calls) labels.push_back(c.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"c0", "c2", "c1", "c3", "a1", "a2", "a3"}));
  EXPECT_TRUE(bit_equal(run_ref(before)[0], run_ref(p)[0]));
}

// After memory planning, buffers sharing arena bytes are one storage: the schedule must not
// move a writer of shared bytes before an earlier reader of them.
TEST(LevelSchedule, RespectsArenaSharingAfterMemoryPlanning) {
  for (uint64_t seed = 100; seed < 120; ++seed) {
    Plan p = random_dag(seed, 12);
    plan_memory(p);
    validate(p);
    Plan before = p;
    level_schedule(p, {});
    validate(p);  // arena overlap while live is a validation error
    EXPECT_TRUE(bit_equal(run_ref(before)[0], run_ref(p)[0])) << "seed " << seed;
  }
}

// ---- batch ----

// An "opencl" plan: `n` calls out_i = in0_i + in1_i on [16] f32 buffers, generated by the codegen
// pass (family linear: one kernel for all calls, whose description the batch pass derives again).
struct ClPlan {
  Plan p;
  std::vector<int> a, b, o;
  std::string entry;  // the generated kernel's entry
};
ClPlan cl_plan(int n) {
  ClPlan r;
  r.p.target = "opencl";
  Kernel k;
  k.name = "add";
  k.op = OpKind::Add;
  const int kid = r.p.add_kernel(k);
  const Shape s{16};
  for (int i = 0; i < n; ++i) {
    int a = r.p.add_buffer({"a" + std::to_string(i), DType::F32, s, Layout::Linear, BufferKind::Input});
    int b = r.p.add_buffer({"b" + std::to_string(i), DType::F32, s, Layout::Linear, BufferKind::Input});
    int o = r.p.add_buffer({"o" + std::to_string(i), DType::F32, s, Layout::Linear, BufferKind::Output});
    r.p.inputs.push_back(a);
    r.p.inputs.push_back(b);
    r.p.outputs.push_back(o);
    r.a.push_back(a);
    r.b.push_back(b);
    r.o.push_back(o);
    r.p.calls.push_back({kid, {a, b}, {o}, {}, {}, "add" + std::to_string(i)});
  }
  cl::codegen(r.p, {});
  EXPECT_EQ(r.p.kernels.size(), 1u);
  EXPECT_EQ(r.p.kernels[0].attrs.s("cl_family"), "linear");
  EXPECT_GT(r.p.calls[0].global[0], 0);
  r.entry = r.p.kernels[0].entry;
  return r;
}

TEST(Batch, MergesFourIndependentCallsWithDocumentedArgumentOrder) {
  ClPlan c = cl_plan(4);
  ASSERT_TRUE(batch_calls(c.p, {}));
  validate(c.p);
  ASSERT_EQ(c.p.calls.size(), 1u);
  const Call& m = c.p.calls[0];
  EXPECT_EQ(m.outputs, c.o);
  EXPECT_EQ(m.inputs, (std::vector<int>{c.a[0], c.b[0], c.a[1], c.b[1], c.a[2], c.b[2], c.a[3], c.b[3]}));
  const int64_t g0 = cl_plan(1).p.calls[0].global[0];
  EXPECT_EQ(m.global, (std::array<int64_t, 3>{g0, 1, 4}));
  EXPECT_EQ(m.label, "add0+add1+add2+add3");
  const Kernel& k = c.p.kernels[size_t(m.kernel)];
  EXPECT_EQ(k.entry, c.entry + "_x4");
  EXPECT_EQ(k.attrs.i("cl_batch"), 4);
  // The batched parameters follow the call's argument order: outputs of every group, then inputs.
  std::string params;
  for (int g = 0; g < 4; ++g) params += (g ? ", " : "") + std::string("__global float* out0_") + std::to_string(g);
  for (int g = 0; g < 4; ++g)
    for (int j = 0; j < 2; ++j)
      params += ", __global const float* in" + std::to_string(j) + "_" + std::to_string(g);
  EXPECT_EQ(k.attrs.s("cl_params"), params);
  EXPECT_NE(k.source.find("__kernel void " + c.entry + "_x4(" + params + ")"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("case 2: " + c.entry + "_body(out0_2, in0_2, in1_2); break;"), std::string::npos);
  EXPECT_FALSE(batch_calls(c.p, {})) << "a batched call is not batched again";
}

TEST(Batch, AtMostMaxBatchAndRespectsLocalSize) {
  const int64_t kMaxBatch = cl::Options{}.batch_max;
  ClPlan c = cl_plan(kMaxBatch + 2);
  for (Call& call : c.p.calls) call.local = {4, 0, 0};
  ASSERT_TRUE(batch_calls(c.p, {}));
  validate(c.p);
  ASSERT_EQ(c.p.calls.size(), 2u);
  EXPECT_EQ(c.p.kernels[size_t(c.p.calls[0].kernel)].attrs.i("cl_batch"), kMaxBatch);
  EXPECT_EQ(c.p.kernels[size_t(c.p.calls[1].kernel)].attrs.i("cl_batch"), 2);
  EXPECT_EQ(c.p.calls[0].local, (std::array<int64_t, 3>{4, 1, 1}));
}

TEST(Batch, PassCtxSetsTheLimit) {
  ClPlan c = cl_plan(7);
  PassCtx six;
  six.cl.batch_max = 6;
  ASSERT_TRUE(batch_calls(c.p, six));
  validate(c.p);
  ASSERT_EQ(c.p.calls.size(), 2u);
  EXPECT_EQ(c.p.kernels[size_t(c.p.calls[0].kernel)].attrs.i("cl_batch"), 6);
  EXPECT_EQ(c.p.calls[1].global[2], 0) << "the seventh call stays alone";
  ClPlan one = cl_plan(3);
  PassCtx single;
  single.cl.batch_max = 1;
  EXPECT_FALSE(batch_calls(one.p, single)) << "a limit of 1 batches nothing";
}

TEST(Batch, RefusesDependentCallsAndOtherGeometry) {
  ClPlan c = cl_plan(3);
  // Call 1 reads call 0's output: make o0 an Intermediate feeding call 1.
  Plan& p = c.p;
  p.buffers[size_t(c.o[0])].kind = BufferKind::Intermediate;
  p.outputs.erase(p.outputs.begin());
  p.calls[1].inputs[0] = c.o[0];
  // Call 2 has another launch geometry.
  p.calls[2].global = {p.calls[0].global[0] + 8, 0, 0};
  validate(p);
  EXPECT_FALSE(batch_calls(p, {}));
  EXPECT_EQ(p.calls.size(), 3u);

  ClPlan d = cl_plan(2);
  EXPECT_TRUE(batch_calls(d.p, {})) << "independent calls merge";

  // Kernels without a description are left alone: no family, a source changed after codegen (its
  // description no longer renders to it), a host fallback (no source).
  ClPlan e = cl_plan(2);
  e.p.kernels[0].attrs.erase("cl_family");
  EXPECT_FALSE(batch_calls(e.p, {}));
  ClPlan edited = cl_plan(2);
  edited.p.kernels[0].source += "// edited\n";
  EXPECT_FALSE(batch_calls(edited.p, {}));
  ClPlan f = cl_plan(2);
  f.p.kernels[0].source.clear();
  EXPECT_FALSE(batch_calls(f.p, {}));
}

TEST(Batch, ArenaSharingIsADependency) {
  // x -> t0 (call 0), t0 -> y0 (call 1), x -> t1 (call 2) where t1 reuses t0's bytes: calls 1
  // and 2 are adjacent and of one kernel, but call 2 overwrites what call 1 reads.
  Plan p;
  p.target = "opencl";
  Kernel k;
  k.name = "copy";
  k.op = OpKind::Identity;
  int kid = p.add_kernel(k);
  const Shape s{16};
  int x = p.add_buffer({"x", DType::F32, s, Layout::Linear, BufferKind::Input});
  p.inputs.push_back(x);
  int t0 = p.add_buffer({"t0", DType::F32, s, Layout::Linear, BufferKind::Intermediate});
  int t1 = p.add_buffer({"t1", DType::F32, s, Layout::Linear, BufferKind::Intermediate});
  int y0 = p.add_buffer({"y0", DType::F32, s, Layout::Linear, BufferKind::Output});
  int y1 = p.add_buffer({"y1", DType::F32, s, Layout::Linear, BufferKind::Output});
  p.outputs = {y0, y1};
  p.calls.push_back({kid, {x}, {t0}, {16, 0, 0}, {}, "c0"});
  p.calls.push_back({kid, {t0}, {y0}, {16, 0, 0}, {}, "c1"});
  p.calls.push_back({kid, {x}, {t1}, {16, 0, 0}, {}, "c2"});
  p.calls.push_back({kid, {t1}, {y1}, {16, 0, 0}, {}, "c3"});
  cl::codegen(p, {});  // family linear: one copy kernel, one launch geometry for all four calls
  ASSERT_EQ(p.kernels.size(), 1u);
  plan_memory(p);
  ASSERT_EQ(p.buffers[size_t(t0)].offset, p.buffers[size_t(t1)].offset) << "test premise: t0 and t1 share bytes";
  validate(p);
  batch_calls(p, {});
  validate(p);
  for (const Call& c : p.calls) EXPECT_EQ(c.label.find("c1+c2"), std::string::npos) << c.label;
  for (const Call& c : p.calls) EXPECT_EQ(c.label.find("c0+c1"), std::string::npos) << c.label;
}

}  // namespace
}  // namespace opv::plan
