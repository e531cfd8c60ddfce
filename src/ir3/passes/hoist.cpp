// hoist: list-schedule each region so loads and their address arithmetic issue early and ALU
// work fills their latency.
//
// Steps, per region (code.h; control flow, barriers, predication markers and branch targets
// bound regions, so nothing crosses them): (1) dependence graph: an edge i -> j (i before j)
// for every register RAW/WAR/WAW (effects from the hazard checker's description, which counts
// a texture's or store's sources as read) and for memory order (a store is ordered against
// every load and store; loads may pass each other); (2) an edge's latency is the producer's
// result latency for RAW (texture/global/IBO load kSyLatency, SFU/local kSsLatency, ALU 3, else
// 1) and 0 otherwise; (3) priority = the longest latency path from the instruction to the end
// of the region; (4) cycle-driven list scheduling: at each cycle take the ready instruction of
// highest priority (original order breaks ties); if none is ready, advance to the earliest; an
// (sy)/(ss) consumer waits for every outstanding producer of its kind (the hardware rule);
// (5) the new order replaces the region only if it finishes earlier under those same timing
// rules than the current order (Mesa's scheduler is often already good); (6) finally the whole
// rewrite is kept only if the legalized program costs fewer cycles (passes.h) than before.
// Registers are not renamed, so every WAR/WAW edge keeps its order and results are unchanged.
// Delay nops and syncs must be recomputed afterwards (the legalize pass).
// Progress: true when some region's order changed.
#include <algorithm>
#include <cstdint>

#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

namespace {

bool reads(const Effects& e, int u) { return std::find(e.reads.begin(), e.reads.end(), u) != e.reads.end(); }
bool writes(const Effects& e, int u) { return std::find(e.writes.begin(), e.writes.end(), u) != e.writes.end(); }

// Cycles from producer p's issue until consumer c may read its result (the hazard checker's
// delays: ALU -> ALU 3, ALU -> SFU/texture/memory/flow 6; loads and SFU are synced instead).
int result_latency(const Effects& p, const Effects& c) {
  if (p.sy_prod) return kSyLatency;
  if (p.ss_prod) return kSsLatency;
  if (p.cat >= 1 && p.cat <= 3) return c.cat >= 1 && c.cat <= 3 ? 3 : 6;
  return 1;
}

}  // namespace

