// Reads and writes the Qualcomm OpenCL program binary as tinygrad's QCOM backend uses it.
//
// Steps (read): (1) check the header fits, read the named offsets; (2) bounds-check and slice
// the shader image (multiple of 8 bytes); (3) read the footprint record and kernel descriptor;
// (4) walk argument records after the name and sampler records until a zero length; (5) read
// the 40-byte constant records that end before the image. Write: patch the same fields in a
// copy, moving everything after the image if the code changed size and fixing header offsets
// that pointed past it. Invariant: read(write(p)) == p for every field we model, and unknown
// bytes are preserved.
#include "ir3/container.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "ir3/isa.h"

namespace opv::ir3::qcom {

namespace {

uint32_t u32(const std::vector<uint8_t>& b, uint64_t at, const char* what) {
  if (at + 4 > b.size())
    fail("qcom binary: ", what, " at byte 0x", std::hex, at, " is past the end (", std::dec, b.size(), " bytes)");
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

void put32(std::vector<uint8_t>& b, uint64_t at, uint32_t v) {
  OPV_ASSERT(at + 4 <= b.size());
  std::memcpy(b.data() + at, &v, 4);
}

uint32_t round_up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

}  // namespace

Program read(const std::vector<uint8_t>& b) {
  Program p;
  OPV_CHECK(b.size() >= kHdrMinSize, "qcom binary: ", b.size(), " bytes is smaller than the ", kHdrMinSize,
            "-byte header");
  p.blob = b;
  p.image_offset = u32(b, kHdrImageOffset, "image offset");
  p.image_size = u32(b, kHdrImageSize, "image size");
  OPV_CHECK(p.image_size % 8 == 0, "qcom binary: image size ", p.image_size, " (u32 at 0x", std::hex,
            kHdrImageSize, ") is not a multiple of 8");
  OPV_CHECK(static_cast<uint64_t>(p.image_offset) + p.image_size <= b.size(), "qcom binary: image [0x", std::hex,
            p.image_offset, ", +0x", p.image_size, ") lies outside the ", std::dec, b.size(), "-byte file");
  OPV_CHECK(p.image_offset >= kHdrMinSize, "qcom binary: image offset 0x", std::hex, p.image_offset,
            " overlaps the header");
  p.code = words_from_bytes(std::vector<uint8_t>(b.begin() + p.image_offset, b.begin() + p.image_offset + p.image_size));

  p.reg_desc_offset = u32(b, kHdrRegDescOffset, "register record offset");
  uint32_t fw = u32(b, static_cast<uint64_t>(p.reg_desc_offset) + kRegFullFootprint, "full register footprint");
  p.full_regs_flag = (fw & kRegFullFlagMask) != 0;
  p.full_regs = fw & ~kRegFullFlagMask;
  p.half_regs = u32(b, static_cast<uint64_t>(p.reg_desc_offset) + kRegHalfFootprint, "half register footprint");

  p.desc_offset = u32(b, kHdrDescOffset, "kernel descriptor offset");
  uint64_t d = p.desc_offset;
  p.program_offset = u32(b, d + kDescProgramOffset, "program offset");
  p.private_mem = u32(b, d + kDescPrivateMem, "private memory size");
  p.shared_mem = u32(b, d + kDescSharedMem, "shared memory size");
  p.sampler_count = u32(b, d + kDescSamplerCount, "sampler count");
  p.branch_stack = u32(b, d + kDescBranchStack, "branch stack");
  uint64_t name_at = d + kDescName;
  OPV_CHECK(name_at < b.size(), "qcom binary: kernel name at byte 0x", std::hex, name_at, " is past the end");
  size_t nul = name_at;
  while (nul < b.size() && b[nul] != 0) ++nul;
  OPV_CHECK(nul < b.size(), "qcom binary: kernel name at byte 0x", std::hex, name_at, " is not terminated");
  p.name.assign(reinterpret_cast<const char*>(b.data() + name_at), nul - name_at);
  OPV_CHECK(p.sampler_count <= 16, "qcom binary: sampler count ", p.sampler_count, " (at 0x", std::hex,
            d + kDescSamplerCount, ") is implausible");

  uint64_t at = round_up(static_cast<uint32_t>(name_at + p.name.size()), 4) + kSamplerRecordBytes * p.sampler_count;
  while (at + kArgRecordMin <= b.size()) {
    ArgRecord r;
    r.at = static_cast<uint32_t>(at);
    r.length = u32(b, at + 4 * kArgLengthWord, "argument record length");
    if (r.length == 0) break;
    OPV_CHECK(r.length >= kArgRecordMin && at + r.length <= b.size(), "qcom binary: argument record at 0x", std::hex,
              at, " has bad length ", std::dec, r.length);
    r.const_byte_offset = 4 * u32(b, at + 4 * kArgOffsetWord, "argument const offset");
    r.type = u32(b, at + 4 * kArgTypeWord, "argument type");
    p.args.push_back(r);
    at += r.length;
    OPV_CHECK(p.args.size() < 4096, "qcom binary: argument records do not terminate");
  }

  if (u32(b, kHdrHaveConsts, "constants flag") != 0) {
    uint64_t c = u32(b, kHdrConstRecords, "constant records offset");
    while (c + kConstRecordBytes <= p.image_offset) {
      ConstRecord r;
      r.at = static_cast<uint32_t>(c);
      r.value = u32(b, c + kConstValue, "constant value");
      r.offset = u32(b, c + kConstOffset, "constant offset");
      r.is32 = u32(b, c + kConstIs32, "constant size flag") != 0;
      p.consts.push_back(r);
      c += kConstRecordBytes;
    }
  }
  return p;
}

std::vector<uint8_t> write(const Program& p) {
  std::vector<uint8_t> b = p.blob;
  OPV_CHECK(b.size() >= kHdrMinSize, "qcom binary: no blob to write into");
  std::vector<uint8_t> img = bytes_from_words(p.code);
  uint32_t old_off = u32(b, kHdrImageOffset, "image offset"), old_size = u32(b, kHdrImageSize, "image size");
  OPV_CHECK(static_cast<uint64_t>(old_off) + old_size <= b.size(), "qcom binary: image outside the file");
  int64_t delta = static_cast<int64_t>(img.size()) - old_size;
  uint32_t end = old_off + old_size;
  std::vector<uint8_t> out(b.begin(), b.begin() + old_off);
  out.insert(out.end(), img.begin(), img.end());
  out.insert(out.end(), b.begin() + end, b.end());
  auto fix = [&](uint32_t field) {
    uint32_t v = u32(out, field, "header offset");
    if (v >= end) put32(out, field, static_cast<uint32_t>(v + delta));
  };
  if (delta != 0)
    for (uint32_t f : {kHdrRegDescOffset, kHdrConstRecords, kHdrDescOffset}) fix(f);
  put32(out, kHdrImageSize, static_cast<uint32_t>(img.size()));
  uint32_t reg = u32(out, kHdrRegDescOffset, "register record offset");
  put32(out, reg + kRegFullFootprint, p.full_regs | (p.full_regs_flag ? kRegFullFlagMask : 0));
  put32(out, reg + kRegHalfFootprint, p.half_regs);
  uint32_t d = u32(out, kHdrDescOffset, "kernel descriptor offset");
  put32(out, d + kDescProgramOffset, p.program_offset);
  put32(out, d + kDescPrivateMem, p.private_mem);
  put32(out, d + kDescSharedMem, p.shared_mem);
  put32(out, d + kDescBranchStack, p.branch_stack);
  return out;
}

Program make(const std::vector<uint64_t>& code, const std::string& name, const std::vector<ArgType>& args,
             uint32_t full_regs, uint32_t half_regs) {
  // layout: header | reg record | image | descriptor (+name, args)
  const uint32_t reg_at = 0x120, image_at = 0x200;
  std::vector<uint8_t> img = bytes_from_words(code);
  uint32_t desc_at = round_up(image_at + static_cast<uint32_t>(img.size()), 16);
  uint32_t args_at = round_up(desc_at + kDescName + static_cast<uint32_t>(name.size()), 4);
  constexpr uint32_t kRec = 64;
  std::vector<uint8_t> b(args_at + kRec * args.size() + kArgRecordMin, 0);
  put32(b, kHdrRegDescOffset, reg_at);
  put32(b, kHdrImageOffset, image_at);
  put32(b, kHdrImageSize, static_cast<uint32_t>(img.size()));
  put32(b, kHdrDescOffset, desc_at);
  put32(b, reg_at + kRegFullFootprint, full_regs);
  put32(b, reg_at + kRegHalfFootprint, half_regs);
  std::copy(img.begin(), img.end(), b.begin() + image_at);
  std::memcpy(b.data() + desc_at + kDescName, name.data(), name.size());
  for (size_t i = 0; i < args.size(); ++i) {
    uint32_t r = args_at + kRec * static_cast<uint32_t>(i);
    put32(b, r + 4 * kArgLengthWord, kRec);
    put32(b, r + 4 * kArgOffsetWord, static_cast<uint32_t>(4 * i));  // c(i).x
    put32(b, r + 4 * kArgTypeWord, static_cast<uint32_t>(args[i]));
  }
  return read(b);
}

bool looks_like_program(const std::vector<uint8_t>& b) {
  try {
    read(b);
    return true;
  } catch (const Error&) {
    return false;
  }
}

uint32_t Program::max_threads() const {
  uint32_t per = (full_regs + round_up(half_regs, 2) / 2) * 128;
  if (per == 0) return 1024;
  return std::min<uint32_t>(1024, (384 * 32 / per) * 128);
}
uint32_t Program::shared_size_field() const { return shared_mem == 0 ? 1 : std::max<uint32_t>(1, (shared_mem - 1) / 1024); }
uint32_t Program::branchstack_hw() const { return (std::min<uint32_t>(branch_stack, 64) + 1) / 2; }
uint32_t Program::texture_count() const {
  return static_cast<uint32_t>(std::count_if(args.begin(), args.end(), [](const ArgRecord& a) { return a.type == 1; }));
}
uint32_t Program::ibo_count() const {
  return static_cast<uint32_t>(std::count_if(args.begin(), args.end(), [](const ArgRecord& a) { return a.type == 2; }));
}

std::string describe(const Program& p) {
  std::ostringstream o;
  o << "kernel " << p.name << "\n"
    << "  image: offset 0x" << std::hex << p.image_offset << std::dec << ", " << p.image_size << " bytes, "
    << p.code.size() << " instructions\n"
    << "  registers: full " << p.full_regs << (p.full_regs_flag ? " (flag bit 31 set)" : "") << ", half "
    << p.half_regs << "; max threads " << p.max_threads() << "\n"
    << "  memory: private " << p.private_mem << " B, shared " << p.shared_mem << " B (SHARED_SIZE "
    << p.shared_size_field() << "); branch stack " << p.branch_stack << " (hw " << p.branchstack_hw() << ")\n"
    << "  samplers " << p.sampler_count << ", textures " << p.texture_count() << ", IBOs " << p.ibo_count() << "\n";
  for (size_t i = 0; i < p.args.size(); ++i) {
    const ArgRecord& a = p.args[i];
    o << "  arg " << i << ": " << (a.type == 0 ? "buffer/scalar" : a.type == 1 ? "texture" : a.type == 2 ? "ibo" : "type " + std::to_string(a.type))
      << " at const byte " << a.const_byte_offset << "\n";
  }
  for (const ConstRecord& c : p.consts)
    o << "  const: 0x" << std::hex << c.value << std::dec << " -> const byte " << c.const_byte_offset() << " ("
      << (c.is32 ? 4 : 2) << " bytes)\n";
  return o.str();
}

}  // namespace opv::ir3::qcom
