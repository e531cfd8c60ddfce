// Code: decode/emit with id-based branch targets, regions, and the assembler-text helpers.
#include "ir3/passes/code.h"

#include <algorithm>
#include <cstdint>
#include <cctype>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_map>

#include "core/error.h"
#include "ir3/semantics.h"

namespace opv::ir3::passes {

namespace {

bool is_marker(const Instr& in) {
  const std::string& n = in.name();
  int cat = static_cast<int>(in.bits >> 61);
  if (cat == 0) return n != "nop";
  if (cat == 7) return true;
  return n.rfind("atomic", 0) == 0;
}

}  // namespace

namespace {

// A decoded word and its effects in both register-file modes, remembered per thread: ir3 opt
// decodes the same words many times over (every candidate order's every stage is re-read, and
// legalize re-checks whole programs). decode() and effects() are functions of (word, gen) and
// (instruction, mode); words that do not decode are not remembered.
struct Decoded {
  Instr in;
  std::optional<Effects> fx[2];  // [merged_regs], computed when first asked for
};

Decoded* decoded(uint64_t word, int gen) {
  constexpr size_t kMaxCached = 1 << 18;
  static thread_local std::map<int, std::unordered_map<uint64_t, Decoded>> memo;
  std::unordered_map<uint64_t, Decoded>& m = memo[gen];
  auto it = m.find(word);
  if (it != m.end()) return &it->second;
  Instr in = decode(word, gen);
  if (!in.valid()) return nullptr;
  if (m.size() > kMaxCached) m.clear();
  return &m.emplace(word, Decoded{in, {}}).first->second;
}

}  // namespace

Instr decode_cached(uint64_t word, int gen) {
  const Decoded* d = decoded(word, gen);
  return d ? d->in : decode(word, gen);
}

Code::Code(const std::vector<uint64_t>& words, int g, bool merged) : gen(g), merged_regs(merged) {
  size_t last_end = words.size();
  std::vector<Instr> dec;
  for (size_t i = 0; i < words.size(); ++i) {
    const Decoded* d = decoded(words[i], gen);
    OPV_CHECK(d, "ir3 passes: instruction ", i, " does not decode");
    if (d->in.name() == "end") last_end = i;
    dec.push_back(d->in);
  }
  OPV_CHECK(last_end < words.size(), "ir3 passes: the program has no `end`");
  dec.resize(last_end + 1);
  for (size_t i = 0; i < dec.size(); ++i) {
    Ins x;
    x.in = dec[i];
    Decoded* d = decoded(words[i], gen);  // again: the table may have been dropped meanwhile
    std::optional<Effects>& fx = d->fx[merged_regs ? 1 : 0];
    if (!fx) fx = effects(x.in, merged_regs);
    x.fx = *fx;
    x.id = next_id_++;
    ins.push_back(x);
  }
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!(ins[i].fx.is_branch || ins[i].fx.is_jump)) continue;
    int64_t t = static_cast<int64_t>(i) + ins[i].fx.target;
    OPV_CHECK(t >= 0 && t < static_cast<int64_t>(ins.size()), "ir3 passes: instruction ", i, " branches outside the program");
    ins[i].target_id = ins[static_cast<size_t>(t)].id;
  }
}

std::vector<bool> Code::targets() const {
  std::vector<bool> t(static_cast<size_t>(next_id_), false);
  for (const Ins& x : ins)
    if (x.target_id >= 0) t[static_cast<size_t>(x.target_id)] = true;
  return t;
}

void Code::set(size_t i, const Instr& in) {
  ins[i].in = in;
  ins[i].fx = effects(in, merged_regs);
}

void Code::erase(size_t i) {
  OPV_CHECK(i + 1 < ins.size() || ins.empty(), "ir3 passes: cannot remove the last instruction");
  int from = ins[i].id, to = ins[i + 1].id;
  for (Ins& x : ins)
    if (x.target_id == from) x.target_id = to;
  ins.erase(ins.begin() + static_cast<ptrdiff_t>(i));
}

Ins Code::make(const Instr& in) {
  Ins x;
  x.in = in;
  x.fx = effects(in, merged_regs);
  x.id = next_id_++;
  return x;
}

