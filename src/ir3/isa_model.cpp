// Loads the encoding table text (isa_table.cpp) into bitsets and flattens every concrete
// encoding along its `extends` chain; evaluates the table's expressions; and implements the
// decoded-node queries that decode, print and the simulator share.
//
// Steps: (1) tokenize the table line by line into enums and bitsets; (2) parse expressions into
// small trees; (3) for each bitset that nothing extends, merge patterns, fields, overrides and
// display from the root down (a child's pattern or field replaces the parent's bits);
// (4) index the leaves under every ancestor name so a field of type "#multisrc" finds its forms.
// Invariant: every leaf has a display template and a fixed size; a malformed table is a bug and
// fails loudly on first use.
#include "ir3/isa_model.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <mutex>
#include <sstream>

#include "core/error.h"

namespace opv::ir3::detail {

// ---------------------------------------------------------------- expressions
struct Expr {
  enum Kind { Num, Field, Gpu, Un, Bin, Cond } kind = Num;
  int64_t num = 0;
  std::string name;
  char op = 0;       // unary: '!', '~', '-'; binary: see bin_ops
  std::string bop;
  ExprP a, b, c;
};

namespace {

struct ExprParser {
  const std::string& s;
  size_t p = 0;
  int line;
  ExprParser(const std::string& text, int ln) : s(text), line(ln) {}

  void ws() {
    while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p]))) ++p;
  }
  [[noreturn]] void bad(const char* what) {
    fail("ir3 table line ", line, ": ", what, " in expression `", s, "` at ", p);
  }
  bool eat(const char* t) {
    ws();
    size_t n = std::strlen(t);
    if (s.compare(p, n, t) == 0) {
      // don't split "<<" as "<" or "&&" as "&"
      if (n == 1 && p + 1 < s.size() && (t[0] == '<' || t[0] == '>' || t[0] == '&' || t[0] == '|' || t[0] == '=') &&
          s[p + 1] == t[0])
        return false;
      if (n == 1 && (t[0] == '<' || t[0] == '>' || t[0] == '!') && p + 1 < s.size() && s[p + 1] == '=') return false;
      p += n;
      return true;
    }
    return false;
  }
  ExprP primary() {
    ws();
    if (p >= s.size()) bad("unexpected end");
    auto e = std::make_shared<Expr>();
    char c = s[p];
    if (c == '(') {
      ++p;
      ExprP in = ternary();
      if (!eat(")")) bad("missing )");
      return in;
    }
    if (c == '{') {
      size_t q = s.find('}', p);
      if (q == std::string::npos) bad("missing }");
      e->kind = Expr::Field;
      e->name = s.substr(p + 1, q - p - 1);
      p = q + 1;
      return e;
    }
    if (s.compare(p, 12, "ISA_GPU_ID()") == 0) {
      p += 12;
      e->kind = Expr::Gpu;
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t used = 0;
      e->num = static_cast<int64_t>(std::stoull(s.substr(p), &used, 0));
      p += used;
      while (p < s.size() && (s[p] == 'U' || s[p] == 'L')) ++p;
      return e;
    }
    if (c == '!' || c == '~' || c == '-') {
      ++p;
      e->kind = Expr::Un;
      e->op = c;
      e->a = primary();
      return e;
    }
    bad("unexpected character");
  }
  static int prec(const std::string& op) {
    static const char* levels[][4] = {{"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="},
                                      {"<", "<=", ">", ">="}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"}};
    for (int i = 0; i < 10; ++i)
      for (const char* o : levels[i])
        if (o && op == o) return i + 1;
    return 0;
  }
  bool peek_op(std::string& op) {
    ws();
    static const char* ops[] = {"||", "&&", "==", "!=", "<=", ">=", "<<", ">>", "|", "^", "&", "<", ">", "+", "-", "*", "/", "%"};
    for (const char* o : ops) {
      size_t n = std::strlen(o);
      if (s.compare(p, n, o) == 0) {
        op = o;
        return true;
      }
    }
    return false;
  }
  ExprP binary(int min_prec) {
    ExprP lhs = primary();
    std::string op;
    while (peek_op(op) && prec(op) >= min_prec) {
      p += op.size();
      ExprP rhs = binary(prec(op) + 1);
      auto e = std::make_shared<Expr>();
      e->kind = Expr::Bin;
      e->bop = op;
      e->a = lhs;
      e->b = rhs;
      lhs = e;
    }
    return lhs;
  }
  ExprP ternary() {
    ExprP c = binary(1);
    if (eat("?")) {
      auto e = std::make_shared<Expr>();
      e->kind = Expr::Cond;
      e->a = c;
      e->b = ternary();
      if (!eat(":")) bad("missing :");
      e->c = ternary();
      return e;
    }
    return c;
  }
};

}  // namespace

