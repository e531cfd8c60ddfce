// PM4 encoding and decoding (see pm4.h). Header layouts: registers.tsv PM4_TYPE4_HEADER /
// PM4_TYPE7_HEADER; payload word names: registers.tsv rows CP_<OPCODE>_<N>.
#include "backend/qcom/pm4.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "core/error.h"

namespace opv::qcom {

namespace f = a6xx::f;

uint32_t put(Field fl, uint64_t v) {
  OPV_CHECK(v <= field_mask(fl), "qcom: value ", v, " does not fit ", fl.reg, ".", fl.name, " (bits ", int(fl.lo), "-",
            int(fl.hi), ")");
  return static_cast<uint32_t>(v) << fl.lo;
}

uint32_t parity(uint32_t v) {
  v ^= v >> 16;
  v ^= v >> 8;
  v ^= v >> 4;
  return (~0x6996u >> (v & 0xf)) & 1u;
}

uint32_t type4_header(uint32_t reg, uint32_t count) {
  return put(f::PM4_TYPE4_HEADER__TYPE, a6xx_enum::PKT_TYPE4) | put(f::PM4_TYPE4_HEADER__REGINDX, reg) |
         put(f::PM4_TYPE4_HEADER__REG_PARITY, parity(reg)) | put(f::PM4_TYPE4_HEADER__CNT, count) |
         put(f::PM4_TYPE4_HEADER__CNT_PARITY, parity(count));
}

uint32_t type7_header(uint32_t opcode, uint32_t count) {
  return put(f::PM4_TYPE7_HEADER__TYPE, a6xx_enum::PKT_TYPE7) | put(f::PM4_TYPE7_HEADER__OPCODE, opcode) |
         put(f::PM4_TYPE7_HEADER__OPCODE_PARITY, parity(opcode)) | put(f::PM4_TYPE7_HEADER__CNT, count) |
         put(f::PM4_TYPE7_HEADER__CNT_PARITY, parity(count));
}

namespace {

// The a6xx tables looked up by address, opcode and register name, built once (the decoder and
// printer look up every payload dword; a linear scan per dword made long streams slow).
struct Tables {
  std::unordered_map<uint32_t, const a6xx::RegInfo*> reg_by_addr, reg64_by_hi_addr;
  std::unordered_map<uint32_t, const char*> op_name;
  std::unordered_map<std::string_view, std::vector<const a6xx::Field*>> fields_of_reg;

