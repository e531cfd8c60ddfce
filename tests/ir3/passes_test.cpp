// IR3 binary passes: each rewrite is checked on the simulator against the original program
// (results computed by running both), the hazard checker must be clean after legalize, and the
// refusals (dependent elements, conflicting moves) are exercised. On real Mesa code (the
// committed capture) every kernel's rewrite must validate, and a deliberately wrong rewrite must
// be caught by translation validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "ir3/capture.h"
#include "ir3/isa.h"
#include "ir3/legalize.h"
#include "ir3/optimize.h"
#include "ir3/passes/passes.h"
#include "ir3/sim.h"

using namespace opv::ir3;

namespace {

// Runs `words` on 64 fibers: r0.x = local id; c0.xy = output address (64 x 4 dwords), c1 = a few
// inputs; returns the output buffer.
std::vector<uint32_t> run(const std::vector<uint64_t>& words) {
  Simulator sim(words);
  uint64_t out = sim.alloc(64 * 16);
  sim.consts.assign(64, 0);
  sim.set_const_u64(0, out);
  float in[8] = {1.5f, -2.25f, 3.0f, 0.5f, 7.0f, -1.0f, 0.25f, 2.0f};
  std::memcpy(&sim.consts[4], in, sizeof in);
  SimConfig cfg;
  cfg.local_size = {64, 1, 1};
  sim.run(cfg);
  return sim.read_vec<uint32_t>(out, 64 * 4);
}

// Four independent accumulators r2.x-w = (lid * c1.c) + c2.c, stored as a vec4 per fiber.
const char* kMadBlock = R"(
  cov.u32f32 r1.x, r0.x
  mov.f32f32 r2.x, c2.x
  mov.f32f32 r2.y, c2.y
  mov.f32f32 r2.z, c2.z
  mov.f32f32 r2.w, c2.w
  (rpt5)nop
  mad.f32 r2.x, c1.x, r1.x, r2.x
  mad.f32 r2.y, c1.y, r1.x, r2.y
  mad.f32 r2.z, c1.z, r1.x, r2.z
  mad.f32 r2.w, c1.w, r1.x, r2.w
  shl.b r3.x, r0.x, 4
  (rpt2)nop
  add.u r4.x, c0.x, r3.x
  mov.u32u32 r4.y, c0.y
  (rpt5)nop
  stg.u32 g[r4.x], r2.x, 4
  end
)";

int count(const std::vector<uint64_t>& w, const std::string& needle) {
  int n = 0;
  for (uint64_t x : w)
    if (disasm(x).find(needle) != std::string::npos) ++n;
  return n;
}

// Repeated instructions other than nops.
int repeated(const std::vector<uint64_t>& w) {
  int n = 0;
  for (uint64_t x : w) {
    std::string t = disasm(x);
    if (t.find("(rpt") != std::string::npos && t.find("nop") == std::string::npos) ++n;
  }
  return n;
}

}  // namespace

TEST(Ir3Passes, RptPacksIndependentAccumulatorsAndKeepsResults) {
  std::vector<uint64_t> orig = assemble(kMadBlock);
  std::vector<uint64_t> opt = run_passes(orig, {"rpt", "legalize"});
  EXPECT_EQ(count(opt, "(rpt3)mad.f32"), 1) << disassemble(opt);
  EXPECT_EQ(count(opt, "(rpt3)mov.f32f32"), 1) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run(orig), run(opt));
  passes::Stats s = passes::stats(opt);
  EXPECT_EQ(s.mad_f32, 4);
  EXPECT_EQ(s.mad_f32_packed, 4);
}

TEST(Ir3Passes, StatsCountMadsWithoutAnIndependentPartnerAsSerial) {
  // A dot product one term at a time: each mad.f32 reads the one before (through a move, too),
  // so none of the three has a partner. Then a block where two chains run side by side: none is
  // serial. A branch target starts a block: the lone mad.f32 after it is serial.
  passes::Stats s = passes::stats(assemble(R"(
    mad.f32 r1.x, r0.x, r0.y, c0.x
    mov.f32f32 r1.y, r1.x
    mad.f32 r1.z, r0.z, r0.w, r1.y
    mad.f32 r1.w, r0.x, r0.z, r1.z
    br p0.x, #5
    mad.f32 r2.x, r0.x, r0.y, c0.x
    mad.f32 r2.y, r0.z, r0.w, c0.y
    mad.f32 r2.z, r2.x, r0.y, r2.x
    mad.f32 r2.w, r2.y, r0.w, r2.y
    mad.f32 r3.x, r0.x, r0.w, c0.z
    end
  )"));
  EXPECT_EQ(s.mad_f32, 8);
  // block 1: 3 serial; block 2 (r2.x .. r2.w): each has a partner in the other chain; r3.x, the
  // branch's target (independent of block 2), starts a block of its own: alone there, serial.
  EXPECT_EQ(s.mad_f32_serial, 4);
  // packed elements are never serial
  EXPECT_EQ(passes::stats(assemble("(rpt1)mad.f32 r1.x, r0.x, (r)r0.y, (r)r1.x\nend\n")).mad_f32_serial, 0);
}

TEST(Ir3Passes, WavesFollowMesasOccupancyFormula) {
  // 96 vec4 registers per fiber slot, waves in pairs, at most 16 (a630, THREAD64)
  EXPECT_EQ(passes::waves(-1, -1), 16);
  EXPECT_EQ(passes::waves(11, -1), 16);
  EXPECT_EQ(passes::waves(12, -1), 14);
  EXPECT_EQ(passes::waves(17, -1), 10);
  EXPECT_EQ(passes::waves(23, -1), 8);
  EXPECT_EQ(passes::waves(31, -1), 6);
  EXPECT_EQ(passes::waves(47, -1), 4);
  EXPECT_EQ(passes::waves(11, 5), 12);  // hr0-hr5: 3 more vec4 registers, 15 in all
  EXPECT_EQ(passes::stats(assemble("mov.f32f32 r17.w, r0.x\nend\n")).waves, 10);
}

TEST(Ir3Passes, RptRefusesDependentElementsAndConflictingMoves) {
  // element 1 reads element 0's result: not packable
  std::vector<uint64_t> chain = assemble(R"(
    mov.f32f32 r2.x, c1.x
    mov.f32f32 r2.y, r2.x
    (rpt5)nop
    shl.b r3.x, r0.x, 4
    (rpt2)nop
    add.u r4.x, c0.x, r3.x
    mov.u32u32 r4.y, c0.y
    (rpt5)nop
    stg.u32 g[r4.x], r2.x, 2
    end
  )");
  std::vector<uint64_t> c2 = run_passes(chain, {"rpt", "legalize"});
  EXPECT_EQ(repeated(c2), 0) << disassemble(c2);
  EXPECT_EQ(run(chain), run(c2));
  // the second element cannot move above an instruction that reads its destination
  std::vector<uint64_t> war = assemble(R"(
    mov.f32f32 r2.x, c1.x
    mov.f32f32 r5.x, r2.y
    mov.f32f32 r2.y, c1.y
    (rpt5)nop
    shl.b r3.x, r0.x, 4
    (rpt2)nop
    add.u r4.x, c0.x, r3.x
    mov.u32u32 r4.y, c0.y
    (rpt5)nop
    stg.u32 g[r4.x], r2.x, 4
    end
  )");
  std::vector<uint64_t> w2 = run_passes(war, {"rpt", "legalize"});
  EXPECT_EQ(count(w2, "(rpt1)mov"), 0) << disassemble(w2);
  EXPECT_EQ(run(war), run(w2));
}

TEST(Ir3Passes, RptGathersElementsInAnyOrder) {
  // Mesa's scheduler often issues the lanes of one pattern as x, y, w, z, or starts with y: the
  // group is assembled at the first of them, whichever element it is.
  std::vector<uint64_t> orig = assemble(R"(
    cov.u32f32 r1.x, r0.x
    mov.f32f32 r2.y, c2.y
    mov.f32f32 r2.x, c2.x
    mov.f32f32 r2.w, c2.w
    mov.f32f32 r2.z, c2.z
    (rpt5)nop
    mad.f32 r2.x, c1.x, r1.x, r2.x
    mad.f32 r2.y, c1.y, r1.x, r2.y
    mad.f32 r2.w, c1.w, r1.x, r2.w
    mad.f32 r2.z, c1.z, r1.x, r2.z
    shl.b r3.x, r0.x, 4
    (rpt2)nop
    add.u r4.x, c0.x, r3.x
    mov.u32u32 r4.y, c0.y
    (rpt5)nop
    stg.u32 g[r4.x], r2.x, 4
    end
  )");
  std::vector<uint64_t> opt = run_passes(orig, {"rpt", "legalize"});
  EXPECT_EQ(count(opt, "(rpt3)mad.f32 r2.x, (r)c1.x, r1.x, (r)r2.x"), 1) << disassemble(opt);
  EXPECT_EQ(count(opt, "(rpt3)mov.f32f32 r2.x, (r)c2.x"), 1) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run(orig), run(opt));
  // element 0 reads what element 1, earlier in the program, wrote: issuing it first would read
  // the old value, so the two stay apart
  std::vector<uint64_t> raw = assemble(R"(
    mov.f32f32 r2.z, c1.x
    (rpt5)nop
    add.f r2.y, r2.z, c1.y
    add.f r2.x, r2.y, c1.y
    shl.b r3.x, r0.x, 4
    (rpt2)nop
    add.u r4.x, c0.x, r3.x
    mov.u32u32 r4.y, c0.y
    (rpt5)nop
    stg.u32 g[r4.x], r2.x, 4
    end
  )");
  std::vector<uint64_t> r2 = run_passes(raw, {"rpt", "legalize"});
  EXPECT_EQ(count(r2, "(rpt1)add.f"), 0) << disassemble(r2);
  EXPECT_EQ(run(raw), run(r2));
}

