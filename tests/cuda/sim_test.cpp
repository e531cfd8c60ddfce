// cudasim (src/backend/cuda/sim/ptx.h): the PTX simulator on hand-written PTX, checked against the
// PTX ISA's definitions computed here on the host: mma.sync m16n8k16 fragments, ldmatrix (plain
// and .trans), shfl.sync butterflies, a two-block cluster exchanging data through distributed
// shared memory, module-scope .global variables, dynamic shared memory (.extern .shared) through
// the driver stand-in's API (cuFuncSetAttribute, sharedMemBytes, its limits) and across a
// cluster, a cluster's blocks pushing into each other with st.async counted by mbarriers, and the faults it must report instead of running on: out-of-bounds and misaligned
// accesses, shared memory overruns, deadlocks, instructions it does not know. The generated kernels run on it through the driver stand-in
// (the cuda_sim tests in CMakeLists.txt).
#include <gtest/gtest.h>

#ifdef OPV_HAVE_CUDASIM

#include <cuda.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/cuda/sim/ptx.h"
#include "core/half.h"

namespace opv::cudasim {
namespace {

// Device buffers for a launch: host memory registered as allocations.
struct Buffers {
  Memory mem;
  std::vector<std::vector<uint8_t>> data;
  uint64_t add(size_t bytes) {
    data.emplace_back(bytes + 16, 0);
    const uint64_t p = reinterpret_cast<uint64_t>(data.back().data());
    mem.add(p, bytes);
    return p;
  }
};

std::string run_error(const Kernel& k, Dim3 grid, Dim3 block, const std::vector<uint64_t>& args, Memory& mem) {
  try {
    launch(k, grid, block, reinterpret_cast<const uint8_t*>(args.data()), mem);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

const char* kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n";

TEST(CudaSim, MmaM16n8k16FollowsThePtxFragmentLayout) {
  // Each lane loads its fragments from per-lane arrays (a: 4 regs, b: 2, c: 4 floats) and stores D.
  const std::string ptx = std::string(kHeader) + R"(
.visible .entry mma(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{
  .reg .b32 %r<12>; .reg .f32 %f<12>; .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [pb]; ld.param.u64 %rd3, [pc]; ld.param.u64 %rd4, [pd];
  mov.u32 %r1, %laneid;
  mul.wide.u32 %rd5, %r1, 16;
  mul.wide.u32 %rd6, %r1, 8;
  add.s64 %rd7, %rd1, %rd5;
  ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd7];
  add.s64 %rd8, %rd2, %rd6;
  ld.global.v2.u32 {%r6, %r7}, [%rd8];
  add.s64 %rd9, %rd3, %rd5;
  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd9];
  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f5, %f6, %f7, %f8}, {%r2, %r3, %r4, %r5}, {%r6, %r7}, {%f1, %f2, %f3, %f4};
  add.s64 %rd10, %rd4, %rd5;
  st.global.v4.f32 [%rd10], {%f5, %f6, %f7, %f8};
  ret;
}
)";
  auto m = parse_module(ptx);
  float A[16][16], B[16][8], C[16][8];
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 16; ++k) A[i][k] = float((i * 3 + k * 5) % 7 - 3);
  for (int k = 0; k < 16; ++k)
    for (int j = 0; j < 8; ++j) B[k][j] = float((k * 2 + j * 7) % 5 - 2) * 0.5f;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) C[i][j] = float(i - j);
  Buffers b;
  const uint64_t pa = b.add(32 * 16), pb = b.add(32 * 8), pc = b.add(32 * 16), pd = b.add(32 * 16);
  auto* a = reinterpret_cast<uint16_t*>(pa);
  auto* bb = reinterpret_cast<uint16_t*>(pb);
  auto* c = reinterpret_cast<float*>(pc);
  // PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type": groupID = lane / 4,
  // threadID_in_group = lane % 4; a_i rows g (i%4 < 2) / g+8, cols 2t + (i&1) (+8 for i >= 4).
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 8; ++i) {
      const int row = (i % 4 < 2) ? g : g + 8;
      const int col = 2 * t + (i & 1) + (i >= 4 ? 8 : 0);
      a[lane * 8 + i] = float_to_half(A[row][col]);
    }
    for (int i = 0; i < 4; ++i) bb[lane * 4 + i] = float_to_half(B[2 * t + (i & 1) + (i >= 2 ? 8 : 0)][g]);
    for (int i = 0; i < 4; ++i) c[lane * 4 + i] = C[i < 2 ? g : g + 8][2 * t + (i & 1)];
  }
  const std::vector<uint64_t> args = {pa, pb, pc, pd};
  ASSERT_EQ(run_error(*m->find("mma"), {1, 1, 1}, {32, 1, 1}, args, b.mem), "");
  const auto* d = reinterpret_cast<const float*>(pd);
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      const int row = i < 2 ? g : g + 8, col = 2 * t + (i & 1);
      float want = C[row][col];
      for (int k = 0; k < 16; ++k) want += A[row][k] * B[k][col];
      EXPECT_EQ(d[lane * 4 + i], want) << "lane " << lane << " d" << i;
    }
  }
}

