// relocate: rename registers so that runs of same-opcode instructions (accumulators and their
// operands) sit in consecutive registers, which the rpt pass can then pack.
//
// The renaming is a permutation of register names over the whole kernel: swapping two full
// register components everywhere cannot change what the program computes, provided both are
// only ever used as single, explicit operands. Steps: (1) classify every full register
// component r0.x-r47.w: *movable* if every instruction touching it is an unrepeated cat1 mov/
// cov, cat2 or cat3 that names it as one scalar operand (no vector groups such as texture
// results, load/store data or addresses, no (rptN), no half-register aliasing), *unused* if
// nothing touches it; r0.x-r0.w (where the hardware delivers local ids) are never moved; (2) per
// region, a leader (unrepeated cat2/cat3 writing dst D) and the next same-opcode instructions
// that could join it as elements k = 1..3 (movable up to it, sources equal to the leader's,
// advanced by k, or the element's own destination where the leader reads its own -- the
// accumulator pattern): when element k's destination R is not D+k, swap R and D+k everywhere
// if both are movable or unused and neither is already part of a run built here; (3) every
// rewritten instruction is re-assembled from Mesa syntax. The register footprint does not grow.
// Progress: true when some registers were swapped.
#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

namespace {

constexpr int kRegs = 48 * 4;  // r0.x .. r47.w
constexpr size_t kWindow = 48;

std::string rename_operand(const std::string& op, int from, int to) {
  if (full_reg(op) != from) return op;
  size_t at = op.rfind('r');
  return op.substr(0, at) + reg_name(to);
}


}  // namespace

bool relocate(Code& c) {
  // (1) classify; relative register access (r<a0.x + n>) can reach any register: no renaming
  for (const Ins& x : c.ins)
    if (print(x.in).find("<a0") != std::string::npos) return false;
  std::vector<bool> movable(kRegs, true), used(kRegs, false);
  for (int r = 0; r < 4; ++r) movable[r] = false;
  for (const Ins& x : c.ins) {
    std::set<int> named;
    if (scalar_alu(x)) {
      Parts p = split(print(x.in));
      for (const std::string& op : p.operands)
        if (int r = full_reg(op); r >= 0) named.insert(r);
    }
    for (int h : x.fx.half_regs) {  // half access aliases full units (merged view): keep those
      int f = h < kRegs ? h >> 1 : -1;
      if (f >= 0) movable[f] = false, used[f] = true;
    }
    for (int u : x.fx.reads) {
      int r = u / 2;
      if (r < kRegs) used[r] = true, movable[r] = movable[r] && named.count(r);
    }
    for (int u : x.fx.writes) {
      int r = u / 2;
      if (r < kRegs) used[r] = true, movable[r] = movable[r] && named.count(r);
    }
  }
  auto swappable = [&](int r) { return r >= 4 && r < kRegs && (movable[r] || !used[r]); };

  std::vector<bool> pinned(kRegs, false);
  bool progress = false;
  auto swap_regs = [&](int a, int b) {
    for (size_t i = 0; i < c.ins.size(); ++i) {
      const Ins& x = c.ins[i];
      bool touches = false;
      for (int u : x.fx.reads) touches |= u / 2 == a || u / 2 == b;
      for (int u : x.fx.writes) touches |= u / 2 == a || u / 2 == b;
      if (!touches) continue;
      Parts p = split(print(x.in));
      std::string text = p.flags + p.mnemonic;
      for (size_t k = 0; k < p.operands.size(); ++k) {
        std::string op = p.operands[k];
        int r = full_reg(op);
        if (r == a) op = rename_operand(op, a, b);
        else if (r == b) op = rename_operand(op, b, a);
        text += (k ? ", " : " ") + op;
      }
      Instr n = parse(text, c.gen);
      OPV_CHECK(n.valid() && n.name() == x.in.name(), "ir3 relocate: re-assembly changed `", print(x.in), "`");
      c.set(i, n);
    }
    bool ma = movable[a], ua = used[a];
    movable[a] = movable[b], used[a] = used[b];
    movable[b] = ma, used[b] = ua;
    progress = true;
  };

  // (2) runs, region by region
  for (auto [b, e] : c.regions()) {
    for (size_t i = b; i < e; ++i) {
      const Ins& lead = c.ins[i];
      if (!scalar_alu(lead) || lead.fx.cat == 1) continue;
      Parts p0 = split(print(lead.in));
      if (p0.operands.size() < 2) continue;
      int d0 = full_reg(p0.operands[0]);
      if (d0 < 0 || pinned[d0]) continue;
      int k = 1;
      std::vector<size_t> members{i};
      for (size_t j = i + 1; j < e && j < i + kWindow && k < 4 && d0 + k < kRegs; ++j) {
        const Ins& m = c.ins[j];
        if (!scalar_alu(m)) continue;
        Parts pj = split(print(m.in));
        if (pj.mnemonic != p0.mnemonic || pj.operands.size() != p0.operands.size()) continue;
        int dj = full_reg(pj.operands[0]);
        if (dj < 0) continue;
        bool ok = true;
        for (size_t s = 1; s < p0.operands.size() && ok; ++s) {
          const std::string &a = p0.operands[s], &x = pj.operands[s];
          bool acc = full_reg(a) == d0 && full_reg(x) == dj;  // reads its own destination
          ok = acc || x == a || (!advance(a, k).empty() && x == advance(a, k));
          if (ok && !acc && (full_reg(x) == dj || full_reg(x) == d0 + k)) ok = false;  // would be renamed too
        }
        if (!ok) continue;
        // it must be able to move up to the leader (as the rpt pass will require)
        for (size_t q = i + 1; q < j && ok; ++q) {
          if (std::find(members.begin(), members.end(), q) != members.end()) continue;
          const Effects &fq = c.ins[q].fx, &fm = m.fx;
          for (int w : fq.writes) ok = ok && std::find(fm.reads.begin(), fm.reads.end(), w) == fm.reads.end() &&
                                       std::find(fm.writes.begin(), fm.writes.end(), w) == fm.writes.end();
          for (int w : fm.writes) ok = ok && std::find(fq.reads.begin(), fq.reads.end(), w) == fq.reads.end();
        }
        if (!ok) break;
        int t = d0 + k;
        if (dj != t) {
          if (pinned[dj] || pinned[t] || !swappable(dj) || !swappable(t)) break;
          swap_regs(dj, t);
          p0 = split(print(c.ins[i].in));
        }
        pinned[d0] = true;
        pinned[t] = true;
        members.push_back(j);
        ++k;
      }
    }
  }
  return progress;
}

}  // namespace opv::ir3::passes