TEST(Ir3Passes, ControlFlowListsSuccessorsAndWhatIsNotModelled) {
  // 0 mov, 1 br over 2, 2 mov, 3 jump back to 0, 4 end
  passes::Code c(assemble(R"(
    mov.u32u32 r1.x, 0
    br p0.x, #2
    mov.u32u32 r1.y, 1
    jump #-3
    end
  )"));
  passes::Cfg g = passes::control_flow(c);
  ASSERT_EQ(g.succ.size(), 5u);
  EXPECT_EQ(g.succ[0], (std::vector<size_t>{1}));
  EXPECT_EQ(g.succ[1], (std::vector<size_t>{2, 3}));
  EXPECT_EQ(g.succ[2], (std::vector<size_t>{3}));
  EXPECT_EQ(g.succ[3], (std::vector<size_t>{0}));
  EXPECT_TRUE(g.succ[4].empty());
  EXPECT_EQ(std::count(g.modelled.begin(), g.modelled.end(), false), 0);
  // a kill (a control-flow form the passes do not model) has no known successors, and
  // liveness keeps every register live there
  passes::Code u(assemble(R"(
    mov.u32u32 r1.x, 0
    kill p0.x
    end
  )"));
  passes::Cfg gu = passes::control_flow(u);
  EXPECT_FALSE(gu.modelled[1]);
  EXPECT_TRUE(gu.succ[1].empty());
  EXPECT_TRUE(passes::liveness(u)[1].all());
}

TEST(Ir3Passes, HoistAndLegalizeKeepResultsAndAreHazardFree) {
  std::vector<uint64_t> orig = assemble(kMadBlock);
  for (const std::vector<std::string>& p : std::vector<std::vector<std::string>>{
           {"hoist", "legalize"}, {"legalize"}, {"rpt", "hoist", "legalize"}}) {
    std::vector<uint64_t> opt = run_passes(orig, p);
    EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
    EXPECT_EQ(run(orig), run(opt));
  }
}

TEST(Ir3Passes, BranchesAreRetargetedWhenNopsGo) {
  // a loop whose body loses its delay nops: the backward branch must still reach the body
  std::vector<uint64_t> loop = assemble(R"(
    mov.u32u32 r1.x, 0
    mov.u32u32 r1.y, 0
  body:
    (rpt2)nop
    add.u r1.y, r1.y, r1.x
    add.u r1.x, r1.x, 1
    (rpt2)nop
    cmps.u.lt p0.x, r1.x, r0.x
    (rpt5)nop
    br p0.x, #body
    shl.b r3.x, r0.x, 4
    (rpt2)nop
    add.u r4.x, c0.x, r3.x
    mov.u32u32 r4.y, c0.y
    (rpt5)nop
    stg.u32 g[r4.x], r1.y, 1
    end
  )");
  std::vector<uint64_t> opt = run_passes(loop, {"legalize"});
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run(loop), run(opt));
  EXPECT_EQ(opt.size() % 16, 0u);
}

// Runs `words` on 64 fibers with an input buffer of 64 floats (i * 0.5 - 3) at c3.xy and the
// output (64 x 4 dwords) at c0.xy; `merged_regs` false: half registers are a file of their own.
std::vector<uint32_t> run_with_input(const std::vector<uint64_t>& words, bool merged_regs = true) {
  Simulator sim(words);
  uint64_t out = sim.alloc(64 * 16), in = sim.alloc(64 * 4);
  std::vector<float> data(64);
  for (int i = 0; i < 64; ++i) data[static_cast<size_t>(i)] = static_cast<float>(i) * 0.5f - 3.0f;
  sim.write(in, data.data(), data.size() * 4);
  sim.consts.assign(64, 0);
  sim.set_const_u64(0, out);
  sim.set_const_u64(12, in);
  SimConfig cfg;
  cfg.local_size = {64, 1, 1};
  cfg.merged_regs = merged_regs;
  sim.run(cfg);
  return sim.read_vec<uint32_t>(out, 64 * 4);
}

// Mesa's shape for padded loads: each load sits in a then-block behind a lane-dependent branch,
// with the address's high half filled in the block ((rpt5)nop before the load), and its
// consumer right after the join. r7.x is written in the last then-block and read after it, so
// it is live on the else path and must stay inside.
const char* kGuardedLoads = R"(
  shl.b r3.x, r0.x, 2
  cmps.u.lt p0.x, r0.x, 40
  mov.f32f32 r10.x, (0.0)
  mov.u32u32 r7.x, 11
  add.u r5.x, c3.x, r3.x
  br !p0.x, #e1
  mov.u32u32 r5.y, c3.y
  (rpt5)nop
  (sy)ldg.f32 r6.x, g[r5.x], 1
  jump #j1
e1:
  mov.f32f32 r6.x, (0.0)
j1:
  (sy)add.f r10.x, r10.x, r6.x
  add.u r8.x, r5.x, 4
  br !p0.x, #e2
  mov.u32u32 r8.y, c3.y
  (rpt5)nop
  (sy)ldg.f32 r6.y, g[r8.x], 1
  jump #j2
e2:
  mov.f32f32 r6.y, (0.0)
j2:
  (sy)(nop2) add.f r10.x, r10.x, r6.y
  add.u r9.x, r5.x, 8
  br !p0.x, #e3
  mov.u32u32 r9.y, c3.y
  mov.u32u32 r7.x, 22
  (rpt5)nop
  (sy)ldg.f32 r6.z, g[r9.x], 1
  jump #j3
e3:
  mov.f32f32 r6.z, (0.0)
j3:
  (sy)(nop2) add.f r10.x, r10.x, r6.z
  (rpt2)nop
  cov.u32f32 r10.y, r7.x
  shl.b r3.y, r0.x, 4
  (rpt2)nop
  add.u r4.x, c0.x, r3.y
  mov.u32u32 r4.y, c0.y
  (rpt5)nop
  stg.u32 g[r4.x], r10.x, 2
  end
)";

TEST(Ir3Passes, HoistMovesGuardedLoadsAndSpeculatesOnlyDeadRegisters) {
  std::vector<uint64_t> orig = assemble(kGuardedLoads);
  std::vector<uint64_t> base = run_passes(orig, {"legalize"});
  std::vector<uint64_t> opt = run_passes(orig, {"hoist", "legalize"});
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run_with_input(orig), run_with_input(opt)) << disassemble(opt);
  EXPECT_LT(passes::stats(opt).cycles(), passes::stats(base).cycles()) << disassemble(opt);
  // the three guarded loads now issue before the first sum, and the high halves of their
  // addresses left the then-blocks (no (rpt5)nop in front of a load)
  std::vector<std::string> lines;
  for (uint64_t w : opt) lines.push_back(disasm(w));
  size_t last_load = 0, first_add = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("ldg.f32") != std::string::npos) last_load = i;
    if (lines[i].find("add.f r10.x") != std::string::npos) first_add = std::min(first_add, i);
  }
  EXPECT_LT(last_load, first_add) << disassemble(opt);
  auto nops_before_loads = [](const std::vector<uint64_t>& w) {
    int n = 0;
    for (size_t i = 1; i < w.size(); ++i)
      if (disasm(w[i]).find("ldg.f32") != std::string::npos && disasm(w[i - 1]).find("(rpt5)nop") != std::string::npos) ++n;
    return n;
  };
  EXPECT_GT(nops_before_loads(base), 0) << disassemble(base);
  EXPECT_EQ(nops_before_loads(opt), 0) << disassemble(opt);
  // r7.x = 22 (live after the join) still executes only in its then-block: between a branch
  // and its jump
  bool inside = false, ok = false;
  for (const std::string& l : lines) {
    if (l.find("br ") != std::string::npos) inside = true;
    if (l.find("jump ") != std::string::npos) inside = false;
    if (l.find("r7.x, 22") != std::string::npos) ok = inside;
  }
  EXPECT_TRUE(ok) << disassemble(opt);
}

// Back-to-back guarded loads: the first block's jump lands on the second block's branch. What
// moves in front of that branch must run on every path that reaches it, so the jump follows.
TEST(Ir3Passes, HoistKeepsSpeculatedCodeOnEveryPathToTheGuard) {
  std::vector<uint64_t> orig = assemble(R"(
    shl.b r3.x, r0.x, 2
    cmps.u.lt p0.x, r0.x, 40
    (rpt2)nop
    add.u r5.x, c3.x, r3.x
    add.u r8.x, c3.x, r3.x
    mov.f32f32 r7.x, (0.5)
    mov.f32f32 r7.y, (1.0)
    mov.f32f32 r7.z, (2.0)
    br !p0.x, #e1
    mov.u32u32 r5.y, c3.y
    (rpt5)nop
    (sy)ldg.f32 r6.x, g[r5.x], 1
    jump #j1
  e1:
    mov.f32f32 r6.x, (0.0)
  j1:
    br !p0.x, #e2
    mov.u32u32 r8.y, c3.y
    (rpt5)nop
    (sy)ldg.f32 r6.y, g[r8.x], 1
    jump #j2
  e2:
    mov.f32f32 r6.y, (0.0)
  j2:
    (sy)add.f r10.x, r6.x, r6.y
    shl.b r3.y, r0.x, 4
    (rpt2)nop
    add.u r4.x, c0.x, r3.y
    mov.u32u32 r4.y, c0.y
    (rpt5)nop
    stg.u32 g[r4.x], r10.x, 1
    end
  )");
  std::vector<uint64_t> opt = run_passes(orig, {"hoist", "legalize"});
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run_with_input(orig), run_with_input(opt)) << disassemble(opt);
}

