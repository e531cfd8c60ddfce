// rename: give a value a register of its own where its register's reuse is the only thing that
// orders it after other code, so the hoist pass can interleave it with that code.
//
// Mesa's allocator reuses one temporary for chain after chain: the activation epilogues compute
// sixteen independent `mad, mad, ..., exp2, add, rcp, mul` chains all through r0.w, so each chain
// must wait for the previous one to finish reading r0.w (write-after-read, write-after-write),
// and the SFU latencies add up instead of overlapping.
//
// For each value -- an unrepeated, unpredicated scalar ALU instruction D writing full register X,
// or SFU, with its readers up to the last one L before X's next writer (index order) -- that some earlier
// instruction of the same neighbourhood (kWindow instructions) also reads or writes X:
//   (1) every reader is a scalar ALU or SFU instruction naming X as a plain source; the range (D, L]
//       is entered only through D; nothing in it is control flow we do not model; X is dead
//       wherever control leaves the range (so no later code reads this value under the name X);
//   (2) a register F no higher than the kernel's highest full register (the footprint does not
//       grow) is untouched by every instruction in [D, L] and dead throughout (D, L] and at the
//       range's exits; among those, the one least used near the range (fewest new false
//       dependences);
//   (3) X is renamed F in D's destination and in the readers' sources (re-assembled from Mesa
//       syntax). Liveness is updated for the next value: F is live in (D, L].
// What a rename changes is only which register carries the value; the hoist pass then finds
// the freedom. Progress: true when a value was renamed.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

namespace {

constexpr size_t kWindow = 48;

// Scalar ALU, or an unrepeated SFU instruction (which reads its source at issue, like the ALU).
bool renamable(const Ins& x) {
  return scalar_alu(x) || (x.fx.cat == 4 && x.in.get_or("REPEAT", 1) == 0 && x.fx.writes.size() <= 2);
}

}  // namespace

bool rename(Code& c) {
  size_t n = c.ins.size();
  if (n < 2) return false;
  std::vector<Live> live = liveness(c);
  std::vector<bool> pred = predicated(c);
  Flow fl = flow(c);
  int max_reg = -1;
  for (const Ins& x : c.ins)
    for (int r : x.fx.full_regs)
      if (r < kFullRegs) max_reg = std::max(max_reg, r);
  bool progress = false;
  for (size_t d = 0; d + 1 < n; ++d) {
    const Ins& xd = c.ins[d];
    if (!renamable(xd) || pred[d]) continue;
    Parts pd = split(print(xd.in));
    if (pd.operands.empty()) continue;
    int x = full_reg(pd.operands[0]);
    if (x < 0 || x >= kFullRegs || pd.operands[0] != reg_name(x)) continue;
    if (xd.fx.writes.size() != 2) continue;  // exactly X's two units
    // a false dependence to remove: X used shortly before D
    bool reused = false;
    for (size_t k = d > kWindow ? d - kWindow : 0; k < d && !reused; ++k) reused = reg_touched(c.ins[k].fx, x);
    if (!reused) continue;
    // the value's range: readers up to the last one before X's next writer
    size_t last = d;
    std::vector<size_t> readers;
    bool ok = true;
    for (size_t k = d + 1; k < n; ++k) {
      const Ins& xk = c.ins[k];
      if (reg_read(xk.fx, x)) {
        if (!renamable(xk)) ok = false;
        readers.push_back(k);
        last = k;
      }
      if (reg_written(xk.fx, x) || xk.fx.is_end) break;
      if (is_control(xk) && !(xk.fx.is_branch || xk.fx.is_jump || is_pred_marker(xk))) break;
    }
    if (!ok || readers.empty()) continue;
    std::vector<size_t> exits;
    if (!closed_range(c, fl, d, last, &exits)) continue;
    // the last reader may also write X (`add.u X, X, 1`): then its write is the next value and
    // X stays live after it under its own name, which is fine; otherwise X must be dead at exits
    bool last_writes = reg_written(c.ins[last].fx, x);
    for (size_t e : exits)
      if (e < n && !(last_writes && e == last + 1)) ok = ok && !reg_live(live[e], x);
    if (!ok) continue;
    // (2) choose F
    int best = -1;
    int best_score = 0;
    size_t lo = d > kWindow ? d - kWindow : 0, hi = std::min(n, last + kWindow);
    for (int f = 0; f <= max_reg; ++f) {
      if (f == x) continue;
      if (!free_over(c, live, d, last, exits, f)) continue;
      int score = 0;
      for (size_t k = lo; k < hi; ++k) score += reg_touched(c.ins[k].fx, f);
      if (best < 0 || score < best_score) best = f, best_score = score;
    }
    if (best < 0) continue;
    // (3) rename, all or nothing
    std::vector<std::pair<size_t, Instr>> edits;
    if (!rename_value(c, d, readers, x, best, &edits)) continue;
    for (auto& [k, in] : edits) c.set(k, in);
    for (size_t k = d + 1; k <= last; ++k) live[k].set(static_cast<size_t>(2 * best)).set(static_cast<size_t>(2 * best + 1));
    progress = true;
  }
  return progress;
}

}  // namespace opv::ir3::passes