TEST(CudaSim, LdmatrixGivesRowsAndTransposes) {
  // 4 matrices of 8x8 b16 in shared memory, element (m, r, c) = m*64 + r*8 + c; lane L gives the
  // address of row L%8 of matrix L/8. Stores the 4 registers of each lane, plain then .trans.
  const std::string ptx = std::string(kHeader) + R"(
.visible .entry ldm(.param .u64 out)
{
  .reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .pred %p<2>;
  .shared .align 16 .b8 tile[512];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, tile;
  shl.b32 %r3, %r1, 4;
  add.s32 %r4, %r2, %r3;
  shl.b32 %r5, %r1, 3;
  mov.u32 %r6, 0;
$fill:
  add.s32 %r7, %r5, %r6;
  shl.b32 %r8, %r6, 1;
  add.s32 %r9, %r4, %r8;
  st.shared.u16 [%r9], %r7;
  add.s32 %r6, %r6, 1;
  setp.lt.u32 %p1, %r6, 8;
  @%p1 bra $fill;
  bar.sync 0;
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r10, %r11, %r12, %r13}, [%r4];
  mul.wide.u32 %rd2, %r1, 32;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v4.u32 [%rd3], {%r10, %r11, %r12, %r13};
  ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r10, %r11, %r12, %r13}, [%r4];
  st.global.v4.u32 [%rd3+16], {%r10, %r11, %r12, %r13};
  ret;
}
)";
  auto m = parse_module(ptx);
  Buffers b;
  const uint64_t out = b.add(32 * 32);
  ASSERT_EQ(run_error(*m->find("ldm"), {1, 1, 1}, {32, 1, 1}, {out}, b.mem), "");
  const auto* o = reinterpret_cast<const uint32_t*>(out);
  auto el = [](int mat, int r, int c) { return uint32_t(mat * 64 + r * 8 + c); };
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, c = 2 * (lane % 4);
    for (int mat = 0; mat < 4; ++mat) {
      EXPECT_EQ(o[lane * 8 + mat], el(mat, g, c) | el(mat, g, c + 1) << 16) << "lane " << lane;
      EXPECT_EQ(o[lane * 8 + 4 + mat], el(mat, c, g) | el(mat, c + 1, g) << 16) << "lane " << lane << " trans";
    }
  }
}

TEST(CudaSim, ShflButterflySumsAWarp) {
  const std::string ptx = std::string(kHeader) + R"(
.visible .entry red(.param .u64 out)
{
  .reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.lo.s32 %r2, %r1, %r1;
  shfl.sync.bfly.b32 %r3|%p1, %r2, 16, 31, -1;
  add.s32 %r2, %r2, %r3;
  shfl.sync.bfly.b32 %r3|%p1, %r2, 8, 31, -1;
  add.s32 %r2, %r2, %r3;
  shfl.sync.bfly.b32 %r3|%p1, %r2, 4, 31, -1;
  add.s32 %r2, %r2, %r3;
  shfl.sync.bfly.b32 %r3|%p1, %r2, 2, 31, -1;
  add.s32 %r2, %r2, %r3;
  shfl.sync.bfly.b32 %r3|%p1, %r2, 1, 31, -1;
  add.s32 %r2, %r2, %r3;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  ret;
}
)";
  auto m = parse_module(ptx);
  Buffers b;
  const uint64_t out = b.add(64 * 4);
  ASSERT_EQ(run_error(*m->find("red"), {1, 1, 1}, {64, 1, 1}, {out}, b.mem), "");
  const auto* o = reinterpret_cast<const uint32_t*>(out);
  uint32_t w0 = 0, w1 = 0;
  for (uint32_t i = 0; i < 32; ++i) w0 += i * i, w1 += (i + 32) * (i + 32);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(o[i], i < 32 ? w0 : w1) << "thread " << i;
}

// Every block of a 4-block cluster writes (its rank + 1) * 100 + tid to its shared memory, waits at
// the cluster barrier and reads its right neighbour's through mapa + ld.shared::cluster.
const char* kClusterPtx = R"(
.visible .entry ring(.param .u64 out)
.reqnctapercluster 4, 1, 1
{
  .reg .b32 %r<16>; .reg .b64 %rd<4>;
  .shared .align 4 .b8 buf[128];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %cluster_ctarank;
  add.s32 %r3, %r2, 1;
  mul.lo.s32 %r4, %r3, 100;
  add.s32 %r5, %r4, %r1;
  mov.u32 %r6, buf;
  shl.b32 %r7, %r1, 2;
  add.s32 %r8, %r6, %r7;
  st.shared.u32 [%r8], %r5;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  rem.u32 %r9, %r3, 4;
  mapa.shared::cluster.u32 %r10, %r8, %r9;
  ld.shared::cluster.u32 %r11, [%r10];
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  mov.u32 %r12, %ctaid.x;
  mov.u32 %r13, %ntid.x;
  mad.lo.s32 %r14, %r12, %r13, %r1;
  mul.wide.u32 %rd2, %r14, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r11;
  ret;
}
)";

TEST(CudaSim, ClusterBlocksReadEachOthersSharedMemory) {
  auto m = parse_module(std::string(kHeader) + kClusterPtx);
  const Kernel& k = *m->find("ring");
  EXPECT_EQ(k.cluster[0], 4u);
  Buffers b;
  const uint64_t out = b.add(8 * 32 * 4);
  ASSERT_EQ(run_error(k, {8, 1, 1}, {32, 1, 1}, {out}, b.mem), "");
  const auto* o = reinterpret_cast<const uint32_t*>(out);
  for (uint32_t blk = 0; blk < 8; ++blk)
    for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(o[blk * 32 + t], ((blk % 4 + 1) % 4 + 1) * 100 + t) << blk << "," << t;
  // a grid that is not whole clusters is refused
  EXPECT_NE(run_error(k, {6, 1, 1}, {32, 1, 1}, {out}, b.mem).find("not whole clusters"), std::string::npos);
}

