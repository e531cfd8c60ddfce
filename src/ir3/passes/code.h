// The form the IR3 binary passes rewrite: a program as a list of decoded instructions whose
// branch targets are held as instruction ids, so a pass can insert, delete and move
// instructions freely; emit() recomputes every branch offset. Each instruction carries its
// register/memory effects from the one description the hazard checker also uses (legalize.h).
#pragma once
#include <bitset>
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

// decode(word, gen), remembered per thread (the passes and ir3 opt re-read the same words many
// times); words that do not decode are decoded afresh each time (an invalid Instr).
Instr decode_cached(uint64_t word, int gen);

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

  // The launch the kernel is specialised for, when it is known (a capture's schedule): which
  // registers deliver the local invocation id and the work-group id (x, y, z in consecutive
  // registers; -1 = not delivered), the largest local size and number of work-groups of any of
  // its launches, and the const-file components whose values are fixed at compile time (Mesa's
  // immediates), by component index (cN.c = 4N + c). Empty (no id register) for a lone image.
  struct Grid {
    int local_reg = -1, group_reg = -1;
    uint32_t local_size[3] = {1, 1, 1}, num_groups[3] = {1, 1, 1};
    std::vector<std::pair<int, uint32_t>> consts;
    bool known() const { return local_reg >= 0 || group_reg >= 0; }
  } grid;

 private:
  int next_id_ = 0;
};

// ---- analyses shared by the passes

// Register units (legalize.h's Effects: full regid n is units 2n and 2n+1, half registers one
// unit each, kept apart at 512 + regid when the kernel's files are separate).
constexpr int kUnitsMax = 768;
using Live = std::bitset<kUnitsMax>;

// Control flow other than a plain nop: branches, jumps, end, predication markers, cat7
// barriers/fences, atomics.
bool is_control(const Ins& x);
// A write of a shared register r48-r55 (or hr48-hr55 in a separate half file).
bool shared_write(const Ins& x);
// predt / predf / prede.
bool is_pred_marker(const Ins& x);
// Per index: inside a predicated construct (between predt/predf and prede), where a write
// happens only in some lanes.
std::vector<bool> predicated(const Code& c);
// Control-flow successors of every instruction (index order): the next one unless it jumps or
// ends, and its branch/jump target. `modelled[i]` is false for control flow the passes do not
// model (anything in is_control but branches, jumps, end, predication markers and cat7) and for
// a branch whose target is no longer in the program; such an instruction's list is empty.
struct Cfg {
  std::vector<std::vector<size_t>> succ;
  std::vector<bool> modelled;
};
Cfg control_flow(const Code& c);
// Live-in register units of every instruction (index order), a backward dataflow over the
// control-flow graph: a write inside a predicated construct does not kill (other lanes keep the
// old value); control flow that is not modelled keeps everything live.
std::vector<Live> liveness(const Code& c);
// Index of every instruction id (-1 for ids no longer in the program).
std::vector<int64_t> positions(const Code& c);

// What each register is known to hold where an instruction starts (a forward dataflow over the
// control-flow graph): the immediate of an unrepeated, unpredicated `mov.u32u32 R, imm` (full)
// or `mov.u16u16 hR, imm` (half), or a copy of full register S made by `mov.u32u32 R, S` (S a
// plain r0-r47 component) while S is unchanged. A write of any unit of a register forgets it and
// every copy of it (in the merged file a half write forgets the full register it is half of, and
// a full write both halves); control flow that is not modelled forgets everything; a write
// inside a predicated construct forgets (some lanes keep the old value). At a join a fact
// survives only if every predecessor has it. Slots: full regid n (r0.x-r47.w) is slot n, half
// regid m (hr0.x-hr47.w) is slot kFullRegs + m.
constexpr int kFullRegs = 48 * 4;
constexpr int kSlots = 2 * kFullRegs;
struct Known {
  enum Kind : uint8_t { Top, Imm, Copy, Unknown } kind = Top;  // Top: not reached (yet)
  int value = -1;  // Imm: an id per distinct immediate (equal ids, equal bits); Copy: the source
  int tag = -1;    // index of the move that made it (after a join, the latest of them)
  bool same(const Known& o) const { return kind == o.kind && value == o.value; }
};
using KnownRegs = std::vector<Known>;  // kSlots entries
std::vector<KnownRegs> known_values(const Code& c);
// The move `mov.u32u32 R, x` / `mov.u16u16 hR, imm` (unrepeated, plain operands): R's slot,
// with *src the source register (r0-r47, full moves only) or -1 and *imm the immediate's text;
// -1 when the instruction is not such a move.
int plain_move(const Ins& x, int* src, std::string* imm);
// "r12.w" for full regid 51; "hr12.w" with half.
std::string reg_name(int regid, bool half = false);
// The half register an operand names ("(neg)hr2.w" -> regid 11), or -1.
int half_reg(const std::string& operand);