std::vector<uint64_t> Code::emit() const {
  std::vector<int64_t> pos(static_cast<size_t>(next_id_), -1);
  for (size_t i = 0; i < ins.size(); ++i) pos[static_cast<size_t>(ins[i].id)] = static_cast<int64_t>(i);
  std::vector<uint64_t> out;
  for (size_t i = 0; i < ins.size(); ++i) {
    uint64_t w = ins[i].in.bits;
    if (ins[i].target_id >= 0) {
      int64_t t = pos[static_cast<size_t>(ins[i].target_id)];
      OPV_CHECK(t >= 0, "ir3 passes: a branch target was removed");
      int64_t off = t - static_cast<int64_t>(i);
      w = (w & ~uint64_t(0xffffffff)) | (static_cast<uint64_t>(off) & 0xffffffffu);  // cat0 offset: low 32 bits
      OPV_CHECK(decoded(w, gen), "ir3 passes: re-targeted branch does not decode");
    }
    out.push_back(w);
  }
  static thread_local std::map<int, uint64_t> nops;  // the padding word, assembled once per gen
  auto it = nops.find(gen);
  if (it == nops.end()) it = nops.emplace(gen, encode(parse("nop", gen))).first;
  const uint64_t nop = it->second;
  while (out.size() % 16) out.push_back(nop);
  return out;
}

std::vector<std::pair<size_t, size_t>> Code::regions() const {
  std::vector<bool> tg = targets();
  std::vector<std::pair<size_t, size_t>> out;
  size_t b = 0;
  for (size_t i = 0; i <= ins.size(); ++i) {
    bool cut = i == ins.size() || is_marker(ins[i].in) || tg[static_cast<size_t>(ins[i].id)];
    bool shared_write = false;
    if (i < ins.size())
      for (int u : ins[i].fx.writes) shared_write |= u >= 2 * 48 * 4 && u < 2 * 56 * 4;
    if (cut || shared_write) {
      if (i > b) out.emplace_back(b, i);
      // a branch target starts the next region; a marker is a region of its own (not reordered)
      b = (i < ins.size() && !is_marker(ins[i].in) && !shared_write) ? i : i + 1;
    }
  }
  return out;
}

// ------------------------------------------------------------------ text helpers

bool is_control(const Ins& x) {
  int cat = static_cast<int>(x.in.bits >> 61);
  const std::string& n = x.in.name();
  if (cat == 0) return n != "nop";
  if (cat == 7) return true;
  return n.rfind("atomic", 0) == 0;
}

// A write of a shared register r48-r55 (or hr48-hr55: units 512 + regid in a separate half file).
bool shared_write(const Ins& x) {
  for (int u : x.fx.writes)
    if ((u >= 2 * 48 * 4 && u < 2 * 56 * 4) || (u >= 512 + 48 * 4 && u < 512 + 56 * 4)) return true;
  return false;
}

bool is_pred_marker(const Ins& x) {
  const std::string& n = x.in.name();
  return n == "predt" || n == "predf" || n == "prede";
}

// Per index: inside a predicated construct (between predt/predf and prede), where a write
// happens only in some lanes.
std::vector<bool> predicated(const Code& c) {
  std::vector<bool> in(c.ins.size(), false);
  bool on = false;
  for (size_t i = 0; i < c.ins.size(); ++i) {
    const std::string& n = c.ins[i].in.name();
    if (n == "prede") on = false;
    in[i] = on && !is_pred_marker(c.ins[i]);
    if (n == "predt" || n == "predf") on = true;
  }
  return in;
}

// live-in set of every instruction (index order); a write inside a predicated construct does
// not kill (other lanes keep the old value); control flow we do not model keeps all live
std::vector<int64_t> positions(const Code& c) {
  int max_id = 0;
  for (const Ins& x : c.ins) max_id = std::max(max_id, x.id);
  std::vector<int64_t> pos(static_cast<size_t>(max_id) + 1, -1);
  for (size_t i = 0; i < c.ins.size(); ++i) pos[static_cast<size_t>(c.ins[i].id)] = static_cast<int64_t>(i);
  return pos;
}