// The push form of a cluster sum: every block of a 4-block cluster makes its mbarrier (one
// arrival, EXPECT bytes) before the cluster barrier, then thread t of block b st.async's
// (b + 1) * 1000 + t into row b, column t of every block's buffer, completing 4 bytes on that
// block's mbarrier; after its try_wait loop thread t sums column t of its block's four rows.
// BARRIER is the cluster barrier between the inits and the pushes.
const char* kPushPtx = R"(
.visible .entry push(.param .u64 out)
.reqnctapercluster 4, 1, 1
{
  .reg .b32 %r<24>; .reg .b64 %rd<8>; .reg .pred %p<4>;
  .shared .align 8 .b8 bar[8];
  .shared .align 16 .b8 buf[512];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %cluster_ctarank;
  mov.u32 %r3, bar;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $made;
  mbarrier.init.shared::cta.b64 [%r3], 1;
  mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %rd2, [%r3], EXPECT;
  fence.mbarrier_init.release.cluster;
$made:
  BARRIER
  add.s32 %r4, %r2, 1;
  mul.lo.s32 %r5, %r4, 1000;
  add.s32 %r6, %r5, %r1;
  shl.b32 %r7, %r2, 7;
  shl.b32 %r8, %r1, 2;
  add.s32 %r9, %r7, %r8;
  mov.u32 %r10, buf;
  add.s32 %r11, %r10, %r9;
  mov.u32 %r12, 0;
$push:
  mapa.shared::cluster.u32 %r13, %r11, %r12;
  mapa.shared::cluster.u32 %r14, %r3, %r12;
  st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%r13], %r6, [%r14];
  add.s32 %r12, %r12, 1;
  setp.lt.u32 %p2, %r12, 4;
  @%p2 bra $push;
$wait:
  mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p3, [%r3], 0;
  @!%p3 bra $wait;
  add.s32 %r15, %r10, %r8;
  ld.shared.u32 %r16, [%r15];
  ld.shared.u32 %r17, [%r15+128];
  ld.shared.u32 %r18, [%r15+256];
  ld.shared.u32 %r19, [%r15+384];
  add.s32 %r16, %r16, %r17;
  add.s32 %r16, %r16, %r18;
  add.s32 %r16, %r16, %r19;
  mov.u32 %r20, %ctaid.x;
  shl.b32 %r21, %r20, 5;
  add.s32 %r22, %r21, %r1;
  mul.wide.u32 %rd3, %r22, 4;
  add.s64 %rd4, %rd1, %rd3;
  st.global.u32 [%rd4], %r16;
  ret;
}
)";

TEST(CudaSim, ClusterBlocksPushIntoEachOtherWithStAsyncAndAnMbarrier) {
  auto kernel = [](const std::string& expect, const std::string& barrier) {
    std::string ptx = kPushPtx;
    ptx.replace(ptx.find("EXPECT"), 6, expect);
    ptx.replace(ptx.find("BARRIER"), 7, barrier);
    return parse_module(std::string(kHeader) + ptx);
  };
  const std::string cluster_barrier = "barrier.cluster.arrive.relaxed.aligned;\n  barrier.cluster.wait.acquire.aligned;";
  Buffers b;
  const uint64_t out = b.add(8 * 32 * 4);
  auto m = kernel("512", cluster_barrier);  // 4 blocks x 32 threads x 4 bytes
  ASSERT_EQ(run_error(*m->find("push"), {8, 1, 1}, {32, 1, 1}, {out}, b.mem), "");
  const auto* o = reinterpret_cast<const uint32_t*>(out);
  for (uint32_t blk = 0; blk < 8; ++blk)
    for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(o[blk * 32 + t], 10000u + 4 * t) << blk << "," << t;
  // waiting for 4 bytes more than are pushed never completes the phase
  m = kernel("516", cluster_barrier);
  const std::string stuck = run_error(*m->find("push"), {4, 1, 1}, {32, 1, 1}, {out}, b.mem);
  EXPECT_NE(stuck.find("deadlock"), std::string::npos) << stuck;
  // without the cluster barrier block 0 pushes into blocks whose mbarrier is not made yet
  m = kernel("512", "");
  const std::string early = run_error(*m->find("push"), {4, 1, 1}, {32, 1, 1}, {out}, b.mem);
  EXPECT_NE(early.find("used before mbarrier.init"), std::string::npos) << early;
  // a push whose mbarrier is in another block than the store
  std::string ptx = kPushPtx;
  ptx.replace(ptx.find("EXPECT"), 6, "512");
  ptx.replace(ptx.find("BARRIER"), 7, cluster_barrier);
  ptx.replace(ptx.find("%r14, %r3, %r12"), 15, "%r14, %r3, 0");
  m = parse_module(std::string(kHeader) + ptx);
  const std::string elsewhere = run_error(*m->find("push"), {4, 1, 1}, {32, 1, 1}, {out}, b.mem);
  EXPECT_NE(elsewhere.find("is not in the block the store"), std::string::npos) << elsewhere;
}