ExprP parse_expr(const std::string& text, int line) {
  ExprParser ps(text, line);
  ExprP e = ps.ternary();
  ps.ws();
  if (ps.p != text.size()) ps.bad("trailing text");
  return e;
}

int64_t eval(const Expr& e, const Node& n) {
  return eval(e, [&n](const std::string& name) { return n.value(name); });
}

int64_t eval(const Expr& e, const Lookup& n) {
  switch (e.kind) {
    case Expr::Num: return e.num;
    case Expr::Gpu: return n("ISA_GPU_ID");
    case Expr::Field: return n(e.name);
    case Expr::Un: {
      int64_t v = eval(*e.a, n);
      return e.op == '!' ? !v : e.op == '~' ? ~v : -v;
    }
    case Expr::Cond: return eval(*e.a, n) ? eval(*e.b, n) : eval(*e.c, n);
    case Expr::Bin: {
      const std::string& o = e.bop;
      if (o == "||") return eval(*e.a, n) || eval(*e.b, n);
      if (o == "&&") return eval(*e.a, n) && eval(*e.b, n);
      int64_t a = eval(*e.a, n), b = eval(*e.b, n);
      if (o == "|") return a | b;
      if (o == "^") return a ^ b;
      if (o == "&") return a & b;
      if (o == "==") return a == b;
      if (o == "!=") return a != b;
      if (o == "<") return a < b;
      if (o == "<=") return a <= b;
      if (o == ">") return a > b;
      if (o == ">=") return a >= b;
      if (o == "<<") return static_cast<int64_t>(static_cast<uint64_t>(a) << (b & 63));
      if (o == ">>") return a >> (b & 63);
      if (o == "+") return a + b;
      if (o == "-") return a - b;
      if (o == "*") return a * b;
      if (o == "/") return b ? a / b : 0;
      if (o == "%") return b ? a % b : 0;
    }
  }
  return 0;
}

// ---------------------------------------------------------------- bits
uint64_t extract(uint64_t v, int lo, int hi) {
  int w = hi - lo + 1;
  if (w <= 0) return 0;
  uint64_t m = w >= 64 ? ~0ull : ((1ull << w) - 1);
  return (v >> lo) & m;
}

int64_t sign_extend(uint64_t v, int width) {
  if (width <= 0 || width >= 64) return static_cast<int64_t>(v);
  uint64_t m = 1ull << (width - 1);
  v &= (1ull << width) - 1;
  return static_cast<int64_t>((v ^ m) - m);
}

static uint64_t range_mask(int lo, int hi) {
  int w = hi - lo + 1;
  return (w >= 64 ? ~0ull : ((1ull << w) - 1)) << lo;
}

