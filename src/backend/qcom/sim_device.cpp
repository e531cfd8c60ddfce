// The simulated a630 (see sim_device.h). Register and field names: a6xx_tables.h (generated
// from ../shared/qcom/registers.tsv); packet semantics: ../shared/qcom/PM4.md.
#include "backend/qcom/sim_device.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace opv::qcom {

namespace reg = a6xx::reg;
namespace op = a6xx::op;
namespace f = a6xx::f;
namespace e = a6xx_enum;
using Access = ir3::Simulator::Access;

namespace {
constexpr uint64_t kPage = 4096;
constexpr int kMaxIbDepth = 2;       // the kernel's ring calls our IB; we allow one more level
constexpr uint32_t kConstVec4 = 1024;  // a6xx const file
constexpr uint32_t kMaxDescriptors = 256;
std::string hexs(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}
}  // namespace

SimDevice::SimDevice(SimDeviceOptions opts) : opts_(opts), sim_({}) {
  base_ = sim_.alloc(1);
  consts_.assign(kConstVec4 * 4, 0);
  seq_name_.push_back("nothing");
  host_seq_.push_back(false);
}

uint32_t SimDevice::reg(uint32_t r) const {
  auto it = regs_.find(r);
  return it == regs_.end() ? 0 : it->second;
}

GpuObject SimDevice::alloc(uint64_t bytes) {
  OPV_CHECK(bytes <= (uint64_t(1) << 34), "qcom sim: allocation of ", bytes, " bytes is too large");
  uint64_t size = (std::max<uint64_t>(bytes, 1) + kPage - 1) / kPage * kPage;
  uint64_t at = sim_.alloc(size + kPage);
  uint64_t addr = (at + kPage - 1) / kPage * kPage;
  uint32_t id = next_id_++;
  objs_[addr] = Obj{id, size};
  ids_[id] = addr;
  return GpuObject{id, addr, size};
}

const std::pair<const uint64_t, SimDevice::Obj>& SimDevice::object(const GpuObject& o) const {
  auto it = ids_.find(o.id);
  OPV_CHECK(it != ids_.end() && it->second == o.gpu_addr, "qcom sim: unknown or freed GPU object ", o.id);
  return *objs_.find(it->second);
}

void SimDevice::free(const GpuObject& o) {
  object(o);
  objs_.erase(o.gpu_addr);
  ids_.erase(o.id);
}

uint64_t SimDevice::checked(uint64_t addr, uint64_t bytes, const char* what) const {
  auto it = objs_.upper_bound(addr);
  bool ok = it != objs_.begin();
  if (ok) {
    --it;
    ok = addr - it->first <= it->second.size && bytes <= it->second.size - (addr - it->first);
  }
  OPV_CHECK(ok, "qcom sim: ", what, " of ", bytes, " bytes at GPU address ", hexs(addr), " is outside every live GPU object");
  return addr;
}

void SimDevice::grow_shadow() {
  // covers every byte the simulator has allocated (objects are never moved)
  uint64_t need = 0;
  if (!objs_.empty()) need = objs_.rbegin()->first + objs_.rbegin()->second.size - base_;
  if (last_write_.size() < need) {
    last_write_.resize(need, 0);
    last_read_.resize(need, 0);
  }
}

void SimDevice::write(const GpuObject& o, uint64_t off, const void* src, uint64_t n) {
  const auto& [addr, obj] = object(o);
  OPV_CHECK(off <= obj.size && n <= obj.size - off, "qcom sim: host write of ", n, " bytes at offset ", off,
            " outside GPU object ", o.id, " (", obj.size, " bytes)");
  sim_.write(addr + off, src, n);
  if (opts_.check_order && n) {
    grow_shadow();
    if (!(seq_ > submit_seq_ && host_seq_[seq_])) {  // one sequence number per run of host writes
      ++seq_;
      host_seq_.push_back(true);
      seq_name_.push_back("the host");
    }
    std::fill_n(last_write_.begin() + static_cast<ptrdiff_t>(addr + off - base_), n, seq_);
  }
}

