// Tests of the .opv artifact (src/plan/artifact.cpp): round trips, truncation, corruption.
// The header layout below is written from the format description at the top of artifact.cpp
// (it is the spec the reader must follow), so these tests check the file format independently.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "compiler/compile.h"
#include "core/error.h"
#include "plan/artifact.h"
#include "test_util.h"

namespace opv::plan {
namespace {

// Header layout of format version 1.
constexpr size_t kVersionAt = 8, kHeaderSizeAt = 12, kFlagsAt = 16, kSectionCountAt = 20, kTotalAt = 24;
constexpr size_t kSectionsAt = 32, kSectionEntry = 24, kPayloadCrcAt = 80, kHeaderCrcAt = 84, kHeader = 88;

uint32_t rd32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(b[at + i]) << (8 * i);
  return v;
}
uint64_t rd64(const std::vector<uint8_t>& b, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(b[at + i]) << (8 * i);
  return v;
}
void wr32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = uint8_t(v >> (8 * i));
}
void wr64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = uint8_t(v >> (8 * i));
}
uint32_t crc(const uint8_t* p, size_t n) { return uint32_t(crc32(crc32(0L, Z_NULL, 0), p, uInt(n))); }
// Recomputes both checksums after a test edits the bytes on purpose.
void fix_crcs(std::vector<uint8_t>& b) {
  wr32(b, kPayloadCrcAt, crc(b.data() + kHeader, b.size() - kHeader));
  wr32(b, kHeaderCrcAt, crc(b.data(), kHeaderCrcAt));
}

// Deserializes from an exactly-sized heap copy so that a read past the end is a real overflow
// (visible under -DOPV_SANITIZE=ON) rather than a read of the caller's larger buffer.
Plan load_exact(const std::vector<uint8_t>& b, size_t n) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[n ? n : 1]);
  if (n) std::memcpy(copy.get(), b.data(), n);
  return deserialize(copy.get(), n);
}

