// cudasim PTX parser (see ptx.h): text -> Module of pre-decoded kernels.
// The text is read as a stream of statements: module directives (.version, .target,
// .address_size), entries (.entry NAME(.param ...) performance directives { body }); within a
// body: scope braces, labels ("$L__BB0_3:"), declarations (.reg, .shared) and instructions, each
// ending at ';'. Register names are slots, scoped by braces (inline asm declares its own
// temporaries); labels resolve to instruction indexes once the body is read, and so do the
// offsets of the module's .extern .shared arrays (dynamic shared memory follows every static
// .shared symbol, which the body may declare after the instructions that name the arrays).
#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "backend/cuda/sim/ptx_internal.h"

namespace opv::cudasim {

bool Memory::find(uint64_t addr, uint64_t bytes, uint64_t* base, uint64_t* size, bool** written) {
  auto it = ranges_.upper_bound(addr);
  if (it == ranges_.begin()) return false;
  --it;
  if (addr < it->first || addr + bytes > it->first + it->second.bytes || addr + bytes < addr) return false;
  *base = it->first;
  *size = it->second.bytes;
  if (written) *written = &it->second.kernel_written;
  return true;
}

Kernel::Kernel() = default;
Kernel::~Kernel() = default;
Kernel::Kernel(Kernel&&) noexcept = default;
Kernel& Kernel::operator=(Kernel&&) noexcept = default;

const Kernel* Module::find(const std::string& name) const {
  for (const Kernel& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

namespace {

[[noreturn]] void fail(uint32_t line, const std::string& what) {
  throw SimError("cudasim: line " + std::to_string(line) + ": " + what);
}

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (c == sep && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty() || !out.empty()) out.push_back(trim(cur));
  return out;
}

bool parse_int(const std::string& s, int64_t* v) {
  if (s.empty()) return false;
  size_t i = 0;
  bool neg = false;
  if (s[0] == '-' || s[0] == '+') {
    neg = s[0] == '-';
    i = 1;
  }
  if (i >= s.size()) return false;
  uint64_t x = 0;
  int base = 10;
  if (s.size() > i + 1 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
    base = 16;
    i += 2;
  }
  size_t start = i;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else if ((c == 'U' || c == 'u') && i + 1 == s.size()) break;
    else return false;
    x = x * uint64_t(base) + uint64_t(d);
  }
  if (i == start) return false;
  *v = neg ? -int64_t(x) : int64_t(x);
  return true;
}

Ty type_of(const std::string& s) {
  static const std::unordered_map<std::string, Ty> t = {
      {"b8", Ty::B8},   {"b16", Ty::B16}, {"b32", Ty::B32}, {"b64", Ty::B64},     {"u8", Ty::U8},
      {"u16", Ty::U16}, {"u32", Ty::U32}, {"u64", Ty::U64}, {"s8", Ty::S8},       {"s16", Ty::S16},
      {"s32", Ty::S32}, {"s64", Ty::S64}, {"f16", Ty::F16}, {"f16x2", Ty::F16x2}, {"bf16", Ty::BF16},
      {"f32", Ty::F32}, {"f64", Ty::F64}, {"pred", Ty::Pred}};
  auto it = t.find(s);
  return it == t.end() ? Ty::None : it->second;
}

// A variable or parameter declaration's words after its state space: ".align A", ".TYPE" (and
// other qualifiers, skipped), "NAME" or "NAME[N]"; with `unsized_ok` also "NAME[]" (count 0,
// unsized: an .extern .shared array).
struct VarDecl {
  std::string name;
  uint64_t align = 0, elem = 0, count = 1;
  bool unsized = false;
};
VarDecl parse_var(const std::vector<std::string>& words, size_t first, uint32_t line, bool unsized_ok = false) {
  VarDecl v;
  for (size_t i = first; i < words.size(); ++i) {
    if (words[i] == ".align" && i + 1 < words.size()) {
      int64_t a = 0;
      if (!parse_int(words[++i], &a) || a <= 0 || a > 4096) fail(line, "bad .align");
      v.align = uint64_t(a);
    } else if (words[i][0] == '.') {
      const Ty t = type_of(words[i].substr(1));
      if (t != Ty::None && t != Ty::Pred) v.elem = ty_bytes(t);
    } else {
      v.name += words[i];
    }
  }
  if (const size_t lb = v.name.find('['); lb != std::string::npos && unsized_ok && v.name.substr(lb) == "[]") {
    v.unsized = true;
    v.count = 0;
    v.name = v.name.substr(0, lb);
  } else if (lb != std::string::npos) {
    int64_t c = 0;
    if (!parse_int(v.name.substr(lb + 1, v.name.find(']') - lb - 1), &c) || c <= 0 || c > (int64_t(1) << 32))
      fail(line, "unsupported declaration of '" + v.name + "' (an array needs a size; only module-scope .extern "
                 ".shared arrays, dynamic shared memory, have none)");
    v.count = uint64_t(c);
    v.name = v.name.substr(0, lb);
  }
  if (v.elem == 0 || v.name.empty()) fail(line, "bad declaration");
  return v;
}

// The words of a declaration, split at blanks.
std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> w;
  std::string cur;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) w.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) w.push_back(cur);
  return w;
}