// ---------------------------------------------------------------- table loading
namespace {

struct Tok {
  std::string text;
  bool quoted = false;
};

std::vector<Tok> tokenize(const std::string& line, int ln) {
  std::vector<Tok> out;
  size_t p = 0;
  while (p < line.size()) {
    if (std::isspace(static_cast<unsigned char>(line[p]))) {
      ++p;
      continue;
    }
    Tok t;
    if (line[p] == '"') {
      size_t q = line.find('"', p + 1);
      if (q == std::string::npos) fail("ir3 table line ", ln, ": unterminated string");
      t.text = line.substr(p + 1, q - p - 1);
      t.quoted = true;
      p = q + 1;
    } else {
      size_t q = p;
      while (q < line.size() && !std::isspace(static_cast<unsigned char>(line[q]))) ++q;
      t.text = line.substr(p, q - p);
      p = q;
    }
    out.push_back(t);
  }
  return out;
}

void parse_range(const std::string& r, int& lo, int& hi, int ln) {
  size_t d = r.find('-');
  try {
    if (d == std::string::npos) {
      lo = hi = std::stoi(r);
    } else {
      lo = std::stoi(r.substr(0, d));
      hi = std::stoi(r.substr(d + 1));
    }
  } catch (...) {
    fail("ir3 table line ", ln, ": bad bit range `", r, "`");
  }
  if (lo < 0 || hi > 63 || hi < lo) fail("ir3 table line ", ln, ": bad bit range `", r, "`");
}

FType type_of(const std::string& t) {
  if (t == "bool") return FType::Bool;
  if (t == "boolinv") return FType::BoolInv;
  if (t == "uint") return FType::Uint;
  if (t == "int") return FType::Int;
  if (t == "hex") return FType::Hex;
  if (t == "offset") return FType::Offset;
  if (t == "uoffset") return FType::UOffset;
  if (t == "float") return FType::Float;
  if (t == "branch") return FType::Branch;
  return FType::Bitset;  // '#name': enum or bitset, fixed after loading
}

struct Loader {
  Isa& isa;
  std::vector<BitsetDef> defs;

