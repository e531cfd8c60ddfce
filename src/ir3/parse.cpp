// Assembles one instruction from Mesa-syntax text by matching it against the table's display
// templates, then encoding what was read.
//
// Steps: (1) for every encoding whose mnemonic fits, and every display variant of it, match
// the template against the text with backtracking (optional flags, enum texts, numbers, nested
// operand encodings), recording each value read — the same capture list print produces;
// (2) turn captures into bits: fixed patterns and asserts of every encoding on the path, real
// fields at their positions, derived values through their `inv` rules; (3) fields the text does
// not show (e.g. FULL, DST_CONV, HAS_OFFSET) are searched smallest-first; (4) a candidate is
// accepted only if decoding it gives the same encoding, variant and captures — so
// parse(print(x)) == x whenever print is unambiguous.
// Invariant: parse never returns bits that do not print back to the text's meaning.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>

#include "core/error.h"
#include "core/half.h"
#include "ir3/isa.h"
#include "ir3/isa_model.h"

namespace opv::ir3 {

using namespace detail;

namespace {

struct Frame {
  const Leaf* leaf;
  int variant;
  int off;
  const Frame* parent;
  const FieldDef* via;
  std::string path;

  bool resolve(const std::string& name, const FieldDef*& def, const Frame*& where) const {
    return resolve_field(*this, name, def, where);
  }
};

struct Assign {
  uint64_t mask, value;
};

using K = std::function<bool(size_t)>;

struct Matcher {
  const std::string& s;
  int gen;
  std::vector<Cap> caps;
  std::vector<Assign> assigns;
  std::vector<const Frame*> frames;
  const Leaf* top = nullptr;
  int top_variant = -1;
  uint64_t result = 0;
  int budget = 200000;  // bounds backtracking on adversarial text

