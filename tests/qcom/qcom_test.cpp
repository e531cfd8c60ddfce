// qcom backend: KGSL uapi layout, PM4 encoding/decoding (test vectors of ../shared/qcom/PM4.md),
// hostile streams, and the simulated a630: dispatches run from a hand-built stream, and its
// ordering check catches a missing barrier (RAW, WAR) and a host read with no flush.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "test_util.h"
#include "backend/qcom/device.h"
#include "backend/qcom/kgsl_uapi.h"
#include "backend/qcom/pm4.h"
#include "backend/qcom/sim_device.h"
#include "core/error.h"
#include "ir3/isa.h"

using namespace opv::qcom;
namespace reg = opv::qcom::a6xx::reg;
namespace op = opv::qcom::a6xx::op;
namespace f = opv::qcom::a6xx::f;
namespace e = opv::qcom::a6xx_enum;

TEST(QcomKgsl, StructLayoutsAndIoctlNumbers) {
  using namespace opv::qcom::kgsl;
  EXPECT_EQ(sizeof(kgsl_gpu_command), 64u);
  EXPECT_EQ(offsetof(kgsl_gpu_command, context_id), 56u);
  EXPECT_EQ(offsetof(kgsl_gpu_command, timestamp), 60u);
  EXPECT_EQ(sizeof(kgsl_command_object), 32u);
  EXPECT_EQ(sizeof(kgsl_gpuobj_alloc), 48u);
  EXPECT_EQ(offsetof(kgsl_gpuobj_alloc, id), 32u);
  EXPECT_EQ(sizeof(kgsl_gpuobj_free), 32u);
  EXPECT_EQ(sizeof(kgsl_devinfo), 40u);
  EXPECT_EQ(offsetof(kgsl_devinfo, gpu_id), 24u);
  EXPECT_EQ(sizeof(kgsl_drawctxt_create), 8u);
  EXPECT_EQ(IOCTL_KGSL_GPU_COMMAND, 0xC040094Au);
  EXPECT_EQ(IOCTL_KGSL_GPUOBJ_ALLOC, 0xC0300945u);
  EXPECT_EQ(IOCTL_KGSL_DEVICE_WAITTIMESTAMP_CTXTID, 0x400C0907u);
}

TEST(QcomKgsl, AbsentDeviceIsACleanError) {
  if (kgsl_present()) GTEST_SKIP() << "a KGSL device is present";
  EXPECT_THROW(open_kgsl("/nonexistent/kgsl-3d0"), opv::Error);
}

TEST(QcomPm4, HeaderTestVectors) {
  // PM4.md section 1 (from tinygrad's formulas)
  EXPECT_EQ(type7_header(op::CP_RUN_OPENCL, 1), 0x70310001u);
  EXPECT_EQ(type7_header(op::CP_WAIT_FOR_IDLE, 0), 0x70268000u);
  EXPECT_EQ(type7_header(op::CP_SET_MARKER, 1), 0x70E50001u);
  EXPECT_EQ(type7_header(op::CP_EVENT_WRITE, 4), 0x70460004u);
  EXPECT_EQ(type7_header(op::CP_EVENT_WRITE, 1), 0x70460001u);
  EXPECT_EQ(type7_header(op::CP_LOAD_STATE6_FRAG, 3), 0x70348003u);
  EXPECT_EQ(type7_header(op::CP_WAIT_REG_MEM, 6), 0x70BC8006u);
  EXPECT_EQ(type7_header(op::CP_REG_TO_MEM, 3), 0x703E8003u);
  EXPECT_EQ(type7_header(op::CP_WAIT_MEM_WRITES, 0), 0x70928000u);
  EXPECT_EQ(type7_header(op::CP_EXEC_CS, 4), 0x70B30004u);
  EXPECT_EQ(type4_header(reg::SP_UPDATE_CNTL, 1), 0x40BB0801u);
  EXPECT_EQ(type4_header(reg::SP_CS_NDRANGE_0, 12), 0x40B9908Cu);
  EXPECT_EQ(type4_header(reg::SP_CS_CNTL_0, 10), 0x40A9B08Au);
  EXPECT_EQ(type4_header(reg::SP_REG_PROG_ID_0, 5), 0x48B98385u);
  EXPECT_EQ(type4_header(reg::SP_CS_CONFIG, 1), 0x48A9BB01u);
  // field packing by name (tinygrad's LOAD_STATE6 of 256 const vec4: 0x40364000)
  uint32_t w = put(f::CP_LOAD_STATE6_0__STATE_TYPE, e::ST6_CONSTANTS) | put(f::CP_LOAD_STATE6_0__STATE_SRC, e::SS6_INDIRECT) |
               put(f::CP_LOAD_STATE6_0__STATE_BLOCK, e::SB6_CS_SHADER) | put(f::CP_LOAD_STATE6_0__NUM_UNIT, 256);
  EXPECT_EQ(w, 0x40364000u);
  EXPECT_THROW(put(f::SP_CS_CNTL_0__FULLREGFOOTPRINT, 64), opv::Error);
}

