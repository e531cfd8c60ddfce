// Sync-hazard checker and fixer for ir3 programs (a6xx rules, after Mesa's ir3_legalize.c
// and ir3_delay.c as summarised in ../shared/ir3/NOTES.md §6).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir3/isa.h"

namespace opv::ir3 {

struct Hazard {
  enum class Kind { MissingSs, MissingSy, TooFewDelay };
  Kind kind;
  size_t index;     // instruction that needs the flag or the delay
  std::string reg;  // register involved, e.g. "r1.x" or "hr2.y"
  size_t producer;  // instruction that wrote (or, for WAR, still reads) it
  int need = 0, have = 0;  // delay slots, for TooFewDelay
  std::string message;
};

// Dataflow analysis over register masks along the control-flow graph; reports every
// instruction that reads a result without the (ss)/(sy) it needs, overwrites a register an
// in-flight memory/texture/SFU instruction still reads, or issues too soon after an ALU write.
// `merged_regs` false: the kernel's half registers are a file of their own (a6xx mergedregs=0),
// so hrN.c and the full registers never overlap; true (the safe default) treats hrN.c as a half
// of r(N/2).
std::vector<Hazard> check_hazards(const std::vector<uint64_t>& program, int gen = kGenA6xx, bool merged_regs = true);

// Inserts the minimum needed: sets (ss)/(sy) on the consumer when it has the bit, otherwise adds
// "(ss)nop"; pads short distances with (nopN) on the previous cat2/cat3 when that suffices, else
// with "(rptN)nop"; re-targets branches across insertions.
// Returns true if it changed the program. Afterwards check_hazards() is empty.
bool legalize(std::vector<uint64_t>& program, int gen = kGenA6xx, bool merged_regs = true);

std::string to_string(const Hazard& h);

// What one instruction reads and writes, from the same description the checker uses. Register
// units are half registers: full regid n is units 2n and 2n+1, half regid m is one unit of the
// merged file (so half/full overlap is exact), or 512 + its regid when `merged_regs` is false.
// (rptN) is expanded: every element's registers are listed.
struct Effects {
  int cat = 0;
  std::vector<int> reads, writes;
  std::vector<int> full_regs, half_regs;  // regids touched as full / as half registers (footprint)
  bool ss_prod = false, sy_prod = false;  // result needs (ss) / (sy) before use
  bool store = false;                     // writes memory (global, local, private, IBO)
  bool mem_read = false;                  // reads memory (texture, global, local, private, IBO, const)
  bool is_branch = false, is_jump = false, is_end = false;
  int64_t target = 0;                     // branch/jump offset
  int len = 1, nops = 0;                  // issue slots: (rptN) elements, (nopN)
  bool counts = false;                    // fills delay slots (ALU and non-branch cat0; see legalize.cpp)
  // The delay slots it fills: its issue slots and its (nopN), when it counts; else none.
  int slots_filled() const { return counts ? len + nops : 0; }
  // per entry of reads / writes: the cycle after issue at which it is read (its (rptN) element,
  // plus 2 for a mad's third source) / written (its element)
  std::vector<int> read_at, write_at;
};
Effects effects(const Instr& in, bool merged_regs = true);

}  // namespace opv::ir3