  size_t ws(size_t p) const {
    while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p]))) ++p;
    return p;
  }

  bool lit(size_t& p, const std::string& text) const {
    size_t q = p;
    for (char c : text) {
      if (std::isspace(static_cast<unsigned char>(c))) continue;
      q = ws(q);
      if (q >= s.size() || s[q] != c) return false;
      ++q;
    }
    p = q;
    return true;
  }

  static bool fits(int64_t v, int w, bool is_signed) {
    if (w >= 64) return true;
    if (v < 0) return is_signed && v >= -(int64_t(1) << (w - 1));
    return static_cast<uint64_t>(v) < (uint64_t(1) << w);
  }

  int64_t captured(const std::string& key) const {
    for (auto it = caps.rbegin(); it != caps.rend(); ++it)
      if (it->key == key) return it->value;
    fail("not captured");
  }

  bool push_value(const Frame& f, const std::string& name, const FieldDef* d, const Frame* w, int64_t v,
                  size_t& nc, size_t& na) {
    nc = caps.size();
    na = assigns.size();
    caps.push_back({f.path + name, v});
    if (!d->derived()) {
      int width = d->hi - d->lo + 1;
      bool sgn = d->type == FType::Int || d->type == FType::Offset || d->type == FType::Branch;
      if (!fits(v, width, sgn)) return false;
      uint64_t m = (width >= 64 ? ~0ull : ((1ull << width) - 1));
      assigns.push_back({m << (w->off + d->lo), (static_cast<uint64_t>(v) & m) << (w->off + d->lo)});
      return true;
    }
    for (const auto& inv : d->inverse) {
      const FieldDef* td;
      const Frame* tw;
      if (!w->resolve(inv.first, td, tw) || td->derived()) return false;
      int64_t tv;
      try {
        tv = eval(*inv.second, [&](const std::string& n) -> int64_t {
          if (n == d->name) return v;
          if (n == "ISA_GPU_ID") return gen;
          return captured(w->path + n);
        });
      } catch (const Error&) {
        return false;
      }
      int width = td->hi - td->lo + 1;
      bool sgn = td->type == FType::Int || td->type == FType::Offset || td->type == FType::Branch;
      if (!fits(tv, width, sgn)) return false;
      uint64_t m = (width >= 64 ? ~0ull : ((1ull << width) - 1));
      assigns.push_back({m << (tw->off + td->lo), (static_cast<uint64_t>(tv) & m) << (tw->off + td->lo)});
    }
    return true;
  }

  // Reads a number at p; kind: 'u' unsigned, 's' signed, 'x' hex digits, 'f' float.
  bool number(size_t& p, char kind, int64_t& out) const {
    size_t q = ws(p);
    const char* b = s.c_str() + q;
    char* e = nullptr;
    if (kind == 'f') {
      double d = std::strtod(b, &e);
      if (e == b) return false;
      float f = static_cast<float>(d);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      out = bits;
    } else if (kind == 'x') {
      if (!std::isxdigit(static_cast<unsigned char>(*b))) return false;
      out = static_cast<int64_t>(std::strtoull(b, &e, 16));
    } else {
      const char* c = b;
      bool neg = false;
      if (*c == '-' || *c == '+') {
        if (kind == 'u') return false;
        neg = *c == '-';
        ++c;
      }
      if (!std::isdigit(static_cast<unsigned char>(*c))) return false;
      uint64_t v = std::strtoull(c, &e, 0);
      out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    }
    p = q + (e - b);
    return true;
  }

  bool match(const Frame& f, const std::string& t, size_t ti, size_t pos, const K& k) {
    if (--budget < 0) return false;
    while (ti < t.size() && t[ti] != '{') {
      char c = t[ti++];
      if (std::isspace(static_cast<unsigned char>(c))) continue;
      pos = ws(pos);
      if (pos >= s.size() || s[pos] != c) return false;
      ++pos;
    }
    if (ti >= t.size()) return k(pos);
    size_t e = t.find('}', ti);
    if (e == std::string::npos) return false;
    std::string name = t.substr(ti + 1, e - ti - 1);
    size_t next = e + 1;
    if (name == "NAME") {
      size_t p = pos;
      if (!lit(p, f.leaf->name)) return false;
      return match(f, t, next, p, k);
    }
    const FieldDef* d;
    const Frame* w;
    if (!f.resolve(name, d, w)) return false;

    auto attempt = [&](int64_t v, size_t np) {
      size_t nc, na;
      bool ok = push_value(f, name, d, w, v, nc, na) && match(f, t, next, np, k);
      if (!ok) {
        caps.resize(nc);
        assigns.resize(na);
      }
      return ok;
    };

    switch (d->type) {
      case FType::Bool:
      case FType::BoolInv: {
        int64_t shown = d->type == FType::Bool ? 1 : 0;
        if (d->has_display && !d->display.empty()) {
          size_t p = pos;
          if (lit(p, d->display) && attempt(shown, p)) return true;
          return attempt(!shown, pos);
        }
        return attempt(d->type == FType::Bool ? 0 : 1, pos);
      }
      case FType::Enum: {
        auto it = isa().enums.find(d->tname);
        if (it == isa().enums.end()) return false;
        std::vector<std::pair<int64_t, std::string>> vals = it->second.values;
        std::stable_sort(vals.begin(), vals.end(),
                         [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
        for (const auto& pr : vals) {
          size_t p = pos;
          if (lit(p, pr.second) && attempt(pr.first, p)) return true;
        }
        return false;
      }
      case FType::Uint:
      case FType::Hex:
      case FType::Int:
      case FType::Branch:
      case FType::Float: {
        size_t p = pos;
        int64_t v;
        char kind = d->type == FType::Uint ? 'u' : d->type == FType::Hex ? 'x' : d->type == FType::Float ? 'f' : 's';
        if (!number(p, kind, v)) return false;
        if (kind == 'f' && d->width == 16) {
          float fv;
          uint32_t b32 = static_cast<uint32_t>(v);
          std::memcpy(&fv, &b32, 4);
          v = float_to_half(fv);
        }
        return attempt(v, p);
      }
      case FType::Offset:
      case FType::UOffset: {
        size_t p = ws(pos);
        if (p < s.size() && (s[p] == '+' || (s[p] == '-' && d->type == FType::Offset))) {
          int64_t v;
          size_t q = p;
          if (number(q, 's', v) && attempt(v, q)) return true;
        }
        return attempt(0, pos);
      }
      case FType::Bitset: {
        if (d->derived()) return false;
        for (const Leaf* l : isa().candidates(d->tname)) {
          if (gen < l->gen_min || gen > l->gen_max) continue;
          for (size_t v = 0; v < l->cases.size(); ++v) {
            Frame cf{l, static_cast<int>(v), w->off + d->lo, w, d, f.path + name + "/"};
            size_t nc = caps.size(), na = assigns.size();
            caps.push_back({f.path + name + "#", l->index * 64 + static_cast<int>(v) + 1});
            assigns.push_back({l->mask << cf.off, l->match << cf.off});
            frames.push_back(&cf);
            bool ok = match(cf, display_of(*l, static_cast<int>(v)), 0, pos,
                            [&](size_t p2) { return match(f, t, next, p2, k); });
            frames.pop_back();
            if (ok) return true;
            caps.resize(nc);
            assigns.resize(na);
            if (!l->cases[v].cond) break;  // later level displays are never chosen
          }
        }
        return false;
      }
    }
    return false;
  }

  // Builds bits from the captures on the current path and checks them by decoding.
  bool build() {
    uint64_t bits = 0, fixed = 0, vmask = 0, vval = 0, asserted = 0;
    for (const Frame* f : frames) {
      const Leaf* l = f->leaf;
      uint64_t lm = l->size >= 64 ? ~0ull : ((1ull << l->size) - 1);
      bits = (bits & ~((l->amask & lm) << f->off)) | ((l->aval & lm) << f->off);
      asserted |= (l->amask & lm) << f->off;
      const Variant& c = l->cases[f->variant];
      if (c.cond) {
        vmask |= (c.amask & lm) << f->off;
        vval |= (c.aval & lm) << f->off;
      }
      bits = (bits & ~((l->mask & lm) << f->off)) | ((l->match & lm) << f->off);
      fixed |= (l->mask & lm) << f->off;
    }
    bits = (bits & ~vmask) | vval;
    uint64_t assigned = 0, aval = 0;
    for (const Assign& a : assigns) {
      uint64_t both = assigned & a.mask;
      if ((aval & both) != (a.value & both)) return false;
      assigned |= a.mask;
      aval = (aval & ~a.mask) | a.value;
    }
    bits = (bits & ~assigned) | aval;
    if ((bits & vmask) != vval) return false;

    // Fields the text does not show: search small ones.
    struct Hidden {
      uint64_t mask;
      int lo;
      int width;
    };
    std::vector<Hidden> hidden;
    uint64_t taken = assigned | fixed | vmask | asserted;
    int total = 0;
    for (const Frame* f : frames) {
      const Leaf* l = f->leaf;
      std::vector<const FieldDef*> fs;
      const Variant& c = l->cases[f->variant];
      if (c.cond)
        for (const FieldDef& fd : c.fields) fs.push_back(&fd);
      for (const FieldDef& fd : l->fields) fs.push_back(&fd);
      for (const FieldDef* fd : fs) {
        if (fd->derived() || fd->type == FType::Bitset) continue;
        int width = fd->hi - fd->lo + 1;
        if (width > 3) continue;
        uint64_t m = ((1ull << width) - 1) << (f->off + fd->lo);
        if (m & taken) continue;
        taken |= m;
        hidden.push_back({m, f->off + fd->lo, width});
        total += width;
      }
    }
    while (total > 12 && !hidden.empty()) {
      total -= hidden.back().width;
      hidden.pop_back();
    }
    for (uint64_t combo = 0; combo < (1ull << total); ++combo) {
      uint64_t cand = bits;
      int used = 0;
      for (const Hidden& h : hidden) {
        uint64_t v = (combo >> used) & ((1ull << h.width) - 1);
        cand = (cand & ~h.mask) | (v << h.lo);
        used += h.width;
      }
      if (check(cand)) {
        result = cand;
        return true;
      }
    }
    return false;
  }

  bool check(uint64_t cand) const {
    const Leaf* l = match_leaf("#instruction", cand, gen);
    if (l != top) return false;
    Node n;
    n.leaf = l;
    n.bits = cand;
    n.gen = gen;
    choose_variant(n);
    if (n.variant != top_variant) return false;
    std::string text;
    std::vector<Cap> dc;
    if (!render(n, text, dc, "", &caps)) return false;
    return dc == caps;
  }
};

std::string mnemonic_of(const std::string& text) {
  size_t p = 0;
  for (;;) {
    while (p < text.size() && std::isspace(static_cast<unsigned char>(text[p]))) ++p;
    if (p < text.size() && text[p] == '(') {
      size_t q = text.find(')', p);
      if (q == std::string::npos) break;
      p = q + 1;
      continue;
    }
    break;
  }
  size_t q = p;
  while (q < text.size() && !std::isspace(static_cast<unsigned char>(text[q]))) ++q;
  return text.substr(p, q - p);
}

// Per instruction leaf, what its display templates say about the mnemonic, worked out once.
struct NameFilter {
  const Leaf* leaf;
  bool has_name = false;           // some template prints {NAME}
  std::vector<std::string> words;  // mnemonics that templates spell out literally
};

const std::vector<NameFilter>& name_filters() {
  static const std::vector<NameFilter> filters = [] {
    std::vector<NameFilter> out;
    for (const Leaf* l : isa().candidates("#instruction")) {
      NameFilter f;
      f.leaf = l;
      for (const Variant& c : l->cases) {
        if (!c.has_display) continue;
        if (c.display.find("{NAME}") != std::string::npos) {
          f.has_name = true;
          continue;
        }
        size_t p = 0;
        while (p < c.display.size() && c.display[p] == '{') p = c.display.find('}', p) + 1;
        size_t q = c.display.find_first_of("{ ", p);
        std::string word = c.display.substr(p, q == std::string::npos ? std::string::npos : q - p);
        if (!word.empty()) f.words.push_back(word);
      }
      out.push_back(std::move(f));
    }
    return out;
  }();
  return filters;
}

}  // namespace

