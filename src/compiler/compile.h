// The compiler driver: ONNX -> ir::Graph -> graph passes -> plan::Plan for a target -> plan passes.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "plan/plan.h"

namespace opv {

struct CompileOptions {
  std::string target = "cpu";             // backend the plan is lowered for
  std::vector<std::string> disable_passes; // graph or plan pass names to skip
  bool verbose = false;                    // print per-pass progress to stderr
};

// Lowers an optimised graph to a plan for `target` (one call per node, constants into the
// weights blob, floats as the target's storage dtype), runs the target's plan passes and
// memory planning, and validates the result.
plan::Plan lower(const ir::Graph& g, const CompileOptions& opts);

// import + graph passes + lower.
plan::Plan compile_onnx(const std::string& onnx_path, const CompileOptions& opts);

}  // namespace opv

namespace opv {
// Step 1-3 of lower() only (no target passes, no memory planning); exposed for tests.
plan::Plan lower_graph(const ir::Graph& g, const CompileOptions& opts);
}  // namespace opv
