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
// the freedom.
//
// Texture loads get the same treatment for their destination blocks. Mesa packs the texels of a
// loop trip into overlapping blocks (`isam r7.x` fills r7.x-r7.w, then `isam r7.w` fills
// r7.w-r8.z once r7.w has been read), so the second load must follow the first texel's last
// reader and the two texture waits cannot overlap. For an unrepeated cat5 load L whose
// destination is a run of consecutive full registers B..B+n-1 that an earlier instruction of the
// neighbourhood touches while it reads a texel (a load's result: L then follows that texel's
// wait) or reads as a texture source (L's write waits for it, (ss)), with the readers of each
// component up to that component's next writer:
//   (1) every reader is an ALU or SFU instruction (repeated or not) whose sources name the
//       block plainly or as an (r) run inside it, each reading only values L wrote; a repeated
//       reader writes no register of the block; the range (L, last reader] is closed as above,
//       and each component is dead at the range's exits unless it was written again before any
//       branch leaves the range;
//   (2) a block F..F+n-1 free over the range as in (2) above that no other texture
//       instruction of the neighbourhood touches if possible (it would be held back in turn),
//       then inside the footprint if possible, else growing it by at most kLoadGrowth registers;
//       then the fewest touches nearby. The footprint costs occupancy, which the cost model
//       does not see; the pass driver keeps the rewrite without rename when that is faster;
//   (3) L's destination and every reader's operands in the block are shifted by F - B.
// Progress: true when a value was renamed.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

