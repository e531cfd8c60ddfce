// Simulator tests: programs written in our assembler whose results are computed independently
// on the host (loops with divergence, a matrix-vector inner loop, texture reads, local memory
// with barriers, and the (rpt3)(r) packing of a 4x4 mad.f32 block).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "ir3/isa.h"
#include "ir3/sim.h"

using namespace opv::ir3;

namespace {

// c0.xy = output buffer address; other consts per test.
struct SimRun {
  Simulator sim;
  uint64_t out;
  explicit SimRun(const std::string& src, size_t out_bytes) : sim(assemble(src)), out(sim.alloc(out_bytes)) {
    sim.consts.assign(64, 0);
    sim.set_const_u64(0, out);
  }
};

const char* kDivergentLoop = R"(
  mov.u32u32 r1.x, 0          ; i
  mov.u32u32 r1.y, 0          ; sum
loop:
  add.u r1.y, r1.y, r1.x
  add.u r1.x, r1.x, 1
  cmps.u.lt p0.x, r1.x, r0.x  ; per-fiber trip count = local id
  br p0.x, #loop
  shl.b r2.x, r0.x, 2
  add.u r3.x, c0.x, r2.x
  mov.u32u32 r3.y, c0.y
  stg.u32 g[r3.x], r1.y, 1
  end
)";

}  // namespace

TEST(Ir3Sim, DivergentLoopsReconverge) {
  SimRun r(kDivergentLoop, 4 * 100);
  SimConfig cfg;
  cfg.local_size = {100, 1, 1};  // two waves, the second partly filled
  SimStats st = r.sim.run(cfg);
  auto v = r.sim.read_vec<uint32_t>(r.out, 100);
  for (uint32_t i = 0; i < 100; ++i) {
    uint32_t want = i == 0 ? 0 : i * (i - 1) / 2;
    ASSERT_EQ(v[i], want) << "lid " << i;
  }
  EXPECT_EQ(st.waves, 2u);
  // the loop body issues once per iteration of the longest fiber of each wave
  EXPECT_GT(st.instructions, 4u * 99);
}

TEST(Ir3Sim, MatVecInnerLoopMatchesHost) {
  // y[i] = sum_k A[i*K+k] * x[k]; c1.x = K, c2.xy = &A, c3.xy = &x (cN.c = dword 4N+c)
  const int M = 70, K = 13;
  SimRun r(R"(
    mov.u32u32 r1.x, 0            ; k
    mov.f32f32 r1.y, (0.0)        ; acc
    mul.u24 r1.z, r0.x, c1.x      ; row start (elements)
  loop:
    add.u r1.w, r1.z, r1.x
    mov.u32u32 r2.x, c2.x
    mov.u32u32 r2.y, c2.y
    ldg.a.f32 r4.x, g[r2.x+(r1.w<<2)], 1
    mov.u32u32 r2.z, c3.x
    mov.u32u32 r2.w, c3.y
    ldg.a.f32 r4.y, g[r2.z+(r1.x<<2)], 1
    (sy)mad.f32 r1.y, r4.x, r4.y, r1.y
    add.u r1.x, r1.x, 1
    cmps.u.lt p0.x, r1.x, c1.x
    br p0.x, #loop
    shl.b r5.x, r0.x, 2
    add.u r5.x, c0.x, r5.x
    mov.u32u32 r5.y, c0.y
    stg.f32 g[r5.x], r1.y, 1
    end
  )", 4 * M);
  std::vector<float> A(M * K), x(K);
  for (int i = 0; i < M * K; ++i) A[i] = static_cast<float>((i * 37) % 19) * 0.25f - 2.0f;
  for (int k = 0; k < K; ++k) x[k] = 1.0f / static_cast<float>(k + 1);
  uint64_t a = r.sim.alloc(A.size() * 4), xa = r.sim.alloc(x.size() * 4);
  r.sim.write(a, A.data(), A.size() * 4);
  r.sim.write(xa, x.data(), x.size() * 4);
  r.sim.consts[4] = K;
  r.sim.set_const_u64(8, a);
  r.sim.set_const_u64(12, xa);
  SimConfig cfg;
  cfg.local_size = {M, 1, 1};
  r.sim.run(cfg);
  auto y = r.sim.read_vec<float>(r.out, M);
  for (int i = 0; i < M; ++i) {
    volatile float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      volatile float p = A[i * K + k] * x[k];
      acc = p + acc;
    }
    ASSERT_EQ(y[i], acc) << "row " << i;
  }
}

