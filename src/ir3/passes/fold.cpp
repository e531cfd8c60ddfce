// fold: fold the integer arithmetic that the launch grid decides.
//
// tinygrad's kernels compute their indices from the local invocation id and the work-group id
// with signed 32-bit arithmetic, and Mesa, which compiles a kernel without knowing how many
// work-groups it will run, keeps every step: a 64-bit global address is built from a sign
// extension (`ashr.b s, i, 31; shl.b s, s, 1; shrg hi, 31, i, s; add.u hi, c0.w, hi`) that is
// zero whenever the index is not negative, plus a low-word add, a carry (`cmps.u.lt`,
// `cov.u16s32`) and a high-word add; a division by a constant goes through a 16-bit emulation of
// a 64-bit multiply; a sign test selects between two results that are equal. A capture knows the
// grid of every launch of a kernel (tinygrad bakes it into the kernel), so the value of such
// arithmetic in every fiber that will ever run is computable: this pass evaluates it for every
// fiber of the grid (the largest local size and number of work-groups of the kernel's launches,
// so a superset of the fibers of each launch) and rewrites an instruction when
//   (a) its result is the same constant in every fiber: `mov R, imm`;
//   (b) its result equals, in every fiber, what another register holds there: `mov R, S`
//       (cp then lets the readers use S, and dce removes the move), or a nop when R itself
//       already holds it (legalize drops nops);
//   (c) one source is a known identity in every fiber (an added, or'ed, shifted-by zero, a
//       multiply-high part that is zero, a select whose condition is the same everywhere):
//       `mov R, <the other source>`, or a nop when that is R;
//   (d) it is a load or store whose address pair holds (cK+1:cK) + D -- a buffer pointer from
//       the const file (unknown until the launch) plus an offset D known per fiber, tracked
//       through the low-word add, the carry and the high-word add (struct Sym) -- and an earlier
//       pair still holds (cK+1:cK) + D' with D - D' the same small number in every fiber: the
//       access reads that pair with D - D' as its immediate offset (the pair made first wins,
//       so a run of accesses converges on one pair and the others' arithmetic loses its readers).
// The sources that are known: the id registers (values from the grid), immediates, const-file
// components that are compile-time immediates (the capture's sidecar), and results of the
// integer instructions below computed from known sources ((rptN) ones element by element).
// Values are per fiber vectors; a forward walk carries which register holds which vector,
// meeting the states of every branch into a target (a register stays known only if all of them
// agree). A counted loop (one entry, one back edge, no inner loop, a register stepped by an
// immediate once per iteration, and an exit branch whose predicate is known) is walked over a
// domain of (fiber, iteration) pairs: its trip counts come from running its arithmetic iteration
// by iteration, then its body is walked once over every pair that runs, values from before the
// loop repeated per iteration and the counter's value per pair. At the head of any other loop,
// every register written inside it is forgotten. Writes inside predicated constructs forget
// what they overwrite and are not rewritten. Evaluated: add/sub, and/or/xor/not, shifts, mull.u,
// absneg.s, min/max, integer cmps (into registers and p0), madsh.m16, sel.b32, shrg/shlg, integer
// moves and cov between integer types; anything else makes its destination unknown. Kernels
// with more than kMaxFibers fibers, and loops with more than kMaxDomain pairs or kMaxTrip
// iterations, are left alone. Without a grid (a lone code image) the pass does nothing.
// Progress: true when an instruction was rewritten.
//
// The evaluator repeats the simulator's integer semantics (sim.cpp); the tests compare rewritten
// programs with the originals on the simulator, and translation validation runs every rewritten
// kernel there anyway.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

