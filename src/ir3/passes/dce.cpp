// dce: remove ALU instructions whose results nothing reads.
//
// After cp, the moves that gave each use a register of its own have no readers left. An
// instruction is dead when it is a cat1-cat4 ALU instruction (moves, conversions, arithmetic,
// SFU; no memory access, no control flow, no (jp) target marker), it writes only general
// registers (r0-r47 / hr0-hr47: never a0, p0 or a shared register), and none of the units it
// writes is live after it (liveness over the control-flow graph, code.h; control flow that is not
// modelled keeps everything live). Removing dead instructions cannot make another dead one
// live, so every dead instruction of one liveness solution goes at once; repeated until none is
// left (a move whose only reader was dead becomes dead in turn). Its delay nops and sync flags
// go with it: the legalize pass recomputes what the remaining program needs. A move of a full
// register onto itself (`mov.u32u32 r1.z, r1.z`, which cp leaves where it renamed a back-edge
// move's source) changes nothing and goes whether or not its register is read later.
// Progress: true when an instruction was removed.
#include <string>

#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

namespace {

bool gpr_unit(int u) {
  constexpr int kGprUnits = 2 * 48 * 4;  // r0.x .. r47.w, two half units each
  return u < kGprUnits || (u >= 512 && u < 512 + kGprUnits);
}

bool removable(const Ins& x) {
  if (x.fx.cat < 1 || x.fx.cat > 4 || is_control(x) || x.fx.store || x.fx.mem_read) return false;
  if (x.in.get_or("JP", 0) || x.fx.writes.empty()) return false;
  for (int u : x.fx.writes)
    if (!gpr_unit(u)) return false;
  return true;
}

// `mov.u32u32 X, X` / `mov.u16u16 hX, hX`: an unrepeated move of a register onto itself.
bool self_move(const Ins& x) {
  if (x.fx.cat != 1 || x.in.get_or("REPEAT", 1) != 0) return false;
  Parts p = split(print(x.in));
  return (p.mnemonic == "mov.u32u32" || p.mnemonic == "mov.u16u16") && p.operands.size() == 2 &&
         p.operands[0] == p.operands[1] && is_gpr(p.operands[0]);
}

}  // namespace

bool dce(Code& c) {
  bool progress = false;
  for (;;) {
    std::vector<Live> live = liveness(c);
    std::vector<size_t> dead;
    for (size_t i = 0; i + 1 < c.ins.size(); ++i) {
      const Ins& x = c.ins[i];
      if (!removable(x)) continue;
      if (self_move(x)) {
        dead.push_back(i);
        continue;
      }
      bool used = false;
      for (int u : x.fx.writes) used = used || live[i + 1].test(static_cast<size_t>(u));
      if (!used) dead.push_back(i);
    }
    if (dead.empty()) return progress;
    for (size_t k = dead.size(); k-- > 0;) c.erase(dead[k]);
    progress = true;
  }
}

}  // namespace opv::ir3::passes
