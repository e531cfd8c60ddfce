// The compiler driver: ONNX -> ir::Graph -> graph passes -> plan::Plan for a target -> plan passes.
#pragma once
#include <functional>
#include <iosfwd>
#include <utility>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "plan/passes/passes.h"
#include "plan/plan.h"

namespace opv {

// Called by the plan-pass driver around every plan pass that ran (plan/passes/passes.h).
using PassObserver = plan::PassObserver;

// Largest CompileOptions::batch the CLI and the Python API accept (tensor size limits still
// apply per value).
constexpr int64_t kMaxCompileBatch = 4096;
// The plan meta key of CompileOptions::batch (read by `inspect` and the Python API's
// InferenceSession.batch).
constexpr const char* kBatchMetaKey = "batch";

struct CompileOptions {
  std::string target = "cpu";             // backend the plan is lowered for
  std::vector<std::string> disable_passes; // graph or plan pass names to skip
  // When non-empty: only these plan passes of the target run (plus the mandatory ones, see
  // plan_pass_mandatory); graph passes are still controlled by disable_passes only.
  std::vector<std::string> only_passes;
  // compile --batch (and opvision.compile(batch=)): > 0 rewrites the imported batch-1 graph to
  // this batch (ir::set_batch) and records it in the plan's meta (kBatchMetaKey); 0 keeps the model's
  // own batch (nothing recorded). The callers accept 1..kMaxCompileBatch.
  int64_t batch = 0;
  bool verbose = false;                    // print per-pass progress to stderr
  bool report = false;                     // call `observer` around every plan pass
  PassObserver observer;                   // used when report is set
  // Typed options handed to every plan pass (per target; target/opencl/options.h for opencl).
  // lower() records them in the plan's meta, so the artifact says how it was made.
  plan::PassCtx pass_ctx;
  // Dump points after which the plan is written as text to dump_to (compile --dump-after;
  // plan::dump_points: "lower", the target's passes, "compact", "memory-plan"; or "all"). A
  // point whose pass does not run in this compile is an error before the import.
  std::vector<std::string> dump_after;
  std::ostream* dump_to = nullptr;  // needed when dump_after is set
};

// Plan passes that always run for their target (skipping them would leave the plan unrunnable):
// "codegen" for opencl, "cuda-codegen" and "nvrtc" for cuda. Naming one in disable_passes is an
// error.
bool plan_pass_mandatory(const std::string& target, const std::string& pass);

// Runs the named plan passes of p.target, in the given order, on an existing plan (e.g. a loaded
// artifact): Intermediate offsets are reset first, then each pass runs (validated after each
// change), then compact(), memory planning and validation. Unknown names: opv::Error listing the
// target's passes. meta "plan_passes" gets "opt:<name>" entries appended.
plan::Plan optimize(plan::Plan p, const std::vector<std::string>& passes);
plan::Plan optimize(plan::Plan p, const std::vector<std::string>& passes, const PassObserver& observer,
                    bool verbose = false);

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