  void load(const char* text) {
    std::istringstream in(text);
    std::string line;
    int ln = 0;
    BitsetDef* cur = nullptr;
    Variant* ovr = nullptr;
    while (std::getline(in, line)) {
      ++ln;
      size_t c = line.find("//");
      if (c != std::string::npos) line = line.substr(0, c);
      std::vector<Tok> t = tokenize(line, ln);
      if (t.empty()) continue;
      const std::string& kw = t[0].text;
      auto need = [&](size_t n) {
        if (t.size() < n) fail("ir3 table line ", ln, ": `", kw, "` needs ", n - 1, " arguments");
      };
      if (kw == "enum") {
        need(2);
        EnumDef e;
        e.name = t[1].text;
        for (size_t i = 2; i < t.size(); ++i) {
          // value:display, or value: followed by a quoted display token
          std::string v = t[i].text;
          size_t col = v.find(':');
          if (col == std::string::npos) fail("ir3 table line ", ln, ": enum entry `", v, "` needs value:display");
          std::string disp = v.substr(col + 1);
          if (disp.empty() && i + 1 < t.size() && t[i + 1].quoted) disp = t[++i].text;
          e.values.push_back({std::stoll(v.substr(0, col), nullptr, 0), disp});
        }
        isa.enums[e.name] = e;
        cur = nullptr;
        ovr = nullptr;
        continue;
      }
      if (kw == "bitset") {
        need(2);
        defs.emplace_back();
        cur = &defs.back();
        ovr = nullptr;
        cur->name = t[1].text;
        cur->line = ln;
        for (size_t i = 2; i < t.size(); ++i) {
          if (t[i].text == ":" && i + 1 < t.size()) cur->parent = t[++i].text;
          else if (t[i].text == "size" && i + 1 < t.size()) cur->size = std::stoi(t[++i].text);
          else fail("ir3 table line ", ln, ": bad bitset header");
        }
        continue;
      }
      if (!cur) fail("ir3 table line ", ln, ": `", kw, "` outside a bitset");
      if (kw == "ovr") {
        size_t at = line.find("ovr") + 3;
        cur->overrides.emplace_back();
        ovr = &cur->overrides.back();
        ovr->cond = parse_expr(line.substr(at), ln);
        continue;
      }
      if (kw == "end") {
        ovr = nullptr;
        continue;
      }
      if (kw == "gen") {
        need(2);
        cur->has_gen = true;
        cur->gen_min = std::stoi(t[1].text);
        if (t.size() > 2) cur->gen_max = std::stoi(t[2].text);
        continue;
      }
      if (kw == "show") {
        size_t at = line.find("show") + 4;
        std::string d = line.substr(at);
        size_t b = d.find_first_not_of(" \t");
        d = b == std::string::npos ? "" : d.substr(b);
        while (!d.empty() && std::isspace(static_cast<unsigned char>(d.back()))) d.pop_back();
        if (ovr) {
          ovr->display = d;
          ovr->has_display = true;
        } else {
          cur->display = d;
          cur->has_display = true;
        }
        continue;
      }
      if (kw == "pat" || kw == "assert") {
        need(3);
        int lo, hi;
        parse_range(t[1].text, lo, hi, ln);
        const std::string& b = t[2].text;
        if (static_cast<int>(b.size()) != hi - lo + 1) fail("ir3 table line ", ln, ": pattern width mismatch");
        uint64_t care = 0, val = 0, x = 0;
        for (int i = 0; i <= hi - lo; ++i) {
          int bit = hi - i;
          char ch = b[i];
          if (ch == '1') {
            care |= 1ull << bit;
            val |= 1ull << bit;
          } else if (ch == '0') {
            care |= 1ull << bit;
          } else if (ch == 'x') {
            x |= 1ull << bit;
          } else {
            fail("ir3 table line ", ln, ": bad pattern `", b, "`");
          }
        }
        if (kw == "pat") {
          if (ovr) fail("ir3 table line ", ln, ": pattern inside an override");
          cur->pats.push_back({care, val});
          cur->pat_x.push_back(x);
        } else if (ovr) {
          ovr->amask |= care;
          ovr->aval |= val;
        } else {
          cur->amask |= care;
          cur->aval |= val;
        }
        continue;
      }
      if (kw == "inv") {
        need(3);
        std::vector<FieldDef>& fs = ovr ? ovr->fields : cur->fields;
        if (fs.empty() || !fs.back().derived()) fail("ir3 table line ", ln, ": `inv` must follow a derived value");
        size_t at = line.find(t[1].text, line.find("inv") + 3) + t[1].text.size();
        fs.back().inverse.push_back({t[1].text, parse_expr(line.substr(at), ln)});
        continue;
      }
      if (kw == "fld" || kw == "der") {
        need(3);
        FieldDef f;
        f.name = t[1].text;
        size_t i = 2;
        if (kw == "fld") {
          parse_range(t[2].text, f.lo, f.hi, ln);
          f.width = f.hi - f.lo + 1;
          i = 3;
          need(4);
        } else {
          f.lo = 0;
          f.hi = -1;
        }
        f.tname = t[i].text;
        f.type = type_of(f.tname);
        ++i;
        for (; i < t.size(); ++i) {
          const Tok& a = t[i];
          if (a.quoted) {
            f.display = a.text;
            f.has_display = true;
          } else if (a.text == "is") {
            size_t at = line.find(" is ");
            if (at == std::string::npos) fail("ir3 table line ", ln, ": derived needs ` is EXPR`");
            f.expr = parse_expr(line.substr(at + 4), ln);
            break;
          } else if (a.text.size() > 1 && a.text[0] == 'w' && std::isdigit(static_cast<unsigned char>(a.text[1]))) {
            f.width = std::stoi(a.text.substr(1));
          } else {
            size_t gt = a.text.find('>');
            if (gt == std::string::npos) f.params.push_back({a.text, a.text});
            else f.params.push_back({a.text.substr(0, gt), a.text.substr(gt + 1)});
          }
        }
        if (kw == "der" && !f.expr) fail("ir3 table line ", ln, ": derived `", f.name, "` has no expression");
        (ovr ? ovr->fields : cur->fields).push_back(f);
        continue;
      }
      fail("ir3 table line ", ln, ": unknown keyword `", kw, "`");
    }
  }

  const BitsetDef* find_def(const std::string& name) const {
    for (const BitsetDef& d : defs)
      if (d.name == name) return &d;
    return nullptr;
  }

  void fix_types(std::vector<FieldDef>& fs, int line) {
    for (FieldDef& f : fs) {
      if (f.type != FType::Bitset) continue;
      if (isa.enums.count(f.tname)) f.type = FType::Enum;
      else if (!find_def(f.tname)) fail("ir3 table line ", line, ": unknown type `", f.tname, "` of field ", f.name);
    }
  }

