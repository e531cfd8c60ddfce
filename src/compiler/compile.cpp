// The compiler driver: ONNX -> ir::Graph -> graph passes -> plan::Plan -> plan passes ->
// compact -> memory planning. Also optimize(): plan passes on an existing plan (`opvision opt`).
// Which plan passes run is decided here (options, mandatory passes); running them (validation,
// observer, dumps) is the plan-pass driver's job (plan/passes/driver.cpp).
#include "compiler/compile.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "import/onnx_import.h"
#include "ir/passes/passes.h"
#include "plan/passes/passes.h"

namespace opv {

namespace {

bool listed(const std::vector<std::string>& names, const std::string& n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

// The plan passes of opts.target that this compile runs, in order: mandatory ones always, others
// unless disabled, left out by only_passes, or opt-in and not asked for.
std::vector<plan::PlanPassInfo> scheduled_passes(const CompileOptions& opts) {
  std::vector<plan::PlanPassInfo> run;
  for (const plan::PlanPassInfo& pass : plan::plan_passes_for(opts.target)) {
    bool mandatory = plan_pass_mandatory(opts.target, pass.name);
    if (!mandatory && (listed(opts.disable_passes, pass.name) ||
                       (!opts.only_passes.empty() && !listed(opts.only_passes, pass.name)) ||
                       (pass.opt_in && !listed(opts.only_passes, pass.name))))
      continue;
    run.push_back(pass);
  }
  return run;
}

std::vector<std::string> pass_names(const std::vector<plan::PlanPassInfo>& passes) {
  std::vector<std::string> names;
  for (const plan::PlanPassInfo& p : passes) names.push_back(p.name);
  return names;
}

// Checks --passes / --no-pass / --dump-after names: plan passes of the target (and, for
// disable_passes, graph passes too; for dump_after, the driver's dump points); mandatory passes
// cannot be disabled.
void check_pass_names(const CompileOptions& opts, const std::vector<std::string>& graph_names) {
  std::vector<std::string> plan_names;
  for (const auto& p : plan::plan_passes_for(opts.target)) plan_names.push_back(p.name);
  for (const std::string& name : opts.only_passes)
    if (!listed(plan_names, name))
      fail("unknown plan pass '", name, "' for target ", opts.target, " (plan passes: ",
           plan::plan_pass_list(opts.target), ")");
  for (const std::string& name : opts.disable_passes) {
    if (plan_pass_mandatory(opts.target, name))
      fail("pass '", name, "' always runs for target ", opts.target, " and cannot be disabled");
    if (!listed(graph_names, name) && !listed(plan_names, name)) {
      std::string list;
      for (const auto& k : graph_names) list += (list.empty() ? "" : ", ") + k;
      for (const auto& k : plan_names) list += (list.empty() ? "" : ", ") + k;
      fail("unknown pass '", name, "' for target ", opts.target, " (passes: ", list, ")");
    }
  }
  plan::check_dump_points(opts.target, opts.dump_after, pass_names(scheduled_passes(opts)));
}

}  // namespace

bool plan_pass_mandatory(const std::string& target, const std::string& pass) {
  return (target == "opencl" && pass == "codegen") ||
         (target == "cuda" && (pass == "cuda-codegen" || pass == "nvrtc"));
}

plan::Plan lower(const ir::Graph& g, const CompileOptions& opts) {
  std::vector<std::string> graph_names;
  for (const auto& p : ir::graph_passes()) graph_names.push_back(p.name);
  check_pass_names(opts, graph_names);
  plan::Plan p = lower_graph(g, opts);
  opts.pass_ctx.record(p.target, p.meta);
  plan::validate(p);
  plan::DriverOptions dopts;
  dopts.verbose = opts.verbose;
  dopts.observer = opts.report && opts.observer ? &opts.observer : nullptr;
  dopts.dump_after = opts.dump_after;
  dopts.dump_to = opts.dump_to;
  const std::vector<plan::PlanPassInfo> run = scheduled_passes(opts);
  plan::PassDriver driver(opts.target, pass_names(run), dopts, opts.pass_ctx);
  driver.checkpoint(p, plan::kLowerDumpPoint, true);
  std::string log;
  for (const plan::PlanPassInfo& pass : run) {
    bool changed = driver.run(p, pass.name, pass.fn);
    log += std::string(log.empty() ? "" : ",") + pass.name + (changed ? "" : "(noop)");
  }
  driver.finish(p);
  p.meta.set("plan_passes", log);
  return p;
}

plan::Plan compile_onnx(const std::string& onnx_path, const CompileOptions& opts) {
  // Unknown or misused pass names fail before the (slow) import.
  std::vector<std::string> graph_names;
  for (const auto& p : ir::graph_passes()) graph_names.push_back(p.name);
  check_pass_names(opts, graph_names);
  ir::Graph g = import_onnx(onnx_path);
  if (opts.verbose) std::fprintf(stderr, "[import] %s: %zu nodes\n", onnx_path.c_str(), g.nodes.size());
  if (opts.batch > 0) {
    const bool changed = ir::set_batch(g, opts.batch);
    if (opts.verbose)
      std::fprintf(stderr, "[graph] set_batch        batch %lld%s\n", (long long)opts.batch,
                   changed ? "" : " (the model's own)");
  }
  std::vector<std::string> graph_disabled;
  for (const std::string& name : opts.disable_passes)
    if (listed(graph_names, name)) graph_disabled.push_back(name);
  auto logs = ir::run_graph_passes(g, graph_disabled);
  if (opts.verbose)
    for (const auto& l : logs)
      std::fprintf(stderr, "[graph] %-16s nodes %d -> %d\n", l.pass.c_str(), l.nodes_before, l.nodes_after);
  return lower(g, opts);
}

plan::Plan optimize(plan::Plan p, const std::vector<std::string>& passes) { return optimize(std::move(p), passes, {}); }

plan::Plan optimize(plan::Plan p, const std::vector<std::string>& passes, const PassObserver& observer, bool verbose) {
  std::vector<plan::PlanPassFn> fns;
  for (const std::string& name : passes) {
    plan::PlanPassFn fn = plan::find_plan_pass(p.target, name);
    if (!fn)
      fail("unknown plan pass '", name, "' for target ", p.target, " (plan passes: ", plan::plan_pass_list(p.target),
           ")");
    fns.push_back(fn);
  }
  // The passes see an unplanned plan: memory planning runs again at the end.
  for (plan::Buffer& b : p.buffers)
    if (b.kind == plan::BufferKind::Intermediate) b.offset = -1;
  p.arena_bytes = 0;
  plan::validate(p);
  plan::DriverOptions dopts;
  dopts.verbose = verbose;
  dopts.observer = observer ? &observer : nullptr;
  // The options the plan was compiled with (recorded in its meta by lower()).
  plan::PassDriver driver(p.target, passes, dopts, plan::PassCtx::from_meta(p.meta));
  std::string log = p.meta.has("plan_passes") ? p.meta.s("plan_passes") : "";
  for (size_t i = 0; i < passes.size(); ++i) {
    bool changed = driver.run(p, passes[i], fns[i]);
    log += std::string(log.empty() ? "" : ",") + "opt:" + passes[i] + (changed ? "" : "(noop)");
  }
  driver.finish(p);
  p.meta.set("plan_passes", log);
  return p;
}

}  // namespace opv
