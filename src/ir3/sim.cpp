// Functional simulator for a6xx compute shaders.
//
// Steps: (1) at construction, decode every instruction once into a flat record (operands as
// register/const/immediate/relative descriptors read from the decoded tree); (2) run() walks the
// grid of work-groups; each group's waves run round-robin until all end, each wave stopping at
// `bar` until every live wave of the group reaches it; (3) inside a wave, each step issues the
// instruction at the lowest pc among live fibers for the fibers at that pc (divergent paths run
// one after the other and reconverge where their pcs meet again), honouring predication
// (predt/predf/prede); (4) (rptN) repeats an instruction N+1 times, advancing the destination
// and every source marked (r).
// Invariant: bad programs (unsupported opcode, out-of-range memory access, running off the end)
// raise opv::Error naming the instruction index and text; nothing is undefined behaviour.
// Semantics that the references leave open are marked "(assumed)".
#include "ir3/sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/error.h"
#include "core/half.h"
#include "ir3/isa_model.h"
#include "ir3/semantics.h"

namespace opv::ir3 {

using detail::Node;

namespace {

constexpr uint64_t kGlobalBase = 0x100000000ull;  // first global address (high dword != 0)
constexpr int kFiberRegs = 48 * 4;                 // r0.x .. r47.w
constexpr int kSharedRegs = 8 * 4;                 // r48.x .. r55.w
constexpr int kRegA1 = kRegA0 + 1;

enum Type { F16 = 0, F32 = 1, U16 = 2, U32 = 3, S16 = 4, S32 = 5, U8 = 6, U8_32 = 7 };
bool type_half(int t) { return t == F16 || t == U16 || t == S16 || t == U8; }
int type_bytes(int t) { return t == U8 || t == U8_32 ? 1 : (t == F16 || t == U16 || t == S16) ? 2 : 4; }

float f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Opcode names are compared as 64-bit FNV-1a hashes computed once per instruction (the
// interpreter's hot path must not compare strings); H("add.f") is a compile-time constant.
constexpr uint64_t H(std::string_view v) {
  uint64_t h = 1469598103934665603ull;
  for (char c : v) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

int regid_of(const Node* g) { return static_cast<int>(g->value("GPR") * 4 + g->value("SWIZ")); }

// A source/destination operand from the shared decoding (ir3/semantics.h); kinds the
// simulator does not execute are refused here, naming the sub-encoding.
Operand sim_operand(const Instr& in, const char* field, bool half) {
  Operand o = ir3::operand(in, field, half);
  if (o.kind == Operand::None) fail("operand kind `", o.kind_name, "` is not simulated");
  return o;
}

enum class Op {
  Nop, End, Br, Jump, Kill, PredT, PredF, PredE, GetOne,
  Mov, Mova, Mova1, Movmsk, MovMulti,
  Alu2, Alu3, Sfu,
  Isam, Sam, GetSize,
  Ldg, Stg, Ldl, Stl, Ldp, Stp, Ldib, Stib, GetFiberId, GetWid,
  Bar, Fence,
};

struct Rec {
  Instr in;
  std::string text;
  Op op = Op::Nop;
  std::string name;
  int repeat = 0;
  bool mad_f32 = false;
  bool full = true, dst_half = false;
  Operand dst, src[4];
  int src_type = 0, dst_type = 0, type = 0;
  int64_t imm = 0;  // branch offset, memory offset
  int size = 1, cond = 0;
  int inv1 = 0, comp1 = 0, inv2 = 0, comp2 = 0;
  int brtype = 0;  // 0 br, 1 brao, 2 braa, 4 bany, 5 ball
  int wrmask = 0, tex = 0, shift = 0;
  bool dst_rel = false, d1 = false, a_form = false;
  int multi_src[4] = {}, multi_dst[4] = {}, multi_n = 0, multi_kind = 0;  // swz (0), gat (1), sct (2)
  uint64_t h = 0;            // H(name) for cat2/3/4
  bool sat = false, is_f = false, is_signed = false, is_bit = false;  // cat2/3/4 flags, decoded once
  bool typed = false;  // ldib/stib: storage-image access
  int dims = 1;        // ldib/stib: coordinate dimensions
};

struct Fiber {
  uint32_t r[kFiberRegs] = {};
  uint16_t h[kFiberRegs] = {};  // half registers when the file is not merged
  int32_t a0 = 0, a1 = 0;
  bool p[4] = {};
  std::vector<uint8_t> priv;
};

struct Wave {
  std::vector<Fiber> f;
  // per fiber: its pc, and whether it has not ended (kept out of Fiber, whose registers make it
  // large, so the per-step scan for the lowest pc reads a few cache lines)
  std::vector<uint32_t> pc;
  std::vector<uint8_t> live;
  uint32_t shared[kSharedRegs] = {};
  uint16_t hshared[kSharedRegs] = {};
  int pred_mode = 0;  // 0 none, 1 true, 2 false
  std::vector<bool> pred;
  bool at_barrier = false, done = false;
  uint64_t steps = 0;
};

}  // namespace

struct Simulator::Impl {
  Simulator& S;
  const SimConfig& cfg;
  std::vector<Rec> recs;
  std::vector<uint8_t> local;
  SimStats stats;
  const Rec* cur = nullptr;
  size_t cur_pc = 0;
  std::vector<size_t> at_{}, act_{};  // run_wave scratch: fibers at the pc, and those active
  bool trace_ = false;  // SimConfig::trace_group is the group running now
  size_t trace_lane_ = 0;

  [[noreturn]] void bad(const std::string& why) const {
    fail("ir3 sim: instruction ", cur_pc, " `", cur ? cur->text : std::string("?"), "`: ", why);
  }

  // ------------------------------------------------------------ registers
  // The register accessors are on every operand's path: the r0-r47 case stays inline, the
  // rest (shared, address, predicate registers and errors) is out of line.
  uint32_t rd_full(Wave& w, Fiber& f, int n) {
    if (static_cast<unsigned>(n) < static_cast<unsigned>(kFiberRegs)) [[likely]] return f.r[n];
    return rd_full_other(w, f, n);
  }
  [[gnu::noinline]] uint32_t rd_full_other(Wave& w, Fiber& f, int n) {
    if (n >= kFiberRegs && n < kFiberRegs + kSharedRegs) return w.shared[n - kFiberRegs];
    if (n == kRegA0) return static_cast<uint32_t>(f.a0);
    if (n == kRegA1) return static_cast<uint32_t>(f.a1);
    if (n >= kRegP0 && n < kRegP0 + 4) return f.p[n - kRegP0];
    bad("read of register id " + std::to_string(n));
  }
  void wr_full(Wave& w, Fiber& f, int n, uint32_t v) {
    if (static_cast<unsigned>(n) < static_cast<unsigned>(kFiberRegs)) [[likely]] f.r[n] = v;
    else wr_full_other(w, f, n, v);
  }
  [[gnu::noinline]] void wr_full_other(Wave& w, Fiber& f, int n, uint32_t v) {
    if (n >= 0 && n < kFiberRegs) f.r[n] = v;
    else if (n >= kFiberRegs && n < kFiberRegs + kSharedRegs) w.shared[n - kFiberRegs] = v;
    else if (n == kRegA0) f.a0 = static_cast<int16_t>(v);
    else if (n == kRegA1) f.a1 = static_cast<int16_t>(v);
    else if (n >= kRegP0 && n < kRegP0 + 4) f.p[n - kRegP0] = v != 0;
    else if (n == kRegInvalid) {
    } else bad("write of register id " + std::to_string(n));
  }
  // Merged register file: half regid m is the (m&1) half of full regid m>>1 (shared: from r48).
  int half_to_full(int m, int& shift) {
    shift = (m & 1) * 16;
    if (m < 2 * kFiberRegs && m < kFiberRegs) return m >> 1;
    return kFiberRegs + ((m - kFiberRegs) >> 1);
  }
  uint32_t rd_half(Wave& w, Fiber& f, int m) {
    if (cfg.merged_regs && static_cast<unsigned>(m) < static_cast<unsigned>(kFiberRegs)) [[likely]]
      return (f.r[m >> 1] >> ((m & 1) * 16)) & 0xffff;
    return rd_half_other(w, f, m);
  }
  [[gnu::noinline]] uint32_t rd_half_other(Wave& w, Fiber& f, int m) {
    if (m >= kRegA0) return rd_full(w, f, m) & 0xffff;
    if (!cfg.merged_regs) {  // separate half register file (hr0.x-hr47.w, shared hr48-hr55)
      if (m >= 0 && m < kFiberRegs) return f.h[m];
      if (m >= kFiberRegs && m < kFiberRegs + kSharedRegs) return w.hshared[m - kFiberRegs];
      bad("read of half register id " + std::to_string(m));
    }
    int sh;
    int n = half_to_full(m, sh);
    return (rd_full(w, f, n) >> sh) & 0xffff;
  }
  void wr_half(Wave& w, Fiber& f, int m, uint32_t v) {
    if (cfg.merged_regs && static_cast<unsigned>(m) < static_cast<unsigned>(kFiberRegs)) [[likely]] {
      uint32_t& full = f.r[m >> 1];
      const int sh = (m & 1) * 16;
      full = (full & ~(0xffffu << sh)) | ((v & 0xffff) << sh);
      return;
    }
    wr_half_other(w, f, m, v);
  }
  [[gnu::noinline]] void wr_half_other(Wave& w, Fiber& f, int m, uint32_t v) {
    if (m >= kRegA0) return wr_full(w, f, m, v);
    if (!cfg.merged_regs) {
      if (m >= 0 && m < kFiberRegs) f.h[m] = static_cast<uint16_t>(v);
      else if (m >= kFiberRegs && m < kFiberRegs + kSharedRegs) w.hshared[m - kFiberRegs] = static_cast<uint16_t>(v);
      else if (m != kRegInvalid) bad("write of half register id " + std::to_string(m));
      return;
    }
    int sh;
    int n = half_to_full(m, sh);
    uint32_t old = rd_full(w, f, n);
    wr_full(w, f, n, (old & ~(0xffffu << sh)) | ((v & 0xffff) << sh));
  }
  uint32_t rd_const(int n, bool half) {
    // Half consts use the same merged view as half registers (assumed).
    int idx = half ? n >> 1 : n;
    if (idx < 0 || static_cast<size_t>(idx) >= S.consts.size())
      bad("const c" + std::to_string(idx / 4) + " is beyond the " + std::to_string(S.consts.size()) + " dwords loaded");
    uint32_t v = S.consts[idx];
    return half ? (v >> ((n & 1) * 16)) & 0xffff : v;
  }
  [[gnu::always_inline]] uint32_t rd(Wave& w, Fiber& f, const Operand& o, bool half, int i) {
    int k = o.r ? i : 0;
    if (o.kind == Operand::Reg) [[likely]]
      return half ? rd_half(w, f, o.num + k) : rd_full(w, f, o.num + k);
    return rd_other(w, f, o, half, k);
  }
  [[gnu::noinline]] uint32_t rd_other(Wave& w, Fiber& f, const Operand& o, bool half, int k) {
    switch (o.kind) {
      case Operand::Reg: return half ? rd_half(w, f, o.num + k) : rd_full(w, f, o.num + k);
      case Operand::Const: return rd_const(o.num + k, half);
      case Operand::Imm: return o.imm;
      case Operand::RelReg: {
        int n = f.a0 + o.num + k;
        return half ? rd_half(w, f, n) : rd_full(w, f, n);
      }
      case Operand::RelConst: return rd_const(f.a0 + o.num + k, half);
      case Operand::None: break;
    }
    bad("missing operand");
  }
  [[gnu::always_inline]] void wr(Wave& w, Fiber& f, int n, bool half, uint32_t v) {
    if (half) wr_half(w, f, n, v);
    else wr_full(w, f, n, v);
  }

  // ------------------------------------------------------------ memory
  uint8_t* global(uint64_t addr, uint64_t n) {
    if (addr < kGlobalBase || addr - kGlobalBase + n > S.mem_.size()) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "global access of %llu bytes at 0x%llx is outside allocated memory",
                    static_cast<unsigned long long>(n), static_cast<unsigned long long>(addr));
      bad(buf);
    }
    return S.mem_.data() + (addr - kGlobalBase);
  }
  uint8_t* local_at(int64_t addr, uint64_t n) {
    if (addr < 0 || static_cast<uint64_t>(addr) + n > local.size())
      bad("local memory access at byte " + std::to_string(addr) + " outside " + std::to_string(local.size()) + " bytes");
    return local.data() + addr;
  }
  uint8_t* priv_at(Fiber& f, int64_t addr, uint64_t n) {
    if (addr < 0 || static_cast<uint64_t>(addr) + n > f.priv.size())
      bad("private memory access at byte " + std::to_string(addr) + " outside " + std::to_string(f.priv.size()) + " bytes");
    return f.priv.data() + addr;
  }
  static uint32_t load_elem(const uint8_t* p, int type) {
    uint32_t v = 0;
    std::memcpy(&v, p, type_bytes(type));
    return v;
  }