const std::unordered_map<std::string, uint32_t>& specials() {
  static const std::unordered_map<std::string, uint32_t> m = {
      {"%tid.x", kTidX}, {"%tid.y", kTidY}, {"%tid.z", kTidZ}, {"%ntid.x", kNtidX}, {"%ntid.y", kNtidY},
      {"%ntid.z", kNtidZ}, {"%ctaid.x", kCtaidX}, {"%ctaid.y", kCtaidY}, {"%ctaid.z", kCtaidZ},
      {"%nctaid.x", kNctaidX}, {"%nctaid.y", kNctaidY}, {"%nctaid.z", kNctaidZ}, {"%laneid", kLaneid},
      {"%warpid", kWarpid}, {"%cluster_ctarank", kClusterRank}, {"%cluster_nctarank", kClusterNrank},
      {"%cluster_ctaid.x", kClusterCtaidX}, {"%cluster_ctaid.y", kClusterCtaidY},
      {"%cluster_ctaid.z", kClusterCtaidZ}, {"%cluster_nctaid.x", kClusterNctaidX},
      {"%cluster_nctaid.y", kClusterNctaidY}, {"%cluster_nctaid.z", kClusterNctaidZ},
      {"%clusterid.x", kClusteridX}, {"%clusterid.y", kClusteridY}, {"%clusterid.z", kClusteridZ},
      {"%nclusterid.x", kNclusteridX}, {"%nclusterid.y", kNclusteridY}, {"%nclusterid.z", kNclusteridZ},
      {"%is_explicit_cluster", kIsExplicitCluster}, {"%globaltimer", kGlobaltimer}, {"%clock64", kClock64}, {"%smid", kSmid}};
  return m;
}

// One kernel body being read.
struct BodyParser {
  Kernel& k;
  std::vector<std::unordered_map<std::string, uint32_t>> scopes{1};
  std::unordered_map<std::string, uint32_t> shared_syms;  // name -> shared offset
  std::unordered_map<std::string, uint32_t> local_syms;   // name -> local offset
  std::unordered_map<std::string, uint32_t> param_syms;   // name -> param offset
  const std::unordered_map<std::string, uint64_t>* global_syms = nullptr;  // name -> address
  // The module's .extern .shared arrays: name -> alignment. They resolve to offset 0 here; finish()
  // adds Kernel::dynamic_base to the operands that named one (dynamic_uses: instruction, operand).
  const std::unordered_map<std::string, uint64_t>* extern_syms = nullptr;
  bool dynamic_named = false;  // set by operand() when it resolved an .extern .shared array
  uint64_t dynamic_align = 1;  // the largest alignment of those the body names
  std::vector<std::pair<size_t, size_t>> dynamic_uses;
  std::unordered_map<std::string, int32_t> labels;
  std::vector<std::pair<size_t, std::string>> fixups;     // (instr, label)
  uint32_t line = 0;

  explicit BodyParser(Kernel& kernel) : k(kernel) { k.registers = kSpecialCount; }

  uint32_t new_reg(const std::string& name) {
    if (k.registers >= (1u << 20)) fail(line, "more than 2^20 registers");
    const uint32_t slot = k.registers++;
    scopes.back()[name] = slot;
    return slot;
  }
  bool find_reg(const std::string& name, uint32_t* slot) const {
    for (size_t i = scopes.size(); i-- > 0;) {
      auto it = scopes[i].find(name);
      if (it != scopes[i].end()) {
        *slot = it->second;
        return true;
      }
    }
    auto sp = specials().find(name);
    if (sp != specials().end()) {
      *slot = sp->second;
      return true;
    }
    return false;
  }
  uint32_t reg(const std::string& name) {
    uint32_t s;
    if (!find_reg(name, &s)) fail(line, "unknown register '" + name + "'");
    return s;
  }

  void declare(const std::string& stmt) {
    // .reg .b32 %r<12>;  .reg .pred p, q;  .shared .align 16 .b8 name[4096];
    const std::vector<std::string> words = words_of(stmt);
    if (words.empty()) return;
    if (words[0] == ".reg") {
      std::string names;
      size_t i = 1;
      while (i < words.size() && words[i][0] == '.') ++i;  // type, .v2...
      for (; i < words.size(); ++i) names += words[i];
      for (const std::string& n : split(names, ',')) {
        const size_t lt = n.find('<');
        if (lt == std::string::npos) {
          new_reg(n);
          continue;
        }
        int64_t count = 0;
        if (!parse_int(n.substr(lt + 1, n.size() - lt - 2), &count) || count < 0 || count > (1 << 20))
          fail(line, "bad register declaration '" + n + "'");
        for (int64_t r = 0; r < count; ++r) new_reg(n.substr(0, lt) + std::to_string(r));
      }
      return;
    }
    if (words[0] == ".shared" || words[0] == ".local") {
      const bool local = words[0] == ".local";
      const VarDecl v = parse_var(words, 1, line);
      const uint64_t align = v.align ? v.align : 1, count = v.count, elem = v.elem;
      const std::string& name = v.name;
      uint32_t& bytes = local ? k.local_bytes : k.shared_bytes;
      uint64_t off = (uint64_t(bytes) + align - 1) / align * align;
      if (off + count * elem > (1u << kClusterShift)) fail(line, std::string(words[0]) + " memory beyond 16 MiB");
      (local ? local_syms : shared_syms)[name] = uint32_t(off);
      bytes = uint32_t(off + count * elem);
      return;
    }
    if (words[0] == ".pragma") return;  // "nounroll": no effect on a simulation
    fail(line, "unsupported declaration '" + words[0] + "'");
  }

