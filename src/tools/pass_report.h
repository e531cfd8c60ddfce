// `--report` of `opvision compile` and `opvision opt`: for every plan pass that ran, the plan's
// launches, kernel calls (batched calls count their groups), used weight bytes and measured run
// time, before and after the pass.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "plan/plan.h"

namespace opv::tools {

// Pass names from repeatable options that may also hold comma lists ("a,b" "c" -> a, b, c).
std::vector<std::string> split_names(const std::vector<std::string>& values);

struct PlanMetrics {
  int64_t launches = 0;      // plan calls (one launch each)
  int64_t kernel_calls = 0;  // calls weighted by their kernel's "cl_batch" (the work done)
  int64_t weight_bytes = 0;  // weights blob after compact() (constants still used)
  double time_ms = -1;       // median run time; < 0: not measured (see time_note)
  std::string time_note;     // why the time is n/a
};

// Metrics of one plan state. With `measure`, the plan (compacted and memory-planned copy) is
// loaded on its target's backend and run with random inputs: 2 warm-ups, then the median of
// `runs` runs (fewer when one run takes over a second). Failures become time_note.
PlanMetrics plan_metrics(const plan::Plan& p, bool measure, int runs = 10);

class PassReport {
 public:
  explicit PassReport(bool measure = true) : measure_(measure) {}
  // An observer for CompileOptions::observer / optimize().
  PassObserver observer();
  void print(std::FILE* f) const;

 private:
  struct Row {
    std::string pass;
    bool changed = false;
    PlanMetrics before, after;
  };
  bool measure_;
  std::string target_;
  std::vector<Row> rows_;
};

}  // namespace opv::tools
