// Prints decoded instructions through the table's display templates.
//
// Steps: (1) pick the node's template (active override, else the leaf's); (2) copy literal text;
// (3) for each {FIELD}: resolve it (own fields, derived values, then parameters passed down by
// the parent), format it by type (bool/enum text, signed/unsigned/hex/offset numbers, floats,
// or recurse into a sub-encoding); (4) record every shown value as a capture, the same list the
// parser produces, so parse(print(x)) can be checked field by field.
// Invariant: printing never throws for any 64-bit word; an unprintable word prints as raw.
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "ir3/isa.h"
#include "ir3/isa_model.h"

namespace opv::ir3 {
namespace detail {

static const std::string* enum_text(const std::string& ename, int64_t v) {
  auto it = isa().enums.find(ename);
  if (it == isa().enums.end()) return nullptr;
  for (const auto& pr : it->second.values)
    if (pr.first == v) return &pr.second;
  return nullptr;
}

std::string format_float(uint32_t bits, int width) {
  float f;
  if (width == 16) {
    f = half_to_float(static_cast<uint16_t>(bits));
  } else {
    std::memcpy(&f, &bits, 4);
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "%f", static_cast<double>(f));
  // %f loses small or very precise values; keep the text exact when it would not read back.
  float back = std::strtof(buf, nullptr);
  if (width == 16 ? float_to_half(back) != static_cast<uint16_t>(bits) : std::memcmp(&back, &f, 4) != 0)
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));
  return buf;
}

bool render(const Node& n, std::string& out, std::vector<Cap>& caps, const std::string& path) {
  const std::string& t = display_of(n);
  for (size_t i = 0; i < t.size();) {
    if (t[i] != '{') {
      out += t[i++];
      continue;
    }
    size_t e = t.find('}', i);
    if (e == std::string::npos) return false;
    std::string name = t.substr(i + 1, e - i - 1);
    i = e + 1;
    if (name == "NAME") {
      out += n.leaf->name;
      continue;
    }
    const FieldDef* d;
    const Node* w;
    if (!n.resolve(name, d, w)) return false;
    int64_t v;
    try {
      v = w->value(d->name);
    } catch (const Error&) {
      return false;
    }
    int width = d->width > 0 ? d->width : 64;
    std::string key = path + name;
    char buf[64];
    switch (d->type) {
      case FType::Bool:
        caps.push_back({key, v != 0});
        if (v && d->has_display) out += d->display;
        break;
      case FType::BoolInv:
        caps.push_back({key, v != 0});
        if (!v && d->has_display) out += d->display;
        break;
      case FType::Uint:
        caps.push_back({key, v});
        std::snprintf(buf, sizeof buf, "%" PRIu64, static_cast<uint64_t>(v));
        out += buf;
        break;
      case FType::Int:
      case FType::Branch: {
        int64_t s = d->derived() && d->width == 0 ? v : sign_extend(static_cast<uint64_t>(v), width);
        caps.push_back({key, s});
        std::snprintf(buf, sizeof buf, "%" PRId64, s);
        out += buf;
        break;
      }
      case FType::Hex:
        caps.push_back({key, v});
        std::snprintf(buf, sizeof buf, "%" PRIx64, static_cast<uint64_t>(v));
        out += buf;
        break;
      case FType::Offset: {
        int64_t s = d->derived() && d->width == 0 ? v : sign_extend(static_cast<uint64_t>(v), width);
        caps.push_back({key, s});
        if (s != 0) {
          std::snprintf(buf, sizeof buf, "%+" PRId64, s);
          out += buf;
        }
        break;
      }
      case FType::UOffset:
        caps.push_back({key, v});
        if (v != 0) {
          std::snprintf(buf, sizeof buf, "+%" PRIu64, static_cast<uint64_t>(v));
          out += buf;
        }
        break;
      case FType::Float:
        caps.push_back({key, v});
        out += format_float(static_cast<uint32_t>(v), width);
        break;
      case FType::Enum: {
        const std::string* s = enum_text(d->tname, v);
        if (!s) return false;
        caps.push_back({key, v});
        out += *s;
        break;
      }
      case FType::Bitset: {
        if (d->derived()) return false;
        const Node* c = w->child(d->name);
        if (!c) return false;
        caps.push_back({key + "#", c->leaf->index * 64 + c->variant + 1});
        if (!render(*c, out, caps, key + "/")) return false;
        break;
      }
    }
  }
  return true;
}

}  // namespace detail

std::string print(const Instr& in) {
  if (in.valid()) {
    std::string out;
    std::vector<detail::Cap> caps;
    if (detail::render(*in.node(), out, caps, "")) return out;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "raw 0x%016" PRIX64, in.bits);
  return buf;
}

std::string disassemble(const std::vector<uint64_t>& words, int gen, bool addresses) {
  std::string out;
  char buf[32];
  for (size_t i = 0; i < words.size(); ++i) {
    if (addresses) {
      std::snprintf(buf, sizeof buf, "%4zu: ", i);
      out += buf;
    }
    out += print(decode(words[i], gen));
    out += '\n';
  }
  return out;
}

}  // namespace opv::ir3