  // ------------------------------------------------------------ value conversions
  static double to_num(uint32_t v, int t) {
    switch (t) {
      case F16: return half_to_float(static_cast<uint16_t>(v));
      case F32: return f32(v);
      case U16: return v & 0xffff;
      case U32: return v;
      case S16: return static_cast<int16_t>(v);
      case S32: return static_cast<int32_t>(v);
      case U8:
      case U8_32: return v & 0xff;
    }
    return 0;
  }
  uint32_t convert(uint32_t v, int st, int dt, int round) {
    bool sf = st == F16 || st == F32, df = dt == F16 || dt == F32;
    if (!sf && !df) {  // integer -> integer: extend by the source's signedness, truncate
      int64_t x = static_cast<int64_t>(to_num(v, st));
      uint32_t u = static_cast<uint32_t>(x);
      return type_bytes(dt) == 2 ? (u & 0xffff) : type_bytes(dt) == 1 && dt == U8 ? (u & 0xff) : u;
    }
    double x = to_num(v, st);
    if (df) return dt == F32 ? bits(static_cast<float>(x)) : float_to_half(static_cast<float>(x));
    // float -> integer: round toward zero unless ROUND says otherwise (assumed), saturating
    if (std::isnan(x)) x = 0;
    if (round == 1) x = std::nearbyint(x);
    else if (round == 2) x = std::ceil(x);
    else if (round == 3) x = std::floor(x);
    else x = std::trunc(x);
    double lo = 0, hi = 0;
    switch (dt) {
      case U16: hi = 65535; break;
      case S16: lo = -32768; hi = 32767; break;
      case U32: hi = 4294967295.0; break;
      case S32: lo = -2147483648.0; hi = 2147483647.0; break;
      default: hi = 255; break;
    }
    x = std::min(std::max(x, lo), hi);
    int64_t i = static_cast<int64_t>(x);
    uint32_t u = static_cast<uint32_t>(i);
    return type_bytes(dt) == 2 ? (u & 0xffff) : u;
  }

  // float helpers honouring (abs)/(neg) and precision
  float fsrc(uint32_t raw, bool half, int absneg) {
    float x = half ? half_to_float(static_cast<uint16_t>(raw)) : f32(raw);
    if (absneg & 2) x = std::fabs(x);
    if (absneg & 1) x = -x;
    return x;
  }
  static uint32_t fdst(float x, bool half, bool sat) {
    if (sat) x = std::min(std::max(x, 0.0f), 1.0f);
    return half ? float_to_half(x) : bits(x);
  }

