// hoist: list-schedule straight-line code *and the guarded loads in it* so that loads and their
// address arithmetic issue early and ALU work fills their latency.
//
// Real compiler output guards most loads with a forward branch (a convolution's padding test):
//     br !p0.x, #else; mov r10.z, 0; (rpt5)nop; isam r10.w, r10.y; jump #join;
//     else: mov r10.w, 0 ...; join:
// so a scheduler that stops at every branch sees regions of three instructions and cannot
// cluster the loads. This pass schedules *units*: an ordinary instruction, or a whole guarded
// block ("diamond": a conditional `br` forward over a then-block that may end in a forward
// `jump` over an else-block, with nothing inside but plain instructions, no branch into its
// middle). A diamond moves as one piece; its branch and jump are re-targeted to whatever
// follows it in the new order. Loads guarded by predication instead (tinygrad's IMAGE=2 kernels:
//     predt; isam r11.z, r45.w; predf; mov r12.x, 0 ...; prede
// ) form a unit the same way: the whole construct, markers included, with nothing branching
// into it; the two sides keep running on complementary lanes wherever it lands.
//
// Steps: (1) liveness of every register unit over the control-flow graph (backward dataflow;
// unknown control flow keeps everything live); (2) speculation: an ALU instruction of a
// then-block that depends on nothing earlier in the block, produces no sync and writes only
// registers dead on the else path (not live where the else path starts) moves in front of the
// branch, where it becomes an ordinary unit (the `mov rN.z, 0` that fills a 2-D coordinate, and
// the (rpt5)nop it costs before the texture read, leave the guarded block); (2b) the inside of
// each then-block is list-scheduled as a region of its own (after the guards pass one block may
// set up and issue several loads); (3) super-regions:
// maximal runs of units bounded by control flow that is not a diamond or a predicated
// construct, barriers, shared-register writes and branch targets from outside; (4) dependence graph over
// units (last writer / readers per register unit, so O(n); memory: a store is ordered against
// every load and store); an edge's latency is the producer's result latency for RAW (texture /
// global / IBO load kSyLatency, SFU / local kSsLatency, ALU 3, else 1) and 0 otherwise;
// (5) cycle-driven list scheduling by longest latency path to the region's end; an (sy)/(ss)
// consumer waits for every outstanding producer of its kind (the hardware rule), so three more
// orders hold new loads (SFU ops) back while a consumer waits for its (sy) ((ss)) (see greedy()); (6) the best of
// the orders replaces the region only if it finishes earlier under those same rules; the (sy) flags
// of reordered instructions are dropped (the legalize pass puts back where the checker needs
// them; (ss), which Mesa also uses for cases our checker does not model, is kept); (7) finally
// the whole rewrite is kept only if the legalized program costs fewer cycles (passes.h).
// Registers are not renamed, so every WAR/WAW edge keeps its order; the only values computed
// that were not before are speculated ones, into registers nothing reads on the other path.
// Delay nops and syncs must be recomputed afterwards (the legalize pass).
// Progress: true when some region's order changed.
#include <algorithm>
#include <bitset>
#include <cstdint>

#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

namespace {

// A schedulable piece: instruction indices (into Code::ins) in their order inside the unit.
struct Unit {
  std::vector<size_t> ins;
  bool diamond = false;
  int fix_br = -1, fix_jump = -1;  // positions in `ins` whose target becomes "what follows"
  Effects fx;                      // union of the members' effects
  int counted = 0;                 // delay slots its members fill (Effects::counts)
};

void add_effects(Effects& a, const Effects& b) {
  a.reads.insert(a.reads.end(), b.reads.begin(), b.reads.end());
  a.writes.insert(a.writes.end(), b.writes.begin(), b.writes.end());
  a.read_at.insert(a.read_at.end(), b.read_at.begin(), b.read_at.end());
  a.write_at.insert(a.write_at.end(), b.write_at.begin(), b.write_at.end());
  a.sy_prod |= b.sy_prod, a.ss_prod |= b.ss_prod, a.store |= b.store, a.mem_read |= b.mem_read;
}

// Latency from producer p to consumer c: for an ALU producer the hazard checker's delay slots
// (ALU -> ALU 3, ALU -> SFU/texture/memory/flow 6), counted in slots that fill delays (see
// Effects::counts); for loads and SFU the sync latency, in cycles.
int result_latency(const Effects& p, const Effects& c) {
  if (p.sy_prod) return kSyLatency;
  if (p.ss_prod) return kSsLatency;
  if (p.cat >= 1 && p.cat <= 3) return c.cat >= 1 && c.cat <= 3 ? 3 : 6;
  return 1;
}

class Hoister {
 public:
  explicit Hoister(Code& c) : c_(c) {}