// IMAGE=2 kernels guard their loads by predication. The whole predt..prede construct moves as
// a unit: the load issues ahead of the multiply chain that does not need it, so its (sy) wait
// overlaps that work; both sides still run on their own lanes (same results).
TEST(Ir3Passes, HoistMovesPredicatedLoadsAsUnits) {
  std::vector<uint64_t> orig = assemble(R"(
    shl.b r3.x, r0.x, 2
    cmps.u.lt p0.x, r0.x, 40
    cov.u32f32 r1.x, r0.x
    add.u r5.x, c3.x, r3.x
    mov.u32u32 r5.y, c3.y
    mul.f r2.x, r1.x, (0.5)
    mul.f r2.x, r2.x, r2.x
    mul.f r2.y, r2.x, r2.x
    mul.f r2.z, r2.y, r2.x
    mul.f r2.w, r2.z, r2.y
    predt
    ldg.f32 r6.x, g[r5.x], 1
    predf
    mov.f32f32 r6.x, (0.0)
    prede
    (sy)add.f r10.x, r6.x, r2.w
    add.u r4.x, c0.x, r3.x
    mov.u32u32 r4.y, c0.y
    (rpt5)nop
    stg.f32 g[r4.x], r10.x, 1
    end
  )");
  std::vector<uint64_t> base = run_passes(orig, {"legalize"});
  std::vector<uint64_t> opt = run_passes(orig, {"hoist", "legalize"});
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run_with_input(orig), run_with_input(opt)) << disassemble(opt);
  EXPECT_LT(passes::stats(opt).cycles(), passes::stats(base).cycles()) << disassemble(opt);
  std::string text = disassemble(opt);
  // the construct stayed whole and moved above the chain's last multiply
  size_t t = text.find("predt"), l = text.find("ldg.f32"), f = text.find("predf"), e = text.find("prede");
  ASSERT_NE(e, std::string::npos) << text;
  EXPECT_TRUE(t < l && l < f && f < e) << text;
  EXPECT_LT(t, text.find("mul.f r2.w")) << text;
}

TEST(Ir3Passes, HoistSpeculatesOutOfPredicatedStores) {
  // The store's address is filled inside the predicated construct (Mesa's tail): it may move
  // in front of predt (nothing reads it afterwards), where the schedule hides its delay.
  std::vector<uint64_t> orig = assemble(R"(
    cov.u32f32 r1.x, r0.x
    and.b r1.y, r0.x, 1
    shl.b r3.x, r0.x, 4
    mul.f r2.x, r1.x, (0.5)
    cmps.u.eq p0.x, r1.y, 1
    mul.f r2.x, r2.x, r2.x
    mul.f r2.y, r2.x, r2.x
    mul.f r2.z, r2.y, r2.x
    predt
    add.u r4.x, c0.x, r3.x
    mov.u32u32 r4.y, c0.y
    (rpt5)nop
    stg.u32 g[r4.x], r2.x, 3
    prede
    end
  )");
  std::vector<uint64_t> base = run_passes(orig, {"legalize"});
  std::vector<uint64_t> opt = run_passes(orig, {"hoist", "legalize"});
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run(orig), run(opt));
  EXPECT_LT(passes::stats(opt).cycles(), passes::stats(base).cycles()) << disassemble(opt);
  std::string text = disassemble(opt);
  EXPECT_LT(text.find("mov.u32u32 r4.y"), text.find("predt")) << text;
}

// Two predicated loads whose sections each fill the address pair r5.x/r5.y before their load
// (Mesa's IMAGE=2 shape). The second section writes r5 before reading it, so only the lanes that
// wrote read it: r5.y is dead after the first construct, and the first section's `mov r5.y`
// may move in front of its predt, where other work hides its delay. A register the second
// section reads without writing it first stays live.
TEST(Ir3Passes, PredicatedSectionsCoverTheirOwnReads) {
  std::vector<uint64_t> orig = assemble(R"(
    shl.b r3.x, r0.x, 2
    cmps.u.lt p0.x, r0.x, 40
    cov.u32f32 r1.x, r0.x
    add.u r5.x, c3.x, r3.x
    mul.f r2.x, r1.x, (0.5)
    mul.f r2.y, r1.x, (1.0)
    mul.f r2.z, r1.x, (2.0)
    mul.f r2.w, r1.x, (4.0)
    predt
    mov.u32u32 r5.y, c3.y
    (rpt5)nop
    ldg.f32 r6.x, g[r5.x], 1
    predf
    mov.f32f32 r6.x, (0.0)
    prede
    predt
    add.u r5.x, r5.x, 4
    mov.u32u32 r5.y, c3.y
    (rpt5)nop
    ldg.f32 r6.y, g[r5.x], 1
    predf
    mov.f32f32 r6.y, (0.0)
    prede
    (sy)add.f r10.x, r6.x, r6.y
    add.f r10.y, r2.x, r2.y
    add.f r10.z, r2.z, r2.w
    add.u r4.x, c0.x, r3.x
    mov.u32u32 r4.y, c0.y
    (rpt5)nop
    stg.f32 g[r4.x], r10.x, 3
    end
  )");
  passes::Code c(orig);
  std::vector<passes::Live> live = passes::liveness(c);
  size_t first = 0, second = 0;  // the two predt
  for (size_t i = 0, seen = 0; i < c.ins.size(); ++i)
    if (c.ins[i].in.name() == "predt") (++seen == 1 ? first : second) = i;
  ASSERT_GT(second, 0u);
  EXPECT_FALSE(passes::reg_live(live[second], 4 * 5 + 1));  // r5.y: written before read
  EXPECT_TRUE(passes::reg_live(live[second], 4 * 5 + 0));   // r5.x: read by the add first
  // r6.x is written on both sides of the first construct (the load, the zero): dead before it,
  // though read after it; so is r6.y, written on both sides of the second; r5.x, which the
  // second reads first, stays live inside the first
  EXPECT_FALSE(passes::reg_live(live[first], 4 * 6 + 0));
  EXPECT_TRUE(passes::reg_live(live[first + 1], 4 * 5 + 0));
  EXPECT_FALSE(passes::reg_live(live[first], 4 * 6 + 1));
  std::vector<uint64_t> base = run_passes(orig, {"legalize"});
  std::vector<uint64_t> opt = run_passes(orig, {"hoist", "legalize"});
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run_with_input(orig), run_with_input(opt)) << disassemble(opt);
  EXPECT_LT(passes::stats(opt).cycles(), passes::stats(base).cycles()) << disassemble(opt);
  std::string text = disassemble(opt);
  EXPECT_LT(text.find("mov.u32u32 r5.y"), text.find("predt")) << text;
}

// A section that rewrites p0 changes which lanes run the other section, so a register both
// sections write is not known dead before the construct: liveness keeps the conservative rule.
TEST(Ir3Passes, PredicatedConstructsThatWriteP0KeepWritesLive) {
  auto live_at_predt = [](const std::string& first_section) {
    passes::Code c(assemble(R"(
      cmps.u.lt p0.x, r0.x, 40
      predt
    )" + first_section + R"(
      mov.u32u32 r6.x, 1
      predf
      mov.u32u32 r6.x, 2
      prede
      add.u r6.y, r6.x, r0.x
      end
    )"));
    size_t t = 0;
    while (c.ins[t].in.name() != "predt") ++t;
    return passes::reg_live(passes::liveness(c)[t], 4 * 6 + 0);
  };
  EXPECT_FALSE(live_at_predt(""));
  EXPECT_TRUE(live_at_predt("cmps.u.lt p0.x, r0.x, 20"));
}

// With separate half and full register files (mergedregs=0), a half register read after the
// join does not keep the full register it would alias in a merged file alive: the then-block's
// `mov r2.y, 0` may leave the block only when the kernel says its files are separate.
TEST(Ir3Passes, HoistSpeculatesAcrossHalfRegistersOnlyWithSeparateFiles) {
  const char* text = R"(
    shl.b r3.x, r0.x, 2
    (rpt2)nop
    add.u r2.x, c3.x, r3.x
    cmps.u.lt p0.x, r0.x, 40
    mov.u16u16 hr4.z, 7
    mov.f32f32 r7.x, (0.5)
    mov.f32f32 r7.y, (1.0)
    mov.f32f32 r7.z, (2.0)
    mov.f32f32 r7.w, (4.0)
    br !p0.x, #e1
    mov.u32u32 r2.y, c3.y
    (rpt5)nop
    (sy)ldg.f32 r6.x, g[r2.x], 1
    jump #j1
  e1:
    mov.f32f32 r6.x, (0.0)
  j1:
    (sy)cov.u16u32 r6.y, hr4.z
    shl.b r3.y, r0.x, 4
    (rpt2)nop
    add.u r4.x, c0.x, r3.y
    mov.u32u32 r4.y, c0.y
    (rpt5)nop
    stg.u32 g[r4.x], r6.x, 2
    end
  )";
  std::vector<uint64_t> orig = assemble(text);
  auto opt = [&](bool merged) {
    passes::Code c(orig, kGenA6xx, merged);
    passes::run_pass("hoist", c);
    passes::run_pass("legalize", c);
    return c.emit();
  };
  auto inside = [](const std::vector<uint64_t>& w) {  // r2.y still set between br and jump
    bool in = false, found = false;
    for (uint64_t x : w) {
      std::string l = disasm(x);
      if (l.find("br ") != std::string::npos) in = true;
      if (l.find("jump ") != std::string::npos) in = false;
      if (l.find("mov.u32u32 r2.y") != std::string::npos) found = in;
    }
    return found;
  };
  std::vector<uint64_t> merged = opt(true), separate = opt(false);
  EXPECT_TRUE(inside(merged)) << disassemble(merged);
  EXPECT_FALSE(inside(separate)) << disassemble(separate);
  EXPECT_TRUE(check_hazards(separate, kGenA6xx, false).empty()) << disassemble(separate);
  // same results on the simulator with separate files
  EXPECT_EQ(run_with_input(orig, false), run_with_input(separate, false));
}