  // ------------------------------------------------------------ instruction records
  Rec record(const Instr& in) {
    Rec r;
    r.in = in;
    r.text = print(in);
    r.name = in.name();
    const std::string& n = r.name;
    int cat = static_cast<int>(in.bits >> 61);
    r.repeat = static_cast<int>(in.get_or("REPEAT", 0));
    r.mad_f32 = n == "mad.f32";
    if (cat == 0) {
      r.imm = detail::sign_extend(in.bits & 0xffffffffu, 32);
      r.inv1 = static_cast<int>(in.get_or("INV1", 0));
      r.comp1 = static_cast<int>(in.get_or("COMP1", 0));
      r.inv2 = static_cast<int>(in.get_or("INV2", 0));
      r.comp2 = static_cast<int>(in.get_or("COMP2", 0));
      if (n == "nop" || n == "shps" || n == "shpe") r.op = Op::Nop;
      else if (n == "end") r.op = Op::End;
      else if (n == "br") r.brtype = 0, r.op = Op::Br;
      else if (n == "brao") r.brtype = 1, r.op = Op::Br;
      else if (n == "braa") r.brtype = 2, r.op = Op::Br;
      else if (n == "bany") r.brtype = 4, r.op = Op::Br;
      else if (n == "ball") r.brtype = 5, r.op = Op::Br;
      else if (n == "jump") r.op = Op::Jump;
      else if (n == "kill") r.op = Op::Kill;
      else if (n == "predt") r.op = Op::PredT;
      else if (n == "predf") r.op = Op::PredF;
      else if (n == "prede") r.op = Op::PredE;
      else if (n == "getone") r.op = Op::GetOne;
      else r.op = Op::Nop, r.name = "!" + n;
      return r;
    }
    if (cat == 1) {
      if (n == "movmsk") {
        r.op = Op::Movmsk;
        r.dst.num = regid_of(in.child("DST")->child("DST"));
        return r;
      }
      if (n == "swz" || n == "gat" || n == "sct") {
        // Parallel moves: every source is read before any destination is written.
        r.op = Op::MovMulti;
        r.src_type = static_cast<int>(in.get("SRC_TYPE"));
        r.dst_type = static_cast<int>(in.get("DST_TYPE"));
        const char* srcs[4] = {"SRC0", "SRC1", "SRC2", "SRC3"};
        const char* dsts[4] = {"DST0", "DST1", "DST2", "DST3"};
        int ns = n == "swz" ? 2 : n == "gat" ? 4 : 1, nd = n == "swz" ? 2 : n == "sct" ? 4 : 1;
        for (int k = 0; k < ns; ++k) r.multi_src[k] = regid_of(in.child(srcs[k])->child("REG"));
        for (int k = 0; k < nd; ++k) r.multi_dst[k] = regid_of(in.child(dsts[k])->child("REG"));
        r.multi_n = n == "swz" ? 2 : 4;
        r.multi_kind = n == "swz" ? 0 : n == "gat" ? 1 : 2;
        return r;
      }
      if (n.rfind("mov-", 0) != 0) {
        r.name = "!" + n;
        return r;
      }
      r.src_type = static_cast<int>(in.get("SRC_TYPE"));
      r.dst_type = static_cast<int>(in.get("DST_TYPE"));
      r.imm = in.get("ROUND");
      r.src[0] = sim_operand(in, "SRC", type_half(r.src_type));
      r.src[0].r = in.get_or("SRC_R", 0) != 0;
      const Node* d = in.child("DST");
      r.dst_rel = in.get("DST_REL") != 0;
      if (r.dst_rel) r.dst.num = static_cast<int>(d->value("OFFSET"));
      else r.dst.num = regid_of(d->child("DST"));
      r.op = r.dst.num == kRegA0 && !r.dst_rel ? Op::Mova : r.dst.num == kRegA1 && !r.dst_rel ? Op::Mova1 : Op::Mov;
      return r;
    }
    if (cat == 2 || cat == 3 || cat == 4) {
      r.h = H(n);
      r.sat = in.get_or("SAT", 0) != 0;
      r.is_f = n.size() > 2 && n.compare(n.size() - 2, 2, ".f") == 0;
      r.is_signed = n.find(".s") != std::string::npos;
      r.is_bit = n.size() > 2 && n.compare(n.size() - 2, 2, ".b") == 0;
      r.full = in.get("FULL") != 0;
      r.dst_half = in.get("DST_HALF") != 0;
      r.dst.num = regid_of(in.child("DST"));
      bool half = !r.full;
      if (cat == 2) {
        r.op = Op::Alu2;
        r.src[0] = sim_operand(in, "SRC1", half);
        r.src[0].r = in.get("SRC1_R") && r.repeat;
        if (in.has("SRC2") && in.child("SRC2")) {
          r.src[1] = sim_operand(in, "SRC2", half);
          r.src[1].r = in.get("SRC2_R") && r.repeat;
        }
        r.cond = static_cast<int>(in.get_or("COND", 0));
      } else if (cat == 3) {
        r.op = Op::Alu3;
        if (n == "wmm" || n == "wmm.accu" || n == "dp2acc" || n == "dp4acc") r.name = "!" + n;
        r.src[0] = sim_operand(in, "SRC1", half);
        r.src[1] = sim_operand(in, "SRC2", half);
        r.src[2] = sim_operand(in, "SRC3", half);
        r.src[0].r = in.get("SRC1_R") && r.repeat;
        r.src[1].r = in.get("SRC2_R") && r.repeat;
        r.src[2].r = in.get("SRC3_R") && r.repeat;
        if (in.get_or("SRC1_NEG", 0)) r.src[0].absneg |= 1;
        if (in.get_or("SRC2_NEG", 0)) r.src[1].absneg |= 1;
        if (in.get_or("SRC3_NEG", 0)) r.src[2].absneg |= 1;
      } else {
        r.op = Op::Sfu;
        r.src[0] = sim_operand(in, "SRC", half);
        r.src[0].r = in.get("SRC_R") && r.repeat;
      }
      return r;
    }
    if (cat == 5) {
      if (n != "isam" && n != "sam" && n != "getsize") {
        r.name = "!" + n;
        return r;
      }
      if (in.get("S2EN_BINDLESS")) {
        // s2en, non-bindless, uniform (DESC_MODE 0): the texture/sampler indices come from a
        // half register pair in SRC3 (Mesa writes the same index to both halves (assumed:
        // the first half is read)). Bindless and non-uniform forms are not simulated.
        if (in.get("DESC_MODE") != 0) {
          r.name = "!" + n + ".s2en.bindless";
          return r;
        }
        r.tex = -1;
        r.src[3].kind = Operand::Reg;
        r.src[3].num = static_cast<int>(in.child("SRC3")->value("SRC"));
      }
      r.op = n == "isam" ? Op::Isam : n == "sam" ? Op::Sam : Op::GetSize;
      r.full = in.get("FULL") != 0;
      r.type = static_cast<int>(in.child("TYPE")->value("TYPE"));
      r.dst.num = regid_of(in.child("DST"));
      r.wrmask = static_cast<int>(in.get("WRMASK"));
      if (!in.get("S2EN_BINDLESS")) r.tex = static_cast<int>(in.child("TEX")->value("TEX"));
      const Node* s1 = in.child("SRC1");
      if (s1 && s1->leaf->cases[s1->variant].cond) {
        r.src[0].kind = Operand::Reg;
        r.src[0].num = regid_of(s1->child("SRC"));
      }
      // The coordinate count follows the texture descriptor (2D here), not isam's `.1d` bit:
      // Mesa-compiled a630 code prints `.1d` on 2D texel fetches and passes (x, y) in a pair.
      r.d1 = false;
      return r;
    }
    if (cat == 6) {
      r.type = static_cast<int>(in.get_or("TYPE", U32));
      if (n == "ldg" || n == "ldg.a" || n == "stg" || n == "stg.a") {
        bool st = n[0] == 's';
        r.op = st ? Op::Stg : Op::Ldg;
        r.a_form = n.size() > 3;
        r.size = static_cast<int>(in.get("SIZE"));
        r.src[0] = sim_operand(in, "SRC1", false);
        if (r.a_form) {
          r.src[1] = sim_operand(in, "SRC2", false);
          r.imm = in.get("OFF");
          r.shift = static_cast<int>(in.get("SRC2_SHIFT"));
          r.cond = static_cast<int>(in.get("TYPE_SHIFT"));
        } else {
          r.imm = detail::sign_extend(static_cast<uint64_t>(in.get("OFF")), 13);
        }
        if (st) r.dst = sim_operand(in, "SRC3", false);
        else r.dst = sim_operand(in, "DST", false);
        return r;
      }
      if (n == "ldl" || n == "ldlw" || n == "ldp") {
        r.op = n == "ldp" ? Op::Ldp : Op::Ldl;
        r.size = static_cast<int>(in.get("SIZE"));
        r.src[0] = sim_operand(in, "SRC", false);
        r.dst = sim_operand(in, "DST", false);
        r.imm = detail::sign_extend(static_cast<uint64_t>(in.get("OFF")), 13);
        return r;
      }
      if (n == "stl" || n == "stlw" || n == "stp") {
        r.op = n == "stp" ? Op::Stp : Op::Stl;
        r.size = static_cast<int>(in.get("SIZE"));
        r.src[0] = sim_operand(in, "DST", false);  // address register
        r.dst = sim_operand(in, "SRC", false);     // value register
        r.imm = detail::sign_extend(static_cast<uint64_t>(in.get("OFF")), 13);
        return r;
      }
      if (n == "ldib.b" || n == "stib.b") {
        r.op = n[0] == 'l' ? Op::Ldib : Op::Stib;
        r.size = static_cast<int>(in.get("TYPE_SIZE"));
        r.src[0] = sim_operand(in, "SRC1", false);  // data
        r.src[1] = sim_operand(in, "SRC2", false);  // coordinate
        r.src[2] = sim_operand(in, "SSBO", false);  // descriptor index
        r.imm = in.get("OFFSET");
        r.typed = in.child("TYPED") ? in.child("TYPED")->value("TYPED") != 0 : in.get_or("TYPED", 0) != 0;
        r.dims = static_cast<int>(in.get_or("D", 1));
        return r;
      }
      if (n == "getfiberid" || n == "getwid") {
        r.op = n == "getwid" ? Op::GetWid : Op::GetFiberId;
        r.dst = sim_operand(in, "DST", false);
        return r;
      }
      r.name = "!" + n;
      return r;
    }
    if (cat == 7) {
      r.op = n == "bar" ? Op::Bar : Op::Fence;
      return r;
    }
    r.name = "!" + n;
    return r;
  }