std::string error_of(const std::vector<uint8_t>& b) {
  try {
    load_exact(b, b.size());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A small valid plan exercising every field: all attr value types, post-ops, absent inputs,
// launch geometry, meta, all buffer kinds and several layouts.
Plan make_plan() {
  Plan p;
  p.target = "reference";
  p.meta.set("source", std::string("unit-test.onnx"));
  p.meta.set("passes", std::vector<int64_t>{1, 2, 3});

  Buffer in;
  in.name = "img";
  in.dtype = DType::F32;
  in.shape = {1, 4, 8, 8};
  in.kind = BufferKind::Input;
  int b_in = p.add_buffer(in);

  std::vector<float> w(8 * 4 * 3 * 3), bias(8);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 7) * 0.25f - 0.5f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = float(i) * 0.125f;
  int b_w = p.add_constant("conv.w", DType::F32, {8, 4, 3, 3}, Layout::Linear, w.data(), w.size() * 4);
  int b_b = p.add_constant("conv.b", DType::F32, {8}, Layout::Linear, bias.data(), bias.size() * 4);

  Buffer t;
  t.name = "conv_out";
  t.shape = {1, 8, 8, 8};
  t.kind = BufferKind::Intermediate;
  t.offset = 0;
  int b_t = p.add_buffer(t);

  Buffer out;
  out.name = "outputs";
  out.shape = {1, 8, 8, 8};
  out.kind = BufferKind::Output;
  int b_out = p.add_buffer(out);
  p.arena_bytes = p.buffers[size_t(b_t)].bytes;

  Kernel conv;
  conv.name = "conv2d_3x3_s1_f32_ref";
  conv.op = OpKind::Conv;
  conv.attrs.set("group", int64_t(1));
  conv.attrs.set("strides", std::vector<int64_t>{1, 1});
  conv.attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  conv.attrs.set("dilations", std::vector<int64_t>{1, 1});
  conv.attrs.set("scale", 0.75);
  conv.attrs.set("mode", std::string("test \xff\x00 bytes", 13));
  conv.attrs.set("floats", std::vector<double>{1.5, -2.25, 1e300, -0.0});
  conv.attrs.set("empty_ints", std::vector<int64_t>{});
  PostOp pa;
  pa.op = OpKind::Add;
  pa.input = 2;
  pa.swapped = true;
  PostOp pc;
  pc.op = OpKind::Clip;
  pc.alpha = -1.5f;
  pc.beta = 6.0f;
  conv.post_ops = {pa, pc};
  conv.source = "__kernel void k() {}";
  conv.entry = "k";
  conv.options = "-cl-fast-relaxed-math";
  int k_conv = p.add_kernel(conv);

  Kernel relu;
  relu.name = "relu_f32";
  relu.op = OpKind::Relu;
  int k_relu = p.add_kernel(relu);

  Call c0;
  c0.kernel = k_conv;
  c0.inputs = {b_in, b_w, b_b};
  c0.outputs = {b_t};
  c0.global = {8, 8, 2};
  c0.local = {8, 8, 1};
  c0.label = "/trunk/conv0";
  p.calls.push_back(c0);
  Call c1;
  c1.kernel = k_relu;
  c1.inputs = {b_t};
  c1.outputs = {b_out};
  c1.label = "/trunk/relu0";
  p.calls.push_back(c1);

  p.inputs = {b_in};
  p.outputs = {b_out};
  return p;
}

void expect_plans_equal(const Plan& a, const Plan& b) {
  EXPECT_EQ(a.target, b.target);
  EXPECT_TRUE(a.meta == b.meta);
  EXPECT_EQ(a.arena_bytes, b.arena_bytes);
  EXPECT_EQ(a.weights, b.weights);
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    const Buffer &x = a.buffers[i], &y = b.buffers[i];
    EXPECT_EQ(x.name, y.name) << i;
    EXPECT_EQ(x.dtype, y.dtype) << i;
    EXPECT_EQ(x.shape, y.shape) << i;
    EXPECT_EQ(x.layout, y.layout) << i;
    EXPECT_EQ(x.kind, y.kind) << i;
    EXPECT_EQ(x.offset, y.offset) << i;
    EXPECT_EQ(x.bytes, y.bytes) << i;
  }
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    const Kernel &x = a.kernels[i], &y = b.kernels[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.op, y.op);
    EXPECT_TRUE(x.attrs == y.attrs) << x.attrs.str() << " vs " << y.attrs.str();
    EXPECT_TRUE(x.post_ops == y.post_ops);
    EXPECT_EQ(x.source, y.source);
    EXPECT_EQ(x.entry, y.entry);
    EXPECT_EQ(x.options, y.options);
  }
  ASSERT_EQ(a.calls.size(), b.calls.size());
  for (size_t i = 0; i < a.calls.size(); ++i) {
    const Call &x = a.calls[i], &y = b.calls[i];
    EXPECT_EQ(x.kernel, y.kernel);
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.outputs, y.outputs);
    EXPECT_EQ(x.global, y.global);
    EXPECT_EQ(x.local, y.local);
    EXPECT_EQ(x.label, y.label);
  }
}

TEST(Artifact, RoundTripIsExact) {
  Plan p = make_plan();
  std::vector<uint8_t> bytes = serialize(p);
  Plan q = load_exact(bytes, bytes.size());
  expect_plans_equal(p, q);
  EXPECT_EQ(serialize(q), bytes);
  // -0.0 must survive bit-exactly (== would not notice a sign change).
  double neg_zero = q.kernels[0].attrs.floats("floats")[3];
  EXPECT_TRUE(std::signbit(neg_zero));
}

// A compiled real model (the shared fixture) for every target: exact round trip, and a flip in
// the middle of its weights is caught by the checksum.
// Binary attr values (the cuda target's cubins) print as their size in dumps, text as itself.
TEST(Artifact, BinaryAttrsPrintAsTheirSize) {
  const Plan p = make_plan();
  const std::string s = p.kernels[0].attrs.str();
  EXPECT_NE(s.find("mode=<13 bytes>"), std::string::npos) << s;
  Attrs a;
  a.set("text", std::string("sm_80,sm_86"));
  EXPECT_EQ(a.str(), "text=sm_80,sm_86");
}