Cfg control_flow(const Code& c) {
  const size_t n = c.ins.size();
  const std::vector<int64_t> pos = positions(c);
  Cfg g{std::vector<std::vector<size_t>>(n), std::vector<bool>(n, true)};
  for (size_t i = 0; i < n; ++i) {
    const Ins& x = c.ins[i];
    bool known = !is_control(x) || x.fx.is_branch || x.fx.is_jump || x.fx.is_end || is_pred_marker(x) ||
                 static_cast<int>(x.in.bits >> 61) == 7;
    int64_t t = x.target_id >= 0 ? pos[static_cast<size_t>(x.target_id)] : -1;
    if (!known || (x.target_id >= 0 && t < 0)) {
      g.modelled[i] = false;
      continue;
    }
    if (x.fx.is_end) continue;
    if (!x.fx.is_jump && i + 1 < n) g.succ[i].push_back(i + 1);
    if (t >= 0 && std::find(g.succ[i].begin(), g.succ[i].end(), static_cast<size_t>(t)) == g.succ[i].end())
      g.succ[i].push_back(static_cast<size_t>(t));
  }
  return g;
}

std::vector<Live> liveness(const Code& c) {
  size_t n = c.ins.size();
  const Cfg g = control_flow(c);
  std::vector<bool> pred = predicated(c);
  // What a write kills. A half write in the merged file (the default when the kernel's
  // mergedregs is not known) kills nothing: were the files in fact separate, the full register
  // that the half register would alias keeps its value, and keeping it live is safe either way.
  std::vector<std::vector<int>> kills(n);
  for (size_t i = 0; i < n; ++i) {
    const Ins& x = c.ins[i];
    kills[i] = x.fx.writes;
    if (!c.merged_regs || x.fx.half_regs.empty()) continue;
    std::vector<int> half, full;
    for (const RegUse& w : semantics(x.in).writes)
      for (int e = 0; e < w.elements; ++e)
        for (int k = 0; k < w.count; ++k) {
          int r = w.regid + k + (w.advancing ? e : 0);
          if (r >= kFullRegs) continue;
          if (w.half) half.push_back(r);
          else full.push_back(2 * r), full.push_back(2 * r + 1);
        }
    std::vector<int> keep;
    for (int u : x.fx.writes)
      if (std::find(half.begin(), half.end(), u) == half.end() || std::find(full.begin(), full.end(), u) != full.end()) keep.push_back(u);
    kills[i] = keep;
  }
  // A predicated construct `predt A [predf B] prede` (or starting at predf), everything inside
  // plain and straight (each instruction's only successor the next), runs A on some lanes and B
  // on the others. For the lanes running a section, liveness inside it is the ordinary one from
  // what is live after the construct (its writes kill: every such lane executes them); the other
  // lanes pass through it, needing what is live where their own section starts (for lanes that
  // skip A) or after the construct (for lanes done with A, inside B). A register both sections
  // write is therefore dead before the construct unless a section reads it first. Nothing inside
  // may write p0 (the lanes of B must be those that skipped A). Predicated code that is not such
  // a construct keeps the conservative rule: its writes kill nothing.
  std::vector<size_t> construct_end(n, SIZE_MAX), construct_mid(n, 0);  // at the first marker
  for (size_t i = 0; i < n; ++i) {
    const std::string& m = c.ins[i].in.name();
    if (m != "predt" && m != "predf") continue;
    size_t mid = 0, end = 0;
    bool ok = true;
    for (size_t k = i + 1; k < n && ok && !end; ++k) {
      const std::string& mk = c.ins[k].in.name();
      if (mk == "prede") end = k;
      else if ((mk == "predt" || mk == "predf") && mk != m && !mid) mid = k;
      else if (is_control(c.ins[k]) || !g.modelled[k] || g.succ[k] != std::vector<size_t>{k + 1}) ok = false;
      for (int u : c.ins[k].fx.writes) ok = ok && (u < 2 * kRegP0 || u >= 2 * (kRegP0 + 4));
    }
    if (!ok || !end) continue;
    construct_end[i] = end, construct_mid[i] = mid;
    i = end;
  }
  std::vector<size_t> construct_at(n, SIZE_MAX);  // prede -> its first marker
  for (size_t i = 0; i < n; ++i)
    if (construct_end[i] != SIZE_MAX) construct_at[construct_end[i]] = i;
  auto step = [&](Live cur, size_t k) {  // ordinary backward step over instruction k
    for (int u : kills[k])
      if (u < kUnitsMax) cur.reset(static_cast<size_t>(u));
    for (int u : c.ins[k].fx.reads)
      if (u < kUnitsMax) cur.set(static_cast<size_t>(u));
    return cur;
  };
  std::vector<Live> in(n);
  Live all;
  all.set();
  bool changed = true;
  auto set_in = [&](size_t i, const Live& live) {
    if (live != in[i]) in[i] = live, changed = true;
  };
  while (changed) {
    changed = false;
    for (size_t i = n; i-- > 0;) {
      if (construct_at[i] != SIZE_MAX) {  // a whole construct [first, i]
        const size_t first = construct_at[i], mid = construct_mid[first];
        Live after;
        for (size_t t : g.succ[i]) after |= in[t];
        set_in(i, after);
        const size_t a_end = mid ? mid : i;
        Live b_start = after;  // lanes of the second section, where it starts
        std::vector<Live> b_lanes;
        if (mid) {
          for (size_t k = i; k-- > mid + 1;) b_start = step(b_start, k), b_lanes.push_back(b_start);
          for (size_t k = mid + 1, q = b_lanes.size(); k < i; ++k) set_in(k, b_lanes[--q] | after);
          set_in(mid, b_start | after);
        }
        Live a_cur = after;
        for (size_t k = a_end; k-- > first + 1;) {
          a_cur = step(a_cur, k);
          set_in(k, mid ? a_cur | b_start : a_cur | after);
        }
        set_in(first, mid ? a_cur | b_start : a_cur | after);
        i = first;
        continue;
      }
      const Ins& x = c.ins[i];
      Live live;
      if (!g.modelled[i]) {
        live = all;
      } else if (!x.fx.is_end) {
        for (size_t t : g.succ[i]) live |= in[t];
        if (!pred[i])
          for (int u : kills[i])
            if (u < kUnitsMax) live.reset(static_cast<size_t>(u));
        for (int u : x.fx.reads)
          if (u < kUnitsMax) live.set(static_cast<size_t>(u));
      }
      set_in(i, live);
    }
  }
  return in;
}

