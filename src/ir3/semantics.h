// What one ir3 instruction reads, writes and waits on, derived once from the ISA table's
// decoding: the single description that the simulator (operand decoding), the hazard checker
// (ir3/legalize.h) and the binary passes (ir3/passes/) all use, so none of them re-derives
// operands from mnemonic strings on its own.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir3/isa.h"

namespace opv::ir3 {

// One operand, decoded from its sub-encoding.
struct Operand {
  enum Kind { None, Reg, Const, Imm, RelReg, RelConst } kind = None;
  int num = 0;          // regid / const component index / relative offset
  uint32_t imm = 0;     // Imm: the value (half-precision bits for half operands)
  int absneg = 0;       // bit0 neg, bit1 abs
  bool r = false;       // (r): advances with the repeat index
  bool uses_a0 = false; // relative addressing (reads a0.x)
  std::string kind_name;  // the sub-encoding's name, for messages
};

// Decodes a source/destination sub-encoding node. Kinds that are not operands (or that the
// table spells in a form not listed here) come back as None with kind_name set; `half` gives
// immediates their half-precision bit pattern.
Operand decode_operand(const detail::Node* c, bool half);
// decode_operand(in.child(field)); throws opv::Error when the field is missing.
Operand operand(const Instr& in, const char* field, bool half);

// A run of registers an instruction reads or writes.
struct RegUse {
  int regid = 0;       // first register (ISA regid: rN.c = 4N + c; a0.x = kRegA0; p0.c = kRegP0 + c)
  int count = 1;       // consecutive registers of one element (vector operands, texel groups)
  bool half = false;   // half-precision register file
  int elements = 1;    // (rptN) elements that use it (N + 1 for repeated ALU operands, else 1)
  bool advancing = false;  // element e uses regid + e ((r) sources and repeated destinations)
  int src = -1;        // which source (0-based; the mad third-source rule uses 2), -1 for writes
};

struct Semantics {
  int cat = 0;
  int len = 1, nops = 0;  // issue slots: (rptN) elements; (nopN) encoded in cat2/3's (r) bits
  bool ss_prod = false;   // result needs (ss): SFU, local/shared memory, shfl, shared registers
  bool sy_prod = false;   // result needs (sy): texture, global/IBO/const/private loads, atomics
  bool late_reader = false;  // reads its sources after issue (texture, memory)
  bool store = false;     // writes memory (global, local, private, IBO)
  bool mem_read = false;  // reads memory (texture, global, local, private, IBO, const)
  bool is_branch = false, is_jump = false, is_end = false;
  int64_t target = 0;     // branch/jump offset
  std::vector<RegUse> reads, writes;
};
Semantics semantics(const Instr& in);

}  // namespace opv::ir3