  // ------------------------------------------------------------ execution
  bool lane_pred(const Wave& w, size_t i) const {
    if (w.pred_mode == 0) return true;
    return w.pred_mode == 1 ? w.pred[i] : !w.pred[i];
  }

  void alu2(Wave& w, Fiber& f, const Rec& r, int i) {
    const uint64_t h = r.h;
    bool half = !r.full;
    bool sat = r.sat;
    uint32_t a = rd(w, f, r.src[0], half, i);
    uint32_t b = r.src[1].kind != Operand::None ? rd(w, f, r.src[1], half, i) : 0;
    int dst = r.dst.num + i;
    bool dh = r.dst_half;
    bool is_f = r.is_f;
    if (is_f) {
      float x = fsrc(a, half, r.src[0].absneg), y = fsrc(b, half, r.src[1].absneg);
      if (h == H("add.f")) return wr(w, f, dst, dh, fdst(x + y, dh, sat));
      if (h == H("mul.f")) return wr(w, f, dst, dh, fdst(x * y, dh, sat));
      if (h == H("min.f")) return wr(w, f, dst, dh, fdst(std::fmin(x, y), dh, sat));
      if (h == H("max.f")) return wr(w, f, dst, dh, fdst(std::fmax(x, y), dh, sat));
      if (h == H("sign.f")) return wr(w, f, dst, dh, fdst(x > 0 ? 1.0f : x < 0 ? -1.0f : 0.0f, dh, sat));
      if (h == H("absneg.f")) return wr(w, f, dst, dh, fdst(x, dh, sat));
      if (h == H("floor.f")) return wr(w, f, dst, dh, fdst(std::floor(x), dh, sat));
      if (h == H("ceil.f")) return wr(w, f, dst, dh, fdst(std::ceil(x), dh, sat));
      if (h == H("rndne.f")) return wr(w, f, dst, dh, fdst(std::nearbyint(x), dh, sat));
      if (h == H("rndaz.f")) return wr(w, f, dst, dh, fdst(std::round(x), dh, sat));
      if (h == H("trunc.f")) return wr(w, f, dst, dh, fdst(std::trunc(x), dh, sat));
      if (h == H("cmps.f") || h == H("cmpv.f")) {
        bool c = cmp(r.cond, x < y, x == y, x > y);
        return wr(w, f, dst, dh, c ? (h == H("cmps.f") ? 1u : 0xffffffffu) : 0u);
      }
    } else {
      // integers: 16-bit sources are sign/zero extended by the op's signedness
      bool s = r.is_signed;
      auto ext = [&](uint32_t v, int absneg) -> int64_t {
        int64_t x = half ? (s ? static_cast<int64_t>(static_cast<int16_t>(v)) : static_cast<int64_t>(v & 0xffff))
                         : (s ? static_cast<int64_t>(static_cast<int32_t>(v)) : static_cast<int64_t>(v));
        bool bit = r.is_bit;
        if (bit && (absneg & 1)) return half ? (~x & 0xffff) : (~x & 0xffffffffll);
        if (absneg & 2) x = x < 0 ? -x : x;
        if (absneg & 1) x = -x;
        return x;
      };
      int64_t x = ext(a, r.src[0].absneg), y = ext(b, r.src[1].absneg);
      uint32_t mask = dh ? 0xffffu : 0xffffffffu;
      auto put = [&](int64_t v) { wr(w, f, dst, dh, static_cast<uint32_t>(v) & mask); };
      int width = half ? 16 : 32;
      uint32_t ux = static_cast<uint32_t>(x), uy = static_cast<uint32_t>(y);
      if (h == H("add.u") || h == H("add.s")) return put(x + y);
      if (h == H("sub.u") || h == H("sub.s")) return put(x - y);
      if (h == H("min.u") || h == H("min.s")) return put(std::min(x, y));
      if (h == H("max.u") || h == H("max.s")) return put(std::max(x, y));
      if (h == H("absneg.s")) return put(x);
      if (h == H("and.b")) return put(x & y);
      if (h == H("or.b")) return put(x | y);
      if (h == H("xor.b")) return put(x ^ y);
      if (h == H("not.b")) return put(~x);
      if (h == H("shl.b")) return put(static_cast<int64_t>(static_cast<uint64_t>(ux) << (uy & (width - 1))));
      if (h == H("shr.b")) return put((half ? (ux & 0xffff) : ux) >> (uy & (width - 1)));
      if (h == H("ashr.b")) {
        int64_t sx = half ? static_cast<int16_t>(ux) : static_cast<int32_t>(ux);
        return put(sx >> (uy & (width - 1)));
      }
      if (h == H("mul.u24")) return put(static_cast<int64_t>((ux & 0xffffff)) * (uy & 0xffffff));
      if (h == H("mul.s24")) return put(detail::sign_extend(ux, 24) * detail::sign_extend(uy, 24));
      // low 16 bits times low 16 bits, full 32-bit product (the first step of Mesa's imul lowering)
      if (h == H("mull.u")) return put(static_cast<int64_t>(static_cast<uint64_t>(ux & 0xffff) * (uy & 0xffff)));
      if (h == H("getbit.b")) return put((ux >> (uy & 31)) & 1);
      if (h == H("bfrev.b")) {
        uint32_t v = 0;
        for (int k = 0; k < width; ++k)
          if (ux & (1u << k)) v |= 1u << (width - 1 - k);
        return put(v);
      }
      if (h == H("clz.b")) {
        uint32_t v = half ? (ux & 0xffff) : ux;
        return put(v ? __builtin_clz(v) - (32 - width) : width);
      }
      if (h == H("cbits.b")) return put(__builtin_popcount(half ? (ux & 0xffff) : ux));
      if (h == H("cmps.u") || h == H("cmps.s") || h == H("cmpv.u") || h == H("cmpv.s")) {
        bool c = cmp(r.cond, x < y, x == y, x > y);
        return wr(w, f, dst, dh, c ? (h == H("cmps.u") || h == H("cmps.s") ? 1u : 0xffffffffu) & mask : 0u);
      }
    }
    bad("cat2 opcode is not simulated");
  }