namespace {

constexpr size_t kMaxFibers = size_t(1) << 16;
constexpr size_t kMaxDomain = size_t(1) << 18;  // fiber x iteration pairs inside a counted loop
constexpr int kMaxTrip = 4096;
constexpr int kFullSlots = 56 * 4;          // r0.x .. r55.w (r48-r55: shared, the ids may live there)
constexpr int kPredSlot = kFullSlots + 48 * 4;  // after hr0.x .. hr47.w (a separate half file): p0.x .. p0.w
constexpr int kValueSlots = kPredSlot + 4;

using Vec = std::vector<uint32_t>;
using Val = std::shared_ptr<const Vec>;

// What a register is known to hold in terms of a 64-bit pointer in the const file (the
// kernel's buffer addresses: cK low word, cK+1 high word, unknown until the launch):
//   Sum{K, X}:   cK + X (32-bit), X a known vector (a copy of cK is Sum{K, 0});
//   Carry{K, X}: the carry out of cK + X (0 or 1);
//   Hi{K, X, H}: cK+1 + H + Carry{K, X}, the high word of (cK+1:cK) + (H:X).
// A register pair (Sum{K, X}, Hi{K, X, H}) is the address (cK+1:cK) + (H:X).
struct Sym {
  enum Kind { Sum, Carry, Hi } kind = Sum;
  int k = -1;
  Val x, h;
  size_t def = 0;  // the instruction that made it (loads share the pair made first)
};
using SymP = std::shared_ptr<const Sym>;

bool same_vec(const Val& a, const Val& b) { return a == b || (a && b && *a == *b); }
bool same_sym(const SymP& a, const SymP& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return a->kind == b->kind && a->k == b->k && a->def == b->def && same_vec(a->x, b->x) && same_vec(a->h, b->h);
}

struct State {
  bool reached = false;
  std::vector<Val> v = std::vector<Val>(kValueSlots);
  std::vector<SymP> sym = std::vector<SymP>(kValueSlots);
  void clear() {
    v.assign(kValueSlots, Val());
    sym.assign(kValueSlots, SymP());
  }
};

void meet(State& into, const State& s) {
  if (!s.reached) return;
  if (!into.reached) {
    into = s;
    return;
  }
  for (size_t k = 0; k < size_t(kValueSlots); ++k) {
    if (!same_vec(into.v[k], s.v[k])) into.v[k].reset();
    if (!same_sym(into.sym[k], s.sym[k])) into.sym[k].reset();
  }
}

// An operand as the evaluator sees it.
struct Src {
  enum Kind { None, Full, Half, Const, Imm } kind = None;
  int index = 0;       // slot (Full/Half) or const component (Const)
  uint32_t imm = 0;
  bool abs = false, neg = false;
  std::string text;    // without modifiers
};

bool parse_int(const std::string& t, uint32_t* out) {
  if (t.empty()) return false;
  size_t i = t[0] == '-' ? 1 : 0;
  if (i >= t.size()) return false;
  int64_t v = 0;
  try {
    size_t used = 0;
    if (t.compare(i, 2, "0x") == 0) v = static_cast<int64_t>(std::stoull(t.substr(i + 2), &used, 16)), used += 2;
    else v = static_cast<int64_t>(std::stoull(t.substr(i), &used, 10));
    if (used != t.size() - i) return false;
  } catch (...) {
    return false;
  }
  *out = static_cast<uint32_t>(i ? -v : v);
  return true;
}

Src parse_src(std::string op) {
  Src s;
  for (;;) {
    if (op.rfind("(abs)", 0) == 0) s.abs = true, op = op.substr(5);
    else if (op.rfind("(neg)", 0) == 0) s.neg = true, op = op.substr(5);
    else break;
  }
  s.text = op;
  if (op.empty() || op[0] == '(' || op.find('[') != std::string::npos) return s;  // (r), relative: not handled
  const size_t dot = op.find('.');
  auto comp = [&](size_t at) { return at < op.size() ? int(std::string("xyzw").find(op[at])) : -1; };
  auto number = [&](size_t from, size_t to, int* n) {
    if (to <= from) return false;
    for (size_t k = from; k < to; ++k)
      if (op[k] < '0' || op[k] > '9') return false;
    *n = std::stoi(op.substr(from, to - from));
    return true;
  };
  int n = 0;
  if (dot != std::string::npos && op.size() == dot + 2 && comp(dot + 1) >= 0) {
    const int c = comp(dot + 1);
    if (op[0] == 'r' && number(1, dot, &n) && n < 56) s.kind = Src::Full, s.index = n * 4 + c;
    else if (op.rfind("p0", 0) == 0 && dot == 2) s.kind = Src::Half, s.index = kPredSlot + c;
    else if (op.rfind("hr", 0) == 0 && number(2, dot, &n) && n < 48) s.kind = Src::Half, s.index = kFullSlots + n * 4 + c;
    else if (op[0] == 'c' && number(1, dot, &n)) s.kind = Src::Const, s.index = n * 4 + c;
    return s;
  }
  if (parse_int(op, &s.imm)) s.kind = Src::Imm;
  return s;
}

bool evaluable(const std::string& m) {
  static const char* ops[] = {"add.u", "add.s", "sub.u", "sub.s", "and.b", "or.b", "xor.b", "not.b", "shl.b", "shr.b",
                              "ashr.b", "mull.u", "absneg.s", "min.u", "min.s", "max.u", "max.s", "madsh.m16",
                              "sel.b32", "shrg", "shlg", "mov.u32u32", "mov.u16u16", "cov.u16s32", "cov.s16s32",
                              "cov.u32u16", "cov.s32s16"};
  for (const char* o : ops)
    if (m == o) return true;
  return m.rfind("cmps.u.", 0) == 0 || m.rfind("cmps.s.", 0) == 0;
}

// Integer semantics of the instructions handled (as sim.cpp): full 32-bit sources unless the
// mnemonic says otherwise; `half_dst` masks to 16 bits.
uint32_t eval(const std::string& m, uint32_t a, uint32_t b, uint32_t c, const Src& sa, bool half_dst) {
  auto s32 = [](uint32_t v) { return static_cast<int64_t>(static_cast<int32_t>(v)); };
  const uint32_t mask = half_dst ? 0xffffu : 0xffffffffu;
  auto put = [&](int64_t v) { return static_cast<uint32_t>(v) & mask; };
  if (m.rfind("cmps.", 0) == 0) {
    const bool s = m[5] == 's';
    const int64_t x = s ? s32(a) : int64_t(a), y = s ? s32(b) : int64_t(b);
    const std::string cc = m.substr(7);
    const bool r = cc == "lt" ? x < y : cc == "le" ? x <= y : cc == "gt" ? x > y : cc == "ge" ? x >= y : cc == "eq" ? x == y : x != y;
    return r ? 1u : 0u;
  }
  if (m == "add.u" || m == "add.s") return put(int64_t(a) + b);
  if (m == "sub.u" || m == "sub.s") return put(int64_t(a) - b);
  if (m == "min.u") return put(std::min(a, b));
  if (m == "max.u") return put(std::max(a, b));
  if (m == "min.s") return put(std::min(s32(a), s32(b)));
  if (m == "max.s") return put(std::max(s32(a), s32(b)));
  if (m == "absneg.s") {
    int64_t x = s32(a);
    if (sa.abs) x = x < 0 ? -x : x;
    if (sa.neg) x = -x;
    return put(x);
  }
  if (m == "and.b") return put(a & b);
  if (m == "or.b") return put(a | b);
  if (m == "xor.b") return put(a ^ b);
  if (m == "not.b") return put(~a);
  if (m == "shl.b") return put(static_cast<uint64_t>(a) << (b & 31));
  if (m == "shr.b") return put(a >> (b & 31));
  if (m == "ashr.b") return put(s32(a) >> (b & 31));
  if (m == "mull.u") return put(static_cast<uint64_t>(a & 0xffff) * (b & 0xffff));
  if (m == "madsh.m16") return put(static_cast<uint32_t>(((a >> 16) * (b & 0xffff)) << 16) + c);
  if (m == "sel.b32") return put(b != 0 ? a : c);
  if (m == "shrg") return put((b >> (a & 31)) | c);
  if (m == "shlg") return put((b << (a & 31)) | c);
  if (m == "mov.u32u32") return a;
  if (m == "mov.u16u16" || m == "cov.u32u16" || m == "cov.s32s16") return a & 0xffff;
  if (m == "cov.u16s32") return a & 0xffff;
  if (m == "cov.s16s32") return static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(a & 0xffff)));
  return 0;
}

// eval()'s mnemonic resolved once per instruction (evaluate() runs it for every fiber and
// iteration): the same cases in the same order; Other (a mnemonic eval() does not list, or a
// cmps. spelling too short for its condition) takes eval() itself.
enum class EvalKind : uint8_t {
  Cmp, Add, Sub, MinU, MaxU, MinS, MaxS, AbsNeg, And, Or, Xor, Not, Shl, Shr, Ashr, Mull, Madsh, Sel, Shrg, Shlg,
  Mov32, Lo16, Sext16, Zero, Other
};
struct EvalOp {
  EvalKind kind = EvalKind::Other;
  bool is_signed = false;  // Cmp: cmps.s
  int cc = 5;              // Cmp: 0 lt, 1 le, 2 gt, 3 ge, 4 eq, 5 anything else (ne)
};