TEST(Ir3Passes, EstimateCyclesFollowsTheCostModel) {
  auto est = [](const char* text) {
    passes::Code c(assemble(text));
    return passes::estimate_cycles(c.ins);
  };
  // independent ALU ops issue back to back; a dependent one waits 3 delay slots (3 nops)
  EXPECT_EQ(est("add.f r1.x, r0.x, r0.y\nadd.f r1.y, r0.x, r0.y\nend\n"), 3);
  EXPECT_EQ(est("add.f r1.x, r0.x, r0.y\nadd.f r1.y, r1.x, r0.y\nend\n"), 6);
  // a mad reads its third source two cycles late: one nop
  EXPECT_EQ(est("add.f r1.x, r0.x, r0.y\nmad.f32 r1.y, r0.x, r0.y, r1.x\nend\n"), 4);
  // a load between them takes a cycle but fills no slot: still 3 nops
  EXPECT_EQ(est("add.f r1.x, r0.x, r0.y\nldg.f32 r2.x, g[r4.x], 1\nadd.f r1.y, r1.x, r0.y\nend\n"), 7);
  // a load's consumer waits kSyLatency after the load; delay nops in the input are ignored
  EXPECT_EQ(est("ldg.f32 r1.x, g[r2.x], 1\n(rpt5)nop\n(sy)add.f r1.y, r1.x, r0.y\nend\n"),
            passes::kSyLatency + 2);
  // (rptN) counts its elements
  EXPECT_EQ(est("(rpt3)add.f r1.x, (r)r2.x, r0.y\nend\n"), 5);
}

// Counted loops: the body counts once per trip in Stats::loop_cycles; loops whose trip count is
// not known that way count once.
TEST(Ir3Passes, LoopCyclesCountCountedLoopsPerTrip) {
  auto loop = [](const std::string& init, const std::string& step, const std::string& test, const std::string& exit) {
    return assemble("mov.u32u32 r1.x, " + init + "\n"
                    "body:\n"
                    "add.f r2.x, r0.x, r0.y\n"
                    + step + "\n(rpt2)nop\n" + test + "\n(rpt5)nop\n" + exit + "\nend\n");
  };
  // exit when the counter reaches 7 after starting at 2: 5 trips
  std::vector<uint64_t> ge = loop("2", "add.u r1.x, r1.x, 1", "cmps.s.ge p0.x, r1.x, 7", "br p0.x, #out\njump #body\nout:");
  passes::Stats s = passes::stats(ge);
  passes::Code c(ge);
  EXPECT_EQ(passes::trip_count(c, 1, 7), 5);
  EXPECT_EQ(s.counted_loops, 1);
  // the body is instructions 1..7 (add.f, add.u, nop, cmps, nop, br, jump: 1 + 1 + 3 + 1 + 6 + 1 + 1)
  EXPECT_EQ(s.loop_cycles, s.cycles() + 4 * 14);
  // continue while below 4, from 0: 4 trips
  std::vector<uint64_t> lt = loop("0", "add.u r1.x, r1.x, 1", "cmps.u.lt p0.x, r1.x, 4", "br p0.x, #body");
  EXPECT_EQ(passes::stats(lt).counted_loops, 1);
  EXPECT_EQ(passes::trip_count(passes::Code(lt), 1, 6), 4);
  // a step other than 1, or a counter not set to an immediate: unknown
  for (const std::vector<uint64_t>& w : {loop("0", "add.u r1.x, r1.x, 2", "cmps.s.ge p0.x, r1.x, 7", "br p0.x, #out\njump #body\nout:"),
                                         loop("r0.x", "add.u r1.x, r1.x, 1", "cmps.s.ge p0.x, r1.x, 7", "br p0.x, #out\njump #body\nout:")}) {
    passes::Stats u = passes::stats(w);
    EXPECT_EQ(u.counted_loops, 0) << disassemble(w);
    EXPECT_EQ(u.loop_cycles, u.cycles()) << disassemble(w);
  }
}

TEST(Ir3Passes, UnknownPassIsAnError) {
  EXPECT_THROW(run_passes(assemble(kMadBlock), {"bogus"}), opv::Error);
}

// Our delay model against Mesa's on its own output: Mesa's kernels pass the checker, and the
// legalize pass, which drops every delay nop and recomputes them, never waits less than Mesa did
// and lands on exactly Mesa's nop cycles in nearly every kernel (a model that let texture or
// memory instructions fill delay slots removed nops from most of them).
TEST(Ir3Passes, LegalizeReproducesMesasDelaysOnRealKernels) {
  Capture cap = Capture::load(std::string(OPV_SOURCE_DIR) + "/tests/data/ir3/small_fp16");
  int same = 0;
  for (const CaptureKernel& k : cap.kernels) {
    std::vector<Hazard> hz = check_hazards(k.code, kGenA6xx, k.mergedregs);
    EXPECT_TRUE(hz.empty()) << k.name << ": " << to_string(hz.front());
    passes::Code c(k.code, kGenA6xx, k.mergedregs);
    passes::run_pass("legalize", c);
    const passes::Stats mesa = passes::stats(k.code), ours = passes::stats(c);
    EXPECT_GE(ours.nop_cycles + ours.stall_cycles, mesa.nop_cycles + mesa.stall_cycles) << k.name;
    same += ours.nop_cycles == mesa.nop_cycles;
  }
  EXPECT_GE(same * 10, static_cast<int>(cap.kernels.size()) * 9) << same << " of " << cap.kernels.size();
}

// Real Mesa code with openpilot's compile settings (IMAGE=2: weights as texels of 4 output
// channels): in every 1x1 convolution loop whose 16 accumulators Mesa scatters, accum puts each
// accumulator in one register for the whole loop, consecutive per output pixel, so rpt packs the
// loop's mads; the code stays hazard-free after legalize and computes the same on the simulator.
TEST(Ir3Passes, AccumPacksTheLoopsOfRealConvolutions) {
  Capture cap = Capture::load(std::string(OPV_SOURCE_DIR) + "/tests/data/ir3/t12_fp16_openpilot");
  // per loop (from a backward jump's target to the jump): mad.f32 elements, those in (rptN)
  // groups, texture reads, and register-to-register moves
  struct Loop {
    int mads = 0, packed = 0, texels = 0, moves = 0;
  };
  auto loop_of = [](const passes::Code& c) {
    Loop l;
    std::vector<int64_t> pos = passes::positions(c);
    for (size_t i = 0; i < c.ins.size(); ++i) {
      if (!c.ins[i].fx.is_jump || c.ins[i].target_id < 0 || pos[static_cast<size_t>(c.ins[i].target_id)] >= static_cast<int64_t>(i)) continue;
      l = Loop{};
      for (size_t q = static_cast<size_t>(pos[static_cast<size_t>(c.ins[i].target_id)]); q < i; ++q) {
        const Instr& in = c.ins[q].in;
        const std::string t = print(in);
        int elements = static_cast<int>(in.get_or("REPEAT", 0)) + 1;
        if (in.name() == "mad.f32") l.mads += elements, l.packed += elements > 1 ? elements : 0;
        l.texels += in.name().rfind("isam", 0) == 0;
        l.moves += t.find("mov.u32u32 r") != std::string::npos && t.find(", r") != std::string::npos;
      }
    }
    return l;
  };
  int loops = 0, mads = 0, packed = 0;
  for (size_t k = 0; k < cap.kernels.size(); ++k) {
    const CaptureKernel& kern = cap.kernels[k];
    passes::Code c(kern.code, kGenA6xx, kern.mergedregs);
    const Loop before = loop_of(c);
    if (before.mads != 64 || before.texels != 8) continue;  // 4 x 4 outputs over 4 input channels a step
    ++loops;
    passes::Code o = c;
    o.grid = launch_grid(cap, static_cast<int>(k));
    ASSERT_TRUE(passes::accum(o)) << kern.name;
    passes::rpt(o);
    passes::legalize(o);
    std::vector<uint64_t> code = o.emit();
    EXPECT_TRUE(check_hazards(code, kGenA6xx, kern.mergedregs).empty()) << kern.name;
    const Loop after = loop_of(o);
    EXPECT_EQ(after.mads, 64) << kern.name;
    EXPECT_GE(after.packed * 3, 64) << kern.name << "\n" << disassemble(code);
    EXPECT_LE(after.moves, before.moves) << kern.name << "\n" << disassemble(code);  // back-edge moves go, none come
    std::printf("%s: loop mad.f32 packed %d -> %d of 64, register moves %d -> %d\n", kern.name.c_str(), before.packed,
                after.packed, before.moves, after.moves);
    mads += after.mads, packed += after.packed;
    passes::Stats s0 = passes::stats(kern.code), s1 = passes::stats(code);
    EXPECT_LE(s1.max_reg, s0.max_reg + 4) << kern.name;
    if (loops == 1) {
      EXPECT_EQ(validate_kernel(cap, static_cast<int>(k), code, 1, 11), "") << kern.name;
    }
  }
  EXPECT_GE(loops, 10);
  EXPECT_GE(packed * 100, mads * 85) << packed << " of " << mads;
}

// Real Mesa-compiled a630 kernels (tests/data/ir3/small_fp16): every rewrite validates, and a
// wrong rewrite is caught.
TEST(Ir3Passes, RealKernelsValidateAndWrongRewritesAreCaught) {
  std::string dir = std::string(OPV_SOURCE_DIR) + "/tests/data/ir3/small_fp16";
  Capture cap = Capture::load(dir);
  Capture opt = cap;
  OptOptions o;
  o.validate_sets = 2;
  std::vector<KernelOpt> r = optimize_capture(opt, o);
  ASSERT_EQ(r.size(), cap.kernels.size());
  int changed = 0, packed_before = 0, packed_after = 0;
  for (const KernelOpt& k : r) {
    EXPECT_TRUE(k.failed_pass.empty()) << k.name << ": " << k.failed_pass << ": " << k.reason;
    // The kept code is never slower than Mesa's by the cost model, loops counted per trip (else
    // the original is kept).
    EXPECT_LE(k.after.loop_cycles, k.before.loop_cycles) << k.name << " " << k.note;
    if (!k.changed) {
      EXPECT_EQ(k.after.instructions, k.before.instructions) << k.name;
    }
    changed += k.changed;
    packed_before += k.before.mad_f32_packed;
    packed_after += k.after.mad_f32_packed;
  }
  EXPECT_GT(changed, 0);
  EXPECT_GT(packed_after, packed_before);
  // a kernel with one float add/mul swapped must fail validation
  for (size_t k = 0; k < cap.kernels.size(); ++k) {
    std::vector<uint64_t> code = cap.kernels[k].code;
    for (uint64_t& w : code) {
      std::string t = disasm(w);
      if (t.rfind("mul.f ", 0) == 0) {
        w = encode(parse("add.f " + t.substr(6)));
        EXPECT_NE(validate_kernel(cap, static_cast<int>(k), code, 1, 7), "") << cap.kernels[k].name;
        return;
      }
    }
  }
  FAIL() << "no kernel with a plain mul.f to corrupt";
}

