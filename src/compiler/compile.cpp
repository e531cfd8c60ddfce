// The compiler driver: ONNX -> ir::Graph -> graph passes -> plan::Plan -> plan passes ->
// compact -> memory planning. Also optimize(): plan passes on an existing plan (`opvision opt`).
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

std::string plan_pass_list(const std::string& target) {
  std::string list;
  for (const auto& p : plan::plan_passes_for(target)) list += (list.empty() ? "" : ", ") + std::string(p.name);
  return list.empty() ? "none" : list;
}

using PlanPassFn = bool (*)(plan::Plan&);

// The plan pass `name` of `target`, or nullptr when it has none of that name.
PlanPassFn find_plan_pass(const std::string& target, const std::string& name) {
  for (const auto& p : plan::plan_passes_for(target))
    if (name == p.name) return p.fn;
  return nullptr;
}

// Runs one plan pass: validates after a change, reports to the observer, prints with verbose.
bool run_plan_pass(plan::Plan& p, const std::string& name, PlanPassFn fn, bool verbose,
                   const PassObserver* observer) {
  plan::Plan before;
  if (observer) before = p;
  size_t calls = p.calls.size();
  bool changed = false;
  try {
    changed = fn(p);
    if (changed) plan::validate(p);
  } catch (const Error& e) {
    fail("plan pass '", name, "': ", e.what());
  }
  if (verbose)
    std::fprintf(stderr, "[plan] %-14s %s calls %zu -> %zu\n", name.c_str(), changed ? "changed" : "no change", calls,
                 p.calls.size());
  if (observer) (*observer)(name, before, p, changed);
  return changed;
}

// compact, memory planning, final validation.
void finish(plan::Plan& p, bool verbose, const PassObserver* observer) {
  run_plan_pass(p, "compact", plan::compact, verbose, observer);
  plan::plan_memory(p);
  plan::validate(p);
  if (verbose)
    std::fprintf(stderr, "[plan] memory: arena %lld bytes (unplanned %lld)\n", (long long)p.arena_bytes,
                 (long long)plan::unplanned_bytes(p));
}

// Checks --passes / --no-pass names: plan passes of the target (and, for disable_passes, graph
// passes too); mandatory passes cannot be disabled.
void check_pass_names(const CompileOptions& opts, const std::vector<std::string>& graph_names) {
  std::vector<std::string> plan_names;
  for (const auto& p : plan::plan_passes_for(opts.target)) plan_names.push_back(p.name);
  for (const std::string& name : opts.only_passes)
    if (!listed(plan_names, name))
      fail("unknown plan pass '", name, "' for target ", opts.target, " (plan passes: ", plan_pass_list(opts.target),
           ")");
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
}

}  // namespace

bool plan_pass_mandatory(const std::string& target, const std::string& pass) {
  return target == "opencl" && pass == "codegen";
}

plan::Plan lower(const ir::Graph& g, const CompileOptions& opts) {
  std::vector<std::string> graph_names;
  for (const auto& p : ir::graph_passes()) graph_names.push_back(p.name);
  check_pass_names(opts, graph_names);
  plan::Plan p = lower_graph(g, opts);
  if (opts.cl_busy_items > 0) p.meta.set("cl_busy_items", opts.cl_busy_items);
  if (opts.cl_weights != "f16") p.meta.set("cl_weight_dtype", opts.cl_weights);
  if (opts.cl_images != "image") p.meta.set("cl_image_storage", opts.cl_images);
  if (opts.cl_batch != 4) p.meta.set("cl_batch_max", opts.cl_batch);
  for (const auto& [key, value] : opts.cl_tune) p.meta.set(key, value);
  plan::validate(p);
  const PassObserver* observer = opts.report && opts.observer ? &opts.observer : nullptr;
  std::string log;
  for (const plan::PlanPassInfo& pass : plan::plan_passes_for(opts.target)) {
    bool mandatory = plan_pass_mandatory(opts.target, pass.name);
    if (!mandatory && (listed(opts.disable_passes, pass.name) ||
                       (!opts.only_passes.empty() && !listed(opts.only_passes, pass.name)) ||
                       (pass.opt_in && !listed(opts.only_passes, pass.name))))
      continue;
    bool changed = run_plan_pass(p, pass.name, pass.fn, opts.verbose, observer);
    log += std::string(log.empty() ? "" : ",") + pass.name + (changed ? "" : "(noop)");
  }
  finish(p, opts.verbose, observer);
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
  std::vector<PlanPassFn> fns;
  for (const std::string& name : passes) {
    PlanPassFn fn = find_plan_pass(p.target, name);
    if (!fn)
      fail("unknown plan pass '", name, "' for target ", p.target, " (plan passes: ", plan_pass_list(p.target), ")");
    fns.push_back(fn);
  }
  // The passes see an unplanned plan: memory planning runs again at the end.
  for (plan::Buffer& b : p.buffers)
    if (b.kind == plan::BufferKind::Intermediate) b.offset = -1;
  p.arena_bytes = 0;
  plan::validate(p);
  const PassObserver* obs = observer ? &observer : nullptr;
  std::string log = p.meta.has("plan_passes") ? p.meta.s("plan_passes") : "";
  for (size_t i = 0; i < passes.size(); ++i) {
    bool changed = run_plan_pass(p, passes[i], fns[i], verbose, obs);
    log += std::string(log.empty() ? "" : ",") + "opt:" + passes[i] + (changed ? "" : "(noop)");
  }
  finish(p, verbose, obs);
  p.meta.set("plan_passes", log);
  return p;
}

}  // namespace opv