  void flatten() {
    for (BitsetDef& d : defs) {
      fix_types(d.fields, d.line);
      for (Variant& v : d.overrides) fix_types(v.fields, d.line);
    }
    std::map<std::string, int> has_children;
    for (const BitsetDef& d : defs)
      if (!d.parent.empty()) has_children[d.parent]++;
    for (const BitsetDef& d : defs) {
      if (has_children.count(d.name)) continue;
      std::vector<const BitsetDef*> chain;
      for (const BitsetDef* p = &d; p;) {
        chain.push_back(p);
        if (p->parent.empty()) break;
        const BitsetDef* q = find_def(p->parent);
        if (!q) fail("ir3 table line ", p->line, ": unknown parent `", p->parent, "`");
        p = q;
      }
      std::reverse(chain.begin(), chain.end());
      auto leaf = std::make_unique<Leaf>();
      leaf->name = d.name;
      leaf->def = &d;
      leaf->size = 0;
      bool have_display = false;
      for (const BitsetDef* b : chain) {
        if (b->size) leaf->size = b->size;
        if (b->has_gen) {
          leaf->gen_min = std::max(leaf->gen_min, b->gen_min);
          leaf->gen_max = std::min(leaf->gen_max, b->gen_max);
        }
        for (const FieldDef& f : b->fields) {
          if (!f.derived()) {
            uint64_t m = range_mask(f.lo, f.hi);
            leaf->mask &= ~m;
            leaf->match &= ~m;
          }
          auto it = std::find_if(leaf->fields.begin(), leaf->fields.end(),
                                 [&](const FieldDef& g) { return g.name == f.name; });
          if (it != leaf->fields.end()) *it = f;
          else leaf->fields.push_back(f);
        }
        for (size_t i = 0; i < b->pats.size(); ++i) {
          uint64_t all = b->pats[i].first | b->pat_x[i];
          leaf->mask &= ~all;
          leaf->match &= ~all;
          leaf->mask |= b->pats[i].first;
          leaf->match |= b->pats[i].second;
        }
        leaf->amask |= b->amask;
        leaf->aval = (leaf->aval & ~b->amask) | b->aval;
        if (b->has_display) have_display = true;
      }
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        for (const Variant& v : (*it)->overrides) leaf->cases.push_back(v);
        if ((*it)->has_display) {
          Variant dv;
          dv.display = (*it)->display;
          dv.has_display = true;
          leaf->cases.push_back(dv);
        }
      }
      if (leaf->size == 0) fail("ir3 table line ", d.line, ": bitset `", d.name, "` has no size");
      if (!have_display) fail("ir3 table line ", d.line, ": bitset `", d.name, "` has no display");
      leaf->index = static_cast<int>(isa.all_leaves.size());
      const Leaf* lp = leaf.get();
      isa.all_leaves.push_back(std::move(leaf));
      for (const BitsetDef* b : chain) isa.leaves_of[b->name].push_back(lp);
    }
  }
};

}  // namespace

const std::vector<const Leaf*>& Isa::candidates(const std::string& bitset) const {
  static const std::vector<const Leaf*> none;
  auto it = leaves_of.find(bitset);
  return it == leaves_of.end() ? none : it->second;
}

void Isa::build_index() {
  for (const auto& [name, leaves] : leaves_of) {
    LeafIndex& ix = index_of[name];
    if (leaves.size() >= 8) {
      std::array<size_t, 64> fixed_by{};
      for (const Leaf* l : leaves)
        for (int b = 0; b < 64; ++b)
          if ((l->mask >> b) & 1) ++fixed_by[size_t(b)];
      std::vector<int> order(64);
      for (int b = 0; b < 64; ++b) order[size_t(b)] = b;
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return fixed_by[size_t(a)] > fixed_by[size_t(b)]; });
      for (int b : order)
        if (ix.pos.size() < 8 && fixed_by[size_t(b)] * 2 > leaves.size()) ix.pos.push_back(b);
    }
    ix.buckets.resize(size_t(1) << ix.pos.size());
    for (size_t key = 0; key < ix.buckets.size(); ++key)
      for (const Leaf* l : leaves) {
        bool agrees = true;
        for (size_t j = 0; j < ix.pos.size() && agrees; ++j) {
          const int b = ix.pos[j];
          agrees = !((l->mask >> b) & 1) || ((l->match >> b) & 1) == ((key >> j) & 1);
        }
        if (agrees) ix.buckets[key].push_back(l);
      }
  }
}

const std::vector<const Leaf*>& Isa::LeafIndex::bucket(uint64_t bits) const {
  size_t key = 0;
  for (size_t j = 0; j < pos.size(); ++j) key |= size_t((bits >> pos[j]) & 1) << j;
  return buckets[key];
}