TEST(Artifact, FixtureRoundTripEveryTarget) {
  std::string dir = test::shared_models_dir();
  if (dir.empty()) GTEST_SKIP() << "shared fixtures not found";
  for (const char* target : {"reference", "cpu"}) {
    CompileOptions opts;
    opts.target = target;
    Plan p = compile_onnx(dir + "/opvision_t12_fp16.onnx", opts);
    std::vector<uint8_t> bytes = serialize(p);
    Plan q = deserialize(bytes.data(), bytes.size());
    expect_plans_equal(p, q);
    EXPECT_EQ(serialize(q), bytes) << target;
    bytes[bytes.size() - p.weights.size() / 2] ^= 0x40;
    EXPECT_NE(error_of(bytes).find("checksum"), std::string::npos) << target;
  }
}

TEST(Artifact, PlanWithoutWeights) {
  Plan p;
  p.target = "reference";
  Buffer in;
  in.name = "x";
  in.shape = {3};
  in.kind = BufferKind::Input;
  Buffer out = in;
  out.name = "y";
  out.kind = BufferKind::Output;
  int bi = p.add_buffer(in), bo = p.add_buffer(out);
  Kernel k;
  k.name = "relu_f32";
  k.op = OpKind::Relu;
  Call c;
  c.kernel = p.add_kernel(k);
  c.inputs = {bi};
  c.outputs = {bo};
  p.calls.push_back(c);
  p.inputs = {bi};
  p.outputs = {bo};
  std::vector<uint8_t> bytes = serialize(p);
  EXPECT_EQ(bytes.size() % 64, 0u);  // empty weights section at the aligned end
  std::string path = test::temp_dir() + "/noweights.opv";
  save_artifact(p, path);
  Plan q = load_artifact(path);
  expect_plans_equal(p, q);
  EXPECT_TRUE(q.weights.empty());
}

TEST(Artifact, MagicHasOneDefinition) {
  // The bytes serialize() writes are kArtifactMagic, and has_artifact_magic() (the CLI's sniffer)
  // accepts exactly them.
  std::vector<uint8_t> b = serialize(make_plan());
  ASSERT_GE(b.size(), kArtifactMagicSize);
  EXPECT_EQ(std::string(b.begin(), b.begin() + kArtifactMagicSize), std::string(kArtifactMagic, kArtifactMagicSize));
  EXPECT_TRUE(has_artifact_magic(b.data(), b.size()));
  EXPECT_FALSE(has_artifact_magic(b.data(), kArtifactMagicSize - 1)) << "too short";
  b[kArtifactMagicSize - 1] ^= 1;
  EXPECT_FALSE(has_artifact_magic(b.data(), b.size()));
}

TEST(Artifact, HeaderLayout) {
  Plan p = make_plan();
  std::vector<uint8_t> b = serialize(p);
  ASSERT_GE(b.size(), kHeader);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 8), "OPVISION");
  EXPECT_EQ(rd32(b, kVersionAt), kArtifactVersion);
  EXPECT_EQ(rd32(b, kHeaderSizeAt), kHeader);
  EXPECT_EQ(rd32(b, kFlagsAt), 0u);
  EXPECT_EQ(rd32(b, kSectionCountAt), 2u);
  EXPECT_EQ(rd64(b, kTotalAt), b.size());
  EXPECT_EQ(rd32(b, kHeaderCrcAt), crc(b.data(), kHeaderCrcAt));
  EXPECT_EQ(rd32(b, kPayloadCrcAt), crc(b.data() + kHeader, b.size() - kHeader));
  // Weights section: 64-byte aligned, holding Plan::weights verbatim, ending the file.
  size_t w = kSectionsAt + kSectionEntry;
  uint64_t woff = rd64(b, w + 8), wsize = rd64(b, w + 16);
  EXPECT_EQ(woff % 64, 0u);
  ASSERT_EQ(wsize, p.weights.size());
  EXPECT_EQ(woff + wsize, b.size());
  EXPECT_EQ(std::memcmp(b.data() + woff, p.weights.data(), wsize), 0);
}

TEST(Artifact, SaveAndLoadFile) {
  Plan p = make_plan();
  std::string path = test::temp_dir() + "/m.opv";
  save_artifact(p, path);
  Plan q = load_artifact(path);
  expect_plans_equal(p, q);
  EXPECT_THROW(load_artifact(path + ".missing"), Error);
}