void SimDevice::read(const GpuObject& o, uint64_t off, void* dst, uint64_t n) {
  const auto& [addr, obj] = object(o);
  OPV_CHECK(off <= obj.size && n <= obj.size - off, "qcom sim: host read of ", n, " bytes at offset ", off,
            " outside GPU object ", o.id, " (", obj.size, " bytes)");
  if (opts_.check_order && n) {
    grow_shadow();
    for (uint64_t i = 0; i < n; ++i) {
      uint32_t w = last_write_[addr + off - base_ + i];
      OPV_CHECK(w == 0 || host_seq_[w] || w <= flushed_, "qcom sim: the host reads ", hexs(addr + off + i), ", written by ",
                seq_name_[w], ", with no CACHE_FLUSH_TS after that dispatch");
    }
  }
  sim_.read(addr + off, dst, n);
}

uint32_t SimDevice::submit(uint64_t ib, uint32_t dwords) {
  ++stats_.submissions;
  submit_seq_ = seq_;
  dispatch_in_submit_ = 0;
  execute(ib, dwords, 0);
  return ++timestamp_;
}

void SimDevice::wait(uint32_t ts) {
  OPV_CHECK(ts <= timestamp_, "qcom sim: wait for timestamp ", ts, " that was never issued (last ", timestamp_, ")");
}

void SimDevice::execute(uint64_t ib, uint32_t dwords, int depth) {
  OPV_CHECK(depth <= kMaxIbDepth, "qcom sim: indirect buffers nested deeper than ", kMaxIbDepth);
  OPV_CHECK(ib % 4 == 0, "qcom sim: IB address ", hexs(ib), " is not dword-aligned");
  checked(ib, uint64_t(dwords) * 4, "IB");
  std::vector<uint32_t> dw(dwords);
  sim_.read(ib, dw.data(), uint64_t(dwords) * 4);
  std::vector<Packet> pkts = decode(dw.data(), dw.size());
  stats_.packets += pkts.size();
  stats_.stream_bytes += uint64_t(dwords) * 4;
  for (const Packet& p : pkts) {
    try {
      if (!p.type7) {
        for (size_t k = 0; k < p.payload.size(); ++k) regs_[p.reg + static_cast<uint32_t>(k)] = p.payload[k];
        continue;
      }
      const auto& pl = p.payload;
      auto need = [&](size_t n) {
        OPV_CHECK(pl.size() >= n, opcode_name(p.opcode), " needs ", n, " payload dwords, has ", pl.size());
      };
      switch (p.opcode) {
        case op::CP_NOP:
        case op::CP_SET_MARKER:
        case op::CP_WAIT_MEM_WRITES:
        case op::CP_WAIT_FOR_ME: break;
        case op::CP_WAIT_FOR_IDLE:
          ++stats_.wait_for_idle;
          done_ = seq_;
          break;
        case op::CP_EVENT_WRITE: event(p); break;
        case op::CP_LOAD_STATE6_FRAG:
        case op::CP_LOAD_STATE6_GEOM:
        case op::CP_LOAD_STATE6: load_state(p); break;
        case op::CP_EXEC_CS: exec_cs(p); break;
        case op::CP_INDIRECT_BUFFER: {
          need(3);
          uint64_t a = pl[0] | uint64_t(pl[1]) << 32;
          execute(a, pl[2], depth + 1);
          break;
        }
        case op::CP_MEM_WRITE: {
          need(2);
          uint64_t a = pl[0] | uint64_t(pl[1]) << 32;
          checked(a, (pl.size() - 2) * 4, "CP_MEM_WRITE");
          sim_.write(a, pl.data() + 2, (pl.size() - 2) * 4);
          break;
        }
        case op::CP_WAIT_REG_MEM: {
          need(6);
          uint64_t a = pl[1] | uint64_t(pl[2]) << 32;
          uint32_t v = 0;
          if (get(f::CP_WAIT_REG_MEM_0__POLL, pl[0]) == 1) {
            checked(a, 4, "CP_WAIT_REG_MEM poll");
            sim_.read(a, &v, 4);
          } else {
            v = reg(static_cast<uint32_t>(a));
          }
          v &= pl[4];
          uint32_t ref = pl[3], fn = get(f::CP_WAIT_REG_MEM_0__FUNCTION, pl[0]);
          // FUNCTION: WRITE_ALWAYS 0, LT 1, LE 2, EQ 3, NE 4, GE 5, GT 6 (PM4.md)
          bool ok = fn == 0 || (fn == 1 && v < ref) || (fn == 2 && v <= ref) || (fn == 3 && v == ref) ||
                    (fn == 4 && v != ref) || (fn == 5 && v >= ref) || (fn == 6 && v > ref);
          OPV_CHECK(ok, "CP_WAIT_REG_MEM would wait forever (value ", v, ", reference ", ref, ", function ", fn,
                    "): nothing else writes that memory on the simulated device");
          break;
        }
        case op::CP_REG_TO_MEM: {
          need(3);
          uint32_t r = get(f::CP_REG_TO_MEM_0__REG, pl[0]);
          uint32_t cnt = std::max<uint32_t>(get(f::CP_REG_TO_MEM_0__CNT, pl[0]), 1);
          uint64_t a = pl[1] | uint64_t(pl[2]) << 32;
          checked(a, uint64_t(cnt) * 4, "CP_REG_TO_MEM");
          for (uint32_t k = 0; k < cnt; ++k) {
            uint32_t v = r + k == reg::CP_ALWAYS_ON_COUNTER ? static_cast<uint32_t>(stats_.instructions) : reg(r + k);
            sim_.write(a + 4 * k, &v, 4);
          }
          break;
        }
        case op::CP_RUN_OPENCL: fail("CP_RUN_OPENCL (the OpenCL-blob dispatch) is not simulated; use CP_EXEC_CS");
        default: fail(opcode_name(p.opcode), " is not simulated");
      }
    } catch (const Error& err) {
      fail("qcom sim: packet at IB dword ", p.offset, ": ", err.what());
    }
  }
}

