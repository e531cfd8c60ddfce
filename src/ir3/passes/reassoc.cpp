// reassoc: reassociate integer address sums so that a run of addresses costs one add each.
//
// Mesa computes the texel addresses of an unrolled convolution as (X + K) + Y, two adds each:
//     add.u r31.y, r34.y, 96      add.u r31.z, r31.y, r28.x
//     add.u r29.z, r34.y, 104     add.u r29.w, r29.z, r28.x   ...
// with the same X (r34.y) and Y (r28.x) and a different immediate K every time (the largest
// fixture kernel has runs of 30). Integer addition wraps, so (X + K') + Y == (X + K + Y) + (K' - K)
// exactly: once some register R holds X + Y + K, a later sum of the same X and Y (unchanged since)
// and immediate K' >= K is `add.u A', R, K' - K`, and the `add.u T', X, K'` that fed it loses its
// only reader (the dce pass removes it).
//
// Steps, in one forward walk: (1) `add.u T, X, K` (unrepeated, unpredicated, K an immediate, X a
// full register or a const) records that T holds X + K; (2) `add.u A, T, Y` (or Y + T) with T's
// record still valid records that A holds X + Y + K, and when another register R still holds
// X + Y + K0 with K0 <= K (the same X and Y, none of the three written since) and T has no other
// reader, the instruction becomes `add.u A, R, K - K0` (when it assembles: the immediate field is
// small). Values are identified by register and write count, so any write of X, Y, T, R or A
// ends what depended on it. Records are made only outside guarded blocks (a value computed on
// one path does not exist on the other) and all are dropped at a branch target other than a
// guarded block's own join, and at control flow that is not a guarded block (loops: a record
// from the previous iteration would be stale). Progress: true when a sum was rewritten.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

namespace {

// An operand that is a value: a plain full register r0-r47 (regid) or a const cN.c (1000 + n).
int value_of(const std::string& op) {
  if (op.empty() || op[0] == '(') return -1;
  if (op[0] == 'c' && op.size() >= 4 && op.find('.') != std::string::npos) {
    const size_t dot = op.find('.');
    const std::string n = op.substr(1, dot - 1);
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || op.size() != dot + 2) return -1;
    const size_t comp = std::string("xyzw").find(op[dot + 1]);
    if (comp == std::string::npos) return -1;
    return 100000 + std::stoi(n) * 4 + static_cast<int>(comp);
  }
  const int r = full_reg(op);
  return r >= 0 && r < kFullRegs && op == reg_name(r) ? r : -1;
}

bool immediate(const std::string& op, int64_t* k) {
  if (op.empty() || op.find_first_not_of("-0123456789") != std::string::npos) return false;
  try {
    *k = std::stoll(op);
  } catch (...) {
    return false;
  }
  return *k >= 0;
}

struct Sum {       // a register holding X + Y + K (Y = -1 for X + K)
  int x = -1, y = -1;
  int64_t xv = 0, yv = 0, k = 0;
  int64_t own = 0;  // the holder's write count when it was made
};

}  // namespace