  static bool cmp(int cond, bool lt, bool eq, bool gt) {
    switch (cond) {
      case 0: return lt;
      case 1: return lt || eq;
      case 2: return gt;
      case 3: return gt || eq;
      case 4: return eq;
      case 5: return !eq;
    }
    return false;
  }

  void alu3(Wave& w, Fiber& f, const Rec& r, int i) {
    const uint64_t h = r.h;
    bool half = !r.full;
    bool dh = r.dst_half;
    bool sat = r.sat;
    // src2 is always a GPR; its precision follows the opcode like the others
    uint32_t a = rd(w, f, r.src[0], half, i), b = rd(w, f, r.src[1], half, i), c = rd(w, f, r.src[2], half, i);
    int dst = r.dst.num + i;
    if (h == H("mad.f32") || h == H("mad.f16")) {
      // multiply, round, add, round (two roundings; fused-or-not is unverified (assumed))
      float x = fsrc(a, half, r.src[0].absneg), y = fsrc(b, half, r.src[1].absneg), z = fsrc(c, half, r.src[2].absneg);
      float p = x * y;
      if (half) p = half_to_float(float_to_half(p));
      return wr(w, f, dst, dh, fdst(p + z, dh, sat));
    }
    if (h == H("sel.b32") || h == H("sel.b16") || h == H("sel.s32") || h == H("sel.s16")) {
      uint32_t cond = half ? (b & 0xffff) : b;
      return wr(w, f, dst, dh, cond != 0 ? a : c);
    }
    if (h == H("sel.f32") || h == H("sel.f16")) {
      float cond = fsrc(b, half, 0);
      return wr(w, f, dst, dh, cond != 0.0f ? a : c);  // (assumed) nonzero selects src1
    }
    auto neg = [](int64_t v, int an) { return (an & 1) ? -v : v; };
    if (h == H("mad.u24") || h == H("mad.s24")) {
      int64_t x = h == H("mad.u24") ? (a & 0xffffff) : detail::sign_extend(a, 24);
      int64_t y = h == H("mad.u24") ? (b & 0xffffff) : detail::sign_extend(b, 24);
      return wr(w, f, dst, dh, static_cast<uint32_t>(neg(x, r.src[0].absneg) * neg(y, r.src[1].absneg) +
                                                    neg(static_cast<int32_t>(c), r.src[2].absneg)));
    }
    if (h == H("madsh.m16")) {
      // Mesa lowers a 32-bit imul to mull.u + two madsh.m16: (src1.hi16 * src2.lo16) << 16 + src3
      return wr(w, f, dst, dh, static_cast<uint32_t>(((a >> 16) * (b & 0xffff)) << 16) + c);
    }
    if (h == H("madsh.u16")) return wr(w, f, dst, dh, static_cast<uint32_t>(((a & 0xffff) * (b & 0xffff)) >> 16) + c);
    if (h == H("mad.u16") || h == H("mad.s16")) {
      int64_t x = h == H("mad.u16") ? (a & 0xffff) : static_cast<int16_t>(a);
      int64_t y = h == H("mad.u16") ? (b & 0xffff) : static_cast<int16_t>(b);
      return wr(w, f, dst, dh, static_cast<uint32_t>(x * y + static_cast<int64_t>(c)) & (dh ? 0xffffu : ~0u));
    }
    uint32_t m = dh ? 0xffffu : 0xffffffffu;
    int width = half ? 16 : 32;
    uint32_t s1 = a & (width - 1);
    if (h == H("shrm")) return wr(w, f, dst, dh, ((b & m) >> s1) & c & m);
    if (h == H("shlm")) return wr(w, f, dst, dh, (b << s1) & c & m);
    if (h == H("shrg")) return wr(w, f, dst, dh, (((b & m) >> s1) | c) & m);
    if (h == H("shlg")) return wr(w, f, dst, dh, ((b << s1) | c) & m);
    if (h == H("andg")) return wr(w, f, dst, dh, ((b & a) | c) & m);
    bad("cat3 opcode is not simulated");
  }

  void sfu(Wave& w, Fiber& f, const Rec& r, int i) {
    const uint64_t h = r.h;
    bool half = !r.full;
    float x = fsrc(rd(w, f, r.src[0], half, i), half, r.src[0].absneg);
    float y;
    if (h == H("rcp")) y = 1.0f / x;
    else if (h == H("rsq") || h == H("hrsq")) y = 1.0f / std::sqrt(x);
    else if (h == H("log2") || h == H("hlog2")) y = std::log2(x);
    else if (h == H("exp2") || h == H("hexp2")) y = std::exp2(x);
    else if (h == H("sin")) y = std::sin(x);
    else if (h == H("cos")) y = std::cos(x);
    else if (h == H("sqrt")) y = std::sqrt(x);
    else bad("cat4 opcode is not simulated");
    wr(w, f, r.dst.num + i, r.dst_half, fdst(y, r.dst_half, r.sat));
  }

  void texel(const SimImage& img, int x, int y, float out_f[4], uint32_t out_u[4]) {
    for (int c = 0; c < 4; ++c) out_f[c] = 0, out_u[c] = 0;
    if (x < 0 || y < 0 || x >= img.width || y >= img.height) return;  // zero border
    const uint8_t* p = texel_ptr(img, x, y);
    switch (img.format) {
      case SimImage::Format::RGBA32F:
        for (int c = 0; c < 4; ++c) std::memcpy(&out_f[c], p + 4 * c, 4);
        break;
      case SimImage::Format::RGBA16F:
        for (int c = 0; c < 4; ++c) {
          uint16_t h;
          std::memcpy(&h, p + 2 * c, 2);
          out_f[c] = half_to_float(h);
        }
        break;
      case SimImage::Format::R32F:
        std::memcpy(&out_f[0], p, 4);
        out_f[3] = 1.0f;
        break;
      case SimImage::Format::RGBA32UI:
        for (int c = 0; c < 4; ++c) std::memcpy(&out_u[c], p + 4 * c, 4);
        for (int c = 0; c < 4; ++c) out_f[c] = static_cast<float>(out_u[c]);
        return;
    }
    for (int c = 0; c < 4; ++c) out_u[c] = bits(out_f[c]);
  }

  // Texel (x, y) of an image, in its own data or in global memory (in range: checked by callers).
  uint8_t* texel_ptr(const SimImage& img, int x, int y) {
    uint64_t tb = static_cast<uint64_t>(img.texel_bytes());
    if (img.address == 0) {
      uint64_t off = (static_cast<uint64_t>(y) * img.width + x) * tb;
      if (off + tb > img.data.size()) bad("image texel beyond its data");
      return const_cast<uint8_t*>(img.data.data()) + off;
    }
    uint64_t pitch = img.pitch ? img.pitch : img.width * tb;
    return global(img.address + static_cast<uint64_t>(y) * pitch + static_cast<uint64_t>(x) * tb, tb);
  }