TEST(CudaSim, GlobalVariablesPersistAcrossLaunches) {
  const std::string ptx = std::string(kHeader) + R"(
.global .align 4 .b8 counter[4];
.visible .entry count(.param .u64 out)
{
  .reg .b32 %r<4>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, counter;
  atom.global.add.u32 %r1, [%rd2], 1;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";
  auto m = parse_module(ptx);
  ASSERT_EQ(m->globals.size(), 1u);
  Buffers b;
  b.mem.add(reinterpret_cast<uint64_t>(m->globals[0].data), m->globals[0].bytes);
  const uint64_t out = b.add(4);
  for (uint32_t i = 0; i < 3; ++i) {
    ASSERT_EQ(run_error(*m->find("count"), {1, 1, 1}, {1, 1, 1}, {out}, b.mem), "");
    EXPECT_EQ(*reinterpret_cast<const uint32_t*>(out), i);
  }
}

// A kernel that stores thread i's index at out[i + offset] (offset a parameter).
const char* kStorePtx = R"(
.visible .entry store(.param .u64 out, .param .u64 offset)
{
  .reg .b32 %r<4>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [offset];
  mov.u32 %r1, %tid.x;
  cvt.u64.u32 %rd3, %r1;
  add.s64 %rd4, %rd3, %rd2;
  shl.b64 %rd5, %rd4, 2;
  add.s64 %rd6, %rd1, %rd5;
  st.global.u32 [%rd6], %r1;
  ret;
}
)";

TEST(CudaSim, ReportsOutOfBoundsAndMisalignedAccesses) {
  auto m = parse_module(std::string(kHeader) + kStorePtx);
  const Kernel& k = *m->find("store");
  Buffers b;
  const uint64_t out = b.add(32 * 4);
  EXPECT_EQ(run_error(k, {1, 1, 1}, {32, 1, 1}, {out, 0}, b.mem), "");
  const std::string oob = run_error(k, {1, 1, 1}, {32, 1, 1}, {out, 1}, b.mem);
  EXPECT_NE(oob.find("kernel 'store'"), std::string::npos) << oob;
  EXPECT_NE(oob.find("thread 31"), std::string::npos) << oob;
  EXPECT_NE(oob.find("st.global.u32"), std::string::npos) << oob;
  EXPECT_NE(oob.find("outside every device allocation"), std::string::npos) << oob;
  const std::string mis = run_error(k, {1, 1, 1}, {1, 1, 1}, {out + 2, 0}, b.mem);
  EXPECT_NE(mis.find("misaligned 4-byte access"), std::string::npos) << mis;
}

// Programmatic dependent launch: griddepcontrol.launch_dependents is a no-op here (launches run
// one by one), griddepcontrol.wait marks where global memory may first be touched; a global access
// before it is a fault (on a GPU it could race the kernel before).
TEST(CudaSim, GlobalAccessBeforeGridDependencyWaitIsAFault) {
  auto kernel = [](bool store_first) {
    const std::string store = "  st.global.u32 [%rd1], %r1;\n";
    return std::string(kHeader) + ".visible .entry pdl(.param .u64 out)\n{\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<2>;\n" +
           "  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd1, %rd1;\n  mov.u32 %r1, 7;\n" +
           "  griddepcontrol.launch_dependents;\n" + (store_first ? store : "") + "  griddepcontrol.wait;\n" +
           (store_first ? "" : store) + "  ret;\n}\n";
  };
  Buffers b;
  const uint64_t out = b.add(4);
  auto ok = parse_module(kernel(false));
  EXPECT_EQ(run_error(*ok->find("pdl"), {1, 1, 1}, {1, 1, 1}, {out}, b.mem), "");
  uint32_t v = 0;
  std::memcpy(&v, reinterpret_cast<const void*>(out), 4);
  EXPECT_EQ(v, 7u);
  auto bad = parse_module(kernel(true));
  const std::string e = run_error(*bad->find("pdl"), {1, 1, 1}, {1, 1, 1}, {out}, b.mem);
  EXPECT_NE(e.find("before griddepcontrol.wait"), std::string::npos) << e;
}

// Reads before griddepcontrol.wait (--cuda-pdl prefetch's weight prologue) are allowed of memory no
// kernel has written (weights, uploaded by copies), and a fault once a kernel has stored into it.
TEST(CudaSim, ReadBeforeGridDependencyWaitOnlyOfMemoryNoKernelWrote) {
  const std::string ptx = std::string(kHeader) +
                          ".visible .entry pre(.param .u64 out, .param .u64 in)\n{\n  .reg .b32 %r<2>;\n"
                          "  .reg .b64 %rd<3>;\n  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd1, %rd1;\n"
                          "  ld.param.u64 %rd2, [in];\n  cvta.to.global.u64 %rd2, %rd2;\n"
                          "  ld.global.u32 %r1, [%rd2];\n  griddepcontrol.wait;\n  st.global.u32 [%rd1], %r1;\n"
                          "  ret;\n}\n";
  Buffers b;
  const uint64_t weights = b.add(4), out = b.add(4), out2 = b.add(4);
  const uint32_t w = 42;
  std::memcpy(reinterpret_cast<void*>(weights), &w, 4);  // an upload, not a kernel's store
  auto m = parse_module(ptx);
  EXPECT_EQ(run_error(*m->find("pre"), {1, 1, 1}, {1, 1, 1}, {out, weights}, b.mem), "");
  uint32_t v = 0;
  std::memcpy(&v, reinterpret_cast<const void*>(out), 4);
  EXPECT_EQ(v, 42u);
  // `out` now holds a kernel's result: reading it before the wait could race that kernel.
  const std::string e = run_error(*m->find("pre"), {1, 1, 1}, {1, 1, 1}, {out2, out}, b.mem);
  EXPECT_NE(e.find("read of memory a kernel writes before griddepcontrol.wait"), std::string::npos) << e;
}