  // Whether `name` is one of the module's .extern .shared arrays (and notes that the operand being
  // read names it).
  bool is_dynamic(const std::string& name) {
    if (!extern_syms) return false;
    auto it = extern_syms->find(name);
    if (it == extern_syms->end()) return false;
    dynamic_named = true;
    dynamic_align = std::max(dynamic_align, it->second);
    return true;
  }

  // An operand: register, !pred, d|p, vector, [address], immediate, symbol or label.
  Opnd operand(const std::string& text, Ty t, bool label_ok = false) {
    Opnd o;
    std::string s = trim(text);
    if (s.empty()) fail(line, "empty operand");
    if (s == "_") {
      o.kind = Opnd::Reg;
      o.reg = kSink;
      return o;
    }
    if (s[0] == '{') {
      if (s.back() != '}') fail(line, "bad vector operand '" + s + "'");
      o.kind = Opnd::Vec;
      const std::vector<std::string> el = split(s.substr(1, s.size() - 2), ',');
      if (el.empty() || el.size() > 4) fail(line, "unsupported vector operand '" + s + "' (1 to 4 elements)");
      o.n = uint8_t(el.size());
      for (size_t i = 0; i < el.size(); ++i) o.vec[i] = el[i] == "_" ? kSink : reg(el[i]);
      return o;
    }
    if (s[0] == '[') {
      if (s.back() != ']') fail(line, "bad address operand '" + s + "'");
      o.kind = Opnd::Addr;
      std::string in = trim(s.substr(1, s.size() - 2));
      std::string base = in, off;
      const size_t plus = in.find('+', 1);
      if (plus != std::string::npos) {
        base = trim(in.substr(0, plus));
        off = trim(in.substr(plus + 1));
      }
      int64_t v = 0;
      if (!off.empty() && !parse_int(off, &v)) fail(line, "bad address offset '" + s + "'");
      o.imm = uint64_t(v);
      int64_t abs = 0;
      uint32_t slot;
      if (parse_int(base, &abs)) {
        o.imm += uint64_t(abs);
      } else if (find_reg(base, &slot)) {
        o.has_base = true;
        o.reg = slot;
      } else if (auto p = param_syms.find(base); p != param_syms.end()) {
        o.imm += p->second;
      } else if (auto sh = shared_syms.find(base); sh != shared_syms.end()) {
        o.imm += sh->second;
      } else if (is_dynamic(base)) {  // at offset 0 until finish() adds the dynamic region's
      } else if (auto lo = local_syms.find(base); lo != local_syms.end()) {
        o.imm += lo->second;
      } else if (auto gl = global_syms->find(base); gl != global_syms->end()) {
        o.imm += gl->second;
      } else {
        fail(line, "unknown address '" + base + "'");
      }
      return o;
    }
    if (s[0] == '!') {
      o = operand(s.substr(1), t);
      o.neg = true;
      return o;
    }
    const size_t bar = s.find('|');
    if (bar != std::string::npos) {
      o = operand(s.substr(0, bar), t);
      o.has_pred = true;
      o.pred = reg(trim(s.substr(bar + 1)));
      return o;
    }
    uint32_t slot;
    if (s[0] == '%' || find_reg(s, &slot)) {  // registers need no '%' ("{ .reg .u64 t; ... }")
      o.kind = Opnd::Reg;
      o.reg = reg(s);
      return o;
    }
    if (s.size() == 10 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F')) {
      int64_t bits = 0;
      if (!parse_int("0x" + s.substr(2), &bits)) fail(line, "bad float literal '" + s + "'");
      o.kind = Opnd::Imm;
      o.imm = uint64_t(bits) & 0xffffffffu;
      if (t == Ty::F64) {  // a single-precision literal in a double instruction
        o.imm = std::bit_cast<uint64_t>(double(std::bit_cast<float>(uint32_t(o.imm))));
      }
      return o;
    }
    if (s.size() == 18 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D')) {
      int64_t bits = 0;
      if (!parse_int("0x" + s.substr(2), &bits)) fail(line, "bad double literal '" + s + "'");
      o.kind = Opnd::Imm;
      o.imm = uint64_t(bits);
      return o;
    }
    int64_t v = 0;
    if (parse_int(s, &v)) {
      o.kind = Opnd::Imm;
      o.imm = uint64_t(v);
      return o;
    }
    if (auto sh = shared_syms.find(s); sh != shared_syms.end()) {
      o.kind = Opnd::Imm;
      o.imm = sh->second;
      return o;
    }
    if (is_dynamic(s)) {
      o.kind = Opnd::Imm;
      o.imm = 0;
      return o;
    }
    if (auto lo = local_syms.find(s); lo != local_syms.end()) {
      o.kind = Opnd::Imm;
      o.imm = lo->second;
      return o;
    }
    if (auto p = param_syms.find(s); p != param_syms.end()) {
      o.kind = Opnd::Imm;
      o.imm = p->second;
      return o;
    }
    if (auto gl = global_syms->find(s); gl != global_syms->end()) {
      o.kind = Opnd::Imm;
      o.imm = gl->second;
      return o;
    }
    if (!label_ok) fail(line, "unknown operand '" + s + "'");
    o.kind = Opnd::None;  // a label (bra): resolved at the end of the body
    return o;
  }