// ---- cp, dce, coalesce, rename

namespace {

// `body`, then the store of `dwords` dwords from `reg` to c0.xy + 16 * local id, and `end`.
std::vector<uint64_t> stored(const std::string& body, const std::string& reg, int dwords) {
  return assemble(body + R"(
    shl.b r3.x, r0.x, 4
    (rpt2)nop
    add.u r4.x, c0.x, r3.x
    mov.u32u32 r4.y, c0.y
    (rpt5)nop
    (ss)nop
    stg.u32 g[r4.x], )" + reg + ", " + std::to_string(dwords) + R"(
    end
  )");
}

}  // namespace

// Constants and copies: the zero accumulators read the first zero register, the copy's reader
// reads the copied register, and dce removes the moves left without readers.
TEST(Ir3Passes, CpSharesConstantsAndCopiesAndDceRemovesTheMoves) {
  std::vector<uint64_t> orig = stored(R"(
    cov.u32f32 r1.x, r0.x
    mov.u32u32 r2.x, 0
    mov.u32u32 r2.y, 0
    mov.u32u32 r2.z, 0
    mov.u32u32 r2.w, 0
    mov.u32u32 r5.x, r1.x
    (rpt5)nop
    mad.f32 r6.x, c1.x, r1.x, r2.x
    mad.f32 r6.y, c1.y, r1.x, r2.y
    mad.f32 r6.z, c1.z, r5.x, r2.z
    mad.f32 r6.w, c1.w, r5.x, r2.w
  )", "r6.x", 4);
  std::vector<uint64_t> opt = run_passes(orig, {"cp", "dce", "legalize"});
  EXPECT_EQ(count(opt, "mov.u32u32 r2."), 1) << disassemble(opt);
  EXPECT_EQ(count(opt, "r5.x"), 0) << disassemble(opt);
  EXPECT_EQ(count(opt, "mad.f32"), 4) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run(orig), run(opt));
}

// A move of a register onto itself goes even though its register is read later (only the
// self-move: the copy into r5.x that the store reads stays).
TEST(Ir3Passes, DceRemovesMovesOntoThemselves) {
  std::vector<uint64_t> orig = stored(R"(
    cov.u32f32 r1.x, r0.x
    mov.u32u32 r1.x, r1.x
    (rpt5)nop
    mov.u32u32 r5.x, r1.x
    mov.u32u32 r5.y, r1.x
    mov.u32u32 r5.z, r1.x
    mov.u32u32 r5.w, r1.x
  )", "r5.x", 4);
  std::vector<uint64_t> opt = run_passes(orig, {"dce", "legalize"});
  EXPECT_EQ(count(opt, "mov.u32u32 r1.x, r1.x"), 0) << disassemble(opt);
  EXPECT_EQ(count(opt, "mov.u32u32 r5."), 4) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run(orig), run(opt));
}

// A value carried around a loop, or a copy whose source changes before the read, is not a known
// value: cp leaves the reads alone and the moves stay.
TEST(Ir3Passes, CpLeavesLoopCarriedValuesAndStaleCopies) {
  std::vector<uint64_t> orig = stored(R"(
    mov.u32u32 r1.x, 0
    mov.u32u32 r1.y, 0
    mov.u32u32 r2.x, 0
  body:
    (rpt2)nop
    add.u r1.y, r1.y, r1.x
    add.u r2.x, r2.x, r1.x
    add.u r1.x, r1.x, 1
    (rpt2)nop
    cmps.u.lt p0.x, r1.x, r0.x
    (rpt5)nop
    br p0.x, #body
    mov.u32u32 r5.x, r1.y
    add.u r1.y, r1.y, 3
    (rpt2)nop
    add.u r6.x, r5.x, r2.x
  )", "r6.x", 1);
  std::vector<uint64_t> opt = run_passes(orig, {"cp", "dce", "legalize"});
  EXPECT_EQ(count(opt, "add.u r6.x, r5.x, r2.x"), 1) << disassemble(opt);
  EXPECT_EQ(count(opt, "mov.u32u32 r1.y, 0"), 1) << disassemble(opt);
  EXPECT_EQ(count(opt, "mov.u32u32 r2.x, 0"), 1) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run(orig), run(opt));
}

// dce removes a dead chain, keeps what a later block reads, and -- with the register files'
// layout unknown (merged assumed) -- never lets a half write end a full register's life: in a
// kernel with separate files r3.z keeps its value across the writes of hr7.x/hr7.y.
TEST(Ir3Passes, DceRemovesDeadChainsAndKeepsFullRegistersAcrossHalfWrites) {
  std::vector<uint64_t> orig = stored(R"(
    add.u r20.x, r0.x, 3
    mov.u32u32 r3.z, 7
    mov.u16u16 hr7.x, 1
    mov.u16u16 hr7.y, 2
    (rpt2)nop
    shl.b r20.y, r20.x, 1
    cov.u32f32 r6.x, r3.z
    cov.u16f16 hr9.x, hr7.y
  )", "r6.x", 1);
  passes::Code c(orig);
  ASSERT_TRUE(passes::dce(c));
  passes::legalize(c);
  std::vector<uint64_t> opt = c.emit();
  EXPECT_EQ(count(opt, "r20."), 0) << disassemble(opt);
  EXPECT_EQ(count(opt, "hr9.x"), 0) << disassemble(opt);
  EXPECT_EQ(count(opt, "mov.u32u32 r3.z, 7"), 1) << disassemble(opt);
  EXPECT_EQ(run_with_input(orig, false), run_with_input(opt, false));
}

namespace {

// Two RGBA32F images 128 x 1 (t#0, t#1) of distinct values; runs `words` on 64 fibers and
// returns the output (64 x 4 dwords at c0.xy).
std::vector<uint32_t> run_with_images(const std::vector<uint64_t>& words) {
  Simulator sim(words);
  uint64_t out = sim.alloc(64 * 16);
  sim.consts.assign(64, 0);
  sim.set_const_u64(0, out);
  for (int t = 0; t < 2; ++t) {
    SimImage img;
    img.width = 128;
    img.height = 1;
    std::vector<float> texels(128 * 4);
    for (size_t i = 0; i < texels.size(); ++i) texels[i] = static_cast<float>(i) * 0.25f + static_cast<float>(t) * 100.0f;
    img.data.resize(texels.size() * 4);
    std::memcpy(img.data.data(), texels.data(), img.data.size());
    sim.images.push_back(img);
  }
  SimConfig cfg;
  cfg.local_size = {64, 1, 1};
  sim.run(cfg);
  return sim.read_vec<uint32_t>(out, 64 * 4);
}

// Two texel reads, each coordinate in a pair with y = 0 of its own; `tail` goes before the store.
std::vector<uint64_t> two_reads(const std::string& tail) {
  return stored(R"(
    mov.u32u32 r1.y, 0
    add.u r1.x, r0.x, 1
    (rpt5)nop
    isam.1d (f32)(xyzw)r8.x, r1.x, s#0, t#0
    add.u r2.x, r0.x, 2
    mov.u32u32 r2.y, 0
    (rpt5)nop
    isam.1d (f32)(xyzw)r12.x, r2.x, s#1, t#1
    (sy)add.f r8.x, r8.x, r12.x
)" + tail, "r8.x", 4);
}

}  // namespace

// The second coordinate goes into r1.x, whose pair half r1.y already holds 0 (r1.x is dead
// once the first read has it), so the second `mov ..., 0` has no reader and goes; when r1.x is
// still read later, nothing changes.
TEST(Ir3Passes, CoalescePutsACoordinateNextToAnExistingZero) {
  std::vector<uint64_t> orig = two_reads("");
  std::vector<uint64_t> opt = run_passes(orig, {"coalesce", "dce", "legalize"});
  EXPECT_EQ(count(opt, "mov.u32u32 r2.y, 0"), 0) << disassemble(opt);
  EXPECT_EQ(count(opt, "t#1"), 1) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run_with_images(orig), run_with_images(opt));

  std::vector<uint64_t> busy = two_reads("    cov.u32f32 r8.y, r1.x\n");
  std::vector<uint64_t> kept = run_passes(busy, {"coalesce", "dce", "legalize"});
  EXPECT_EQ(count(kept, "mov.u32u32 r2.y, 0"), 1) << disassemble(kept);
  EXPECT_EQ(run_with_images(busy), run_with_images(kept));
}

// Three reciprocals of products, all through r0.w: each product must wait until the previous
// rcp has read r0.w. rename gives the later products registers of their own, after which hoist
// overlaps the SFU latencies; the results are the same.
TEST(Ir3Passes, RenameFreesReusedTemporariesForHoist) {
  std::vector<uint64_t> orig = stored(R"(
    cov.u32f32 r1.x, r0.x
    mov.f32f32 r2.w, c1.w
    (rpt5)nop
    mul.f r0.w, r1.x, c1.x
    (rpt2)nop
    rcp r2.x, r0.w
    mul.f r0.w, r1.x, c1.y
    (rpt2)nop
    rcp r2.y, r0.w
    mul.f r0.w, r1.x, c1.z
    (rpt2)nop
    rcp r2.z, r0.w
  )", "r2.x", 4);
  std::vector<uint64_t> renamed = run_passes(orig, {"rename", "hoist", "legalize"});
  std::vector<uint64_t> plain = run_passes(orig, {"hoist", "legalize"});
  EXPECT_EQ(count(renamed, "mul.f r0.w"), 1) << disassemble(renamed);
  EXPECT_LT(passes::stats(renamed).cycles(), passes::stats(plain).cycles()) << disassemble(renamed) << disassemble(plain);
  EXPECT_LE(passes::stats(renamed).max_reg, passes::stats(orig).max_reg);
  EXPECT_TRUE(check_hazards(renamed).empty()) << disassemble(renamed);
  EXPECT_EQ(run(orig), run(renamed));
}