// A read-only load (ld.global.nc) in a kernel with griddepcontrol.wait may be scheduled above the
// wait by ptxas, so it must read only memory no kernel writes (the heads kernel's vector load did,
// session 35: wrong outputs with --cuda-pdl early on an H100). A plain ld.global of such memory after
// the wait, and ld.global.nc in a kernel without the wait, are fine.
TEST(CudaSim, ReadOnlyLoadOfKernelWrittenMemoryUnderGridDependencyWaitIsAFault) {
  auto kernel = [](const char* name, bool wait, const char* ld) {
    return std::string(".visible .entry ") + name +
           "(.param .u64 out, .param .u64 in)\n{\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<3>;\n"
           "  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd1, %rd1;\n  ld.param.u64 %rd2, [in];\n"
           "  cvta.to.global.u64 %rd2, %rd2;\n" + (wait ? "  griddepcontrol.wait;\n" : "") + "  " + ld +
           " %r1, [%rd2];\n  st.global.u32 [%rd1], %r1;\n  ret;\n}\n";
  };
  const std::string ptx = std::string(kHeader) + kernel("nc_wait", true, "ld.global.nc.u32") +
                          kernel("plain_wait", true, "ld.global.u32") + kernel("nc_nowait", false, "ld.global.nc.u32");
  Buffers b;
  const uint64_t weights = b.add(4), out = b.add(4), out2 = b.add(4);
  const uint32_t w = 7;
  std::memcpy(reinterpret_cast<void*>(weights), &w, 4);  // an upload, not a kernel's store
  auto m = parse_module(ptx);
  EXPECT_EQ(run_error(*m->find("nc_wait"), {1, 1, 1}, {1, 1, 1}, {out, weights}, b.mem), "") << "weights";
  // `out` now holds a kernel's result.
  const std::string e = run_error(*m->find("nc_wait"), {1, 1, 1}, {1, 1, 1}, {out2, out}, b.mem);
  EXPECT_NE(e.find("ld.global.nc of memory a kernel writes"), std::string::npos) << e;
  EXPECT_EQ(run_error(*m->find("plain_wait"), {1, 1, 1}, {1, 1, 1}, {out2, out}, b.mem), "");
  EXPECT_EQ(run_error(*m->find("nc_nowait"), {1, 1, 1}, {1, 1, 1}, {out2, out}, b.mem), "");
  uint32_t v = 0;
  std::memcpy(&v, reinterpret_cast<const void*>(out2), 4);
  EXPECT_EQ(v, 7u);
}

// Local memory (the compiler's stack frames, e.g. sinf's argument reduction): per thread, through
// ld/st.local and through generic addresses (cvta.local); a thread's frame is its own.
TEST(CudaSim, LocalMemoryIsPerThread) {
  const std::string ptx = std::string(kHeader) + R"(
.visible .entry frames(.param .u64 out)
{
  .local .align 4 .b8 depot[16];
  .reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .b64 %SP; .reg .b64 %SPL; .reg .pred %p<2>;
  mov.u64 %SPL, depot;
  cvta.local.u64 %SP, %SPL;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  st.local.u32 [%SPL], %r1;
  add.s32 %r2, %r1, 100;
  st.u32 [%SP+4], %r2;
  bar.sync 0;
  ld.local.u32 %r3, [%SPL+4];
  ld.u32 %r4, [%SP];
  add.s32 %r5, %r3, %r4;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r5;
  setp.eq.u32 %p1, %r1, 63;
  @%p1 ld.local.u32 %r6, [%SPL+16];
  ret;
}
)";
  auto m = parse_module(ptx);
  EXPECT_EQ(m->find("frames")->local_bytes, 16u);
  Buffers b;
  const uint64_t out = b.add(64 * 4);
  const std::string err = run_error(*m->find("frames"), {1, 1, 1}, {64, 1, 1}, {out}, b.mem);
  // every thread read back its own two values; the last thread's last load is past its frame
  EXPECT_NE(err.find("read of 4 bytes at local 0x10 beyond the thread's 16 bytes"), std::string::npos) << err;
  const auto* o = reinterpret_cast<const uint32_t*>(out);
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(o[i], 2 * i + 100) << "thread " << i;
}

TEST(CudaSim, ReportsSharedOverrunsAndDeadlocks) {
  const std::string ptx = std::string(kHeader) + R"(
.visible .entry over()
{
  .reg .b32 %r<4>;
  .shared .align 4 .b8 s[64];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  st.shared.u32 [%r2], %r1;
  ret;
}
.visible .entry stuck()
{
  .reg .b32 %r<4>; .reg .pred %p<2>;
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra $lone;
  shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;
  ret;
$lone:
  bar.sync 0;
  ret;
}
)";
  auto m = parse_module(ptx);
  Buffers b;
  EXPECT_EQ(run_error(*m->find("over"), {1, 1, 1}, {16, 1, 1}, {}, b.mem), "");
  const std::string over = run_error(*m->find("over"), {1, 1, 1}, {17, 1, 1}, {}, b.mem);
  EXPECT_NE(over.find("beyond the block's 64 bytes"), std::string::npos) << over;
  const std::string stuck = run_error(*m->find("stuck"), {1, 1, 1}, {32, 1, 1}, {}, b.mem);
  EXPECT_NE(stuck.find("deadlock"), std::string::npos) << stuck;
}

// ---- dynamic shared memory ----------------------------------------------------------------------