TEST(Artifact, EveryTruncationErrors) {
  std::vector<uint8_t> b = serialize(make_plan());
  for (size_t n = 0; n < b.size(); ++n) EXPECT_THROW(load_exact(b, n), Error) << "length " << n;
}

// Truncating the plan section while keeping the header consistent (sizes and CRCs fixed up)
// exercises the bounds-checked cursor itself at every byte.
TEST(Artifact, PlanSectionTruncationWithValidHeaderErrors) {
  std::vector<uint8_t> full = serialize(make_plan());
  uint64_t poff = rd64(full, kSectionsAt + 8), psize = rd64(full, kSectionsAt + 16);
  uint64_t woff = rd64(full, kSectionsAt + kSectionEntry + 8);
  for (uint64_t cut = 0; cut < psize; ++cut) {
    std::vector<uint8_t> b(full.begin(), full.begin() + long(poff + cut));
    // Append the weights section again after the truncated plan (aligned as required).
    while (b.size() % 64) b.push_back(0);
    uint64_t new_woff = b.size();
    b.insert(b.end(), full.begin() + long(woff), full.end());
    wr64(b, kSectionsAt + 16, cut);
    wr64(b, kSectionsAt + kSectionEntry + 8, new_woff);
    wr64(b, kTotalAt, b.size());
    fix_crcs(b);
    std::string err = error_of(b);
    EXPECT_NE(err, "") << "cut at " << cut;
    EXPECT_NE(err.find("at byte"), std::string::npos) << err;
  }
}

TEST(Artifact, RandomByteFlipsError) {
  std::vector<uint8_t> good = serialize(make_plan());
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> b = good;
    size_t at = rng() % b.size();
    uint8_t mask = uint8_t(1u << (rng() % 8));
    b[at] ^= mask;
    EXPECT_THROW(load_exact(b, b.size()), Error) << "flip at byte " << at;
  }
}

TEST(Artifact, FlipsReportChecksum) {
  std::vector<uint8_t> b = serialize(make_plan());
  b[b.size() - 1] ^= 0x10;  // inside the weights
  EXPECT_NE(error_of(b).find("checksum"), std::string::npos) << error_of(b);
  b = serialize(make_plan());
  b[kTotalAt + 7] ^= 0x01;  // a header field not checked before the header CRC
  EXPECT_NE(error_of(b).find("header checksum"), std::string::npos) << error_of(b);
}

// Corrupting the plan section or padding and then fixing the CRCs (a forged or buggy writer) must never
// crash: every byte, several values; each load either errors or yields a plan that validates
// and re-serialises to exactly the edited bytes (the encoding is canonical).
TEST(Artifact, CorruptPlanSectionWithValidCrcNeverCrashes) {
  std::vector<uint8_t> good = serialize(make_plan());
  // Everything after the header up to the first weight bytes: padding, plan section, padding.
  const uint64_t end = rd64(good, kSectionsAt + kSectionEntry + 8) + 8;
  const uint8_t values[] = {0x00, 0xff, 0x7f, 0x80, 0x01};
  int errors = 0, loads = 0;
  for (uint64_t i = kHeader; i < end; ++i) {
    for (uint8_t v : values) {
      std::vector<uint8_t> b = good;
      if (b[i] == v) continue;
      b[i] = v;
      fix_crcs(b);
      try {
        Plan q = load_exact(b, b.size());
        validate(q);
        EXPECT_EQ(serialize(q), b) << "byte " << i << " = " << int(v);
        ++loads;
      } catch (const Error& e) {
        ++errors;
        EXPECT_NE(std::string(e.what()).find("artifact"), std::string::npos) << e.what();
      }
    }
  }
  // Edits of names, float values and the like load fine; structural edits must be refused.
  EXPECT_GT(errors, 0);
  EXPECT_GT(loads, 0);
}