TEST(Ir3Sim, IsamReadsTexelsAndGetsizeReportsDimensions) {
  const int W = 5, H = 3;
  SimRun r(R"(
    isam (f32)(xyzw)r2.x, r0.x, s#0, t#0      ; r0.x, r0.y = (x, y)
    getsize (u32)(xy)r3.x, r0.x, t#0
    mul.u24 r1.x, r0.y, c4.x
    add.u r1.x, r1.x, r0.x
    shl.b r1.y, r1.x, 4
    add.u r5.x, c0.x, r1.y
    mov.u32u32 r5.y, c0.y
    (sy)stg.f32 g[r5.x], r2.x, 4
    shl.b r1.z, r1.x, 3
    add.u r6.x, c8.x, r1.z
    mov.u32u32 r6.y, c8.y
    stg.u32 g[r6.x], r3.x, 2
    end
  )", 16 * W * H);
  SimImage img;
  img.format = SimImage::Format::RGBA16F;
  img.width = W;
  img.height = H;
  img.data.resize(W * H * 8);
  std::vector<float> want(W * H * 4);
  for (int i = 0; i < W * H * 4; ++i) {
    float f = static_cast<float>(i) * 0.5f - 3.0f;
    uint16_t h = opv::float_to_half(f);
    std::memcpy(img.data.data() + i * 2, &h, 2);
    want[i] = f;
  }
  r.sim.images.push_back(img);
  uint64_t sizes = r.sim.alloc(8 * W * H);
  r.sim.set_const_u64(32, sizes);
  r.sim.consts[16] = W;
  SimConfig cfg;
  cfg.local_size = {W, H, 1};
  r.sim.run(cfg);
  EXPECT_EQ(r.sim.read_vec<float>(r.out, W * H * 4), want);
  auto sz = r.sim.read_vec<uint32_t>(sizes, 2 * W * H);
  for (int i = 0; i < W * H; ++i) {
    EXPECT_EQ(sz[2 * i], static_cast<uint32_t>(W));
    EXPECT_EQ(sz[2 * i + 1], static_cast<uint32_t>(H));
  }
}

TEST(Ir3Sim, LocalMemoryNeedsTheBarrier) {
  // out[i] = l[(i+1) % 128] after every fiber stored its id; two waves must meet at bar.
  auto program = [](bool with_bar) {
    return std::string(R"(
      shl.b r1.x, r0.x, 2
      add.u r2.x, r0.x, 1
      mov.u32u32 r3.x, 7
      add.u r3.x, r3.x, r0.x
      stl.u32 l[r1.x], r3.x, 1
    )") + (with_bar ? "  bar\n" : "") + R"(
      and.b r2.x, r2.x, 127
      shl.b r2.y, r2.x, 2
      ldl.u32 r4.x, l[r2.y], 1
      add.u r5.x, c0.x, r1.x
      mov.u32u32 r5.y, c0.y
      (ss)nop
      stg.u32 g[r5.x], r4.x, 1
      end
    )";
  };
  SimConfig cfg;
  cfg.local_size = {128, 1, 1};
  SimRun good(program(true), 4 * 128);
  SimStats st = good.sim.run(cfg);
  auto v = good.sim.read_vec<uint32_t>(good.out, 128);
  for (uint32_t i = 0; i < 128; ++i) ASSERT_EQ(v[i], 7 + (i + 1) % 128) << i;
  EXPECT_EQ(st.barriers, 2u);
  SimRun racy(program(false), 4 * 128);
  racy.sim.run(cfg);
  auto bad = racy.sim.read_vec<uint32_t>(racy.out, 128);
  EXPECT_EQ(bad[63], 0u);  // wave 0 ran ahead of wave 1's store
}