  // Reports an access to global memory to Simulator::on_access (if set).
  void note(uint64_t addr, uint64_t n, Simulator::Access kind) {
    if (S.on_access) S.on_access(addr, n, kind);
  }
  void note_texel(const SimImage& img, int x, int y, Simulator::Access kind) {
    if (!S.on_access || img.address == 0 || x < 0 || y < 0 || x >= img.width || y >= img.height) return;
    uint64_t tb = static_cast<uint64_t>(img.texel_bytes());
    uint64_t pitch = img.pitch ? img.pitch : img.width * tb;
    S.on_access(img.address + static_cast<uint64_t>(y) * pitch + static_cast<uint64_t>(x) * tb, tb, kind);
  }

  const SimImage& image(int t) {
    if (t < 0 || static_cast<size_t>(t) >= S.images.size()) bad("texture t#" + std::to_string(t) + " is not bound");
    return S.images[t];
  }

  void tex(Wave& w, Fiber& f, const Rec& r) {
    const SimImage& img = image(r.tex >= 0 ? r.tex : static_cast<int>(rd_half(w, f, r.src[3].num)));
    bool half_dst = type_half(r.type);
    uint32_t vals[4];
    if (r.op == Op::GetSize) {
      vals[0] = img.width, vals[1] = img.height, vals[2] = 1, vals[3] = 1;
    } else {
      float tf[4];
      uint32_t tu[4];
      int x, y;
      if (r.op == Op::Isam) {
        x = static_cast<int32_t>(rd(w, f, r.src[0], !r.full, 0));
        Operand o1 = r.src[0];
        o1.num += 1;
        y = r.d1 ? 0 : static_cast<int32_t>(rd(w, f, o1, !r.full, 0));
        if (!r.full) x = static_cast<int16_t>(x), y = static_cast<int16_t>(y);
      } else {
        // sam: normalized coordinates, nearest filtering, zero border (assumed sampler state)
        Operand o1 = r.src[0];
        o1.num += 1;
        float u = fsrc(rd(w, f, r.src[0], !r.full, 0), !r.full, 0);
        float v = fsrc(rd(w, f, o1, !r.full, 0), !r.full, 0);
        x = static_cast<int>(std::floor(u * img.width));
        y = static_cast<int>(std::floor(v * img.height));
      }
      texel(img, x, y, tf, tu);
      note_texel(img, x, y, Simulator::Access::TextureRead);
      for (int c = 0; c < 4; ++c) {
        if (r.type == F32) vals[c] = bits(tf[c]);
        else if (r.type == F16) vals[c] = float_to_half(tf[c]);
        else vals[c] = img.format == SimImage::Format::RGBA32UI ? tu[c] : static_cast<uint32_t>(static_cast<int32_t>(tf[c]));
      }
    }
    int k = 0;
    for (int c = 0; c < 4; ++c)
      if (r.wrmask & (1 << c)) wr(w, f, r.dst.num + k++, half_dst, vals[c]);
  }

  void mem(Wave& w, Fiber& f, const Rec& r, size_t lane) {
    int tb = type_bytes(r.type);
    bool half = type_half(r.type);
    switch (r.op) {
      case Op::Ldg:
      case Op::Stg: {
        uint64_t base = rd_full(w, f, r.src[0].num) | (static_cast<uint64_t>(rd_full(w, f, r.src[0].num + 1)) << 32);
        uint64_t addr;
        if (r.a_form) {
          uint64_t idx = rd_full(w, f, r.src[1].num);
          addr = base + (((idx << r.shift) + static_cast<uint64_t>(r.imm)) << r.cond);
        } else {
          addr = base + static_cast<uint64_t>(r.imm);
        }
        uint8_t* p = global(addr, static_cast<uint64_t>(tb) * r.size);
        note(addr, static_cast<uint64_t>(tb) * r.size, r.op == Op::Ldg ? Simulator::Access::Read : Simulator::Access::Write);
        for (int c = 0; c < r.size; ++c) {
          if (r.op == Op::Ldg) wr(w, f, r.dst.num + c, half, load_elem(p + c * tb, r.type));
          else {
            uint32_t v = half ? rd_half(w, f, r.dst.num + c) : rd_full(w, f, r.dst.num + c);
            std::memcpy(p + c * tb, &v, tb);
          }
        }
        return;
      }
      case Op::Ldl:
      case Op::Stl:
      case Op::Ldp:
      case Op::Stp: {
        int64_t addr = static_cast<int32_t>(rd_full(w, f, r.src[0].num)) + r.imm;
        bool priv = r.op == Op::Ldp || r.op == Op::Stp;
        uint8_t* p = priv ? priv_at(f, addr, static_cast<uint64_t>(tb) * r.size) : local_at(addr, static_cast<uint64_t>(tb) * r.size);
        bool load = r.op == Op::Ldl || r.op == Op::Ldp;
        for (int c = 0; c < r.size; ++c) {
          if (load) wr(w, f, r.dst.num + c, half, load_elem(p + c * tb, r.type));
          else {
            uint32_t v = half ? rd_half(w, f, r.dst.num + c) : rd_full(w, f, r.dst.num + c);
            std::memcpy(p + c * tb, &v, tb);
          }
        }
        return;
      }
      case Op::Ldib:
      case Op::Stib: {
        uint32_t idx = r.src[2].kind == Operand::Imm ? r.src[2].imm : rd_full(w, f, r.src[2].num);
        if (idx >= S.ibos.size()) bad("IBO " + std::to_string(idx) + " is not bound");
        const SimBuffer& b = S.ibos[idx];
        if (r.typed) return typed_ibo(w, f, r, b);
        // 1d element index in units of the type (SSBO dword indices for 32-bit types)
        uint64_t el = static_cast<uint64_t>(rd_full(w, f, r.src[1].num)) + static_cast<uint64_t>(r.imm);
        uint64_t off = el * tb;
        if (off + static_cast<uint64_t>(tb) * r.size > b.size) bad("IBO " + std::to_string(idx) + " access beyond its size");
        uint8_t* p = global(b.address + off, static_cast<uint64_t>(tb) * r.size);
        note(b.address + off, static_cast<uint64_t>(tb) * r.size,
             r.op == Op::Ldib ? Simulator::Access::Read : Simulator::Access::Write);
        for (int c = 0; c < r.size; ++c) {
          if (r.op == Op::Ldib) wr(w, f, r.src[0].num + c, half, load_elem(p + c * tb, r.type));
          else {
            uint32_t v = half ? rd_half(w, f, r.src[0].num + c) : rd_full(w, f, r.src[0].num + c);
            std::memcpy(p + c * tb, &v, tb);
          }
        }
        return;
      }
      case Op::GetFiberId:
        return wr(w, f, r.dst.num, half, static_cast<uint32_t>(lane));
      default: break;
    }
  }

