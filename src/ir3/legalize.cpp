// Sync-hazard analysis and legalization of ir3 programs.
//
// Steps: (1) describe every instruction: registers read and written (in half-register units, so
// merged half/full overlap is exact; (rptN) expanded per element), its cycle length ((rptN),
// (nopN)), and whether it is an (ss) producer (SFU, local loads, shfl, shared-register writes),
// an (sy) producer (texture, global/IBO/const/private loads, global atomics) or a late reader
// (texture/memory sources, stores); (2) build the CFG from branch offsets and solve a forward
// dataflow problem: pending (ss)/(sy) results, pending late reads (WAR), and for ALU results
// the delay slots since their write (min over incoming paths); (3) check each instruction against
// the state reaching it: ALU->ALU needs 3 slots, ALU->SFU/tex/mem/flow, a half read of a full
// write (or the reverse) on merged registers, and a0/p0 writes need 6; a mad's third source is
// read two cycles late (3 -> 1). As in Mesa's ir3_legalize.c (count_instruction), only ALU
// instructions (cat1-3), nops and the other cat0 instructions fill delay slots: SFU, texture,
// memory and barrier instructions do not, nor do branches and jumps; (4) legalize() walks the program with the exact state along
// straight-line code, fixing each offending instruction ((ss)/(sy) bits, (nopN) on the previous
// ALU op, or inserted (ss)/(rptN) nops), stops a pass at the next branch target after a fix,
// re-targets branches, re-analyses, and repeats until nothing is left.
// Invariant: legalize only adds flags and nops; it never reorders or drops instructions.
#include "ir3/legalize.h"

#include <algorithm>
#include <bitset>
#include <cstdio>
#include <deque>
#include <map>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "ir3/isa_model.h"
#include "ir3/semantics.h"