TEST(Artifact, HeaderFieldCorruptionErrors) {
  const std::vector<uint8_t> good = serialize(make_plan());
  struct Case {
    const char* name;
    void (*edit)(std::vector<uint8_t>&);
    const char* expect;
  };
  const Case cases[] = {
      {"magic", [](std::vector<uint8_t>& b) { b[0] = 'X'; }, "magic"},
      {"header size", [](std::vector<uint8_t>& b) { wr32(b, kHeaderSizeAt, 96); }, "header size"},
      {"flags", [](std::vector<uint8_t>& b) { wr32(b, kFlagsAt, 4); }, "flags"},
      {"section count", [](std::vector<uint8_t>& b) { wr32(b, kSectionCountAt, 3); }, "section count"},
      {"total size", [](std::vector<uint8_t>& b) { wr64(b, kTotalAt, b.size() + 1); }, "size mismatch"},
      {"section kind", [](std::vector<uint8_t>& b) { wr32(b, kSectionsAt, 7); }, "kind"},
      {"plan offset", [](std::vector<uint8_t>& b) { wr64(b, kSectionsAt + 8, 1ull << 40); }, "outside"},
      {"plan size", [](std::vector<uint8_t>& b) { wr64(b, kSectionsAt + 16, ~0ull); }, "outside"},
      {"weights offset", [](std::vector<uint8_t>& b) { wr64(b, kSectionsAt + kSectionEntry + 8, 0); }, "outside"},
      {"weights size", [](std::vector<uint8_t>& b) { wr64(b, kSectionsAt + kSectionEntry + 16, b.size()); },
       "outside"},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> b = good;
    c.edit(b);
    fix_crcs(b);
    std::string err = error_of(b);
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.name << ": '" << err << "'";
    EXPECT_NE(err.find("byte"), std::string::npos) << c.name << ": '" << err << "'";
  }
}

TEST(Artifact, VersionMismatchErrors) {
  std::vector<uint8_t> b = serialize(make_plan());
  wr32(b, kVersionAt, kArtifactVersion + 1);
  fix_crcs(b);
  std::string err = error_of(b);
  EXPECT_NE(err.find("newer"), std::string::npos) << err;
  wr32(b, kVersionAt, 0);
  fix_crcs(b);
  err = error_of(b);
  EXPECT_NE(err.find("version"), std::string::npos) << err;
}

TEST(Artifact, OutOfRangeIdsAndEnumsError) {
  // Plans whose ids/enums are out of range are written as-is (serialize does not validate) and
  // must be refused by the reader with a message naming the item.
  {
    Plan p = make_plan();
    p.calls[1].inputs[0] = 99;
    std::string err = error_of(serialize(p));
    EXPECT_NE(err.find("call 1"), std::string::npos) << err;
    EXPECT_NE(err.find("out of range"), std::string::npos) << err;
  }
  {
    Plan p = make_plan();
    p.calls[0].kernel = 5;
    std::string err = error_of(serialize(p));
    EXPECT_NE(err.find("kernel id 5"), std::string::npos) << err;
  }
  {
    Plan p = make_plan();
    p.buffers[0].layout = Layout(200);
    std::string err = error_of(serialize(p));
    EXPECT_NE(err.find("buffer 0"), std::string::npos) << err;
    EXPECT_NE(err.find("layout"), std::string::npos) << err;
  }
  {
    Plan p = make_plan();
    p.kernels[1].op = OpKind(uint16_t(OpKind::Count_) + 3);
    std::string err = error_of(serialize(p));
    EXPECT_NE(err.find("kernel 1"), std::string::npos) << err;
  }
  {
    Plan p = make_plan();
    p.outputs = {-1};
    std::string err = error_of(serialize(p));
    EXPECT_NE(err.find("plan outputs"), std::string::npos) << err;
  }
}

TEST(Artifact, HugeCountDoesNotAllocate) {
  // Rewrite the buffer count (right after target, meta and arena_bytes) to 0xffffffff.
  Plan p = make_plan();
  p.meta = Attrs();
  p.target = "";
  std::vector<uint8_t> b = serialize(p);
  uint64_t poff = rd64(b, kSectionsAt + 8);
  size_t count_at = size_t(poff) + 4 /*target len*/ + 4 /*meta count*/ + 8 /*arena*/;
  ASSERT_EQ(rd32(b, count_at), p.buffers.size());
  wr32(b, count_at, 0xffffffffu);
  fix_crcs(b);
  std::string err = error_of(b);
  EXPECT_NE(err.find("exceeds"), std::string::npos) << err;
  EXPECT_NE(err.find("byte " + std::to_string(count_at)), std::string::npos) << err;
}

}  // namespace
}  // namespace opv::plan
