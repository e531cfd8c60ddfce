// cudasim internals shared by the parser (ptx_parse.cpp) and the interpreter (ptx_exec.cpp): the
// pre-decoded instruction form. See ptx.h.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "backend/cuda/sim/ptx.h"

namespace opv::cudasim {

enum class Ty : uint8_t { None, B8, B16, B32, B64, U8, U16, U32, U64, S8, S16, S32, S64, F16, F16x2, BF16, F32, F64, Pred };

inline unsigned ty_bytes(Ty t) {
  switch (t) {
    case Ty::B8: case Ty::U8: case Ty::S8: return 1;
    case Ty::B16: case Ty::U16: case Ty::S16: case Ty::F16: case Ty::BF16: return 2;
    case Ty::B32: case Ty::U32: case Ty::S32: case Ty::F32: case Ty::F16x2: return 4;
    case Ty::B64: case Ty::U64: case Ty::S64: case Ty::F64: return 8;
    default: return 0;
  }
}
inline bool ty_signed(Ty t) { return t == Ty::S8 || t == Ty::S16 || t == Ty::S32 || t == Ty::S64; }
inline bool ty_float(Ty t) { return t == Ty::F16 || t == Ty::F32 || t == Ty::F64 || t == Ty::BF16 || t == Ty::F16x2; }

enum class Op : uint8_t {
  Mov, Add, Sub, Mul, Mad, Fma, Div, Rem, Min, Max, Abs, Neg, And, Or, Xor, Not, Shl, Shr, Bfi, Bfe, Popc, Clz,
  Brev, Copysign, Rcp, Sqrt, Rsqrt, Ex2, Lg2, Sin, Cos, Tanh, Cvt, Cvta, CvtaTo, Setp, Selp, Ld, St, Atom, Red,
  Bra, Ret, BarSync, Nop, CpAsync, Shfl, Ldmatrix, Mma, Mapa, ClusterArrive, ClusterWait, Prmt,
  GridDepWait,
  // mbarrier objects (sm_90): init, arrive (.expect_tx: with a transaction count), expect_tx,
  // try_wait.parity, and st.async's store that completes transaction bytes on one
  MbarInit, MbarArrive, MbarExpectTx, MbarTryWait, StAsync
};

enum class Space : uint8_t { Generic, Global, Shared, SharedCluster, Param, Local, Const };

// Comparison of setp (and the boolean combine of setp's optional third source).
enum class Cmp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, Lo, Ls, Hi, Hs, Equ, Neu, Ltu, Leu, Gtu, Geu, Num, Nan };
enum class BoolOp : uint8_t { None, And, Or, Xor };
// Rounding: the default (nearest even for floats), the integer-rounding float modes (rni...)
// and the directed float modes (rz/rm/rp).
enum class Rnd : uint8_t { Default, Rn, Rz, Rm, Rp, Rni, Rzi, Rmi, Rpi };
enum class AtomOp : uint8_t { Add, Min, Max, Exch, Cas, And, Or, Xor, Inc, Dec };
enum class ShflMode : uint8_t { Up, Down, Bfly, Idx };

struct Opnd {
  enum Kind : uint8_t { None, Reg, Imm, Addr, Vec };
  Kind kind = None;
  bool neg = false;      // !%p
  uint8_t n = 0;         // Vec: element count
  uint32_t reg = 0;      // Reg; Addr: base register (when has_base)
  uint32_t pred = 0;     // "d|p": the predicate destination (has_pred)
  bool has_base = false, has_pred = false;
  uint64_t imm = 0;      // Imm bits; Addr: offset
  uint32_t vec[4] = {};  // Vec registers (kSink for "_")
};
constexpr uint32_t kSink = 0xffffffffu;

struct Instr {
  Op op = Op::Nop;
  Ty t = Ty::None, t2 = Ty::None, t3 = Ty::None, t4 = Ty::None;  // dst/src types (cvt: t=dst t2=src)
  Space space = Space::Generic;
  Cmp cmp = Cmp::Eq;
  BoolOp boolop = BoolOp::None;
  Rnd rnd = Rnd::Default;
  AtomOp atom = AtomOp::Add;
  ShflMode shfl = ShflMode::Bfly;
  bool ftz = false, sat = false, approx = false, hi = false, wide = false, trans = false, uni = false;
  bool plain = false;    // f32 arithmetic without ftz, sat, approx or directed rounding (the fast path)
  bool expect_tx = false;  // mbarrier.arrive.expect_tx: operand 2 is a transaction count
  bool nc = false;         // ld.global.nc: a read-only load (no one writes the memory while the kernel runs)
  uint8_t vec = 1;       // ld/st .v2/.v4
  uint8_t count = 1;     // ldmatrix .x1/.x2/.x4
  uint8_t nops = 0;
  int32_t guard = -1;    // predicate register slot, or -1
  bool guard_neg = false;
  int32_t target = -1;   // bra: instruction index
  uint32_t line = 0;     // source line
  uint32_t m = 0, nn = 0, k = 0;  // mma shape
  Opnd o[5];
};

// Reserved register slots for the special registers, filled per thread before it runs.
enum Special : uint32_t {
  kTidX, kTidY, kTidZ, kNtidX, kNtidY, kNtidZ, kCtaidX, kCtaidY, kCtaidZ, kNctaidX, kNctaidY, kNctaidZ, kLaneid,
  kWarpid, kClusterRank, kClusterNrank, kClusterCtaidX, kClusterCtaidY, kClusterCtaidZ, kClusterNctaidX,
  kClusterNctaidY, kClusterNctaidZ, kClusteridX, kClusteridY, kClusteridZ, kNclusteridX, kNclusteridY,
  kNclusteridZ, kIsExplicitCluster, kGlobaltimer, kClock64, kSmid, kSpecialCount
};

// Generic addresses of shared memory: the shared window offset plus this base (host pointers,
// standing in for global memory, stay far below it).
constexpr uint64_t kSharedWindow = 0x7f00000000000000ull;
// Generic addresses of local memory: this base | thread (within the running cluster) << kClusterShift
// | local offset.
constexpr uint64_t kLocalWindow = 0x7e00000000000000ull;
// shared::cluster addresses (mapa): (block rank + 1) << kClusterShift | shared offset.
constexpr unsigned kClusterShift = 24;

}  // namespace opv::cudasim