TEST(Ir3Sim, RptPackedMadBlockEqualsScalarBlock) {
  // acc.xyzw (r8) += c[4+k].xyzw * r4.(k) for k = 0..3: 16 scalar mads vs 4 (rpt3) mads.
  std::string scalar, packed;
  const char* comp = "xyzw";
  for (int k = 0; k < 4; ++k) {
    for (int j = 0; j < 4; ++j)
      scalar += std::string("mad.f32 r8.") + comp[j] + ", c" + std::to_string(4 + k) + "." + comp[j] + ", r4." + comp[k] +
                ", r8." + comp[j] + "\n";
    packed += std::string("(rpt3)mad.f32 r8.x, (r)c") + std::to_string(4 + k) + ".x, r4." + comp[k] + ", (r)r8.x\n";
  }
  auto wrap = [](const std::string& body) {
    return std::string(R"(
      cov.u32f32 r4.x, r0.x
      add.f r4.y, r4.x, (0.5)
      mul.f r4.z, r4.x, (pi)
      add.f r4.w, r4.x, (4.0)
      mov.f32f32 r8.x, (1.0)
      mov.f32f32 r8.y, (2.0)
      mov.f32f32 r8.z, (-0.5)
      mov.f32f32 r8.w, (0.25)
    )") + body + R"(
      shl.b r1.x, r0.x, 4
      add.u r5.x, c0.x, r1.x
      mov.u32u32 r5.y, c0.y
      stg.f32 g[r5.x], r8.x, 4
      end
    )";
  };
  ASSERT_EQ(assemble(packed).size(), 4u);
  ASSERT_EQ(assemble(scalar).size(), 16u);
  float cst[16];
  for (int i = 0; i < 16; ++i) cst[i] = 0.1f * static_cast<float>(i) - 0.7f;
  std::vector<std::vector<float>> outs;
  for (const std::string& body : {scalar, packed}) {
    SimRun r(wrap(body), 16 * 64);
    for (int i = 0; i < 16; ++i) std::memcpy(&r.sim.consts[16 + i], &cst[i], 4);
    r.sim.run(SimConfig{});
    outs.push_back(r.sim.read_vec<float>(r.out, 4 * 64));
  }
  ASSERT_EQ(outs[0], outs[1]);
  // and both equal the host computation
  for (int lid = 0; lid < 64; ++lid) {
    float b[4] = {static_cast<float>(lid), static_cast<float>(lid) + 0.5f, static_cast<float>(lid) * 3.14159265358979323846f,
                  static_cast<float>(lid) + 4.0f};
    float acc[4] = {1.0f, 2.0f, -0.5f, 0.25f};
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 4; ++j) {
        volatile float p = cst[4 * k + j] * b[k];
        acc[j] = p + acc[j];
      }
    for (int j = 0; j < 4; ++j) ASSERT_EQ(outs[0][4 * lid + j], acc[j]) << lid << " " << j;
  }
}

TEST(Ir3Sim, PredicationAndErrors) {
  // predt: only fibers with p0.x set execute the region
  SimRun r(R"(
    and.b r1.x, r0.x, 1
    cmps.u.eq p0.x, r1.x, 1
    mov.u32u32 r2.x, 5
    predt
    mov.u32u32 r2.x, 9
    prede
    shl.b r1.y, r0.x, 2
    add.u r5.x, c0.x, r1.y
    mov.u32u32 r5.y, c0.y
    stg.u32 g[r5.x], r2.x, 1
    end
  )", 4 * 64);
  r.sim.run(SimConfig{});
  auto v = r.sim.read_vec<uint32_t>(r.out, 64);
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(v[i], (i & 1) ? 9u : 5u);
  // out-of-bounds store names the instruction
  SimRun oob("mov.u32u32 r1.x, 0\nmov.u32u32 r1.y, 0\nstg.u32 g[r1.x], r1.x, 1\nend\n", 4);
  try {
    oob.sim.run(SimConfig{});
    FAIL();
  } catch (const opv::Error& e) {
    EXPECT_NE(std::string(e.what()).find("instruction 2 `stg.u32"), std::string::npos) << e.what();
  }
  // running off the end
  SimRun noend("mov.u32u32 r1.x, 0\n", 4);
  EXPECT_THROW(noend.sim.run(SimConfig{}), opv::Error);
}

