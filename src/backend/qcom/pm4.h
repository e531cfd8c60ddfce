// PM4 command streams for the Adreno a6xx CP: packet headers (type 4 = register writes, type 7 =
// opcode + payload; ../shared/qcom/PM4.md section 1), bit fields by name from the generated
// tables (a6xx_tables.h, from registers.tsv), a stream writer that counts what it emits, and a
// decoder that turns untrusted dwords into packets (every malformed input is an opv::Error).
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "backend/qcom/a6xx_tables.h"

namespace opv::qcom {

using a6xx::Field;

// Named enum values the reference docs give in prose (PM4.md section 2, registers.tsv notes).
namespace a6xx_enum {
inline constexpr uint32_t ST6_SHADER = 0, ST6_CONSTANTS = 1, ST6_UBO = 2, ST6_UAV = 3;   // STATE_TYPE
inline constexpr uint32_t SS6_DIRECT = 0, SS6_BINDLESS = 1, SS6_INDIRECT = 2;             // STATE_SRC
inline constexpr uint32_t SB6_CS_TEX = 5, SB6_CS_SHADER = 13, SB6_UAV = 14, SB6_CS_UAV = 15;  // STATE_BLOCK
inline constexpr uint32_t CACHE_FLUSH_TS = 4, CACHE_INVALIDATE = 49;                     // vgt_event_type (a6xx)
inline constexpr uint32_t RM6_COMPUTE = 8;                                               // CP_SET_MARKER MODE
inline constexpr uint32_t ISAMMODE_CL = 1, ISAMMODE_GL = 2;
inline constexpr uint32_t CONSTLEN_128 = 0, CONSTLEN_192 = 1, CONSTLEN_256 = 2, CONSTLEN_512 = 3;
inline constexpr uint32_t THREAD64 = 0, THREAD128 = 1;
inline constexpr uint32_t REGID_NONE = 0xfc;  // "unused" regid (Mesa regid_t 252)
inline constexpr uint32_t FMT6_16_16_16_16_FLOAT = 0x62, FMT6_32_32_32_32_FLOAT = 0x82;
inline constexpr uint32_t A6XX_TEX_2D = 1;
inline constexpr uint32_t TILE6_LINEAR = 0;
inline constexpr uint32_t SWIZ_X = 0, SWIZ_Y = 1, SWIZ_Z = 2, SWIZ_W = 3;
inline constexpr uint32_t A6XX_TEX_CLAMP_TO_BORDER = 3;
inline constexpr uint32_t PKT_TYPE4 = 4, PKT_TYPE7 = 7;
}  // namespace a6xx_enum

// Units of CP_LOAD_STATE6 NUM_UNIT (PM4.md section 2).
inline constexpr uint32_t kShaderUnitBytes = 128;   // 16 instructions
inline constexpr uint32_t kConstUnitBytes = 16;     // one vec4
inline constexpr uint32_t kDescriptorDwords = 16;   // texture / IBO descriptor
inline constexpr uint32_t kSamplerDwords = 4;

constexpr uint32_t field_mask(Field f) { return f.hi - f.lo == 31 ? 0xffffffffu : ((1u << (f.hi - f.lo + 1)) - 1u); }
// Value of a field in a word.
constexpr uint32_t get(Field f, uint32_t word) { return (word >> f.lo) & field_mask(f); }
// A field's bits for value v; throws opv::Error when v does not fit.
uint32_t put(Field f, uint64_t v);
// Odd-parity bit of v (1 when v has an even number of set bits), PM4.md section 1.
uint32_t parity(uint32_t v);
uint32_t type4_header(uint32_t reg, uint32_t count);
uint32_t type7_header(uint32_t opcode, uint32_t count);

const char* reg_name(uint32_t reg);       // nullptr when the table has no such register
const char* opcode_name(uint32_t opcode); // nullptr when unknown

// Builds a stream; counts packets by opcode so callers can report what they emitted.
class StreamWriter {
 public:
  void regs(uint32_t first_reg, std::initializer_list<uint32_t> values);
  void regs(uint32_t first_reg, const std::vector<uint32_t>& values);
  void reg64(uint32_t reg, uint64_t value) { regs(reg, {uint32_t(value), uint32_t(value >> 32)}); }
  void pkt(uint32_t opcode, std::initializer_list<uint32_t> payload);
  void pkt(uint32_t opcode, const std::vector<uint32_t>& payload);

  const std::vector<uint32_t>& dwords() const { return dw_; }
  size_t packets() const { return packets_; }
  size_t count(uint32_t opcode) const;  // type-7 packets with this opcode
  size_t bytes() const { return dw_.size() * 4; }
  // Position of the next packet (dword index), e.g. to locate a packet for a test.
  size_t size() const { return dw_.size(); }

 private:
  std::vector<uint32_t> dw_;
  size_t packets_ = 0;
  std::vector<std::pair<uint32_t, size_t>> per_op_;
};

struct Packet {
  bool type7 = false;
  uint32_t reg = 0;     // type 4: first register
  uint32_t opcode = 0;  // type 7
  size_t offset = 0;    // dword index of the header
  std::vector<uint32_t> payload;
};

// Decodes a stream. Throws opv::Error (naming the dword offset) on a truncated packet, a bad
// header (type, zero bits, parity), an opcode not in the tables, or a register write to an
// address the tables do not name (unless allow_unknown_regs).
std::vector<Packet> decode(const uint32_t* dw, size_t n, bool allow_unknown_regs = false);

// One line per packet, registers and payload dwords by name with their fields.
std::string format(const std::vector<Packet>& packets);

}  // namespace opv::qcom