TEST(QcomPm4, RoundTrip) {
  StreamWriter wr;
  wr.pkt(op::CP_SET_MARKER, {put(f::A6XX_CP_SET_MARKER_0__MODE, e::RM6_COMPUTE)});
  wr.regs(reg::SP_CS_NDRANGE_0, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  wr.reg64(reg::SP_CS_BASE, 0x123456789abcull);
  wr.pkt(op::CP_WAIT_FOR_IDLE, {});
  wr.pkt(op::CP_EXEC_CS, {0, 4, 5, 6});
  EXPECT_EQ(wr.packets(), 5u);
  EXPECT_EQ(wr.count(op::CP_EXEC_CS), 1u);
  auto p = decode(wr.dwords().data(), wr.dwords().size());
  ASSERT_EQ(p.size(), 5u);
  EXPECT_TRUE(p[0].type7);
  EXPECT_EQ(p[0].opcode, op::CP_SET_MARKER);
  EXPECT_FALSE(p[1].type7);
  EXPECT_EQ(p[1].reg, reg::SP_CS_NDRANGE_0);
  EXPECT_EQ(p[1].payload.size(), 12u);
  EXPECT_EQ(p[2].payload[1], 0x1234u);
  EXPECT_EQ(p[4].payload, (std::vector<uint32_t>{0, 4, 5, 6}));
  // re-encode from the decoded packets: the same dwords
  StreamWriter again;
  for (const Packet& x : p) {
    if (x.type7) again.pkt(x.opcode, x.payload);
    else again.regs(x.reg, x.payload);
  }
  EXPECT_EQ(again.dwords(), wr.dwords());
  std::string s = format(p);
  EXPECT_NE(s.find("CP_SET_MARKER"), std::string::npos);
  EXPECT_NE(s.find("MODE=0x8"), std::string::npos);
  EXPECT_NE(s.find("SP_CS_KERNEL_GROUP_Z = 0xc"), std::string::npos);
  EXPECT_NE(s.find("SP_CS_BASE_HI = 0x1234"), std::string::npos);
  EXPECT_NE(s.find("NGROUPS_Z=0x6"), std::string::npos);
}

TEST(QcomPm4, BadStreamsAreErrors) {
  auto bad = [](std::vector<uint32_t> dw, const char* what) {
    try {
      decode(dw.data(), dw.size());
      ADD_FAILURE() << "accepted: " << what;
    } catch (const opv::Error& err) {
      EXPECT_NE(std::string(err.what()).find(what), std::string::npos) << err.what();
    }
  };
  bad({type7_header(op::CP_EXEC_CS, 4), 0, 1}, "truncated");
  bad({type4_header(reg::SP_CS_NDRANGE_0, 12)}, "truncated");
  bad({type7_header(0x7f, 0)}, "unknown opcode");
  bad({type7_header(op::CP_EXEC_CS, 0) ^ (1u << 15)}, "parity");
  bad({0x12345678}, "not a type-4 or type-7");
  bad({type4_header(0x1234, 1), 0}, "do not name");
  bad({type7_header(op::CP_NOP, 0) | (1u << 24)}, "reserved");
  // random dwords: an error or a stream, never a crash
  std::mt19937 rng(1);
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint32_t> dw(1 + rng() % 8);
    for (auto& d : dw) d = rng();
    if (rng() % 2) dw[0] = type7_header(op::CP_EXEC_CS, rng() % 8);
    try {
      decode(dw.data(), dw.size());
    } catch (const opv::Error&) {
    }
  }
}

namespace {

// copy one dword: *(c0.zw) = *(c0.xy)
const char* kCopy = R"(
  mov.u32u32 r1.x, c0.x
  mov.u32u32 r1.y, c0.y
  ldg.u32 r2.x, g[r1.x], 1
  mov.u32u32 r3.x, c0.z
  mov.u32u32 r3.y, c0.w
  (sy)stg.u32 g[r3.x], r2.x, 1
  end
)";

