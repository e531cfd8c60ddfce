// The cpu backend on the fixture model (../shared/models): compiled for "cpu" (with and
// without the NHWC pass) against the same model compiled for "reference", on random inputs.
// Skipped when the fixtures are absent.
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include <omp.h>

#include "compiler/compile.h"
#include "core/metrics.h"
#include "runtime/session.h"
#include "test_util.h"

namespace opv::test {
namespace {

std::string fixture() {
  std::string d = shared_models_dir();
  return d.empty() ? "" : d + "/opvision_t12_fp16.onnx";
}

plan::Plan compile_for(const std::string& target, std::vector<std::string> disable = {}) {
  CompileOptions o;
  o.target = target;
  o.disable_passes = std::move(disable);
  return compile_onnx(fixture(), o);
}

TEST(CpuModel, FixtureMatchesReference) {
  if (fixture().empty()) GTEST_SKIP() << "fixtures not found";
  plan::Plan ref_plan = compile_for("reference");
  plan::Plan nhwc = compile_for("cpu");
  plan::Plan lin = compile_for("cpu", {"layout-nhwc"});
  int nhwc_buffers = 0;
  for (const auto& b : nhwc.buffers) nhwc_buffers += b.layout == plan::Layout::NHWC;
  EXPECT_GT(nhwc_buffers, 0) << "the cpu pipeline should store activations NHWC";

  runtime::Session rs(ref_plan);
  auto inputs = rs.random_inputs(42);
  auto expect = rs.run(inputs);
  for (int threads : {1, 2}) {
    for (const plan::Plan* p : {&lin, &nhwc}) {
      runtime::Session s(*p, {threads, ""});
      auto got = s.run(inputs);
      ASSERT_EQ(got.size(), expect.size());
      for (size_t i = 0; i < got.size(); ++i) {
        ErrorMetrics m = compare(got[i].second, expect[i].second);
        EXPECT_TRUE(m.finite);
        EXPECT_LE(m.rel_l2, 1e-4) << got[i].first << " threads " << threads << (p == &nhwc ? " nhwc" : " linear");
        EXPECT_LE(m.max_abs_rel, 1e-4) << got[i].first << " threads " << threads;
      }
      // Repeated runs are bit-identical.
      auto again = s.run(inputs);
      for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(bit_equal(got[i].second, again[i].second));
    }
  }
}

}  // namespace
}  // namespace opv::test

namespace opv::test {
namespace {

// Timing of the fixture on the cpu backend, NCHW vs NHWC, with the slowest calls; run with
//   test_backend --gtest_also_run_disabled_tests --gtest_filter='*FixtureTiming*'
TEST(CpuModel, DISABLED_FixtureTiming) {
  if (fixture().empty()) GTEST_SKIP() << "fixtures not found";
  plan::Plan nhwc = compile_for("cpu");
  plan::Plan lin = compile_for("cpu", {"layout-nhwc"});
  for (int threads : {1, 2, 4, 8, 16}) {
    if (threads > 2 && threads > omp_get_num_procs()) break;
    for (const plan::Plan* p : {&lin, &nhwc}) {
      runtime::Session s(*p, {threads, ""});
      auto inputs = s.random_inputs(1);
      s.run(inputs);
      double best = 1e30;
      for (int i = 0; i < 10; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        s.run(inputs);
        best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::printf("fixture %s threads=%d: %.2f ms (best of 10), %zu calls\n", p == &nhwc ? "nhwc" : "nchw", threads,
                  best, p->calls.size());
      s.backend().set_profiling(true);
      s.run(inputs);
      auto t = s.backend().call_times_ms();
      std::map<std::string, double> by_kernel;
      for (size_t i = 0; i < t.size(); ++i) {
        const auto& k = p->kernels[size_t(p->calls[i].kernel)];
        by_kernel[op_name(k.op)] += t[i];
      }
      for (auto& [k, ms] : by_kernel) std::printf("   %-20s %8.2f ms\n", k.c_str(), ms);
      s.backend().set_profiling(false);
    }
  }
}

}  // namespace
}  // namespace opv::test