const Isa& isa() {
  static std::once_flag once;
  static std::unique_ptr<Isa> the;
  static std::unique_ptr<std::vector<BitsetDef>> defs;
  std::call_once(once, [] {
    auto i = std::make_unique<Isa>();
    Loader ld{*i, {}};
    ld.defs.reserve(1024);
    ld.load(isa_table_text());
    ld.flatten();
    i->build_index();
    // Leaves point into defs: keep them alive with the Isa.
    defs = std::make_unique<std::vector<BitsetDef>>(std::move(ld.defs));
    the = std::move(i);
  });
  return *the;
}

// ---------------------------------------------------------------- nodes
const FieldDef* find_field(const Leaf& leaf, int variant, const std::string& name) {
  if (variant >= 0)
    for (const FieldDef& f : leaf.cases[static_cast<size_t>(variant)].fields)
      if (f.name == name) return &f;
  for (const FieldDef& f : leaf.fields)
    if (f.name == name) return &f;
  return nullptr;
}

const FieldDef* Node::find(const std::string& name) const { return find_field(*leaf, variant, name); }

bool Node::resolve(const std::string& name, const FieldDef*& def, const Node*& where) const {
  return resolve_field(*this, name, def, where);
}

bool Node::has(const std::string& name) const {
  const FieldDef* d;
  const Node* w;
  return name == "ISA_GPU_ID" || resolve(name, d, w);
}

int64_t Node::value(const std::string& name) const {
  const FieldDef* d;
  const Node* w;
  if (name == "ISA_GPU_ID") return gen;
  if (!resolve(name, d, w)) fail("ir3: field `", name, "` is not defined for ", leaf ? leaf->name : "?");
  if (d->derived()) return eval(*d->expr, *w);
  uint64_t v = extract(w->bits, d->lo, d->hi);
  return static_cast<int64_t>(v);
}

const Node* Node::child(const std::string& name) const {
  const FieldDef* d;
  const Node* w;
  if (!resolve(name, d, w) || d->type != FType::Bitset || d->derived()) return nullptr;
  std::string key = name + "@" + std::to_string(w->variant);
  auto it = w->kids.find(key);
  if (it != w->kids.end()) return it->second.get();
  uint64_t v = extract(w->bits, d->lo, d->hi);
  const Leaf* l = match_leaf(d->tname, v, gen);
  if (!l) return nullptr;
  auto n = std::make_unique<Node>();
  n->leaf = l;
  n->bits = v;
  n->gen = gen;
  n->parent = w;
  n->via = d;
  choose_variant(*n);
  const Node* out = n.get();
  w->kids[key] = std::move(n);
  return out;
}

const Leaf* match_leaf(const std::string& bitset, uint64_t bits, int gen) {
  const Leaf* best = nullptr;
  int best_bits = -1;
  const auto ix = isa().index_of.find(bitset);
  if (ix == isa().index_of.end()) return nullptr;
  for (const Leaf* l : ix->second.bucket(bits)) {
    if (gen < l->gen_min || gen > l->gen_max) continue;
    if ((bits & l->mask) != l->match) continue;
    int nb = __builtin_popcountll(l->mask);
    if (nb > best_bits) {
      best = l;
      best_bits = nb;
    }
  }
  return best;
}

void choose_variant(Node& n) {
  n.variant = -1;
  for (size_t i = 0; i < n.leaf->cases.size(); ++i) {
    const Variant& c = n.leaf->cases[i];
    n.variant = static_cast<int>(i);
    if (!c.cond) return;  // a level display: no override above it applies
    bool ok = false;
    try {
      ok = eval(*c.cond, n) != 0;
    } catch (const Error&) {
      ok = false;
    }
    if (ok) return;
  }
  n.variant = -1;
}

const std::string& display_of(const Leaf& l, int variant) {
  static const std::string none;
  if (variant < 0) return none;
  for (size_t j = variant; j < l.cases.size(); ++j) {
    const Variant& c = l.cases[j];
    if (c.has_display && (j == static_cast<size_t>(variant) || !c.cond)) return c.display;
  }
  return none;
}

const std::string& display_of(const Node& n) { return display_of(*n.leaf, n.variant); }

}  // namespace opv::ir3::detail