// Thread t of a block writes words t, t + ntid, ... < `words` of the dynamic array (word i = 3i + 1),
// then, after bar.sync, sums the words thread ntid-1-t wrote into out[t]; thread 0 also stores the
// array's shared address at out[ntid]. 12 static bytes come first, so the array (.align 16) is
// at 16.
const char* kDynamicPtx = R"(
.extern .shared .align 16 .b8 dsm[];
.visible .entry big(.param .u64 out, .param .u32 words)
.maxntid 256, 1, 1
{
  .reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .pred %p<3>;
  .shared .align 4 .b8 stat[12];
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [words];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, dsm;
  st.shared.u32 [stat+8], %r2;
  mov.u32 %r5, %r2;
$write:
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra $written;
  mad.lo.s32 %r6, %r5, 4, %r4;
  mad.lo.s32 %r7, %r5, 3, 1;
  st.shared.u32 [%r6], %r7;
  add.s32 %r5, %r5, %r3;
  bra $write;
$written:
  bar.sync 0;
  sub.s32 %r8, %r3, 1;
  sub.s32 %r5, %r8, %r2;
  mov.u32 %r9, 0;
$read:
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra $done;
  ld.shared.u32 %r10, [dsm];
  mad.lo.s32 %r6, %r5, 4, %r4;
  ld.shared.u32 %r11, [%r6];
  add.s32 %r9, %r9, %r11;
  add.s32 %r5, %r5, %r3;
  bra $read;
$done:
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r9;
  setp.eq.u32 %p2, %r2, 0;
  mul.wide.u32 %rd4, %r3, 4;
  add.s64 %rd5, %rd1, %rd4;
  @%p2 st.global.u32 [%rd5], %r4;
  ret;
}
)";

// What kDynamicPtx's thread t stores for `words` words over `threads` threads.
uint32_t dynamic_sum(uint32_t t, uint32_t threads, uint32_t words) {
  uint32_t sum = 0;
  for (uint32_t i = threads - 1 - t; i < words; i += threads) sum += 3 * i + 1;
  return sum;
}

// cuGetErrorString's text for `r` (the simulator's message for the call that just failed).
std::string error_string(CUresult r) {
  const char* s = nullptr;
  cuGetErrorString(r, &s);
  return s ? s : "";
}