// Mesa's texel blocks overlap: the second load fills r8.w-r9.z, so it must wait until the packed
// group has read the first texel's r8.w, and the two texture waits follow each other. rename
// gives the second texel a block of its own (shifting the group's (r) run with it); hoist then
// issues both loads before the first wait. A block whose reader is a store (here the output
// itself) keeps its registers.
namespace {

std::vector<uint64_t> overlapping_texels(const std::string& out) {
  return stored(R"(
    cov.u32f32 r1.x, r0.x
    add.u r2.x, r0.x, 1
    mov.u32u32 r2.y, 0
    add.u r3.x, r0.x, 2
    mov.u32u32 r3.y, 0
    mov.f32f32 r4.x, c2.x
    mov.f32f32 r4.y, c2.y
    mov.f32f32 r4.z, c2.z
    mov.f32f32 r4.w, c2.w
    (rpt5)nop
    isam.1d (f32)(xyzw)r8.x, r2.x, s#0, t#0
    (sy)(rpt3)mad.f32 r4.x, r1.x, (r)r8.x, (r)r4.x
    isam.1d (f32)(xyzw)r8.w, r3.x, s#1, t#1
    (sy)(rpt3)mad.f32 r4.x, r1.x, (r)r8.w, (r)r4.x
  )", out, 4);
}

}  // namespace

TEST(Ir3Passes, RenameGivesOverlappingTexelsBlocksOfTheirOwn) {
  std::vector<uint64_t> orig = overlapping_texels("r4.x");
  std::vector<uint64_t> renamed = run_passes(orig, {"rename", "hoist", "legalize"});
  std::vector<uint64_t> plain = run_passes(orig, {"hoist", "legalize"});
  EXPECT_EQ(count(renamed, "(xyzw)r8.w"), 0) << disassemble(renamed);
  EXPECT_EQ(count(renamed, "(r)r8.w"), 0) << disassemble(renamed);
  EXPECT_EQ(count(renamed, "(rpt3)mad.f32"), 2) << disassemble(renamed);
  EXPECT_LT(passes::stats(renamed).cycles(), passes::stats(plain).cycles()) << disassemble(renamed) << disassemble(plain);
  EXPECT_LE(passes::stats(renamed).max_reg, passes::stats(orig).max_reg + 4);
  EXPECT_TRUE(check_hazards(renamed).empty()) << disassemble(renamed);
  EXPECT_EQ(run_with_images(orig), run_with_images(renamed));

  std::vector<uint64_t> stored_block = overlapping_texels("r8.w");
  std::vector<uint64_t> kept = run_passes(stored_block, {"rename", "legalize"});
  EXPECT_EQ(count(kept, "isam.1d (f32)(xyzw)r8.w"), 1) << disassemble(kept);
  EXPECT_EQ(run_with_images(stored_block), run_with_images(kept));
}

// The last element moves up past a move whose reader then has one delay slot fewer filled (a
// texture read between them fills none): the region's straight-line estimate grows by a cycle,
// which hoist can recover and is worth a whole group, so the four pack. A member that would
// make a texel's wait come earlier (reading the load's result at the leader's place) costs a
// whole texture latency and stays apart.
TEST(Ir3Passes, RptAcceptsACycleOfDelayForAWholeGroup) {
  auto program = [](const std::string& last) {
    return stored(R"(
    cov.u32f32 r1.x, r0.x
    add.u r6.x, r0.x, 1
    mov.u32u32 r6.y, 0
    mov.f32f32 r2.x, c2.x
    mov.f32f32 r2.y, c2.y
    mov.f32f32 r2.z, c2.z
    mov.f32f32 r2.w, c2.w
    (rpt5)nop
    isam.1d (f32)(xyzw)r8.x, r6.x, s#0, t#0
    mad.f32 r2.x, c1.x, r1.x, r2.x
    mad.f32 r2.y, c1.y, r1.x, r2.y
    mad.f32 r2.z, c1.z, r1.x, r2.z
    mov.f32f32 r5.x, c3.x
    )" + last + R"(
    isam.1d (f32)(xyzw)r12.x, r6.x, s#1, t#1
    add.f r5.y, r5.x, r5.x
    add.f r2.y, r2.y, r5.y
  )", "r2.x", 4);
  };
  std::vector<uint64_t> orig = program("mad.f32 r2.w, c1.w, r1.x, r2.w");
  std::vector<uint64_t> opt = run_passes(orig, {"rpt", "legalize"});
  EXPECT_EQ(count(opt, "(rpt3)mad.f32 r2.x"), 1) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run_with_images(orig), run_with_images(opt));
  std::vector<uint64_t> waits = program("(sy)mad.f32 r2.w, r8.x, r1.x, r2.w");
  std::vector<uint64_t> kept = run_passes(waits, {"rpt", "legalize"});
  EXPECT_EQ(count(kept, "(rpt3)mad.f32"), 0) << disassemble(kept);
  EXPECT_EQ(run_with_images(waits), run_with_images(kept));
}

// Mesa's allocator lets loop accumulators wander: acc0 and acc2 are computed into other
// registers and moved back at the back edge, and the four sit in scattered registers. accum gives
// each one register for its whole life (the back-edge moves go) and the four consecutive ones,
// so rpt packs their updates into one (rpt3)mad.
namespace {

std::vector<uint64_t> wandering_accumulators(const std::string& exit_to) {
  return stored(R"(
    cov.u32f32 r1.x, r0.x
    mov.u32u32 r1.y, 0
    mov.f32f32 r5.x, c2.x
    mov.f32f32 r6.y, c2.y
    mov.f32f32 r7.z, c2.z
    mov.f32f32 r5.w, c2.w
  body:
    (rpt5)nop
    mad.f32 r8.x, c1.x, r1.x, r5.x
    mad.f32 r6.y, c1.y, r1.x, r6.y
    mad.f32 r8.z, c1.z, r1.x, r7.z
    mad.f32 r5.w, c1.w, r1.x, r5.w
    add.u r1.y, r1.y, 1
    (rpt2)nop
    cmps.u.ge p0.x, r1.y, 3
    (rpt5)nop
    br p0.x, #exit
    mov.u32u32 r5.x, r8.x
    mov.u32u32 r7.z, r8.z
    jump #body
  exit:
  )" + exit_to, "r2.x", 4);
}

}  // namespace

TEST(Ir3Passes, AccumGivesEachLoopAccumulatorOneRegisterInARun) {
  std::vector<uint64_t> orig = wandering_accumulators(R"(
    mov.u32u32 r2.x, r8.x
    mov.u32u32 r2.y, r6.y
    mov.u32u32 r2.z, r8.z
    mov.u32u32 r2.w, r5.w
  )");
  std::vector<uint64_t> opt = run_passes(orig, {"accum", "rpt", "legalize"});
  EXPECT_EQ(count(opt, "(rpt3)mad.f32"), 1) << disassemble(opt);
  EXPECT_EQ(count(opt, "mad.f32"), 1) << disassemble(opt);
  // the back-edge moves are gone (the jump follows the exit branch), and the initial and final
  // moves of the four now pack too
  std::vector<std::string> lines;
  for (uint64_t w : opt) lines.push_back(disasm(w));
  auto jump = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("jump", 0) == 0; });
  ASSERT_NE(jump, lines.end()) << disassemble(opt);
  EXPECT_EQ(std::prev(jump)->rfind("br ", 0), 0u) << disassemble(opt);
  EXPECT_EQ(count(opt, "(rpt3)mov"), 2) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run(orig), run(opt));
  // the footprint may grow (by at most 4 registers), never past that
  EXPECT_LE(passes::stats(opt).max_reg, passes::stats(orig).max_reg + 4);

  // an accumulator that a store reads as part of a vector keeps its register, and the results
  // stay the same
  std::vector<uint64_t> pinned = stored(R"(
    cov.u32f32 r1.x, r0.x
    mov.f32f32 r2.x, c2.x
    mov.f32f32 r6.y, c2.y
    (rpt5)nop
    mad.f32 r2.x, c1.x, r1.x, r2.x
    mad.f32 r6.y, c1.y, r1.x, r6.y
    (rpt2)nop
    mov.u32u32 r2.y, r6.y
  )", "r2.x", 2);
  std::vector<uint64_t> p2 = run_passes(pinned, {"accum", "rpt", "legalize"});
  EXPECT_NE(disassemble(p2).find("r2.x, c1.x"), std::string::npos) << disassemble(p2);
  EXPECT_EQ(run(pinned), run(p2));

  // relative register access can reach any register: nothing is renamed
  std::vector<uint64_t> rel = wandering_accumulators(R"(
    mov.u32u32 r2.x, r8.x
    mov.u32u32 r2.y, r6.y
    mov.u32u32 r2.z, r8.z
    mova a0.x, hr0.x
    (rpt5)nop
    mov.u32u32 r2.w, r<a0.x + 23>
  )");
  passes::Code rc(rel);
  EXPECT_FALSE(passes::accum(rc));
}

