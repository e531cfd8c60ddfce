// accum: give each accumulator one register for its whole life, with the accumulators that one
// instruction pattern updates side by side in consecutive registers, so the rpt pass can pack
// their updates into (rptN) groups.
//
// Mesa's allocator assigns a register per value, not per accumulator: in a convolution loop the
// sixteen `mad.f32 acc, w, x, acc` chains wander through whatever register is free -- a chain's
// next value lands in the register of a texel component it has just read
// (`mad r8.x, r10.w, r8.x, r4.y`), and moves at the loop's back edge (`mov r4.z, r9.y`) put the
// values back where the loop head reads them. No four accumulators stay consecutive, so nothing
// packs. This pass re-colours those values.
//
// Steps, over the whole kernel:
//   (1) (rptN) ALU instructions are split into their elements (element k of `(rpt3)add.f r7.x,
//       (r)r7.x, (r)r8.x` is `add.f r7.x+k, r7.x+k, r8.x+k`), unless an element reads what an
//       earlier one writes; rpt packs again afterwards what stays consecutive;
//   (2) webs: every read of a full register component is joined (union-find) with every write
//       that reaches it along the control-flow graph; a write inside a predicated construct does
//       not end the web it lands in (other lanes keep the old value). A web is *pinned* (keeps
//       its register) when an instruction that is not a plain scalar ALU/SFU instruction touches
//       it (texture and memory operands, vector moves), when it is live at the kernel's entry
//       (the ids the hardware delivers), or when a half register aliases it;
//   (3) classes: a web joins the web it was computed from when that one dies there, for moves
//       and for a mad's third source (the accumulator) -- provided no two of the class's webs
//       are ever live at once (one register can then carry the whole class);
//   (4) chains: two instructions of one region with the same opcode vote for the links their
//       operands need to become elements 0 and 1 of one (rpt1): per operand the same text, the
//       next component of a pinned register or constant, or a value of class A in the first and
//       of class B in the second (B right after A; one of them may be pinned: an anchor). Votes
//       inside a loop count kLoopVote times. Links between movable classes first, then anchors,
//       each by votes, form chains of up to 4 classes with at most one anchor;
//   (5) each chain (most votes first) gets the lowest run of consecutive components (fixed by
//       its anchor, if any) that no other web occupies wherever a member class lives or is
//       touched, and where a member's write would not follow another value's texture/SFU read
//       of that register within kAsyncWindow instructions (nor another value's write follow a
//       member's such read): a new write-after-read wait ((ss)/(sy)). The kernel's footprint
//       may grow by kGrowRegs registers where nothing lower is free (the driver patches it). A
//       chain already consecutive stays; one that finds no place is retried in parts;
//   (6) every operand of a moved web is renamed (re-assembled from Mesa syntax) and the moves a
//       class now makes onto itself (`mov.u32u32 R, R`) are removed.
// Nothing is keyed to kernel names or instruction positions. Progress: true when a chain moved.
#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

