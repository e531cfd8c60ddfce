// cp: copy and constant propagation into ALU sources, so that the moves which only existed to
// give each use a register of its own become dead (the dce pass then removes them).
//
// Mesa's ir3 gives every accumulator its own `mov.u32u32 rN.c, 0` before a chain of
// `mad.f32 rN.c, a, b, rN.c`, and copies values with `mov.u32u32 rA, rB` before reading them
// once; on the fixture about one instruction in eight is such a move. The rewrite is exact:
// an ALU source that names a register holding a known value reads, instead, another register
// that holds the same bits at that point on every path.
//
// Steps: (1) known_values (code.h) gives, per instruction and per full register r0.x-r47.w, the
// immediate or the copy of another register it is known to hold on every path; (2) every source operand
// of an unrepeated cat1/cat2/cat3 instruction that is a plain full register (prefixes such as
// (neg)/(abs) kept, never an (r) source) is replaced: a copy by its source; an immediate by the
// register holding the same immediate whose move came first, when that move is earlier than
// the operand's own (so each kept move serves the later ones and two moves never swap their
// readers). The rewritten instruction is re-assembled from Mesa syntax.
// (3) a register group that a texture or memory instruction reads (a coordinate pair, the
// texture/sampler index pair of `isam.s2en`, an address) and whose every component holds a
// known immediate or a copy is read, instead, from another group of the same file holding the
// same values in the same order: the copied registers themselves, or earlier moves (Mesa sets up a fresh index pair with two
// `mov.u16u16` for every one of the largest fixture kernel's 320 `isam.s2en`, while an earlier
// pair with the same indices is often still intact). The instruction's decoded reads and writes
// must come out the same but for that group. Other vector operands are never touched: their
// registers must stay consecutive. Delays and sync flags are left to the legalize pass.
// Progress: true when some operand was replaced.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "ir3/passes/passes.h"
#include "ir3/semantics.h"

namespace opv::ir3::passes {

namespace {

bool same_uses(const std::vector<RegUse>& a, const std::vector<RegUse>& b, size_t skip) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (k == skip) continue;
    const RegUse &x = a[k], &y = b[k];
    if (x.regid != y.regid || x.count != y.count || x.half != y.half || x.elements != y.elements || x.advancing != y.advancing || x.src != y.src)
      return false;
  }
  return true;
}

// (3): a texture/memory instruction's register group of known immediates read from an older
// group holding the same; true if x was rewritten.
bool share_group(Code& c, size_t i, const KnownRegs& s) {
  const Ins& x = c.ins[i];
  if (x.fx.cat != 5 && x.fx.cat != 6) return false;
  Semantics sem = semantics(x.in);
  for (size_t g = 0; g < sem.reads.size(); ++g) {
    const RegUse& u = sem.reads[g];
    if (u.elements != 1 || u.advancing || u.regid + u.count > kFullRegs) continue;
    int base = (u.half ? kFullRegs : 0) + u.regid, lo = u.half ? kFullRegs : 0;
    int tag = -1;
    bool known = true;
    for (int t = 0; t < u.count && known; ++t) {
      const Known& f = s[static_cast<size_t>(base + t)];
      known = f.kind == Known::Imm || f.kind == Known::Copy;
      tag = std::max(tag, f.tag);
    }
    if (!known) continue;
    int best = -1, best_tag = tag;
    for (int q = lo; q + u.count <= lo + kFullRegs; ++q) {
      if (q == base) continue;
      int qt = -1;
      bool same = true;
      for (int t = 0; t < u.count && same; ++t) {
        const Known &f = s[static_cast<size_t>(q + t)], &want = s[static_cast<size_t>(base + t)];
        if (want.kind == Known::Copy && q + t == want.value) continue;  // the copied register itself
        same = f.same(want);
        qt = std::max(qt, f.tag);
      }
      if (same && qt < best_tag) best = q, best_tag = qt;
    }
    if (best < 0) continue;
    Parts p = split(print(x.in));
    const std::string from = reg_name(base - lo, u.half);
    for (size_t k = 0; k < p.operands.size(); ++k) {
      std::string op = p.operands[k];
      std::string bare = op.substr(op.rfind(')') == std::string::npos ? 0 : op.rfind(')') + 1);
      if (bare != from) continue;
      Parts q = p;
      q.operands[k] = op.substr(0, op.size() - bare.size()) + reg_name(best - lo, u.half);
      std::string text = q.flags + q.mnemonic;
      for (size_t j = 0; j < q.operands.size(); ++j) text += (j ? ", " : " ") + q.operands[j];
      Instr re = parse(text, c.gen);
      if (!re.valid() || re.name() != x.in.name()) continue;
      Semantics ns = semantics(re);
      if (!same_uses(sem.writes, ns.writes, SIZE_MAX) || !same_uses(sem.reads, ns.reads, g) || ns.reads[g].regid != best - lo ||
          ns.reads[g].count != u.count || ns.reads[g].half != u.half)
        continue;
      c.set(i, re);
      return true;
    }
  }
  return false;
}

}  // namespace

bool cp(Code& c) {
  std::vector<KnownRegs> known = known_values(c);
  bool progress = false;
  for (size_t i = 0; i < c.ins.size(); ++i) {
    const Ins& x = c.ins[i];
    while (share_group(c, i, known[i])) progress = true;  // (3)
    if (x.fx.cat < 1 || x.fx.cat > 3 || x.in.get_or("REPEAT", 1) != 0) continue;
    if (x.fx.cat == 1 && x.in.name().rfind("mov-", 0) != 0) continue;  // swz/gat/sct/movmsk: vectors
    Parts p = split(print(x.in));
    if (p.operands.size() < 2) continue;
    const KnownRegs& s = known[i];
    bool any = false;
    for (size_t k = 1; k < p.operands.size(); ++k) {
      std::string& op = p.operands[k];
      if (op.find("(r)") != std::string::npos || op.find('<') != std::string::npos) continue;
      int r = full_reg(op);
      if (r < 0 || r >= kFullRegs) continue;
      const Known& f = s[static_cast<size_t>(r)];
      int to = -1;
      if (f.kind == Known::Copy) {
        // follow copies of copies while they all still hold (a chain cannot lead back to r)
        to = f.value;
        for (int hop = 0; hop < 8 && s[static_cast<size_t>(to)].kind == Known::Copy && s[static_cast<size_t>(to)].value != r; ++hop)
          to = s[static_cast<size_t>(to)].value;
      } else if (f.kind == Known::Imm) {
        for (int z = 0; z < kFullRegs; ++z) {
          const Known& g = s[static_cast<size_t>(z)];
          if (z != r && g.same(f) && g.tag < f.tag && (to < 0 || g.tag < s[static_cast<size_t>(to)].tag)) to = z;
        }
      }
      if (to < 0) continue;
      op = op.substr(0, op.rfind('r')) + reg_name(to);
      any = true;
    }
    if (!any) continue;
    std::string text = p.flags + p.mnemonic;
    for (size_t k = 0; k < p.operands.size(); ++k) text += (k ? ", " : " ") + p.operands[k];
    Instr re = parse(text, c.gen);
    OPV_CHECK(re.valid() && re.name() == x.in.name(), "ir3 cp: re-assembly changed `", print(x.in), "` (", text, ")");
    c.set(i, re);
    progress = true;
  }
  return progress;
}

}  // namespace opv::ir3::passes