struct Rig {
  SimDevice dev;
  GpuObject code, args, x, y, z, ib;
  Rig() {
    auto prog = opv::ir3::assemble(kCopy);
    code = dev.alloc(4096);
    dev.write(code, 0, prog.data(), prog.size() * 8);
    args = dev.alloc(4096);
    x = dev.alloc(4096), y = dev.alloc(4096), z = dev.alloc(4096);
    uint32_t v = 0xC0FFEE;
    dev.write(x, 0, &v, 4);
  }
  // consts of copy #slot (src, dst) at args + 256*slot
  uint64_t copy_args(int slot, const GpuObject& src, const GpuObject& dst) {
    uint64_t c[2] = {src.gpu_addr, dst.gpu_addr};
    dev.write(args, 256 * slot, c, sizeof c);
    return args.gpu_addr + 256 * slot;
  }
  void dispatch(StreamWriter& wr, uint64_t consts) {
    wr.regs(reg::SP_CS_NDRANGE_0, {put(f::SP_CS_NDRANGE_0__KERNELDIM, 3), 1, 0, 1, 0, 1, 0,
                                   put(f::SP_CS_CONST_CONFIG_0__WGIDCONSTID, e::REGID_NONE) |
                                       put(f::SP_CS_CONST_CONFIG_0__LOCALIDREGID, e::REGID_NONE),
                                   0, 1, 1, 1});
    wr.regs(reg::SP_CS_CNTL_0, {put(f::SP_CS_CNTL_0__FULLREGFOOTPRINT, 4), 0, 0, 0});
    wr.reg64(reg::SP_CS_BASE, code.gpu_addr);
    wr.regs(reg::SP_CS_CONFIG, {put(f::SP_CS_CONFIG__ENABLED, 1), 1});
    wr.pkt(op::CP_LOAD_STATE6_FRAG, {put(f::CP_LOAD_STATE6_0__STATE_TYPE, e::ST6_CONSTANTS) |
                                         put(f::CP_LOAD_STATE6_0__STATE_SRC, e::SS6_INDIRECT) |
                                         put(f::CP_LOAD_STATE6_0__STATE_BLOCK, e::SB6_CS_SHADER) |
                                         put(f::CP_LOAD_STATE6_0__NUM_UNIT, 1),
                                     uint32_t(consts), uint32_t(consts >> 32)});
    wr.pkt(op::CP_EXEC_CS, {0, 1, 1, 1});
  }
  void run(const StreamWriter& wr) {
    ib = dev.alloc(wr.bytes());
    dev.write(ib, 0, wr.dwords().data(), wr.bytes());
    dev.wait(dev.submit(ib.gpu_addr, static_cast<uint32_t>(wr.dwords().size())));
  }
  static void start(StreamWriter& wr) {
    wr.pkt(op::CP_EVENT_WRITE, {put(f::CP_EVENT_WRITE_0__EVENT, e::CACHE_INVALIDATE)});
  }
  static void finish(StreamWriter& wr) {
    wr.pkt(op::CP_WAIT_FOR_IDLE, {});
    wr.pkt(op::CP_EVENT_WRITE, {put(f::CP_EVENT_WRITE_0__EVENT, e::CACHE_FLUSH_TS)});
  }
};

using opv::test::error_of;

}  // namespace

TEST(QcomSimDevice, DispatchesWithBarrierRun) {
  Rig r;
  StreamWriter wr;
  Rig::start(wr);
  r.dispatch(wr, r.copy_args(0, r.x, r.y));
  wr.pkt(op::CP_WAIT_FOR_IDLE, {});
  r.dispatch(wr, r.copy_args(1, r.y, r.z));
  Rig::finish(wr);
  r.run(wr);
  uint32_t v = 0;
  r.dev.read(r.z, 0, &v, 4);
  EXPECT_EQ(v, 0xC0FFEEu);
  EXPECT_EQ(r.dev.stats().dispatches, 2u);
  EXPECT_EQ(r.dev.stats().wait_for_idle, 2u);
}

