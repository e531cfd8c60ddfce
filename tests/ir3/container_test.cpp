// Qualcomm program-binary container: fields round-trip, code can grow (bytes after the image
// move and offsets are fixed), malformed blobs give errors naming the field and offset.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "ir3/container.h"
#include "ir3/isa.h"
#include "ir3/legalize.h"

using namespace opv::ir3;

namespace {
std::vector<uint64_t> code() { return assemble("add.f r0.x, r1.x, r1.y\nrcp r0.y, r0.x\nend\n"); }
void put(std::vector<uint8_t>& b, uint32_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }
}  // namespace

TEST(Ir3Container, FieldsRoundTrip) {
  qcom::Program p = qcom::make(code(), "E_4_32", {qcom::ArgType::Buffer, qcom::ArgType::Texture, qcom::ArgType::Ibo}, 3, 1);
  EXPECT_EQ(p.name, "E_4_32");
  EXPECT_EQ(p.code, code());
  EXPECT_EQ(p.full_regs, 3u);
  EXPECT_EQ(p.half_regs, 1u);
  ASSERT_EQ(p.args.size(), 3u);
  EXPECT_EQ(p.args[1].type, 1u);
  EXPECT_EQ(p.args[2].const_byte_offset, 32u);
  EXPECT_EQ(p.texture_count(), 1u);
  EXPECT_EQ(p.ibo_count(), 1u);
  // tinygrad's derived launch values
  EXPECT_EQ(p.max_threads(), 1024u);  // 384*32/((3+1)*128) = 24 -> *128 = 3072 -> min 1024
  p.full_regs = 40;
  EXPECT_EQ(p.max_threads(), 256u);   // 12288/(41*128) = 2 -> 256
  p.shared_mem = 4096;
  EXPECT_EQ(p.shared_size_field(), 3u);
  p.branch_stack = 3;
  EXPECT_EQ(p.branchstack_hw(), 2u);
  p.private_mem = 512;
  p.full_regs_flag = true;
  qcom::Program q = qcom::read(qcom::write(p));
  EXPECT_EQ(q.full_regs, 40u);
  EXPECT_TRUE(q.full_regs_flag);
  EXPECT_EQ(q.shared_mem, 4096u);
  EXPECT_EQ(q.private_mem, 512u);
  EXPECT_EQ(q.branch_stack, 3u);
  EXPECT_EQ(q.args.size(), 3u);
  EXPECT_EQ(qcom::write(q), qcom::write(p));
}

TEST(Ir3Container, LegalizedCodeGrowsInPlace) {
  qcom::Program p = qcom::make(code(), "k", {qcom::ArgType::Buffer}, 1, 0);
  std::vector<uint8_t> before = p.blob;
  ASSERT_FALSE(check_hazards(p.code).empty());
  EXPECT_TRUE(legalize(p.code));
  qcom::Program q = qcom::read(qcom::write(p));
  EXPECT_EQ(q.code, p.code);
  EXPECT_GT(q.image_size, static_cast<uint32_t>(code().size() * 8));
  EXPECT_EQ(q.desc_offset, p.desc_offset + (q.image_size - p.image_size));  // descriptor moved with it
  EXPECT_EQ(q.name, "k");
  ASSERT_EQ(q.args.size(), 1u);
  EXPECT_TRUE(check_hazards(q.code).empty());
}

TEST(Ir3Container, MalformedBlobsAreRejectedWithOffsets) {
  qcom::Program p = qcom::make(code(), "k", {}, 1, 0);
  auto expect_error = [](std::vector<uint8_t> b, const std::string& part) {
    try {
      qcom::read(b);
      FAIL() << "accepted";
    } catch (const opv::Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error(std::vector<uint8_t>(100, 0), "smaller than the");
  auto b = p.blob;
  put(b, qcom::kHdrImageSize, 12);
  expect_error(b, "not a multiple of 8");
  b = p.blob;
  put(b, qcom::kHdrImageOffset, 0xfffff0);
  expect_error(b, "outside the");
  b = p.blob;
  put(b, qcom::kHdrDescOffset, static_cast<uint32_t>(b.size()) - 8);
  expect_error(b, "past the end");
  b = p.blob;
  b.resize(b.size() - 40);  // cut the name terminator / records
  put(b, qcom::kHdrDescOffset, p.desc_offset);
  EXPECT_THROW(qcom::read(b), opv::Error);
  EXPECT_FALSE(qcom::looks_like_program(std::vector<uint8_t>(8, 0)));
}
