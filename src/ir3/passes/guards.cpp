// guards: merge guarded blocks that test the same predicate into one.
//
// Mesa guards each texture read of a padded convolution on its own:
//     br !p0.w, #else1; isam A; jump #join1; else1: mov A.., 0; join1:
//     ... other work ...
//     br !p0.w, #else2; isam B; jump #join2; else2: mov B.., 0; join2:
// and a fully unrolled kernel repeats that hundreds of times while p0.w does not change (the
// largest fixture kernel: 368 guards, 22 distinct predicate values). Where nothing between two
// such diamonds writes the predicate, and the second diamond (both its paths) neither reads what
// the instructions between write nor writes what they read or write (registers, and memory:
// stores against loads and stores), the second moves up and joins the first:
//     br !p0.w, #else; isam A; isam B; jump #join; else: mov A.., 0; mov B.., 0; join:
//     ... other work ...
// Every lane still runs the then- or else-part of both, in the same order relative to each
// other; the work in between runs after both instead of between them, which the dependence
// test makes equivalent. One branch and one jump go per merge, and the loads of a run of
// guards issue back to back. The instructions between may hold whole diamonds of other
// predicates (they move down as units); nothing else may enter the moved-over range from
// outside, and control flow other than those diamonds ends the search. Delay nops and sync
// flags are left to the legalize pass, which must follow.
// Progress: true when some pair merged.
#include <bitset>

#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

namespace {

// The branch condition: mnemonic and every operand but the offset.
std::string condition(const Ins& x) {
  Parts p = split(print(x.in));
  std::string s = p.mnemonic;
  for (size_t k = 0; k + 1 < p.operands.size(); ++k) s += " " + p.operands[k];
  return s;
}

struct Footprint {
  Live reads, writes;
  bool store = false, load = false;
  void add(const Effects& f) {
    for (int u : f.reads)
      if (u >= 0 && u < kUnitsMax) reads.set(static_cast<size_t>(u));
    for (int u : f.writes)
      if (u >= 0 && u < kUnitsMax) writes.set(static_cast<size_t>(u));
    store |= f.store, load |= f.mem_read;
  }
  void add(const Footprint& o) {
    reads |= o.reads, writes |= o.writes;
    store |= o.store, load |= o.load;
  }
  // Whether `o` (a block that ran after this one) may run before it instead.
  bool commutes(const Footprint& o) const {
    return (o.reads & writes).none() && (o.writes & (reads | writes)).none() && !(o.store && (store || load)) &&
           !(o.load && store);
  }
};

// Tries to merge the diamond at d1 with the next one of the same condition; true if it did.
bool merge_at(Code& c, const Flow& f, const Diamond& d1) {
  const std::string cond = condition(c.ins[d1.br]);
  Live pred;  // the predicate units the branch reads
  for (int u : c.ins[d1.br].fx.reads)
    if (u >= 0 && u < kUnitsMax) pred.set(static_cast<size_t>(u));
  Footprint between;
  for (size_t m = d1.br + 1; m < d1.j; ++m)
    for (int u : c.ins[m].fx.writes)
      if (u >= 0 && u < kUnitsMax && pred.test(static_cast<size_t>(u))) return false;  // d1 changes it
  // entries: what targets [d1.j, k] must come from d1 or from inside [d1.j, k)
  auto entered_inside = [&](size_t k) {
    for (size_t s : f.from[k]) {
      bool from_d1 = k == d1.j && s >= d1.br && s < d1.j;
      if (!from_d1 && (s < d1.j || s >= k)) return false;
    }
    return true;
  };
  size_t k = d1.j;
  while (k < c.ins.size()) {
    if (!entered_inside(k)) return false;
    Diamond d2;
    if (diamond_at(c, f, k, &d2)) {
      Footprint own;
      for (size_t m = d2.br; m < d2.j; ++m) own.add(c.ins[m].fx);
      if (condition(c.ins[d2.br]) == cond && between.commutes(own)) {
        // the new order: d1's branch, both then-parts, one jump, both else-parts, what was between
        std::vector<Ins> out(c.ins.begin(), c.ins.begin() + static_cast<ptrdiff_t>(d1.br));
        const size_t then1 = d1.has_else ? d1.t - 1 : d1.t, then2 = d2.has_else ? d2.t - 1 : d2.t;
        Ins br = c.ins[d1.br];
        out.push_back(br);
        const size_t br_at = out.size() - 1;
        out.insert(out.end(), c.ins.begin() + static_cast<ptrdiff_t>(d1.br + 1), c.ins.begin() + static_cast<ptrdiff_t>(then1));
        out.insert(out.end(), c.ins.begin() + static_cast<ptrdiff_t>(d2.br + 1), c.ins.begin() + static_cast<ptrdiff_t>(then2));
        const bool has_else = d1.has_else || d2.has_else;
        size_t jump_at = 0;
        if (has_else) {
          out.push_back(c.ins[d1.has_else ? d1.t - 1 : d2.t - 1]);
          jump_at = out.size() - 1;
        }
        const size_t else_at = out.size();
        out.insert(out.end(), c.ins.begin() + static_cast<ptrdiff_t>(d1.t), c.ins.begin() + static_cast<ptrdiff_t>(d1.j));
        out.insert(out.end(), c.ins.begin() + static_cast<ptrdiff_t>(d2.t), c.ins.begin() + static_cast<ptrdiff_t>(d2.j));
        const size_t join_at = out.size();
        out.insert(out.end(), c.ins.begin() + static_cast<ptrdiff_t>(d1.j), c.ins.begin() + static_cast<ptrdiff_t>(d2.br));
        // a diamond in between that joined at d2's branch now joins where d2 did
        const int old_br = c.ins[d2.br].id, rest = c.ins[d2.j].id;
        for (size_t m = join_at; m < out.size(); ++m)
          if (out[m].target_id == old_br) out[m].target_id = rest;
        out.insert(out.end(), c.ins.begin() + static_cast<ptrdiff_t>(d2.j), c.ins.end());
        const int join_id = out[join_at].id;
        out[br_at].target_id = has_else ? out[else_at].id : join_id;
        if (has_else) out[jump_at].target_id = join_id;
        c.ins = std::move(out);
        return true;
      }
      if ((own.writes & pred).any()) return false;
      between.add(own);
      k = d2.j;  // (diamond_at: nothing outside d2 enters its inside)
      continue;
    }
    const Ins& x = c.ins[k];
    if (!plain_ins(x)) return false;
    Footprint one;
    one.add(x.fx);
    if ((one.writes & pred).any()) return false;
    between.add(one);
    ++k;
  }
  return false;
}

}  // namespace

bool guards(Code& c) {
  bool progress = false;
  Flow f = flow(c);
  for (size_t i = 0; i < c.ins.size(); ++i) {
    // merge greedily: the merged diamond at i may take in the next one too
    Diamond d;
    while (diamond_at(c, f, i, &d) && merge_at(c, f, d)) {
      progress = true;
      f = flow(c);
    }
  }
  return progress;
}

}  // namespace opv::ir3::passes