namespace {

constexpr size_t kWindow = 48;
// How many full registers (components) a texture destination block may take above the
// kernel's highest one.
constexpr int kLoadGrowth = 8;

// Scalar ALU, or an unrepeated SFU instruction (which reads its source at issue, like the ALU).
bool renamable(const Ins& x) {
  return scalar_alu(x) || (x.fx.cat == 4 && x.in.get_or("REPEAT", 1) == 0 && x.fx.writes.size() <= 2);
}

// The full registers operand `op` of an instruction with `rep` repeats reads: its register, and
// with (r) the next `rep` after it; empty when it names no full register plainly.
std::vector<int> operand_regs(const std::string& op, int rep) {
  int r = full_reg(op);
  if (r < 0 || op.find('<') != std::string::npos) return {};
  std::vector<int> v{r};
  if (op.find("(r)") != std::string::npos)
    for (int i = 1; i <= rep; ++i) v.push_back(r + i);
  return v;
}

// The consecutive full registers a texture load writes (B..B+n-1, n in *count), or -1.
int load_block(const Ins& x, int* count) {
  if (x.fx.cat != 5 || x.in.get_or("REPEAT", 0) != 0 || x.fx.writes.empty()) return -1;
  int lo = kFullRegs, hi = -1;
  for (int u : x.fx.writes) {
    if (u >= 2 * kFullRegs) return -1;
    lo = std::min(lo, u / 2), hi = std::max(hi, u / 2);
  }
  for (int r = lo; r <= hi; ++r)
    if (!reg_written(x.fx, r)) return -1;
  if (static_cast<int>(x.fx.writes.size()) != 2 * (hi - lo + 1)) return -1;  // whole full registers
  Parts p = split(print(x.in));
  if (p.operands.empty() || full_reg(p.operands[0]) != lo) return -1;
  *count = hi - lo + 1;
  return lo;
}

// Per instruction: whether it reads a register whose latest writer before it (in index order)
// is a load (cat5, or cat6 reading memory): a consumer that waits for a texel.
std::vector<bool> texel_readers(const Code& c) {
  std::vector<bool> out(c.ins.size(), false);
  Live loaded;
  for (size_t k = 0; k < c.ins.size(); ++k) {
    const Effects& f = c.ins[k].fx;
    for (int u : f.reads) out[k] = out[k] || (u < kUnitsMax && loaded.test(static_cast<size_t>(u)));
    const bool load = f.cat == 5 || (f.cat == 6 && f.mem_read);
    for (int u : f.writes)
      if (u < kUnitsMax) loaded.set(static_cast<size_t>(u), load);
  }
  return out;
}

// (1)-(3) of the header's texture part for the load at d; true when it was renamed.
bool rename_load(Code& c, std::vector<Live>& live, const Flow& fl, const std::vector<bool>& pred,
                 const std::vector<bool>& waits, int max_reg, size_t d) {
  const size_t n = c.ins.size();
  int cnt = 0;
  const int b = load_block(c.ins[d], &cnt);
  if (b < 0 || pred[d]) return false;
  auto in_block = [&](int r) { return r >= b && r < b + cnt; };
  // the block's reuse must hold the load back behind a wait: an earlier instruction touching
  // it reads a texel (so the load follows that texel's wait), or is a texture instruction
  // reading it as a source (which the load's write must wait for, (ss))
  bool blocked = false;
  for (size_t k = d > kWindow ? d - kWindow : 0; k < d && !blocked; ++k) {
    const Ins& xk = c.ins[k];
    for (int r = b; r < b + cnt; ++r)
      blocked = blocked || (reg_touched(xk.fx, r) && waits[k]) || (xk.fx.cat == 5 && reg_read(xk.fx, r));
  }
  if (!blocked) return false;
  // readers of each component up to its next writer
  std::vector<size_t> end(static_cast<size_t>(cnt), SIZE_MAX);  // index of the next writer
  std::vector<size_t> readers;
  size_t last = d;
  int open = cnt;
  for (size_t k = d + 1; k < n && open > 0; ++k) {
    const Ins& xk = c.ins[k];
    bool reads = false;
    for (int r = b; r < b + cnt; ++r)
      if (end[static_cast<size_t>(r - b)] == SIZE_MAX && reg_read(xk.fx, r)) reads = true;
    if (reads) readers.push_back(k), last = k;
    for (int r = b; r < b + cnt; ++r)
      if (end[static_cast<size_t>(r - b)] == SIZE_MAX && reg_written(xk.fx, r)) end[static_cast<size_t>(r - b)] = k, --open;
    if (xk.fx.is_end) break;
    if (is_control(xk) && !(xk.fx.is_branch || xk.fx.is_jump || is_pred_marker(xk))) return false;
  }
  if (readers.empty()) return false;
  // (1) readers: sources in the block name it plainly or as (r) runs inside it, and read only
  // values L wrote
  std::vector<std::vector<size_t>> shifted(readers.size());  // operand indices to shift
  for (size_t i = 0; i < readers.size(); ++i) {
    const size_t k = readers[i];
    const Ins& xk = c.ins[k];
    if (xk.fx.cat < 1 || xk.fx.cat > 4) return false;
    const int rep = static_cast<int>(xk.in.get_or("REPEAT", 0));
    if (rep > 0)
      for (int r = b; r < b + cnt; ++r)
        if (reg_written(xk.fx, r)) return false;
    Parts p = split(print(xk.in));
    std::vector<bool> named(static_cast<size_t>(cnt), false);
    for (size_t o = 1; o < p.operands.size(); ++o) {
      std::vector<int> regs = operand_regs(p.operands[o], rep);
      bool any = false;
      for (int r : regs) any = any || in_block(r);
      if (!any) continue;
      for (int r : regs) {
        if (!in_block(r) || end[static_cast<size_t>(r - b)] < k) return false;
        named[static_cast<size_t>(r - b)] = true;
      }
      shifted[i].push_back(o);
    }
    // every read of the block is one of those operands (no relative or implicit reads)
    for (int r = b; r < b + cnt; ++r)
      if (reg_read(xk.fx, r) && !named[static_cast<size_t>(r - b)]) return false;
  }
  std::vector<size_t> exits;
  if (!closed_range(c, fl, d, last, &exits)) return false;
  // a component live at an exit must have been written again before any branch leaves; and
  // when a component is written again inside the range, control must run through the range in
  // index order (no branch inside it to a place inside it), so that every read of it before
  // that write, and none after, sees L's value
  size_t first_branch_out = SIZE_MAX;
  bool inner_edge = false;
  for (size_t k = d + 1; k <= last; ++k)
    if (c.ins[k].target_id >= 0) {
      const int64_t t = fl.pos[static_cast<size_t>(c.ins[k].target_id)];
      if (t <= static_cast<int64_t>(d) || t > static_cast<int64_t>(last)) first_branch_out = std::min(first_branch_out, k);
      else inner_edge = true;
    }
  if (inner_edge)
    for (size_t w : end)
      if (w <= last) return false;
  for (size_t e : exits) {
    if (e >= n) continue;
    for (int r = b; r < b + cnt; ++r) {
      if (!reg_live(live[e], r)) continue;
      const size_t w = end[static_cast<size_t>(r - b)];
      if (w > last || w >= first_branch_out) return false;
    }
  }
  // (2) the new block
  const int limit = std::min(kFullRegs - 1, max_reg + kLoadGrowth);
  int best = -1, best_score = 0;
  const size_t lo = d > kWindow ? d - kWindow : 0, hi = std::min(n, last + kWindow);
  for (int f = 0; f + cnt - 1 <= limit; ++f) {
    if (f < b + cnt && f + cnt > b) continue;
    bool free = true;
    for (int r = f; r < f + cnt && free; ++r) free = free_over(c, live, d, last, exits, r);
    if (!free) continue;
    // growth costs, and overlapping another texture instruction's registers nearby costs more
    // (it would hold that instruction back in turn); then the fewest touches nearby
    const int growth = std::max(0, f + cnt - 1 - max_reg);
    int score = growth * 1000;
    for (size_t k = lo; k < hi; ++k)
      for (int r = f; r < f + cnt; ++r) {
        const bool touched = reg_touched(c.ins[k].fx, r);
        score += touched ? (c.ins[k].fx.cat == 5 && k != d ? 10000 : 1) : 0;
      }
    if (best < 0 || score < best_score) best = f, best_score = score;
  }
  if (best < 0) return false;
  // (3) shift, all or nothing
  const int delta = best - b;
  std::vector<std::pair<size_t, Instr>> edits;
  auto shift = [&](size_t k, const std::vector<size_t>& ops) {
    Parts p = split(print(c.ins[k].in));
    for (size_t o : ops) {
      p.operands[o] = passes::advance(p.operands[o], delta);
      if (p.operands[o].empty()) return false;
    }
    Instr re;
    if (!assemble(p, c.ins[k].in, c.gen, &re)) return false;
    edits.emplace_back(k, re);
    return true;
  };
  if (!shift(d, {0})) return false;
  for (size_t i = 0; i < readers.size(); ++i)
    if (!shift(readers[i], shifted[i])) return false;
  for (auto& [k, in] : edits) c.set(k, in);
  for (size_t k = d + 1; k <= last; ++k)
    for (int r = best; r < best + cnt; ++r) live[k].set(static_cast<size_t>(2 * r)).set(static_cast<size_t>(2 * r + 1));
  return true;
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
  const std::vector<bool> waits = texel_readers(c);
  for (size_t d = 0; d + 1 < n; ++d)
    if (rename_load(c, live, fl, pred, waits, max_reg, d)) progress = true;
  return progress;
}

}  // namespace opv::ir3::passes