// A coordinate pair of known values (two immediates; a copy and an immediate) is read from an
// earlier pair holding the same values, and the moves that built the later pairs go.
TEST(Ir3Passes, CpReadsKnownCoordinatePairsFromEarlierPairs) {
  std::vector<uint64_t> orig = stored(R"(
    add.u r5.x, r0.x, 3
    mov.u32u32 r5.y, 0
    mov.u32u32 r1.x, 5
    mov.u32u32 r1.y, 0
    (rpt5)nop
    isam.1d (f32)(xyzw)r8.x, r1.x, s#0, t#0
    isam.1d (f32)(xyzw)r16.x, r5.x, s#0, t#0
    mov.u32u32 r2.x, 5
    mov.u32u32 r2.y, 0
    mov.u32u32 r6.z, r5.x
    mov.u32u32 r6.w, 0
    (rpt5)nop
    isam.1d (f32)(xyzw)r12.x, r2.x, s#1, t#1
    isam.1d (f32)(xyzw)r20.x, r6.z, s#1, t#1
    (sy)add.f r8.x, r8.x, r12.x
    add.f r8.y, r16.x, r20.x
  )", "r8.x", 4);
  std::vector<uint64_t> opt = run_passes(orig, {"cp", "dce", "legalize"});
  EXPECT_EQ(count(opt, "mov.u32u32 r2."), 0) << disassemble(opt);
  EXPECT_EQ(count(opt, "mov.u32u32 r6."), 0) << disassemble(opt);
  EXPECT_EQ(count(opt, "isam.1d (f32)(xyzw)r12.x, r1.x, s#1, t#1"), 1) << disassemble(opt);
  EXPECT_EQ(count(opt, "isam.1d (f32)(xyzw)r20.x, r5.x, s#1, t#1"), 1) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run_with_images(orig), run_with_images(opt));
}

namespace {

// Four guarded loads: the first and third test p0.x (the third has no else), the second p0.y;
// the fourth tests p0.x again after it was recomputed. `between` runs after the first block.
std::vector<uint64_t> four_guards(const std::string& between) {
  return assemble(R"(
    shl.b r3.x, r0.x, 2
    cmps.u.lt p0.x, r0.x, 40
    cmps.u.lt p0.y, r0.x, 30
    mov.f32f32 r10.x, (0.0)
    mov.f32f32 r6.y, (0.5)
    add.u r5.x, c3.x, r3.x
    (rpt2)nop
    add.u r8.x, r5.x, 4
    add.u r9.x, r5.x, 8
    mov.u32u32 r5.y, c3.y
    mov.u32u32 r8.y, c3.y
    mov.u32u32 r9.y, c3.y
    (rpt5)nop
    br !p0.x, #e1
    (sy)ldg.f32 r6.x, g[r5.x], 1
    jump #j1
  e1:
    mov.f32f32 r6.x, (0.0)
  j1:
    (sy))" + between + R"(
    br !p0.y, #e2
    (sy)ldg.f32 r11.x, g[r9.x], 1
    jump #j2
  e2:
    mov.f32f32 r11.x, (1.0)
  j2:
    br !p0.x, #j3
    (sy)ldg.f32 r6.y, g[r8.x], 1
  j3:
    (sy)(nop2) add.f r10.x, r10.x, r6.y
    cmps.u.lt p0.x, r0.x, 20
    (rpt5)nop
    br !p0.x, #e4
    (sy)ldg.f32 r6.z, g[r9.x], 1
    jump #j4
  e4:
    mov.f32f32 r6.z, (0.0)
  j4:
    (sy)(nop2) add.f r10.y, r10.x, r6.z
    mov.f32f32 r10.z, r11.x
    mov.f32f32 r10.w, r6.y
    shl.b r3.y, r0.x, 4
    (rpt2)nop
    add.u r4.x, c0.x, r3.y
    mov.u32u32 r4.y, c0.y
    (rpt5)nop
    stg.u32 g[r4.x], r10.x, 4
    end
  )");
}

}  // namespace

// The third block joins the first (same predicate, unchanged; what lies between -- an add and a
// block of another predicate -- does not touch its registers), so one branch goes; the fourth
// stays apart (p0.x was recomputed). When the work in between reads what the third block
// writes, nothing merges.
TEST(Ir3Passes, GuardsMergesBlocksOfTheSamePredicate) {
  std::vector<uint64_t> orig = four_guards("add.f r10.x, r10.x, r6.x");
  ASSERT_EQ(count(orig, "br "), 4);
  std::vector<uint64_t> opt = run_passes(orig, {"guards", "legalize"});
  EXPECT_EQ(count(opt, "br "), 3) << disassemble(opt);
  EXPECT_EQ(count(opt, "jump "), 3) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run_with_input(orig), run_with_input(opt)) << disassemble(opt);
  // both loads of the merged block sit between its branch and its jump
  std::vector<std::string> lines;
  for (uint64_t w : opt) lines.push_back(disasm(w));
  size_t br = 0;
  while (br < lines.size() && lines[br].find("br !p0.x") == std::string::npos) ++br;
  ASSERT_LT(br + 2, lines.size());
  int loads = 0;
  for (size_t i = br + 1; i < lines.size() && lines[i].find("jump") == std::string::npos; ++i)
    loads += lines[i].find("ldg.f32") != std::string::npos;
  EXPECT_EQ(loads, 2) << disassemble(opt);

  std::vector<uint64_t> war = four_guards("add.f r10.x, r10.x, r6.y");
  std::vector<uint64_t> kept = run_passes(war, {"guards", "legalize"});
  EXPECT_EQ(count(kept, "br "), 4) << disassemble(kept);
  EXPECT_EQ(run_with_input(war), run_with_input(kept)) << disassemble(kept);
}

namespace {

// Three loads at X + K + Y (X = the input's base, Y = 4 * (lane & 31), K = 0, 4, 8), each address
// computed Mesa's way, (X + K) + Y, the third with Y first; `between` runs after the first sum.
std::vector<uint64_t> three_sums(const std::string& between) {
  return stored(R"(
    and.b r2.y, r0.x, 31
    mov.u32u32 r20.x, c3.x
    (rpt2)nop
    shl.b r2.x, r2.y, 2
    (rpt2)nop
    add.u r5.x, r20.x, 0
    (rpt2)nop
    add.u r6.x, r5.x, r2.x
    )" + between + R"(
    add.u r5.y, r20.x, 4
    (rpt2)nop
    add.u r7.x, r5.y, r2.x
    add.u r5.z, r20.x, 8
    (rpt2)nop
    add.u r8.x, r2.x, r5.z
    mov.u32u32 r6.y, c3.y
    mov.u32u32 r7.y, c3.y
    mov.u32u32 r8.y, c3.y
    mov.f32f32 r10.w, (0.0)
    (rpt5)nop
    ldg.f32 r10.x, g[r6.x], 1
    ldg.f32 r10.y, g[r7.x], 1
    ldg.f32 r10.z, g[r8.x], 1
    (sy)nop
  )", "r10.x", 4);
}

}  // namespace

// The second sum reuses the first (X + Y + 0, plus 4), the third (Y first) the second (the
// nearest smaller immediate, plus 4), so their `add.u T, X, K` lose their reader and dce removes
// them; when X is rewritten after the first sum, that sum no longer stands for the new X (the
// third still reuses the second).
TEST(Ir3Passes, ReassocSharesAddressSums) {
  std::vector<uint64_t> orig = three_sums("");
  std::vector<uint64_t> opt = run_passes(orig, {"reassoc", "dce", "legalize"});
  EXPECT_EQ(count(orig, "add.u") - count(opt, "add.u"), 2) << disassemble(opt);
  EXPECT_EQ(count(opt, "add.u r7.x, r6.x, 4"), 1) << disassemble(opt);
  EXPECT_EQ(count(opt, "add.u r8.x, r7.x, 4"), 1) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run_with_input(orig), run_with_input(opt)) << disassemble(opt);

  std::vector<uint64_t> moved = three_sums("add.u r20.x, r20.x, 4\n(rpt2)nop");
  std::vector<uint64_t> kept = run_passes(moved, {"reassoc", "dce", "legalize"});
  EXPECT_EQ(count(kept, "add.u r7.x, r5.y, r2.x"), 1) << disassemble(kept);
  EXPECT_EQ(count(kept, "add.u r8.x, r7.x, 4"), 1) << disassemble(kept);
  EXPECT_EQ(run_with_input(moved), run_with_input(kept)) << disassemble(kept);
}

namespace {

// Two loads behind branches on different predicates; each then-block adds an offset held in a
// register it sets itself (the same immediate 4 in both; nothing reads it on the else path), the
// way Mesa sets up a texture's index pair inside each guarded block.
// One guarded load: `mov OFF, 4` and `add.u ADDR, ADDR, OFF` inside the then-block, else VALUE.
std::string offset_block(const std::string& pred, const std::string& tag, const std::string& off, const std::string& addr,
                         const std::string& dst, const std::string& value) {
  return "br !" + pred + ", #e" + tag + "\nmov.u32u32 " + off + ", 4\n(rpt2)nop\nadd.u " + addr + ", " + addr + ", " + off +
         "\n(rpt5)nop\n(sy)ldg.f32 " + dst + ", g[" + addr + "], 1\njump #j" + tag + "\ne" + tag + ":\nmov.f32f32 " + dst + ", (" +
         value + ")\nj" + tag + ":\n";
}

std::vector<uint64_t> two_offset_guards() {
  return stored(R"(
    shl.b r3.x, r0.x, 2
    cmps.u.lt p0.x, r0.x, 40
    cmps.u.lt p0.y, r0.x, 30
    add.u r5.x, c3.x, r3.x
    (rpt2)nop
    add.u r8.x, r5.x, 8
    mov.u32u32 r5.y, c3.y
    mov.u32u32 r8.y, c3.y
  )" + offset_block("p0.x", "1", "r12.x", "r5.x", "r6.x", "0.0") +
                    offset_block("p0.y", "2", "r12.z", "r8.x", "r6.y", "1.0") + R"(
    (sy)(nop2) add.f r10.x, r6.x, r6.y
  )",
                "r10.x", 1);
}

}  // namespace

