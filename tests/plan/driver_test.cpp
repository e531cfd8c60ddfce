// Tests of the plan-pass driver (src/plan/passes/driver.cpp): dump points per target, refused
// dump points, dumps written exactly after the requested passes, validation after a change
// naming the pass, the kernel-source and weight digests of dump_plan_text(), and the typed pass
// options (PassCtx): handed to every pass, recorded in plan meta and read back.
#include <gtest/gtest.h>

#include <sstream>

#include "core/error.h"
#include "plan/passes/passes.h"
#include "plan/plan.h"

namespace opv::plan {
namespace {

// y = relu(x + w) on [2,3] f32, target reference.
Plan small_plan() {
  Plan p;
  p.target = "reference";
  const Shape s{2, 3};
  const std::vector<float> w{1, 2, 3, 4, 5, 6};
  Kernel add, relu;
  add.name = "add";
  add.op = OpKind::Add;
  relu.name = "relu";
  relu.op = OpKind::Relu;
  int ka = p.add_kernel(add), kr = p.add_kernel(relu);
  int x = p.add_buffer({"x", DType::F32, s, Layout::Linear, BufferKind::Input});
  int c = p.add_constant("w", DType::F32, s, Layout::Linear, w.data(), w.size() * sizeof(float));
  int t = p.add_buffer({"t", DType::F32, s, Layout::Linear, BufferKind::Intermediate});
  int y = p.add_buffer({"y", DType::F32, s, Layout::Linear, BufferKind::Output});
  p.inputs = {x};
  p.outputs = {y};
  p.calls.push_back({ka, {x, c}, {t}, {}, {}, "add"});
  p.calls.push_back({kr, {t}, {y}, {}, {}, "relu"});
  validate(p);
  return p;
}

bool no_change(Plan&, const PassCtx&) { return false; }
bool rename_kernel(Plan& p, const PassCtx& /*ctx*/) {
  p.kernels[0].name = "add_renamed";
  return true;
}
bool break_plan(Plan& p, const PassCtx& /*ctx*/) {
  p.calls[1].inputs[0] = 99;  // a buffer id out of range
  return true;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(PlanDriver, DumpPointsFollowThePassTable) {
  const std::vector<std::string> cpu = dump_points("cpu");
  ASSERT_EQ(cpu, (std::vector<std::string>{"lower", "dedupe", "layout-nhwc", "compact", "memory-plan"}));
  const std::vector<std::string> cl = dump_points("opencl");
  ASSERT_EQ(cl.size(), plan_passes_for("opencl").size() + 3);
  EXPECT_EQ(cl.front(), "lower");
  EXPECT_EQ(cl[1], "layout-image");
  EXPECT_EQ(cl.back(), "memory-plan");
  EXPECT_EQ(dump_points("reference"), (std::vector<std::string>{"lower", "compact", "memory-plan"}));
}

TEST(PlanDriver, RefusesUnknownAndUnscheduledDumpPoints) {
  try {
    check_dump_points("cpu", {"batch"}, {"dedupe", "layout-nhwc"});
    FAIL() << "a pass of another target was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dump points: lower, dedupe, layout-nhwc, compact, memory-plan"),
              std::string::npos)
        << e.what();
  }
  try {
    check_dump_points("cpu", {"dedupe"}, {"layout-nhwc"});
    FAIL() << "a pass that does not run was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not run"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_dump_points("cpu", {"all", "lower", "memory-plan", "dedupe"}, {"dedupe"}));
  DriverOptions o;
  o.dump_after = {"dedupe"};  // no stream
  EXPECT_THROW(PassDriver("cpu", {"dedupe"}, o, {}), Error);
}

TEST(PlanDriver, DumpsExactlyAfterTheRequestedPoints) {
  Plan p = small_plan();
  std::ostringstream out;
  DriverOptions o;
  o.dump_after = {"dedupe", "memory-plan"};
  o.dump_to = &out;
  PassDriver d("cpu", {"dedupe", "layout-nhwc"}, o, {});
  d.checkpoint(p, kLowerDumpPoint, true);
  EXPECT_FALSE(d.run(p, "dedupe", no_change));
  const std::string after_dedupe = out.str();
  EXPECT_EQ(after_dedupe, "== plan after dedupe (no change) ==\n" + dump_plan_text(p));
  EXPECT_TRUE(d.run(p, "layout-nhwc", rename_kernel));
  EXPECT_EQ(out.str(), after_dedupe) << "a point that was not asked for was dumped";
  d.finish(p);
  const std::string all = out.str();
  EXPECT_EQ(count(all, "== plan after "), 2u);
  EXPECT_NE(all.find("== plan after memory-plan (changed) ==\n"), std::string::npos);
  EXPECT_NE(all.find("add_renamed"), std::string::npos) << "the final dump shows the renamed kernel";
  EXPECT_GT(p.arena_bytes, 0) << "finish() plans memory";

  Plan q = small_plan();
  std::ostringstream every;
  o.dump_after = {kAllDumpPoints};
  o.dump_to = &every;
  PassDriver all_points("cpu", {"dedupe"}, o, {});
  all_points.checkpoint(q, kLowerDumpPoint, true);
  all_points.run(q, "dedupe", no_change);
  all_points.finish(q);
  EXPECT_EQ(count(every.str(), "== plan after "), 4u);  // lower, dedupe, compact, memory-plan
}

TEST(PlanDriver, ValidatesAfterAChangeAndNamesThePass) {
  Plan p = small_plan();
  PassDriver d("cpu", {"dedupe"}, {}, {});
  try {
    d.run(p, "dedupe", break_plan);
    FAIL() << "an invalid plan passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plan pass 'dedupe'"), std::string::npos) << e.what();
  }
}

