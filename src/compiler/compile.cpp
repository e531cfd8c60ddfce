#include "compiler/compile.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "import/onnx_import.h"
#include "ir/passes/passes.h"
#include "plan/passes.h"

namespace opv {

plan::Plan lower(const ir::Graph& g, const CompileOptions& opts) {
  plan::Plan p = lower_graph(g, opts);
  plan::validate(p);
  std::string log;
  for (const plan::PlanPassInfo& pass : plan::plan_passes_for(opts.target)) {
    if (std::find(opts.disable_passes.begin(), opts.disable_passes.end(), pass.name) != opts.disable_passes.end())
      continue;
    size_t calls = p.calls.size();
    bool changed = pass.fn(p);
    if (changed) plan::validate(p);
    if (opts.verbose)
      std::fprintf(stderr, "[plan] %-12s %s calls %zu -> %zu\n", pass.name, changed ? "changed" : "no change", calls,
                   p.calls.size());
    log += std::string(log.empty() ? "" : ",") + pass.name + (changed ? "" : "(noop)");
  }
  plan::plan_memory(p);
  plan::validate(p);
  p.meta.set("plan_passes", log);
  if (opts.verbose)
    std::fprintf(stderr, "[plan] memory: arena %lld bytes (unplanned %lld)\n", (long long)p.arena_bytes,
                 (long long)plan::unplanned_bytes(p));
  return p;
}

plan::Plan compile_onnx(const std::string& onnx_path, const CompileOptions& opts) {
  ir::Graph g = import_onnx(onnx_path);
  if (opts.verbose) std::fprintf(stderr, "[import] %s: %zu nodes\n", onnx_path.c_str(), g.nodes.size());
  // Split the disabled names between graph and plan passes; unknown names are an error.
  std::vector<std::string> graph_names, plan_names;
  for (const auto& p : ir::graph_passes()) graph_names.push_back(p.name);
  for (const auto& p : plan::plan_passes_for(opts.target)) plan_names.push_back(p.name);
  auto listed = [](const std::vector<std::string>& names, const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  std::vector<std::string> graph_disabled;
  for (const std::string& name : opts.disable_passes) {
    if (listed(graph_names, name)) {
      graph_disabled.push_back(name);
    } else if (!listed(plan_names, name)) {
      std::string list;
      for (const auto& k : graph_names) list += (list.empty() ? "" : ", ") + k;
      for (const auto& k : plan_names) list += ", " + k;
      fail("unknown pass '", name, "' for target ", opts.target, " (passes: ", list, ")");
    }
  }
  auto logs = ir::run_graph_passes(g, graph_disabled);
  if (opts.verbose)
    for (const auto& l : logs)
      std::fprintf(stderr, "[graph] %-16s nodes %d -> %d\n", l.pass.c_str(), l.nodes_before, l.nodes_after);
  return lower(g, opts);
}

}  // namespace opv
