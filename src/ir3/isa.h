// Adreno ir3 machine code: decode, print, parse and encode one 64-bit instruction.
//
// All four are derived from one encoding table (isa_table.cpp, see isa_model.h). Text follows
// Mesa's disassembler syntax, e.g. "(rpt1)sel.b32 r1.x, (r)c13.z, r0.z, (r)c20.z". `gen` is the
// ISA generation as chip*100 (600 = a6xx, the one we target; 400/500/700/800 decode where the
// table covers them).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace opv::ir3 {

namespace detail {
struct Node;
}

constexpr int kGenA6xx = 600;

// Maps a Mesa gpu id (630, 540, 0x07030001 chip id ...) to a generation (600, 500, 700 ...).
int gen_from_gpu_id(uint64_t gpu_id);

// Register file ids (regid = 4*n + component).
constexpr int kRegA0 = 61 * 4;   // a0.x; a0.y is a1.x
constexpr int kRegP0 = 62 * 4;   // p0.x
constexpr int kRegInvalid = 63 * 4;
constexpr int kSharedRegBase = 48 * 4;

// One decoded instruction. Invalid words (no encoding matches) decode to !valid() and print as
// "raw 0x...". Field accessors read the decoded tree: "SRC1" is the raw bits of that field,
// child("SRC1") its decoded operand (e.g. a GPR, const or immediate sub-encoding).
class Instr {
 public:
  uint64_t bits = 0;
  int gen = kGenA6xx;

  bool valid() const { return node_ != nullptr; }
  const std::string& name() const;            // encoding name, "" if invalid
  bool has(const std::string& field) const;
  int64_t get(const std::string& field) const;  // throws if absent
  int64_t get_or(const std::string& field, int64_t dflt) const;
  // Sub-encoding view of a bitset-typed field (leaf name + fields). Null if absent.
  const detail::Node* node() const { return node_.get(); }
  const detail::Node* child(const std::string& field) const;
  std::string child_kind(const std::string& field) const;  // leaf name of the child, "" if none
  int64_t child_get(const std::string& field, const std::string& sub) const;

  std::shared_ptr<const detail::Node> node_;
};

Instr decode(uint64_t word, int gen = kGenA6xx);
std::string print(const Instr& in);
inline std::string disasm(uint64_t word, int gen = kGenA6xx) { return print(decode(word, gen)); }

// Assembles one instruction in Mesa's syntax (whitespace-insensitive). Throws opv::Error with
// the text and the reason when nothing in the table produces it.
Instr parse(const std::string& text, int gen = kGenA6xx);
// The instruction's 64 bits (parse() builds them; encode() validates they decode again).
uint64_t encode(const Instr& in);

// Returns a copy with one top-level field changed and re-encoded (e.g. "SY", "REPEAT").
Instr with_field(const Instr& in, const std::string& field, int64_t value);

// Whole programs: one instruction per line; ';' and '//' start comments; "label:" lines and
// "#label" branch targets are resolved to relative offsets.
std::vector<uint64_t> assemble(const std::string& text, int gen = kGenA6xx);
// Disassembles; with `addresses`, prefixes each line with its index.
std::string disassemble(const std::vector<uint64_t>& words, int gen = kGenA6xx, bool addresses = false);
// Reads a raw shader image (little-endian dword pairs). Throws if the size is not a multiple of 8.
std::vector<uint64_t> words_from_bytes(const std::vector<uint8_t>& bytes);
std::vector<uint8_t> bytes_from_words(const std::vector<uint64_t>& words);

}  // namespace opv::ir3