  void instruction(const std::string& stmt) {
    Instr in;
    in.line = line;
    std::string s = stmt;
    if (s[0] == '@') {
      const size_t sp = s.find_first_of(" \t");
      if (sp == std::string::npos) fail(line, "bad guard");
      std::string g = s.substr(1, sp - 1);
      if (g[0] == '!') {
        in.guard_neg = true;
        g = g.substr(1);
      }
      in.guard = int32_t(reg(g));
      s = trim(s.substr(sp));
    }
    const size_t sp = s.find_first_of(" \t");
    const std::string opcode = sp == std::string::npos ? s : s.substr(0, sp);
    const std::string rest = sp == std::string::npos ? "" : trim(s.substr(sp));
    std::vector<std::string> mods = split(opcode, '.');
    const std::string base = mods[0];
    mods.erase(mods.begin());
    std::vector<Ty> types;
    auto unsupported = [&]() { fail(line, "unsupported instruction '" + opcode + "'"); };
    // The words that name an operation rather than qualify it: mbarrier's (init, arrive[.expect_tx],
    // expect_tx, try_wait.parity), st.async's completion mechanism, fence.mbarrier_init's kind.
    auto take = [&](const char* w) {
      auto it = std::find(mods.begin(), mods.end(), w);
      if (it == mods.end()) return false;
      mods.erase(it);
      return true;
    };
    std::string mbar;  // mbarrier's operation
    if (base == "mbarrier") {
      if (take("init")) mbar = "init";
      else if (take("arrive")) mbar = take("expect_tx") ? "arrive.expect_tx" : "arrive";
      else if (take("expect_tx")) mbar = "expect_tx";
      else if (take("try_wait") && take("parity")) mbar = "try_wait.parity";
      else unsupported();  // test_wait, try_wait without .parity, arrive_drop, inval, pending_count
    }
    const bool st_async = base == "st" && take("async");
    if (st_async && !(take("weak"), take("mbarrier::complete_tx::bytes"))) unsupported();
    if (base == "fence") take("mbarrier_init");
    for (const std::string& m : mods) {
      const Ty t = type_of(m);
      if (t != Ty::None) {
        types.push_back(t);
        continue;
      }
      if (m == "rn") in.rnd = Rnd::Rn;
      else if (m == "rz") in.rnd = Rnd::Rz;
      else if (m == "rm") in.rnd = Rnd::Rm;
      else if (m == "rp") in.rnd = Rnd::Rp;
      else if (m == "rni") in.rnd = Rnd::Rni;
      else if (m == "rzi") in.rnd = Rnd::Rzi;
      else if (m == "rmi") in.rnd = Rnd::Rmi;
      else if (m == "rpi") in.rnd = Rnd::Rpi;
      else if (m == "ftz") in.ftz = true;
      else if (m == "sat") in.sat = true;
      else if (m == "approx" || m == "full") in.approx = true;
      else if (m == "hi") in.hi = true;
      else if (m == "lo") in.hi = false;
      else if (m == "wide") in.wide = true;
      else if (m == "trans") in.trans = true;
      else if (m == "uni") in.uni = true;
      else if (m == "global") in.space = Space::Global;
      else if (m == "shared" || m == "shared::cta") in.space = Space::Shared;
      else if (m == "shared::cluster") in.space = Space::SharedCluster;
      else if (m == "param") in.space = Space::Param;
      else if (m == "local") in.space = Space::Local;
      else if (m == "const") in.space = Space::Const;
      else if (m == "v2") in.vec = 2;
      else if (m == "v4") in.vec = 4;
      else if (m == "x1") in.count = 1;
      else if (m == "x2") in.count = 2;
      else if (m == "x4") in.count = 4;
      else if (m == "up") in.shfl = ShflMode::Up;
      else if (m == "down") in.shfl = ShflMode::Down;
      else if (m == "bfly") in.shfl = ShflMode::Bfly;
      else if (m == "idx") in.shfl = ShflMode::Idx;
      else if (m.size() > 1 && m[0] == 'm' && std::isdigit(static_cast<unsigned char>(m[1])) && base == "mma") {
        unsigned a = 0, b = 0, c = 0;
        if (std::sscanf(m.c_str(), "m%un%uk%u", &a, &b, &c) != 3) unsupported();
        in.m = a;
        in.nn = b;
        in.k = c;
      } else if (m == "eq") in.cmp = Cmp::Eq;
      else if (m == "ne") in.cmp = Cmp::Ne;
      else if (m == "lt") in.cmp = Cmp::Lt;
      else if (m == "le") in.cmp = Cmp::Le;
      else if (m == "gt") in.cmp = Cmp::Gt;
      else if (m == "ge") in.cmp = Cmp::Ge;
      else if (m == "lo" ) in.cmp = Cmp::Lo;
      else if (m == "ls") in.cmp = Cmp::Ls;
      else if (m == "hs") in.cmp = Cmp::Hs;
      else if (m == "equ") in.cmp = Cmp::Equ;
      else if (m == "neu") in.cmp = Cmp::Neu;
      else if (m == "ltu") in.cmp = Cmp::Ltu;
      else if (m == "leu") in.cmp = Cmp::Leu;
      else if (m == "gtu") in.cmp = Cmp::Gtu;
      else if (m == "geu") in.cmp = Cmp::Geu;
      else if (m == "num") in.cmp = Cmp::Num;
      else if (m == "nan") in.cmp = Cmp::Nan;
      else if (base == "setp" && m == "and") in.boolop = BoolOp::And;
      else if (base == "setp" && m == "or") in.boolop = BoolOp::Or;
      else if (base == "setp" && m == "xor") in.boolop = BoolOp::Xor;
      else if ((base == "atom" || base == "red") && m == "add") in.atom = AtomOp::Add;
      else if ((base == "atom" || base == "red") && m == "min") in.atom = AtomOp::Min;
      else if ((base == "atom" || base == "red") && m == "max") in.atom = AtomOp::Max;
      else if ((base == "atom" || base == "red") && m == "exch") in.atom = AtomOp::Exch;
      else if ((base == "atom" || base == "red") && m == "cas") in.atom = AtomOp::Cas;
      else if ((base == "atom" || base == "red") && m == "and") in.atom = AtomOp::And;
      else if ((base == "atom" || base == "red") && m == "or") in.atom = AtomOp::Or;
      else if ((base == "atom" || base == "red") && m == "xor") in.atom = AtomOp::Xor;
      else if ((base == "atom" || base == "red") && m == "inc") in.atom = AtomOp::Inc;
      else if ((base == "atom" || base == "red") && m == "dec") in.atom = AtomOp::Dec;
      else if (base == "ld" && m == "nc") in.nc = true;
      // ordering, caching, scope and shape qualifiers with no effect on a sequential simulation
      else if (m == "nc" || m == "ca" || m == "cg" || m == "cs" || m == "lu" || m == "cv" || m == "wb" ||
               m == "wt" || m == "volatile" || m == "relaxed" || m == "acquire" || m == "release" ||
               m == "acq_rel" || m == "sc" || m == "gpu" || m == "cta" || m == "sys" || m == "cluster" ||
               m == "sync" || m == "aligned" || m == "row" || m == "col" || m == "gl" || m == "L2::128B" ||
               m == "L2::64B" || m == "L2::256B" || m == "L1::no_allocate" || m == "L1::evict_last" ||
               m == "L1::evict_first" || m == "L1::evict_normal" || m == "L1::evict_unchanged" ||
               m == "m8n8" || m == "to" || m == "arrive" || m == "wait" || m == "commit_group" ||
               m == "wait_group" || m == "wait_all" || m == "async" || m == "noftz" || m == "ptr" ||
               (base == "griddepcontrol" && m == "launch_dependents"))
        ;
      else unsupported();
    }
    if (base == "setp" && !mods.empty() && mods[0] == "lo") in.cmp = Cmp::Lo;
    if (base == "setp" && !mods.empty() && mods[0] == "hi") in.cmp = Cmp::Hi;
    if (base == "setp" && !mods.empty() && (mods[0] == "lo" || mods[0] == "hi")) in.hi = false;
    if (!types.empty()) in.t = types[0];
    if (types.size() > 1) in.t2 = types[1];
    if (types.size() > 2) in.t3 = types[2];
    if (types.size() > 3) in.t4 = types[3];
    const bool has = [&](const char* m) {
      for (const std::string& x : mods)
        if (x == m) return true;
      return false;
    }("to");
    static const std::unordered_map<std::string, Op> ops = {
        {"mov", Op::Mov},     {"add", Op::Add},       {"sub", Op::Sub},         {"mul", Op::Mul},
        {"mad", Op::Mad},     {"fma", Op::Fma},       {"div", Op::Div},         {"rem", Op::Rem},
        {"min", Op::Min},     {"max", Op::Max},       {"abs", Op::Abs},         {"neg", Op::Neg},
        {"and", Op::And},     {"or", Op::Or},         {"xor", Op::Xor},         {"not", Op::Not},
        {"shl", Op::Shl},     {"shr", Op::Shr},       {"bfi", Op::Bfi},         {"bfe", Op::Bfe},
        {"popc", Op::Popc},   {"clz", Op::Clz},       {"brev", Op::Brev},       {"copysign", Op::Copysign},
        {"rcp", Op::Rcp},     {"sqrt", Op::Sqrt},     {"rsqrt", Op::Rsqrt},     {"ex2", Op::Ex2},
        {"lg2", Op::Lg2},     {"sin", Op::Sin},       {"cos", Op::Cos},         {"tanh", Op::Tanh},
        {"cvt", Op::Cvt},     {"setp", Op::Setp},     {"selp", Op::Selp},       {"ld", Op::Ld},
        {"ldu", Op::Ld},      {"st", Op::St},         {"atom", Op::Atom},       {"red", Op::Red},
        {"bra", Op::Bra},     {"ret", Op::Ret},       {"exit", Op::Ret},        {"bar", Op::BarSync},
        {"barrier", Op::BarSync}, {"membar", Op::Nop}, {"fence", Op::Nop},      {"shfl", Op::Shfl},
        {"ldmatrix", Op::Ldmatrix}, {"mma", Op::Mma}, {"mapa", Op::Mapa},       {"prmt", Op::Prmt},
        {"mul24", Op::Mul},   {"mad24", Op::Mad}};
    if (base == "cvta") {
      in.op = has ? Op::CvtaTo : Op::Cvta;
    } else if (base == "cp" && !mods.empty() && mods[0] == "async") {
      const bool copy = mods.size() > 1 && (mods[1] == "ca" || mods[1] == "cg");
      in.op = copy ? Op::CpAsync : Op::Nop;  // commit_group / wait_group: the copy was made at issue
    } else if ((base == "barrier" || base == "bar") && in.space == Space::Generic &&
               std::find(mods.begin(), mods.end(), "cluster") != mods.end()) {
      const bool arrive = std::find(mods.begin(), mods.end(), "arrive") != mods.end();
      const bool wait = std::find(mods.begin(), mods.end(), "wait") != mods.end();
      if (arrive == wait) unsupported();
      in.op = arrive ? Op::ClusterArrive : Op::ClusterWait;
    } else if (base == "mbarrier") {
      in.op = mbar == "init"              ? Op::MbarInit
              : mbar == "expect_tx"       ? Op::MbarExpectTx
              : mbar == "try_wait.parity" ? Op::MbarTryWait
                                          : Op::MbarArrive;
      in.expect_tx = mbar == "arrive.expect_tx";  // with a transaction count
      if (in.space == Space::Generic) unsupported();  // generic-address mbarriers: not simulated
    } else if (st_async) {
      if (in.space != Space::SharedCluster) unsupported();
      in.op = Op::StAsync;
    } else if (base == "griddepcontrol") {  // programmatic dependent launch; launches run one by one here
      if (mods.size() != 1 || (mods[0] != "wait" && mods[0] != "launch_dependents")) unsupported();
      in.op = mods[0] == "wait" ? Op::GridDepWait : Op::Nop;
      k.grid_dep_wait |= in.op == Op::GridDepWait;
    } else if (base == "bar" || base == "barrier") {
      if (std::find(mods.begin(), mods.end(), "sync") == mods.end() &&
          !(base == "barrier" && mods.empty()))
        unsupported();  // bar.arrive, bar.red: not simulated
      in.op = Op::BarSync;
    } else {
      auto it = ops.find(base);
      if (it == ops.end()) unsupported();
      in.op = it->second;
    }
    if (in.op == Op::Mul && base == "mul24") unsupported();
    if (in.op == Op::Mad && base == "mad24") unsupported();
    const std::vector<std::string> args = rest.empty() ? std::vector<std::string>{} : split(rest, ',');
    if (args.size() > 5) fail(line, "too many operands (5 at most)");
    in.nops = uint8_t(args.size());
    Ty opt = in.t;
    for (size_t i = 0; i < args.size(); ++i) {
      dynamic_named = false;
      in.o[i] = operand(args[i], opt, in.op == Op::Bra);
      if (dynamic_named) dynamic_uses.emplace_back(k.code.size(), i);
    }
    if (in.op == Op::Bra) {
      if (args.size() != 1) fail(line, "bra takes one label");
      fixups.emplace_back(k.code.size(), trim(args[0]));
    }
    if (in.op == Op::BarSync && in.nops > 1) unsupported();  // a thread count: partial barriers
    if ((in.op == Op::MbarInit || in.op == Op::MbarExpectTx) && in.nops != 2) unsupported();
    if (in.op == Op::MbarArrive && in.nops != (in.expect_tx ? 3 : 2)) unsupported();  // arrive's count operand: not simulated
    if (in.op == Op::MbarTryWait && in.nops != 3) unsupported();  // the suspend-time hint: not simulated
    if (in.op == Op::StAsync && (in.nops != 3 || in.o[2].kind != Opnd::Addr)) unsupported();
    if (in.op == Op::Mma && !(in.m == 16 && in.nn == 8 && (in.k == 16 || in.k == 8))) unsupported();
    if (in.op == Op::Mma && !((in.t3 == Ty::F16 || in.t3 == Ty::BF16) && in.t2 == in.t3 &&
                              (in.t == Ty::F32 || in.t == Ty::F16) && in.t4 == in.t))
      unsupported();
    if (in.op == Op::Ldmatrix && in.t != Ty::B16) unsupported();
    in.plain = in.t == Ty::F32 && !in.ftz && !in.sat && !in.approx && (in.rnd == Rnd::Default || in.rnd == Rnd::Rn);
    k.code.push_back(in);
    k.labels.push_back(trim(stmt));
  }