bool reassoc(Code& c) {
  const size_t n = c.ins.size();
  if (n < 3) return false;
  const Flow f = flow(c);
  const std::vector<bool> pred = predicated(c);
  const std::vector<Live> live = liveness(c);
  // inside a guarded block: between a diamond's branch and its join
  std::vector<bool> guarded(n, false), join(n, false);
  for (size_t i = 0; i < n; ++i) {
    Diamond d;
    if (!diamond_at(c, f, i, &d)) continue;
    for (size_t k = d.br + 1; k < d.j; ++k) guarded[k] = true;
    join[d.j] = true;
  }
  std::map<int, int64_t> writes;  // value -> write count
  auto version = [&](int v) { return v >= 100000 ? int64_t(0) : writes[v]; };
  std::map<int, Sum> sums;        // holder register -> what it holds
  auto valid = [&](int holder, const Sum& s) {
    return version(holder) == s.own && version(s.x) == s.xv && (s.y < 0 || version(s.y) == s.yv);
  };
  bool progress = false;
  for (size_t i = 0; i < n; ++i) {
    const Ins& x = c.ins[i];
    const bool entered = !f.from[i].empty();
    if (entered && !join[i] && !guarded[i]) sums.clear();
    if (is_control(x) && !(x.fx.is_branch || x.fx.is_jump)) sums.clear();
    if ((x.fx.is_branch || x.fx.is_jump) && !guarded[i]) {
      Diamond d;
      if (!diamond_at(c, f, i, &d)) sums.clear();  // a loop's branch, or a jump that is no block's
    }
    Sum made;
    int holder = -1;
    if (!pred[i] && x.in.name() == "add.u" && x.in.get_or("REPEAT", 1) == 0 && x.fx.cat == 2) {
      const Parts p = split(print(x.in));
      if (p.mnemonic == "add.u" && p.operands.size() == 3 && p.flags.find("(r") == std::string::npos) {
        const int dst = value_of(p.operands[0]);
        const int a = value_of(p.operands[1]), b = value_of(p.operands[2]);
        int64_t k = 0;
        if (dst >= 0 && dst < kFullRegs) {
          if (a >= 0 && immediate(p.operands[2], &k) && a != dst) {  // (1) T = X + K
            made = Sum{a, -1, version(a), 0, k, 0};
            holder = dst;
          } else if (a >= 0 && b >= 0) {  // (2) A = T + Y or Y + T
            for (int side = 0; side < 2 && holder < 0; ++side) {
              const int t = side ? b : a, y = side ? a : b;
              auto it = sums.find(t);
              if (it == sums.end() || it->second.y >= 0 || !valid(t, it->second) || y == dst) continue;
              const Sum& ts = it->second;
              made = Sum{ts.x, y, ts.xv, version(y), ts.k, 0};
              holder = dst;
              // an earlier register with the same X and Y and the largest K0 <= K
              int best = -1;
              int64_t best_k = -1;
              for (const auto& [r, s] : sums)
                if (r != dst && s.y >= 0 && valid(r, s) && s.k <= ts.k && s.k > best_k &&
                    ((s.x == ts.x && s.xv == ts.xv && s.y == y && s.yv == made.yv) ||
                     (s.x == y && s.xv == made.yv && s.y == ts.x && s.yv == ts.xv)))
                  best = r, best_k = s.k;
              if (best < 0) continue;
              // T's only reader must be this instruction (until T is written again)
              bool only = true;
              for (size_t m = i + 1; m < n && only; ++m) {
                if (reg_read(c.ins[m].fx, t)) only = false;
                if (reg_written(c.ins[m].fx, t)) break;
                if (!f.from[m].empty() || is_control(c.ins[m])) {
                  only = !reg_live(live[m], t);  // past here: T must be dead
                  break;
                }
              }
              if (!only || t == dst) continue;
              Instr out;
              try {
                out = parse("add.u " + p.operands[0] + ", " + reg_name(best) + ", " + std::to_string(ts.k - best_k), c.gen);
              } catch (...) {
                continue;
              }
              if (!out.valid() || print(out) != "add.u " + p.operands[0] + ", " + reg_name(best) + ", " + std::to_string(ts.k - best_k))
                continue;
              // Mesa's sync flags stay (legalize keeps them; delays it recomputes)
              if (x.in.get_or("SS", 0)) out = with_field(out, "SS", 1);
              if (x.in.get_or("SY", 0)) out = with_field(out, "SY", 1);
              c.set(i, out);
              progress = true;
            }
          }
        }
      }
    }
    // this instruction's writes end what they overwrite
    int last = -1;
    for (int u : c.ins[i].fx.writes)  // full regid n is units 2n, 2n+1 (a merged half unit too)
      if (u >= 0 && u < 2 * kFullRegs && u / 2 != last) ++writes[last = u / 2];
    if (holder >= 0 && !guarded[i]) {
      made.own = version(holder);
      sums[holder] = made;
    }
  }
  return progress;
}

}  // namespace opv::ir3::passes