  // Typed (storage-image) IBO access: coordinates x (and y for 2d) from consecutive registers of
  // src2; values are converted between the instruction's type and the image format. Reads out
  // of bounds give 0, writes out of bounds are dropped (as for robust image access (assumed)).
  void typed_ibo(Wave& w, Fiber& f, const Rec& r, const SimBuffer& b) {
    if (!b.is_image) bad("typed access to an IBO that is not bound as an image");
    const SimImage& img = b.image;
    int x = static_cast<int32_t>(rd_full(w, f, r.src[1].num));
    int y = r.dims >= 2 ? static_cast<int32_t>(rd_full(w, f, r.src[1].num + 1)) : 0;
    bool half = type_half(r.type);
    bool inside = x >= 0 && y >= 0 && x < img.width && y < img.height;
    SimImage view = img;
    view.address = b.address;
    int comps = img.format == SimImage::Format::R32F ? 1 : 4;
    if (inside && static_cast<uint64_t>(y) * (img.pitch ? img.pitch : img.width * img.texel_bytes()) +
                          static_cast<uint64_t>(x + 1) * img.texel_bytes() > b.size)
      bad("typed IBO access beyond the bound range");
    if (r.op == Op::Ldib) {
      float tf[4];
      uint32_t tu[4];
      if (inside) texel(view, x, y, tf, tu);
      if (inside) note_texel(view, x, y, Simulator::Access::Read);
      else for (int c = 0; c < 4; ++c) tf[c] = 0, tu[c] = 0;
      for (int c = 0; c < r.size; ++c) {
        uint32_t v = r.type == F32 ? bits(tf[c]) : r.type == F16 ? float_to_half(tf[c]) : tu[c];
        wr(w, f, r.src[0].num + c, half, v);
      }
      return;
    }
    if (!inside) return;
    uint8_t* p = texel_ptr(view, x, y);
    note_texel(view, x, y, Simulator::Access::Write);
    for (int c = 0; c < comps && c < r.size; ++c) {
      uint32_t raw = half ? rd_half(w, f, r.src[0].num + c) : rd_full(w, f, r.src[0].num + c);
      float v = r.type == F32 ? f32(raw) : r.type == F16 ? half_to_float(static_cast<uint16_t>(raw))
                                                          : static_cast<float>(static_cast<int32_t>(raw));
      switch (img.format) {
        case SimImage::Format::RGBA32F:
        case SimImage::Format::R32F: std::memcpy(p + 4 * c, &v, 4); break;
        case SimImage::Format::RGBA16F: {
          uint16_t h = float_to_half(v);
          std::memcpy(p + 2 * c, &h, 2);
          break;
        }
        case SimImage::Format::RGBA32UI: std::memcpy(p + 4 * c, &raw, 4); break;
      }
    }
  }

  // Runs one wave until it ends or reaches a barrier.
  void run_wave(Wave& w, size_t wave_index) {
    w.at_barrier = false;
    for (;;) {
      // the live fibers at the lowest pc, in lane order (one pass)
      std::vector<size_t>& at = at_;  // reused across steps (no allocation per instruction)
      std::vector<size_t>& act = act_;
      at.clear();
      uint32_t pc = UINT32_MAX;
      for (size_t i = 0; i < w.f.size(); ++i) {
        if (!w.live[i] || w.pc[i] > pc) continue;
        if (w.pc[i] < pc) pc = w.pc[i], at.clear();
        at.push_back(i);
      }
      if (pc == UINT32_MAX) {
        w.done = true;
        return;
      }
      cur_pc = pc;
      cur = nullptr;
      if (pc >= recs.size()) bad("execution ran past the end of the program (missing end?)");
      const Rec& r = recs[pc];
      cur = &r;
      if (++w.steps > cfg.max_steps) bad("more than " + std::to_string(cfg.max_steps) + " steps: endless loop?");
      ++stats.instructions;
      if (r.mad_f32) {
        stats.mad_f32 += static_cast<uint64_t>(r.repeat) + 1;
        if (r.repeat > 0) stats.mad_f32_packed += static_cast<uint64_t>(r.repeat) + 1;
      }
      if (!r.name.empty() && r.name[0] == '!') bad("`" + r.name.substr(1) + "` is not simulated");
      act.clear();
      for (size_t i : at)
        if (lane_pred(w, i)) act.push_back(i);
      stats.fiber_instructions += act.size();
      for (size_t i : at) w.pc[i] = pc + 1;
      switch (r.op) {
        case Op::Nop:
        case Op::Fence: break;
        case Op::End:
          for (size_t i : at) w.live[i] = false;
          break;
        case Op::Kill:
          for (size_t i : act)
            if (w.f[i].p[r.comp1] != static_cast<bool>(r.inv1)) w.live[i] = false;
          break;
        case Op::Jump:
          for (size_t i : at) w.pc[i] = static_cast<uint32_t>(pc + r.imm);
          break;
        case Op::Br: {
          auto c1 = [&](size_t i) { return w.f[i].p[r.comp1] != static_cast<bool>(r.inv1); };
          auto c2 = [&](size_t i) { return w.f[i].p[r.comp2] != static_cast<bool>(r.inv2); };
          if (r.brtype == 4 || r.brtype == 5) {
            bool any = false, all = true;
            for (size_t i : act) any |= c1(i), all &= c1(i);
            bool take = r.brtype == 4 ? any : all;
            if (take)
              for (size_t i : at) w.pc[i] = static_cast<uint32_t>(pc + r.imm);
          } else {
            for (size_t i : act) {
              bool t = r.brtype == 0 ? c1(i) : r.brtype == 1 ? (c1(i) || c2(i)) : (c1(i) && c2(i));
              if (t) w.pc[i] = static_cast<uint32_t>(pc + r.imm);
            }
          }
          break;
        }
        case Op::GetOne:
          // the first active fiber takes the branch, the others fall through (assumed)
          if (!act.empty()) w.pc[act.front()] = static_cast<uint32_t>(pc + r.imm);
          break;
        case Op::PredT:
        case Op::PredF:
          w.pred.assign(w.f.size(), false);
          for (size_t i = 0; i < w.f.size(); ++i) w.pred[i] = w.f[i].p[0];
          w.pred_mode = r.op == Op::PredT ? 1 : 2;
          break;
        case Op::PredE: w.pred_mode = 0; break;
        case Op::Bar:
          ++stats.barriers;
          w.at_barrier = true;
          return;
        case Op::Movmsk:
          for (size_t i : act) {
            for (int k = 0; k <= r.repeat; ++k) {
              uint32_t m = 0;
              for (size_t j = 0; j < 32 && k * 32 + j < w.f.size(); ++j)
                if (w.live[k * 32 + j] && w.pc[k * 32 + j] == pc + 1) m |= 1u << j;
              wr(w, w.f[i], r.dst.num + k, false, m);
            }
          }
          break;
        case Op::Alu2:  // exec_lane's cases, with the dispatch out of the lane loop
          for (size_t i : act)
            for (int k = 0; k <= r.repeat; ++k) alu2(w, w.f[i], r, k);
          break;
        case Op::Alu3:
          for (size_t i : act)
            for (int k = 0; k <= r.repeat; ++k) alu3(w, w.f[i], r, k);
          break;
        default:
          for (size_t i : act) exec_lane(w, w.f[i], r, i);
          break;
      }
      if (trace_ && wave_index == 0 && !w.f.empty()) {
        const Fiber& f0 = w.f[trace_lane_];
        std::fprintf(stderr, "[trace] %4u %-50s r%d = %08x %08x %08x %08x p0=%d act=%zu\n", pc, r.text.c_str(), r.dst.num / 4,
                     r.dst.num / 4 < 48 ? f0.r[(r.dst.num / 4) * 4] : 0, r.dst.num / 4 < 48 ? f0.r[(r.dst.num / 4) * 4 + 1] : 0,
                     r.dst.num / 4 < 48 ? f0.r[(r.dst.num / 4) * 4 + 2] : 0, r.dst.num / 4 < 48 ? f0.r[(r.dst.num / 4) * 4 + 3] : 0,
                     (int)f0.p[0], act.size());
      }
      (void)wave_index;
    }
  }

