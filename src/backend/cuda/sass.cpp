// See sass.h. The ELF fields read are the System V gABI's (ELF64 header, program and section
// header tables); the SM's place in e_flags is NVIDIA's: bits 8-15 from ELF ABI version 8 on
// (CUDA 12.8+ cubins, e.g. 0x6005a04 for sm_90), the low byte before.
#include "backend/cuda/sass.h"

#include <cstdint>
#include <cstring>

#include "core/error.h"
#include "target/cuda/cuda_abi.h"

namespace opv::backend::cuda_sass {

namespace {

constexpr size_t kEhdrBytes = 64;      // sizeof(Elf64_Ehdr)
constexpr uint16_t kEmCuda = 190;      // EM_CUDA
constexpr uint8_t kElfClass64 = 2;     // ELFCLASS64
constexpr uint8_t kElfData2Lsb = 1;    // ELFDATA2LSB
constexpr int kMinSm = 30, kMaxSm = 255;

uint64_t le(const std::string& b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(b[at + size_t(i)]);
  return v;
}

// True when the table of `count` entries of `entsize` bytes at `off` lies inside `size` bytes.
bool table_inside(uint64_t off, uint64_t count, uint64_t entsize, uint64_t size) {
  if (count == 0) return true;
  if (off > size || entsize == 0 || count > size / entsize) return false;
  return count * entsize <= size - off;
}

}  // namespace

int cubin_sm(const std::string& image, std::string* why) {
  auto no = [&](const std::string& what) {
    if (why) *why = what;
    return 0;
  };
  if (image.size() < kEhdrBytes || std::memcmp(image.data(), "\x7f" "ELF", 4) != 0)
    return no(detail::concat("is not an ELF image (", image.size(), " bytes)"));
  if (uint8_t(image[4]) != kElfClass64 || uint8_t(image[5]) != kElfData2Lsb)
    return no("is not a 64-bit little-endian ELF image");
  if (le(image, 18, 2) != kEmCuda) return no(detail::concat("is an ELF image for machine ", le(image, 18, 2), ", not CUDA (190)"));
  const uint64_t size = image.size();
  const uint64_t phoff = le(image, 32, 8), shoff = le(image, 40, 8);
  const uint64_t phentsize = le(image, 54, 2), phnum = le(image, 56, 2);
  const uint64_t shentsize = le(image, 58, 2), shnum = le(image, 60, 2);
  if (!table_inside(phoff, phnum, phentsize, size) || !table_inside(shoff, shnum, shentsize, size))
    return no("has a program or section header table outside the image");
  const uint64_t flags = le(image, 48, 4);
  const int abi_version = uint8_t(image[8]);
  const int sm = int(abi_version >= 8 ? (flags >> 8) & 0xff : flags & 0xff);
  if (sm < kMinSm || sm > kMaxSm) return no(detail::concat("names no GPU architecture (e_flags ", flags, ")"));
  return sm;
}

std::string problem(const plan::Kernel& k) {
  using plan::cuda::kSassSmsAttr;
  if (!k.attrs.has(kSassSmsAttr)) {
    for (const auto& [key, v] : k.attrs.map())
      if (key.rfind(std::string(kSassSmsAttr) + "_", 0) == 0)
        return detail::concat("has SASS attr ", key, " but no ", kSassSmsAttr, " list");
    return "";
  }
  std::vector<int64_t> sms;
  try {
    sms = k.attrs.ints(kSassSmsAttr);
  } catch (const Error&) {
    return detail::concat("has a ", kSassSmsAttr, " attr that is not a list of integers");
  }
  for (size_t i = 0; i < sms.size(); ++i) {
    const int64_t sm = sms[i];
    if (sm < kMinSm || sm > kMaxSm) return detail::concat("lists SASS for sm_", sm, ", no such GPU");
    for (size_t j = 0; j < i; ++j)
      if (sms[j] == sm) return detail::concat("lists SASS for sm_", sm, " twice");
    const std::string key = plan::cuda::sass_attr(int(sm));
    std::string image;
    try {
      image = k.attrs.s(key);
    } catch (const Error&) {
      return detail::concat("has a ", key, " attr that is not a cubin");
    }
    if (image.empty()) return detail::concat("lists SASS for sm_", sm, " but has no ", key);
    std::string why;
    const int found = cubin_sm(image, &why);
    if (!found) return detail::concat("has a ", key, " that ", why);
    if (found != sm) return detail::concat("has a ", key, " built for sm_", found);
  }
  return "";
}

int pick(const plan::Kernel& k, int major, int minor) {
  int best = 0;
  for (int64_t sm : k.attrs.ints(plan::cuda::kSassSmsAttr))
    if (sm / 10 == major && sm % 10 <= minor && sm > best) best = int(sm);
  return best;
}

}  // namespace opv::backend::cuda_sass