TEST(QcomSimDevice, MissingBarrierIsCaught) {
  {  // read after write
    Rig r;
    StreamWriter wr;
    Rig::start(wr);
    r.dispatch(wr, r.copy_args(0, r.x, r.y));
    r.dispatch(wr, r.copy_args(1, r.y, r.z));
    Rig::finish(wr);
    std::string err = error_of([&] { r.run(wr); });
    EXPECT_NE(err.find("read-after-write"), std::string::npos) << err;
    EXPECT_NE(err.find("dispatch 1"), std::string::npos) << err;
  }
  {  // write after read
    Rig r;
    StreamWriter wr;
    Rig::start(wr);
    r.dispatch(wr, r.copy_args(0, r.y, r.z));
    r.dispatch(wr, r.copy_args(1, r.x, r.y));
    Rig::finish(wr);
    std::string err = error_of([&] { r.run(wr); });
    EXPECT_NE(err.find("write-after-read"), std::string::npos) << err;
  }
  {  // host data read with no invalidate
    Rig r;
    StreamWriter wr;
    r.dispatch(wr, r.copy_args(0, r.x, r.y));
    Rig::finish(wr);
    std::string err = error_of([&] { r.run(wr); });
    EXPECT_NE(err.find("CACHE_INVALIDATE"), std::string::npos) << err;
  }
  {  // the host reads GPU results with no flush
    Rig r;
    StreamWriter wr;
    Rig::start(wr);
    r.dispatch(wr, r.copy_args(0, r.x, r.y));
    r.run(wr);
    uint32_t v;
    std::string err = error_of([&] { r.dev.read(r.y, 0, &v, 4); });
    EXPECT_NE(err.find("CACHE_FLUSH_TS"), std::string::npos) << err;
  }
}

TEST(QcomSimDevice, BadSubmissionsAreErrors) {
  Rig r;
  // IB outside every object
  EXPECT_THROW(r.dev.submit(0xdead0000, 4), opv::Error);
  // IB of an undecodable stream
  {
    StreamWriter wr;
    wr.pkt(op::CP_EXEC_CS, {0, 1, 1, 1});
    std::vector<uint32_t> dw = wr.dwords();
    dw.pop_back();
    GpuObject ib = r.dev.alloc(64);
    r.dev.write(ib, 0, dw.data(), dw.size() * 4);
    EXPECT_THROW(r.dev.submit(ib.gpu_addr, static_cast<uint32_t>(dw.size())), opv::Error);
    EXPECT_THROW(r.dev.submit(ib.gpu_addr, 1u << 20), opv::Error);  // beyond the object
  }
  auto fails = [&](const std::function<void(StreamWriter&)>& build, const char* what) {
    StreamWriter wr;
    build(wr);
    std::string err = error_of([&] { r.run(wr); });
    EXPECT_NE(err.find(what), std::string::npos) << "want '" << what << "', got: " << err;
  };
  fails([](StreamWriter& wr) { wr.pkt(op::CP_EXEC_CS, {0, 1, 1, 1}); }, "ENABLED");
  fails([](StreamWriter& wr) { wr.pkt(op::CP_LOAD_STATE6_FRAG, {put(f::CP_LOAD_STATE6_0__STATE_SRC, e::SS6_INDIRECT) |
                                                                    put(f::CP_LOAD_STATE6_0__STATE_BLOCK, e::SB6_CS_SHADER) |
                                                                    put(f::CP_LOAD_STATE6_0__NUM_UNIT, 4),
                                                                0x1000, 0}); },
        "outside every live GPU object");
  fails([](StreamWriter& wr) { wr.pkt(op::CP_RUN_OPENCL, {0}); }, "not simulated");
  fails([](StreamWriter& wr) { wr.pkt(op::CP_EVENT_WRITE, {0x3f}); }, "not simulated");
  fails([](StreamWriter& wr) { wr.pkt(op::CP_EXEC_CS, {0}); }, "payload");
  // a program address outside memory
  fails([&](StreamWriter& wr) {
    Rig::start(wr);
    r.dispatch(wr, r.copy_args(0, r.x, r.y));
    wr.pkt(op::CP_WAIT_FOR_IDLE, {});
    wr.reg64(reg::SP_CS_BASE, 0x10);
    wr.pkt(op::CP_EXEC_CS, {0, 1, 1, 1});
  }, "SP_CS_BASE");
  // a kernel pointer outside memory: the simulator's bounds check, an error
  fails([&](StreamWriter& wr) {
    uint64_t c[2] = {0x10, r.y.gpu_addr};
    r.dev.write(r.args, 512, c, sizeof c);
    Rig::start(wr);
    r.dispatch(wr, r.args.gpu_addr + 512);
  }, "outside");
  // random dwords submitted: errors, never crashes
  std::mt19937 rng(3);
  GpuObject ib = r.dev.alloc(4096);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint32_t> dw(1 + rng() % 16);
    for (auto& d : dw) d = rng();
    if (rng() % 2) dw[0] = type7_header(op::CP_LOAD_STATE6_FRAG, 3);
    r.dev.write(ib, 0, dw.data(), dw.size() * 4);
    try {
      r.dev.submit(ib.gpu_addr, static_cast<uint32_t>(dw.size()));
    } catch (const opv::Error&) {
    }
  }
}