  void statement(const std::string& raw) {
    const std::string s = trim(raw);
    if (s.empty()) return;
    if (s[0] == '.') {
      declare(s);
      return;
    }
    instruction(s);
  }

  void finish() {
    for (const auto& [at, label] : fixups) {
      auto it = labels.find(label);
      if (it == labels.end()) fail(k.code[at].line, "unknown label '" + label + "'");
      k.code[at].target = it->second;
    }
    // Dynamic shared memory follows the static symbols, now that all of them are known.
    const uint64_t base = (uint64_t(k.shared_bytes) + dynamic_align - 1) / dynamic_align * dynamic_align;
    if (base >= (1u << kClusterShift)) fail(line, "shared memory beyond 16 MiB");
    k.dynamic_base = uint32_t(base);
    for (const auto& [at, i] : dynamic_uses) k.code[at].o[i].imm += base;
    Instr ret;  // falling off the end returns
    ret.op = Op::Ret;
    ret.line = line;
    k.code.push_back(ret);
    k.labels.push_back("(end of kernel)");
  }
};

// Replaces comments by spaces (newlines kept, so line numbers stay true).
std::string strip_comments(const std::string& in) {
  std::string out = in;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '/' && i + 1 < out.size() && out[i + 1] == '/') {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    } else if (out[i] == '/' && i + 1 < out.size() && out[i + 1] == '*') {
      while (i + 1 < out.size() && !(out[i] == '*' && out[i + 1] == '/')) {
        if (out[i] != '\n') out[i] = ' ';
        ++i;
      }
      if (i + 1 < out.size()) out[i] = out[i + 1] = ' ';
    }
  }
  return out;
}

