// Static statistics and the issue-cycle cost model documented in passes.h.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

namespace {

bool immediate(const std::string& op, int64_t* v) {
  if (op.empty() || !(std::isdigit(static_cast<unsigned char>(op[0])) || op[0] == '-')) return false;
  char* end = nullptr;
  *v = std::strtoll(op.c_str(), &end, 0);
  return end && *end == '\0';
}

}  // namespace

int64_t trip_count(const Code& c, size_t head, size_t back) {
  // the test: cmps.s|u.ge p0.x, C, N with a `br p0.x` leaving [head, back], or cmps.s|u.lt
  // p0.x, C, N with the backward branch itself `br p0.x`
  std::vector<int64_t> pos = positions(c);
  int counter = -1, compare_at = -1;
  bool less = false;
  int64_t bound = 0;
  for (size_t i = head; i <= back; ++i) {
    Parts p = split(print(c.ins[i].in));
    bool ge = p.mnemonic == "cmps.s.ge" || p.mnemonic == "cmps.u.ge", lt = p.mnemonic == "cmps.s.lt" || p.mnemonic == "cmps.u.lt";
    if ((ge || lt) && p.operands.size() == 3 && p.operands[0] == "p0.x" && full_reg(p.operands[1]) >= 0 &&
        p.operands[1] == reg_name(full_reg(p.operands[1])) && immediate(p.operands[2], &bound)) {
      if (counter >= 0) return 1;  // two tests: not the simple form
      counter = full_reg(p.operands[1]), compare_at = static_cast<int>(i), less = lt;
    }
  }
  if (counter < 0) return 1;
  bool exits = false;
  for (size_t i = static_cast<size_t>(compare_at) + 1; i <= back; ++i) {
    const Ins& x = c.ins[i];
    Parts p = split(print(x.in));
    if (reg_written(x.fx, counter) || (p.mnemonic != "br" && !p.operands.empty() && p.operands[0] == "p0.x")) return 1;
    if (p.mnemonic == "br" && !p.operands.empty() && p.operands[0] == "p0.x" && x.target_id >= 0) {
      int64_t t = pos[static_cast<size_t>(x.target_id)];
      bool out = t < static_cast<int64_t>(head) || t > static_cast<int64_t>(back);
      exits = exits || (less ? (i == back && t == static_cast<int64_t>(head)) : out);
    }
  }
  // the step: the counter's only write in the body, add.u|s C, C, 1 before the test
  int steps = 0;
  for (size_t i = head; i <= back; ++i) {
    if (!reg_written(c.ins[i].fx, counter)) continue;
    Parts p = split(print(c.ins[i].in));
    int64_t one = 0;
    if (i > static_cast<size_t>(compare_at) || (p.mnemonic != "add.u" && p.mnemonic != "add.s") || p.operands.size() != 3 ||
        p.operands[0] != reg_name(counter) || p.operands[1] != reg_name(counter) || !immediate(p.operands[2], &one) || one != 1)
      return 1;
    ++steps;
  }
  // the start: the last write before the loop, mov.u32u32 C, K
  int64_t start = 0;
  size_t i = head;
  while (i-- > 0)
    if (reg_written(c.ins[i].fx, counter)) break;
  if (i >= head) return 1;
  Parts p = split(print(c.ins[i].in));
  if (p.mnemonic != "mov.u32u32" || p.operands.size() != 2 || !immediate(p.operands[1], &start)) return 1;
  if (!exits || steps != 1 || bound <= start) return 1;
  return bound - start;
}

namespace {

// Stats::mad_f32_serial: per region (Code::regions(), the straight-line runs rpt packs within),
// the ancestors (register producers, transitively) of every instruction as a bitset over the
// region; a single mad.f32 whose ancestors and descendants together hold every other mad.f32 of
// the region has no partner to pack with.
int serial_mads(const Code& c) {
  int serial = 0;
  for (auto [b, e] : c.regions()) {
    const size_t m = e - b, words = (m + 63) / 64;
    std::vector<uint64_t> anc(m * words, 0);
    std::vector<int> last(kUnitsMax, -1);
    std::vector<size_t> mads;  // the region's mad.f32 instructions ((rptN) groups included)
    for (size_t i = 0; i < m; ++i) {
      const Ins& x = c.ins[b + i];
      uint64_t* a = &anc[i * words];
      for (int u : x.fx.reads) {
        if (u < 0 || u >= kUnitsMax || last[static_cast<size_t>(u)] < 0) continue;
        const size_t j = static_cast<size_t>(last[static_cast<size_t>(u)]);
        const uint64_t* aj = &anc[j * words];
        for (size_t w = 0; w < words; ++w) a[w] |= aj[w];
        a[j / 64] |= uint64_t{1} << (j % 64);
      }
      for (int u : x.fx.writes)
        if (u >= 0 && u < kUnitsMax) last[static_cast<size_t>(u)] = static_cast<int>(i);
      if (x.in.name() == "mad.f32") mads.push_back(i);
    }
    for (size_t i : mads) {
      if (c.ins[b + i].in.get_or("REPEAT", 0) > 0) continue;  // a group's elements are partners
      bool alone = true;
      for (size_t j : mads) {
        if (j == i) continue;
        const size_t lo = std::min(i, j), hi = std::max(i, j);
        if (!((anc[hi * words + lo / 64] >> (lo % 64)) & 1)) {
          alone = false;
          break;
        }
      }
      serial += alone;
    }
  }
  return serial;
}

}  // namespace