// hoist moves each block's `mov r12.c, 4` in front of its branch (dead on the else path); only
// then is the first one known on every path into the second block, so tidy's cp reads r12.x
// there and its dce drops the second move. Without tidy both moves stay.
TEST(Ir3Passes, TidyDropsSetUpThatHoistMadeCommon) {
  std::vector<uint64_t> orig = two_offset_guards();
  std::vector<uint64_t> hoisted = run_passes(orig, {"hoist", "legalize"});
  EXPECT_EQ(count(hoisted, "mov.u32u32 r12"), 2) << disassemble(hoisted);
  std::vector<uint64_t> opt = run_passes(orig, {"hoist", "tidy", "legalize"});
  EXPECT_EQ(count(opt, "mov.u32u32 r12"), 1) << disassemble(opt);
  EXPECT_EQ(count(opt, "add.u r8.x, r8.x, r12.x"), 1) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run_with_input(orig), run_with_input(opt)) << disassemble(opt);
  // before hoist, the path around the first block does not set r12.x: nothing to share
  std::vector<uint64_t> early = run_passes(orig, {"tidy", "legalize"});
  EXPECT_EQ(count(early, "mov.u32u32 r12"), 2) << disassemble(early);
}

// Load A feeds a serial chain; loads B-E are independent and read only after it. A greedy
// schedule issues B-E while the chain's first step waits for A, and since the hardware's (sy)
// waits for every load in flight, each of them pushes that wait further out. hoist's deferred
// order lets the chain's first step sync on A alone and issues B-E in the chain's delay slots.
TEST(Ir3Passes, HoistSyncsAWaitingConsumerBeforeMoreLoads) {
  std::string chain;  // eleven more serial steps on A
  for (int k = 0; k < 11; ++k) chain += std::string(k % 2 ? "(nop2) add.f" : "(nop2) mul.f") + " r10.x, r10.x, r6.x\n";
  std::vector<uint64_t> orig = stored(R"(
    and.b r2.y, r0.x, 31
    (rpt2)nop
    shl.b r3.x, r2.y, 2
    (rpt2)nop
    add.u r5.x, c3.x, r3.x
    mov.u32u32 r5.y, c3.y
    (rpt2)nop
    add.u r8.x, r5.x, 4
    add.u r9.x, r5.x, 8
    add.u r11.x, r5.x, 12
    add.u r12.x, r5.x, 16
    mov.u32u32 r8.y, c3.y
    mov.u32u32 r9.y, c3.y
    mov.u32u32 r11.y, c3.y
    mov.u32u32 r12.y, c3.y
    (rpt5)nop
    ldg.f32 r6.x, g[r5.x], 1
    ldg.f32 r7.x, g[r8.x], 1
    ldg.f32 r7.y, g[r9.x], 1
    ldg.f32 r7.z, g[r11.x], 1
    ldg.f32 r7.w, g[r12.x], 1
    (sy)mul.f r10.x, r6.x, r6.x
  )" + chain + R"(
    (nop2) add.f r10.y, r7.x, r7.y
    add.f r10.z, r7.z, r7.w
    mov.f32f32 r10.w, r10.x
  )", "r10.x", 4);
  std::vector<uint64_t> opt = run_passes(orig, {"hoist", "legalize"});
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run_with_input(orig), run_with_input(opt)) << disassemble(opt);
  EXPECT_LT(passes::stats(opt).cycles(), passes::stats(run_passes(orig, {"legalize"})).cycles()) << disassemble(opt);
  // the chain's first step comes before the loads B-E
  std::vector<std::string> lines;
  for (uint64_t w : opt) lines.push_back(disasm(w));
  size_t first_mul = 0, load_b = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!first_mul && lines[i].find("mul.f r10.x, r6.x, r6.x") != std::string::npos) first_mul = i;
    if (!load_b && lines[i].find("ldg.f32 r7.x") != std::string::npos) load_b = i;
  }
  ASSERT_GT(first_mul, 0u) << disassemble(opt);
  EXPECT_LT(first_mul, load_b) << disassemble(opt);
}

// ---- fold

namespace {

// The passes on `words` with the launch grid of run(): 64 fibers, the local id in r0.x.
std::vector<uint64_t> run_with_grid(const std::vector<uint64_t>& words, const std::vector<std::string>& names) {
  passes::Code c(words);
  c.grid.local_reg = 0;
  c.grid.local_size[0] = 64;
  for (const std::string& n : names) passes::run_pass(n, c);
  return c.emit();
}

}  // namespace

// Index arithmetic that the grid decides: a sign that is zero in every fiber, a multiply-high
// part of a 16-bit value, a select whose condition never holds, identities with those zeros and
// copies of values another register already holds. Results must not change.
TEST(Ir3Passes, FoldRewritesArithmeticTheGridDecides) {
  std::vector<uint64_t> orig = stored(R"(
    add.u r1.x, r0.x, 1
    (rpt2)nop
    absneg.s r1.y, (abs)r1.x
    cmps.s.lt r1.z, r1.x, 0
    (rpt2)nop
    shr.b r1.w, r1.y, 16
    mov.u32u32 r5.x, 0x5556
    (rpt2)nop
    mull.u r5.y, r1.y, r5.x
    (rpt2)nop
    madsh.m16 r5.z, r1.w, r1.y, r5.y
    (rpt2)nop
    shr.b r5.w, r5.z, 16
    ashr.b r6.z, r1.x, 31
    sub.u r7.x, r0.x, 32
    (rpt2)nop
    ashr.b r7.y, r7.x, 31
    sel.b32 r6.x, r1.x, r1.z, r5.w
    (rpt2)nop
    add.u r6.y, r5.w, r7.y
    add.u r6.w, r1.x, r6.z
  )", "r6.x", 4);
  // without a grid the pass knows nothing
  EXPECT_EQ(run_passes(orig, {"fold"}), passes::Code(orig).emit());
  std::vector<uint64_t> opt = run_with_grid(orig, {"fold", "cp", "dce", "legalize"});
  EXPECT_EQ(count(opt, "absneg.s"), 0) << disassemble(opt);
  EXPECT_EQ(count(opt, "cmps.s.lt"), 0) << disassemble(opt);
  EXPECT_EQ(count(opt, "madsh.m16"), 0) << disassemble(opt);
  EXPECT_EQ(count(opt, "sel.b32"), 0) << disassemble(opt);
  EXPECT_EQ(count(opt, "mov.u32u32 r6.z, 0"), 1) << disassemble(opt);  // stored: the sign becomes its value
  EXPECT_EQ(count(opt, "mov.u32u32 r6.w, r1.x"), 1) << disassemble(opt);
  // r0.x - 32 is negative in half the fibers: its sign stays computed, and so does the add
  EXPECT_EQ(count(opt, "ashr.b r7.y, r7.x, 31"), 1) << disassemble(opt);
  EXPECT_EQ(count(opt, "add.u r6.y"), 1) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run(orig), run(opt));
}

// Inside a counted loop the values are known per (fiber, iteration): the counter runs 0..4, so
// counter + lid is never negative and its sign is zero in every iteration; a loop whose exit
// does not depend on known values (here: on the accumulator) is left as it is.
TEST(Ir3Passes, FoldFollowsCountedLoops) {
  auto loop = [](const char* bound) {
    return stored(std::string(R"(
    mov.u32u32 r2.x, 0
    mov.u32u32 r2.y, 0
  body:
    (rpt2)nop
    add.u r2.z, r2.x, r0.x
    (rpt2)nop
    ashr.b r2.w, r2.z, 31
    (rpt2)nop
    add.u r3.y, r2.z, r2.w
    (rpt2)nop
    add.u r2.y, r2.y, r3.y
    add.u r2.x, r2.x, 1
    (rpt2)nop
    cmps.u.lt p0.x, )") + bound + R"(, 5
    (rpt5)nop
    br p0.x, #body
    mov.u32u32 r6.x, r2.y
  )", "r6.x", 1);
  };
  std::vector<uint64_t> orig = loop("r2.x");
  std::vector<uint64_t> opt = run_with_grid(orig, {"fold", "cp", "dce", "legalize"});
  EXPECT_EQ(count(opt, "ashr.b"), 0) << disassemble(opt);
  EXPECT_EQ(count(opt, "r3.y"), 0) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run(orig), run(opt));
  // the accumulator decides the exit: the trip count is unknown, the sign stays
  std::vector<uint64_t> unknown = loop("r2.y");
  std::vector<uint64_t> kept = run_with_grid(unknown, {"fold", "cp", "dce", "legalize"});
  EXPECT_EQ(count(kept, "ashr.b"), 1) << disassemble(kept);
  EXPECT_EQ(run(unknown), run(kept));
}

// 64-bit addresses built Mesa's way (low word + carry into the high word) from one pointer in
// the const file: a store whose address differs from an earlier pair's by the same small amount
// in every fiber uses that pair with an immediate offset, and its own address arithmetic goes.
TEST(Ir3Passes, FoldSharesAddressPairs) {
  std::vector<uint64_t> orig = assemble(R"(
    shl.b r1.x, r0.x, 4
    (rpt2)nop
    add.u r1.y, r1.x, 8
    (rpt2)nop
    add.u r2.x, c0.x, r1.x
    add.u r3.x, c0.x, r1.y
    mov.u32u32 r2.z, c0.y
    (rpt2)nop
    cmps.u.lt hr8.x, r2.x, c0.x
    cmps.u.lt hr8.y, r3.x, c0.x
    (rpt2)nop
    cov.u16s32 r2.w, hr8.x
    cov.u16s32 r3.w, hr8.y
    (rpt2)nop
    add.u r2.y, r2.w, r2.z
    add.u r3.y, r3.w, r2.z
    mov.u32u32 r5.x, r0.x
    mov.u32u32 r5.y, 7
    (rpt5)nop
    stg.u32 g[r2.x], r5.x, 1
    stg.u32 g[r3.x], r5.y, 1
    end
  )");
  std::vector<uint64_t> opt = run_with_grid(orig, {"fold", "cp", "dce", "legalize"});
  EXPECT_EQ(count(opt, "stg.u32 g[r2.x+8], r5.y, 1"), 1) << disassemble(opt);
  EXPECT_EQ(count(opt, "cmps.u.lt"), 1) << disassemble(opt);
  EXPECT_EQ(count(opt, "r3."), 0) << disassemble(opt);
  EXPECT_TRUE(check_hazards(opt).empty()) << disassemble(opt);
  EXPECT_EQ(run(orig), run(opt));
}
