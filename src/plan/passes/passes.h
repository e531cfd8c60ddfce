// Plan passes: `bool pass(Plan&, const PassCtx&)` returning progress, one file each, validated
// after each change. PassCtx carries the typed compile options of the run.
// Compile time only (opv_compiler): the runtime (opv_runtime) links src/plan/*.cpp, not these.
// The passes of a target live with the target (target/opencl/passes.h); the table below lists
// them per target.
#pragma once
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "target/cuda/options.h"
#include "target/opencl/options.h"

namespace opv::plan {

// The typed options of one plan-pass run: what the compile flags chose, per target. Passes read
// these, never option strings from plan meta. The compile records them in the plan's meta
// (record(): only values that differ from the defaults, under the keys of each target's options),
// so `opvision opt` runs passes on a loaded plan with the options it was compiled with
// (from_meta()).
struct PassCtx {
  cl::Options cl;      // target "opencl" (target/opencl/options.h)
  cuda::Options cuda;  // target "cuda" (target/cuda/options.h)

  // The options of `target` (the others are not recorded: they did not shape the plan).
  void record(const std::string& target, Attrs& meta) const {
    if (target == "opencl") cl.record(meta);
    if (target == "cuda") cuda.record(meta);
  }
  static PassCtx from_meta(const Attrs& meta) {
    return PassCtx{cl::Options::from_meta(meta), cuda::Options::from_meta(meta)};
  }
};

// CPU targets: 4-D float activations between layout-agnostic ops get Layout::NHWC, with explicit
// Reorder calls where a consumer needs Linear (src/plan/passes/layout_nhwc.cpp).
bool assign_nhwc_layout(Plan& p, const PassCtx& ctx);

// ---- generic plan passes (src/plan/passes/) ----
// "dedupe": calls with the same kernel and identical inputs (same buffers, or constants with
// byte-identical contents, dtype, shape and layout) are removed and their readers rewired to the
// first call's outputs, to a fixed point (whole duplicated chains disappear). A duplicate that
// writes a plan Output is kept.
bool dedupe(Plan& p, const PassCtx& ctx);
// "level-schedule": calls ordered by (dependency level, kernel) without breaking a dependency.
bool level_schedule(Plan& p, const PassCtx& ctx);
// Drops buffers no call uses (except Inputs/Outputs) and kernels no call uses, renumbers ids,
// and rebuilds the weights blob from the constants still used. Returns true when it removed any.
bool compact(Plan& p);

struct PlanPassInfo {
  const char* name;
  bool (*fn)(Plan&, const PassCtx&);
  const char* doc;
  bool opt_in = false;  // runs only when asked for (compile --passes, opt --pass), never by default
};
// Plan passes a target runs, in order (memory planning always runs last and is not listed).
std::vector<PlanPassInfo> plan_passes_for(const std::string& target);

// Liveness -> arena offsets for Intermediate buffers (greedy best-fit by size, offsets aligned
// to kAlign); sets arena_bytes. Returns true when it assigned anything.
bool plan_memory(Plan& p);
// Sum of the sizes of all Intermediate buffers (what a plan without reuse would need).
int64_t unplanned_bytes(const Plan& p);

// ---- the plan-pass driver (src/plan/passes/driver.cpp) ----
using PlanPassFn = bool (*)(Plan&, const PassCtx&);
// Called around every plan pass that ran (and the final compact(), named "compact"): the plan
// before and after it, and whether the pass reported a change.
using PassObserver = std::function<void(const std::string& pass, const Plan& before, const Plan& after,
                                        bool changed)>;
// "a, b, c": the plan passes of `target` (or "none"), for messages.
std::string plan_pass_list(const std::string& target);
// The plan pass `name` of `target`, or nullptr when it has none of that name.
PlanPassFn find_plan_pass(const std::string& target, const std::string& name);

// Where compile --dump-after may print the plan, in run order: "lower" (as lowered, before any
// pass), the target's plan passes, "compact", "memory-plan" (the final plan).
std::vector<std::string> dump_points(const std::string& target);
constexpr const char* kLowerDumpPoint = "lower";  // the plan as lowered (PassDriver::checkpoint)
constexpr const char* kAllDumpPoints = "all";    // --dump-after all: every point that is reached
// Throws opv::Error listing the dump points of `target` when a name is none of them (nor "all"),
// or listing the points a run reaches when a name is the pass of `target` that is not in
// `scheduled` (the plan passes the run will run).
void check_dump_points(const std::string& target, const std::vector<std::string>& names,
                       const std::vector<std::string>& scheduled);
// The plan as stable text for dumps and golden files: Plan::dump(), then per kernel its entry,
// build options, source size and FNV-1a digest, then the weights' size and digest.
std::string dump_plan_text(const Plan& p);

struct DriverOptions {
  bool verbose = false;                    // a progress line per pass on stderr
  const PassObserver* observer = nullptr;  // called around every pass that ran
  std::vector<std::string> dump_after;     // dump points (dump_points) or "all"
  std::ostream* dump_to = nullptr;         // where dumps go; needed when dump_after is set
};

// Runs plan passes on one plan: validates after every change, reports, dumps (see driver.cpp).
class PassDriver {
 public:
  // `scheduled`: the plan passes this run will run, in order. Throws opv::Error for a dump point
  // `target` does not have or that this run does not reach (its pass is not scheduled).
  PassDriver(std::string target, const std::vector<std::string>& scheduled, DriverOptions opts, PassCtx ctx);
  // Dump point `point` reached without running a pass ("lower").
  void checkpoint(const Plan& p, const std::string& point, bool changed);
  // Runs pass `name` with the driver's PassCtx; returns its progress. Errors (the pass's or validation's) name the pass.
  bool run(Plan& p, const std::string& name, PlanPassFn fn);
  // compact (as a pass), memory planning (dump point "memory-plan"), final validation.
  void finish(Plan& p);

 private:
  bool wants(const std::string& point) const;

  std::string target_;
  DriverOptions opts_;
  PassCtx ctx_;
};

}  // namespace opv::plan
