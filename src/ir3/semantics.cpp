// Instruction semantics: operands from the ISA table's sub-encodings, and the registers, sync
// class and memory effects of every instruction (the facts of ../shared/ir3/NOTES.md §6).
#include "ir3/semantics.h"

#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "ir3/isa_model.h"

namespace opv::ir3 {

using detail::Node;

namespace {

const float kFlut[] = {0.0f, 0.5f, 1.0f, 2.0f, 2.71828182845904523536f, 3.14159265358979323846f,
                       0.31830988618379067154f, 0.69314718055994530942f, 1.44269504088896340736f,
                       0.30102999566398119521f, 3.32192809488736234787f, 4.0f};

uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

int regid(const Node* g) { return static_cast<int>(g->value("GPR") * 4 + g->value("SWIZ")); }

bool half_type(int t) { return t == 0 || t == 2 || t == 4 || t == 6; }

}  // namespace

Operand decode_operand(const Node* c, bool half) {
  Operand o;
  if (!c) return o;
  const std::string& k = c->leaf->name;
  o.kind_name = k;
  if (c->has("ABSNEG")) o.absneg = static_cast<int>(c->value("ABSNEG"));
  auto sext = [](int64_t v, int w) { return static_cast<int>(detail::sign_extend(static_cast<uint64_t>(v), w)); };
  bool cond = c->leaf->cases[c->variant].cond != nullptr;
  if (k == "#reg-gpr" || k == "#dst-cat2") {
    o.kind = Operand::Reg;
    o.num = regid(c);
  } else if (k == "#ms-gpr" || k == "#c3-gpr" || k == "#cat1-gpr-src") {
    o.kind = Operand::Reg;
    o.num = regid(c->child("SRC"));
  } else if (k == "#ms-const") {
    const Node* s = c->child("SRC");
    o.kind = Operand::Const;
    o.num = static_cast<int>(s->value("CONST") * 4 + s->value("SWIZ"));
  } else if (k == "#cat1-const-src") {
    const Node* s = c->child("CONST");
    o.kind = Operand::Const;
    o.num = static_cast<int>(s->value("CONST") * 4 + s->value("SWIZ"));
  } else if (k == "#c3-const-or-immed") {
    if (cond) {
      o.kind = Operand::Imm;
      o.imm = static_cast<uint32_t>(c->value("IMMED"));
    } else {
      o.kind = Operand::Const;
      o.num = static_cast<int>(c->value("CONST") * 4 + c->value("SWIZ"));
    }
  } else if (k == "#ms-rel-gpr" || k == "#cat1-rel-gpr-src") {
    o.kind = Operand::RelReg;
    o.num = sext(c->child("SRC")->value("OFFSET"), 10);
  } else if (k == "#ms-rel-const" || k == "#cat1-rel-const-src") {
    o.kind = Operand::RelConst;
    o.num = sext(c->child("SRC")->value("OFFSET"), 10);
  } else if (k == "#c3-rel-gpr") {
    o.kind = Operand::RelReg;
    o.num = sext(c->value("OFFSET"), 10);
  } else if (k == "#c3-rel-const") {
    o.kind = Operand::RelConst;
    o.num = sext(c->value("OFFSET"), 10);
  } else if (k == "#ms-immed") {
    o.kind = Operand::Imm;
    int v = sext(c->value("IMMED"), 11);
    o.imm = half ? (static_cast<uint32_t>(v) & 0xffff) : static_cast<uint32_t>(v);
  } else if (k == "#ms-flut-full" || k == "#ms-flut-half" || k == "#c3-flut") {
    o.kind = Operand::Imm;
    int idx = static_cast<int>(c->value("IMMED"));
    float f = idx < 12 ? kFlut[idx] : 0.0f;
    o.imm = half ? float_to_half(f) : float_bits(f);
  } else if (k == "#cat1-immed-src") {
    o.kind = Operand::Imm;
    o.imm = static_cast<uint32_t>(c->bits);
  } else if (k == "#c6-src" || k == "#c6-src-cg") {
    if (cond && c->has("IMMED")) {
      o.kind = Operand::Imm;
      o.imm = static_cast<uint32_t>(c->value("IMMED"));
    } else if (cond) {
      o.kind = Operand::Const;  // #c6-src-cg's const form: c{GPR}.{SWIZ}
      o.num = regid(c);
    } else {
      o.kind = Operand::Reg;
      o.num = regid(c);
    }
  } else if (k == "#c5-src1" || k == "#c5-src2") {
    if (cond && c->has("SRC") && c->child("SRC")) {
      o.kind = Operand::Reg;
      o.num = regid(c->child("SRC"));
    }
  }
  o.uses_a0 = o.kind == Operand::RelReg || o.kind == Operand::RelConst || k.find("rel") != std::string::npos;
  return o;
}

Operand operand(const Instr& in, const char* field, bool half) {
  const Node* c = in.child(field);
  if (!c) fail("operand `", field, "` missing");
  return decode_operand(c, half);
}

namespace {

struct Builder {
  Semantics& s;
  // A source operand (sub-encoding node): `count` consecutive registers per element; over
  // `repeat`+1 elements, advancing when `r`. Relative operands read a0.x.
  void read(const Node* c, bool half, int count, bool r, int repeat, int src) {
    if (!c) return;
    Operand o = decode_operand(c, half);
    if (o.kind == Operand::Reg) s.reads.push_back({o.num, count, half, repeat + 1, r, src});
    if (o.uses_a0) s.reads.push_back({kRegA0, 1, false, 1, false, src});
  }
  void write(const Node* c, bool half, int count) {
    if (!c) return;
    Operand o = decode_operand(c, half);
    if (o.kind == Operand::Reg) s.writes.push_back({o.num, count, half, 1, false, -1});
  }
};

}  // namespace

Semantics semantics(const Instr& in) {
  Semantics d;
  Builder b{d};
  d.cat = static_cast<int>(in.bits >> 61);
  const std::string& n = in.name();
  int rep = static_cast<int>(in.get_or("REPEAT", 0));
  if (d.cat <= 4 && n != "movmsk") d.len = rep + 1;
  if ((d.cat == 2 || d.cat == 3) && rep == 0) d.nops = static_cast<int>(in.get_or("SRC1_R", 0) | (in.get_or("SRC2_R", 0) << 1));
  switch (d.cat) {
    case 0: {
      d.target = detail::sign_extend(in.bits & 0xffffffffu, 32);
      if (n == "end") d.is_end = true;
      else if (n == "jump") d.is_jump = true;
      else if (n == "br" || n == "brao" || n == "braa" || n == "bany" || n == "ball" || n == "getone" ||
               n == "getlast" || n == "brac" || n == "brax" || n == "shps" || n == "call" || n == "bkt")
        d.is_branch = true;
      if (in.has("COMP1")) d.reads.push_back({kRegP0 + static_cast<int>(in.get("COMP1")), 1, false, 1, false, 0});
      if (in.has("COMP2")) d.reads.push_back({kRegP0 + static_cast<int>(in.get("COMP2")), 1, false, 1, false, 1});
      if (n == "predt" || n == "predf") d.reads.push_back({kRegP0, 1, false, 1, false, 0});
      break;
    }
    case 1: {
      if (n == "movmsk") {
        const Node* dn = in.child("DST");
        if (dn && dn->child("DST")) b.write(dn->child("DST"), false, rep + 1);
        break;
      }
      if (n.rfind("mov-", 0) == 0) {
        int st = static_cast<int>(in.get("SRC_TYPE")), dt = static_cast<int>(in.get("DST_TYPE"));
        b.read(in.child("SRC"), half_type(st), 1, in.get_or("SRC_R", 0) != 0, rep, 0);
        const Node* dn = in.child("DST");
        if (in.get("DST_REL")) {
          d.reads.push_back({kRegA0, 1, false, 1, false, 0});
        } else if (dn && dn->child("DST")) {
          d.writes.push_back({regid(dn->child("DST")), 1, half_type(dt), rep + 1, true, -1});
        }
      } else {
        // swz/gat/sct: every listed register
        for (const char* f : {"SRC0", "SRC1", "SRC2", "SRC3"})
          if (const Node* c = in.child(f)) b.read(c->child("REG"), in.get("HALF") != 0, 1, false, 0, 0);
        for (const char* f : {"DST0", "DST1", "DST2", "DST3"})
          if (const Node* c = in.child(f)) b.write(c->child("REG"), in.get("DST_HALF") != 0, 1);
      }
      break;
    }
    case 2:
    case 3:
    case 4: {
      bool half = in.get_or("FULL", 1) == 0;
      const char* srcs[3] = {"SRC1", "SRC2", "SRC3"};
      const char* rflags[3] = {"SRC1_R", "SRC2_R", "SRC3_R"};
      if (d.cat == 4) srcs[0] = "SRC", rflags[0] = "SRC_R";
      for (int s = 0; s < 3; ++s) {
        if (!in.has(srcs[s])) continue;
        bool r = rep > 0 && in.get_or(rflags[s], 0) != 0;
        b.read(in.child(srcs[s]), half, 1, r, rep, s);
      }
      bool dh = in.get_or("DST_HALF", 0) != 0;
      if (const Node* dn = in.child("DST")) {
        int r = regid(dn);
        // a cat2 write to regid 244..247 is up0.c, the scalar ALU's predicate write (p0.c)
        if (r >= kRegA0 && r < kRegA0 + 4 && d.cat == 2) r = kRegP0 + (r & 3);
        d.writes.push_back({r, 1, dh && r < kRegA0, rep + 1, true, -1});
      }
      if (d.cat == 4) d.ss_prod = true;
      break;
    }
    case 5: {
      if (n == "tcinv") break;
      d.sy_prod = true;
      d.late_reader = true;
      d.mem_read = true;
      bool half_src = in.get_or("FULL", 1) == 0;
      // s2en (non-bindless): texture and sampler indices in a pair of registers
      if (in.get_or("S2EN_BINDLESS", 0) && in.child("SRC3") && in.child("SRC3")->child("SRC")) {
        int64_t mode = in.get_or("DESC_MODE", 0);
        b.read(in.child("SRC3")->child("SRC"), mode != 1 && mode != 2 && mode != 3 && mode != 5, 2, false, 0, 2);
      }
      int coords = 2 + (in.get_or("D3", 0) ? 1 : 0) + (in.get_or("A", 0) ? 1 : 0);
      b.read(in.child("SRC1"), half_src, coords, false, 0, 0);
      b.read(in.child("SRC2"), half_src, 1, false, 0, 1);
      const Node* t = in.child("TYPE");
      int type = t ? static_cast<int>(t->value("TYPE")) : 1;
      int comps = __builtin_popcountll(static_cast<uint64_t>(in.get_or("WRMASK", 0)));
      if (const Node* dn = in.child("DST"))
        if (comps > 0) d.writes.push_back({regid(dn), comps, half_type(type), 1, false, -1});
      break;
    }
    case 6: {
      int type = static_cast<int>(in.get_or("TYPE", 3));
      bool half = half_type(type);
      int size = static_cast<int>(in.get_or("SIZE", in.get_or("TYPE_SIZE", 1)));
      d.late_reader = true;
      if (n == "ldg" || n == "ldg.a" || n == "ldp" || n == "ldg.k") {
        d.sy_prod = true;
        b.read(in.child("SRC1") ? in.child("SRC1") : in.child("SRC"), false, n == "ldp" ? 1 : 2, false, 0, 0);
        if (n == "ldg.a") b.read(in.child("SRC2"), false, 1, false, 0, 1);
        if (n != "ldg.k") b.write(in.child("DST"), half, size);
      } else if (n == "stg" || n == "stg.a") {
        d.store = true;
        b.read(in.child("SRC1"), false, 2, false, 0, 0);
        if (n == "stg.a") b.read(in.child("SRC2"), false, 1, false, 0, 1);
        b.read(in.child("SRC3"), half, size, false, 0, 2);
      } else if (n == "ldl" || n == "ldlw") {
        d.ss_prod = true;
        b.read(in.child("SRC"), false, 1, false, 0, 0);
        b.write(in.child("DST"), half, size);
      } else if (n == "ldlv") {
        d.ss_prod = true;
        b.write(in.child("DST"), half, size);
      } else if (n == "stl" || n == "stlw" || n == "stp") {
        d.store = true;
        b.read(in.child("DST"), false, 1, false, 0, 0);
        b.read(in.child("SRC"), half, size, false, 0, 1);
      } else if (n == "stc") {
        d.store = true;
        b.read(in.child("SRC"), half, size, false, 0, 0);
      } else if (n == "ldib.b" || n == "stib.b") {
        int coords = static_cast<int>(in.get_or("D", 1));
        b.read(in.child("SRC2"), false, coords, false, 0, 1);
        b.read(in.child("SSBO"), false, 1, false, 0, 2);
        if (n == "ldib.b") {
          d.sy_prod = true;
          b.write(in.child("SRC1"), half, size);
        } else {
          d.store = true;
          b.read(in.child("SRC1"), half, size, false, 0, 0);
        }
      } else if (n == "ldc" || n == "ldc.k") {
        d.sy_prod = true;
        b.read(in.child("SRC1"), false, 1, false, 0, 0);
        b.read(in.child("SRC2"), false, 1, false, 0, 1);
        if (n == "ldc") b.write(in.child("DST"), false, size);
      } else if (n == "shfl" || n == "getfiberid" || n == "resinfo.b" || n == "resinfo" || n == "getwid" || n == "getspid") {
        d.ss_prod = true;
        if (in.has("SRC1")) b.read(in.child("SRC1"), half, 1, false, 0, 0);
        if (in.has("SRC2")) b.read(in.child("SRC2"), false, 1, false, 0, 1);
        b.write(in.child("DST"), half, n.rfind("resinfo", 0) == 0 ? 3 : 1);
      } else if (n.rfind("atomic.", 0) == 0) {
        bool global = n.rfind("atomic.g.", 0) == 0 || n.rfind("atomic.b.", 0) == 0;
        (global ? d.sy_prod : d.ss_prod) = true;
        b.read(in.child("SRC1"), false, global && n[7] == 'g' ? 2 : 1, false, 0, 0);
        b.read(in.child("SRC2"), false, 1, false, 0, 1);
        b.write(in.child("DST"), false, 1);
      }
      break;
    }
    default: break;
  }
  // writes of the shared registers r48-r55 (or the half registers that alias them) are
  // synchronised with (ss)
  for (const RegUse& w : d.writes)
    for (int e = 0; e < w.elements; ++e)
      for (int i = 0; i < w.count; ++i) {
        int x = w.regid + i + (w.advancing ? e : 0);
        int full = !w.half || x >= kRegA0 ? x : x < 48 * 4 ? x >> 1 : 48 * 4 + ((x - 48 * 4) >> 1);
        if (full >= 48 * 4 && full < 56 * 4) d.ss_prod = true;
      }
  if (d.cat == 6)
    d.mem_read = !d.store && (d.sy_prod || d.ss_prod) && n != "getfiberid" && n != "getwid" && n != "getspid";
  return d;
}

}  // namespace opv::ir3
