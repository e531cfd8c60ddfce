// The Qualcomm OpenCL program binary (a630 blob compiler output) as tinygrad's QCOM backend
// reads it (../shared/qcom/OPENCL_BINARY.md): shader image, register footprint, kernel
// descriptor (private/shared memory, samplers, branch stack, name), argument records and
// immediate-constant records. Every offset is a named constant below; anything else in the
// blob is kept byte for byte.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace opv::ir3::qcom {

// Top-level header: little-endian u32 at these absolute byte offsets.
constexpr uint32_t kHdrRegDescOffset = 0x34;   // -> register footprint record
constexpr uint32_t kHdrConstRecords = 0xac;    // -> first immediate-constant record
constexpr uint32_t kHdrHaveConsts = 0xb0;      // != 0 when constant records are present
constexpr uint32_t kHdrImageOffset = 0xc0;     // -> raw ir3 code
constexpr uint32_t kHdrImageSize = 0x100;      // code bytes (8 per instruction)
constexpr uint32_t kHdrDescOffset = 0x110;     // -> kernel descriptor
constexpr uint32_t kHdrMinSize = kHdrDescOffset + 4;
// Register footprint record (relative to the RegDescOffset value).
constexpr uint32_t kRegFullFootprint = 0x14;   // bit 31 is a flag of unknown meaning (kept)
constexpr uint32_t kRegHalfFootprint = 0x18;
constexpr uint32_t kRegFullFlagMask = 0x80000000u;
// Kernel descriptor (relative to the DescOffset value).
constexpr uint32_t kDescProgramOffset = 0xc4;
constexpr uint32_t kDescPrivateMem = 0xc8;
constexpr uint32_t kDescSharedMem = 0xd8;
constexpr uint32_t kDescSamplerCount = 0xdc;
constexpr uint32_t kDescBranchStack = 0x108;
constexpr uint32_t kDescName = 0x158;
constexpr uint32_t kSamplerRecordBytes = 8;
// Argument records: 8 u32 each, list ends with length 0 or when fewer than 32 bytes remain.
constexpr uint32_t kArgRecordMin = 32;
constexpr uint32_t kArgLengthWord = 0, kArgOffsetWord = 3, kArgTypeWord = 7;
// Immediate-constant records: 40 bytes each from ConstRecords while they end before the image.
constexpr uint32_t kConstRecordBytes = 40;
constexpr uint32_t kConstValue = 0, kConstOffset = 16, kConstIs32 = 24;
// Const file / kernarg layout used at launch (tinygrad): descriptors from byte 2048.
constexpr uint32_t kDescriptorBase = 2048;
constexpr uint32_t kDescriptorBytes = 64;      // one A6XX_TEX_CONST / IBO descriptor
constexpr uint32_t kSamplerDescBytes = 16;

enum class ArgType : uint32_t { Buffer = 0, Texture = 1, Ibo = 2 };

struct ArgRecord {
  uint32_t at = 0;             // byte offset of the record in the blob
  uint32_t length = 0;
  uint32_t const_byte_offset = 0;  // offset_words * 4
  uint32_t type = 0;           // ArgType for 0..2; other values are scalars (meaning unknown)
};

struct ConstRecord {
  uint32_t at = 0;
  uint32_t value = 0;
  uint32_t offset = 0;         // in elements of 2 or 4 bytes
  bool is32 = false;
  uint32_t const_byte_offset() const { return offset * (is32 ? 4u : 2u); }
};

struct Program {
  std::vector<uint8_t> blob;   // the whole file; write() patches it
  uint32_t image_offset = 0, image_size = 0;
  std::vector<uint64_t> code;
  uint32_t reg_desc_offset = 0;
  uint32_t full_regs = 0, half_regs = 0;  // footprints (vec4 registers)
  bool full_regs_flag = false;             // bit 31 of the full-footprint word
  uint32_t desc_offset = 0;
  uint32_t program_offset = 0, private_mem = 0, shared_mem = 0, sampler_count = 0, branch_stack = 0;
  std::string name;
  std::vector<ArgRecord> args;
  std::vector<ConstRecord> consts;

  // Launch values tinygrad derives (ops_qcom.py), for inspection.
  uint32_t max_threads() const;
  uint32_t shared_size_field() const;      // SP_CS_CNTL_1.SHARED_SIZE
  uint32_t branchstack_hw() const;         // Mesa's ceil(min(depth,64)/2)
  uint32_t texture_count() const;
  uint32_t ibo_count() const;
};

// Parses a blob; throws opv::Error naming the field and byte offset when it does not fit.
Program read(const std::vector<uint8_t>& blob);
// Serialises: code, footprints, memory sizes and branch stack are written back. Code may grow or
// shrink; bytes after the image move with it and header offsets past the image are adjusted.
std::vector<uint8_t> write(const Program& p);
// Builds a minimal blob in this layout (for tests and for wrapping hand-written code).
Program make(const std::vector<uint64_t>& code, const std::string& name, const std::vector<ArgType>& args,
             uint32_t full_regs, uint32_t half_regs);

bool looks_like_program(const std::vector<uint8_t>& blob);
std::string describe(const Program& p);

}  // namespace opv::ir3::qcom
