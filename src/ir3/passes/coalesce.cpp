// coalesce: let a texture coordinate (or another register pair a memory instruction reads) be
// computed into a pair whose second half already holds the constant it needs, so the move that
// set up a fresh second half loses its reader (the dce pass then removes it).
//
// Mesa's a630 code reads a 2-D texel with `isam` from a pair (x, y); tinygrad's images are
// addressed with y = 0 for most reads, and Mesa gives every coordinate a fresh pair with its own
// `mov.u32u32 rN.y, 0` -- 7 % of the fixture's instructions.
//
// For each cat5/cat6 instruction I that reads a pair (X, X+1) of full registers where X+1 is
// known to hold an immediate or a copy of register S (known_values, code.h), and X is written by
// an unrepeated scalar ALU instruction D before I:
//   (1) the range (D, I] is entered only through D (no branch from outside targets it), nothing
//       in it writes X, and every other reader of X in it is a scalar ALU source (renamable);
//   (2) X is dead wherever control leaves the range (after I, and at the targets of branches
//       inside it that lead out of it);
//   (3) a register P is looked for: P+1 holds the same immediate or copy at I, made by an earlier
//       move than X+1's (so two pairs never trade holders), or P+1 is S itself, and was never
//       overwritten by this pass; P is untouched by every instruction in [D, I] and dead
//       throughout (D, I] and at its exits;
//   (4) X is renamed P in D, in the readers, and in I (re-assembled from Mesa syntax; I must
//       then read P and P+1). Liveness is updated for the next pair: P is live in (D, I].
// Nothing else moves; the kept move of P+1's constant now serves both pairs.
// Progress: true when a pair was coalesced.
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "ir3/passes/passes.h"
#include "ir3/semantics.h"

namespace opv::ir3::passes {

bool coalesce(Code& c) {
  size_t n = c.ins.size();
  std::vector<KnownRegs> known = known_values(c);
  std::vector<Live> live = liveness(c);
  std::vector<bool> pred = predicated(c);
  Flow fl = flow(c);
  std::set<int> clobbered;  // registers this pass wrote somewhere: their known values no longer hold
  bool progress = false;
  for (size_t i = 0; i < n; ++i) {
    const Ins& xi = c.ins[i];
    if (xi.fx.cat != 5 && xi.fx.cat != 6) continue;
    Semantics sem = semantics(xi.in);
    for (const RegUse& u : sem.reads) {
      if (u.half || u.count != 2 || u.regid + 1 >= kFullRegs) continue;
      int x = u.regid;
      const Known& hi = known[i][static_cast<size_t>(x + 1)];
      if ((hi.kind != Known::Imm && hi.kind != Known::Copy) || clobbered.count(x + 1) || reg_written(xi.fx, x)) continue;
      if (hi.kind == Known::Copy && clobbered.count(hi.value)) continue;
      // D: the last writer of X before I, in index order
      size_t d = i;
      while (d-- > 0)
        if (reg_written(c.ins[d].fx, x)) break;
      if (d >= i) continue;
      const Ins& xd = c.ins[d];
      if (!scalar_alu(xd) || pred[d]) continue;
      Parts pd = split(print(xd.in));
      if (pd.operands.empty() || pd.operands[0] != reg_name(x)) continue;
      std::vector<size_t> exits, readers;
      bool ok = i + 1 < n && closed_range(c, fl, d, i, &exits);
      for (size_t k = d + 1; k < i && ok; ++k)
        if (reg_read(c.ins[k].fx, x)) {
          ok = scalar_alu(c.ins[k]);
          readers.push_back(k);
        }
      if (!ok) continue;
      for (size_t e : exits) ok = ok && !reg_live(live[e], x);
      if (!ok) continue;
      int best = -1, best_tag = 0;
      for (int p = 0; p + 1 < kFullRegs; ++p) {
        if (p == x || p == x + 1 || p + 1 == x || clobbered.count(p + 1)) continue;
        const Known& h = known[i][static_cast<size_t>(p + 1)];
        // p + 1 holds the same immediate, or the same copy, made earlier; or it is the copied
        // register itself (unchanged since the copy, or the fact would be gone)
        bool source = hi.kind == Known::Copy && p + 1 == hi.value;
        if (!source && (!h.same(hi) || h.tag >= hi.tag)) continue;
        int tag = source ? -1 : h.tag;
        if ((best < 0 || tag < best_tag) && free_over(c, live, d, i, exits, p)) best = p, best_tag = tag;
      }
      if (best < 0) continue;
      // (4) rename, all or nothing
      std::vector<std::pair<size_t, Instr>> edits;
      Instr re;
      if (!rename_value(c, d, readers, x, best, &edits) || !rename_operands(xi, x, best, 1, SIZE_MAX, c.gen, &re)) continue;
      Effects fi = effects(re, c.merged_regs);
      if (reg_read(fi, x) || !reg_read(fi, best) || !reg_read(fi, best + 1)) continue;
      edits.emplace_back(i, re);
      for (auto& [k, in] : edits) c.set(k, in);
      for (size_t k = d + 1; k <= i; ++k) live[k].set(static_cast<size_t>(2 * best)).set(static_cast<size_t>(2 * best + 1));
      clobbered.insert(best);
      progress = true;
      break;  // I's effects changed: one pair per instruction
    }
  }
  return progress;
}

}  // namespace opv::ir3::passes