void SimDevice::event(const Packet& p) {
  OPV_CHECK(!p.payload.empty(), "CP_EVENT_WRITE without payload");
  uint32_t ev = get(f::CP_EVENT_WRITE_0__EVENT, p.payload[0]);
  if (ev == e::CACHE_FLUSH_TS) {
    ++stats_.cache_flushes;
    flushed_ = seq_;  // a pipelined event: after every earlier dispatch
    if (p.payload.size() >= 4 && !get(f::CP_EVENT_WRITE_0__TIMESTAMP, p.payload[0])) {
      uint64_t a = p.payload[1] | uint64_t(p.payload[2]) << 32;
      checked(a, 4, "CP_EVENT_WRITE data");
      sim_.write(a, &p.payload[3], 4);
    }
  } else if (ev == e::CACHE_INVALIDATE) {
    ++stats_.cache_invalidates;
    inv_dispatch_ = done_;
    inv_host_ = submit_seq_;
  } else {
    fail("CP_EVENT_WRITE event ", ev, " is not simulated");
  }
}

void SimDevice::load_state(const Packet& p) {
  OPV_CHECK(p.payload.size() >= 3, "CP_LOAD_STATE6 needs 3 payload dwords, has ", p.payload.size());
  uint32_t w0 = p.payload[0];
  uint32_t type = get(f::CP_LOAD_STATE6_0__STATE_TYPE, w0), src = get(f::CP_LOAD_STATE6_0__STATE_SRC, w0);
  uint32_t block = get(f::CP_LOAD_STATE6_0__STATE_BLOCK, w0), units = get(f::CP_LOAD_STATE6_0__NUM_UNIT, w0);
  uint32_t dst = get(f::CP_LOAD_STATE6_0__DST_OFF, w0);
  OPV_CHECK(src == e::SS6_INDIRECT, "CP_LOAD_STATE6 STATE_SRC ", src, " is not simulated (only SS6_INDIRECT)");
  uint64_t a = (uint64_t(get(f::CP_LOAD_STATE6_1__EXT_SRC_ADDR, p.payload[1])) << f::CP_LOAD_STATE6_1__EXT_SRC_ADDR.lo) |
               uint64_t(p.payload[2]) << 32;
  auto fetch = [&](uint64_t bytes) {
    checked(a, bytes, "CP_LOAD_STATE6 source");
    std::vector<uint32_t> v(bytes / 4);
    sim_.read(a, v.data(), bytes);
    return v;
  };
  if (block == e::SB6_CS_SHADER && type == e::ST6_SHADER) {
    fetch(uint64_t(units) * kShaderUnitBytes);  // a prefetch: the SP runs the code at SP_CS_BASE
  } else if (block == e::SB6_CS_SHADER && type == e::ST6_CONSTANTS) {
    OPV_CHECK(uint64_t(dst) + units <= kConstVec4, "const load of ", units, " vec4 at ", dst, " beyond the const file");
    auto v = fetch(uint64_t(units) * kConstUnitBytes);
    std::copy(v.begin(), v.end(), consts_.begin() + dst * 4);
  } else if ((block == e::SB6_CS_SHADER && type == e::ST6_UAV) || (block == e::SB6_CS_TEX && type == e::ST6_CONSTANTS)) {
    auto& table = type == e::ST6_UAV ? ibo_ : tex_;
    OPV_CHECK(uint64_t(dst) + units <= kMaxDescriptors, "descriptor load beyond ", kMaxDescriptors, " slots");
    auto v = fetch(uint64_t(units) * kDescriptorDwords * 4);
    if (table.size() < dst + units) table.resize(dst + units);
    for (uint32_t u = 0; u < units; ++u) std::copy_n(v.begin() + u * kDescriptorDwords, kDescriptorDwords, table[dst + u].begin());
  } else if (block == e::SB6_CS_TEX && type == e::ST6_SHADER) {
    OPV_CHECK(uint64_t(dst) + units <= kMaxDescriptors, "sampler load beyond ", kMaxDescriptors, " slots");
    auto v = fetch(uint64_t(units) * kSamplerDwords * 4);
    if (samp_.size() < dst + units) samp_.resize(dst + units);
    for (uint32_t u = 0; u < units; ++u) std::copy_n(v.begin() + u * kSamplerDwords, kSamplerDwords, samp_[dst + u].begin());
  } else {
    fail("CP_LOAD_STATE6 of STATE_BLOCK ", block, " STATE_TYPE ", type, " is not simulated (compute only)");
  }
}