bool hoist(Code& c) {
  Code original = c;
  bool progress = false;
  std::vector<std::pair<size_t, size_t>> regs = c.regions();
  // last region first: rewriting one (it may lose nops) leaves earlier indices valid
  for (size_t r = regs.size(); r-- > 0;) {
    auto [b, e] = regs[r];
    size_t n = e - b;
    if (n < 3) continue;
    // nops carry no work; the legalize pass drops and re-creates them, so schedule without them
    std::vector<size_t> idx;
    for (size_t i = b; i < e; ++i)
      if (c.ins[i].in.name() != "nop" || i == b) idx.push_back(i);
    n = idx.size();
    std::vector<std::vector<std::pair<size_t, int>>> succ(n);
    std::vector<int> npred(n, 0);
    for (size_t a = 0; a < n; ++a) {
      const Effects& fa = c.ins[idx[a]].fx;
      for (size_t z = a + 1; z < n; ++z) {
        const Effects& fz = c.ins[idx[z]].fx;
        bool raw = false, other = false;
        for (int u : fa.writes) {
          if (reads(fz, u)) raw = true;
          if (writes(fz, u)) other = true;
        }
        if (!other)
          for (int u : fz.writes)
            if (reads(fa, u)) other = true;
        if ((fa.store && (fz.store || fz.mem_read)) || (fa.mem_read && fz.store)) other = true;
        // the region's first instruction may be a branch target: it stays first
        if (a == 0 && c.ins[idx[0]].in.name() == "nop") other = true;
        if (raw || other) {
          succ[a].push_back({z, raw ? result_latency(fa, fz) : 0});
          ++npred[z];
        }
      }
    }
    std::vector<std::vector<size_t>> pred(n);
    for (size_t a = 0; a < n; ++a)
      for (auto [z, lat] : succ[a])
        if (lat > 0) pred[z].push_back(a);  // RAW producers
    std::vector<int64_t> height(n, 0);
    for (size_t a = n; a-- > 0;) {
      int len = std::max(1, c.ins[idx[a]].fx.len);
      height[a] = len;
      for (auto [z, lat] : succ[a]) height[a] = std::max<int64_t>(height[a], lat + height[z]);
    }
    // An (sy)/(ss) consumer of a result still in flight waits for *every* outstanding producer
    // of that kind (the hardware rule): its earliest cycle is the latest such producer's issue
    // + latency, and after it waited nothing of that kind is in flight.
    struct Timing {
      std::vector<int64_t> ready;
      std::vector<bool> pend_sy, pend_ss;
      int64_t t = 0, last_sy = -1000000, last_ss = -1000000;
    };
    auto make_timing = [&] {
      Timing tm;
      tm.ready.assign(n, 0);
      tm.pend_sy.assign(n, false);
      tm.pend_ss.assign(n, false);
      return tm;
    };
    auto earliest = [&](const Timing& tm, size_t a) {
      int64_t r = tm.ready[a];
      for (size_t p : pred[a]) {
        if (tm.pend_sy[p]) r = std::max(r, tm.last_sy + kSyLatency);
        if (tm.pend_ss[p]) r = std::max(r, tm.last_ss + kSsLatency);
      }
      return r;
    };
    auto issue = [&](Timing& tm, size_t a) {
      int64_t at = earliest(tm, a);
      bool wsy = false, wss = false;
      for (size_t p : pred[a]) wsy |= tm.pend_sy[p], wss |= tm.pend_ss[p];
      if (wsy) std::fill(tm.pend_sy.begin(), tm.pend_sy.end(), false);
      if (wss) std::fill(tm.pend_ss.begin(), tm.pend_ss.end(), false);
      tm.t = std::max(tm.t, at);
      const Effects& fa = c.ins[idx[a]].fx;
      if (fa.sy_prod) tm.last_sy = tm.t, tm.pend_sy[a] = true;
      if (fa.ss_prod) tm.last_ss = tm.t, tm.pend_ss[a] = true;
      for (auto [z, lat] : succ[a]) tm.ready[z] = std::max(tm.ready[z], tm.t + lat);
      tm.t += std::max(1, fa.len);
    };
    Timing tm = make_timing();
    std::vector<bool> done(n, false);
    std::vector<int> left = npred;
    std::vector<size_t> order;
    // keep a region that starts at a branch target starting with the same instruction
    bool pin_first = c.targets()[static_cast<size_t>(c.ins[idx[0]].id)];
    while (order.size() < n) {
      size_t best = n;
      int64_t best_at = 0;
      for (size_t a = 0; a < n; ++a) {
        if (done[a] || left[a] > 0) continue;
        if (pin_first && order.empty() && a != 0) continue;
        int64_t at = earliest(tm, a);
        if (best == n) {
          best = a, best_at = at;
          continue;
        }
        bool ra = at <= tm.t, rb = best_at <= tm.t;
        bool take;
        if (ra != rb) take = ra;
        else if (!ra) take = at < best_at || (at == best_at && height[a] > height[best]);
        else take = height[a] > height[best];
        if (take) best = a, best_at = at;
      }
      issue(tm, best);
      done[best] = true;
      order.push_back(best);
      for (auto [z, lat] : succ[best]) --left[z];
    }
    bool same = true;
    for (size_t a = 0; a < n; ++a) same &= order[a] == a;
    if (same) continue;
    // keep the new order only if the region is faster under the same timing rules
    auto cost = [&](const std::vector<size_t>& ord) {
      Timing x = make_timing();
      for (size_t a : ord) issue(x, a);
      return x.t;
    };
    std::vector<size_t> orig(n);
    for (size_t a = 0; a < n; ++a) orig[a] = a;
    if (cost(order) >= cost(orig)) continue;
    // rewrite the region with the scheduled instructions; its nops (never branch targets: only
    // the first instruction of a region can be one, and it is kept) are gone
    std::vector<Ins> out;
    for (size_t a : order) out.push_back(c.ins[idx[a]]);
    c.ins.erase(c.ins.begin() + static_cast<ptrdiff_t>(b), c.ins.begin() + static_cast<ptrdiff_t>(e));
    c.ins.insert(c.ins.begin() + static_cast<ptrdiff_t>(b), out.begin(), out.end());
    progress = true;
  }
  if (!progress) return false;
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