namespace {

constexpr int kR = kFullRegs;  // r0.x .. r47.w
constexpr int kGrowRegs = 4;
constexpr int kMaxChain = 4;
constexpr size_t kWindow = 48;
constexpr size_t kAsyncWindow = 12;  // instructions within which a write-after-read would wait
constexpr int kLoopVote = 16;

// (1) Splits (rptN) cat1 moves and cat2/cat3 instructions into their elements.
void split_repeats(Code& c) {
  for (size_t i = 0; i < c.ins.size(); ++i) {
    const Ins& x = c.ins[i];
    int rpt = static_cast<int>(x.in.get_or("REPEAT", 0));
    if (rpt <= 0 || x.fx.cat < 1 || x.fx.cat > 3) continue;
    if (x.fx.cat == 1 && x.in.name().rfind("mov-", 0) != 0) continue;
    Parts p = split(print(x.in));
    if (p.operands.size() < 2 || full_reg(p.operands[0]) < 0) continue;
    std::string flags, rest_flags;
    for (size_t a = 0; a < p.flags.size();) {
      size_t b = p.flags.find(')', a) + 1;
      std::string f = p.flags.substr(a, b - a);
      a = b;
      if (f.rfind("(rpt", 0) == 0 || f.rfind("(nop", 0) == 0) continue;
      flags += f;
      if (f != "(sy)" && f != "(ss)" && f != "(jp)") rest_flags += f;
    }
    std::vector<Instr> el;
    std::set<int> written;
    bool ok = true;
    for (int k = 0; k <= rpt && ok; ++k) {
      std::string text = (k ? rest_flags : flags) + p.mnemonic;
      for (size_t s = 0; s < p.operands.size() && ok; ++s) {
        std::string op = p.operands[s];
        size_t r = op.find("(r)");
        if (s == 0 || r != std::string::npos) {
          if (r != std::string::npos) op.erase(r, 3);
          op = passes::advance(op, k);
          if (op.empty()) ok = false;
        }
        if (s > 0 && written.count(full_reg(op))) ok = false;  // reads an earlier element's result
        text += (s ? ", " : " ") + op;
      }
      if (!ok) break;
      written.insert(full_reg(passes::advance(p.operands[0], k)));
      try {
        Instr in = parse(text, c.gen);
        ok = in.valid() && in.name() == x.in.name() && in.get_or("REPEAT", 0) == 0;
        el.push_back(in);
      } catch (const Error&) {
        ok = false;
      }
    }
    if (!ok) continue;
    c.set(i, el[0]);
    std::vector<Ins> more;
    for (size_t k = 1; k < el.size(); ++k) more.push_back(c.make(el[k]));
    c.ins.insert(c.ins.begin() + static_cast<ptrdiff_t>(i) + 1, more.begin(), more.end());
    i += more.size();
  }
}

// Whether every full register x touches is a plain operand of a scalar ALU/SFU instruction.
bool renamable(const Ins& x, const Parts& p) {
  if (x.in.get_or("REPEAT", 1) != 0) return false;
  if (!scalar_alu(x) && !(x.fx.cat == 4 && x.fx.writes.size() <= 2)) return false;
  std::set<int> named;
  for (const std::string& op : p.operands) {
    if (op.find('<') != std::string::npos || op.find("(r)") != std::string::npos) return false;
    if (int r = full_reg(op); r >= 0) named.insert(r);
  }
  for (const std::vector<int>* v : {&x.fx.reads, &x.fx.writes})
    for (int u : *v)
      if (u < 2 * kR && !named.count(u / 2)) return false;
  return true;
}

struct UnionFind {
  std::vector<int> up;
  int add() {
    up.push_back(static_cast<int>(up.size()));
    return up.back();
  }
  int find(int a) {
    while (up[static_cast<size_t>(a)] != a) a = up[static_cast<size_t>(a)] = up[static_cast<size_t>(up[static_cast<size_t>(a)])];
    return a;
  }
  bool unite(int a, int b) {
    a = find(a), b = find(b);
    if (a == b) return false;
    up[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
    return true;
  }
};

struct Occ {
  int reg;   // full component, as the input names it
  int web;   // web id (dense)
  bool def;
};

}  // namespace

bool accum(Code& code) {
  for (const Ins& x : code.ins)
    if (print(x.in).find("<a0") != std::string::npos) return false;  // relative access reaches any register
  Code c = code;
  split_repeats(c);
  const size_t n = c.ins.size();
  if (n < 2) return false;

  // control flow: successors; anything we do not model ends the pass
  std::vector<int64_t> pos = positions(c);
  const Cfg cfg = control_flow(c);
  if (std::find(cfg.modelled.begin(), cfg.modelled.end(), false) != cfg.modelled.end()) return false;
  const std::vector<std::vector<size_t>>& succ = cfg.succ;
  std::vector<std::vector<size_t>> preds(n);
  for (size_t p = 0; p < n; ++p)
    for (size_t s : succ[p]) preds[s].push_back(p);
  const std::vector<bool> pred = predicated(c);
  std::vector<Parts> parts(n);
  std::vector<bool> ren(n);
  for (size_t p = 0; p < n; ++p) parts[p] = split(print(c.ins[p].in)), ren[p] = renamable(c.ins[p], parts[p]);

  // (2) webs. Nodes 0..kR-1: the value at entry; then one node per (instruction, written component).
  auto comps = [](const std::vector<int>& units) {
    std::vector<int> r;
    for (int u : units)
      if (u < 2 * kR && std::find(r.begin(), r.end(), u / 2) == r.end()) r.push_back(u / 2);
    return r;
  };
  const std::vector<Live> live = liveness(c);
  UnionFind uf;
  for (int r = 0; r < kR; ++r) uf.add();
  std::vector<std::vector<std::pair<int, int>>> def_node(n);  // (component, node)
  for (size_t p = 0; p < n; ++p)
    for (int r : comps(c.ins[p].fx.writes)) def_node[p].emplace_back(r, uf.add());
  std::vector<int> out_node(n * kR, -1), in_node(n * kR, -1);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t p = 0; p < n; ++p) {
      int* in = &in_node[p * kR];
      for (int r = 0; r < kR; ++r) {
        int v = p == 0 ? r : -1;
        for (size_t q : preds[p]) {
          int o = out_node[q * kR + static_cast<size_t>(r)];
          if (o < 0) continue;
          if (v < 0) v = o;
          else if (reg_live(live[p], r)) changed |= uf.unite(v, o);  // values that meet here and are read later
        }
        if (in[r] != v) in[r] = v, changed = true;
      }
      int* out = &out_node[p * kR];
      std::copy(in, in + kR, out);
      for (auto [r, d] : def_node[p]) {
        if (pred[p] && in[r] >= 0 && reg_live(live[p + 1 < n ? p + 1 : p], r)) changed |= uf.unite(d, in[r]);
        out[r] = d;
      }
    }
  }
  // dense web ids
  std::map<int, int> dense;
  auto web_of = [&](int node) {
    int root = uf.find(node);
    auto it = dense.find(root);
    if (it != dense.end()) return it->second;
    int id = static_cast<int>(dense.size());
    dense[root] = id;
    return id;
  };
  std::vector<std::vector<Occ>> occ(n);
  for (size_t p = 0; p < n; ++p) {
    for (int r : comps(c.ins[p].fx.reads)) {
      int nd = in_node[p * kR + static_cast<size_t>(r)];
      if (nd < 0) return false;  // unreachable code reading a register: leave the kernel alone
      occ[p].push_back({r, web_of(nd), false});
    }
    for (auto [r, d] : def_node[p]) occ[p].push_back({r, web_of(d), true});
  }
  std::vector<int> in_web(n * kR, -1), out_web(n * kR, -1);
  for (size_t p = 0; p < n; ++p)
    for (int r = 0; r < kR; ++r)
      if (reg_live(live[p], r) && in_node[p * kR + static_cast<size_t>(r)] >= 0) in_web[p * kR + static_cast<size_t>(r)] = web_of(in_node[p * kR + static_cast<size_t>(r)]);
  for (size_t p = 0; p < n; ++p)
    for (size_t s : succ[p])
      for (int r = 0; r < kR; ++r)
        if (int w = in_web[s * kR + static_cast<size_t>(r)]; w >= 0) out_web[p * kR + static_cast<size_t>(r)] = w;
  const int webs = static_cast<int>(dense.size());
  std::vector<int> reg(static_cast<size_t>(webs), -1);  // where each web is now (orig: where the code had it)
  std::vector<bool> pinned(static_cast<size_t>(webs), false);
  std::vector<bool> half_alias(kR, false);
  if (c.merged_regs)
    for (const Ins& x : c.ins)
      for (int h : x.fx.half_regs)
        if (h < 2 * kR) half_alias[static_cast<size_t>(h >> 1)] = true;
  for (size_t p = 0; p < n; ++p)
    for (const Occ& o : occ[p]) {
      reg[static_cast<size_t>(o.web)] = o.reg;
      if (!ren[p] || half_alias[static_cast<size_t>(o.reg)]) pinned[static_cast<size_t>(o.web)] = true;
    }
  for (int r = 0; r < kR; ++r)
    if (reg_live(live[0], r)) pinned[static_cast<size_t>(web_of(r))] = true;
  for (size_t p = 0; p < n; ++p)  // webs seen only as live (never touched) keep their register too
    for (int r = 0; r < kR; ++r)
      if (int w = in_web[p * kR + static_cast<size_t>(r)]; w >= 0 && reg[static_cast<size_t>(w)] < 0)
        reg[static_cast<size_t>(w)] = r, pinned[static_cast<size_t>(w)] = true;
  const std::vector<int> orig = reg;

  // where each web lives: points where it is live in, live out, or touched
  std::vector<std::vector<size_t>> span(static_cast<size_t>(webs));
  for (size_t p = 0; p < n; ++p) {
    std::set<int> here;
    for (int r = 0; r < kR; ++r) {
      if (int w = in_web[p * kR + static_cast<size_t>(r)]; w >= 0) here.insert(w);
      if (int w = out_web[p * kR + static_cast<size_t>(r)]; w >= 0) here.insert(w);
    }
    for (const Occ& o : occ[p]) here.insert(o.web);
    for (int w : here) span[static_cast<size_t>(w)].push_back(p);
  }

  // (3) classes
  UnionFind cls;
  for (int w = 0; w < webs; ++w) cls.add();
  std::vector<std::vector<int>> members(static_cast<size_t>(webs));
  for (int w = 0; w < webs; ++w) members[static_cast<size_t>(w)] = {w};
  // no two webs of a set live at once, and a write of one never lands on another that lives on
  auto compatible = [&](const std::vector<int>& set) {
    std::map<size_t, std::vector<int>> at;
    for (int w : set)
      for (size_t p : span[static_cast<size_t>(w)]) at[p].push_back(w);
    for (auto& [p, ws] : at) {
      if (ws.size() < 2) continue;
      int nin = 0, nout = 0;
      std::set<int> defs, outs;
      for (int w : ws) {
        int r = reg[static_cast<size_t>(w)];
        nin += in_web[p * kR + static_cast<size_t>(r)] == w;
        if (out_web[p * kR + static_cast<size_t>(r)] == w) ++nout, outs.insert(w);
      }
      for (const Occ& o : occ[p])
        if (o.def && std::find(ws.begin(), ws.end(), o.web) != ws.end()) defs.insert(o.web);
      if (nin > 1 || nout > 1 || defs.size() > 1) return false;
      if (!defs.empty())
        for (int w : outs)
          if (!defs.count(w)) return false;
    }
    return true;
  };
  auto use_web = [&](size_t p, int r) {
    for (const Occ& o : occ[p])
      if (!o.def && o.reg == r) return o.web;
    return -1;
  };
  auto def_web = [&](size_t p, int r) {
    for (const Occ& o : occ[p])
      if (o.def && o.reg == r) return o.web;
    return -1;
  };
  for (size_t p = 0; p < n; ++p) {
    if (!ren[p] || pred[p]) continue;
    const Parts& pp = parts[p];
    int d = pp.operands.empty() ? -1 : full_reg(pp.operands[0]);
    if (d < 0) continue;
    int s = -1;
    if (pp.mnemonic == "mov.u32u32" || pp.mnemonic == "mov.f32f32") {
      if (pp.operands.size() == 2 && full_reg(pp.operands[1]) >= 0 && pp.operands[1] == reg_name(full_reg(pp.operands[1])))
        s = full_reg(pp.operands[1]);
    } else if (c.ins[p].fx.cat == 3 && pp.mnemonic.rfind("mad", 0) == 0 && pp.operands.size() == 4) {
      s = full_reg(pp.operands[3]);
    }
    if (s < 0) continue;
    int ws = use_web(p, s), wd = def_web(p, d);
    if (ws < 0 || wd < 0 || pinned[static_cast<size_t>(ws)] || pinned[static_cast<size_t>(wd)]) continue;
    if (out_web[p * kR + static_cast<size_t>(s)] == ws) continue;  // the source lives on
    int a = cls.find(ws), b = cls.find(wd);
    if (a == b) continue;
    std::vector<int> set = members[static_cast<size_t>(a)];
    set.insert(set.end(), members[static_cast<size_t>(b)].begin(), members[static_cast<size_t>(b)].end());
    if (!compatible(set)) continue;
    cls.unite(a, b);
    members[static_cast<size_t>(cls.find(a))] = set;
  }
  auto movable = [&](int k) {
    for (int w : members[static_cast<size_t>(k)])
      if (pinned[static_cast<size_t>(w)]) return false;
    return true;
  };
  // the one register every web of class k has (a pinned class can anchor a chain), or -1
  auto fixed_reg = [&](int k) {
    int r = reg[static_cast<size_t>(members[static_cast<size_t>(k)][0])];
    for (int w : members[static_cast<size_t>(k)])
      if (reg[static_cast<size_t>(w)] != r) return -1;
    return r;
  };

  // (4) chains from votes
  // A pair of instructions (i, j) votes for every link its operands need to become elements 0 and
  // 1 of one (rpt1): per operand, the same text, the next component of a pinned register or
  // constant, or the value of a movable class A in i and of another movable class B in j (the
  // link A -> B: B must sit right after A).
  // Votes inside a loop count kLoopVote times: the loop's links are the ones worth having.
  std::map<std::pair<int, int>, int> votes;
  auto prefix = [](const std::string& op) { return op.substr(0, op.rfind('r')); };
  std::vector<int> weight(n, 1);
  for (size_t j = 0; j < n; ++j)
    if ((c.ins[j].fx.is_jump || c.ins[j].fx.is_branch) && c.ins[j].target_id >= 0) {
      int64_t h = pos[static_cast<size_t>(c.ins[j].target_id)];
      for (int64_t q = h; q >= 0 && q <= static_cast<int64_t>(j); ++q) weight[static_cast<size_t>(q)] = kLoopVote;
    }
  for (auto [b, e] : c.regions())
    for (size_t i = b; i < e; ++i) {
      if (!ren[i] || c.ins[i].fx.cat < 1 || c.ins[i].fx.cat > 3) continue;
      const Parts& pi = parts[i];
      if (pi.operands.size() < 2 || full_reg(pi.operands[0]) < 0) continue;
      for (size_t j = i + 1; j < e && j < i + kWindow; ++j) {
        const Parts& pj = parts[j];
        if (!ren[j] || pj.mnemonic != pi.mnemonic || pj.operands.size() != pi.operands.size() || full_reg(pj.operands[0]) < 0)
          continue;
        std::vector<std::pair<int, int>> links;
        bool ok = true;
        for (size_t s = 0; s < pi.operands.size() && ok; ++s) {
          const std::string &a = pi.operands[s], &x = pj.operands[s];
          int ra = full_reg(a), rx = full_reg(x);
          if (ra >= 0 && rx >= 0) {
            int wa = s == 0 ? def_web(i, ra) : use_web(i, ra), wx = s == 0 ? def_web(j, rx) : use_web(j, rx);
            if (wa < 0 || wx < 0) {
              ok = false;
              break;
            }
            int ka = cls.find(wa), kx = cls.find(wx);
            if (ka == kx) {
              ok = s > 0;  // the same value read by both
            } else if (movable(ka) && movable(kx)) {
              ok = prefix(a) == prefix(x);
              links.emplace_back(ka, kx);
            } else if (movable(ka) != movable(kx)) {  // next to a value that keeps its register
              ok = prefix(a) == prefix(x) && fixed_reg(movable(ka) ? kx : ka) >= 0;
              links.emplace_back(ka, kx);
            } else {
              ok = x == passes::advance(a, 1);
            }
          } else {
            ok = ra < 0 && rx < 0 && (x == a || (!passes::advance(a, 1).empty() && x == passes::advance(a, 1)));
          }
        }
        if (!ok || links.empty()) continue;
        for (auto l : links) votes[l] += weight[i];
      }
    }
  std::vector<std::tuple<int, int, int>> edges;
  // links between two movable classes first, then links to a pinned one; each by its votes
  for (auto& [ab, v] : votes) edges.emplace_back(-v, ab.first, ab.second);
  std::stable_sort(edges.begin(), edges.end(), [&](const auto& x, const auto& y) {
    bool ax = !movable(std::get<1>(x)) || !movable(std::get<2>(x)), ay = !movable(std::get<1>(y)) || !movable(std::get<2>(y));
    return ax != ay ? ay : x < y;
  });
  std::map<int, int> next, prev;
  auto head = [&](int k) {
    while (prev.count(k)) k = prev[k];
    return k;
  };
  auto length = [&](int h) {
    int l = 1;
    while (next.count(h)) h = next[h], ++l;
    return l;
  };
  auto anchors = [&](int h) {  // pinned classes in the chain from h
    int a = !movable(h);
    while (next.count(h)) h = next[h], a += !movable(h);
    return a;
  };
  for (auto [v, a, b] : edges) {
    if (next.count(a) || prev.count(b) || head(a) == b) continue;
    if (length(head(a)) + length(b) > kMaxChain || anchors(head(a)) + anchors(b) > 1) continue;
    next[a] = b, prev[b] = a;
  }
  std::vector<std::pair<int, std::vector<int>>> chains;  // (-votes, classes)
  for (auto [a, b] : next) {
    (void)b;
    if (prev.count(a)) continue;
    std::vector<int> ch{a};
    int score = 0;
    for (int k = a; next.count(k); k = next[k]) ch.push_back(next[k]), score += votes[{k, next[k]}];
    chains.emplace_back(-score, ch);
  }
  std::sort(chains.begin(), chains.end());

  // (5) placement
  int max_reg = -1;
  for (const Ins& x : c.ins)
    for (int r : x.fx.full_regs)
      if (r < kR) max_reg = std::max(max_reg, r / 4);
  const int limit = std::min(kR, (max_reg + 1 + kGrowRegs) * 4);
  const std::vector<int> in0 = in_web, out0 = out_web;
  std::vector<bool> moved(static_cast<size_t>(webs), false);
  bool progress = false;
  // A chain that finds no place is retried in parts: its movable runs without the pinned
  // member, then halves, while they are 2 classes or more.
  for (size_t ci = 0; ci < chains.size(); ++ci) {
    const int score = chains[ci].first;
    const std::vector<int> ch = chains[ci].second;
    auto retry_parts = [&]() {
      std::vector<std::vector<int>> parts;
      bool anchored = false;
      for (int k : ch) anchored = anchored || !movable(k);
      if (anchored) {
        std::vector<int> run;
        for (int k : ch) {
          if (movable(k)) run.push_back(k);
          if (!movable(k) || k == ch.back()) {
            if (run.size() >= 2) parts.push_back(run);
            run.clear();
          }
        }
      } else if (ch.size() >= 4) {
        parts.emplace_back(ch.begin(), ch.begin() + static_cast<ptrdiff_t>(ch.size() / 2));
        parts.emplace_back(ch.begin() + static_cast<ptrdiff_t>(ch.size() / 2), ch.end());
      }
      for (auto& part : parts) chains.emplace_back(score, part);
    };
    std::set<int> chain_webs;
    for (int k : ch)
      for (int w : members[static_cast<size_t>(k)]) chain_webs.insert(w);
    // whether instruction q is a texture/memory/SFU instruction that reads r for a web outside
    // the chain, or writes r for one: a write of r shortly after such a read must wait for it
    // ((ss)/(sy) on a write-after-read), and a write shortly before such a write reorders
    auto async_touch = [&](size_t q, int r, bool want_read) {
      const Ins& x = c.ins[q];
      if (!x.fx.ss_prod && !x.fx.sy_prod && want_read) return false;
      for (const Occ& o : occ[q])
        if (o.def != want_read && reg[static_cast<size_t>(o.web)] == r && !chain_webs.count(o.web)) return true;
      return false;
    };
    // whether class k can take component r: no other value lives there or is touched where a
    // web of k lives, and no new write-after-read wait: our write within kAsyncWindow
    // instructions after another value's asynchronous read of r, or another value's write of r
    // that soon after our asynchronous read
    auto fits = [&](int k, int r) {
      if (half_alias[static_cast<size_t>(r)]) return false;
      for (int w : members[static_cast<size_t>(k)])
        for (size_t p : span[static_cast<size_t>(w)]) {
          int a = in_web[p * kR + static_cast<size_t>(r)], b = out_web[p * kR + static_cast<size_t>(r)];
          if ((a >= 0 && !chain_webs.count(a)) || (b >= 0 && !chain_webs.count(b))) return false;
          bool def_here = false, async_use = false;
          for (const Occ& o : occ[p]) {
            if (reg[static_cast<size_t>(o.web)] == r && !chain_webs.count(o.web)) return false;
            if (o.web == w) def_here |= o.def, async_use |= !o.def && (c.ins[p].fx.ss_prod || c.ins[p].fx.sy_prod);
          }
          for (size_t q = p > kAsyncWindow ? p - kAsyncWindow : 0; def_here && q < p; ++q)
            if (async_touch(q, r, true)) return false;
          for (size_t q = p + 1; async_use && q < n && q <= p + kAsyncWindow; ++q)
            if (async_touch(q, r, false)) return false;
        }
      return true;
    };
    const int L = static_cast<int>(ch.size());
    bool in_place = true;  // already a run where it is: leave it
    for (int k = 0; k < L && in_place; ++k)
      in_place = fixed_reg(ch[static_cast<size_t>(k)]) >= 0 && fixed_reg(ch[static_cast<size_t>(k)]) == fixed_reg(ch[0]) + k;
    if (in_place) continue;
    int lo = 0, hi = limit - L;  // candidate bases; a pinned member fixes the base
    for (int k = 0; k < L; ++k)
      if (!movable(ch[static_cast<size_t>(k)])) lo = hi = fixed_reg(ch[static_cast<size_t>(k)]) - k;
    int base = -1;
    for (int b = std::max(lo, 0); b <= hi && b + L <= kR && base < 0; ++b) {
      bool ok = true;
      for (int k = 0; k < L && ok; ++k) ok = !movable(ch[static_cast<size_t>(k)]) || fits(ch[static_cast<size_t>(k)], b + k);
      if (ok) base = b;
    }
    if (base < 0) {
      retry_parts();
      continue;
    }
    bool already = true;
    for (int k = 0; k < L; ++k)
      for (int w : members[static_cast<size_t>(ch[static_cast<size_t>(k)])]) already = already && reg[static_cast<size_t>(w)] == base + k;
    if (already) continue;
    for (size_t k = ch.size(); k-- > 0;)  // pinned members stay where they are
      if (!movable(ch[k])) {
        for (int w : members[static_cast<size_t>(ch[k])]) chain_webs.erase(w);
      }
    // vacate every old place first, then occupy the new ones
    for (int w : chain_webs)
      for (size_t p : span[static_cast<size_t>(w)]) {
        size_t r = static_cast<size_t>(reg[static_cast<size_t>(w)]);
        if (in_web[p * kR + r] == w) in_web[p * kR + r] = -1;
        if (out_web[p * kR + r] == w) out_web[p * kR + r] = -1;
      }
    for (int k = 0; k < L; ++k)
      for (int w : members[static_cast<size_t>(ch[static_cast<size_t>(k)])]) {
        if (!movable(ch[static_cast<size_t>(k)])) continue;
        size_t o = static_cast<size_t>(orig[static_cast<size_t>(w)]), r = static_cast<size_t>(base + k);
        for (size_t p : span[static_cast<size_t>(w)]) {
          if (in0[p * kR + o] == w) in_web[p * kR + r] = w;
          if (out0[p * kR + o] == w) out_web[p * kR + r] = w;
        }
        reg[static_cast<size_t>(w)] = base + k;
        moved[static_cast<size_t>(w)] = true;
      }
    progress = true;
  }
  if (!progress) return false;

  // (6) rename every operand of a moved web, then drop the moves that became R <- R
  for (size_t p = 0; p < n; ++p) {
    bool touched = false;
    for (const Occ& o : occ[p]) touched |= moved[static_cast<size_t>(o.web)];
    if (!touched) continue;
    const Parts& pp = parts[p];
    std::vector<int> to(pp.operands.size(), -1);
    for (size_t s = 0; s < pp.operands.size(); ++s) {
      int r = full_reg(pp.operands[s]);
      int w = r < 0 ? -1 : s == 0 ? def_web(p, r) : use_web(p, r);
      if (w >= 0 && moved[static_cast<size_t>(w)]) to[s] = reg[static_cast<size_t>(w)];
    }
    Instr re;
    if (!rename_at(c.ins[p], to, c.gen, &re)) return false;
    c.set(p, re);
  }
  for (size_t p = n; p-- > 0;) {
    Parts pp = split(print(c.ins[p].in));
    if (pp.mnemonic == "mov.u32u32" && pp.operands.size() == 2 && pp.operands[0] == pp.operands[1] &&
        full_reg(pp.operands[0]) >= 0 && pp.flags.find("(jp)") == std::string::npos && p + 1 < c.ins.size())
      c.erase(p);
  }
  code = std::move(c);
  return true;
}

}  // namespace opv::ir3::passes
