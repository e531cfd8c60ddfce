// Runs the IR3 binary passes (ir3/passes/passes.h) on real kernels and keeps a rewrite only
// where it is proven to change nothing: translation validation on the simulator.
//
// For a capture, each kernel is rewritten by the pass pipeline and validated on its first launch
// in the capture (same grid, bindings and const layout): the buffers it binds are filled with
// random finite values of each argument's type, the original and the rewritten program run on
// identical memory, and every byte of every bound range must match, for each of N random sets;
// the hazard checker must also be clean. Otherwise the kernel keeps its original code and the
// report names the first pass whose output already differs (or the hazard), and why.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir3/capture.h"
#include "ir3/passes/passes.h"

namespace opv::ir3 {

struct OptOptions {
  std::vector<std::string> passes;  // in order; empty = all (passes::pass_names())
  int validate_sets = 3;            // random input sets per kernel (0 = no validation)
  uint64_t seed = 1;
  std::vector<bool> only;           // per kernel: rewrite it (empty = all; the others keep their code)
  // How much slower (with loops) than the fastest validated rewrite a
  // rewrite that packs more mad.f32 may be and still be kept, in tenths of a percent. The cost
  // model is one wave's latency: it sees neither instruction fetch, which a (rptN) group cuts to
  // one instruction, nor the waits that the a630's other waves hide (t12_fp16_openpilot: 3 %
  // packs 45 % of mad.f32 per inference instead of 29 % for 0.4 % more modelled cycles with loops).
  int pack_tolerance_permille = 30;
  std::function<void(size_t, size_t, const std::string&)> progress;  // kernel i of n
};

struct KernelOpt {
  std::string name;
  passes::Stats before, after;  // `after` = what is kept
  bool changed = false;         // the kept code differs from the original
  bool validated = false;       // simulator + hazard checker accepted the rewrite
  std::string failed_pass, reason;
  std::string note;  // how the kept code was chosen, when not the whole pipeline's output
  int launches_per_inference = 0;
};

// Runs the passes on one program (no validation). Returns the rewritten words.
std::vector<uint64_t> run_passes(const std::vector<uint64_t>& words, const std::vector<std::string>& passes,
                                 int gen = kGenA6xx);

// Translation validation of one rewritten kernel: "" when `code` gives bit-identical results to
// kernel k's own code on `sets` random input sets of its first launch; else the reason.
std::string validate_kernel(const Capture& cap, int k, const std::vector<uint64_t>& code, int sets, uint64_t seed);

// What the passes may assume about kernel k's launches (passes::Code::grid): its id registers,
// the largest local size and number of work-groups over every launch of it in the capture (setup
// and schedule), and its compile-time const-file immediates.
passes::Code::Grid launch_grid(const Capture& cap, int k);

// Optimises every kernel of `cap` in place (code, max_reg/max_half_reg) and reports per kernel.
std::vector<KernelOpt> optimize_capture(Capture& cap, const OptOptions& opts);

}  // namespace opv::ir3
