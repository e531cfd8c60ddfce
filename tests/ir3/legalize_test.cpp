// Sync-hazard checker and legalize pass: the checker catches a removed (sy) on an isam result,
// missing (ss) after SFU/local loads and short ALU distances (with (rptN) element timing);
// legalize inserts what is missing, re-targets branches, and the simulator gives the same results.
#include <gtest/gtest.h>

#include "ir3/isa.h"
#include "ir3/legalize.h"
#include "ir3/sim.h"

using namespace opv::ir3;

namespace {
int count(const std::vector<Hazard>& hs, Hazard::Kind k) {
  int n = 0;
  for (const Hazard& h : hs) n += h.kind == k;
  return n;
}
}  // namespace

TEST(Ir3Legalize, RemovedSyBeforeIsamUseIsCaught) {
  const std::string good = R"(
    isam (f32)(xyzw)r2.x, r0.x, s#0, t#0
    (rpt5)nop
    (sy)add.f r3.x, r2.x, r2.y
    (rpt2)nop
    mov.u32u32 r4.x, c0.x
    mov.u32u32 r4.y, c0.y
    (rpt5)nop
    stg.f32 g[r4.x], r3.x, 1
    end
  )";
  auto prog = assemble(good);
  EXPECT_TRUE(check_hazards(prog).empty()) << to_string(check_hazards(prog).front());
  // drop the (sy) on the consumer
  prog[2] = with_field(decode(prog[2]), "SY", 0).bits;
  auto hs = check_hazards(prog);
  ASSERT_EQ(count(hs, Hazard::Kind::MissingSy), 1) << (hs.empty() ? "" : to_string(hs.front()));
  EXPECT_EQ(hs[0].index, 2u);
  EXPECT_EQ(hs[0].producer, 0u);
  EXPECT_EQ(hs[0].reg, "r2.x");
  EXPECT_TRUE(legalize(prog));
  EXPECT_TRUE(check_hazards(prog).empty());
  EXPECT_EQ(decode(prog[2]).get("SY"), 1);  // the flag went back on the consumer, nothing inserted
  EXPECT_EQ(prog.size(), 9u);
}

TEST(Ir3Legalize, DelaySlotsFollowMesaRules) {
  // ALU -> ALU needs 3 slots
  auto hs = check_hazards(assemble("add.f r0.x, r1.x, r1.y\nadd.f r0.y, r0.x, r0.x\nend\n"));
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].kind, Hazard::Kind::TooFewDelay);
  EXPECT_EQ(hs[0].need, 3);
  EXPECT_EQ(hs[0].have, 0);
  // (nop2) on the producer provides two of them
  hs = check_hazards(assemble("(nop2) add.f r0.x, r1.x, r1.y\nadd.f r0.y, r0.x, r0.x\nend\n"));
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].have, 2);
  EXPECT_TRUE(check_hazards(assemble("(nop3) add.f r0.x, r1.x, r1.y\nadd.f r0.y, r0.x, r0.x\nend\n")).empty());
  // mad's third source needs only 1; an SFU consumer needs 6
  hs = check_hazards(assemble("mad.f32 r0.x, r1.x, r1.y, r2.x\nmad.f32 r0.y, r1.x, r1.y, r0.x\nend\n"));
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].need, 1);
  hs = check_hazards(assemble("add.f r0.x, r1.x, r1.y\n(rpt2)nop\nrcp r0.y, r0.x\nend\n"));
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].need, 6);
  EXPECT_EQ(hs[0].have, 3);
  // SFU result needs (ss); local load result needs (ss); half/full views overlap
  hs = check_hazards(assemble("rcp r0.y, r0.x\nadd.f r1.x, r0.y, r0.y\nend\n"));
  EXPECT_EQ(count(hs, Hazard::Kind::MissingSs), 1);
  hs = check_hazards(assemble("ldl.u32 r1.x, l[r0.x], 1\n(rpt5)nop\nadd.u hr2.x, hr2.y, hr2.x\nend\n"));
  EXPECT_EQ(count(hs, Hazard::Kind::MissingSs), 1);  // hr2.x/hr2.y are the halves of r1.x
}

TEST(Ir3Legalize, OnlyAluAndCat0InstructionsFillDelaySlots) {
  // Mesa's count_instruction: texture, memory and SFU instructions issue without filling a
  // delay slot, and neither do branches; three texture reads between an ALU write and its ALU
  // reader leave all 3 slots to fill
  auto hs = check_hazards(assemble("add.f r0.x, r1.x, r1.y\n"
                                   "isam (f32)(xyzw)r4.x, r2.x, s#0, t#0\n"
                                   "ldg.f32 r5.x, g[r2.z], 1\n"
                                   "rcp r6.x, r1.z\n"
                                   "add.f r0.y, r0.x, r0.x\nend\n"));
  ASSERT_EQ(count(hs, Hazard::Kind::TooFewDelay), 1);
  EXPECT_EQ(hs[0].need, 3);
  EXPECT_EQ(hs[0].have, 0);
  // ALU instructions and nops do
  EXPECT_EQ(count(check_hazards(assemble("add.f r0.x, r1.x, r1.y\nmov.f32f32 r3.x, r1.x\nnop\n"
                                         "isam (f32)(xyzw)r4.x, r2.x, s#0, t#0\nadd.f r3.y, r1.x, r1.y\n"
                                         "add.f r0.y, r0.x, r0.x\nend\n")),
                  Hazard::Kind::TooFewDelay),
            0);
  // legalize fills them with nops in front of the reader
  auto p = assemble("add.f r0.x, r1.x, r1.y\nisam (f32)(xyzw)r4.x, r2.x, s#0, t#0\nadd.f r0.y, r0.x, r0.x\nend\n");
  EXPECT_TRUE(legalize(p));
  EXPECT_TRUE(check_hazards(p).empty());
  EXPECT_EQ(disassemble(p), "add.f r0.x, r1.x, r1.y\nisam (f32)(xyzw)r4.x, r2.x, s#0, t#0\n(rpt2)nop\nadd.f r0.y, r0.x, r0.x\nend\n");
}