std::string reg_name(int r, bool half) { return std::string(half ? "hr" : "r") + std::to_string(r / 4) + "." + "xyzw"[r % 4]; }

int plain_move(const Ins& x, int* src, std::string* imm) {
  if (x.fx.cat != 1 || x.in.name().rfind("mov-", 0) != 0 || x.in.get_or("REPEAT", 1) != 0) return -1;
  Parts p = split(print(x.in));
  bool half = p.mnemonic == "mov.u16u16";
  if ((!half && p.mnemonic != "mov.u32u32") || p.operands.size() != 2) return -1;
  if (p.operands[0].find('(') != std::string::npos) return -1;
  int d = half ? half_reg(p.operands[0]) : full_reg(p.operands[0]);
  if (d < 0 || d >= kFullRegs) return -1;
  const std::string& s = p.operands[1];
  *src = -1;
  imm->clear();
  if (!s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-')) {
    *imm = (half ? "h:" : "") + s;
  } else {
    if (half || s.find('(') != std::string::npos) return -1;
    *src = full_reg(s);
    if (*src < 0 || *src >= kFullRegs || *src == d) return -1;
  }
  return half ? kFullRegs + d : d;
}

std::vector<KnownRegs> known_values(const Code& c) {
  size_t n = c.ins.size();
  std::vector<KnownRegs> in(n, KnownRegs(kSlots));
  if (n == 0) return in;
  std::vector<bool> pred = predicated(c);
  std::vector<std::vector<size_t>> preds = flow(c).from;  // branches and jumps to each, then fall-through
  for (size_t i = 0; i + 1 < n; ++i)
    if (!c.ins[i].fx.is_jump && !c.ins[i].fx.is_end) preds[i + 1].push_back(i);
  // each instruction's own effect, once: forgotten registers, and the move it makes
  std::map<std::string, int> imm_ids;
  struct Effect {
    bool all = false;          // control flow we do not model
    std::vector<int> forget;   // registers written
    int def = -1;              // move destination
    Known fact;
  };
  std::vector<Effect> eff(n);
  for (size_t i = 0; i < n; ++i) {
    const Ins& x = c.ins[i];
    Effect& e = eff[i];
    e.all = is_control(x) && !(x.fx.is_branch || x.fx.is_jump || x.fx.is_end || is_pred_marker(x) || x.fx.cat == 7);
    for (int u : x.fx.writes) {
      // units (legalize.h): full regid n is units 2n, 2n+1; a merged half regid m is unit m; a
      // separate half regid m is unit 512 + m
      if (u < 2 * kFullRegs) {
        e.forget.push_back(u / 2);
        if (c.merged_regs && u < kFullRegs) e.forget.push_back(kFullRegs + u);
      } else if (!c.merged_regs && u >= 512 && u < 512 + kFullRegs) {
        e.forget.push_back(kFullRegs + (u - 512));
      }
    }
    std::sort(e.forget.begin(), e.forget.end());
    e.forget.erase(std::unique(e.forget.begin(), e.forget.end()), e.forget.end());
    int src;
    std::string imm;
    if (!pred[i] && (e.def = plain_move(x, &src, &imm)) >= 0) {
      e.fact.kind = src >= 0 ? Known::Copy : Known::Imm;
      e.fact.value = src >= 0 ? src : imm_ids.emplace(imm, static_cast<int>(imm_ids.size())).first->second;
      e.fact.tag = static_cast<int>(i);
    }
  }
  const KnownRegs unknown(kSlots, Known{Known::Unknown});
  std::vector<KnownRegs> out(n, KnownRegs(kSlots));
  auto equal = [](const KnownRegs& a, const KnownRegs& b) {
    for (size_t r = 0; r < a.size(); ++r)
      if (!a[r].same(b[r]) || a[r].tag != b[r].tag) return false;
    return true;
  };
  bool changed = true;
  for (int sweep = 0; changed; ++sweep) {
    OPV_CHECK(sweep < 1000, "ir3 passes: the known-value dataflow does not converge");
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      KnownRegs s = (i == 0 || preds[i].empty()) ? unknown : KnownRegs(kSlots);
      if (i > 0)
        for (size_t p : preds[i]) {
          const KnownRegs& o = out[p];
          for (size_t r = 0; r < s.size(); ++r) {
            const Known& a = o[r];
            Known& m = s[r];
            if (a.kind == Known::Top) continue;
            if (m.kind == Known::Top) m = a;
            else if (!m.same(a)) m = Known{Known::Unknown};
            else m.tag = std::max(m.tag, a.tag);
          }
        }
      KnownRegs o = eff[i].all ? unknown : s;
      if (!eff[i].all) {
        for (int r : eff[i].forget) {
          o[static_cast<size_t>(r)] = Known{Known::Unknown};
          for (Known& k : o)
            if (k.kind == Known::Copy && k.value == r) k = Known{Known::Unknown};
        }
        if (eff[i].def >= 0) o[static_cast<size_t>(eff[i].def)] = eff[i].fact;
      }
      if (!equal(s, in[i])) in[i] = std::move(s), changed = true;
      if (!equal(o, out[i])) out[i] = std::move(o), changed = true;
    }
  }
  return in;
}

