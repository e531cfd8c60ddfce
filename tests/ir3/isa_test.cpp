// Robustness and API tests for the ir3 decoder/assembler: random words never crash the decoder,
// every decodable word re-assembles to the same text, bad text gives clear errors, labels resolve.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "ir3/isa.h"

using namespace opv::ir3;

TEST(Ir3Fuzz, RandomWordsNeverCrashTheDecoder) {
  std::mt19937_64 rng(20261202);
  int valid = 0;
  for (int i = 0; i < 100000; ++i) {
    uint64_t w = rng();
    if (i % 2) w = (w & ~(7ull << 61)) | (static_cast<uint64_t>(i % 8) << 61);  // every category
    Instr in = decode(w, kGenA6xx);
    std::string t = print(in);
    ASSERT_FALSE(t.empty());
    if (!in.valid()) {
      ASSERT_EQ(t.rfind("raw 0x", 0), 0u) << t;
      // raw text assembles back to exactly the word
      ASSERT_EQ(parse(t).bits, w);
    } else {
      ++valid;
    }
  }
  EXPECT_GT(valid, 10000);  // the table covers a large part of the encoding space
}

TEST(Ir3Fuzz, DecodableWordsReassembleToTheSameText) {
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int i = 0; i < 4000; ++i) {
    uint64_t w = rng();
    w = (w & ~(7ull << 61)) | (static_cast<uint64_t>(i % 8) << 61);
    Instr in = decode(w);
    if (!in.valid()) continue;
    std::string t = print(in);
    Instr back = parse(t);
    ASSERT_EQ(print(back), t) << std::hex << w;
    // the fixed bits of the encoding are reproduced (don't-care bits may differ)
    ASSERT_EQ(back.name(), in.name());
    ++checked;
  }
  EXPECT_GT(checked, 1000);
}

TEST(Ir3Parse, ErrorsNameTheProblem) {
  try {
    parse("frobnicate r0.x, r1.x");
    FAIL();
  } catch (const opv::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown instruction `frobnicate`"), std::string::npos) << e.what();
  }
  try {
    parse("add.f r0.x, r1.x, q7");
    FAIL();
  } catch (const opv::Error& e) {
    EXPECT_NE(std::string(e.what()).find("match no encoding of `add.f`"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse(""), opv::Error);
  EXPECT_THROW(parse("raw 0xZZ"), opv::Error);
  EXPECT_THROW(assemble("br p0.x, #nowhere\nend\n"), opv::Error);
  EXPECT_THROW(words_from_bytes(std::vector<uint8_t>(12)), opv::Error);
}

TEST(Ir3Parse, FieldsAndEditing) {
  Instr in = parse("(rpt3)mad.f32 r8.x, (r)c4.x, r4.x, (r)r8.x");
  EXPECT_EQ(in.name(), "mad.f32");
  EXPECT_EQ(in.get("REPEAT"), 3);
  EXPECT_EQ(in.get("SRC1_R"), 1);
  EXPECT_EQ(in.get("SRC3_R"), 1);
  EXPECT_EQ(in.child_kind("SRC1"), "#c3-const-or-immed");
  Instr sy = with_field(in, "SY", 1);
  EXPECT_EQ(print(sy), "(sy)(rpt3)mad.f32 r8.x, (r)c4.x, r4.x, (r)r8.x");
  // (nopN) and (rptN) share bits: the parser picks the right meaning
  EXPECT_EQ(print(parse("(nop2) add.f r0.x, r0.y, r0.z")), "(nop2) add.f r0.x, r0.y, r0.z");
  EXPECT_EQ(parse("(nop2) add.f r0.x, r0.y, r0.z").get("REPEAT"), 0);
  // whitespace does not matter
  EXPECT_EQ(parse("add.f  r0.x,r0.y , r0.z").bits, parse("add.f r0.x, r0.y, r0.z").bits);
  // floats that %f would round are printed exactly
  Instr f = parse("mov.f32f32 r0.x, (0.1)");
  EXPECT_EQ(parse(print(f)).bits, f.bits);
  Instr tiny = parse("mov.f32f32 r0.x, (1e-20)");
  EXPECT_EQ(parse(print(tiny)).bits, tiny.bits);
}

TEST(Ir3Asm, LabelsBecomeRelativeOffsets) {
  auto w = assemble(
      "start: mov.u32u32 r0.x, 0   ; comment\n"
      "loop:\n"
      "  add.u r0.x, r0.x, 1\n"
      "  cmps.u.lt p0.x, r0.x, 10  // another\n"
      "  br p0.x, #loop\n"
      "  jump #done\n"
      "  nop\n"
      "done: end\n");
  ASSERT_EQ(w.size(), 7u);
  EXPECT_EQ(disasm(w[3]), "br p0.x, #-2");
  EXPECT_EQ(disasm(w[4]), "jump #2");
  auto bytes = bytes_from_words(w);
  EXPECT_EQ(bytes.size(), 56u);
  EXPECT_EQ(words_from_bytes(bytes), w);
  EXPECT_EQ(bytes[0], static_cast<uint8_t>(w[0]));  // low dword first, little-endian
}
