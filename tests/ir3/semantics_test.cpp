// Instruction semantics (ir3/semantics.h), the one description the simulator's operand
// decoding, the hazard checker and the binary passes share: operands of every kind, registers
// read and written with (rptN) and vector groups, sync classes and memory effects; and on the
// committed real a630 kernels, every register the simulator reads or writes is one the
// description lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "ir3/capture.h"
#include "ir3/isa.h"
#include "ir3/semantics.h"

using namespace opv::ir3;

namespace {

Semantics sem(const std::string& text) { return semantics(parse(text)); }

// Registers of a use list, expanded per element.
std::set<int> regs(const std::vector<RegUse>& v) {
  std::set<int> out;
  for (const RegUse& u : v)
    for (int e = 0; e < u.elements; ++e)
      for (int i = 0; i < u.count; ++i) out.insert(u.regid + i + (u.advancing ? e : 0));
  return out;
}

int r(int n, int c) { return n * 4 + c; }

}  // namespace

TEST(Ir3Semantics, OperandKinds) {
  Instr mad = parse("mad.f32 r1.x, (neg)c2.y, r3.z, r4.w");
  Operand a = operand(mad, "SRC1", false), b = operand(mad, "SRC2", false), c = operand(mad, "SRC3", false);
  EXPECT_EQ(a.kind, Operand::Const);
  EXPECT_EQ(a.num, r(2, 1));
  EXPECT_EQ(b.kind, Operand::Reg);
  EXPECT_EQ(b.num, r(3, 2));
  EXPECT_EQ(c.kind, Operand::Reg);
  EXPECT_EQ(c.num, r(4, 3));
  Instr add = parse("add.f r1.x, r2.x, (0.5)");
  Operand imm = operand(add, "SRC2", false);
  EXPECT_EQ(imm.kind, Operand::Imm);
  EXPECT_EQ(imm.imm, 0x3f000000u);
  EXPECT_EQ(operand(parse("add.f hr1.x, hr2.x, (0.5)"), "SRC2", true).imm, 0x3800u);  // half 0.5
  Operand rel = operand(parse("mov.f32f32 r1.x, r<a0.x + 4>"), "SRC", false);
  EXPECT_EQ(rel.kind, Operand::RelReg);
  EXPECT_EQ(rel.num, 4);
  EXPECT_TRUE(rel.uses_a0);
  EXPECT_THROW(operand(add, "SRC3", false), opv::Error);
}

TEST(Ir3Semantics, RegistersSyncAndMemory) {
  // (rpt3) with (r) sources: every element's registers; the unmarked source is read once per
  // element at the same register; the destination advances
  Semantics m = sem("(rpt3)mad.f32 r8.x, r1.x, (r)r2.x, (r)r8.x");
  EXPECT_EQ(m.len, 4);
  EXPECT_EQ(regs(m.reads), (std::set<int>{r(1, 0), r(2, 0), r(2, 1), r(2, 2), r(2, 3), r(8, 0), r(8, 1), r(8, 2), r(8, 3)}));
  EXPECT_EQ(regs(m.writes), (std::set<int>{r(8, 0), r(8, 1), r(8, 2), r(8, 3)}));
  EXPECT_FALSE(m.sy_prod || m.ss_prod || m.mem_read || m.store);
  // texture: (sy) producer reading its coordinate pair late; writes the wrmask's components
  Semantics t = sem("isam (f32)(xyz)r4.y, r1.x, s#0, t#0");
  EXPECT_TRUE(t.sy_prod && t.late_reader && t.mem_read);
  EXPECT_EQ(regs(t.reads), (std::set<int>{r(1, 0), r(1, 1)}));
  EXPECT_EQ(regs(t.writes), (std::set<int>{r(4, 1), r(4, 2), r(4, 3)}));
  // global load / store, local load, SFU
  Semantics ld = sem("ldg.f32 r3.x, g[r5.x], 2");
  EXPECT_TRUE(ld.sy_prod && ld.mem_read && !ld.store);
  EXPECT_EQ(regs(ld.reads), (std::set<int>{r(5, 0), r(5, 1)}));
  EXPECT_EQ(regs(ld.writes), (std::set<int>{r(3, 0), r(3, 1)}));
  Semantics st = sem("stg.u32 g[r4.x], r2.x, 3");
  EXPECT_TRUE(st.store && !st.mem_read && !st.sy_prod);
  EXPECT_EQ(regs(st.reads), (std::set<int>{r(4, 0), r(4, 1), r(2, 0), r(2, 1), r(2, 2)}));
  EXPECT_TRUE(sem("ldl.u32 r1.x, l[r2.x], 1").ss_prod);
  EXPECT_TRUE(sem("rcp r1.x, r2.x").ss_prod);
  // a write of a shared register needs (ss); branches read the predicate
  EXPECT_TRUE(sem("mov.u32u32 r48.x, r1.x").ss_prod);
  Semantics br = sem("br !p0.y, #3");
  EXPECT_TRUE(br.is_branch);
  EXPECT_EQ(br.target, 3);
  EXPECT_EQ(regs(br.reads), (std::set<int>{kRegP0 + 1}));
  // a cat2 write of regid 244..247 is the scalar predicate write p0.c
  Semantics cmp = sem("cmps.s.lt p0.z, r1.x, r2.x");
  EXPECT_EQ(regs(cmp.writes), (std::set<int>{kRegP0 + 2}));
}

// Every register the simulator touches is one the description lists: run each committed real
// kernel's instructions through both views (the simulator's operands come from
// decode_operand, so a register operand it executes must be a listed read or write).
TEST(Ir3Semantics, RealKernelsOperandsAreListed) {
  std::string dir = std::string(OPV_SOURCE_DIR) + "/tests/data/ir3/small_fp16";
  Capture cap = Capture::load(dir);
  int checked = 0;
  for (const CaptureKernel& k : cap.kernels)
    for (uint64_t w : k.code) {
      Instr in = decode(w);
      if (!in.valid()) continue;
      int cat = static_cast<int>(w >> 61);
      if (cat < 1 || cat > 3) continue;
      Semantics s = semantics(in);
      std::set<int> rd = regs(s.reads), wr = regs(s.writes);
      bool half = cat != 1 && in.get_or("FULL", 1) == 0;
      for (const char* f : {"SRC", "SRC1", "SRC2", "SRC3"}) {
        if (!in.has(f) || !in.child(f)) continue;
        Operand o = operand(in, f, half);
        if (o.kind == Operand::Reg) {
          EXPECT_TRUE(rd.count(o.num)) << disasm(w) << " " << f;
        }
      }
      if (cat != 1 && in.child("DST")) {
        Operand d = operand(in, "DST", half);
        if (d.kind == Operand::Reg && !(d.num >= kRegA0 && d.num < kRegA0 + 4)) {
          EXPECT_TRUE(wr.count(d.num)) << disasm(w);
        }
      }
      ++checked;
    }
  EXPECT_GT(checked, 1000);
}