namespace {

bool unit_of(const std::vector<int>& units, int reg) {
  for (int u : units)
    if (u < 2 * kFullRegs && u / 2 == reg) return true;
  return false;
}

}  // namespace

bool reg_touched(const Effects& f, int reg) { return unit_of(f.reads, reg) || unit_of(f.writes, reg); }
bool reg_written(const Effects& f, int reg) { return unit_of(f.writes, reg); }
bool reg_read(const Effects& f, int reg) { return unit_of(f.reads, reg); }
bool reg_live(const Live& l, int reg) { return l.test(static_cast<size_t>(2 * reg)) || l.test(static_cast<size_t>(2 * reg + 1)); }

bool scalar_alu(const Ins& x) {
  if (x.fx.cat < 1 || x.fx.cat > 3 || x.in.get_or("REPEAT", 1) != 0) return false;
  return x.fx.cat != 1 || x.in.name().rfind("mov-", 0) == 0;
}

bool rename_at(const Ins& x, const std::vector<int>& to, int gen, Instr* out) {
  Parts p = split(print(x.in));
  for (size_t k = 0; k < p.operands.size() && k < to.size(); ++k) {
    if (to[k] < 0) continue;
    std::string& op = p.operands[k];
    if (full_reg(op) < 0 || op.find("(r)") != std::string::npos || op.find('<') != std::string::npos) return false;
    op = op.substr(0, op.rfind('r')) + reg_name(to[k]);
  }
  return assemble(p, x.in, gen, out);
}