TEST(CudaSim, DynamicSharedMemoryThroughTheDriverApi) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  CUmodule mod = nullptr;
  const std::string ptx = std::string(kHeader) + kDynamicPtx;
  ASSERT_EQ(cuModuleLoadDataEx(&mod, ptx.c_str(), 0, nullptr, nullptr), CUDA_SUCCESS) << error_string(CUDA_ERROR_INVALID_PTX);
  CUfunction f = nullptr;
  ASSERT_EQ(cuModuleGetFunction(&f, mod, "big"), CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<const Kernel*>(f)->shared_bytes, 12u);
  EXPECT_EQ(reinterpret_cast<const Kernel*>(f)->dynamic_base, 16u);
  int major = 0, minor = 0, optin = 0, v = -1;
  cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0);
  cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0);
  ASSERT_EQ(cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0), CUDA_SUCCESS);
  if (major == 9 && minor == 0) {
    EXPECT_EQ(optin, 232448);  // the default device, sm_90
  }
  if (optin < 100 * 1024 + 12) GTEST_SKIP() << "OPV_CUDASIM_SM names a device with less than 100 KB of shared memory a block";
  // Without the attribute: 48 KB less the 12 static bytes.
  ASSERT_EQ(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f), CUDA_SUCCESS);
  EXPECT_EQ(v, 49152 - 12);

  constexpr uint32_t kThreads = 256;
  CUdeviceptr out = 0;
  ASSERT_EQ(cuMemAlloc(&out, (kThreads + 1) * 4), CUDA_SUCCESS);
  uint32_t words = 0;
  void* params[] = {&out, &words};
  std::vector<uint32_t> got(kThreads + 1);
  auto launch_with = [&](uint32_t bytes, uint32_t n) {
    words = n;
    std::fill(got.begin(), got.end(), 0u);
    const CUresult r = cuLaunchKernel(f, 1, 1, 1, kThreads, 1, 1, bytes, nullptr, params, nullptr);
    cuMemcpyDtoHAsync(got.data(), out, got.size() * 4, nullptr);
    return r;
  };
  auto expect_sums = [&](uint32_t n) {
    for (uint32_t t = 0; t < kThreads; ++t) {
      ASSERT_EQ(got[t], dynamic_sum(t, kThreads, n)) << "thread " << t;
    }
    EXPECT_EQ(got[kThreads], 16u);  // the array's address: after the static bytes, aligned
  };
  ASSERT_EQ(launch_with(49152 - 12, (49152 - 12) / 4), CUDA_SUCCESS) << error_string(CUDA_ERROR_LAUNCH_FAILED);
  expect_sums((49152 - 12) / 4);
  // 100 KB needs the attribute first.
  constexpr uint32_t kBytes = 100 * 1024, kWords = kBytes / 4;
  EXPECT_EQ(launch_with(49152 - 8, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch_with(kBytes, kWords), CUDA_ERROR_INVALID_VALUE);
  const std::string refused = error_string(CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(refused.find("kernel 'big': 102400 bytes of dynamic shared memory, more than its "
                         "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (49140, never set"),
            std::string::npos)
      << refused;
  ASSERT_EQ(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(kBytes)), CUDA_SUCCESS);
  ASSERT_EQ(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f), CUDA_SUCCESS);
  EXPECT_EQ(v, int(kBytes));
  ASSERT_EQ(launch_with(kBytes, kWords), CUDA_SUCCESS) << error_string(CUDA_ERROR_LAUNCH_FAILED);
  expect_sums(kWords);
  EXPECT_EQ(launch_with(kBytes + 4, kWords), CUDA_ERROR_INVALID_VALUE);  // past the attribute

  // The same launch as a graph's kernel node; one past the attribute is refused when added.
  CUgraph g = nullptr;
  ASSERT_EQ(cuGraphCreate(&g, 0), CUDA_SUCCESS);
  CUDA_KERNEL_NODE_PARAMS kp{};
  kp.func = f;
  kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = kThreads;
  kp.blockDimY = kp.blockDimZ = 1;
  kp.sharedMemBytes = kBytes + 4;
  kp.kernelParams = params;
  CUgraphNode node = nullptr;
  EXPECT_EQ(cuGraphAddKernelNode(&node, g, nullptr, 0, &kp), CUDA_ERROR_INVALID_VALUE);
  kp.sharedMemBytes = kBytes;
  words = kWords;
  ASSERT_EQ(cuGraphAddKernelNode(&node, g, nullptr, 0, &kp), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&exec, g, 0), CUDA_SUCCESS);
  std::fill(got.begin(), got.end(), 0u);
  cuMemsetD8Async(out, 0, got.size() * 4, nullptr);
  ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS) << error_string(CUDA_ERROR_LAUNCH_FAILED);
  cuMemcpyDtoHAsync(got.data(), out, got.size() * 4, nullptr);
  expect_sums(kWords);
  cuGraphExecDestroy(exec);
  cuGraphDestroy(g);

  // The device's limit: static + dynamic at most `optin` bytes, for the attribute and the launch.
  const uint32_t most = uint32_t(optin) - 12;
  EXPECT_EQ(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(most) + 4),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(error_string(CUDA_ERROR_INVALID_VALUE).find("MAX_DYNAMIC_SHARED_SIZE_BYTES " + std::to_string(most + 4) +
                                                        " with 12 static bytes"),
            std::string::npos)
      << error_string(CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, -1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(most)), CUDA_SUCCESS);
  ASSERT_EQ(launch_with(most, most / 4), CUDA_SUCCESS) << error_string(CUDA_ERROR_LAUNCH_FAILED);
  expect_sums(most / 4);
  EXPECT_EQ(launch_with(most + 4, 1), CUDA_ERROR_INVALID_VALUE);

  // One word past the dynamic bytes: a fault naming the access and the region.
  EXPECT_EQ(launch_with(kBytes, kWords + 1), CUDA_ERROR_ILLEGAL_ADDRESS);
  const std::string oob = error_string(CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_NE(oob.find("kernel 'big'"), std::string::npos) << oob;
  EXPECT_NE(oob.find("write of 4 bytes at shared 0x19010 beyond the block's 102416 bytes (102400 dynamic from 0x10)"),
            std::string::npos)
      << oob;
  // Without dynamic bytes the array has no room at all.
  EXPECT_EQ(launch_with(0, 1), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_NE(error_string(CUDA_ERROR_ILLEGAL_ADDRESS).find("at shared 0x10 beyond the block's 12 bytes"),
            std::string::npos)
      << error_string(CUDA_ERROR_ILLEGAL_ADDRESS);
  cuMemFree(out);
  cuModuleUnload(mod);
}

// A 2-block cluster: block r writes words i of its dynamic array (r * 1000000 + i), waits at the
// cluster barrier, then thread t reads word (words - 1 - t + skew) of the peer's array (rank r ^ 1)
// through mapa + ld.shared::cluster into out[block * ntid + t]. 4 static bytes, an array aligned
// to 128: the arrays begin at 128.
const char* kClusterDynamicPtx = R"(
.extern .shared .align 128 .b8 dpair[];
.visible .entry pair(.param .u64 out, .param .u32 words, .param .u32 skew)
.reqnctapercluster 2, 1, 1
{
  .reg .b32 %r<20>; .reg .b64 %rd<4>; .reg .pred %p<2>;
  .shared .align 4 .b8 tag[4];
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [words];
  ld.param.u32 %r2, [skew];
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %cluster_ctarank;
  st.shared.u32 [tag], %r5;
  mul.lo.s32 %r6, %r5, 1000000;
  mov.u32 %r7, %r3;
  mov.u32 %r19, dpair;
$write:
  setp.ge.u32 %p1, %r7, %r1;
  @%p1 bra $written;
  mad.lo.s32 %r8, %r7, 4, %r19;
  add.s32 %r9, %r6, %r7;
  st.shared.u32 [%r8], %r9;
  add.s32 %r7, %r7, %r4;
  bra $write;
$written:
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  sub.s32 %r10, %r1, 1;
  sub.s32 %r10, %r10, %r3;
  add.s32 %r10, %r10, %r2;
  mov.u32 %r11, dpair;
  shl.b32 %r12, %r10, 2;
  add.s32 %r13, %r11, %r12;
  xor.b32 %r14, %r5, 1;
  mapa.shared::cluster.u32 %r15, %r13, %r14;
  ld.shared::cluster.u32 %r16, [%r15];
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  mov.u32 %r17, %ctaid.x;
  mad.lo.s32 %r18, %r17, %r4, %r3;
  mul.wide.u32 %rd2, %r18, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r16;
  ret;
}
)";

