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

bool render(const Node& n, std::string& out, std::vector<Cap>& caps, const std::string& path,
            const std::vector<Cap>* expect) {
  // With `expect`, every capture must equal the expected one at its position: a walk that has
  // already diverged stops at once (the assembler checks thousands of candidate words this way).
  auto push = [&](std::string key, int64_t v) {
    caps.push_back({std::move(key), v});
    return !expect || (caps.size() <= expect->size() && caps.back() == (*expect)[caps.size() - 1]);
  };
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
        if (!push(key, v != 0)) return false;
        if (v && d->has_display) out += d->display;
        break;
      case FType::BoolInv:
        if (!push(key, v != 0)) return false;
        if (!v && d->has_display) out += d->display;
        break;
      case FType::Uint:
        if (!push(key, v)) return false;
        std::snprintf(buf, sizeof buf, "%" PRIu64, static_cast<uint64_t>(v));
        out += buf;
        break;
      case FType::Int:
      case FType::Branch: {
        int64_t s = d->derived() && d->width == 0 ? v : sign_extend(static_cast<uint64_t>(v), width);
        if (!push(key, s)) return false;
        std::snprintf(buf, sizeof buf, "%" PRId64, s);
        out += buf;
        break;
      }
      case FType::Hex:
        if (!push(key, v)) return false;
        std::snprintf(buf, sizeof buf, "%" PRIx64, static_cast<uint64_t>(v));
        out += buf;
        break;
      case FType::Offset: {
        int64_t s = d->derived() && d->width == 0 ? v : sign_extend(static_cast<uint64_t>(v), width);
        if (!push(key, s)) return false;
        if (s != 0) {
          std::snprintf(buf, sizeof buf, "%+" PRId64, s);
          out += buf;
        }
        break;
      }
      case FType::UOffset:
        if (!push(key, v)) return false;
        if (v != 0) {
          std::snprintf(buf, sizeof buf, "+%" PRIu64, static_cast<uint64_t>(v));
          out += buf;
        }
        break;
      case FType::Float:
        if (!push(key, v)) return false;
        out += format_float(static_cast<uint32_t>(v), width);
        break;
      case FType::Enum: {
        const std::string* s = enum_text(d->tname, v);
        if (!s) return false;
        if (!push(key, v)) return false;
        out += *s;
        break;
      }
      case FType::Bitset: {
        if (d->derived()) return false;
        const Node* c = w->child(d->name);
        if (!c) return false;
        if (!push(key + "#", c->leaf->index * 64 + c->variant + 1)) return false;
        if (!render(*c, out, caps, key + "/", expect)) return false;
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