TEST(Ir3Legalize, SizeMismatchPredicatesAndScalarSourcesFollowMesa) {
  // a half read of a full ALU write (merged registers) needs 6, not 3
  auto hs = check_hazards(assemble("add.u r1.x, r2.x, r2.y\n(rpt2)nop\nadd.u hr2.x, hr2.x, hr3.x\nend\n"));
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].need, 6);
  EXPECT_EQ(hs[0].have, 3);
  // ... and a full read of it 3
  EXPECT_TRUE(check_hazards(assemble("add.u r1.x, r2.x, r2.y\n(rpt2)nop\nadd.u r3.x, r1.x, r2.x\nend\n")).empty());
  // a predicate written by an ALU instruction needs 6 before any reader
  hs = check_hazards(assemble("cmps.s.lt p0.x, r0.x, 1\n(rpt2)nop\nbr !p0.x, #2\nnop\nend\n"));
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].need, 6);
  // only mad/madsh read their third source late: sel's third source needs the full 3
  hs = check_hazards(assemble("add.u r0.x, r1.x, r1.y\nsel.b32 r0.y, r1.x, r1.y, r0.x\nend\n"));
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].need, 3);
  // swz reads its second source a cycle late: 2 slots before it are enough for that source
  EXPECT_TRUE(check_hazards(assemble("add.u r1.y, r2.x, r2.y\n(rpt1)nop\nswz.u32u32 r3.x, r3.y, r2.z, r1.y\nend\n")).empty());
  EXPECT_EQ(check_hazards(assemble("add.u r1.y, r2.x, r2.y\nnop\nswz.u32u32 r3.x, r3.y, r2.z, r1.y\nend\n")).size(), 1u);
}

TEST(Ir3Legalize, ShortDelaysUseNopBitsOfThePreviousAluInstruction) {
  auto p = assemble("add.f r0.x, r1.x, r1.y\nadd.f r0.y, r0.x, r0.x\nrcp r1.x, r0.y\nend\n");
  EXPECT_TRUE(legalize(p));
  EXPECT_TRUE(check_hazards(p).empty());
  // 3 slots fit in (nop3) on the producer; rcp needs 6 after the second add: one (rpt5)nop
  EXPECT_EQ(disassemble(p), "(nop3) add.f r0.x, r1.x, r1.y\nadd.f r0.y, r0.x, r0.x\n(rpt5)nop\nrcp r1.x, r0.y\nend\n");
}

TEST(Ir3Legalize, RepeatElementsAreTimedSeparately) {
  // packed accumulate chain: element j of the second reads what element j of the first wrote
  // three cycles earlier -> legal back to back; the scalar chain is not.
  EXPECT_TRUE(check_hazards(assemble("(rpt3)mad.f32 r8.x, (r)c4.x, r4.x, (r)r8.x\n"
                                     "(rpt3)mad.f32 r8.x, (r)c5.x, r4.y, (r)r8.x\nend\n"))
                  .empty());
  auto hs = check_hazards(assemble("mad.f32 r8.x, c4.x, r4.x, r8.x\nmad.f32 r8.x, c5.x, r4.y, r8.x\nend\n"));
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].kind, Hazard::Kind::TooFewDelay);
}

TEST(Ir3Legalize, FixesAProgramWithBranchesAndKeepsItsResults) {
  const std::string src = R"(
    mov.u32u32 r1.x, 0
    mov.u32u32 r1.y, 0
  loop:
    add.u r1.y, r1.y, r1.x
    add.u r1.x, r1.x, 1
    cmps.u.lt p0.x, r1.x, r0.x
    br p0.x, #loop
    cov.u32f32 r2.x, r1.y
    rsq r2.y, r2.x
    shl.b r2.z, r0.x, 3
    add.u r3.x, c0.x, r2.z
    mov.u32u32 r3.y, c0.y
    stg.f32 g[r3.x], r2.x, 2
    end
  )";
  auto prog = assemble(src);
  auto before = check_hazards(prog);
  EXPECT_GE(before.size(), 4u);
  auto fixed = prog;
  EXPECT_TRUE(legalize(fixed));
  EXPECT_TRUE(check_hazards(fixed).empty()) << to_string(check_hazards(fixed).front());
  EXPECT_FALSE(legalize(fixed));  // idempotent
  EXPECT_GT(fixed.size(), prog.size());
  // the loop branch still targets the loop head
  std::vector<std::vector<float>> outs;
  for (const auto& p : {prog, fixed}) {
    Simulator sim(p);
    uint64_t out = sim.alloc(8 * 64);
    sim.consts.assign(8, 0);
    sim.set_const_u64(0, out);
    sim.run(SimConfig{});
    outs.push_back(sim.read_vec<float>(out, 128));
  }
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_EQ(outs[0][2 * 10], 45.0f);
}