bool assemble(const Parts& p, const Instr& like, int gen, Instr* out) {
  std::string text = p.flags + p.mnemonic;
  for (size_t k = 0; k < p.operands.size(); ++k) text += (k ? ", " : " ") + p.operands[k];
  Instr re;
  try {
    re = parse(text, gen);
  } catch (const Error&) {
    return false;
  }
  if (!re.valid() || re.name() != like.name()) return false;
  *out = re;
  return true;
}

bool rename_operands(const Ins& x, int from, int to, size_t first, size_t last, int gen, Instr* out) {
  Parts p = split(print(x.in));
  std::vector<int> at(p.operands.size(), -1);
  bool any = false;
  for (size_t k = first; k < p.operands.size() && k < last; ++k)
    if (full_reg(p.operands[k]) == from) at[k] = to, any = true;
  return any && rename_at(x, at, gen, out);
}

Flow flow(const Code& c) {
  Flow f;
  f.pos = positions(c);
  f.from.resize(c.ins.size());
  for (size_t k = 0; k < c.ins.size(); ++k)
    if (c.ins[k].target_id >= 0 && f.pos[static_cast<size_t>(c.ins[k].target_id)] >= 0)
      f.from[static_cast<size_t>(f.pos[static_cast<size_t>(c.ins[k].target_id)])].push_back(k);
  return f;
}

bool plain_ins(const Ins& x) { return !is_control(x) && !shared_write(x) && !x.in.get_or("JP", 0); }

bool diamond_at(const Code& c, const Flow& f, size_t i, Diamond* d) {
  const Ins& x = c.ins[i];
  if (x.in.name() != "br" || x.in.get_or("JP", 0) || x.target_id < 0) return false;
  auto target_of = [&](size_t k) { return f.pos[static_cast<size_t>(c.ins[k].target_id)]; };
  const int64_t t = target_of(i);
  if (t <= static_cast<int64_t>(i) + 1) return false;
  d->br = i, d->t = static_cast<size_t>(t), d->j = d->t, d->has_else = false;
  size_t then_end = d->t;
  const Ins& last = c.ins[d->t - 1];
  if (last.fx.is_jump && last.in.name() == "jump" && !last.in.get_or("JP", 0) && last.target_id >= 0) {
    const int64_t j = target_of(d->t - 1);
    if (j < static_cast<int64_t>(d->t) || d->t - 1 == i) return false;
    d->j = static_cast<size_t>(j), d->has_else = true, then_end = d->t - 1;
  }
  if (d->j >= c.ins.size()) return false;
  for (size_t k = i + 1; k < then_end; ++k)
    if (!plain_ins(c.ins[k]) || !f.from[k].empty()) return false;
  for (size_t k = d->t; k < d->j; ++k)
    if (!plain_ins(c.ins[k]) || f.from[k].size() > (k == d->t ? 1u : 0u)) return false;
  if (d->has_else && f.from[d->t].size() != 1) return false;
  return !c.ins[d->j].in.get_or("JP", 0);
}

bool closed_range(const Code& c, const Flow& f, size_t d, size_t last, std::vector<size_t>* exits) {
  exits->clear();
  if (!c.ins[last].fx.is_jump) exits->push_back(last + 1);
  for (size_t k = d + 1; k <= last; ++k) {
    const Ins& x = c.ins[k];
    for (size_t s : f.from[k])
      if (s < d || s > last) return false;
    if (is_control(x) && !(x.fx.is_branch || x.fx.is_jump || is_pred_marker(x))) return false;
    if (x.target_id >= 0) {
      size_t t = static_cast<size_t>(f.pos[static_cast<size_t>(x.target_id)]);
      if (t <= d || t > last) exits->push_back(t);
    }
  }
  return true;
}