EvalOp eval_op(const std::string& m) {
  EvalOp o;
  if (m.rfind("cmps.", 0) == 0) {
    if (m.size() < 7) return o;  // Other: eval() itself (its substr throws, as before)
    o.kind = EvalKind::Cmp;
    o.is_signed = m[5] == 's';
    const std::string cc = m.substr(7);
    o.cc = cc == "lt" ? 0 : cc == "le" ? 1 : cc == "gt" ? 2 : cc == "ge" ? 3 : cc == "eq" ? 4 : 5;
    return o;
  }
  static const std::pair<const char*, EvalKind> kTable[] = {
      {"add.u", EvalKind::Add},          {"add.s", EvalKind::Add},         {"sub.u", EvalKind::Sub},
      {"sub.s", EvalKind::Sub},          {"min.u", EvalKind::MinU},        {"max.u", EvalKind::MaxU},
      {"min.s", EvalKind::MinS},         {"max.s", EvalKind::MaxS},        {"absneg.s", EvalKind::AbsNeg},
      {"and.b", EvalKind::And},          {"or.b", EvalKind::Or},           {"xor.b", EvalKind::Xor},
      {"not.b", EvalKind::Not},          {"shl.b", EvalKind::Shl},         {"shr.b", EvalKind::Shr},
      {"ashr.b", EvalKind::Ashr},        {"mull.u", EvalKind::Mull},       {"madsh.m16", EvalKind::Madsh},
      {"sel.b32", EvalKind::Sel},        {"shrg", EvalKind::Shrg},         {"shlg", EvalKind::Shlg},
      {"mov.u32u32", EvalKind::Mov32},   {"mov.u16u16", EvalKind::Lo16},   {"cov.u32u16", EvalKind::Lo16},
      {"cov.s32s16", EvalKind::Lo16},    {"cov.u16s32", EvalKind::Lo16},   {"cov.s16s32", EvalKind::Sext16},
  };
  for (const auto& [name, kind] : kTable)
    if (m == name) {
      o.kind = kind;
      return o;
    }
  o.kind = EvalKind::Zero;
  return o;
}

// eval(m, ...) for the resolved op (m only for Other).
uint32_t eval(const EvalOp& o, const std::string& m, uint32_t a, uint32_t b, uint32_t c, const Src& sa, bool half_dst) {
  auto s32 = [](uint32_t v) { return static_cast<int64_t>(static_cast<int32_t>(v)); };
  const uint32_t mask = half_dst ? 0xffffu : 0xffffffffu;
  auto put = [&](int64_t v) { return static_cast<uint32_t>(v) & mask; };
  switch (o.kind) {
    case EvalKind::Cmp: {
      const int64_t x = o.is_signed ? s32(a) : int64_t(a), y = o.is_signed ? s32(b) : int64_t(b);
      const bool r = o.cc == 0 ? x < y : o.cc == 1 ? x <= y : o.cc == 2 ? x > y : o.cc == 3 ? x >= y : o.cc == 4 ? x == y : x != y;
      return r ? 1u : 0u;
    }
    case EvalKind::Add: return put(int64_t(a) + b);
    case EvalKind::Sub: return put(int64_t(a) - b);
    case EvalKind::MinU: return put(std::min(a, b));
    case EvalKind::MaxU: return put(std::max(a, b));
    case EvalKind::MinS: return put(std::min(s32(a), s32(b)));
    case EvalKind::MaxS: return put(std::max(s32(a), s32(b)));
    case EvalKind::AbsNeg: {
      int64_t x = s32(a);
      if (sa.abs) x = x < 0 ? -x : x;
      if (sa.neg) x = -x;
      return put(x);
    }
    case EvalKind::And: return put(a & b);
    case EvalKind::Or: return put(a | b);
    case EvalKind::Xor: return put(a ^ b);
    case EvalKind::Not: return put(~a);
    case EvalKind::Shl: return put(static_cast<uint64_t>(a) << (b & 31));
    case EvalKind::Shr: return put(a >> (b & 31));
    case EvalKind::Ashr: return put(s32(a) >> (b & 31));
    case EvalKind::Mull: return put(static_cast<uint64_t>(a & 0xffff) * (b & 0xffff));
    case EvalKind::Madsh: return put(static_cast<uint32_t>(((a >> 16) * (b & 0xffff)) << 16) + c);
    case EvalKind::Sel: return put(b != 0 ? a : c);
    case EvalKind::Shrg: return put((b >> (a & 31)) | c);
    case EvalKind::Shlg: return put((b << (a & 31)) | c);
    case EvalKind::Mov32: return a;
    case EvalKind::Lo16: return a & 0xffff;
    case EvalKind::Sext16: return static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(a & 0xffff)));
    case EvalKind::Zero: return 0;
    case EvalKind::Other: break;
  }
  return eval(m, a, b, c, sa, half_dst);
}

// The source operand positions a mnemonic reads as 16-bit values (the rest are full).
bool half_source(const std::string& m) { return m == "mov.u16u16" || m == "cov.u16s32" || m == "cov.s16s32"; }

// Mesa's spelling of an integer immediate: decimal while small, else hex (the rewrite re-parses
// and compares the printed text, so a spelling the assembler does not print back is refused).
std::string imm_text(uint32_t v) {
  char b[16];
  if (v <= 4096) snprintf(b, sizeof b, "%u", v);
  else snprintf(b, sizeof b, "0x%x", v);
  return b;
}

}  // namespace

namespace {

struct Loop {
  size_t head = 0, back = 0;  // the loop is [head, back]; back is its last branch back to head
  size_t exit = 0;            // the branch deciding whether another iteration runs
  bool exit_jumps_out = false;  // exit is a forward br out of the loop (taken = leave); else exit == back (taken = stay)
  bool exit_neg = false;        // "br !p0.c"
  int pred = -1;                // slot of the predicate it tests
  int counter = -1;             // full slot stepped once per iteration
  uint32_t step = 0;
};

class Folder {
 public:
  explicit Folder(Code& c) : c_(c), f_(flow(c)), pred_(predicated(c)), consts_(c.grid.consts.begin(), c.grid.consts.end()) {}

  bool run(size_t fibers);

 private:
  Code& c_;
  Flow f_;
  std::vector<bool> pred_;
  std::map<int, uint32_t> consts_;
  std::unordered_multimap<uint64_t, int> by_hash_;
  bool progress_ = false;