TEST(Ir3Sim, HalfRegsRelativeAddressingIboSfuAndGroups) {
  // per fiber: out[gid*8 + lid] record of 4 dwords:
  //  [0] r2.x assembled from its two halves hr4.x (low) / hr4.y (high)
  //  [1] r<a0.x + 8> with a0.x = lid & 3 (reads r2.x + lid&3 of a table in r2.x..r2.w)
  //  [2] rsq(float(lid + 1)) bits,  [3] IBO 0 element lid, stored back +1000 into IBO 1
  const int L = 16, G = 3;
  SimRun r(R"(
    mov.u16u16 hr4.x, 0x1234
    mov.u16u16 hr4.y, 0xabcd
    mov.u32u32 r3.x, r2.x            ; r2.x is hr4.x|hr4.y<<16 (merged file)
    mov.u32u32 r2.x, 100
    mov.u32u32 r2.y, 101
    mov.u32u32 r2.z, 102
    mov.u32u32 r2.w, 103
    and.b r1.x, r0.x, 3
    cov.u32s16 hr8.x, r1.x          ; hr8.x = low half of r4.x (hr1.z would clobber r0.w)
    mova a0.x, hr8.x
    mov.u32u32 r3.y, r<a0.x + 8>
    add.u r1.y, r0.x, 1
    cov.u32f32 r1.z, r1.y
    rsq r3.z, r1.z
    ldib.b.untyped.1d.u32.1.imm r3.w, r0.x, 0
    (sy)add.u r5.x, r3.w, 1000
    stib.b.untyped.1d.u32.1.imm r5.x, r0.x, 1
    mul.u24 r6.x, r0.w, 16           ; r0.w = group id x (group_id_reg)
    add.u r6.x, r6.x, r0.x
    shl.b r6.x, r6.x, 4
    add.u r7.x, c0.x, r6.x
    mov.u32u32 r7.y, c0.y
    (ss)nop
    stg.u32 g[r7.x], r3.x, 4
    end
  )", 16 * L * G);
  std::vector<uint32_t> in(L * G), out(L * G, 0);
  for (int i = 0; i < L * G; ++i) in[i] = 7 * i + 3;
  uint64_t a = r.sim.alloc(4 * L * G), b = r.sim.alloc(4 * L * G);
  r.sim.write(a, in.data(), 4 * in.size());
  r.sim.ibos = {{a, 4 * static_cast<uint64_t>(L), false, {}}, {b, 4 * static_cast<uint64_t>(L), false, {}}};
  SimConfig cfg;
  cfg.local_size = {L, 1, 1};
  cfg.num_groups = {G, 1, 1};
  cfg.group_id_reg = 3;  // r0.w
  r.sim.run(cfg);
  auto v = r.sim.read_vec<uint32_t>(r.out, 4 * L * G);
  auto back = r.sim.read_vec<uint32_t>(b, L);
  for (int g = 0; g < G; ++g)
    for (int l = 0; l < L; ++l) {
      const uint32_t* rec = &v[4 * (g * L + l)];
      EXPECT_EQ(rec[0], 0xabcd1234u);
      EXPECT_EQ(rec[1], 100u + (l & 3));
      float f;
      std::memcpy(&f, &rec[2], 4);
      EXPECT_EQ(f, 1.0f / std::sqrt(static_cast<float>(l + 1)));
      EXPECT_EQ(rec[3], in[l]);
    }
  for (int l = 0; l < L; ++l) EXPECT_EQ(back[l], in[l] + 1000);
}