// Whether an instruction's effects touch / write / read full register `reg` (r0.x-r47.w; in a
// merged file a half register's unit counts for the full register it is half of), and whether
// `reg` is live in a liveness set.
bool reg_touched(const Effects& f, int reg);
bool reg_written(const Effects& f, int reg);
bool reg_read(const Effects& f, int reg);
bool reg_live(const Live& l, int reg);
// An unrepeated cat1 move/conversion, cat2 or cat3 instruction: one scalar destination and
// scalar sources, each operand renamable on its own.
bool scalar_alu(const Ins& x);
// x with every operand in [first, last) that names full register `from` (plainly: prefixes kept,
// no (r) or relative form) renamed `to`, re-assembled; false if one names it otherwise, none
// does, or the text does not assemble back to the same instruction.
bool rename_operands(const Ins& x, int from, int to, size_t first, size_t last, int gen, Instr* out);
// x with operand k renamed full register to[k] wherever to[k] >= 0 (prefixes kept; the operand
// must name a full register plainly), re-assembled; false if one cannot be renamed or the text
// does not assemble back to the same instruction.
bool rename_at(const Ins& x, const std::vector<int>& to, int gen, Instr* out);

// Branch structure for range checks: the index of every instruction id, and per index the
// branches/jumps that target it.
struct Flow {
  std::vector<int64_t> pos;
  std::vector<std::vector<size_t>> from;
};
Flow flow(const Code& c);
// Not control flow, not a shared-register write, no (jp): an instruction a pass may move.
bool plain_ins(const Ins& x);
// A guarded block ("diamond"): a conditional forward `br` (no (jp)) over a non-empty then-block
// that may end in a forward `jump` over an else-block, everything inside plain (plain_ins),
// nothing branching into it but its own branch (to the else start) and jump; the join has no (jp).
struct Diamond {
  size_t br = 0, t = 0, j = 0;  // branch, else start (== j when there is no else), join
  bool has_else = false;
};
bool diamond_at(const Code& c, const Flow& f, size_t i, Diamond* d);
// Whether the range (d, last] is entered only through d (no branch from outside it targets it)
// and holds no control flow that is not modelled; *exits gets where control leaves it: last + 1
// (unless last jumps) and the targets of branches inside it that lie outside.
bool closed_range(const Code& c, const Flow& f, size_t d, size_t last, std::vector<size_t>* exits);
// Whether register f could carry a value over [d, last]: no instruction there touches it, and it
// is dead throughout (d, last] and at every exit (indices past the program are ignored).
bool free_over(const Code& c, const std::vector<Live>& live, size_t d, size_t last, const std::vector<size_t>& exits, int f);
// The edits that rename a value `from` -> `to`: the destination of instruction `def` and the
// sources of every reader; false (and no edits) when one does not re-assemble.
bool rename_value(const Code& c, size_t def, const std::vector<size_t>& readers, int from, int to,
                  std::vector<std::pair<size_t, Instr>>* edits);

// ---- assembler-text helpers (Mesa syntax, as print() writes it)

// Splits "(sy)(nop2) mad.f32 r1.x, r2.x, (r)c3.y, r4.x" into prefix flags ("(sy)(nop2)"), the
// mnemonic ("mad.f32") and the operands.
struct Parts {
  std::string flags, mnemonic;
  std::vector<std::string> operands;
};
Parts split(const std::string& text);
// p's text (flags, mnemonic, operands) assembled into *out; false unless it assembles to an
// instruction of the same name as `like`.
bool assemble(const Parts& p, const Instr& like, int gen, Instr* out);
// Operand text advanced by k components ("r1.w" + 1 = "r2.x", "c3.y" + 2 = "c3.w", with any
// "(r)"/"(neg)"/"(abs)" prefix kept; k may be negative); "" when the operand is not a register
// or const, or the result falls outside the file.
std::string advance(const std::string& operand, int k);
// The full register an operand names ("(r)(neg)r2.w" -> regid 11; rN.c with N < 48), or -1
// (half registers, consts, immediates).
int full_reg(const std::string& operand);
// True for a general-purpose register operand (rN.c or hrN.c, N < 48) after prefixes.
bool is_gpr(const std::string& operand);

}  // namespace opv::ir3::passes
