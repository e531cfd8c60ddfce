// Capture -> PM4 streams on a qcom Device (see capture_stream.h). Register values follow
// ../shared/qcom/PM4.md section 4 (the NIR/IR3 path: SP_CS_CONST_CONFIG_0 from the variant's
// work-group-id / local-id regids, CP_EXEC_CS with the group counts) and section 5 (descriptor
// words); every register and field by name from a6xx_tables.h.
#include "backend/qcom/capture_stream.h"

#include <algorithm>
#include <cstring>

#include "backend/qcom/pm4.h"
#include "core/error.h"

namespace opv::qcom {

namespace reg = a6xx::reg;
namespace op = a6xx::op;
namespace f = a6xx::f;
namespace w = a6xx::word;
namespace e = a6xx_enum;
using ir3::CaptureArg;
using ir3::CaptureKernel;
using ir3::CaptureLaunch;

namespace {

constexpr uint64_t kSlotAlign = 256;      // kernarg slots (const source: 16 B; descriptors: 64 B)
constexpr uint64_t kCodeAlign = kShaderUnitBytes;
constexpr uint32_t kFibersPerSp = 2048;   // a630 (PM4.md section 4, step 8)
constexpr uint32_t kPvtUnit = 512;        // SP_CS_PVT_MEM_PARAM.MEMSIZEPERITEM units
constexpr uint32_t kPvtTotalShift = 12;   // SP_CS_PVT_MEM_SIZE.TOTALPVTMEMSIZE shr
constexpr uint32_t kStackOffsetShift = 11;  // SP_CS_PVT_MEM_STACK_OFFSET.OFFSET shr
constexpr uint32_t kConstLenShift = 2;    // SP_CS_CONST_CONFIG.CONSTLEN shr
constexpr uint32_t kBorderBytes = 4096;
constexpr uint32_t kMaxConstUnits = 1020;  // NUM_UNIT / CONSTLEN field limits

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
uint32_t lo32(uint64_t v) { return static_cast<uint32_t>(v); }
uint32_t hi32(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

// A byte range of a capture buffer touched by a launch.
struct Range {
  int buffer;
  uint64_t begin, end;
  bool overlaps(const Range& o) const { return buffer == o.buffer && begin < o.end && o.begin < end; }
};

struct Access {
  std::vector<Range> reads, writes, tex_reads;
};

Access access_of(const ir3::Capture& cap, const CaptureLaunch& l) {
  Access a;
  const CaptureKernel& k = cap.kernels.at(l.kernel);
  std::vector<const CaptureArg*> images;
  for (const CaptureArg& x : l.args)
    if (x.kind == CaptureArg::Kind::Image) images.push_back(&x);
  for (const CaptureArg& x : l.args) {
    if (x.kind == CaptureArg::Kind::Value) continue;
    Range r{x.buffer, x.offset, x.offset + x.bytes};
    if (x.reads) a.reads.push_back(r);
    if (x.writes) a.writes.push_back(r);
  }
  for (int t = 0; t < k.num_tex; ++t) {
    size_t i = static_cast<size_t>(k.num_ibo + k.tex_to_image.at(t));
    if (i < images.size()) {
      const CaptureArg& x = *images[i];
      a.tex_reads.push_back({x.buffer, x.offset, x.offset + x.bytes});
    }
  }
  return a;
}

bool any_overlap(const std::vector<Range>& a, const std::vector<Range>& b) {
  for (const Range& x : a)
    for (const Range& y : b)
      if (x.overlaps(y)) return true;
  return false;
}

std::vector<uint32_t> tex_descriptor(uint64_t addr, const CaptureArg& a, bool ibo) {
  int eb = ir3::capture_dtype_bytes(a.dtype);
  OPV_CHECK(eb == 2 || eb == 4, "qcom: image of dtype '", a.dtype, "' (RGBA16F/RGBA32F only)");
  OPV_CHECK(a.width > 0 && a.height > 0, "qcom: image of ", a.width, "x", a.height, " texels");
  uint32_t fmt = eb == 2 ? e::FMT6_16_16_16_16_FLOAT : e::FMT6_32_32_32_32_FLOAT;
  uint64_t pitch = uint64_t(a.width) * 4 * eb;
  OPV_CHECK(uint64_t(a.height) * pitch <= a.bytes, "qcom: image of ", a.width, "x", a.height, " texels in ", a.bytes, " bytes");
  OPV_CHECK(addr % 32 == 0, "qcom: image base ", addr, " is not 32-byte aligned");
  std::vector<uint32_t> d(kDescriptorDwords, 0);
  d[w::A6XX_TEX_CONST_0] = put(f::A6XX_TEX_CONST_0__TILE_MODE, e::TILE6_LINEAR) | put(f::A6XX_TEX_CONST_0__FMT, fmt);
  if (!ibo)
    d[w::A6XX_TEX_CONST_0] |= put(f::A6XX_TEX_CONST_0__SWIZ_X, e::SWIZ_X) | put(f::A6XX_TEX_CONST_0__SWIZ_Y, e::SWIZ_Y) |
                              put(f::A6XX_TEX_CONST_0__SWIZ_Z, e::SWIZ_Z) | put(f::A6XX_TEX_CONST_0__SWIZ_W, e::SWIZ_W);
  d[w::A6XX_TEX_CONST_1] = put(f::A6XX_TEX_CONST_1__WIDTH, a.width) | put(f::A6XX_TEX_CONST_1__HEIGHT, a.height);
  uint32_t align = 0;  // PITCHALIGN = log2(pitch alignment / 64)
  while (align < 15 && pitch % (uint64_t(64) << (align + 1)) == 0) ++align;
  d[w::A6XX_TEX_CONST_2] = put(f::A6XX_TEX_CONST_2__PITCH, pitch) | put(f::A6XX_TEX_CONST_2__TYPE, e::A6XX_TEX_2D) |
                           (pitch % 64 == 0 ? put(f::A6XX_TEX_CONST_2__PITCHALIGN, align) : 0);
  d[w::A6XX_TEX_CONST_4] = put(f::A6XX_TEX_CONST_4__BASE_LO, lo32(addr) >> f::A6XX_TEX_CONST_4__BASE_LO.lo);
  d[w::A6XX_TEX_CONST_5] = put(f::A6XX_TEX_CONST_5__BASE_HI, hi32(addr));
  return d;
}

std::vector<uint32_t> sampler_descriptor() {
  // IR3 emits one sampler per texture: unnormalized, clamp to border, nearest (PM4.md section 5)
  std::vector<uint32_t> s(kSamplerDwords, 0);
  s[0] = put(f::A6XX_TEX_SAMP_0__WRAP_S, e::A6XX_TEX_CLAMP_TO_BORDER) | put(f::A6XX_TEX_SAMP_0__WRAP_T, e::A6XX_TEX_CLAMP_TO_BORDER) |
         put(f::A6XX_TEX_SAMP_0__WRAP_R, e::A6XX_TEX_CLAMP_TO_BORDER);
  s[1] = put(f::A6XX_TEX_SAMP_1__CUBEMAPSEAMLESSFILTOFF, 1) | put(f::A6XX_TEX_SAMP_1__UNNORM_COORDS, 1);
  return s;
}

}  // namespace

// Kernarg slot of one launch: [consts | texture descriptors | IBO descriptors | samplers].
struct CaptureRunner::Slot {
  uint64_t offset = 0, size = 0;
  uint32_t const_units = 0;
  uint64_t tex_off = 0, ibo_off = 0, samp_off = 0;
  std::vector<uint8_t> bytes;
};

CaptureRunner::CaptureRunner(const ir3::Capture& cap, Device& dev, StreamOptions opts)
    : cap_(cap), dev_(dev), opts_(std::move(opts)) {
  try {
    for (uint64_t n : cap_.buffer_bytes) bufs_.push_back(dev_.alloc(n));
    // code: one object, each kernel at a 128-byte boundary, zero (nop) padded
    uint64_t total = 0;
    for (const CaptureKernel& k : cap_.kernels) {
      code_off_.push_back(total);
      total += align_up(std::max<uint64_t>(k.code.size() * 8, 8), kCodeAlign);
    }
    code_ = dev_.alloc(total);
    for (size_t i = 0; i < cap_.kernels.size(); ++i)
      dev_.write(code_, code_off_[i], cap_.kernels[i].code.data(), cap_.kernels[i].code.size() * 8);
    uint32_t pvt = 0;
    for (const CaptureKernel& k : cap_.kernels) pvt = std::max(pvt, k.pvtmem_bytes);
    if (pvt) pvt_ = dev_.alloc(uint64_t(align_up(pvt, kPvtUnit)) * kFibersPerSp);
    border_ = dev_.alloc(kBorderBytes);
    fence_ = dev_.alloc(4096);
    build_slots();

    // setup: host copies in order; consecutive constant launches go in one submission
    std::vector<const CaptureLaunch*> pending;
    auto flush = [&] {
      if (pending.empty()) return;
      StreamStats st;
      auto dw = build_stream(pending, false, &st);
      GpuObject ib;
      submit_stream(dw, &ib);
      dev_.free(ib);
      ++setup_submissions_;
      pending.clear();
    };
    for (const ir3::CaptureStep& s : cap_.setup) {
      if (opts_.skip_setup) break;
      if (s.is_launch) {
        pending.push_back(&s.launch);
        continue;
      }
      flush();
      const ir3::CaptureCopy& c = s.copy;
      std::vector<uint8_t> bytes = ir3::setup_copy_bytes(
          cap_, c, opts_.initializer,
          [&](int b, uint64_t off, void* dst, uint64_t n) { dev_.read(bufs_.at(static_cast<size_t>(b)), off, dst, n); }, "qcom");
      dev_.write(bufs_.at(c.buffer), c.offset, bytes.data(), c.bytes);
    }
    flush();

    std::vector<const CaptureLaunch*> sched;
    for (const CaptureLaunch& l : cap_.schedule) sched.push_back(&l);
    stream_ = build_stream(sched, true, &stats_);
    stats_.submissions = 1;
    ib_ = dev_.alloc(stream_.size() * 4);
    dev_.write(ib_, 0, stream_.data(), stream_.size() * 4);
  } catch (...) {
    for (const GpuObject& b : bufs_) dev_.free(b);
    for (GpuObject* o : {&code_, &kernargs_, &border_, &pvt_, &fence_, &ib_})
      if (o->id) dev_.free(*o);
    throw;
  }
}

CaptureRunner::~CaptureRunner() {
  try {
    for (const GpuObject& b : bufs_) dev_.free(b);
    for (GpuObject* o : {&code_, &kernargs_, &border_, &pvt_, &fence_, &ib_})
      if (o->id) dev_.free(*o);
  } catch (...) {
  }
}

void CaptureRunner::build_slots() {
  std::vector<const CaptureLaunch*> all;
  for (const ir3::CaptureStep& s : cap_.setup)
    if (s.is_launch) all.push_back(&s.launch);
  for (const CaptureLaunch& l : cap_.schedule) all.push_back(&l);
  uint64_t total = 0;
  for (const CaptureLaunch* lp : all) {
    const CaptureLaunch& l = *lp;
    const CaptureKernel& k = cap_.kernels.at(l.kernel);
    Slot s;
    // const file image (as ir3 replay binds it): buffer addresses, then scalar values
    std::vector<uint8_t> c(kMaxConstUnits * kConstUnitBytes, 0);
    uint64_t extent = 0;
    auto put_const = [&](uint64_t byte, uint64_t v, int n) {
      OPV_CHECK(byte + n <= c.size(), "qcom: kernel ", k.name, ": const byte ", byte, " is outside the const file");
      std::memcpy(c.data() + byte, &v, static_cast<size_t>(n));
      extent = std::max(extent, byte + n);
    };
    uint32_t nbuf = 0;
    std::vector<const CaptureArg*> images;
    for (const CaptureArg& a : l.args) {
      if (a.kind == CaptureArg::Kind::Buffer) put_const(k.args_const_byte + 8 * nbuf++, bufs_.at(a.buffer).gpu_addr + a.offset, 8);
      else if (a.kind == CaptureArg::Kind::Image) images.push_back(&a);
    }
    uint64_t off = nbuf * 8;
    for (const CaptureArg& a : l.args) {
      if (a.kind != CaptureArg::Kind::Value) continue;
      int eb = ir3::capture_dtype_bytes(a.dtype);
      OPV_CHECK(eb >= 1 && eb <= 8, "qcom: value of dtype '", a.dtype, "'");
      off = (off + eb - 1) / eb * eb;
      put_const(k.args_const_byte + off, static_cast<uint64_t>(a.value), eb);
      off += eb;
    }
    for (size_t i = 0; i < k.immediates.size(); ++i) put_const(k.immediates_const_byte + 4 * i, k.immediates[i], 4);
    if (k.local_size_const_byte)
      for (int d = 0; d < 3; ++d) put_const(*k.local_size_const_byte + 4 * d, l.local_size[d], 4);
    s.const_units = static_cast<uint32_t>(std::max<uint64_t>({uint64_t(k.constlen_vec4), (extent + kConstUnitBytes - 1) / kConstUnitBytes, 1}));
    OPV_CHECK(s.const_units <= kMaxConstUnits, "qcom: kernel ", k.name, " needs ", s.const_units, " const vec4");
    OPV_CHECK(size_t(k.num_ibo) + k.num_tex <= images.size() + size_t(k.num_tex) && size_t(k.num_ibo) <= images.size(),
              "qcom: kernel ", k.name, " binds ", k.num_ibo, " IBOs but the launch has ", images.size(), " images");
    s.bytes.assign(c.begin(), c.begin() + s.const_units * kConstUnitBytes);
    auto append = [&](const std::vector<uint32_t>& dw, uint64_t align) {
      s.bytes.resize(align_up(s.bytes.size(), align), 0);
      size_t at = s.bytes.size();
      s.bytes.resize(at + dw.size() * 4);
      std::memcpy(s.bytes.data() + at, dw.data(), dw.size() * 4);
      return at;
    };
    // textures first, then IBOs, then samplers (the NIR path's order, PM4.md section 5)
    s.tex_off = align_up(s.bytes.size(), 64);
    for (int t = 0; t < k.num_tex; ++t) {
      size_t i = static_cast<size_t>(k.num_ibo + k.tex_to_image.at(t));
      OPV_CHECK(i < images.size(), "qcom: kernel ", k.name, ": texture ", t, " maps to image ", i, " of ", images.size());
      const CaptureArg& a = *images[i];
      append(tex_descriptor(bufs_.at(a.buffer).gpu_addr + a.offset, a, false), 64);
    }
    s.ibo_off = align_up(s.bytes.size(), 64);
    for (int u = 0; u < k.num_ibo; ++u) {
      const CaptureArg& a = *images[u];
      append(tex_descriptor(bufs_.at(a.buffer).gpu_addr + a.offset, a, true), 64);
    }
    s.samp_off = align_up(s.bytes.size(), 16);
    for (int t = 0; t < k.num_tex; ++t) append(sampler_descriptor(), 16);
    s.offset = total;
    s.size = align_up(std::max<uint64_t>(s.bytes.size(), 1), kSlotAlign);
    total += s.size;
    slot_of_[lp] = slots_.size();
    slots_.push_back(std::move(s));
  }
  kernargs_ = dev_.alloc(std::max<uint64_t>(total, 1));
  for (Slot& s : slots_) {
    dev_.write(kernargs_, s.offset, s.bytes.data(), s.bytes.size());
    s.bytes.clear();
    s.bytes.shrink_to_fit();
  }
}

// Register shadow: emits only the registers whose value changes, as one type-4 packet per
// contiguous run of changed registers.
struct CaptureRunner::Builder {
  StreamWriter wr;
  std::map<uint32_t, uint32_t> shadow;
  void regs(uint32_t first, const std::vector<uint32_t>& v) {
    size_t i = 0;
    while (i < v.size()) {
      auto it = shadow.find(first + static_cast<uint32_t>(i));
      if (it != shadow.end() && it->second == v[i]) {
        ++i;
        continue;
      }
      // extend over changed registers and over single unchanged ones between them (rewriting one
      // costs the same dword as the header of a new packet)
      auto same = [&](size_t x) {
        auto jt = shadow.find(first + static_cast<uint32_t>(x));
        return jt != shadow.end() && jt->second == v[x];
      };
      size_t j = i;
      while (j < v.size() && (!same(j) || (j + 1 < v.size() && !same(j + 1)))) ++j;
      wr.regs(first + static_cast<uint32_t>(i), std::vector<uint32_t>(v.begin() + i, v.begin() + j));
      for (size_t k = i; k < j; ++k) shadow[first + static_cast<uint32_t>(k)] = v[k];
      i = j;
    }
  }
  void reg64(uint32_t r, uint64_t v) { regs(r, {lo32(v), hi32(v)}); }
  void load(uint32_t type, uint32_t block, uint32_t units, uint64_t addr) {
    OPV_CHECK(addr % 16 == 0, "qcom: CP_LOAD_STATE6 source ", addr, " is not 16-byte aligned");
    wr.pkt(op::CP_LOAD_STATE6_FRAG,
           {put(f::CP_LOAD_STATE6_0__STATE_TYPE, type) | put(f::CP_LOAD_STATE6_0__STATE_SRC, e::SS6_INDIRECT) |
                put(f::CP_LOAD_STATE6_0__STATE_BLOCK, block) | put(f::CP_LOAD_STATE6_0__NUM_UNIT, units),
            lo32(addr), hi32(addr)});
  }
  void event(uint32_t ev) { wr.pkt(op::CP_EVENT_WRITE, {put(f::CP_EVENT_WRITE_0__EVENT, ev)}); }
};

std::vector<uint32_t> CaptureRunner::build_stream(const std::vector<const CaptureLaunch*>& launches, bool inference,
                                                  StreamStats* st) {
  Builder b;
  // preamble: compute mode and the state no launch changes
  b.wr.pkt(op::CP_SET_MARKER, {put(f::A6XX_CP_SET_MARKER_0__MODE, e::RM6_COMPUTE)});
  b.event(e::CACHE_INVALIDATE);  // host writes (inputs, weights) and earlier submissions
  b.regs(reg::SP_UPDATE_CNTL, {put(f::SP_UPDATE_CNTL__CS_STATE, 1) | put(f::SP_UPDATE_CNTL__CS_UAV, 1)});
  b.regs(reg::SP_UPDATE_CNTL, {0});
  b.shadow.erase(reg::SP_UPDATE_CNTL);
  b.regs(reg::SP_MODE_CNTL, {put(f::SP_MODE_CNTL__ISAMMODE, e::ISAMMODE_GL) | put(f::SP_MODE_CNTL__CONSTANT_DEMOTION_ENABLE, 1)});
  b.regs(reg::SP_PERFCTR_SHADER_MASK, {put(f::SP_PERFCTR_SHADER_MASK__CS, 1)});
  b.regs(reg::TPL1_MODE_CNTL, {put(f::TPL1_MODE_CNTL__ISAMMODE, e::ISAMMODE_GL)});
  b.reg64(reg::TPL1_CS_BORDER_COLOR_BASE, border_.gpu_addr);
  if (pvt_.id) b.reg64(reg::SP_CS_PVT_MEM_BASE, pvt_.gpu_addr);
  size_t fixed = b.wr.packets();

  std::vector<Range> pend_r, pend_w, inv_w;  // since the last WFI; writes since the last invalidate
  int dep_barrier = 0;
  int prev_kernel = -1;
  for (const CaptureLaunch* lp : launches) {
    const CaptureLaunch& l = *lp;
    const CaptureKernel& k = cap_.kernels.at(l.kernel);
    const Slot& s = slots_.at(slot_of_.at(lp));
    uint64_t slot = kernargs_.gpu_addr + s.offset;
    Access acc = access_of(cap_, l);

    if (opts_.mode == BarrierMode::PerDispatch) {
      if (st->dispatches > 0) {
        b.wr.pkt(op::CP_WAIT_FOR_IDLE, {});
        b.event(e::CACHE_INVALIDATE);
        ++st->barriers;
        ++st->cache_invalidates;
      }
    } else {
      bool raw = any_overlap(acc.reads, pend_w), war = any_overlap(acc.writes, pend_r), waw = any_overlap(acc.writes, pend_w);
      bool tex = any_overlap(acc.tex_reads, inv_w);
      st->raw_edges += raw, st->war_edges += war, st->waw_edges += waw, st->texture_edges += tex;
      if (raw || war || waw || tex) {
        bool emit = !(inference && dep_barrier == opts_.drop_barrier);
        ++dep_barrier;
        if (raw || war || waw || any_overlap(acc.tex_reads, pend_w)) {
          if (emit) b.wr.pkt(op::CP_WAIT_FOR_IDLE, {});
          st->barriers += emit;
          pend_r.clear();
          pend_w.clear();
        }
        if (tex) {
          if (emit) b.event(e::CACHE_INVALIDATE);
          st->cache_invalidates += emit;
          inv_w.clear();
        }
      }
    }
    pend_r.insert(pend_r.end(), acc.reads.begin(), acc.reads.end());
    pend_w.insert(pend_w.end(), acc.writes.begin(), acc.writes.end());
    inv_w.insert(inv_w.end(), acc.writes.begin(), acc.writes.end());

    auto regid = [](int r) { return static_cast<uint32_t>(r < 0 ? e::REGID_NONE : r); };
    uint32_t gx = l.global_size[0], gy = l.global_size[1], gz = l.global_size[2];
    for (int d = 0; d < 3; ++d)
      OPV_CHECK(l.local_size[d] >= 1 && l.global_size[d] >= 1, "qcom: launch of kernel ", k.name, " with an empty grid");
    b.regs(reg::SP_CS_NDRANGE_0,
           {put(f::SP_CS_NDRANGE_0__KERNELDIM, 3) | put(f::SP_CS_NDRANGE_0__LOCALSIZEX, l.local_size[0] - 1) |
                put(f::SP_CS_NDRANGE_0__LOCALSIZEY, l.local_size[1] - 1) | put(f::SP_CS_NDRANGE_0__LOCALSIZEZ, l.local_size[2] - 1),
            put(f::SP_CS_NDRANGE_1__GLOBALSIZE_X, uint64_t(gx) * l.local_size[0]), put(f::SP_CS_NDRANGE_2__GLOBALOFF_X, 0),
            put(f::SP_CS_NDRANGE_3__GLOBALSIZE_Y, uint64_t(gy) * l.local_size[1]), put(f::SP_CS_NDRANGE_4__GLOBALOFF_Y, 0),
            put(f::SP_CS_NDRANGE_5__GLOBALSIZE_Z, uint64_t(gz) * l.local_size[2]), put(f::SP_CS_NDRANGE_6__GLOBALOFF_Z, 0),
            put(f::SP_CS_CONST_CONFIG_0__WGIDCONSTID, regid(k.work_group_id_regid)) |
                put(f::SP_CS_CONST_CONFIG_0__WGSIZECONSTID, e::REGID_NONE) |
                put(f::SP_CS_CONST_CONFIG_0__WGOFFSETCONSTID, e::REGID_NONE) |
                put(f::SP_CS_CONST_CONFIG_0__LOCALIDREGID, regid(k.local_invocation_id_regid)),
            put(f::SP_CS_WGE_CNTL__LINEARLOCALIDREGID, e::REGID_NONE) | put(f::SP_CS_WGE_CNTL__THREADSIZE, e::THREAD64),
            // turnip writes 1s here and passes the group counts in CP_EXEC_CS
            1, 1, 1});
    uint32_t pvt_units = static_cast<uint32_t>(align_up(k.pvtmem_bytes, kPvtUnit) / kPvtUnit);
    uint64_t per_sp = uint64_t(pvt_units) * kPvtUnit * kFibersPerSp;
    uint32_t shared = k.shared_bytes == 0 ? 0 : static_cast<uint32_t>(std::max<uint64_t>(1, (k.shared_bytes - 1) / 1024));
    uint64_t code = code_.gpu_addr + code_off_.at(l.kernel);
    b.regs(reg::SP_CS_CNTL_0,
           {put(f::SP_CS_CNTL_0__HALFREGFOOTPRINT, k.max_half_reg + 1) | put(f::SP_CS_CNTL_0__FULLREGFOOTPRINT, k.max_reg + 1) |
                put(f::SP_CS_CNTL_0__BRANCHSTACK, k.branchstack) | put(f::SP_CS_CNTL_0__THREADSIZE, e::THREAD64) |
                put(f::SP_CS_CNTL_0__MERGEDREGS, k.mergedregs ? 1 : 0),
            put(f::SP_CS_CNTL_1__SHARED_SIZE, shared) | put(f::SP_CS_CNTL_1__CONSTANTRAMMODE, e::CONSTLEN_256),
            0, 0, lo32(code), hi32(code), put(f::SP_CS_PVT_MEM_PARAM__MEMSIZEPERITEM, pvt_units)});
    b.regs(reg::SP_CS_PVT_MEM_SIZE, {put(f::SP_CS_PVT_MEM_SIZE__TOTALPVTMEMSIZE, per_sp >> kPvtTotalShift)});
    uint32_t groups = static_cast<uint32_t>(align_up(k.code.size() * 8, kShaderUnitBytes) / kShaderUnitBytes);
    b.regs(reg::SP_CS_CONFIG, {put(f::SP_CS_CONFIG__ENABLED, 1) | put(f::SP_CS_CONFIG__NTEX, k.num_tex) |
                                   put(f::SP_CS_CONFIG__NSAMP, k.num_tex) | put(f::SP_CS_CONFIG__NUAV, k.num_ibo),
                               put(f::SP_CS_INSTR_SIZE__VALUE, groups),
                               put(f::SP_CS_PVT_MEM_STACK_OFFSET__OFFSET, per_sp >> kStackOffsetShift)});
    b.regs(reg::SP_CS_CONST_CONFIG, {put(f::SP_CS_CONST_CONFIG__CONSTLEN, (s.const_units + 3) >> kConstLenShift) |
                                         put(f::SP_CS_CONST_CONFIG__ENABLED, 1)});
    b.load(e::ST6_CONSTANTS, e::SB6_CS_SHADER, s.const_units, slot);
    if (l.kernel != prev_kernel) b.load(e::ST6_SHADER, e::SB6_CS_SHADER, groups, code);
    prev_kernel = l.kernel;
    if (k.num_tex) {
      b.load(e::ST6_CONSTANTS, e::SB6_CS_TEX, k.num_tex, slot + s.tex_off);
      b.reg64(reg::SP_CS_TEXMEMOBJ_BASE, slot + s.tex_off);
      b.load(e::ST6_SHADER, e::SB6_CS_TEX, k.num_tex, slot + s.samp_off);
      b.reg64(reg::SP_CS_SAMPLER_BASE, slot + s.samp_off);
    }
    if (k.num_ibo) {
      b.load(e::ST6_UAV, e::SB6_CS_SHADER, k.num_ibo, slot + s.ibo_off);
      b.reg64(reg::SP_CS_UAV_BASE, slot + s.ibo_off);
    }
    b.wr.pkt(op::CP_EXEC_CS, {0, put(f::CP_EXEC_CS_1__NGROUPS_X, gx), put(f::CP_EXEC_CS_2__NGROUPS_Y, gy),
                              put(f::CP_EXEC_CS_3__NGROUPS_Z, gz)});
    if (opts_.mode == BarrierMode::PerDispatch) {
      b.event(e::CACHE_FLUSH_TS);
      ++st->cache_flushes;
    }
    ++st->dispatches;
  }
  // epilogue: wait for the last dispatches, flush for the host, write the fence value
  size_t before = b.wr.packets();
  b.wr.pkt(op::CP_WAIT_FOR_IDLE, {});
  ++fence_value_;
  b.wr.pkt(op::CP_EVENT_WRITE, {put(f::CP_EVENT_WRITE_0__EVENT, e::CACHE_FLUSH_TS), lo32(fence_.gpu_addr),
                                hi32(fence_.gpu_addr), fence_value_});
  st->fixed_packets = fixed + (b.wr.packets() - before);
  st->packets = b.wr.packets();
  st->bytes = b.wr.bytes();
  return b.wr.dwords();
}

void CaptureRunner::submit_stream(const std::vector<uint32_t>& dw, GpuObject* obj) {
  *obj = dev_.alloc(dw.size() * 4);
  dev_.write(*obj, 0, dw.data(), dw.size() * 4);
  uint32_t ts = dev_.submit(obj->gpu_addr, static_cast<uint32_t>(dw.size()));
  dev_.wait(ts);
}

std::vector<std::vector<uint8_t>> CaptureRunner::run(const std::map<std::string, std::vector<uint8_t>>& inputs) {
  for (const auto& [name, bytes] : inputs) {
    bool known = false;
    for (const ir3::CaptureTensor& t : cap_.inputs) known |= t.name == name;
    OPV_CHECK(known, "qcom: the capture has no input '", name, "'");
  }
  for (const ir3::CaptureTensor& t : cap_.inputs) {
    auto it = inputs.find(t.name);
    OPV_CHECK(it != inputs.end(), "qcom: input '", t.name, "' is missing");
    OPV_CHECK(it->second.size() == t.bytes(), "qcom: input '", t.name, "' has ", it->second.size(), " bytes, expected ", t.bytes());
    dev_.write(bufs_.at(t.buffer), t.offset, it->second.data(), t.bytes());
  }
  uint32_t ts = dev_.submit(ib_.gpu_addr, static_cast<uint32_t>(stream_.size()));
  dev_.wait(ts);
  std::vector<std::vector<uint8_t>> outs;
  for (const ir3::CaptureTensor& t : cap_.outputs) {
    std::vector<uint8_t> b(t.bytes());
    dev_.read(bufs_.at(t.buffer), t.offset, b.data(), b.size());
    outs.push_back(std::move(b));
  }
  return outs;
}

}  // namespace opv::qcom