int waves(int max_reg, int max_half_reg) {
  constexpr int kRegFileVec4 = 96, kGranularity = 2, kMaxWaves = 16;  // a6xx gen1 (a615/a618/a630)
  const int regs = std::max(0, max_reg + 1) + std::max(0, max_half_reg + 2) / 2;
  return regs == 0 ? kMaxWaves : std::min(kMaxWaves, kRegFileVec4 / regs * kGranularity);
}

Stats stats(const Code& c) {
  Stats s;
  s.mad_f32_serial = serial_mads(c);
  std::vector<int64_t> at;  // the cycle each instruction starts at (before its stall)
  int64_t t = 0, last_sy = -1000000, last_ss = -1000000;
  for (const Ins& x : c.ins) {
    const Instr& in = x.in;
    const std::string& n = in.name();
    int rep = static_cast<int>(in.get_or("REPEAT", 0));
    ++s.instructions;
    at.push_back(t);
    int64_t stall = 0;
    if (in.get_or("SY", 0)) stall = std::max<int64_t>(stall, last_sy + kSyLatency - t);
    if (in.get_or("SS", 0)) stall = std::max<int64_t>(stall, last_ss + kSsLatency - t);
    s.stall_cycles += stall;
    t += stall;
    if (n == "nop") {
      ++s.nop_instructions;
      s.nop_cycles += rep + 1;
      t += rep + 1;
      continue;
    }
    int len = x.fx.len > 0 ? x.fx.len : 1;
    s.issue_cycles += len;
    s.nop_cycles += x.fx.nops;
    if (x.fx.sy_prod) last_sy = t;
    if (x.fx.ss_prod) last_ss = t;
    t += len + x.fx.nops;
    if (n == "mad.f32") {
      s.mad_f32 += rep + 1;
      if (rep > 0) s.mad_f32_packed += rep + 1;
    }
    if (rep > 0 && x.fx.cat >= 1 && x.fx.cat <= 4) ++s.rpt_groups;
    for (int r : x.fx.full_regs)
      if (r < 48 * 4) s.max_reg = std::max(s.max_reg, r / 4);
    for (int r : x.fx.half_regs)
      if (r < 48 * 4) s.max_half_reg = std::max(s.max_half_reg, r / 4);
  }
  s.waves = waves(s.max_reg, s.max_half_reg);
  // counted loops: the body once more per further trip
  s.loop_cycles = s.cycles();
  std::vector<int64_t> pos = positions(c);
  for (size_t j = 0; j < c.ins.size() && at.size() == c.ins.size(); ++j) {
    const Ins& x = c.ins[j];
    if (!(x.fx.is_jump || x.fx.is_branch) || x.target_id < 0) continue;
    int64_t h = pos[static_cast<size_t>(x.target_id)];
    if (h < 0 || h > static_cast<int64_t>(j)) continue;
    int64_t trips = trip_count(c, static_cast<size_t>(h), j);
    int64_t body = (j + 1 < at.size() ? at[j + 1] : s.cycles()) - at[static_cast<size_t>(h)];
    s.loop_cycles += (trips - 1) * body;
    s.counted_loops += trips > 1;
  }
  return s;
}

Stats stats(const std::vector<uint64_t>& words, int gen) { return stats(Code(words, gen)); }

int64_t estimate_cycles(const std::vector<Ins>& run) {
  constexpr int kUnits = 768;  // register units of the effects (legalize.h)
  // t: issue cycles; c: delay slots filled (Effects::counts). An ALU result is ready by c: a
  // consumer issued before then needs nops, which fill slots; a sync stall only takes cycles.
  std::vector<int64_t> alu_ready(kUnits, 0), other_ready(kUnits, 0);
  std::vector<bool> sy(kUnits, false), ss(kUnits, false);
  int64_t t = 0, c = 0, last_sy = -1000000, last_ss = -1000000;
  for (const Ins& x : run) {
    const Effects& f = x.fx;
    if (x.in.name() == "nop") continue;
    const bool alu = f.cat >= 1 && f.cat <= 3;
    int64_t need = c;
    bool wait_sy = false, wait_ss = false;
    for (size_t k = 0; k < f.reads.size(); ++k) {
      const int u = f.reads[k];
      if (u < 0 || u >= kUnits) continue;
      const int64_t at = k < f.read_at.size() ? f.read_at[k] : 0;
      need = std::max(need, (alu ? alu_ready[size_t(u)] : other_ready[size_t(u)]) - at);
      wait_sy = wait_sy || sy[size_t(u)];
      wait_ss = wait_ss || ss[size_t(u)];
    }
    int64_t start = t + (need - c);
    c = need;
    if (wait_sy) start = std::max(start, last_sy + kSyLatency), std::fill(sy.begin(), sy.end(), false);
    if (wait_ss) start = std::max(start, last_ss + kSsLatency), std::fill(ss.begin(), ss.end(), false);
    if (f.sy_prod) last_sy = start;
    if (f.ss_prod) last_ss = start;
    for (size_t k = 0; k < f.writes.size(); ++k) {
      const int u = f.writes[k];
      if (u < 0 || u >= kUnits) continue;
      sy[size_t(u)] = f.sy_prod;
      ss[size_t(u)] = f.ss_prod;
      const int64_t at = c + 1 + (k < f.write_at.size() ? f.write_at[k] : 0);
      alu_ready[size_t(u)] = alu ? at + 3 : 0;
      other_ready[size_t(u)] = alu ? at + 6 : 0;
    }
    t = start + std::max(1, f.len);
    if (f.counts) c += std::max(1, f.len);
  }
  return t;
}

}  // namespace opv::ir3::passes
