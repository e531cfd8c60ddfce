// IR3 binary passes over real a630 machine code (Mesa style: one file each, each returns
// whether it made progress). None is keyed to an instruction index, a hash or a kernel name;
// each works from the instructions' effects (legalize.h) and the ISA table. Whether a rewrite
// is kept is decided elsewhere (ir3/optimize.h): the simulator must give bit-identical results
// and the hazard checker must be clean.
//
// Order: fold (integer arithmetic the launch grid decides becomes a move; needs Code::grid) ->
// cp (ALU sources read the register that already holds a copied value or constant) ->
// coalesce (a texture coordinate goes into a pair whose second half already holds its constant) ->
// reassoc ((X + K') + Y as (X + Y + K) + (K' - K) from a register that holds X + Y + K) ->
// dce (remove ALU instructions nothing reads: the moves cp left without readers) -> accum (one
// register per accumulator for its whole life, accumulators updated side by side in consecutive
// registers, the moves between them gone) -> relocate
// (rename registers so accumulators form runs) -> rpt (pack runs into (rptN)) -> rename (a value
// whose register was just used by other code gets a free register of its own) -> guards (merge
// guarded blocks that test the same unchanged predicate: one branch and jump fewer each, and
// hoist then schedules the loads of a run of guards as one unit) -> hoist (list-schedule each
// region: loads first, ALU work under their latency) -> tidy (cp and dce again on the scheduled
// code, where hoist has moved set-up moves out of their guarded blocks, then hoist again) -> legalize
// (drop every delay nop and sync flag, then re-insert exactly what the hazard checker needs).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir3/passes/code.h"

namespace opv::ir3::passes {

bool fold(Code& c);
bool cp(Code& c);
bool coalesce(Code& c);
bool reassoc(Code& c);
bool dce(Code& c);
bool accum(Code& c);
bool relocate(Code& c);
bool rpt(Code& c);
bool rename(Code& c);
bool guards(Code& c);
bool hoist(Code& c);
bool tidy(Code& c);
bool legalize(Code& c);

// Names in pipeline order, and a lookup ("cp", "coalesce", "reassoc", "dce", "accum", "relocate", "rpt", "rename", "guards", "hoist",
// "tidy", "legalize").
const std::vector<std::string>& pass_names();
bool run_pass(const std::string& name, Code& c);

// ---- the static cost model (cost.cpp)
//
// Per wave, straight through the program once (loops and branches not weighted; Stats::loop_cycles
// adds the bodies of counted loops once per further trip):
//   issue: every instruction takes one cycle per element ((rptN): N+1), (nopN) adds N, and a
//     (rptN)nop is N+1 cycles of nothing;
//   sync stalls: an (sy) consumer waits until kSyLatency cycles after the latest (sy) producer
//     (texture / global / IBO / private loads), an (ss) consumer until kSsLatency after the
//     latest (ss) producer (SFU, local memory, shared registers).
// The latencies are assumptions (a single wave; the a630 hides more behind other waves), chosen
// from the delays Mesa's scheduler plans for: ALU 3 slots, SFU/local ~10, texture/global ~20.
constexpr int kSyLatency = 20, kSsLatency = 10;

struct Stats {
  int instructions = 0;       // up to and including `end`
  int nop_instructions = 0;
  int mad_f32 = 0, mad_f32_packed = 0;  // mad.f32 elements, and those inside (rptN) groups
  // mad.f32 elements with no independent mad.f32 in their straight-line block (Code::regions():
  // between control flow and branch targets): each one feeds or depends on (through registers, transitively) every
  // other there, as in a dot product accumulated one term at a time. No reordering that keeps
  // every rounding can put two of them in one (rptN) group, so mad_f32 - mad_f32_serial bounds
  // what any bit-exact packing reaches.
  int mad_f32_serial = 0;
  int rpt_groups = 0;         // ALU instructions with (rptN), N > 0
  int max_reg = -1, max_half_reg = -1;  // highest full / half register used (r0-r47)
  // Waves an a630 SP can hold at this footprint (occupancy; waves(), below).
  int waves = 0;
  int64_t issue_cycles = 0, nop_cycles = 0, stall_cycles = 0;
  int64_t cycles() const { return issue_cycles + nop_cycles + stall_cycles; }
  // The same with each counted loop's body (trip_count) counted once per trip: cycles() plus
  // (trips - 1) x the body's cycles in the straight walk. The pass driver ranks rewrites by it.
  int64_t loop_cycles = 0;
  int counted_loops = 0;  // loops whose trip count is known (> 1)
};
Stats stats(const Code& c);
// Waves per SP that a register footprint allows on the a630, as Mesa's ir3_collect_info counts
// them for a 64-fiber wave (THREAD64, how tinygrad and our qcom path launch compute): the
// footprint in vec4 registers is max_reg + 1 plus half the half registers ((max_half_reg + 2) / 2),
// the SP's file holds 96 of them per fiber slot, waves come in pairs, at most 16. r0-r11 keep 16
// waves, r0-r17 10, r0-r23 8, r0-r31 6, r0-r47 4: a rewrite that grows the footprint trades
// the latency other waves hide for what it saves in one.
int waves(int max_reg, int max_half_reg);
// Iterations of the loop whose body runs from `head` to the backward jump/branch at `back`, when
// it is counted Mesa's way: a register C set by `mov.u32u32 C, K` before the loop (its last write
// before `head`), stepped once in the body by `add.u|add.s C, C, 1`, then tested by
// `cmps.s|u.ge p0.x, C, N` with a `br p0.x` leaving the body: N - K. Otherwise 1 (unknown).
int64_t trip_count(const Code& c, size_t head, size_t back);

// Estimated cycles to issue a straight-line run of instructions under the same rules, with the
// delays a legalized program would have: its own delay nops are ignored, a read waits for its
// producer (ALU -> ALU 3 delay slots, 1 for a mad's third source, ALU -> anything else 6), where
// only ALU and non-branch cat0 instructions fill delay slots (texture, memory and SFU
// instructions take an issue cycle but fill none: Mesa's count_instruction); an (sy)/(ss)
// consumer waits for kSyLatency / kSsLatency after the latest producer of its kind (and then
// nothing of that kind is pending). Passes compare a rewrite of a region with the original by it.
int64_t estimate_cycles(const std::vector<Ins>& run);
Stats stats(const std::vector<uint64_t>& words, int gen = kGenA6xx);

}  // namespace opv::ir3::passes