struct Reader {
  const std::string& s;
  size_t pos = 0;
  uint32_t line = 1;
  explicit Reader(const std::string& text) : s(text) {}
  bool eof() {
    skip_ws();
    return pos >= s.size();
  }
  void skip_ws() {
    while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos]))) {
      if (s[pos] == '\n') ++line;
      ++pos;
    }
  }
  char peek() {
    skip_ws();
    return pos < s.size() ? s[pos] : '\0';
  }
  std::string word() {
    skip_ws();
    size_t b = pos;
    while (pos < s.size() && !std::isspace(static_cast<unsigned char>(s[pos])) && s[pos] != '(' &&
           s[pos] != ')' && s[pos] != ',' && s[pos] != '{' && s[pos] != ';')
      ++pos;
    return s.substr(b, pos - b);
  }
  std::string rest_of_line() {
    size_t b = pos;
    while (pos < s.size() && s[pos] != '\n') ++pos;
    return s.substr(b, pos - b);
  }
  // Up to (not including) `c`, counting lines; consumes `c`.
  std::string until(char c) {
    size_t b = pos;
    while (pos < s.size() && s[pos] != c) {
      if (s[pos] == '\n') ++line;
      ++pos;
    }
    if (pos >= s.size()) fail(line, std::string("expected '") + c + "'");
    ++pos;
    return s.substr(b, pos - 1 - b);
  }
};

