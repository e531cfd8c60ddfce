// `opvision opt IN.opv OUT.opv --pass NAME ...`: runs plan passes on a saved artifact (the seed's
// passes also work standalone on a captured graph), then compact + memory planning, and saves.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "compiler/compile.h"
#include "plan/artifact.h"
#include "plan/passes/passes.h"
#include "tools/common.h"
#include "tools/pass_report.h"

namespace opv::tools {

int cmd_opt(int argc, char** argv) {
  ArgParser p("opvision opt", "Runs plan passes on a saved .opv artifact and writes the result.",
              "IN.opv OUT.opv --pass NAME [--pass NAME ...] [options]");
  p.positional("IN.opv", "the artifact to optimise")
      .positional("OUT.opv", "the artifact to write")
      .option("--pass", "NAME", "plan pass to run, in order (or a comma list)", "", "", true)
      .flag("--report", "per pass: launches, kernel calls, weight bytes and measured time before/after")
      .flag("--verbose", "print per-pass progress to stderr", "-v")
      .flag("--dump-plan", "print the resulting plan to stdout")
      .epilog("The passes are those of the artifact's target (see 'opvision compile --help'); the plan is\n"
              "compacted and memory-planned again afterwards.\n");
  Args a;
  if (!parse_or_help(p, argc, argv, a)) return kExitOk;
  std::vector<std::string> passes = split_names(a.all("--pass"));
  if (passes.empty()) throw UsageError("opvision opt: no --pass given (see 'opvision opt --help')");
  const std::string& in = a.positionals[0];
  const std::string& out = a.positionals[1];

  double t0 = now_ms();
  plan::Plan plan = plan::load_artifact(in);
  const size_t calls = plan.calls.size(), weights = plan.weights.size();
  PassReport report;
  PassObserver observer;
  if (a.has("--report")) observer = report.observer();
  plan = optimize(std::move(plan), passes, observer, a.has("--verbose"));
  plan::save_artifact(plan, out);
  double t1 = now_ms();
  if (a.has("--dump-plan")) std::cout << plan.dump();
  if (a.has("--report")) report.print(stdout);
  std::fprintf(stderr, "[opt] %s -> %s: target %s, calls %zu -> %zu, weights %zu -> %zu B, arena %lld B (%.0f ms)\n",
               in.c_str(), out.c_str(), plan.target.c_str(), calls, plan.calls.size(), weights, plan.weights.size(),
               (long long)plan.arena_bytes, t1 - t0);
  return kExitOk;
}

}  // namespace opv::tools
