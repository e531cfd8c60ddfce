// The form the IR3 binary passes rewrite: a program as a list of decoded instructions whose
// branch targets are held as instruction ids, so a pass can insert, delete and move
// instructions freely; emit() recomputes every branch offset. Each instruction carries its
// register/memory effects from the one description the hazard checker also uses (legalize.h).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir3/isa.h"
#include "ir3/legalize.h"

namespace opv::ir3::passes {

struct Ins {
  Instr in;
  Effects fx;
  int id = 0;          // stable identity (branch targets refer to it)
  int target_id = -1;  // branch/jump: the id of the target instruction
};

class Code {
 public:
  // Decodes `words` up to the last `end` (the nop padding after it is dropped and re-added by
  // emit()). Throws opv::Error on undecodable words or branches leaving the program.
  // `merged_regs`: see the member below (it selects how the effects count half registers).
  Code(const std::vector<uint64_t>& words, int gen = kGenA6xx, bool merged_regs = true);

  // The program as words: branch offsets recomputed, padded with nops to a multiple of 16
  // instructions (the a6xx instruction-size unit, SP_CS_INSTR_SIZE).
  std::vector<uint64_t> emit() const;

  // Replaces instruction i (keeps its id and branch target).
  void set(size_t i, const Instr& in);
  // Removes instruction i; branches to it now go to the instruction after it.
  void erase(size_t i);
  // A new instruction (fresh id) for insertion.
  Ins make(const Instr& in);
  // Instruction ids that some branch targets.
  std::vector<bool> targets() const;

  // Maximal runs [begin, end) that passes may reorder: nothing inside but the first is a
  // branch target, and none is control flow (cat0 other than nop), a barrier or fence (cat7), a
  // predication marker, an atomic or a shared-register write.
  std::vector<std::pair<size_t, size_t>> regions() const;

  std::vector<Ins> ins;
  int gen;
  // Half and full registers share one file (a6xx mergedregs). When false (Mesa's compute
  // variants with mergedregs=0, as the capture's sidecar says), hrN.c and the full registers
  // are distinct registers in every instruction's effects, the hazard checker's and the passes'.
  // Set at construction.
  bool merged_regs = true;

 private:
  int next_id_ = 0;
};

// ---- assembler-text helpers (Mesa syntax, as print() writes it)

// Splits "(sy)(nop2) mad.f32 r1.x, r2.x, (r)c3.y, r4.x" into prefix flags ("(sy)(nop2)"), the
// mnemonic ("mad.f32") and the operands.
struct Parts {
  std::string flags, mnemonic;
  std::vector<std::string> operands;
};
Parts split(const std::string& text);
// Operand text advanced by k components ("r1.w" + 1 = "r2.x", "c3.y" + 2 = "c3.w", with any
// "(r)"/"(neg)"/"(abs)" prefix kept); "" when the operand is not a register or const.
std::string advance(const std::string& operand, int k);
// The full register an operand names ("(r)(neg)r2.w" -> regid 11; rN.c with N < 48), or -1
// (half registers, consts, immediates).
int full_reg(const std::string& operand);
// True for a general-purpose register operand (rN.c or hrN.c, N < 48) after prefixes.
bool is_gpr(const std::string& operand);

}  // namespace opv::ir3::passes
