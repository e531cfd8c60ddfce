// rpt: pack runs of same-opcode instructions into one (rptN) instruction.
//
// A (rptN) instruction issues N+1 elements; element k writes dst+k and reads each source
// marked (r) at +k (registers and consts), the others unchanged. Steps, per region (code.h):
// (1) a leader is an unrepeated cat1/cat2/cat3 instruction writing a general register; it may be
// any element o of its group (the o giving the most elements wins); (2) look ahead (within
// kWindow instructions, in any order) for the other elements: same mnemonic and modifiers,
// destination = leader's + (k - o), every source either the leader's or the leader's + (k - o),
// the same choice for every member; (3) a member may join only if it can move up to the
// leader's place: no instruction in between (outside the group) writes what it reads, or reads
// or writes what it writes; and no element reads what an earlier element writes (elements issue
// back to back) nor writes what an earlier one read later in the program; (4) up to 4 elements
// (the REPEAT field's range); (5) the packed instruction is assembled from Mesa syntax and must
// decode back to the same mnemonic; members are removed; (6) the packing is kept only if the
// region's estimated issue time (estimate_cycles, passes.h) grows by at most kSlack cycles: a
// member that reads a load's result makes the wait come earlier (most of a texture latency, and
// refused), while a member moved up past a move leaves that move's reader a delay slot or two
// short, which the hoist pass that follows can fill and which would otherwise split the group
// (t12_fp16's r_4_12_8_16_4_4_64_4: 9,224 -> 8,251 cycles with its loop). Delay nops and sync
// flags on the members are dropped: the legalize pass recomputes them.
// Progress: true when at least one group was packed.
#include <algorithm>

#include "core/error.h"
#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

namespace {

constexpr size_t kWindow = 48;
constexpr int kMaxElements = 4;
constexpr size_t kNone = ~size_t{0};
constexpr int64_t kSlack = 2;  // cycles of estimated growth a packing may cost (step 6)

// Whether any unit of `units` is in `set`.
bool hits(const std::vector<int>& units, const std::vector<int>& set) {
  for (int u : units)
    if (std::find(set.begin(), set.end(), u) != set.end()) return true;
  return false;
}

bool conflicts(const Effects& a, const Effects& b) {  // any RAW/WAR/WAW between a and b
  return hits(a.writes, b.reads) || hits(a.writes, b.writes) || hits(b.writes, a.reads);
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

// Whether b may issue as a later element of one (rptN) than a: b must not read or write what a
// writes (elements issue back to back), and a must not read what b writes unless a came first in
// the program (a write-after-read that keeps its order).
bool may_follow(const Effects& a, const Effects& b, bool a_first_in_program) {
  return a_first_in_program ? !hits(a.writes, b.reads) && !hits(a.writes, b.writes) : !conflicts(a, b);
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
      // The leader is element o of the group for the o that gives the most elements.
      std::vector<size_t> group;  // program index of element k
      std::vector<int> mode;      // per source: 0 same, 1 advancing
      int lead = 0;
      for (int o = 0; o < kMaxElements; ++o) {
        if (advance(p0.operands[0], -o).empty()) break;
        std::vector<size_t> at(kMaxElements, kNone);
        at[static_cast<size_t>(o)] = i;
        std::vector<int> m(p0.operands.size(), -1);
        std::vector<int> order;
        for (int k = o - 1; k >= 0; --k) order.push_back(k);
        for (int k = o + 1; k < kMaxElements; ++k) order.push_back(k);
        int lo = o, hi = o;  // elements found: lo..hi
        for (int k : order) {
          size_t found = kNone;
          for (size_t j = i + 1; j < R.size() && j < i + kWindow && found == kNone; ++j) {
            const Parts& pj = parts[j];
            if (std::find(at.begin(), at.end(), j) != at.end()) continue;
            if (pj.mnemonic != p0.mnemonic || pj.operands.size() != p0.operands.size() || !leader_ok(R[j], pj)) continue;
            if (pj.operands[0] != advance(p0.operands[0], k - o)) continue;
            std::vector<int> mj = m;
            bool ok = true;
            for (size_t s = 1; s < p0.operands.size() && ok; ++s) {
              bool same = pj.operands[s] == p0.operands[s];
              std::string adv = advance(p0.operands[s], k - o);
              bool advd = !adv.empty() && pj.operands[s] == adv;
              if (mj[s] == 0) ok = same;
              else if (mj[s] == 1) ok = advd;
              else if (same) mj[s] = 0;
              else if (advd) mj[s] = 1;
              else ok = false;
            }
            // movable up to the leader past everything outside the group
            for (size_t q = i + 1; q < j && ok; ++q)
              if (std::find(at.begin(), at.end(), q) == at.end() && conflicts(R[q].fx, R[j].fx)) ok = false;
            for (int g = 0; g < kMaxElements && ok; ++g) {
              size_t pg = at[static_cast<size_t>(g)];
              if (pg == kNone) continue;
              ok = g < k ? may_follow(R[pg].fx, R[j].fx, pg < j) : may_follow(R[j].fx, R[pg].fx, j < pg);
            }
            if (ok) found = j, m = mj;
          }
          if (found == kNone) {  // below the leader the group fails; above it, it ends
            if (k < o) lo = -1;
            break;
          }
          at[static_cast<size_t>(k)] = found;
          if (k < o) lo = k;
          else hi = k;
        }
        if (lo != 0) continue;
        if (hi + 1 > static_cast<int>(group.size())) {
          group.assign(at.begin(), at.begin() + hi + 1);
          mode = m;
          lead = o;
        }
      }
      if (group.size() < 2) continue;
      std::string text = "(rpt" + std::to_string(group.size() - 1) + ")" + p0.mnemonic + " " + advance(p0.operands[0], -lead);
      for (size_t s = 1; s < p0.operands.size(); ++s)
        text += ", " + (mode[s] == 1 ? with_r(advance(p0.operands[s], -lead)) : p0.operands[s]);
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
      std::vector<size_t> drop;
      for (size_t g : group)
        if (g != i) drop.push_back(g);
      std::sort(drop.rbegin(), drop.rend());
      for (size_t g : drop) T.erase(T.begin() + static_cast<ptrdiff_t>(g));
      // the members now issue at the leader's place: refuse when that makes the region slower
      // by more than a delay slot or two (a member reading a load's result would make the wait
      // come earlier)
      if (estimate_cycles(T) > estimate_cycles(R) + kSlack) continue;
      R = std::move(T);
      parts[i] = split(print(packed));
      for (size_t g : drop) parts.erase(parts.begin() + static_cast<ptrdiff_t>(g));
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