  bool run() {
    speculate();
    index();
    live_ = liveness(c_);
    bool progress = schedule_blocks();
    std::vector<Ins> out;
    size_t i = 0, n = c_.ins.size();
    // targets from outside: a diamond's own branch/jump to its join does not cut the region
    std::vector<int> tg = tg_;
    // rebuild the program region by region; control instructions outside diamonds are copied
    while (i < n) {
      std::vector<Unit> units;
      size_t b = i;
      bool pinned = tg[i] > 0;
      while (i < n) {
        if (i > b && tg[i] > 0) break;
        const Ins& x = c_.ins[i];
        Diamond d;
        if (diamond_at(i, d)) {
          units.push_back(make_diamond(d));
          --tg[d.j];
          i = d.j;
          continue;
        }
        size_t pmid = 0, pend = 0;
        if (x.in.name() == "predt" && pred_at(i, pmid, pend)) {
          units.push_back(make_pred(i, pend));
          i = pend + 1;
          continue;
        }
        if (is_control(x) || shared_write(x)) break;
        if (x.in.name() != "nop" || tg[i] > 0) units.push_back(make_single(i));
        ++i;
      }
      if (units.empty()) {  // a control instruction or shared write of its own
        if (i >= n) break;
        out.push_back(c_.ins[i]);
        ++i;
        continue;
      }
      if (i >= n) break;  // cannot happen: the program ends with `end`, a control instruction
      size_t next = i;  // the instruction after the region
      progress |= schedule(units, pinned, next, out);
    }
    if (progress) c_.ins = out;
    return progress;
  }

 private:
  Code& c_;
  Flow flow_;
  std::vector<int> tg_;  // per index: branches targeting it
  std::vector<Live> live_;  // live-in per index, after speculation

  void index() {
    flow_ = flow(c_);
    tg_.assign(c_.ins.size(), 0);
    for (size_t k = 0; k < c_.ins.size(); ++k) tg_[k] = static_cast<int>(flow_.from[k].size());
  }

  bool plain(size_t i) const { return plain_ins(c_.ins[i]); }

  // A predicated construct at i: predt A [predf B] prede (or starting at predf), both sections
  // plain, nothing branching into it. `mid`: the predf (0 when none), `end`: the prede.
  bool pred_at(size_t i, size_t& mid, size_t& end) const {
    const std::string& n = c_.ins[i].in.name();
    if (n != "predt" && n != "predf") return false;
    mid = end = 0;
    for (size_t k = i + 1; k < c_.ins.size(); ++k) {
      const std::string& m = c_.ins[k].in.name();
      if (m == "prede") {
        end = k;
        break;
      }
      if ((m == "predt" || m == "predf") && mid == 0) {
        mid = k;
        continue;
      }
      if (!plain(k) || tg_[k] != 0) return false;
    }
    return end != 0 && end + 1 < c_.ins.size() && tg_[end] == 0 && (mid == 0 || tg_[mid] == 0);
  }