TEST(CudaSim, ClusterBlocksReadEachOthersDynamicSharedMemory) {
  auto m = parse_module(std::string(kHeader) + kClusterDynamicPtx);
  const Kernel& k = *m->find("pair");
  EXPECT_EQ(k.cluster[0], 2u);
  EXPECT_EQ(k.shared_bytes, 4u);
  EXPECT_EQ(k.dynamic_base, 128u);
  constexpr uint32_t kBlocks = 4, kThreads = 64, kBytes = 64 * 1024, kWords = kBytes / 4;
  Buffers b;
  const uint64_t out = b.add(kBlocks * kThreads * 4);
  auto run = [&](uint32_t bytes, uint64_t skew) {
    const std::vector<uint64_t> args = {out, uint64_t(kWords) | (skew << 32)};  // words, skew: two u32s
    try {
      launch(k, {kBlocks, 1, 1}, {kThreads, 1, 1}, reinterpret_cast<const uint8_t*>(args.data()), b.mem, 0, bytes);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  ASSERT_EQ(run(kBytes, 0), "");
  const auto* o = reinterpret_cast<const uint32_t*>(out);
  for (uint32_t blk = 0; blk < kBlocks; ++blk) {
    for (uint32_t t = 0; t < kThreads; ++t) {
      ASSERT_EQ(o[blk * kThreads + t], ((blk % 2) ^ 1) * 1000000 + kWords - 1 - t) << blk << "," << t;
    }
  }
  // One word past the peer's array: a fault, though the block's own static bytes come before it.
  const std::string past = run(kBytes, 1);
  EXPECT_NE(past.find("ld.shared::cluster.u32"), std::string::npos) << past;
  EXPECT_NE(past.find("read of 4 bytes at shared 0x10080 beyond the block's 65664 bytes (65536 dynamic from 0x80)"),
            std::string::npos)
      << past;
  // Less dynamic memory than the kernel writes: the writes fault.
  EXPECT_NE(run(kBytes - 4, 0).find("beyond the block's 65660 bytes"), std::string::npos) << run(kBytes - 4, 0);
}

TEST(CudaSim, ExternSharedArraysOnlyUnsized) {
  auto error = [](const std::string& decl) {
    try {
      parse_module(std::string(kHeader) + decl + "\n.visible .entry k()\n{\n  ret;\n}\n");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error(".extern .shared .align 16 .b8 d[];"), "");
  EXPECT_EQ(error(".extern .shared .b32 d[];\n.extern .shared .align 8 .b8 e[];"), "");
  EXPECT_NE(error(".extern .shared .align 16 .b8 d[64];").find("line 4: '.extern .shared' variable 'd' with a size"),
            std::string::npos)
      << error(".extern .shared .align 16 .b8 d[64];");
  EXPECT_NE(error(".extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);")
                .find("line 4: module-scope '.extern .func'"),
            std::string::npos);
  // In a body an array without a size is not dynamic shared memory.
  try {
    parse_module(std::string(kHeader) + ".visible .entry k()\n{\n  .shared .b8 d[];\n  ret;\n}\n");
    ADD_FAILURE() << "an unsized .shared array in a body was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("an array needs a size"), std::string::npos) << e.what();
  }
  // Every kernel's arrays begin after its own static bytes, at the largest alignment it names; each
  // kernel stores the addresses of the two names it uses.
  auto m = parse_module(std::string(kHeader) + R"(
.extern .shared .align 4 .b8 a4[];
.extern .shared .align 64 .b8 a64[];
.visible .entry one(.param .u64 out)
{
  .reg .b32 %r<3>; .reg .b64 %rd<2>;
  .shared .align 4 .b8 s[20];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, a4;
  mov.u32 %r2, s;
  st.global.v2.u32 [%rd1], {%r1, %r2};
  ret;
}
.visible .entry two(.param .u64 out)
{
  .reg .b32 %r<3>; .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, a4;
  mov.u32 %r2, a64;
  st.global.v2.u32 [%rd1], {%r1, %r2};
  .shared .align 8 .b8 late[40];
  ret;
}
)");
  Buffers b;
  const uint64_t out = b.add(8);
  const auto* o = reinterpret_cast<const uint32_t*>(out);
  EXPECT_EQ(m->find("one")->dynamic_base, 20u);
  ASSERT_EQ(run_error(*m->find("one"), {1, 1, 1}, {1, 1, 1}, {out}, b.mem), "");
  EXPECT_EQ(o[0], 20u);
  EXPECT_EQ(o[1], 0u);
  EXPECT_EQ(m->find("two")->dynamic_base, 64u);  // 40 static bytes, declared after the uses
  ASSERT_EQ(run_error(*m->find("two"), {1, 1, 1}, {1, 1, 1}, {out}, b.mem), "");
  EXPECT_EQ(o[0], 64u);
  EXPECT_EQ(o[1], 64u);
}

TEST(CudaSim, RefusesWhatItDoesNotSimulateNamingTheLine) {
  auto error = [](const std::string& body) {
    try {
      parse_module(std::string(kHeader) + ".visible .entry k()\n{\n  .reg .b32 %r<4>;\n" + body + "\n}\n");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error("  tex.2d.v4.f32.f32 {%r0, %r1, %r2, %r3}, [t, {%r0, %r1}];").find("line 7: unsupported instruction 'tex.2d.v4.f32.f32'"),
            std::string::npos)
      << error("  tex.2d.v4.f32.f32 {%r0, %r1, %r2, %r3}, [t, {%r0, %r1}];");
  EXPECT_NE(error("  add.s32 %r1, %q, 1;").find("unknown register '%q'"), std::string::npos);
  EXPECT_NE(error("  bra $nowhere;").find("unknown label '$nowhere'"), std::string::npos);
  EXPECT_NE(error("  add.s32 %r1, %r2").find("expected ';'"), std::string::npos);
  EXPECT_NE(error("$L1:\n  add.s32 %r1, %r2, 1;\n{\n$L1:\n  bra $L1;\n}").find("label '$L1' declared twice"),
            std::string::npos);
  try {
    parse_module(std::string(kHeader) + ".func f()\n{\n ret;\n}\n");
    ADD_FAILURE() << "a device function was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("'.func'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace opv::cudasim

#endif  // OPV_HAVE_CUDASIM