ir3::SimImage SimDevice::image_of(const std::array<uint32_t, 16>& d, const char* what, int index) const {
  ir3::SimImage im;
  uint32_t fmt = get(f::A6XX_TEX_CONST_0__FMT, d[a6xx::word::A6XX_TEX_CONST_0]);
  if (fmt == e::FMT6_16_16_16_16_FLOAT) im.format = ir3::SimImage::Format::RGBA16F;
  else if (fmt == e::FMT6_32_32_32_32_FLOAT) im.format = ir3::SimImage::Format::RGBA32F;
  else fail(what, " ", index, ": format ", hexs(fmt), " is not simulated (RGBA16F/RGBA32F)");
  OPV_CHECK(get(f::A6XX_TEX_CONST_0__TILE_MODE, d[a6xx::word::A6XX_TEX_CONST_0]) == e::TILE6_LINEAR, what, " ", index,
            ": only linear tiling is simulated");
  OPV_CHECK(get(f::A6XX_TEX_CONST_2__TYPE, d[a6xx::word::A6XX_TEX_CONST_2]) == e::A6XX_TEX_2D, what, " ", index,
            ": only 2D images are simulated");
  im.width = static_cast<int>(get(f::A6XX_TEX_CONST_1__WIDTH, d[a6xx::word::A6XX_TEX_CONST_1]));
  im.height = static_cast<int>(get(f::A6XX_TEX_CONST_1__HEIGHT, d[a6xx::word::A6XX_TEX_CONST_1]));
  im.pitch = get(f::A6XX_TEX_CONST_2__PITCH, d[a6xx::word::A6XX_TEX_CONST_2]);
  im.address = (uint64_t(get(f::A6XX_TEX_CONST_4__BASE_LO, d[a6xx::word::A6XX_TEX_CONST_4])) << f::A6XX_TEX_CONST_4__BASE_LO.lo) |
               uint64_t(get(f::A6XX_TEX_CONST_5__BASE_HI, d[a6xx::word::A6XX_TEX_CONST_5])) << 32;
  OPV_CHECK(im.width > 0 && im.height > 0, what, " ", index, ": empty image ", im.width, "x", im.height);
  uint64_t tb = static_cast<uint64_t>(im.texel_bytes());
  OPV_CHECK(im.pitch >= im.width * tb, what, " ", index, ": pitch ", im.pitch, " is smaller than a row (", im.width * tb,
            " bytes)");
  checked(im.address, uint64_t(im.pitch) * (im.height - 1) + im.width * tb, what);
  return im;
}