  // The whole predicated construct [b, e] as one unit: it moves as one piece, markers included
  // (its delay nops go; legalize re-creates them).
  Unit make_pred(size_t b, size_t e) const {
    Unit u;
    u.diamond = true;
    u.fx.cat = 0;
    u.fx.len = 0;
    for (size_t k = b; k <= e; ++k) {
      const Ins& x = c_.ins[k];
      if (x.in.name() == "nop" && !x.in.get_or("SS", 0) && !x.in.get_or("SY", 0)) continue;
      add_member(u, k);
    }
    return u;
  }
  // Instruction k joins a compound unit: its effects, its issue slots, the delay slots it fills.
  void add_member(Unit& u, size_t k) const {
    const Effects& f = c_.ins[k].fx;
    u.ins.push_back(k);
    add_effects(u.fx, f);
    u.fx.len += std::max(1, f.len);
    u.counted += f.slots_filled();
  }
  bool diamond_at(size_t i, Diamond& d) const { return passes::diamond_at(c_, flow_, i, &d); }

  Unit make_single(size_t i) const {
    Unit u;
    u.ins.push_back(i);
    u.fx = c_.ins[i].fx;
    u.fx.len = std::max(1, u.fx.len);
    u.counted = u.fx.slots_filled();
    return u;
  }

  Unit make_diamond(const Diamond& d) const {
    Unit u;
    u.diamond = true;
    u.fx.cat = 0;
    u.fx.len = 0;
    for (size_t k = d.br; k < d.j; ++k) {
      const Ins& x = c_.ins[k];
      // delay nops go (legalize re-creates them); a targeted one stays (the else start)
      if (x.in.name() == "nop" && !(d.has_else && k == d.t)) continue;
      if (k == d.br && !d.has_else) u.fix_br = static_cast<int>(u.ins.size());
      if (d.has_else && k + 1 == d.t) u.fix_jump = static_cast<int>(u.ins.size());
      add_member(u, k);
    }
    return u;
  }

  // Schedules the inside of every diamond's then-block as a region of its own (a block that
  // guards several loads -- see the guards pass -- sets up their coordinates inside it); the
  // diamonds then move as units. Recomputes the indexes when something changed.
  bool schedule_blocks() {
    std::vector<Ins> out;
    bool changed = false;
    size_t i = 0;
    while (i < c_.ins.size()) {
      Diamond d;
      if (!diamond_at(i, d)) {
        out.push_back(c_.ins[i++]);
        continue;
      }
      out.push_back(c_.ins[d.br]);
      const size_t then_end = d.has_else ? d.t - 1 : d.t;
      std::vector<Unit> units;
      for (size_t k = d.br + 1; k < then_end; ++k)
        if (c_.ins[k].in.name() != "nop") units.push_back(make_single(k));
      if (units.size() > 1) {
        changed |= schedule(units, false, then_end, out);
      } else {
        out.insert(out.end(), c_.ins.begin() + static_cast<ptrdiff_t>(d.br + 1), c_.ins.begin() + static_cast<ptrdiff_t>(then_end));
      }
      out.insert(out.end(), c_.ins.begin() + static_cast<ptrdiff_t>(then_end), c_.ins.begin() + static_cast<ptrdiff_t>(d.j));
      i = d.j;
    }
    if (!changed) return false;
    c_.ins = std::move(out);
    index();
    live_ = liveness(c_);
    return true;
  }

