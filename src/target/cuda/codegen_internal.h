// Internals shared by the CUDA code generator's files (codegen.cpp: the families, the pass; ffn.cpp:
// the fused ConvFFN; pack_conv.cpp: the input pack folded into the stem conv). Compile time only;
// nothing outside src/target/cuda includes this.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "target/cuda/codegen.h"
#include "target/cuda/options.h"

namespace opv::plan::cuda::detail {

// Input j of call c is absent or a plan Constant: no kernel writes it, so a weight prologue may
// read it before OPV_KERNEL_ENTRY() (kEntryOpenLate).
inline bool weight_input(const Plan& p, const Call& c, size_t j) {
  return j >= c.inputs.size() || c.inputs[j] < 0 || p.buffers.at(size_t(c.inputs[j])).kind == BufferKind::Constant;
}

// Parameter j of a kernel's list, ", const T* <qualifier> in<j>" (T: the buffer's element type). A
// plan Constant is `__restrict__` (read through the read-only path, ld.global.nc); any other input,
// which a kernel before this one writes, is OPV_IN_RESTRICT (kPrelude): nothing in kernels compiled
// with the programmatic-dependent-launch prologue (OPV_PDL), where ptxas may schedule a .nc load
// above griddepcontrol.wait (it did, for the heads kernel's first vector load: session 35), so
// reading the kernel before's output while it still runs; `__restrict__` elsewhere.
inline std::string input_param(const Plan& p, const Call& c, size_t j, const char* type) {
  return std::string(", const ") + type + (weight_input(p, c, j) ? "* __restrict__ in" : "* OPV_IN_RESTRICT in") +
         std::to_string(j);
}

// One call being generated: its plan, kernel and what the families share.
struct Ctx {
  const Plan& p;
  const Call& c;
  const Kernel& k;
  int sm = 75;         // the virtual architecture's number (plan meta cuda_arch): >= 80 enables mma.sync
  bool split = false;  // one warp per output (`lane` in scope; Gemm/MatMul), see kSplitMaxOutputs
  mutable std::string globals{};  // module-scope declarations a family needs (helpers, workspaces)
  mutable int64_t cluster = 0;    // > 0: the family's blocks run as thread-block clusters of this many
  mutable bool late_entry = false;  // the body states OPV_KERNEL_ENTRY() itself (kEntryOpenLate)
  mutable int64_t smem = 0;         // > 0: bytes of dynamic shared memory a block (kernel attr "cuda_smem")
  // The code that ends a split reduction (warp sum, lanes 1.. leave).
  std::string reduce_end() const { return split ? "  acc = opv_warp_sum(acc);\n  if (lane != 0) return;\n" : ""; }
  const Buffer& in(size_t j) const { return p.buffers.at(size_t(c.inputs.at(j))); }
  bool has(size_t j) const { return j < c.inputs.size() && c.inputs[j] >= 0; }
  const Buffer& out(size_t j = 0) const { return p.buffers.at(size_t(c.outputs.at(j))); }
  std::string in_name(size_t j) const { return "in" + std::to_string(j); }
  // Input j is a plan Constant (weights): no kernel writes it, so it may be read before
  // OPV_KERNEL_ENTRY() (kEntryOpenLate).
  bool const_input(size_t j) const { return has(j) && weight_input(p, c, j); }
};

extern const char* kPrelude;     // helpers every generated source starts with (F16 conversions, ...)
// What closes every kernel's parameter list and opens its body: the body's first statement is
// OPV_KERNEL_ENTRY() (kPrelude: the programmatic-dependent-launch prologue where the kernel is
// compiled with it, kernel attr "cuda_pdl"; nothing otherwise).
constexpr const char* kEntryOpen = ") {\n  OPV_PROBE_OPEN();\n  OPV_KERNEL_ENTRY();\n";
// Kernels with a weight prologue open with kEntryOpenLate and state OPV_KERNEL_ENTRY() themselves,
// after loads of buffers no kernel writes alone (const_input: plan Constants), before any other
// global-memory access: with --cuda-pdl prefetch those loads overlap the kernel before.
constexpr const char* kEntryOpenLate = ") {\n  OPV_PROBE_OPEN();\n";
extern const char* kMmaHelpers;  // module-scope PTX helpers of the mma kernels (ldmatrix, mma.sync, cp.async)
extern const char* kClusterHelpers;  // cluster barrier and peer shared-memory load (compute_90+)
extern const char* kClusterPushHelpers;  // mbarrier and st.async of the push form (after kClusterHelpers)
// The push form's receive buffer ([S][PER] float4s) at most: the batch-1 fixture's largest is
// 16.5 KB (ffn_256; 32.8 KB for stage 3's ConvFFN with ffn_cluster_slabs=32, both measured in
// session 33); the batch-32 artifact's wide ConvFFN tiles would take 64 KB more a block (65 -> 131
// KB, fewer blocks per SM), which was not measured, so they keep the read form.
constexpr int64_t kClusterPushMaxBytes = 48 << 10;
// The push form's start, before the cluster barrier's arrive (no peer pushes into a block before its
// mbarrier `rbar_` is made): thread 0 makes the mbarrier, whose one arrival sets the bytes of this
// block's share (rank `sp` of S, `per` float4s a block, TILE float4s in all, all three names in
// scope of the generated code), and fences the init.
std::string cluster_push_start(int64_t per);

int plan_sm(const Plan& p);  // the plan's virtual architecture number (meta cuda_arch): 75, 80, 90, ...
// The plan's sizing target `k` (meta cuda_tune, else the key's default: options.h Tune).
int64_t tune_target(const Plan& p, TuneKey k);
std::string I(int64_t v);    // an index literal: plain when it fits an int, else opv_idx
// The entry point of a kernel named `kernel_name`: "opv_" + the name, other characters than
// letters, digits and '_' replaced by '_'.
std::string entry_name(const std::string& kernel_name);
const char* c_type(DType dt);
std::string load(DType dt, const std::string& name, const std::string& idx);  // element as float
std::string store(DType dt, const std::string& name, const std::string& idx, const std::string& v);
// The post-op epilogue on `float v` at output coordinates o<d> (post_ops_ok first: "" with *why
// when an operand does not broadcast to the output).
bool post_ops_ok(const Ctx& x, std::string* why);
std::string post_ops(const Ctx& x);
// post_ops with the operand loads split from their use, so a kernel can issue the loads early (before
// its barriers): `loads` sets `pfoN[idx]` to binary post-op N's operand at output coordinates o<d>
// (N = 0, 1, ... in post-op order), `ops` applies the post-ops to v reading those registers;
// `operands` = N's count. With an empty idx, `ops` loads each operand where it is used and `loads`
// is empty (post_ops). prefetch_decls declares the arrays (`pfb` too, a bias, where `bias`).
struct SplitPostOps {
  std::string loads, ops;
  int operands = 0;
};
// `computed` (optional) maps operand slots to an expression of o0..o<r-1> that replaces the slot's
// load (ffn.cpp: the depthwise pair's first output, computed again from its input).
SplitPostOps post_ops_split(const Ctx& x, const std::string& idx, const std::map<int, std::string>* computed = nullptr);
std::string prefetch_decls(int operands, bool bias, const std::string& dims);
// The head of a block-strided loop, `for (int e = tid; e < n; e += threads)`: up to
// kMaxBlockSteps steps a thread, as that many unrolled steps whose count the compiler knows (a
// guard in the last one where threads does not divide n); the strided form left ptxas a remainder
// loop with branches around every step (ffn_256: 2,920 SASS instructions, 984 with this and the
// constant slab schedule). More steps keep the strided loop. `indent` prefixes each line; the
// caller closes the brace; `continue` and `break` in the body mean what they mean in the strided loop.
constexpr int64_t kMaxBlockSteps = 16;
std::string block_steps(int64_t n, int64_t threads, const std::string& indent);
// Offset into a row-major tensor of shape `in` broadcast to `out`, from out's coordinates o<d>.
std::string bcast_offset(const Shape& out, const Shape& in);
// Declares output coordinates o0..o<r-1> of flat index `i` over `shape` (row-major).
std::string coords(const Shape& shape, const std::string& i);
// Whether b is stored channels-last in a way that matters (NHWC, more than one channel and pixel).
bool nhwc_stored(const Buffer& b);
bool conv1x1_tiled_ok(const Ctx& x);  // a dense 1x1 conv (stride 1, no padding) the 1x1 families take
// One warp per output (Gemm/MatMul rows; fp16 1x1 convs on a 1x1 map): for calls of at most
// kSplitMaxOutputs outputs.
constexpr int kWarp = 32;
constexpr int64_t kSplitMaxOutputs = 1 << 16;
extern const char* kDot8;  // opv_u4 and opv_dot8 (8 fp16 products added to a float, GEMV rows)
// The fp16 1x1 conv on a 1x1 map as a GEMV (conv1x1_gemv: a warp per output channel, lanes over
// K in 8-channel steps, opv_warp_sum), taken where the output has at most kSplitMaxOutputs elements.
bool conv1x1_gemv_ok(const Ctx& x);
// The tensor-core 1x1 (conv1x1_mma, compute_80+) and its tiling (mma_shape: N images of an
// M x P GEMM over K; kmajor_b for NHWC).
bool conv1x1_mma_ok(const Ctx& x);
struct MmaShape {
  int64_t BM = 32, BN = 32, WM = 1, WN = 1, WK = 4, S = 1, KB = 0, KC = 0, tiles = 0;
  bool kmajor_b = false;  // B staged [BN][KC] (NHWC: B = W, contiguous along K) instead of [KC][BN]
  int64_t stage_bytes(int64_t kc) const { return (BM * (kc + 8) + (kmajor_b ? BN * (kc + 8) : kc * (BN + 8))) * 2; }
};
// target_blocks: the blocks split-K aims at (TuneKey::MmaBlocks; tune_target).
MmaShape mma_shape(int64_t N, int64_t M, int64_t P, int64_t K, bool kmajor_b, int64_t target_blocks);

// The kernel size of a stride-1, dilation-1, 'same'-padded depthwise conv call with unary
// post-ops (float types, Linear), else 0 (codegen.cpp: the depthwise pairs; ffn.cpp).
int64_t dw_same_size(const Plan& p, const Call& c);
// Per buffer: how many call inputs read it.
std::vector<int> reader_counts(const Plan& p);
// The walk of the pair-merging passes: where `fuse(a, b, &k, &f)` accepts a call and the call
// after it, the two become the one call f (label "a+b", kernel k appended to the plan's kernels).
using PairFuse = std::function<bool(const Call& a, const Call& b, Kernel* k, Call* f)>;
void fuse_pairs(Plan& p, const PairFuse& fuse);

// Dense non-1x1 convs with co output channels per thread (the stem): conv_multi_co gives co (0 when
// the family does not take the call), conv_multi the kernel body. `src` (pack_conv.cpp) replaces
// the input: X's shape, the expression of X(o0, c, ih, iw) as float for in-bounds coordinates, and
// code the block runs after staging its weights, before its barrier.
constexpr int kMultiThreads = 128;  // conv_multi's block
struct ConvInput {
  Shape shape;
  std::string elem, prologue;
  // conv_mma only: X(o0, c, ih, iw) as fp16 bits (instead of elem), and code that fills `unsigned
  // short hv[8]` with the 8 columns from iw of row (c, ih) at once (`ok`: the chunk is in the map).
  std::string elem16, chunk8;
};
int64_t conv_multi_co(const Ctx& x);
std::string conv_multi(const Ctx& x, int64_t co, int64_t* blocks, const ConvInput* src = nullptr);

// conv_mma.cpp: dense KxK fp16 convs (group 1, NCHW input) as implicit GEMMs on the tensor cores
// (compute_80+; blocks of kConvMmaThreads): conv_mma_ok says whether the family takes the call,
// conv_mma gives the kernel body ("" when it does not) and *blocks. `src` (pack_conv.cpp) computes
// X where it is staged (an fp16 X of src->shape; src->elem rounded to fp16, src->prologue first).
constexpr int kConvMmaThreads = 128;
bool conv_mma_ok(const Ctx& x, const ConvInput* src = nullptr);
std::string conv_mma(const Ctx& x, int64_t* blocks, const ConvInput* src = nullptr);
// Element strides of b's logical dims (Linear: row-major; NHWC: C*H*W, 1, W*C, C).
std::vector<int64_t> strides_of(const Buffer& b);

// movement.cpp: Slice, Tile, Pad, Gather and Where as typed copies (movement_op: the ops it takes),
// and the element-wise ops with a non-float output (comparisons, And/Or/Xor/Not, Cast to an
// integer or bool type).
bool movement_op(OpKind op);
std::string movement(const Ctx& x, std::string* why);
std::string typed_elementwise(const Ctx& x, std::string* why);
// Split: one thread per input element (*count), stored into the output that holds it.
std::string split(const Ctx& x, std::string* why, int64_t* count);
// LogSoftmax, Hardmax, LpNormalization along one axis: one thread per line (*count).
std::string axis_norm(const Ctx& x, std::string* why, int64_t* count);
// CumSum: one thread per scanned line (*count).
std::string cumsum(const Ctx& x, std::string* why, int64_t* count);
// LayerNorm: one thread per normalised row (*rows), mean and variance in double as the reference.
std::string layer_norm(const Ctx& x, std::string* why, int64_t* rows);

// ffn.cpp: the ConvFFN's fc1 -> GELU -> fc2 (+ residual) merged into one call (compute_80+), with
// `with_dw` only where a depthwise conv that alone feeds fc1 comes first (merged too), and the
// source of such a call (cuda_abi.h "ConvFFN").
void fuse_ffn(Plan& p, bool with_dw);
// A depthwise pair call followed by the fused ConvFFN that alone reads both its outputs (the
// second as X, the first as fc2's residual) merged into that call (ffn.cpp, FfnPairMode).
void fuse_ffn_pairs(Plan& p, FfnPairMode mode);
Generated ffn(const Plan& p, const Call& c);

// se.cpp: the squeeze-excitation gate (a global mean pool, a 1x1 conv, a 1x1 conv, the scale)
// merged into one call (Options::fuse_se), and the source of such a call (cuda_abi.h "SE gate").
void fuse_se(Plan& p);
// With TuneKey::SeFold: a cluster SE call also takes the depthwise conv before it and the 1x1 conv
// (with a Reshape of its output) after it, where only it reads them (se.cpp).
void fold_se_ends(Plan& p);
Generated se_gate(const Plan& p, const Call& c);

// dw_pair.cpp: a stride-1 'same' depthwise conv and the depthwise conv reading it merged into one
// call (cuda_abi.h "depthwise pairs"), and the source of such a call.
void fuse_dw_pairs(Plan& p);
Generated dw_pair(const Plan& p, const Call& c);

// The depthwise convs' register tiles (dw_planes.cpp, dw_pair.cpp's planes form): RH output rows
// of R outputs each from shared-memory rows of floats read as float4s. Tap row kh of output (r, u)
// reads row row0 + r * sy + kh of `src` (sw floats a row), columns col0 + off + u * sx + kw
// (col0 a multiple of 4), with taps `w` (ws floats a tap row, kw < KW used). Each source row is read
// once for the RH outputs rows it serves; every output still sums its taps in the order kh, then
// kw (fmaf from 0). Emits `float acc[RH][R]` and its loops (statements at 4 spaces).
struct DwTile {
  std::string src, w, row0, col0;
  int64_t sw = 0, ws = 0, KH = 0, KW = 0, sy = 1, sx = 1, off = 0, R = 1, RH = 1;
  int64_t nx() const { return (off + (R - 1) * sx + KW + 3) / 4 * 4; }  // floats of a source row read
};
std::string dw_tile_acc(const DwTile& t);
// Tile row ty_'s values: `float v[R]`, acc[ty_][u] plus `bias` (an expression, or empty) through the
// unary post-ops [first, first + n) in order (statements at 6 spaces).
std::string dw_tile_values(int64_t R, const std::string& bias, const PostOp* first, size_t n);
// Those R values stored at `name` + `at`: fp16 as one 8- or 16-byte store, other types element by element.
std::string dw_tile_store(DType dt, int64_t R, const std::string& name, const std::string& at);
// A block of the depthwise planes forms: PB planes (a power of two dividing `planes`, doubled while
// the block has fewer strips than `max_threads`, `planes` still give `target` blocks and twice its
// shared memory, PB x `plane_bytes`, fits `smem_cap`), and its threads (the strips rounded up to
// warps, at most max_threads); threads = 0 where the block has fewer than `min_strips` strips or
// does not fit.
struct PlanesBlock {
  int64_t PB = 1, threads = 0;
};
PlanesBlock planes_block(int64_t planes, int64_t strips, int64_t target, int64_t plane_bytes, int64_t smem_cap,
                         int64_t max_threads, int64_t min_strips);

// dw_planes.cpp: a single depthwise conv (any stride, padding, channel multiplier) over at least
// twice TuneKey::DwPairBlocks output planes as several whole planes a block (dw_planes_ok: whether
// the call takes that form), and the source of such a call.
bool dw_planes_ok(const Plan& p, const Call& c);
Generated dw_planes(const Plan& p, const Call& c);

// stage.cpp: a run of FastViT blocks (depthwise pair, then the fused ConvFFN adding the pair's
// first output) merged into one call on a thread-block cluster (compute_90+; cuda_abi.h "stage"),
// and the source of such a call.
void fuse_stage(Plan& p);
Generated stage(const Plan& p, const Call& c);

// heads.cpp: chains of batched fp16 GEMVs (each layer's member reading the previous layer's member
// alone: the heads' MLPs) merged into one call, a thread-block cluster per chain (compute_90+;
// cuda_abi.h "GEMV chains"), and the source of such a call.
void fuse_heads(Plan& p);
void fold_heads_concat(Plan& p);
Generated heads(const Plan& p, const Call& c);

// pack_conv.cpp: the input pack (a Concat or Cast to float with element-wise post-ops, e.g. uint8
// frames -> normalised fp16) folded into the dense conv that alone reads it (cuda_abi.h "pack").
void fuse_pack_conv(Plan& p);
Generated pack_conv(const Plan& p, const Call& c);

}  // namespace opv::plan::cuda::detail