bool free_over(const Code& c, const std::vector<Live>& live, size_t d, size_t last, const std::vector<size_t>& exits, int f) {
  for (size_t k = d; k <= last; ++k)
    if (reg_touched(c.ins[k].fx, f) || (k > d && reg_live(live[k], f))) return false;
  for (size_t e : exits)
    if (e < live.size() && reg_live(live[e], f)) return false;
  return true;
}

bool rename_value(const Code& c, size_t def, const std::vector<size_t>& readers, int from, int to,
                  std::vector<std::pair<size_t, Instr>>* edits) {
  edits->clear();
  Instr re;
  if (!rename_operands(c.ins[def], from, to, 0, 1, c.gen, &re)) return false;
  edits->emplace_back(def, re);
  for (size_t k : readers) {
    if (!rename_operands(c.ins[k], from, to, 1, SIZE_MAX, c.gen, &re)) {
      edits->clear();
      return false;
    }
    edits->emplace_back(k, re);
  }
  return true;
}

Parts split(const std::string& text) {
  Parts p;
  size_t i = 0;
  while (i < text.size() && (text[i] == '(' || text[i] == ' ')) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    size_t j = text.find(')', i);
    if (j == std::string::npos) break;
    p.flags += text.substr(i, j + 1 - i);
    i = j + 1;
  }
  size_t sp = text.find(' ', i);
  p.mnemonic = text.substr(i, sp == std::string::npos ? std::string::npos : sp - i);
  if (sp == std::string::npos) return p;
  std::string rest = text.substr(sp + 1);
  size_t s = 0;
  for (;;) {
    size_t c = rest.find(", ", s);
    p.operands.push_back(rest.substr(s, c == std::string::npos ? std::string::npos : c - s));
    if (c == std::string::npos) break;
    s = c + 2;
  }
  return p;
}

namespace {

// Parses "[prefixes](h)r12.x" / "c3.y": prefix text, kind ('r', 'h' for hr, 'c'), index, component.
bool parse_reg(const std::string& op, std::string& prefix, char& kind, int& n, int& c) {
  size_t i = 0;
  while (i < op.size() && op[i] == '(') {
    size_t j = op.find(')', i);
    if (j == std::string::npos) return false;
    i = j + 1;
  }
  prefix = op.substr(0, i);
  std::string r = op.substr(i);
  size_t k = 0;
  if (r.rfind("hr", 0) == 0) kind = 'h', k = 2;
  else if (r.rfind("r", 0) == 0) kind = 'r', k = 1;
  else if (r.rfind("c", 0) == 0) kind = 'c', k = 1;
  else return false;
  size_t dot = r.find('.', k);
  if (dot == std::string::npos || dot == k || dot + 2 != r.size()) return false;
  for (size_t q = k; q < dot; ++q)
    if (!std::isdigit(static_cast<unsigned char>(r[q]))) return false;
  n = std::stoi(r.substr(k, dot - k));
  const char* comps = "xyzw";
  const char* f = std::strchr(comps, r[dot + 1]);
  if (!f || !*f) return false;
  c = static_cast<int>(f - comps);
  return true;
}

}  // namespace

std::string advance(const std::string& op, int k) {
  std::string prefix;
  char kind;
  int n, c;
  if (!parse_reg(op, prefix, kind, n, c)) return "";
  int id = n * 4 + c + k;
  if (id < 0) return "";
  if (kind != 'c' && (n >= 48 || id / 4 >= 48)) return "";
  std::string out = prefix + (kind == 'h' ? "hr" : kind == 'r' ? "r" : "c") + std::to_string(id / 4) + "." + "xyzw"[id % 4];
  return out;
}

bool is_gpr(const std::string& op) {
  std::string prefix;
  char kind;
  int n, c;
  return parse_reg(op, prefix, kind, n, c) && kind != 'c' && n < 48;
}

int half_reg(const std::string& op) {
  std::string prefix;
  char kind;
  int n, comp;
  if (!parse_reg(op, prefix, kind, n, comp) || kind != 'h' || n >= 48) return -1;
  return n * 4 + comp;
}

int full_reg(const std::string& op) {
  std::string prefix;
  char kind;
  int n, c;
  return parse_reg(op, prefix, kind, n, c) && kind == 'r' && n < 48 ? n * 4 + c : -1;
}

}  // namespace opv::ir3::passes
