// Code: decode/emit with id-based branch targets, regions, and the assembler-text helpers.
#include "ir3/passes/code.h"

#include <cctype>
#include <cstring>

#include "core/error.h"

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

Code::Code(const std::vector<uint64_t>& words, int g, bool merged) : gen(g), merged_regs(merged) {
  size_t last_end = words.size();
  std::vector<Instr> dec;
  for (size_t i = 0; i < words.size(); ++i) {
    Instr in = decode(words[i], gen);
    OPV_CHECK(in.valid(), "ir3 passes: instruction ", i, " does not decode");
    if (in.name() == "end") last_end = i;
    dec.push_back(in);
  }
  OPV_CHECK(last_end < words.size(), "ir3 passes: the program has no `end`");
  dec.resize(last_end + 1);
  for (size_t i = 0; i < dec.size(); ++i) {
    Ins x;
    x.in = dec[i];
    x.fx = effects(dec[i], merged_regs);
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
      OPV_CHECK(decode(w, gen).valid(), "ir3 passes: re-targeted branch does not decode");
    }
    out.push_back(w);
  }
  uint64_t nop = encode(parse("nop", gen));
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

int full_reg(const std::string& op) {
  std::string prefix;
  char kind;
  int n, c;
  return parse_reg(op, prefix, kind, n, c) && kind == 'r' && n < 48 ? n * 4 + c : -1;
}

}  // namespace opv::ir3::passes