TEST(Ir3Sim, SelSamSfuHalfFloatAndDeterminism) {
  // per fiber (lid): x = float(lid) / 8
  //  [0] sel.b32: lid odd ? 111 : 222   [1] exp2(x)   [2] log2(x + 1)   [3] sin(x) + cos(x)
  //  [4] sam of a 4x1 RGBA32F image at normalized u = (lid % 4 + 0.5) / 4 (red channel)
  //  [5] mad.f16 in half registers: h(x) * h(2.0) + h(0.5), widened back to f32 with cov
  const std::string src = R"(
    cov.u32f32 r1.x, r0.x
    mul.f r1.x, r1.x, c4.x            ; c4.x = 0.125
    and.b r1.y, r0.x, 1
    mov.u32u32 r2.x, 111
    mov.u32u32 r2.y, 222
    sel.b32 r3.x, r2.x, r1.y, r2.y
    exp2 r3.y, r1.x
    add.f r1.z, r1.x, (1.0)
    log2 r3.z, r1.z
    sin r4.x, r1.x
    cos r4.y, r1.x
    (ss)add.f r3.w, r4.x, r4.y
    and.b r5.x, r0.x, 3
    cov.u32f32 r5.x, r5.x
    add.f r5.x, r5.x, (0.5)
    mul.f r5.x, r5.x, (0.5)
    mul.f r5.x, r5.x, (0.5)
    mov.f32f32 r5.y, (0.5)
    sam (f32)(x)r4.x, r5.x, s#0, t#0
    cov.f32f16 hr12.x, r1.x
    mad.f16 hr12.y, hr12.x, h(2.0), h(0.5)   ; not encodable: mad srcs 2 must be a register
  )";
  EXPECT_THROW(assemble(src + "end\n"), opv::Error);  // the assembler rejects an immediate src2
  const std::string fixed = std::string(src.substr(0, src.find("    mad.f16"))) + R"(
    mov.f16f16 hr13.x, h(2.0)
    mov.f16f16 hr13.y, h(0.5)
    mad.f16 hr12.y, hr12.x, hr13.x, hr13.y
    cov.f16f32 r4.y, hr12.y
    mul.u24 r6.x, r0.x, 24
    add.u r7.x, c0.x, r6.x
    mov.u32u32 r7.y, c0.y
    (sy)stg.u32 g[r7.x], r3.x, 4
    add.u r7.x, r7.x, 16
    stg.u32 g[r7.x], r4.x, 2
    end
  )";
  std::vector<std::vector<uint32_t>> runs;
  for (int rep = 0; rep < 2; ++rep) {
    SimRun r(fixed, 24 * 64);
    float eighth = 0.125f;
    std::memcpy(&r.sim.consts[16], &eighth, 4);
    SimImage img;
    img.format = SimImage::Format::RGBA32F;
    img.width = 4;
    img.height = 1;
    img.data.resize(4 * 16);
    for (int t = 0; t < 4; ++t) {
      float red = 10.0f + t;
      std::memcpy(img.data.data() + 16 * t, &red, 4);
    }
    r.sim.images.push_back(img);
    r.sim.run(SimConfig{});
    runs.push_back(r.sim.read_vec<uint32_t>(r.out, 6 * 64));
  }
  ASSERT_EQ(runs[0], runs[1]);  // deterministic
  auto f = [&](int lid, int k) {
    float v;
    std::memcpy(&v, &runs[0][6 * lid + k], 4);
    return v;
  };
  for (int lid = 0; lid < 64; ++lid) {
    float x = static_cast<float>(lid) * 0.125f;
    EXPECT_EQ(runs[0][6 * lid], (lid & 1) ? 111u : 222u);
    EXPECT_EQ(f(lid, 1), std::exp2(x));
    EXPECT_EQ(f(lid, 2), std::log2(x + 1.0f));
    EXPECT_EQ(f(lid, 3), std::sin(x) + std::cos(x));
    EXPECT_EQ(f(lid, 4), 10.0f + static_cast<float>(lid % 4));
    float h = opv::half_to_float(opv::float_to_half(x));
    float want = opv::half_to_float(opv::float_to_half(opv::half_to_float(opv::float_to_half(h * 2.0f)) + 0.5f));
    EXPECT_EQ(f(lid, 5), want) << lid;
  }
}