  void exec_lane(Wave& w, Fiber& f, const Rec& r, size_t lane) {
    switch (r.op) {
      case Op::Mov:
      case Op::Mova:
      case Op::Mova1:
        for (int i = 0; i <= r.repeat; ++i) {
          uint32_t v = rd(w, f, r.src[0], type_half(r.src_type), i);
          uint32_t out = convert(v, r.src_type, r.dst_type, static_cast<int>(r.imm));
          if (r.op == Op::Mova) f.a0 = static_cast<int16_t>(out);
          else if (r.op == Op::Mova1) f.a1 = static_cast<int16_t>(out);
          else {
            int d = (r.dst_rel ? f.a0 + r.dst.num : r.dst.num) + i;
            wr(w, f, d, type_half(r.dst_type), out);
          }
        }
        return;
      case Op::MovMulti: {
        bool sh = type_half(r.src_type), dh = type_half(r.dst_type);
        uint32_t v[4];
        int ns = r.multi_kind == 0 ? 2 : r.multi_kind == 1 ? 4 : 1;
        for (int k = 0; k < ns; ++k)
          v[k] = convert(sh ? rd_half(w, f, r.multi_src[k]) : rd_full(w, f, r.multi_src[k]), r.src_type, r.dst_type, 0);
        if (r.multi_kind == 0) {
          wr(w, f, r.multi_dst[0], dh, v[0]);
          wr(w, f, r.multi_dst[1], dh, v[1]);
        } else if (r.multi_kind == 1) {
          for (int k = 0; k < 4; ++k) wr(w, f, r.multi_dst[0] + k, dh, v[k]);
        } else {
          for (int k = 0; k < 4; ++k) wr(w, f, r.multi_dst[k], dh, convert(sh ? rd_half(w, f, r.multi_src[0] + k) : rd_full(w, f, r.multi_src[0] + k), r.src_type, r.dst_type, 0));
        }
        return;
      }
      case Op::Alu2:
        for (int i = 0; i <= r.repeat; ++i) alu2(w, f, r, i);
        return;
      case Op::Alu3:
        for (int i = 0; i <= r.repeat; ++i) alu3(w, f, r, i);
        return;
      case Op::Sfu:
        for (int i = 0; i <= r.repeat; ++i) sfu(w, f, r, i);
        return;
      case Op::Isam:
      case Op::Sam:
      case Op::GetSize: return tex(w, f, r);
      case Op::GetWid: return wr(w, f, r.dst.num, false, 0);
      default: return mem(w, f, r, lane);
    }
  }
};

int SimImage::texel_bytes() const {
  switch (format) {
    case Format::RGBA32F:
    case Format::RGBA32UI: return 16;
    case Format::RGBA16F: return 8;
    case Format::R32F: return 4;
  }
  return 16;
}

Simulator::Simulator(std::vector<uint64_t> program, int gen) : gen_(gen) { set_program(program); }

void Simulator::set_program(const std::vector<uint64_t>& program) {
  prog_.clear();
  for (size_t i = 0; i < program.size(); ++i) {
    Instr in = decode(program[i], gen_);
    OPV_CHECK(in.valid(), "ir3 sim: instruction ", i, " (0x", std::hex, program[i], std::dec, ") does not decode");
    prog_.push_back(in);
  }
}

uint64_t Simulator::alloc(uint64_t bytes) {
  uint64_t at = (mem_.size() + 255) & ~uint64_t(255);
  OPV_CHECK(at + bytes < (uint64_t(1) << 32), "ir3 sim: out of simulated global memory");
  mem_.resize(at + bytes);
  return kGlobalBase + at;
}

void Simulator::write(uint64_t addr, const void* src, uint64_t n) {
  OPV_CHECK(addr >= kGlobalBase && addr - kGlobalBase + n <= mem_.size(), "ir3 sim: host write of ", n,
            " bytes at 0x", std::hex, addr, " is outside allocated memory");
  std::memcpy(mem_.data() + (addr - kGlobalBase), src, n);
}

void Simulator::read(uint64_t addr, void* dst, uint64_t n) const {
  OPV_CHECK(addr >= kGlobalBase && addr - kGlobalBase + n <= mem_.size(), "ir3 sim: host read of ", n,
            " bytes at 0x", std::hex, addr, " is outside allocated memory");
  std::memcpy(dst, mem_.data() + (addr - kGlobalBase), n);
}

void Simulator::set_const_u64(int regid, uint64_t v) {
  if (consts.size() < static_cast<size_t>(regid + 2)) consts.resize(regid + 2);
  consts[regid] = static_cast<uint32_t>(v);
  consts[regid + 1] = static_cast<uint32_t>(v >> 32);
}

SimStats Simulator::run(const SimConfig& cfg) {
  OPV_CHECK(cfg.wave_size > 0 && cfg.local_size[0] * cfg.local_size[1] * cfg.local_size[2] > 0,
            "ir3 sim: empty work-group");
  auto id_reg_ok = [](int r) { return r < 0 || r == kRegInvalid || (r + 2 < kFiberRegs) || (r >= kFiberRegs && r + 2 < kFiberRegs + kSharedRegs); };
  OPV_CHECK(id_reg_ok(cfg.local_id_reg) && id_reg_ok(cfg.group_id_reg), "ir3 sim: id registers ", cfg.local_id_reg, "/",
            cfg.group_id_reg, " are not three consecutive registers of r0-r47 or r48-r55");
  Impl im{*this, cfg, {}, {}, {}};
  for (const Instr& in : prog_) im.recs.push_back(im.record(in));
  uint32_t group_threads = cfg.local_size[0] * cfg.local_size[1] * cfg.local_size[2];
  size_t nwaves = (group_threads + cfg.wave_size - 1) / cfg.wave_size;
  for (uint32_t gz = 0; gz < cfg.num_groups[2]; ++gz)
    for (uint32_t gy = 0; gy < cfg.num_groups[1]; ++gy)
      for (uint32_t gx = 0; gx < cfg.num_groups[0]; ++gx) {
        im.local.assign(cfg.local_mem_bytes, 0);
        im.trace_ = cfg.trace_group >= 0 && cfg.trace_lane >= 0 && cfg.trace_lane < cfg.wave_size &&
                    static_cast<uint64_t>(cfg.trace_group) == gx + uint64_t(cfg.num_groups[0]) * (gy + uint64_t(cfg.num_groups[1]) * gz);
        im.trace_lane_ = static_cast<size_t>(std::max(0, cfg.trace_lane));
        std::vector<Wave> waves(nwaves);
        for (size_t wi = 0; wi < nwaves; ++wi) {
          Wave& w = waves[wi];
          w.f.resize(cfg.wave_size);
          w.pc.assign(cfg.wave_size, 0);
          w.live.assign(cfg.wave_size, 0);
          for (int l = 0; l < cfg.wave_size; ++l) {
            Fiber& f = w.f[l];
            uint32_t li = static_cast<uint32_t>(wi * cfg.wave_size + l);
            w.live[l] = li < group_threads;
            if (!w.live[l]) continue;
            f.priv.assign(cfg.private_mem_bytes, 0);
            uint32_t ids[3] = {li % cfg.local_size[0], (li / cfg.local_size[0]) % cfg.local_size[1],
                               li / (cfg.local_size[0] * cfg.local_size[1])};
            uint32_t gid[3] = {gx, gy, gz};
            for (int c = 0; c < 3; ++c) {
              if (cfg.local_id_reg >= 0) im.wr_full(w, f, cfg.local_id_reg + c, ids[c]);
              if (cfg.group_id_reg >= 0) im.wr_full(w, f, cfg.group_id_reg + c, gid[c]);
            }
          }
          ++im.stats.waves;
        }
        for (;;) {
          bool progressed = false;
          for (size_t wi = 0; wi < nwaves; ++wi) {
            Wave& w = waves[wi];
            if (w.done || w.at_barrier) continue;
            im.run_wave(w, wi);
            progressed = true;
          }
          bool all_done = true, any_wait = false;
          for (Wave& w : waves) {
            all_done &= w.done;
            any_wait |= w.at_barrier;
          }
          if (all_done) break;
          if (any_wait) {
            bool all_arrived = true;
            for (Wave& w : waves) all_arrived &= w.done || w.at_barrier;
            if (all_arrived)
              for (Wave& w : waves) w.at_barrier = false;
          } else if (!progressed) {
            break;
          }
        }
      }
  return im.stats;
}

}  // namespace opv::ir3