namespace opv::ir3 {

using detail::Node;

namespace {

// Register units: full regid n -> 2n, 2n+1 (its two halves); a half register is the half it
// overlaps in a merged file, or 512 + its regid where half registers are a file of their own.
constexpr int kUnits = 768;
constexpr int kSeparateHalf = 512;
constexpr int kNever = 1000;
constexpr int kAluDelay = 3, kAluDelayMadSrc3 = 1, kLongDelay = 6;
using Mask = std::bitset<kUnits>;

struct Access {
  int unit;
  int element;    // repeat element at which it is read/written
  int src_index;  // which source (for the mad third-source rule), -1 for writes
  int half_regid = -1;  // the half register (regid) when the operand is half precision
  // Where half registers are a file of their own, the unit the other file's register of the same
  // name would have: delays still treat the two as one (Mesa's ready slots alias them whatever
  // the mergedregs mode), sync flags do not. -1 in a merged file.
  int alias = -1;
};

struct Info {
  Instr in;
  int cat = 0;
  int len = 1, nops = 0;
  bool has_ss_bit = false, ss = false, sy = false;
  bool ss_prod = false, sy_prod = false, late_reader = false, store = false, mem_read = false;
  bool is_branch = false, is_jump = false, is_end = false;
  bool counts = false;  // fills delay slots (Mesa's count_instruction)
  bool mad = false;     // mad.*/madsh.*: the third source is read two cycles after issue
  int64_t target = 0;
  std::vector<Access> reads, writes;
};

void add_reg(std::vector<Access>& v, int regid, bool half, int element, int src, bool merged) {
  if (regid < 0 || regid >= 256) return;
  if (regid == kRegInvalid) return;
  if (half && regid < kRegA0 && !merged) {
    v.push_back({kSeparateHalf + regid, element, src, regid, regid < 48 * 4 ? regid : -1});
  } else if (half && regid < kRegA0) {
    int full = regid < 48 * 4 ? regid >> 1 : 48 * 4 + ((regid - 48 * 4) >> 1);
    v.push_back({2 * full + (regid & 1), element, src, regid});
  } else {
    for (int h = 0; h < 2; ++h) {
      const int u = 2 * regid + h;
      v.push_back({u, element, src, -1, !merged && u < 48 * 4 ? kSeparateHalf + u : -1});
    }
  }
}

// Whether an instruction advances the ALU pipeline that delay slots count: ALU instructions and
// cat0 (nops, predication markers, end), not branches or jumps (Mesa does not count br/braa/brao/
// jump, as they may be removed; the others we do not count either, which only adds nops), and
// not SFU, texture, memory or barrier instructions, which other units execute.
bool fills_delay_slots(const Semantics& sm) {
  if (sm.cat >= 1 && sm.cat <= 3) return true;
  return sm.cat == 0 && !sm.is_branch && !sm.is_jump;
}

// The checker's view of an instruction: the shared semantics (ir3/semantics.h) expanded into
// half-register units per (rptN) element.
Info describe(const Instr& in, bool merged) {
  Semantics sm = semantics(in);
  Info d;
  d.in = in;
  d.cat = sm.cat;
  d.len = sm.len;
  d.nops = sm.nops;
  d.has_ss_bit = in.has("SS");
  d.ss = in.get_or("SS", 0) != 0;
  d.sy = in.get_or("SY", 0) != 0;
  d.ss_prod = sm.ss_prod;
  d.sy_prod = sm.sy_prod;
  d.late_reader = sm.late_reader;
  d.store = sm.store;
  d.mem_read = sm.mem_read;
  d.is_branch = sm.is_branch;
  d.is_jump = sm.is_jump;
  d.is_end = sm.is_end;
  d.target = sm.target;
  d.counts = fills_delay_slots(sm);
  d.mad = in.name().rfind("mad", 0) == 0;
  // lag: cycles after issue; swz and gat read their n-th source n cycles late, swz and sct write
  // their n-th destination n cycles late (Mesa's delay_calc / delay_update)
  auto expand = [&](std::vector<Access>& v, const RegUse& u, int lag) {
    for (int e = 0; e < u.elements; ++e)
      for (int i = 0; i < u.count; ++i) add_reg(v, u.regid + i + (u.advancing ? e : 0), u.half, e + lag, u.src, merged);
  };
  const std::string& n = in.name();
  const bool scalar_srcs = n.rfind("swz", 0) == 0 || n.rfind("gat", 0) == 0;
  const bool scalar_dsts = n.rfind("swz", 0) == 0 || n.rfind("sct", 0) == 0;
  for (size_t k = 0; k < sm.reads.size(); ++k) expand(d.reads, sm.reads[k], scalar_srcs ? static_cast<int>(k) : 0);
  for (size_t k = 0; k < sm.writes.size(); ++k) expand(d.writes, sm.writes[k], scalar_dsts ? static_cast<int>(k) : 0);
  return d;
}

struct State {
  Mask ss, sy, war_ss, war_sy;
  // Predication: inside predt..predf (side 1) and predf..prede (side 2) the two sides run on
  // complementary lanes. A result still pending from a side-1 load (pred_t) is no hazard for
  // side-2 instructions, which run on the other lanes; after prede it is pending as usual. So is
  // a register a side-1 texture/memory instruction still reads (pred_r) for side-2 writes.
  Mask pred_t, pred_r;
  int8_t pside = 0;
  // Delay slots between the last ALU write of a unit and this instruction, per size of that write
  // (since[2u] as a full register, since[2u + 1] as a half): a reader of the other size needs the
  // longer delay (Mesa keeps a ready cycle per consumer size for the same reason).
  std::vector<int16_t> since;
  std::vector<int32_t> writer;   // producing instruction per unit
  bool reached = false;
  State() : since(2 * kUnits, kNever), writer(kUnits, -1) {}
  bool merge(const State& o) {
    if (!reached) {
      *this = o;
      reached = true;
      return true;
    }
    bool ch = false;
    if (pside != o.pside || pred_t != o.pred_t || pred_r != o.pred_r) {
      ch = pside != 0 || pred_t.any() || pred_r.any();
      pside = 0;  // paths disagree on the predication state: no exemption
      pred_t.reset();
      pred_r.reset();
    }
    Mask a = ss | o.ss, b = sy | o.sy, c = war_ss | o.war_ss, e = war_sy | o.war_sy;
    if (a != ss || b != sy || c != war_ss || e != war_sy) ch = true;
    ss = a, sy = b, war_ss = c, war_sy = e;
    for (int u = 0; u < kUnits; ++u) {
      bool took = false;
      for (int k = 2 * u; k < 2 * u + 2; ++k)
        if (o.since[k] < since[k]) since[k] = o.since[k], took = true;
      if (took) {
        writer[u] = o.writer[u];
        ch = true;
      } else if (o.writer[u] >= 0 && writer[u] < 0) {
        writer[u] = o.writer[u];
      }
    }
    return ch;
  }
};

std::string unit_name(int u) {
  char buf[16];
  if (u >= kSeparateHalf) {
    std::snprintf(buf, sizeof buf, "hr%d.%c", (u - kSeparateHalf) / 4, "xyzw"[(u - kSeparateHalf) & 3]);
    return buf;
  }
  int full = u / 2;
  if (full >= kRegP0 && full < kRegP0 + 4) return std::string("p0.") + "xyzw"[full & 3];
  if (full == kRegA0) return "a0.x";
  if (full == kRegA0 + 1) return "a1.x";
  std::snprintf(buf, sizeof buf, "r%d.%c", full / 4, "xyzw"[full & 3]);
  return buf;
}

// Delay slots consumer c needs for its read a after an ALU write of the same unit, as a half
// register when `half_write`.
int needed_delay(const Info& c, const Access& a, bool half_write) {
  const int reg = a.unit < kSeparateHalf ? a.unit / 2 : -1;
  const bool special = reg == kRegA0 || reg == kRegA0 + 1 || (reg >= kRegP0 && reg < kRegP0 + 4);
  const bool mismatch = (a.half_regid >= 0) != half_write;
  const bool alu = c.cat >= 1 && c.cat <= 3;
  int need = alu && !special && !mismatch ? kAluDelay : kLongDelay;
  if (c.mad && a.src_index == 2) need -= kAluDelay - kAluDelayMadSrc3;
  return need;
}

State transfer(const State& in, const Info& d, size_t idx) {
  State s = in;
  if (d.cat == 0) {
    const std::string& n = d.in.name();
    if (n == "predt") s.pside = 1, s.pred_t.reset(), s.pred_r.reset();
    else if (n == "predf") s.pside = s.pside == 1 ? 2 : 0;
    else if (n == "prede") s.pside = 0, s.pred_t.reset(), s.pred_r.reset();
    else if (n != "nop") s.pside = 0, s.pred_t.reset(), s.pred_r.reset();
  }
  if (d.ss) s.ss.reset(), s.war_ss.reset(), s.war_sy.reset();
  if (d.sy) s.sy.reset(), s.war_sy.reset();
  int adv = d.counts ? d.len + d.nops : 0;
  if (adv)
    for (int16_t& v : s.since)
      if (v < kNever) v = static_cast<int16_t>(std::min(kNever, v + adv));
  for (const Access& r : d.reads) {
    Mask& war = d.sy_prod ? s.war_sy : s.war_ss;
    if (!d.sy_prod && !(d.ss_prod || d.late_reader || d.store)) continue;
    if (s.pside == 1 && !s.war_ss.test(r.unit) && !s.war_sy.test(r.unit)) s.pred_r.set(r.unit);
    war.set(r.unit);
  }
  for (const Access& w : d.writes) {
    bool keep_pending = s.pside == 2 && s.pred_t.test(w.unit);  // the other lanes' load is still in flight
    if (!keep_pending) {
      s.ss.reset(w.unit);
      s.sy.reset(w.unit);
    }
    if (s.pside == 1 && (d.sy_prod || d.ss_prod)) s.pred_t.set(w.unit);
    else if (s.pside != 2) s.pred_t.reset(w.unit);
    s.writer[w.unit] = static_cast<int32_t>(idx);
    if (d.sy_prod) s.sy.set(w.unit);
    else if (d.ss_prod) s.ss.set(w.unit);
    for (int u : {w.unit, w.alias}) {
      if (u < 0) continue;
      int16_t* sw = &s.since[2 * static_cast<size_t>(u)];
      if (d.cat >= 1 && d.cat <= 3 && !d.sy_prod && !d.ss_prod)
        sw[w.half_regid >= 0 ? 1 : 0] = static_cast<int16_t>(d.len - 1 - w.element + d.nops);
      else
        sw[0] = sw[1] = kNever;
    }
  }
  return s;
}

struct Analysis {
  std::vector<Info> info;
  std::vector<State> at;  // state reaching each instruction
};

using InfoCache = std::unordered_map<uint64_t, Info>;

Analysis analyse(const std::vector<uint64_t>& prog, int gen, bool merged, InfoCache* cache = nullptr) {
  Analysis a;
  for (size_t i = 0; i < prog.size(); ++i) {
    if (cache) {
      auto it = cache->find(prog[i]);
      if (it != cache->end()) {
        a.info.push_back(it->second);
        continue;
      }
    }
    Instr in = decode(prog[i], gen);
    OPV_CHECK(in.valid(), "ir3 legalize: instruction ", i, " (raw 0x", std::hex, prog[i], ") does not decode");
    a.info.push_back(describe(in, merged));
    if (cache) cache->emplace(prog[i], a.info.back());
  }
  a.at.assign(prog.size(), State());
  if (prog.empty()) return a;
  a.at[0].reached = true;
  std::deque<size_t> work{0};
  std::vector<bool> queued(prog.size(), false);
  queued[0] = true;
  while (!work.empty()) {
    size_t i = work.front();
    work.pop_front();
    queued[i] = false;
    const Info& d = a.info[i];
    State out = transfer(a.at[i], d, i);
    std::vector<size_t> succ;
    if (!d.is_end) {
      if (!d.is_jump && i + 1 < prog.size()) succ.push_back(i + 1);
      if (d.is_branch || d.is_jump) {
        int64_t t = static_cast<int64_t>(i) + d.target;
        if (t >= 0 && t < static_cast<int64_t>(prog.size())) succ.push_back(static_cast<size_t>(t));
      }
    }
    for (size_t s : succ)
      if (a.at[s].merge(out) && !queued[s]) {
        queued[s] = true;
        work.push_back(s);
      }
  }
  return a;
}

std::vector<Hazard> hazards_for(const State& s, const Info& d, size_t i) {
  std::vector<Hazard> out;
  if (!s.reached) return out;
  // one report per instruction and kind (a flag is per instruction); delays keep the worst
  auto add = [&](Hazard::Kind k, int unit, int need, int have, const std::string& why) {
    for (Hazard& h : out)
      if (h.kind == k) {
        if (need - have > h.need - h.have) {
          h.need = need, h.have = have, h.reg = unit_name(unit);
          h.producer = static_cast<size_t>(std::max(0, s.writer[unit]));
        }
        return;
      }
    Hazard h{k, i, unit_name(unit), static_cast<size_t>(std::max(0, s.writer[unit])), need, have, why};
    out.push_back(h);
  };
  bool ss = d.ss, sy = d.sy;
  auto other_side = [&](int unit) { return s.pside == 2 && s.pred_t.test(unit); };
  for (const Access& r : d.reads) {
    if (other_side(r.unit)) continue;
    if (!ss && s.ss.test(r.unit)) add(Hazard::Kind::MissingSs, r.unit, 0, 0, "reads an (ss) producer's result");
    if (!sy && s.sy.test(r.unit)) add(Hazard::Kind::MissingSy, r.unit, 0, 0, "reads an (sy) producer's result");
    for (int hw = 0; hw < 2; ++hw) {
      const int16_t since = s.since[2 * static_cast<size_t>(r.unit) + static_cast<size_t>(hw)];
      if (since >= kNever) continue;
      int need = needed_delay(d, r, hw != 0), have = since + r.element;
      if (have < need) add(Hazard::Kind::TooFewDelay, r.unit, need, have, "issues too soon after an ALU write");
    }
  }
  for (const Access& w : d.writes) {
    if (other_side(w.unit)) continue;
    const bool side_war = s.pside == 2 && s.pred_r.test(w.unit);  // the other lanes' read
    if (!ss && !side_war && s.war_ss.test(w.unit)) add(Hazard::Kind::MissingSs, w.unit, 0, 0, "overwrites a register a store/SFU/local op still reads");
    // either flag waits until the texture/load has read its sources; (ss) is the cheaper one
    if (!ss && !sy && !side_war && s.war_sy.test(w.unit)) add(Hazard::Kind::MissingSs, w.unit, 0, 0, "overwrites a register a texture/load still reads");
    if (!sy && s.sy.test(w.unit)) add(Hazard::Kind::MissingSy, w.unit, 0, 0, "overwrites a pending load result");
    if (!ss && s.ss.test(w.unit)) add(Hazard::Kind::MissingSs, w.unit, 0, 0, "overwrites a pending (ss) result");
  }
  return out;
}

}  // namespace

Effects effects(const Instr& in, bool merged_regs) {
  Info d = describe(in, merged_regs);
  Effects e;
  e.cat = d.cat;
  for (const Access& a : d.reads) {
    e.reads.push_back(a.unit);
    e.read_at.push_back(a.element + (d.mad && a.src_index == 2 ? kAluDelay - kAluDelayMadSrc3 : 0));
  }
  for (const Access& a : d.writes) {
    e.writes.push_back(a.unit);
    e.write_at.push_back(a.element);
  }
  e.counts = d.counts;
  for (const auto* v : {&d.reads, &d.writes})
    for (const Access& a : *v) {
      if (a.half_regid >= 0) e.half_regs.push_back(a.half_regid);
      else if (a.unit / 2 < kRegA0) e.full_regs.push_back(a.unit / 2);
    }
  e.ss_prod = d.ss_prod;
  e.sy_prod = d.sy_prod;
  e.store = d.store;
  e.mem_read = d.mem_read;
  e.is_branch = d.is_branch;
  e.is_jump = d.is_jump;
  e.is_end = d.is_end;
  e.target = d.target;
  e.len = d.len;
  e.nops = d.nops;
  return e;
}

std::string to_string(const Hazard& h) {
  std::string k = h.kind == Hazard::Kind::MissingSs ? "missing (ss)" : h.kind == Hazard::Kind::MissingSy ? "missing (sy)" : "too few delay slots";
  std::ostringstream o;
  o << "instruction " << h.index << ": " << k << " on " << h.reg << " (" << h.message;
  if (h.kind == Hazard::Kind::TooFewDelay) o << ": needs " << h.need << ", has " << h.have;
  o << "; written/read by instruction " << h.producer << ")";
  return o.str();
}

// An instruction's Info depends only on its word, the generation and the register-file mode,
// and ir3 opt checks and fixes many programs that differ in a few words (legalize's pruning
// checks the whole program once per flag it tries): the descriptions are kept per thread,
// dropped when the table grows past kMaxCached words.
static InfoCache& shared_cache(int gen, bool merged) {
  constexpr size_t kMaxCached = 1 << 18;
  static thread_local std::map<std::pair<int, bool>, InfoCache> caches;
  InfoCache& cache = caches[{gen, merged}];
  if (cache.size() > kMaxCached) cache.clear();
  return cache;
}

std::vector<Hazard> check_hazards(const std::vector<uint64_t>& prog, int gen, bool merged_regs) {
  Analysis a = analyse(prog, gen, merged_regs, &shared_cache(gen, merged_regs));
  std::vector<Hazard> out;
  for (size_t i = 0; i < prog.size(); ++i) {
    auto h = hazards_for(a.at[i], a.info[i], i);
    out.insert(out.end(), h.begin(), h.end());
  }
  return out;
}

// One pass: walk the program with the exact state along straight-line code, fixing each
// offending instruction; at a branch target reached after a fix the pass stops (its fixpoint
// state is stale) and the next pass re-analyses. Branches are re-targeted at the end of a pass.
// Without a backward branch one pass does it all: every way into a target comes before it, so
// the state there is the join of the (already fixed) fall-through and of the branches to it,
// collected as the walk passes them -- the same fixpoint the analysis would compute, without
// re-analysing once per fixed block (the largest fixture kernel has hundreds of them).
bool legalize(std::vector<uint64_t>& prog, int gen, bool merged_regs) {
  bool changed = false;
  InfoCache& cache = shared_cache(gen, merged_regs);
  auto info_of = [&](uint64_t w) {
    auto it = cache.find(w);
    if (it != cache.end()) return it->second;
    Info d = describe(decode(w, gen), merged_regs);
    cache.emplace(w, d);
    return d;
  };
  for (int pass = 0; pass < 10000; ++pass) {
    Analysis a = analyse(prog, gen, merged_regs, &cache);
    size_t n = prog.size();
    std::vector<bool> is_target(n + 1, false);
    for (size_t i = 0; i < n; ++i) {
      const Info& d = a.info[i];
      int64_t t = static_cast<int64_t>(i) + d.target;
      if ((d.is_branch || d.is_jump) && t >= 0 && t < static_cast<int64_t>(n)) is_target[static_cast<size_t>(t)] = true;
    }
    bool forward = true;  // no backward branch: one pass fixes everything (see above)
    for (size_t i = 0; i < n; ++i) {
      const Info& d = a.info[i];
      if ((d.is_branch || d.is_jump) && d.target <= 0) forward = false;
    }
    std::map<size_t, State> into;  // forward: the join of the branches seen so far, per target
    std::vector<uint64_t> out;
    std::vector<size_t> head(n), pos(n);
    State cur, prev_in;  // state after the last emitted instruction / reaching it
    bool fixed_any = false, stop = false;
    // after instruction i: its successors' states (forward mode)
    auto pass_on = [&](size_t i, const State& after) {
      const Info& d = a.info[i];
      if (!forward || !after.reached) return;
      const int64_t t = static_cast<int64_t>(i) + d.target;
      if ((d.is_branch || d.is_jump) && t > static_cast<int64_t>(i) && t < static_cast<int64_t>(n))
        into[static_cast<size_t>(t)].merge(after);
      if (d.is_jump || d.is_end) cur.reached = false;  // nothing falls through
    };
    for (size_t i = 0; i < n; ++i) {
      head[i] = out.size();
      if (!forward && !stop && fixed_any && is_target[i]) stop = true;
      if (stop) {
        pos[i] = out.size();
        out.push_back(prog[i]);
        continue;
      }
      State s;
      if (!forward) {
        s = (i == 0 || is_target[i] || !cur.reached) ? a.at[i] : cur;
      } else if (i == 0) {
        s = a.at[0];
      } else {
        s = cur;  // unreached after a jump/end
        if (auto it = into.find(i); it != into.end()) {
          s.merge(it->second);
          into.erase(it);
        }
      }
      std::vector<Hazard> hz = hazards_for(s, a.info[i], i);
      if (hz.empty()) {
        pos[i] = out.size();
        out.push_back(prog[i]);
        prev_in = s;
        if (s.reached) cur = transfer(s, a.info[i], i);
        else if (forward) cur = s;
        pass_on(i, cur);
        continue;
      }
      fixed_any = changed = true;
      bool need_ss = false, need_sy = false;
      int deficit = 0;
      for (const Hazard& h : hz) {
        if (h.kind == Hazard::Kind::MissingSs) need_ss = true;
        if (h.kind == Hazard::Kind::MissingSy) need_sy = true;
        if (h.kind == Hazard::Kind::TooFewDelay) deficit = std::max(deficit, h.need - h.have);
      }
      Instr in = a.info[i].in;
      if (need_sy) in = with_field(in, "SY", 1);
      std::vector<uint64_t> before;
      if (need_ss) {
        if (in.has("SS") && deficit == 0) {
          in = with_field(in, "SS", 1);
        } else {
          // one (ss)nop; it also fills one delay slot, (rptN) fills the rest
          int rpt = std::min(5, std::max(0, deficit - 1));
          before.push_back(encode(parse(rpt ? "(ss)(rpt" + std::to_string(rpt) + ")nop" : "(ss)nop", gen)));
          deficit = std::max(0, deficit - 1 - rpt);
        }
      }
      // Cheapest: (nopN) on the previous cat2/cat3 (no new instruction), when the previous
      // instruction is the only way into this one.
      if (deficit > 0 && before.empty() && i > 0 && !is_target[i] && prev_in.reached && !out.empty() &&
          pos[i - 1] == out.size() - 1) {
        Instr prev = decode(out.back(), gen);
        int cat = static_cast<int>(prev.bits >> 61);
        if ((cat == 2 || cat == 3) && prev.get_or("REPEAT", 1) == 0) {
          int have = static_cast<int>(prev.get("SRC1_R") | (prev.get("SRC2_R") << 1));
          int want = have + deficit;
          if (want <= 3) {
            prev = with_field(with_field(prev, "SRC1_R", want & 1), "SRC2_R", want >> 1);
            out.back() = prev.bits;
            s = transfer(prev_in, info_of(prev.bits), i - 1);
            deficit = 0;
          }
        }
      }
      while (deficit > 0) {
        int k = std::min(deficit, 6);
        before.push_back(encode(parse(k > 1 ? "(rpt" + std::to_string(k - 1) + ")nop" : "nop", gen)));
        deficit -= k;
      }
      for (uint64_t w : before) {
        out.push_back(w);
        s = transfer(s, info_of(w), i);
      }
      pos[i] = out.size();
      out.push_back(in.bits);
      prev_in = s;
      cur = transfer(s, info_of(in.bits), i);
      pass_on(i, cur);
    }
    if (!fixed_any) return changed;
    // re-target branches: a branch to old index t now lands on head[t] (inserted sync first)
    for (size_t j = 0; j < n; ++j) {
      const Info& d = a.info[j];
      if (!(d.is_branch || d.is_jump)) continue;
      int64_t t = static_cast<int64_t>(j) + d.target;
      if (t < 0 || t >= static_cast<int64_t>(n)) continue;
      int64_t off = static_cast<int64_t>(head[static_cast<size_t>(t)]) - static_cast<int64_t>(pos[j]);
      out[pos[j]] = (out[pos[j]] & ~0xffffffffull) | (static_cast<uint64_t>(off) & 0xffffffffull);
    }
    prog = std::move(out);
  }
  fail("ir3 legalize: did not converge");
}

}  // namespace opv::ir3