// .global .align A .TYPE NAME[N] {= {v, ...}};  zero-filled unless initialised.
void parse_global(Reader& r, Module& m, std::unordered_map<std::string, uint64_t>& syms) {
  const uint32_t at = r.line;
  const std::string decl = r.until(';');
  std::string body = decl, init;
  if (const size_t eq = decl.find('='); eq != std::string::npos) {
    body = decl.substr(0, eq);
    init = trim(decl.substr(eq + 1));
  }
  const VarDecl v = parse_var(words_of(body), 0, at);
  const std::string& name = v.name;
  uint64_t align = v.align;
  const uint64_t elem = v.elem, count = v.count;
  GlobalVar g;
  g.name = name;
  g.bytes = elem * count;
  align = std::max<uint64_t>(align, 16);
  g.storage.reset(new uint8_t[g.bytes + align]());
  g.data = g.storage.get() + (align - reinterpret_cast<uintptr_t>(g.storage.get()) % align) % align;
  if (!init.empty()) {
    if (init.front() == '{') init = init.substr(1, init.size() - 2);
    const std::vector<std::string> vals = split(init, ',');
    if (vals.size() > count) fail(at, "too many initialisers for " + name);
    for (size_t i = 0; i < vals.size(); ++i) {
      int64_t v = 0;
      if (!parse_int(vals[i], &v)) fail(at, "unsupported initialiser '" + vals[i] + "'");
      std::memcpy(g.data + i * elem, &v, elem);
    }
  }
  syms[name] = reinterpret_cast<uint64_t>(g.data);
  m.globals.push_back(std::move(g));
}

// .extern .shared .align A .TYPE NAME[];  an array of dynamic shared memory (extern __shared__):
// no storage of its own, every kernel's starts at that kernel's dynamic region. `syms`: name ->
// alignment (the element size without .align). Other .extern declarations (device functions,
// variables of other modules) stay refused: the simulator links nothing.
void parse_extern(Reader& r, std::unordered_map<std::string, uint64_t>& syms) {
  const uint32_t at = r.line;
  const std::vector<std::string> words = words_of(r.until(';'));
  if (words.empty() || words[0] != ".shared")
    fail(at, "module-scope '.extern " + (words.empty() ? std::string() : words[0]) +
                 "' (device functions, variables of other modules) is not simulated");
  const VarDecl v = parse_var(words, 1, at, /*unsized_ok=*/true);
  if (!v.unsized)
    fail(at, "'.extern .shared' variable '" + v.name + "' with a size: only unsized arrays (NAME[], dynamic "
                 "shared memory) are simulated");
  syms[v.name] = v.align ? v.align : v.elem;
}

