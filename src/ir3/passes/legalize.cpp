// legalize: recompute the delays of a program and add the syncs it lacks.
//
// Steps: (1) drop every delay: standalone nops without a sync flag ((rptN)nop included;
// branches to one move to the next instruction), the (rptN) of a sync-carrying nop and every
// (nopN) on ALU instructions; (2) emit and run the hazard fixer (ir3/legalize.h), which inserts
// the minimum the checker needs: (ss)/(sy) on consumers, (nopN) on the previous ALU op or new
// nops, and re-targets branches; (3) reload.
// The (ss)/(sy) flags already present are kept: they are the compiler's (Mesa's) decisions,
// whose rules are a superset of what our checker models (e.g. it syncs a texture that
// overwrites a pending texture result with (ss), where our checker would ask for a costlier
// (sy)); a flag left on an instruction that no longer needs it only waits earlier.
// (4) prune, in programs with a loop: the fixer works pass by pass and may, before a loop's
// state has settled, put an (ss)/(sy) on an instruction that the finished program does not
// need; every flag it added to an instruction (not the ones the input already had) is dropped
// again when the hazard checker stays clean without it, one at a time in program order.
// (Without a backward branch every state the fixer sees is final, so there is nothing to prune.)
// Progress: true when the program changed.
#include "ir3/legalize.h"
#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

bool legalize(Code& c) {
  std::vector<uint64_t> before = c.emit();
  for (size_t i = 0; i < c.ins.size();) {
    Instr in = c.ins[i].in;
    bool sync = in.get_or("SS", 0) || in.get_or("SY", 0);
    if (in.name() == "nop" && !sync && i + 1 < c.ins.size()) {
      c.erase(i);
      continue;
    }
    int cat = static_cast<int>(in.bits >> 61);
    Instr out = in;
    if (in.name() == "nop" && out.get_or("REPEAT", 0)) out = with_field(out, "REPEAT", 0);
    if ((cat == 2 || cat == 3) && out.get_or("REPEAT", 1) == 0) {
      if (out.get_or("SRC1_R", 0)) out = with_field(out, "SRC1_R", 0);
      if (out.get_or("SRC2_R", 0)) out = with_field(out, "SRC2_R", 0);
    }
    if (out.bits != in.bits) c.set(i, out);
    ++i;
  }
  std::vector<uint64_t> w = c.emit();
  const std::vector<uint64_t> given = w;
  ir3::legalize(w, c.gen, c.merged_regs);
  // Step 4. The fixer only adds flags and nops, so the k-th instruction other than a nop is the
  // same instruction before and after it.
  auto non_nops = [&](const std::vector<uint64_t>& v) {
    std::vector<size_t> idx;
    for (size_t i = 0; i < v.size(); ++i)
      if (decode_cached(v[i], c.gen).name() != "nop") idx.push_back(i);
    return idx;
  };
  bool loop = false;
  for (const Ins& x : c.ins) loop = loop || ((x.fx.is_branch || x.fx.is_jump) && x.fx.target <= 0);
  std::vector<size_t> a = non_nops(given), b = non_nops(w);
  if (loop && a.size() == b.size())
    for (size_t k = 0; k < b.size(); ++k) {
      Instr had = decode_cached(given[a[k]], c.gen);
      for (const char* flag : {"SY", "SS"}) {
        Instr now = decode_cached(w[b[k]], c.gen);
        if (!now.get_or(flag, 0) || had.get_or(flag, 0)) continue;
        std::vector<uint64_t> trial = w;
        trial[b[k]] = with_field(now, flag, 0).bits;
        if (check_hazards(trial, c.gen, c.merged_regs).empty()) w = std::move(trial);
      }
    }
  c = Code(w, c.gen, c.merged_regs);
  return c.emit() != before;
}

}  // namespace opv::ir3::passes