void SimDevice::exec_cs(const Packet& p) {
  OPV_CHECK(p.payload.size() >= 4, "CP_EXEC_CS needs 4 payload dwords, has ", p.payload.size());
  uint32_t cfg = reg(reg::SP_CS_CONFIG);
  OPV_CHECK(get(f::SP_CS_CONFIG__ENABLED, cfg), "CP_EXEC_CS with SP_CS_CONFIG.ENABLED clear");
  uint32_t nd = reg(reg::SP_CS_NDRANGE_0);
  ir3::SimConfig sc;
  sc.local_size = {get(f::SP_CS_NDRANGE_0__LOCALSIZEX, nd) + 1, get(f::SP_CS_NDRANGE_0__LOCALSIZEY, nd) + 1,
                   get(f::SP_CS_NDRANGE_0__LOCALSIZEZ, nd) + 1};
  sc.num_groups = {get(f::CP_EXEC_CS_1__NGROUPS_X, p.payload[1]), get(f::CP_EXEC_CS_2__NGROUPS_Y, p.payload[2]),
                   get(f::CP_EXEC_CS_3__NGROUPS_Z, p.payload[3])};
  const uint32_t gsize[3] = {reg(reg::SP_CS_NDRANGE_1), reg(reg::SP_CS_NDRANGE_3), reg(reg::SP_CS_NDRANGE_5)};
  for (int d = 0; d < 3; ++d) {
    OPV_CHECK(sc.num_groups[d] >= 1 && sc.num_groups[d] <= 65535, "CP_EXEC_CS: ", sc.num_groups[d], " groups in dim ", d);
    OPV_CHECK(uint64_t(sc.num_groups[d]) * sc.local_size[d] == gsize[d], "SP_CS_NDRANGE global size ", gsize[d], " in dim ",
              d, " is not groups x local size (", sc.num_groups[d], " x ", sc.local_size[d], ")");
  }
  uint32_t c0 = reg(reg::SP_CS_CNTL_0), c1 = reg(reg::SP_CS_CNTL_1);
  sc.merged_regs = get(f::SP_CS_CNTL_0__MERGEDREGS, c0) != 0;
  uint32_t wge = reg(reg::SP_CS_WGE_CNTL);
  OPV_CHECK(get(f::SP_CS_WGE_CNTL__THREADSIZE, wge) == get(f::SP_CS_CNTL_0__THREADSIZE, c0),
            "SP_CS_WGE_CNTL.THREADSIZE differs from SP_CS_CNTL_0.THREADSIZE");
  sc.wave_size = get(f::SP_CS_CNTL_0__THREADSIZE, c0) == e::THREAD128 ? 128 : 64;
  uint32_t shared = get(f::SP_CS_CNTL_1__SHARED_SIZE, c1);
  sc.local_mem_bytes = shared == 0 ? 32 * 1024 : (shared + 1) * 1024;
  uint32_t per_item = get(f::SP_CS_PVT_MEM_PARAM__MEMSIZEPERITEM, reg(reg::SP_CS_PVT_MEM_PARAM)) * 512;
  sc.private_mem_bytes = std::max<uint32_t>(per_item, 16);
  uint32_t cc = reg(reg::SP_CS_CONST_CONFIG_0);
  uint32_t wgid = get(f::SP_CS_CONST_CONFIG_0__WGIDCONSTID, cc), lid = get(f::SP_CS_CONST_CONFIG_0__LOCALIDREGID, cc);
  sc.group_id_reg = wgid == e::REGID_NONE ? -1 : static_cast<int>(wgid);
  sc.local_id_reg = lid == e::REGID_NONE ? -1 : static_cast<int>(lid);
  sc.max_steps = opts_.max_steps;

  // program: SP_CS_INSTR_SIZE groups of 16 instructions at SP_CS_BASE
  uint64_t base = reg(reg::SP_CS_BASE) | uint64_t(reg(reg::SP_CS_BASE + 1)) << 32;
  uint32_t groups = reg(reg::SP_CS_INSTR_SIZE);
  OPV_CHECK(groups > 0, "CP_EXEC_CS with SP_CS_INSTR_SIZE 0");
  OPV_CHECK(reg(reg::SP_CS_PROGRAM_COUNTER_OFFSET) == 0, "SP_CS_PROGRAM_COUNTER_OFFSET != 0 is not simulated");
  checked(base, uint64_t(groups) * kShaderUnitBytes, "shader (SP_CS_BASE)");
  std::vector<uint64_t> code(uint64_t(groups) * kShaderUnitBytes / 8);
  sim_.read(base, code.data(), code.size() * 8);
  sim_.set_program(code);

  sim_.consts = consts_;
  sim_.images.clear();
  sim_.ibos.clear();
  uint32_t ntex = get(f::SP_CS_CONFIG__NTEX, cfg), nuav = get(f::SP_CS_CONFIG__NUAV, cfg);
  OPV_CHECK(ntex <= tex_.size(), "SP_CS_CONFIG.NTEX ", ntex, " but ", tex_.size(), " texture descriptors loaded");
  OPV_CHECK(nuav <= ibo_.size(), "SP_CS_CONFIG.NUAV ", nuav, " but ", ibo_.size(), " IBO descriptors loaded");
  for (uint32_t t = 0; t < ntex; ++t) sim_.images.push_back(image_of(tex_[t], "texture", static_cast<int>(t)));
  for (uint32_t u = 0; u < nuav; ++u) {
    ir3::SimBuffer b;
    b.image = image_of(ibo_[u], "IBO", static_cast<int>(u));
    b.address = b.image.address;
    b.size = uint64_t(b.image.pitch) * b.image.height;
    b.is_image = true;
    b.image.address = 0;
    sim_.ibos.push_back(b);
  }

  ++stats_.dispatches;
  ++dispatch_in_submit_;
  if (opts_.check_order) {
    grow_shadow();
    cur_ = ++seq_;
    host_seq_.push_back(false);
    seq_name_.push_back("dispatch " + std::to_string(dispatch_in_submit_ - 1) + " of submission " +
                        std::to_string(stats_.submissions));
    sim_.on_access = [this](uint64_t a, uint64_t n, Access k) { on_access(a, n, k); };
  }
  ir3::SimStats st;
  try {
    st = sim_.run(sc);
  } catch (...) {
    sim_.on_access = nullptr;
    throw;
  }
  sim_.on_access = nullptr;
  stats_.instructions += st.instructions;
  stats_.fiber_instructions += st.fiber_instructions;
}

