// Static statistics and the issue-cycle cost model documented in passes.h.
#include <algorithm>

#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

Stats stats(const Code& c) {
  Stats s;
  int64_t t = 0, last_sy = -1000000, last_ss = -1000000;
  for (const Ins& x : c.ins) {
    const Instr& in = x.in;
    const std::string& n = in.name();
    int rep = static_cast<int>(in.get_or("REPEAT", 0));
    ++s.instructions;
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