Instr parse(const std::string& text_in, int gen) {
  std::string text = text_in;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  size_t b = text.find_first_not_of(" \t");
  text = b == std::string::npos ? "" : text.substr(b);
  OPV_CHECK(!text.empty(), "ir3: cannot assemble an empty instruction");
  if (text.rfind("raw", 0) == 0) {
    size_t p = text.find("0x");
    OPV_CHECK(p != std::string::npos, "ir3: `", text, "`: raw needs a 0x value");
    char* e = nullptr;
    uint64_t v = std::strtoull(text.c_str() + p + 2, &e, 16);
    OPV_CHECK(e && *e == '\0' && e != text.c_str() + p + 2, "ir3: `", text, "`: bad raw value");
    return decode(v, gen);
  }
  std::string mn = mnemonic_of(text);
  bool any_name = false;
  // Every reading of the text that encodes is collected; the one with the fewest set bits wins
  // (Mesa's encoder leaves optional bits clear, e.g. isam without an immediate offset).
  bool have = false;
  uint64_t best = 0;
  for (const NameFilter& f : name_filters()) {
    const Leaf* l = f.leaf;
    if (gen < l->gen_min || gen > l->gen_max) continue;
    // Cheap filter: templates that print {NAME} need the mnemonic to start with it; templates
    // that spell the mnemonic out ("mova", "cov.", "ldc.") need it to start with that word.
    bool literal_name = false;
    for (const std::string& word : f.words)
      if (mn.compare(0, word.size(), word) == 0) literal_name = true;
    if (f.has_name && !literal_name && mn.compare(0, l->name.size(), l->name) != 0) continue;
    if (f.has_name || literal_name) any_name = true;
    for (size_t v = 0; v < l->cases.size(); ++v) {
      Matcher m{text, gen, {}, {}, {}, l, static_cast<int>(v)};
      Frame top{l, static_cast<int>(v), 0, nullptr, nullptr, ""};
      m.frames.push_back(&top);
      m.assigns.push_back({l->mask, l->match});
      m.match(top, display_of(*l, static_cast<int>(v)), 0, 0, [&](size_t p) {
        if (m.ws(p) != text.size()) return false;
        if (m.build() && (!have || __builtin_popcountll(m.result) < __builtin_popcountll(best))) {
          best = m.result;
          have = true;
        }
        return false;  // keep looking for a smaller encoding
      });
      if (!l->cases[v].cond) break;
    }
  }
  if (have) return decode(best, gen);
  if (!any_name) fail("ir3: cannot assemble `", text, "`: unknown instruction `", mn, "` for gen ", gen);
  fail("ir3: cannot assemble `", text, "`: operands or modifiers match no encoding of `", mn, "` (gen ", gen, ")");
}

}  // namespace opv::ir3