// The pass sees the driver's PassCtx (batch_max stands for any option).
int64_t seen_batch_max = 0;
bool look_at_ctx(Plan&, const PassCtx& ctx) {
  seen_batch_max = ctx.cl.batch_max;
  return false;
}

TEST(PlanDriver, HandsItsPassCtxToEveryPass) {
  Plan p = small_plan();
  PassCtx ctx;
  ctx.cl.batch_max = 7;
  PassDriver d("cpu", {"dedupe"}, {}, ctx);
  d.run(p, "dedupe", look_at_ctx);
  EXPECT_EQ(seen_batch_max, 7);
}

TEST(PassCtx, RecordsOnlyNonDefaultsAndReadsThemBack) {
  Attrs meta;
  meta.set("source", std::string("m.onnx"));
  PassCtx{}.record("opencl", meta);
  EXPECT_EQ(meta.str(), "source=m.onnx") << "defaults leave no trace";
  PassCtx ctx;
  ctx.cl.busy_items = 65536;
  ctx.cl.weight_dtype = DType::F32;
  ctx.cl.images_in_buffers = true;
  ctx.cl.batch_max = 16;
  ASSERT_TRUE(ctx.cl.set_tune("cl_ks_max_lanes", 8));
  ASSERT_TRUE(ctx.cl.set_tune("cl_dw_split_min_taps", 9));
  EXPECT_FALSE(ctx.cl.set_tune("cl_unknown", 1));
  ctx.record("opencl", meta);
  EXPECT_EQ(meta.str(),
            "cl_batch_max=16 cl_busy_items=65536 cl_dw_split_min_taps=9 cl_image_storage=buffer cl_ks_max_lanes=8 "
            "cl_weight_dtype=f32 source=m.onnx");
  const PassCtx back = PassCtx::from_meta(meta);
  EXPECT_TRUE(back.cl == ctx.cl);
  // Back to the defaults: the keys go again.
  PassCtx{}.record("opencl", meta);
  EXPECT_EQ(meta.str(), "source=m.onnx");
  Attrs bad;
  bad.set("cl_weight_dtype", std::string("f8"));
  EXPECT_THROW(PassCtx::from_meta(bad), Error);
}

TEST(PlanDriver, DumpTextDigestsSourcesAndWeights) {
  Plan p = small_plan();
  p.kernels[0].source = "__kernel void add(void) {}";
  p.kernels[0].entry = "add";
  const std::string a = dump_plan_text(p);
  EXPECT_NE(a.find("  k0 entry=add options='' 26B fnv1a="), std::string::npos) << a;
  EXPECT_NE(a.find("  k1 (no source)\n"), std::string::npos) << a;
  p.kernels[0].source[0] = ' ';
  const std::string b = dump_plan_text(p);
  EXPECT_NE(a, b) << "a source change must show in the dump";
  p.weights[0] ^= 1;
  EXPECT_NE(dump_plan_text(p), b) << "a weight change must show in the dump";
}

}  // namespace
}  // namespace opv::plan