void parse_entry(Reader& r, Module& m, const std::unordered_map<std::string, uint64_t>& globals,
                 const std::unordered_map<std::string, uint64_t>& externs) {
  Kernel k;
  std::string name = r.word();
  if (name.empty()) fail(r.line, "entry without a name");
  if (r.peek() != '(') fail(r.line, "expected '(' after entry " + name);
  ++r.pos;
  k.name = name;
  BodyParser body(k);
  body.global_syms = &globals;
  body.extern_syms = &externs;
  const std::string plist = r.until(')');
  uint32_t off = 0;
  for (const std::string& p : split(plist, ',')) {
    if (p.empty()) continue;
    // .param .u64 .ptr .align 1 NAME   |  .param .align 8 .b8 NAME[16]
    const VarDecl v = parse_var(words_of(p), 0, r.line);
    if (v.elem * v.count > 4096) fail(r.line, "bad param '" + p + "'");
    const uint32_t size = uint32_t(v.elem * v.count), align = uint32_t(v.align);
    const std::string& pname = v.name;
    const uint32_t al = align ? align : std::min<uint32_t>(size, 8);
    off = (off + al - 1) / al * al;
    k.params.push_back({pname, off, size});
    body.param_syms[pname] = off;
    off += size;
  }
  k.param_bytes = off;
  // performance directives up to the body
  while (r.peek() != '{') {
    if (r.eof()) fail(r.line, "entry " + name + " without a body");
    const std::string d = r.word();
    std::vector<int64_t> v;
    while (true) {
      const char c = r.peek();
      if (!(std::isdigit(static_cast<unsigned char>(c)) || c == ',')) break;
      if (c == ',') {
        ++r.pos;
        continue;
      }
      int64_t x = 0;
      if (!parse_int(r.word(), &x)) fail(r.line, "bad directive " + d);
      v.push_back(x);
    }
    if (d == ".maxntid" || d == ".reqntid") {
      int64_t n = 1;
      for (int64_t x : v) n *= x;
      if (n <= 0 || n > 1024) fail(r.line, "bad " + d);
      k.max_threads = uint32_t(n);
    } else if (d == ".reqnctapercluster") {
      for (size_t i = 0; i < 3; ++i) k.cluster[i] = i < v.size() ? uint32_t(v[i]) : 1;
      if (k.cluster[0] * k.cluster[1] * k.cluster[2] == 0 || k.cluster[0] * k.cluster[1] * k.cluster[2] > 32)
        fail(r.line, "bad .reqnctapercluster");
    } else if (d == ".explicitcluster" || d == ".minnctapersm" || d == ".maxnreg" || d == ".maxclusterrank" ||
               d == ".noreturn" || d == ".pragma") {
    } else {
      fail(r.line, "unsupported entry directive '" + d + "'");
    }
  }
  ++r.pos;  // '{'
  int depth = 1;
  while (depth > 0) {
    r.skip_ws();
    if (r.pos >= r.s.size()) fail(r.line, "entry " + name + ": body not closed");
    body.line = r.line;
    const char c = r.s[r.pos];
    if (c == '{') {
      ++r.pos;
      ++depth;
      body.scopes.emplace_back();
      continue;
    }
    if (c == '}') {
      ++r.pos;
      --depth;
      if (depth > 0) body.scopes.pop_back();
      continue;
    }
    // a label?
    size_t e = r.pos;
    while (e < r.s.size() && (std::isalnum(static_cast<unsigned char>(r.s[e])) || r.s[e] == '_' || r.s[e] == '$'))
      ++e;
    if (e > r.pos && e < r.s.size() && r.s[e] == ':' && (e + 1 >= r.s.size() || r.s[e + 1] != ':')) {
      const std::string name = r.s.substr(r.pos, e - r.pos);
      // one namespace per kernel: a label declared again (legal PTX in a nested scope) is refused
      if (!body.labels.emplace(name, int32_t(k.code.size())).second)
        fail(r.line, "label '" + name + "' declared twice in one kernel (labels of nested scopes are not simulated)");
      r.pos = e + 1;
      continue;
    }
    const uint32_t start_line = r.line;
    const std::string stmt = r.until(';');
    body.line = start_line;
    body.statement(stmt);
  }
  body.finish();
  m.kernels.push_back(std::move(k));
}

}  // namespace

std::unique_ptr<Module> parse_module(const std::string& ptx) {
  auto m = std::make_unique<Module>();
  const std::string text = strip_comments(ptx);
  Reader r(text);
  std::unordered_map<std::string, uint64_t> globals;
  std::unordered_map<std::string, uint64_t> externs;  // .extern .shared arrays: name -> alignment
  while (!r.eof()) {
    const std::string w = r.word();
    if (w == ".version" || w == ".target" || w == ".address_size") {
      r.rest_of_line();
    } else if (w == ".visible" || w == ".weak") {
      continue;
    } else if (w == ".entry") {
      parse_entry(r, *m, globals, externs);
    } else if (w == ".global") {
      parse_global(r, *m, globals);
    } else if (w == ".extern") {
      parse_extern(r, externs);
    } else if (w == ".func" || w == ".const" || w == ".shared") {
      fail(r.line, "module-scope '" + w + "' (device functions, constant or shared variables) is not simulated");
    } else {
      fail(r.line, "unexpected '" + w + "'");
    }
  }
  if (m->kernels.empty()) throw SimError("cudasim: no .entry in the PTX");
  return m;
}

}  // namespace opv::cudasim