  // Moves ALU instructions out of then-blocks in front of their branch, and out of predicated
  // constructs in front of their predt/predf (see the header).
  void speculate() {
    index();
    std::vector<Live> live = liveness(c_);
    std::vector<std::pair<size_t, size_t>> moves;  // (instruction, insert before)
    // Members [b, e) of one guarded section; `read`: what the guard reads; `forbidden`: what
    // must not be clobbered for the lanes that skip the section.
    auto scan = [&](size_t b, size_t e, Live read, const Live& forbidden, size_t before) {
      Live written;
      for (size_t k = b; k < e; ++k) {
        const Ins& x = c_.ins[k];
        const Effects& f = x.fx;
        bool ok = f.cat >= 1 && f.cat <= 3 && !f.sy_prod && !f.ss_prod && !f.store && !f.mem_read &&
                  !x.in.get_or("SY", 0) && !x.in.get_or("SS", 0) && x.in.name() != "nop";
        for (int u : f.reads) ok = ok && u < kUnitsMax && !written.test(static_cast<size_t>(u));
        for (int u : f.writes)
          ok = ok && u < kUnitsMax && !written.test(static_cast<size_t>(u)) && !read.test(static_cast<size_t>(u)) &&
               !forbidden.test(static_cast<size_t>(u));
        if (ok) {
          moves.emplace_back(k, before);
          continue;  // it no longer sits in the section: later members need not order after it
        }
        for (int u : f.reads)
          if (u < kUnitsMax) read.set(static_cast<size_t>(u));
        for (int u : f.writes)
          if (u < kUnitsMax) written.set(static_cast<size_t>(u));
      }
    };
    auto reads_of = [&](size_t b, size_t e) {
      Live r;
      for (size_t k = b; k < e; ++k)
        for (int u : c_.ins[k].fx.reads)
          if (u < kUnitsMax) r.set(static_cast<size_t>(u));
      return r;
    };
    for (size_t i = 0; i < c_.ins.size(); ++i) {
      Diamond d;
      if (diamond_at(i, d)) {
        // the else path starts at t (the join when there is no else)
        scan(i + 1, d.has_else ? d.t - 1 : d.t, reads_of(i, i + 1), live[d.t], i);
        continue;
      }
      size_t mid = 0, end = 0;
      if (!pred_at(i, mid, end)) continue;
      Live guard = reads_of(i, i + 1);
      if (mid) guard |= reads_of(mid, mid + 1);
      size_t a_end = mid ? mid : end;
      scan(i + 1, a_end, guard, live[end + 1] | (mid ? reads_of(mid + 1, end) : Live()), i);
      if (mid) scan(mid + 1, end, guard, live[end + 1] | reads_of(i + 1, mid), i);
      i = end;
    }
    if (moves.empty()) return;
    // rebuild: each moved instruction goes right before its guard, in program order
    std::vector<std::vector<size_t>> before(c_.ins.size());
    std::vector<bool> moved(c_.ins.size(), false);
    for (auto [k, br] : moves) before[br].push_back(k), moved[k] = true;
    std::vector<Ins> out;
    std::vector<std::pair<int, int>> retarget;  // (guard id, first moved id)
    for (size_t i = 0; i < c_.ins.size(); ++i) {
      if (!before[i].empty()) retarget.emplace_back(c_.ins[i].id, c_.ins[before[i].front()].id);
      for (size_t k : before[i]) out.push_back(c_.ins[k]);
      if (!moved[i]) out.push_back(c_.ins[i]);
    }
    // Every path that reached the guard must run what moved in front of it: a branch or jump
    // to the guard (the join of an earlier block, a loop head) now goes to the first of them.
    for (auto [guard, first] : retarget)
      for (Ins& x : out)
        if (x.target_id == guard) x.target_id = first;
    c_.ins = out;
  }

