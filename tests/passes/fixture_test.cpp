// The graph passes on the shared fixture model (skipped when ../shared/models is absent): the
// optimised graph is valid, much smaller, has no BatchNorm/Erf/Identity left, and computes the
// same outputs as the imported graph (fp16 model: bound 1e-2, DESIGN.md).
#include <gtest/gtest.h>

#include "graph_builder.h"
#include "import/onnx_import.h"
#include "ir/passes/passes.h"

namespace opv {
namespace {

TEST(GraphPassesFixture, OptimisedGraphComputesTheSame) {
  const std::string dir = test::shared_models_dir();
  if (dir.empty()) GTEST_SKIP() << "shared fixtures not found";
  ir::Graph before = import_onnx(dir + "/opvision_t12_fp16.onnx");
  ir::Graph after = before;
  std::vector<ir::PassLog> log = ir::run_graph_passes(after);
  after.validate();
  for (const ir::PassLog& l : log) EXPECT_LE(l.nodes_after, l.nodes_before) << l.pass;
  EXPECT_LT(test::live_count(after), test::live_count(before));
  EXPECT_EQ(test::count_op(after, OpKind::Erf), 0) << after.dump();
  EXPECT_EQ(test::count_op(after, OpKind::BatchNorm), 0);
  EXPECT_EQ(test::count_op(after, OpKind::Identity), 0);
  int post_ops = 0;
  for (const ir::Node& n : after.nodes) post_ops += int(n.post_ops.size());
  EXPECT_GT(post_ops, 0);

  std::map<std::string, Tensor> ins;
  uint64_t seed = 11;
  for (int v : before.inputs) {
    const ir::Value& val = before.values[v];
    Tensor t = test::random_f32(val.shape, seed++, 0.f, 256.f);
    Tensor u(val.dtype, val.shape);
    for (int64_t i = 0; i < t.numel(); ++i) u.set_f64(i, std::floor(t.get_f64(i)));
    ins[val.name] = u;
  }
  std::vector<Tensor> a = ir::evaluate(before, ins);
  std::vector<Tensor> b = ir::evaluate(after, ins);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ErrorMetrics m = compare(b[i], a[i]);
    EXPECT_TRUE(m.finite);
    EXPECT_LE(m.rel_l2, 1e-2) << "output " << i;
    EXPECT_LE(m.max_abs_rel, 1e-2) << "output " << i;
  }
}

}  // namespace
}  // namespace opv