  static uint64_t hash_of(const Vec& v) {
    uint64_t h = 1469598103934665603ull ^ v.size();
    for (uint32_t x : v) h = (h ^ x) * 1099511628211ull;
    return h;
  }
  // The slots a register unit (legalize.h's Effects) belongs to: -1 for none.
  std::pair<int, int> slots_of(int u) const {
    if (u < 0) return {-1, -1};
    if (u < 2 * kFullSlots)  // in a merged file unit u is also half register u
      return {u / 2, c_.merged_regs && u < 48 * 4 ? kFullSlots + u : -1};
    if (u >= 2 * kRegP0 && u < 2 * (kRegP0 + 4)) return {kPredSlot + (u / 2 - kRegP0), -1};
    if (u >= 512 && u < 512 + 48 * 4 && !c_.merged_regs) return {kFullSlots + u - 512, -1};
    return {-1, -1};
  }
  void forget(State& s, int u) const {
    const auto [a, b] = slots_of(u);
    for (int sl : {a, b})
      if (sl >= 0) s.v[size_t(sl)].reset(), s.sym[size_t(sl)].reset();
  }
  // The 64-bit pointer facts (Sym) an instruction's result has, from its (rewritten) text.
  SymP symbolic(const Parts& p, const State& cur, size_t dom, size_t at) const;
  // A load/store whose address pair is (cK+1:cK) + D, read from another pair that still holds
  // (cK+1:cK) + D' with D - D' the same small offset in every fiber: the rewritten text or "".
  std::string share_address(const Parts& p, const State& cur) const;
  std::vector<size_t> back_sources(size_t i) const {
    std::vector<size_t> b;
    for (size_t s : f_.from[i])
      if (s >= i) b.push_back(s);
    return b;
  }
  int64_t target(size_t i) const {
    const Ins& y = c_.ins[i];
    return y.target_id >= 0 && size_t(y.target_id) < f_.pos.size() ? f_.pos[size_t(y.target_id)] : -1;
  }
  void step(size_t i, State& cur, size_t dom, bool rewrite);
  // The result of `m ops[0], ops[1..]` in every element of the domain when every source is known
  // (else null); *dst is the destination slot (-1 when not tracked), *src the parsed sources.
  Val evaluate(const std::string& m, const std::vector<std::string>& ops, const State& cur, size_t dom, int* dst,
               bool* half_dst, std::vector<Src>* src) const;
  // Walks [from, to); `prepared`: cur is the state at `from` already (a loop body's walk).
  // Branches to targets at or past `to` are added to *exits.
  void walk(size_t from, size_t to, State& cur, size_t dom, bool rewrite, bool prepared,
            const std::function<void(size_t, const State&)>& probe, std::vector<size_t>* exits);
  bool counted(size_t head, const State& cur, Loop* L) const;
  // A counted loop whose trip counts are known: walks its body over every (fiber, iteration).
  bool enter_counted(size_t head, State& cur, size_t dom, bool rewrite, std::vector<size_t>* exits, size_t* back);
};

Val Folder::evaluate(const std::string& m, const std::vector<std::string>& ops, const State& cur, size_t dom, int* dst,
                     bool* half_dst, std::vector<Src>* src) const {
  *dst = -1;
  *half_dst = false;
  src->clear();
  const Src d = parse_src(ops[0]);
  if (!d.abs && !d.neg && d.kind == Src::Full && d.index < kFullRegs) *dst = d.index;
  else if (!d.abs && !d.neg && d.kind == Src::Half && d.index < kValueSlots) *dst = d.index, *half_dst = true;
  for (size_t k = 1; k < ops.size(); ++k) src->push_back(parse_src(ops[k]));
  if (*dst < 0 || src->size() > 3) return nullptr;
  const bool hs = half_source(m);
  const Vec* in[3] = {nullptr, nullptr, nullptr};
  uint32_t uni[3] = {0, 0, 0};
  for (size_t k = 0; k < src->size(); ++k) {
    const Src& s = (*src)[k];
    if ((s.abs || s.neg) && m != "absneg.s") return nullptr;
    if (s.kind == Src::Full && !hs) in[k] = cur.v[size_t(s.index)].get();
    else if (s.kind == Src::Half && hs && s.index < kPredSlot) in[k] = cur.v[size_t(s.index)].get();
    else if (s.kind == Src::Const && consts_.count(s.index) && !hs) uni[k] = consts_.at(s.index);
    else if (s.kind == Src::Imm) uni[k] = s.imm;
    else return nullptr;
    if ((s.kind == Src::Full || s.kind == Src::Half) && !in[k]) return nullptr;
  }
  auto out = std::make_shared<Vec>(dom);
  const EvalOp op = eval_op(m);
  for (size_t q = 0; q < dom; ++q)
    (*out)[q] = eval(op, m, in[0] ? (*in[0])[q] : uni[0], in[1] ? (*in[1])[q] : uni[1], in[2] ? (*in[2])[q] : uni[2], (*src)[0], *half_dst);
  return out;
}

void Folder::step(size_t i, State& cur, size_t dom, bool rewrite) {
  const Ins& x = c_.ins[i];
  const std::string text = print(x.in);
  const Parts p = split(text);
  const std::string& m = p.mnemonic;

  Val result;
  bool half_dst = false;
  int dst = -1;
  std::vector<Src> src;
  // (sat), (ul) and (ei) change what an instruction does beyond its opcode: not evaluated
  const bool modifiers = text.find("(sat)") != std::string::npos || text.find("(ul)") != std::string::npos ||
                         text.find("(ei)") != std::string::npos;
  const bool ok_kind = !pred_[i] && !modifiers && x.fx.cat >= 1 && x.fx.cat <= 3 && evaluable(m) && p.operands.size() >= 2;
  const int64_t rep = x.in.get_or("REPEAT", 0);
  if (ok_kind && rep > 0) {
    // (rptN): element e writes the destination + e and reads each (r) source + e, in order; the
    // values are carried on (nothing is rewritten)
    std::vector<std::pair<int, Val>> set;
    for (int64_t e = 0; e <= rep; ++e) {
      std::vector<std::string> ops;
      for (const std::string& o : p.operands) {
        const bool r = o.rfind("(r)", 0) == 0;
        ops.push_back(r ? advance(o.substr(3), int(e)) : o);
      }
      ops[0] = advance(p.operands[0], int(e));
      int d = -1;
      bool h = false;
      std::vector<Src> ss;
      Val v = evaluate(m, ops, cur, dom, &d, &h, &ss);
      if (d < 0) {
        set.clear();
        break;
      }
      cur.v[size_t(d)] = v;
      cur.sym[size_t(d)].reset();
      set.emplace_back(d, v);
    }
    for (int u : x.fx.writes) forget(cur, u);
    for (const auto& [d, v] : set) cur.v[size_t(d)] = v;
    return;
  }
  if (ok_kind && rep == 0 && text.find("(r)") == std::string::npos) result = evaluate(m, p.operands, cur, dom, &dst, &half_dst, &src);

  std::string repl;
  if (!rewrite || dst >= kPredSlot) {
  } else if (dst >= 0 && result && cur.v[size_t(dst)] && *cur.v[size_t(dst)] == *result) {
    repl = "nop";  // the register already holds this value in every fiber
  } else if (dst >= 0 && result) {
    bool uniform = true;
    for (uint32_t v : *result) uniform = uniform && v == (*result)[0];
    const bool is_mov = m == "mov.u32u32" || m == "mov.u16u16";
    if (uniform && dom > 0) {
      if (!(is_mov && src[0].kind == Src::Imm)) {
        if (!half_dst) repl = "mov.u32u32 " + p.operands[0] + ", " + imm_text((*result)[0]);
        else if ((*result)[0] <= 0xffff) repl = "mov.u16u16 " + p.operands[0] + ", " + imm_text((*result)[0]);
      }
    } else if (!half_dst && !(is_mov && src[0].kind == Src::Full)) {
      auto range = by_hash_.equal_range(hash_of(*result));
      for (auto it = range.first; it != range.second && repl.empty(); ++it) {
        const int s = it->second;
        if (s == dst || s >= kFullRegs || !cur.v[size_t(s)] || *cur.v[size_t(s)] != *result) continue;
        repl = "mov.u32u32 " + p.operands[0] + ", " + reg_name(s);
      }
    }
  }
  if (rewrite && repl.empty() && dst >= 0 && dst < kPredSlot && !half_dst && src.size() >= 2) {
    // (c) identities with one known source (whether or not the result is known)
    auto all_of = [&](const Src& s, const std::function<bool(uint32_t)>& pr) {
      if (s.abs || s.neg) return false;
      if (s.kind == Src::Imm) return pr(s.imm);
      if (s.kind == Src::Const && consts_.count(s.index)) return pr(consts_.at(s.index));
      if (s.kind != Src::Full || !cur.v[size_t(s.index)]) return false;
      for (uint32_t e : *cur.v[size_t(s.index)])
        if (!pr(e)) return false;
      return true;
    };
    auto movable = [&](const Src& s) {
      return !s.abs && !s.neg && ((s.kind == Src::Full && s.index < kFullRegs) || s.kind == Src::Const);
    };
    const Src& a = src[0];
    const Src& b = src[1];
    auto zero = [](uint32_t v) { return v == 0; };
    auto ones = [](uint32_t v) { return v == 0xffffffffu; };
    const Src* keep = nullptr;
    const bool additive = m == "add.u" || m == "add.s" || m == "or.b" || m == "xor.b";
    if (additive && all_of(b, zero)) keep = &a;
    else if (additive && all_of(a, zero)) keep = &b;
    else if ((m == "sub.u" || m == "sub.s" || m == "shl.b" || m == "shr.b" || m == "ashr.b") &&
             all_of(b, [](uint32_t v) { return (v & 31) == 0 || v == 0; }) && (m.rfind("sub", 0) != 0 || all_of(b, zero)))
      keep = &a;
    else if (m == "and.b" && all_of(b, ones)) keep = &a;
    else if (m == "and.b" && all_of(a, ones)) keep = &b;
    else if (m == "madsh.m16" && src.size() == 3 &&
             (all_of(a, [](uint32_t v) { return (v >> 16) == 0; }) || all_of(b, [](uint32_t v) { return (v & 0xffff) == 0; })))
      keep = &src[2];
    else if ((m == "shrg" || m == "shlg") && src.size() == 3 && b.kind == Src::Full && !b.abs && !b.neg && cur.v[size_t(b.index)]) {
      uint32_t sh = 0;
      bool known = false;
      if (a.kind == Src::Imm) sh = a.imm, known = true;
      else if (a.kind == Src::Const && consts_.count(a.index)) sh = consts_.at(a.index), known = true;
      if (known) {
        bool z = true;
        for (uint32_t e : *cur.v[size_t(b.index)]) z = z && (m == "shrg" ? (e >> (sh & 31)) : (e << (sh & 31))) == 0;
        if (z) keep = &src[2];
      }
    } else if (m == "sel.b32" && src.size() == 3) {
      if (all_of(b, [](uint32_t v) { return v != 0; })) keep = &a;
      else if (all_of(b, zero)) keep = &src[2];
    }
    if (keep && movable(*keep)) {
      // moving a register onto itself does nothing: a nop, which legalize drops
      repl = keep->kind == Src::Full && keep->index == dst ? "nop" : "mov.u32u32 " + p.operands[0] + ", " + keep->text;
    }
  }
  if (rewrite && repl.empty() && x.fx.cat == 6 && !pred_[i]) repl = share_address(p, cur);
  if (!repl.empty()) {
    Instr out;
    bool ok = true;
    try {
      out = parse(repl, c_.gen);
      ok = out.valid() && print(out) == repl;
    } catch (...) {
      ok = false;
    }
    if (ok) {
      if (x.in.get_or("SS", 0)) out = with_field(out, "SS", 1);
      if (x.in.get_or("SY", 0)) out = with_field(out, "SY", 1);
      if (x.in.get_or("JP", 0)) out = with_field(out, "JP", 1);
      c_.set(i, out);
      progress_ = true;
    }
  }

  SymP fact;
  int fact_slot = -1;
  if (!pred_[i] && c_.ins[i].in.get_or("REPEAT", 0) == 0) {
    const std::string now = print(c_.ins[i].in);
    const Parts q = split(now);
    if (!q.operands.empty() && now.find("(sat)") == std::string::npos && now.find("(ul)") == std::string::npos) {
      const Src d = parse_src(q.operands[0]);
      if (!d.abs && !d.neg && (d.kind == Src::Full || (d.kind == Src::Half && d.index < kPredSlot)) &&
          d.index < kValueSlots && (d.kind == Src::Half || d.index < kFullRegs)) {
        fact = symbolic(q, cur, dom, i);
        fact_slot = d.index;
      }
    }
  }
  for (int u : c_.ins[i].fx.writes) forget(cur, u);
  if (dst >= 0 && result) {
    cur.v[size_t(dst)] = result;
    if (!half_dst && rewrite) by_hash_.emplace(hash_of(*result), dst);
  }
  if (fact && fact_slot >= 0) cur.sym[size_t(fact_slot)] = fact;
}

SymP Folder::symbolic(const Parts& p, const State& cur, size_t dom, size_t at) const {
  const std::string& m = p.mnemonic;
  if (p.operands.size() < 2) return nullptr;
  std::vector<Src> src;
  for (size_t k = 1; k < p.operands.size(); ++k) src.push_back(parse_src(p.operands[k]));
  auto zeros = [&]() { return std::make_shared<const Vec>(dom, 0u); };
  // cK (unknown) or a register holding cK + X: K and X
  auto sum_of = [&](const Src& a, int* k, Val* x) {
    if (a.abs || a.neg) return false;
    if (a.kind == Src::Const && !consts_.count(a.index)) return *k = a.index, *x = zeros(), true;
    if (a.kind != Src::Full || a.index >= kFullRegs) return false;
    const SymP& f = cur.sym[size_t(a.index)];
    if (!f || f->kind != Sym::Sum) return false;
    return *k = f->k, *x = f->x, true;
  };
  auto vec_of = [&](const Src& a, Val* v) {
    if (a.abs || a.neg) return false;
    uint32_t u = 0;
    if (a.kind == Src::Imm) u = a.imm;
    else if (a.kind == Src::Const && consts_.count(a.index)) u = consts_.at(a.index);
    else if (a.kind == Src::Full && cur.v[size_t(a.index)]) return *v = cur.v[size_t(a.index)], true;
    else return false;
    return *v = std::make_shared<const Vec>(dom, u), true;
  };
  auto is_zero = [](const Val& v) {
    for (uint32_t e : *v)
      if (e) return false;
    return true;
  };
  auto make = [&](Sym::Kind kind, int k, Val x, Val h) {
    auto f = std::make_shared<Sym>();
    f->kind = kind, f->k = k, f->x = std::move(x), f->h = std::move(h), f->def = at;
    return SymP(f);
  };
  int k = -1, k2 = -1;
  Val x, v;
  if (m == "mov.u32u32" && src.size() == 1) {
    if (sum_of(src[0], &k, &x)) return make(Sym::Sum, k, x, nullptr);
    if (src[0].kind == Src::Full && !src[0].abs && !src[0].neg) return cur.sym[size_t(src[0].index)];
    return nullptr;
  }
  if (m == "add.u" && src.size() == 2) {
    for (int side = 0; side < 2; ++side) {
      const Src& a = src[size_t(side)];
      const Src& b = src[size_t(1 - side)];
      if (sum_of(a, &k, &x) && vec_of(b, &v)) {
        auto out = std::make_shared<Vec>(dom);
        for (size_t q = 0; q < dom; ++q) (*out)[q] = (*x)[q] + (*v)[q];
        return make(Sym::Sum, k, out, nullptr);
      }
      const SymP c = a.kind == Src::Full && !a.abs && !a.neg ? cur.sym[size_t(a.index)] : nullptr;
      if (c && c->kind == Sym::Carry && sum_of(b, &k2, &v) && k2 == c->k + 1) return make(Sym::Hi, c->k, c->x, v);
    }
    return nullptr;
  }
  if (m == "cmps.u.lt" && src.size() == 2) {
    if (sum_of(src[0], &k, &x) && sum_of(src[1], &k2, &v) && k == k2 && is_zero(v)) return make(Sym::Carry, k, x, nullptr);
    return nullptr;
  }
  if (m == "cov.u16s32" && src.size() == 1 && src[0].kind == Src::Half && src[0].index < kPredSlot) {
    const SymP& c = cur.sym[size_t(src[0].index)];
    if (c && c->kind == Sym::Carry) return c;
  }
  return nullptr;
}

std::string Folder::share_address(const Parts& p, const State& cur) const {
  const std::string& m = p.mnemonic;
  if ((m.rfind("ldg.", 0) != 0 && m.rfind("stg.", 0) != 0) || m.rfind("ldg.a", 0) == 0 || m.rfind("stg.a", 0) == 0)
    return "";
  size_t at = p.operands.size();
  for (size_t k = 0; k < p.operands.size(); ++k)
    if (p.operands[k].rfind("g[", 0) == 0 && p.operands[k].back() == ']') at = k;
  if (at == p.operands.size()) return "";
  const std::string inner = p.operands[at].substr(2, p.operands[at].size() - 3);
  const size_t sign = inner.find_first_of("+-");
  const Src a = parse_src(inner.substr(0, sign));
  int64_t off = 0;
  if (sign != std::string::npos) {
    uint32_t u = 0;
    if (!parse_int(inner.substr(sign + 1), &u)) return "";
    off = inner[sign] == '-' ? -int64_t(u) : int64_t(u);
  }
  if (a.kind != Src::Full || a.abs || a.neg || a.index + 1 >= kFullRegs) return "";
  // (cK+1:cK) + D for the pair at `r`, D per element of the domain
  auto pair = [&](int r, int* k, std::vector<uint64_t>* d) {
    const SymP& lo = cur.sym[size_t(r)];
    const SymP& hi = cur.sym[size_t(r + 1)];
    if (!lo || !hi || lo->kind != Sym::Sum || hi->kind != Sym::Hi || lo->k != hi->k || !same_vec(lo->x, hi->x)) return false;
    *k = lo->k;
    d->resize(lo->x->size());
    for (size_t q = 0; q < d->size(); ++q) (*d)[q] = (uint64_t((*hi->h)[q]) << 32) | (*lo->x)[q];
    return true;
  };
  int k = -1;
  std::vector<uint64_t> dj, dp;
  if (!pair(a.index, &k, &dj) || dj.empty()) return "";
  // the pair made first that reaches this address (so that every load of a run converges on it
  // and the other pairs lose their readers); none earlier than this load's own: unchanged
  int best = -1;
  int64_t best_delta = 0;
  size_t best_def = cur.sym[size_t(a.index)]->def;
  for (int r = 0; r + 1 < kFullRegs; ++r) {
    int kp = -1;
    if (r == a.index || !pair(r, &kp, &dp) || kp != k || dp.size() != dj.size()) continue;
    if (cur.sym[size_t(r)]->def >= best_def) continue;
    const uint64_t delta = dj[0] + uint64_t(off) - dp[0];
    bool uniform = true;
    for (size_t q = 1; q < dj.size() && uniform; ++q) uniform = dj[q] + uint64_t(off) - dp[q] == delta;
    const int64_t sd = int64_t(delta);
    if (!uniform || sd < -4096 || sd > 4095) continue;
    best = r, best_delta = sd, best_def = cur.sym[size_t(r)]->def;
  }
  if (best < 0) return "";
  const int64_t sd = best_delta;
  const std::string g = "g[" + reg_name(best) + (sd > 0 ? "+" + std::to_string(sd) : sd < 0 ? "-" + std::to_string(-sd) : "") + "]";
  std::string text = p.flags + m;
  for (size_t q = 0; q < p.operands.size(); ++q) text += (q ? ", " : " ") + (q == at ? g : p.operands[q]);
  return text;
}

bool Folder::counted(size_t head, const State& cur, Loop* L) const {
  const std::vector<size_t> backs = back_sources(head);
  if (backs.empty()) return false;
  L->head = head;
  L->back = *std::max_element(backs.begin(), backs.end());
  if (backs.size() != 1 || L->back >= c_.ins.size()) return false;
  // one entry (head), no inner loop, no control flow that is not modelled
  for (size_t k = head; k <= L->back; ++k) {
    for (size_t s : f_.from[k])
      if ((k != head && (s < head || s > L->back)) || (s >= k && k != head)) return false;
    const Ins& y = c_.ins[k];
    if (is_control(y) && !(y.fx.is_branch || y.fx.is_jump || is_pred_marker(y))) return false;
  }
  // the exit: the back edge itself when it is a conditional br, else the one br leaving the loop
  auto cond = [&](size_t k, bool* neg, int* slot) {
    const Parts p = split(print(c_.ins[k].in));
    if (p.mnemonic != "br" || p.operands.size() != 2) return false;
    std::string o = p.operands[0];
    *neg = !o.empty() && o[0] == '!';
    if (*neg) o = o.substr(1);
    if (o.size() != 4 || o.rfind("p0.", 0) != 0) return false;
    const int comp = int(std::string("xyzw").find(o[3]));
    if (comp < 0) return false;
    *slot = kPredSlot + comp;
    return true;
  };
  size_t outs = 0;
  for (size_t k = head; k <= L->back; ++k) {
    const Ins& y = c_.ins[k];
    if (!(y.fx.is_branch || y.fx.is_jump)) continue;
    const int64_t t = target(k);
    if (t >= int64_t(head) && t <= int64_t(L->back)) continue;
    ++outs;
    if (!y.fx.is_branch || !cond(k, &L->exit_neg, &L->pred)) return false;
    L->exit = k, L->exit_jumps_out = true;
  }
  const Ins& b = c_.ins[L->back];
  if (outs == 0) {
    if (!b.fx.is_branch || !cond(L->back, &L->exit_neg, &L->pred)) return false;
    L->exit = L->back, L->exit_jumps_out = false;
  } else if (outs != 1 || !b.fx.is_jump) {
    return false;
  }
  // the exit runs in every iteration: no branch inside jumps over it
  for (size_t k = head; k < L->exit; ++k)
    if ((c_.ins[k].fx.is_branch || c_.ins[k].fx.is_jump) && target(k) > int64_t(L->exit) && target(k) <= int64_t(L->back)) return false;
  // the counter: a known register whose only write in the loop is `add.u R, R, imm`, run every iteration
  std::map<int, int> writes;
  for (size_t k = head; k <= L->back; ++k)
    for (int u : c_.ins[k].fx.writes)
      if (u >= 0 && u < 2 * kFullRegs && (u & 1) == 0) ++writes[u / 2];
  for (size_t k = head; k <= L->back; ++k) {
    const Parts p = split(print(c_.ins[k].in));
    if (pred_[k] || p.mnemonic != "add.u" || p.operands.size() != 3 || c_.ins[k].in.get_or("REPEAT", 0) != 0) continue;
    const Src d = parse_src(p.operands[0]), a = parse_src(p.operands[1]), s = parse_src(p.operands[2]);
    if (d.kind != Src::Full || d.index >= kFullRegs || a.kind != Src::Full || a.index != d.index || s.kind != Src::Imm || a.abs || a.neg) continue;
    if (writes[d.index] != 1 || !cur.v[size_t(d.index)]) continue;
    bool jumped = false;  // a branch inside jumps over it
    for (size_t q = head; q < k; ++q)
      if ((c_.ins[q].fx.is_branch || c_.ins[q].fx.is_jump) && target(q) > int64_t(k) && target(q) <= int64_t(L->back)) jumped = true;
    if (jumped) continue;
    L->counter = d.index;
    L->step = s.imm;
    return true;
  }
  return false;
}

bool Folder::enter_counted(size_t head, State& cur, size_t dom, bool rewrite, std::vector<size_t>* exits, size_t* back) {
  Loop L;
  if (!counted(head, cur, &L)) return false;
  std::vector<bool> written(kValueSlots, false);
  for (size_t k = head; k <= L.back; ++k)
    for (int u : c_.ins[k].fx.writes) {
      const auto [a, b] = slots_of(u);
      for (int sl : {a, b})
        if (sl >= 0) written[size_t(sl)] = true;
    }
  // trip counts: run the loop's arithmetic iteration by iteration for the fibers still in it
  std::vector<uint32_t> active(dom);
  for (size_t q = 0; q < dom; ++q) active[q] = uint32_t(q);
  std::vector<std::pair<uint32_t, uint32_t>> pairs;  // (index in the enclosing domain, iteration)
  const Vec& v0 = *cur.v[size_t(L.counter)];
  auto restrict_state = [&](const std::vector<std::pair<uint32_t, uint32_t>>& idx) {
    State s;
    s.reached = true;
    for (int sl = 0; sl < kValueSlots; ++sl) {
      if (written[size_t(sl)] || !cur.v[size_t(sl)]) continue;
      auto v = std::make_shared<Vec>(idx.size());
      const Vec& pv = *cur.v[size_t(sl)];
      for (size_t q = 0; q < idx.size(); ++q) (*v)[q] = pv[idx[q].first];
      s.v[size_t(sl)] = v;
    }
    auto ctr = std::make_shared<Vec>(idx.size());
    for (size_t q = 0; q < idx.size(); ++q) (*ctr)[q] = v0[idx[q].first] + idx[q].second * L.step;
    s.v[size_t(L.counter)] = ctr;
    return s;
  };
  for (uint32_t t = 0; !active.empty(); ++t) {
    if (t >= uint32_t(kMaxTrip) || pairs.size() + active.size() > kMaxDomain) return false;
    std::vector<std::pair<uint32_t, uint32_t>> idx;
    for (uint32_t a : active) idx.emplace_back(a, t);
    State s = restrict_state(idx);
    Val p;
    std::vector<size_t> ignore;
    walk(head, L.exit + 1, s, idx.size(), false, true,
         [&](size_t k, const State& st) {
           if (k == L.exit) p = st.v[size_t(L.pred)];
         },
         &ignore);
    if (!p) return false;
    pairs.insert(pairs.end(), idx.begin(), idx.end());
    std::vector<uint32_t> next;
    for (size_t q = 0; q < active.size(); ++q) {
      const bool taken = ((*p)[q] != 0) != L.exit_neg;
      if (taken != L.exit_jumps_out) next.push_back(active[q]);
    }
    active.swap(next);
  }
  // the body over every (fiber, iteration) it runs
  State body = restrict_state(pairs);
  if (rewrite)
    for (int sl = 0; sl < kFullRegs; ++sl)
      if (body.v[size_t(sl)]) by_hash_.emplace(hash_of(*body.v[size_t(sl)]), sl);
  std::vector<size_t> inner_exits;
  walk(head, L.back + 1, body, pairs.size(), rewrite, true, nullptr, &inner_exits);
  // after the loop: what the loop does not write is as before it
  for (int sl = 0; sl < kValueSlots; ++sl)
    if (written[size_t(sl)]) cur.v[size_t(sl)].reset();
  for (size_t e : inner_exits) exits->push_back(e);
  *back = L.back;
  return true;
}

void Folder::walk(size_t from, size_t to, State& cur, size_t dom, bool rewrite, bool prepared,
                  const std::function<void(size_t, const State&)>& probe, std::vector<size_t>* exits) {
  std::map<size_t, State> pending;
  for (size_t i = from; i < to; ++i) {
    if (!f_.from[i].empty() && !(prepared && i == from)) {
      State in;
      if (cur.reached && (i == from || i > 0)) in = cur;
      auto p = pending.find(i);
      if (p != pending.end()) meet(in, p->second), pending.erase(p);
      const std::vector<size_t> backs = back_sources(i);
      if (!backs.empty()) {
        if (!in.reached) in = State(), in.reached = true;  // entered only from below: nothing is known
        size_t back = 0;
        std::vector<size_t> out;
        if (!probe && enter_counted(i, in, dom, rewrite, &out, &back) && back + 1 <= to) {
          for (size_t e : out) {
            if (e < to) meet(pending[e], in);
            else exits->push_back(e);
          }
          cur = std::move(in);
          if (c_.ins[back].fx.is_jump) {  // the loop leaves only through its exit branch
            auto q = pending.find(back + 1);
            if (q != pending.end()) cur = q->second, pending.erase(q);
            else cur.reached = false;
          }
          i = back;
          continue;
        }
        const size_t end = *std::max_element(backs.begin(), backs.end()) + 1;
        for (size_t k = i; k < end && k < c_.ins.size(); ++k) {
          const Ins& y = c_.ins[k];
          for (int u : y.fx.writes) forget(in, u);
          if (is_control(y) && !(y.fx.is_branch || y.fx.is_jump || y.fx.is_end)) in.clear();  // not modelled
        }
      }
      cur = std::move(in);
    }
    if (!cur.reached) continue;
    if (probe) probe(i, cur);
    step(i, cur, dom, rewrite);
    const Ins& y = c_.ins[i];
    if (is_control(y)) {
      if (y.fx.is_branch || y.fx.is_jump) {
        const int64_t t = target(i);
        if (t > int64_t(i) && t < int64_t(to)) meet(pending[size_t(t)], cur);
        else if (t >= int64_t(to)) exits->push_back(size_t(t));
        if (y.fx.is_jump) cur.reached = false;
      } else if (y.fx.is_end) {
        cur.reached = false;
      } else if (!is_pred_marker(y)) {
        cur.clear();  // control flow that is not modelled
      }
    }
  }
}

bool Folder::run(size_t fibers) {
  const Code::Grid& g = c_.grid;
  State cur;
  cur.reached = true;
  const uint32_t lc = g.local_size[0] * g.local_size[1] * g.local_size[2];
  for (int d = 0; d < 3; ++d) {
    auto lid = std::make_shared<Vec>(fibers), gid = std::make_shared<Vec>(fibers);
    for (size_t k = 0; k < fibers; ++k) {
      const uint32_t l = static_cast<uint32_t>(k % lc), w = static_cast<uint32_t>(k / lc);
      const uint32_t lv[3] = {l % g.local_size[0], l / g.local_size[0] % g.local_size[1], l / (g.local_size[0] * g.local_size[1])};
      const uint32_t wv[3] = {w % g.num_groups[0], w / g.num_groups[0] % g.num_groups[1], w / (g.num_groups[0] * g.num_groups[1])};
      (*lid)[k] = lv[d];
      (*gid)[k] = wv[d];
    }
    if (g.local_reg >= 0 && g.local_reg + d < kFullSlots) cur.v[size_t(g.local_reg + d)] = lid;
    if (g.group_reg >= 0 && g.group_reg + d < kFullSlots) cur.v[size_t(g.group_reg + d)] = gid;
  }
  for (int sl = 0; sl < kFullRegs; ++sl)
    if (cur.v[size_t(sl)]) by_hash_.emplace(hash_of(*cur.v[size_t(sl)]), sl);
  std::vector<size_t> exits;
  walk(0, c_.ins.size(), cur, fibers, true, false, nullptr, &exits);
  return progress_;
}

}  // namespace

bool fold(Code& c) {
  const Code::Grid& g = c.grid;
  if (!g.known() || c.ins.empty()) return false;
  size_t fibers = 1;
  for (int d = 0; d < 3; ++d) fibers *= size_t(g.local_size[d]) * g.num_groups[d];
  if (fibers == 0 || fibers > kMaxFibers) return false;
  return Folder(c).run(fibers);
}

}  // namespace opv::ir3::passes
