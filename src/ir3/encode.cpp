// Encoding side of the ir3 toolkit: instruction bits, single-field edits, and whole-program
// assembly with labels.
//
// Steps for assemble(): (1) strip comments, collect "label:" definitions and count
// instructions; (2) replace "#label" branch operands with the relative offset
// (target index - this index, in instructions, as cat0 IMMED expects); (3) parse each line.
// Invariant: every returned word decodes to a valid instruction of the requested gen.
#include <cctype>
#include <map>
#include <sstream>

#include "core/error.h"
#include "ir3/isa.h"
#include "ir3/isa_model.h"

namespace opv::ir3 {

uint64_t encode(const Instr& in) {
  OPV_CHECK(in.valid(), "ir3: cannot encode an invalid instruction (raw 0x", std::hex, in.bits, ")");
  return in.bits;
}

Instr with_field(const Instr& in, const std::string& field, int64_t value) {
  OPV_CHECK(in.valid(), "ir3: with_field(", field, ") on an invalid instruction");
  const detail::Node* n = in.node();
  const detail::FieldDef* d;
  const detail::Node* w;
  OPV_CHECK(n->resolve(field, d, w) && w == n && !d->derived(), "ir3: ", in.name(), " has no field `", field, "`");
  int width = d->hi - d->lo + 1;
  uint64_t m = (width >= 64 ? ~0ull : ((1ull << width) - 1)) << d->lo;
  uint64_t bits = (in.bits & ~m) | ((static_cast<uint64_t>(value) << d->lo) & m);
  Instr out = decode(bits, in.gen);
  OPV_CHECK(out.valid() && out.name() == in.name(), "ir3: setting ", field, "=", value, " on ", in.name(),
            " gives an invalid encoding");
  return out;
}

static std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<uint64_t> assemble(const std::string& text, int gen) {
  struct Line {
    std::string text;
    int src_line;
  };
  std::vector<Line> lines;
  std::map<std::string, int> labels;
  std::istringstream in(text);
  std::string raw;
  int ln = 0;
  while (std::getline(in, raw)) {
    ++ln;
    size_t c = raw.find("//");
    if (c != std::string::npos) raw = raw.substr(0, c);
    c = raw.find(';');
    if (c != std::string::npos) raw = raw.substr(0, c);
    std::string s = trim(raw);
    // leading "label:" (a label is an identifier followed by ':')
    for (;;) {
      size_t colon = s.find(':');
      if (colon == std::string::npos || colon == 0) break;
      bool ident = true;
      for (size_t i = 0; i < colon; ++i)
        if (!(std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' || s[i] == '.')) ident = false;
      if (!ident) break;
      std::string name = s.substr(0, colon);
      OPV_CHECK(!labels.count(name), "ir3 asm line ", ln, ": label `", name, "` defined twice");
      labels[name] = static_cast<int>(lines.size());
      s = trim(s.substr(colon + 1));
    }
    if (!s.empty()) lines.push_back({s, ln});
  }
  std::vector<uint64_t> out;
  out.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string s = lines[i].text;
    size_t h = s.find('#');
    while (h != std::string::npos) {
      size_t q = h + 1;
      while (q < s.size() && (std::isalnum(static_cast<unsigned char>(s[q])) || s[q] == '_' || s[q] == '.')) ++q;
      std::string name = s.substr(h + 1, q - h - 1);
      if (!name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) && name[0] != '-') {
        auto it = labels.find(name);
        OPV_CHECK(it != labels.end(), "ir3 asm line ", lines[i].src_line, ": unknown label `", name, "`");
        std::string off = std::to_string(it->second - static_cast<int>(i));
        s = s.substr(0, h + 1) + off + s.substr(q);
        q = h + 1 + off.size();
      }
      h = s.find('#', q);
    }
    try {
      out.push_back(encode(parse(s, gen)));
    } catch (const Error& e) {
      fail("ir3 asm line ", lines[i].src_line, ": ", e.what());
    }
  }
  return out;
}

}  // namespace opv::ir3