void SimDevice::on_access(uint64_t addr, uint64_t n, Access kind) {
  uint64_t i0 = addr - base_;
  OPV_CHECK(addr >= base_ && i0 + n <= last_write_.size(), "dispatch accesses ", hexs(addr), " outside GPU memory");
  const std::string& me = seq_name_[cur_];
  for (uint64_t i = i0; i < i0 + n; ++i) {
    uint32_t w = last_write_[i];
    if (kind != Access::Write) {
      if (w && w != cur_) {
        if (host_seq_[w]) {
          OPV_CHECK(w <= inv_host_, me, " reads ", hexs(base_ + i), ", written by the host, with no CACHE_INVALIDATE since");
        } else {
          OPV_CHECK(w <= done_, me, " reads ", hexs(base_ + i), ", written by ", seq_name_[w],
                    ", with no CP_WAIT_FOR_IDLE between them (read-after-write hazard)");
          OPV_CHECK(kind != Access::TextureRead || w <= inv_dispatch_, me, " samples ", hexs(base_ + i), ", written by ",
                    seq_name_[w], ", with no CACHE_INVALIDATE after that dispatch completed (stale texture cache)");
        }
      }
      last_read_[i] = cur_;
    } else {
      uint32_t r = last_read_[i];
      OPV_CHECK(!w || w == cur_ || host_seq_[w] || w <= done_, me, " writes ", hexs(base_ + i), ", written by ", seq_name_[w],
                ", with no CP_WAIT_FOR_IDLE between them (write-after-write hazard)");
      OPV_CHECK(!r || r == cur_ || r <= done_, me, " writes ", hexs(base_ + i), ", read by ", seq_name_[r],
                ", with no CP_WAIT_FOR_IDLE between them (write-after-read hazard)");
      last_write_[i] = cur_;
    }
  }
}

}  // namespace opv::qcom