  // Schedules one region's units; appends the result (or the original order) to `out`.
  bool schedule(const std::vector<Unit>& units, bool pinned, size_t next, std::vector<Ins>& out) {
    size_t n = units.size();
    std::vector<std::vector<std::pair<size_t, int>>> succ(n);
    std::vector<int> npred(n, 0);
    std::vector<std::vector<size_t>> pred(n);  // RAW producers
    {
      std::vector<int64_t> last_w(kUnitsMax, -1);
      std::vector<std::vector<size_t>> readers(kUnitsMax);
      int64_t last_store = -1;
      std::vector<size_t> loads;
      auto edge = [&](size_t a, size_t z, int lat) {
        succ[a].push_back({z, lat});
        ++npred[z];
        if (lat > 0) pred[z].push_back(a);
      };
      for (size_t z = 0; z < n; ++z) {
        const Effects& f = units[z].fx;
        if (pinned && z > 0) edge(0, z, 0);
        for (int u : f.reads)
          if (u < kUnitsMax && last_w[static_cast<size_t>(u)] >= 0) {
            size_t a = static_cast<size_t>(last_w[static_cast<size_t>(u)]);
            if (a != z) edge(a, z, result_latency(units[a].fx, f));
          }
        for (int u : f.writes) {
          if (u >= kUnitsMax) continue;
          if (last_w[static_cast<size_t>(u)] >= 0 && static_cast<size_t>(last_w[static_cast<size_t>(u)]) != z)
            edge(static_cast<size_t>(last_w[static_cast<size_t>(u)]), z, 0);
          for (size_t r : readers[static_cast<size_t>(u)])
            if (r != z) edge(r, z, 0);
        }
        if (f.mem_read && last_store >= 0) edge(static_cast<size_t>(last_store), z, 0);
        if (f.store) {
          if (last_store >= 0) edge(static_cast<size_t>(last_store), z, 0);
          for (size_t l : loads)
            if (l != z) edge(l, z, 0);
        }
        for (int u : f.reads)
          if (u < kUnitsMax) readers[static_cast<size_t>(u)].push_back(z);
        for (int u : f.writes)
          if (u < kUnitsMax) last_w[static_cast<size_t>(u)] = static_cast<int64_t>(z), readers[static_cast<size_t>(u)].clear();
        if (f.store) last_store = static_cast<int64_t>(z), loads.clear();
        if (f.mem_read) loads.push_back(z);
      }
    }
    // A result read after the region (live where it ends) is wanted early too: charge it the
    // latency to an unknown consumer (ALU results: 6, as for a memory/texture reader).
    std::vector<int> exit(n, 0);
    for (size_t a = 0; a < n; ++a) {
      const Effects& f = units[a].fx;
      bool out_live = false;
      for (size_t m : units[a].ins)
        for (int u : c_.ins[m].fx.writes)
          out_live = out_live || (u < kUnitsMax && live_[next].test(static_cast<size_t>(u)));
      if (out_live) exit[a] = f.sy_prod ? kSyLatency : f.ss_prod ? kSsLatency : (f.cat >= 1 && f.cat <= 3) ? 6 : 1;
    }
    std::vector<int64_t> height(n, 0);
    for (size_t a = n; a-- > 0;) {
      height[a] = std::max(units[a].fx.len, exit[a]);
      for (auto [z, lat] : succ[a]) height[a] = std::max<int64_t>(height[a], lat + height[z]);
    }
    // Two clocks: t, the issue cycle, and c, the delay slots filled so far (ALU and cat0
    // instructions; texture, memory and SFU instructions issue without filling any). An ALU
    // result is ready by c (ready_c); a nop fills a slot and takes a cycle, a sync stall only
    // takes cycles.
    struct Timing {
      std::vector<int64_t> ready, ready_c;
      std::vector<bool> pend_sy, pend_ss;
      int64_t t = 0, c = 0, last_sy = -1000000, last_ss = -1000000, finish = 0;
    };
    auto make_timing = [&] {
      Timing tm;
      tm.ready.assign(n, 0);
      tm.ready_c.assign(n, 0);
      tm.pend_sy.assign(n, false);
      tm.pend_ss.assign(n, false);
      return tm;
    };
    // an (sy)/(ss) consumer of a result in flight waits for every outstanding producer of
    // that kind; afterwards nothing of that kind is in flight
    auto earliest = [&](const Timing& tm, size_t a) {
      int64_t r = std::max(tm.ready[a], tm.t + std::max<int64_t>(0, tm.ready_c[a] - tm.c));
      for (size_t p : pred[a]) {
        if (tm.pend_sy[p]) r = std::max(r, tm.last_sy + kSyLatency);
        if (tm.pend_ss[p]) r = std::max(r, tm.last_ss + kSsLatency);
      }
      return r;
    };
    auto issue = [&](Timing& tm, size_t a) {
      int64_t at = earliest(tm, a);
      bool wsy = false, wss = false;
      for (size_t p : pred[a]) wsy = wsy || tm.pend_sy[p], wss = wss || tm.pend_ss[p];
      if (wsy) std::fill(tm.pend_sy.begin(), tm.pend_sy.end(), false);
      if (wss) std::fill(tm.pend_ss.begin(), tm.pend_ss.end(), false);
      tm.c = std::max(tm.c, tm.ready_c[a]);  // the nops it waits for fill slots
      tm.t = std::max(tm.t, at);
      const Effects& fa = units[a].fx;
      if (fa.sy_prod) tm.last_sy = tm.t, tm.pend_sy[a] = true;
      if (fa.ss_prod) tm.last_ss = tm.t, tm.pend_ss[a] = true;
      const bool alu = fa.cat >= 1 && fa.cat <= 3;
      for (auto [z, lat] : succ[a]) {
        if (alu && lat > 0) tm.ready_c[z] = std::max(tm.ready_c[z], tm.c + units[a].counted + lat);
        else tm.ready[z] = std::max(tm.ready[z], tm.t + lat);
      }
      tm.finish = std::max(tm.finish, tm.t + exit[a]);
      tm.c += units[a].counted;
      tm.t += fa.len;
      tm.finish = std::max(tm.finish, tm.t);
    };
    // Greedy list scheduling. With `defer`, a load is not issued while a unit is ready but for
    // the (sy) of an earlier load (defer 1), or while such a unit at least as critical (height)
    // waits (defer 2; defer 3 also holds SFU / local-memory producers back from an (ss) waiter
    // the same way) -- unless only held units are ready: the hardware's (sy) waits for every
    // load in flight, so each new load would push that consumer kSyLatency further out, and the
    // plain greedy keeps issuing loads ahead of a waiting chain. Deferred, the chain syncs first
    // and the next loads issue right after it, under its latency. Each order is a candidate.
    auto greedy = [&](int defer) {
      Timing tm = make_timing();
      std::vector<int> left = npred;
      std::vector<size_t> ready;
      for (size_t a = 0; a < n; ++a)
        if (left[a] == 0) ready.push_back(a);
      std::vector<size_t> order;
      while (order.size() < n) {
        // the height of the most critical unit waiting for an (sy) / an (ss)
        int64_t hold_sy = -1, hold_ss = -1;
        if (defer)
          for (size_t a : ready)
            for (size_t p : pred[a]) {
              if (tm.pend_sy[p]) hold_sy = std::max(hold_sy, height[a]);
              if (tm.pend_ss[p]) hold_ss = std::max(hold_ss, height[a]);
            }
        auto held = [&](size_t a) {
          const Effects& f = units[a].fx;
          return (f.sy_prod && hold_sy >= 0 && (defer == 1 || height[a] <= hold_sy)) ||
                 (defer == 3 && f.ss_prod && hold_ss >= 0 && height[a] <= hold_ss);
        };
        bool all_held = true;
        for (size_t k = 0; k < ready.size() && all_held; ++k) all_held = held(ready[k]);
        size_t best_k = SIZE_MAX;
        int64_t best_at = 0;
        for (size_t k = 0; k < ready.size(); ++k) {
          size_t a = ready[k];
          if (!all_held && held(a)) continue;
          int64_t at = earliest(tm, a);
          if (best_k == SIZE_MAX) {
            best_k = k, best_at = at;
            continue;
          }
          size_t bst = ready[best_k];
          bool ra = at <= tm.t, rb = best_at <= tm.t;
          bool take;
          if (ra != rb) take = ra;
          else if (!ra) take = at < best_at || (at == best_at && height[a] > height[bst]);
          else take = height[a] > height[bst] || (height[a] == height[bst] && a < bst);
          if (take) best_k = k, best_at = at;
        }
        size_t best = ready[best_k];
        ready.erase(ready.begin() + static_cast<ptrdiff_t>(best_k));
        issue(tm, best);
        order.push_back(best);
        for (auto [z, lat] : succ[best])
          if (--left[z] == 0) ready.push_back(z);
      }
      return order;
    };
    std::vector<size_t> order = greedy(0), deferred = greedy(1), deferred_critical = greedy(2), deferred_ss = greedy(3);
    auto cost = [&](const std::vector<size_t>& ord) {
      Timing x = make_timing();
      for (size_t a : ord) issue(x, a);
      return x.finish;
    };
    std::vector<size_t> orig(n);
    for (size_t a = 0; a < n; ++a) orig[a] = a;
    // The greedy order never delays the critical path for a short ALU result read after the
    // region, so also try each order with those raised to right after their last predecessor.
    std::vector<std::vector<size_t>> all_pred(n);
    for (size_t a = 0; a < n; ++a)
      for (auto [z, lat] : succ[a]) all_pred[z].push_back(a);
    auto raise_exits = [&](const std::vector<size_t>& ord) {
      std::vector<size_t> out(ord);
      for (size_t k = 0; k < out.size(); ++k) {
        size_t a = out[k];
        const Effects& f = units[a].fx;
        if (exit[a] == 0 || f.sy_prod || f.ss_prod || units[a].diamond) continue;
        size_t at = 0;  // first position after every predecessor
        for (size_t q = 0; q < k; ++q)
          if (std::find(all_pred[a].begin(), all_pred[a].end(), out[q]) != all_pred[a].end()) at = q + 1;
        if (at >= k) continue;
        out.erase(out.begin() + static_cast<ptrdiff_t>(k));
        out.insert(out.begin() + static_cast<ptrdiff_t>(at), a);
      }
      return out;
    };
    std::vector<size_t> best_order = orig;
    int64_t best_cost = cost(orig);
    for (const std::vector<size_t>& cand : {order, raise_exits(orig), raise_exits(order), deferred, raise_exits(deferred),
                                              deferred_critical, raise_exits(deferred_critical), deferred_ss, raise_exits(deferred_ss)}) {
      int64_t cc = cost(cand);
      if (cc < best_cost) best_cost = cc, best_order = cand;
    }
    bool better = best_order != orig;
    const std::vector<size_t>& use = best_order;
    int next_id = c_.ins[next].id;
    std::vector<std::pair<size_t, size_t>> fixes;  // (position in out, unit index in `use`)
    for (size_t k = 0; k < use.size(); ++k) {
      const Unit& u = units[use[k]];
      for (size_t m = 0; m < u.ins.size(); ++m) {
        Ins x = c_.ins[u.ins[m]];
        if (better && x.in.get_or("SY", 0) && !(x.in.name() == "nop" && tg_[u.ins[m]] > 0)) {
          x.in = with_field(x.in, "SY", 0);
          x.fx = effects(x.in, c_.merged_regs);
        }
        if (static_cast<int>(m) == u.fix_br || static_cast<int>(m) == u.fix_jump) fixes.emplace_back(out.size(), k);
        out.push_back(x);
      }
    }
    // a diamond's branch (no else) or jump goes to whatever follows the diamond now
    for (auto [p, k] : fixes)
      out[p].target_id = k + 1 < use.size() ? c_.ins[units[use[k + 1]].ins[0]].id : next_id;
    return better;
  }
};

}  // namespace

bool hoist(Code& c) {
  Code original = c;
  Hoister h(c);
  if (!h.run()) {
    c = original;
    return false;
  }
  // The region estimates do not see every sync the checker will ask for: keep the new order
  // only if the legalized program is faster under the cost model (passes.h) than before.
  Code a = original, b = c;
  legalize(a);
  legalize(b);
  if (stats(b).cycles() < stats(a).cycles()) return true;
  c = original;
  return false;
}

}  // namespace opv::ir3::passes