  Tables() {
    for (const a6xx::RegInfo& r : a6xx::kRegs) {
      reg_by_addr.emplace(r.addr, &r);  // first entry wins, as the former scan
      if (r.is64) reg64_by_hi_addr.emplace(r.addr + 1, &r);
    }
    for (const a6xx::OpInfo& o : a6xx::kOps) op_name.emplace(o.op, o.name);
    for (const a6xx::Field& fl : a6xx::kFields) fields_of_reg[fl.reg].push_back(&fl);
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const char* reg_name(uint32_t reg) {
  const auto& m = tables().reg_by_addr;
  const auto it = m.find(reg);
  return it == m.end() ? nullptr : it->second->name;
}

// Names the high dword of a 64-bit register pair ("SP_CS_BASE_HI"), for the decoder.
static std::string reg_label(uint32_t reg, bool* known) {
  *known = true;
  if (const char* n = reg_name(reg)) return n;
  const auto& hi = tables().reg64_by_hi_addr;
  if (const auto it = hi.find(reg); it != hi.end()) return std::string(it->second->name) + "_HI";
  *known = false;
  char b[32];
  std::snprintf(b, sizeof b, "REG_0x%x", reg);
  return b;
}

const char* opcode_name(uint32_t opcode) {
  const auto& m = tables().op_name;
  const auto it = m.find(opcode);
  return it == m.end() ? nullptr : it->second;
}

// ---------------------------------------------------------------- writer

void StreamWriter::regs(uint32_t first_reg, std::initializer_list<uint32_t> values) {
  regs(first_reg, std::vector<uint32_t>(values));
}

void StreamWriter::regs(uint32_t first_reg, const std::vector<uint32_t>& values) {
  OPV_CHECK(!values.empty() && values.size() <= field_mask(f::PM4_TYPE4_HEADER__CNT) - 1,
            "qcom: a type-4 packet writes 1..126 registers, not ", values.size());
  dw_.push_back(type4_header(first_reg, static_cast<uint32_t>(values.size())));
  dw_.insert(dw_.end(), values.begin(), values.end());
  ++packets_;
}

void StreamWriter::pkt(uint32_t opcode, std::initializer_list<uint32_t> payload) {
  pkt(opcode, std::vector<uint32_t>(payload));
}

void StreamWriter::pkt(uint32_t opcode, const std::vector<uint32_t>& payload) {
  OPV_CHECK(payload.size() <= field_mask(f::PM4_TYPE7_HEADER__CNT), "qcom: type-7 payload of ", payload.size(), " dwords");
  dw_.push_back(type7_header(opcode, static_cast<uint32_t>(payload.size())));
  dw_.insert(dw_.end(), payload.begin(), payload.end());
  ++packets_;
  for (auto& [op, n] : per_op_)
    if (op == opcode) {
      ++n;
      return;
    }
  per_op_.emplace_back(opcode, 1);
}

size_t StreamWriter::count(uint32_t opcode) const {
  for (const auto& [op, n] : per_op_)
    if (op == opcode) return n;
  return 0;
}

// ---------------------------------------------------------------- decoder

std::vector<Packet> decode(const uint32_t* dw, size_t n, bool allow_unknown_regs) {
  std::vector<Packet> out;
  size_t i = 0;
  while (i < n) {
    uint32_t h = dw[i];
    uint32_t type = get(f::PM4_TYPE4_HEADER__TYPE, h);
    Packet p;
    p.offset = i;
    size_t cnt = 0;
    if (type == a6xx_enum::PKT_TYPE4) {
      p.reg = get(f::PM4_TYPE4_HEADER__REGINDX, h);
      cnt = get(f::PM4_TYPE4_HEADER__CNT, h);
      OPV_CHECK(get(f::PM4_TYPE4_HEADER__CNT_PARITY, h) == parity(static_cast<uint32_t>(cnt)) &&
                    get(f::PM4_TYPE4_HEADER__REG_PARITY, h) == parity(p.reg),
                "qcom pm4: bad parity in the type-4 header 0x", std::hex, h, std::dec, " at dword ", i);
      OPV_CHECK(cnt > 0, "qcom pm4: type-4 packet with no values at dword ", i);
      // bits no type-4 field covers (the writer never sets them) must be zero, as type-7's ZERO
      auto bits = [](const a6xx::Field& x) { return static_cast<uint32_t>(((uint64_t(1) << (x.hi - x.lo + 1)) - 1) << x.lo); };
      uint32_t covered = bits(f::PM4_TYPE4_HEADER__CNT) | bits(f::PM4_TYPE4_HEADER__CNT_PARITY) |
                         bits(f::PM4_TYPE4_HEADER__REGINDX) | bits(f::PM4_TYPE4_HEADER__REG_PARITY) |
                         bits(f::PM4_TYPE4_HEADER__TYPE);
      OPV_CHECK((h & ~covered) == 0, "qcom pm4: reserved bits set in the type-4 header 0x", std::hex, h, std::dec,
                " at dword ", i);
      if (!allow_unknown_regs) {
        for (size_t k = 0; k < cnt; ++k) {
          bool known;
          reg_label(p.reg + static_cast<uint32_t>(k), &known);
          OPV_CHECK(known, "qcom pm4: write to register 0x", std::hex, p.reg + k, std::dec,
                    " that the a6xx tables do not name, at dword ", i);
        }
      }
    } else if (type == a6xx_enum::PKT_TYPE7) {
      p.type7 = true;
      p.opcode = get(f::PM4_TYPE7_HEADER__OPCODE, h);
      cnt = get(f::PM4_TYPE7_HEADER__CNT, h);
      // bits outside the type-7 fields (bit 14) and its ZERO field must be clear
      auto bits7 = [](const a6xx::Field& x) { return static_cast<uint32_t>(((uint64_t(1) << (x.hi - x.lo + 1)) - 1) << x.lo); };
      uint32_t used = bits7(f::PM4_TYPE7_HEADER__CNT) | bits7(f::PM4_TYPE7_HEADER__CNT_PARITY) |
                      bits7(f::PM4_TYPE7_HEADER__OPCODE) | bits7(f::PM4_TYPE7_HEADER__OPCODE_PARITY) |
                      bits7(f::PM4_TYPE7_HEADER__TYPE);
      OPV_CHECK(get(f::PM4_TYPE7_HEADER__ZERO, h) == 0 && (h & ~(used | bits7(f::PM4_TYPE7_HEADER__ZERO))) == 0,
                "qcom pm4: reserved bits set in the type-7 header 0x", std::hex, h, std::dec, " at dword ", i);
      OPV_CHECK(get(f::PM4_TYPE7_HEADER__CNT_PARITY, h) == parity(static_cast<uint32_t>(cnt)) &&
                    get(f::PM4_TYPE7_HEADER__OPCODE_PARITY, h) == parity(p.opcode),
                "qcom pm4: bad parity in the type-7 header 0x", std::hex, h, std::dec, " at dword ", i);
      OPV_CHECK(opcode_name(p.opcode) != nullptr, "qcom pm4: unknown opcode 0x", std::hex, p.opcode, std::dec,
                " at dword ", i);
    } else {
      fail("qcom pm4: dword ", i, " (0x", std::hex, h, std::dec, ") is not a type-4 or type-7 packet header");
    }
    OPV_CHECK(cnt <= n - i - 1, "qcom pm4: packet at dword ", i, " needs ", cnt, " payload dwords, the stream has ",
              n - i - 1, " left (truncated)");
    p.payload.assign(dw + i + 1, dw + i + 1 + cnt);
    i += 1 + cnt;
    out.push_back(std::move(p));
  }
  return out;
}

// ---------------------------------------------------------------- printer

static std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}

static std::string fields_of(std::string_view reg, uint32_t v) {
  const auto& m = tables().fields_of_reg;
  const auto it = m.find(reg);
  if (it == m.end()) return "";
  std::string s;
  for (const a6xx::Field* fl : it->second) {
    s += s.empty() ? " {" : " ";
    s += fl->name;
    s += "=";
    s += hex(get(*fl, v));
  }
  return s + "}";
}

// registers.tsv names payload words CP_<OP>_<N> (CP_LOAD_STATE6_<N> for all three LOAD_STATE6
// variants, A6XX_CP_SET_MARKER_<N>).
static std::string payload_prefix(uint32_t opcode) {
  namespace op = a6xx::op;
  if (opcode == op::CP_LOAD_STATE6_FRAG || opcode == op::CP_LOAD_STATE6_GEOM || opcode == op::CP_LOAD_STATE6)
    return "CP_LOAD_STATE6_";
  if (opcode == op::CP_SET_MARKER) return "A6XX_CP_SET_MARKER_";
  return std::string(opcode_name(opcode)) + "_";
}

std::string format(const std::vector<Packet>& packets) {
  std::string out;
  for (const Packet& p : packets) {
    char head[40];
    std::snprintf(head, sizeof head, "%06zx: ", p.offset * 4);
    out += head;
    if (!p.type7) {
      out += "pkt4 x" + std::to_string(p.payload.size()) + "\n";
      for (size_t k = 0; k < p.payload.size(); ++k) {
        bool known;
        std::string name = reg_label(p.reg + static_cast<uint32_t>(k), &known);
        out += "          " + name + " = " + hex(p.payload[k]) + fields_of(name, p.payload[k]) + "\n";
      }
      continue;
    }
    out += std::string(opcode_name(p.opcode)) + " (" + std::to_string(p.payload.size()) + ")\n";
    std::string pre = payload_prefix(p.opcode);
    for (size_t k = 0; k < p.payload.size(); ++k) {
      std::string name = pre + std::to_string(k);
      const bool named = tables().fields_of_reg.count(name) != 0;
      out += "          [" + std::to_string(k) + "] " + hex(p.payload[k]);
      if (named) out += "  " + name + fields_of(name, p.payload[k]);
      out += "\n";
    }
  }
  return out;
}

}  // namespace opv::qcom
