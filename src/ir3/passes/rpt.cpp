// rpt: pack runs of same-opcode instructions into one (rptN) instruction.
//
// A (rptN) instruction issues N+1 elements; element k writes dst+k and reads each source
// marked (r) at +k (registers and consts), the others unchanged. Steps, per region (code.h):
// (1) a leader is an unrepeated cat1/cat2/cat3 instruction writing a general register;
// (2) look ahead (within kWindow instructions) for the next member: same mnemonic and
// modifiers, destination = leader's + k, every source either the leader's or the leader's + k,
// the same choice for every member; (3) the member may join only if it can move up to the
// leader's place: no instruction in between (outside the group) writes what it reads, or
// reads or writes what it writes, and it reads nothing an earlier element writes (elements
// issue back to back, so an element must not depend on another); (4) up to 4 elements (the
// REPEAT field's range); (5) the packed instruction is assembled from Mesa syntax and must
// decode back to the same mnemonic; members are removed; (6) the packing is kept only if the
// region's estimated issue time (estimate_cycles, passes.h) does not grow. Delay nops and sync
// flags on the members are dropped: the legalize pass recomputes them.
// Progress: true when at least one group was packed.
#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

namespace {

constexpr size_t kWindow = 48;
constexpr int kMaxElements = 4;

bool conflicts(const Effects& a, const Effects& b) {  // any RAW/WAR/WAW between a and b
  for (int w : a.writes) {
    if (std::find(b.reads.begin(), b.reads.end(), w) != b.reads.end()) return true;
    if (std::find(b.writes.begin(), b.writes.end(), w) != b.writes.end()) return true;
  }
  for (int w : b.writes)
    if (std::find(a.reads.begin(), a.reads.end(), w) != a.reads.end()) return true;
  return false;
}

bool leader_ok(const Ins& x, const Parts& p) {
  int cat = x.fx.cat;
  if (cat < 1 || cat > 3) return false;
  if (x.in.get_or("REPEAT", 1) != 0) return false;
  if (p.operands.size() < 2 || !is_gpr(p.operands[0])) return false;
  if (p.operands[0].find('(') != std::string::npos) return false;  // relative or odd destinations
  for (const std::string& op : p.operands)
    if (op.find('<') != std::string::npos || op.find("a0") != std::string::npos) return false;  // relative
  if (cat == 1 && x.in.name().rfind("mov-", 0) != 0) return false;  // swz/gat/sct/movmsk
  return true;
}

std::string with_r(const std::string& op) {
  // "(neg)r1.x" -> "(neg)(r)r1.x" (Mesa prints (r) right before the register)
  size_t i = 0;
  while (i < op.size() && op[i] == '(') i = op.find(')', i) + 1;
  return op.substr(0, i) + "(r)" + op.substr(i);
}

}  // namespace

bool rpt(Code& c) {
  bool progress = false;
  std::vector<std::pair<size_t, size_t>> regs = c.regions();
  // Regions from last to first, so the slices of earlier regions keep their indices. Only the
  // first instruction of a region can be a branch target, and it is never removed (members
  // come after their leader), so a region is rewritten as a plain vector.
  for (size_t r = regs.size(); r-- > 0;) {
    auto [b, e] = regs[r];
    std::vector<Ins> R(c.ins.begin() + static_cast<ptrdiff_t>(b), c.ins.begin() + static_cast<ptrdiff_t>(e));
    std::vector<Parts> parts;
    for (const Ins& x : R) parts.push_back(split(print(x.in)));
    bool changed = false;
    for (size_t i = 0; i < R.size(); ++i) {
      const Parts p0 = parts[i];
      if (!leader_ok(R[i], p0)) continue;
      std::vector<size_t> group{i};
      std::vector<int> mode(p0.operands.size(), -1);  // per source: 0 same, 1 advancing
      for (size_t j = i + 1; j < R.size() && j < i + kWindow && static_cast<int>(group.size()) < kMaxElements; ++j) {
        const Parts& pj = parts[j];
        if (pj.mnemonic != p0.mnemonic || pj.operands.size() != p0.operands.size()) continue;
        if (!leader_ok(R[j], pj)) continue;
        int k = static_cast<int>(group.size());
        if (pj.operands[0] != advance(p0.operands[0], k)) continue;
        std::vector<int> m = mode;
        bool ok = true;
        for (size_t s = 1; s < p0.operands.size() && ok; ++s) {
          bool same = pj.operands[s] == p0.operands[s];
          std::string adv = advance(p0.operands[s], k);
          bool advd = !adv.empty() && pj.operands[s] == adv;
          if (m[s] == 0) ok = same;
          else if (m[s] == 1) ok = advd;
          else if (same) m[s] = 0;
          else if (advd) m[s] = 1;
          else ok = false;
        }
        if (!ok) continue;
        // movable up to the leader, and independent of the earlier elements
        std::set<size_t> in_group(group.begin(), group.end());
        for (size_t q = i + 1; q < j && ok; ++q)
          if (!in_group.count(q) && conflicts(R[q].fx, R[j].fx)) ok = false;
        for (size_t g : group)
          for (int w : R[g].fx.writes)
            if (std::find(R[j].fx.reads.begin(), R[j].fx.reads.end(), w) != R[j].fx.reads.end()) ok = false;
        if (!ok) break;  // the next element cannot come from further down either
        mode = m;
        group.push_back(j);
      }
      if (group.size() < 2) continue;
      std::string text = "(rpt" + std::to_string(group.size() - 1) + ")" + p0.mnemonic + " " + p0.operands[0];
      for (size_t s = 1; s < p0.operands.size(); ++s) text += ", " + (mode[s] == 1 ? with_r(p0.operands[s]) : p0.operands[s]);
      Instr packed;
      try {
        packed = parse(text, c.gen);
      } catch (const Error&) {
        continue;  // not encodable (e.g. (r) not available on that source): leave as is
      }
      if (!packed.valid() || packed.name() != R[i].in.name() ||
          packed.get_or("REPEAT", 0) != static_cast<int64_t>(group.size() - 1))
        continue;
      std::vector<Ins> T = R;
      T[i].in = packed;
      T[i].fx = effects(packed, c.merged_regs);
      for (size_t g = group.size(); g-- > 1;) T.erase(T.begin() + static_cast<ptrdiff_t>(group[g]));
      // the members now issue at the leader's place: refuse when that makes the region slower
      // (a member reading a load's result would make the wait come earlier)
      if (estimate_cycles(T) > estimate_cycles(R)) continue;
      R = std::move(T);
      parts[i] = split(print(packed));
      for (size_t g = group.size(); g-- > 1;) parts.erase(parts.begin() + static_cast<ptrdiff_t>(group[g]));
      changed = true;
    }
    if (!changed) continue;
    c.ins.erase(c.ins.begin() + static_cast<ptrdiff_t>(b), c.ins.begin() + static_cast<ptrdiff_t>(e));
    c.ins.insert(c.ins.begin() + static_cast<ptrdiff_t>(b), R.begin(), R.end());
    progress = true;
  }
  return progress;
}

}  // namespace opv::ir3::passes
