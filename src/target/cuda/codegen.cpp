/* Plan pass "cuda-codegen": one specialised CUDA C++ kernel per call (see codegen.h).
 *   0. Launch merging (batch_gemvs, fuse_heads and fold_heads_concat in heads.cpp, fuse_se in se.cpp, fuse_ffn with its depthwise conv and fuse_ffn in ffn.cpp,
 *      fuse_dw_pairs, fuse_stage in stage.cpp, fuse_ffn_pairs in ffn.cpp, fuse_concat_cast, fuse_pack_conv in pack_conv.cpp): independent fp16 GEMVs
 *      become one call, (compute_90+, Options::fuse_heads) chains of those calls and the Concat of
 *      their outputs become one call on thread-block clusters, the SE gate's pool, 1x1, 1x1 and scale become one call, the ConvFFN's depthwise conv, fc1 and fc2 become one call
 *      (Options::fuse_ffn_dw), a depthwise conv and the depthwise conv reading it become one call,
 *      the ConvFFN's fc1 and fc2 become one call, (opt-in, Options::fuse_stage) a run of FastViT
 *      blocks (pair + ConvFFN) becomes one call on a thread-block cluster, (opt-in, Options::ffn_pair)
 *      a depthwise pair and the fused ConvFFN after it become one call, a Concat and the Cast of its output become one
 *      call, and (opt-in, Options::fuse_pack) that input pack becomes part of the dense conv that
 *      reads it (cuda_abi.h).
 *   1. Parameters: the call's outputs then its present inputs (cuda_abi.h), named out<j> / in<j>
 *      by slot, typed by dtype (F16 as raw `unsigned short`, converted with PTX cvt).
 *   2. A family writes the body that computes `float v` (or copies a typed element) for the
 *      flat output index `i` (one thread each; Softmax: one thread per row); the shared epilogue
 *      applies the kernel's post-ops and stores.
 *   3. Index arithmetic is generated from the compiled-in shapes: output coordinates o0..o<r-1>
 *      from i, broadcast operand offsets from them.
 * Invariant: a generated kernel touches only elements inside its buffers (every thread checks
 * i < count first), and computes what the reference kernel computes, in float.
 */
#include "target/cuda/codegen.h"
#include "target/cuda/codegen_internal.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <sstream>

#include "core/error.h"
#include "plan/layout.h"
#include "target/c_expr.h"
#include "target/cuda/cuda_abi.h"
#include "target/cuda/options.h"

namespace opv::plan::cuda {

namespace detail {

constexpr int64_t kBlock = 256;  // threads per block of every generated kernel
constexpr const char* kSourceFormat = "cuda";  // Kernel.options between cuda-codegen and nvrtc

// Helpers the generated code and c_expr.h's expressions call. F16 goes through PTX conversions
// (round to nearest even), so no CUDA header is needed.
const char* kPrelude = R"(// opvision CUDA prelude (src/target/cuda/codegen.cpp)
#define OPV_INF __int_as_float(0x7f800000)
#ifndef INFINITY
#define INFINITY OPV_INF
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
// Programmatic dependent launch (kernel attr "cuda_pdl", plan pass nvrtc defines OPV_PDL to it):
// wait until the kernels this one depends on have finished and their writes are visible, before the
// kernel's first access of memory a kernel writes (only weights may be read before it); with
// OPV_PDL 2 (PdlMode::Early) first let the kernels after this one be launched, with OPV_PDL 3
// (PdlMode::Prefetch) right after the wait.
// With OPV_PDL 4 (PdlMode::Tail) the kernels that have a main loop release the next kernel after
// it (OPV_PDL_TRIGGER()), the others as their blocks exit.
#if defined(OPV_PDL) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && OPV_PDL == 3
#define OPV_PDL_ENTRY() asm volatile("griddepcontrol.wait;\n\tgriddepcontrol.launch_dependents;" ::: "memory")
#elif defined(OPV_PDL) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && OPV_PDL == 2
#define OPV_PDL_ENTRY() asm volatile("griddepcontrol.launch_dependents;\n\tgriddepcontrol.wait;" ::: "memory")
#elif defined(OPV_PDL) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define OPV_PDL_ENTRY() asm volatile("griddepcontrol.wait;" ::: "memory")
#else
#define OPV_PDL_ENTRY() ((void)0)
#endif
// The probe (--cuda-tune probe=1): kProbePrelude, before this prelude, defines OPV_PROBE and the
// OpvProbe every kernel then declares first (OPV_PROBE_OPEN()) and marks after its entry.
#ifdef OPV_PROBE
#define OPV_PROBE_OPEN() OpvProbe opv_probe
#define OPV_KERNEL_ENTRY() do { OPV_PDL_ENTRY(); opv_probe.entered(); } while (0)
#else
#define OPV_PROBE_OPEN() ((void)0)
#define OPV_KERNEL_ENTRY() OPV_PDL_ENTRY()
#endif
// Inputs that kernels write (codegen_internal.h input_param): not __restrict__ where the kernel waits
// on its prologue, so loaded with ld.global, which ptxas keeps after griddepcontrol.wait (a .nc load
// it may schedule above the wait).
#if defined(OPV_PDL) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define OPV_IN_RESTRICT
#else
#define OPV_IN_RESTRICT __restrict__
#endif
#if defined(OPV_PDL) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && OPV_PDL == 4
#define OPV_PDL_TRIGGER() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#else
#define OPV_PDL_TRIGGER() ((void)0)
#endif
__device__ __forceinline__ float opv_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short opv_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float select(float a, float b, bool c) { return c ? b : a; }
__device__ __forceinline__ float clamp(float x, float lo, float hi) { return fminf(fmaxf(x, lo), hi); }
// GELU(x) = x Phi(x) with Phi(x) = 0.5 erfc(-x / sqrt 2): h = 0.5 erfc(|x| / sqrt 2) by the Chebyshev
// fit erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2) (Numerical Recipes' erfcc, relative error
// < 1.2e-7 for every z >= 0), then Phi = 1 - h or h. Relative error ~2e-6 against the exact GELU
// (MUFU rcp/ex2 included); 20 instructions against erff's 26 in sm_90 SASS, and no 1 + erf
// cancellation for negative x: on a 1/4096 grid over [-10, 10] the fp16 result differs from the
// correctly rounded one at 0.02 % of points, 0.5 x (1 + erff(x / sqrt 2)) at 5.8 % (session 30).
__device__ __forceinline__ float opv_gelu(float x) {
  const float z = fabsf(x) * 0.707106781186547524f;
  float t, e;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(t) : "f"(fmaf(z, 0.5f, 1.0f)));
  float p = 0.17087277f;
  p = fmaf(p, t, -0.82215223f); p = fmaf(p, t, 1.48851587f); p = fmaf(p, t, -1.13520398f);
  p = fmaf(p, t, 0.27886807f); p = fmaf(p, t, -0.18628806f); p = fmaf(p, t, 0.09678418f);
  p = fmaf(p, t, 0.37409196f); p = fmaf(p, t, 1.00002368f);
  p = fmaf(p, t, -1.26551223f - 0.693147181f);  // - ln 2: exp gives 0.5 erfc
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(fmaf(-z, z, p) * 1.44269504f));
  const float h = t * e;
  return x * (x >= 0.0f ? 1.0f - h : h);
}
__device__ __forceinline__ float opv_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float opv_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
)";

// What precedes kPrelude in every source of a plan compiled with the probe (--cuda-tune probe=1;
// generate()), so kPrelude's OPV_PROBE_OPEN() and OPV_KERNEL_ENTRY() use it.
const char* kProbePrelude = R"(// opvision CUDA probe (src/target/cuda/codegen.cpp kProbePrelude)
// Thread 0 of every block reads %globaltimer (ns, one clock for the whole GPU) where the kernel
// opens (OPV_PROBE_OPEN(), the first statement of every kernel: before any weight prologue), after
// its entry (the PDL wait) and as it leaves (the destructor: every return), with the SM's clock64
// at the same three points (the global timer may tick coarser than the SM clock), and appends
// {open, entry, end, kernel << 40 | SM << 32 | block, entry - open << 32 | end - open in SM cycles}
// to the records the backend points opv_probe_dst at (cuda_abi.h, "Probe").
#define OPV_PROBE 1
__device__ unsigned long long* opv_probe_dst;  // [0] records written, [1] capacity, records from [4]
__device__ unsigned opv_probe_kernel;          // the plan's kernel index
__device__ __forceinline__ unsigned long long opv_globaltimer() {
  unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
struct OpvProbe {
  unsigned long long open, entry, open_clk, entry_clk;
  __device__ OpvProbe() : open(opv_globaltimer()), entry(0), open_clk(clock64()), entry_clk(0) {}
  __device__ void entered() { entry = opv_globaltimer(); entry_clk = clock64(); }
  __device__ ~OpvProbe() {
    unsigned long long* d = opv_probe_dst;
    if ((threadIdx.x | threadIdx.y | threadIdx.z) != 0 || d == nullptr) return;
    const unsigned long long end = opv_globaltimer(), end_clk = clock64();
    unsigned sm; asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    const unsigned long long i = atomicAdd(d, 1ull);
    if (i >= d[1]) return;
    unsigned long long* r = d + 4 + 5 * i;
    const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const unsigned long long e = entry ? entry_clk - open_clk : 0, x = end_clk - open_clk;
    r[0] = open; r[1] = entry ? entry : open; r[2] = end;
    r[3] = ((unsigned long long)opv_probe_kernel << 40) | ((unsigned long long)(sm & 0xff) << 32) | block;
    r[4] = ((e < 0xffffffffull ? e : 0xffffffffull) << 32) | (x < 0xffffffffull ? x : 0xffffffffull);
  }
};
)";

// The virtual architecture's number of a plan (meta cuda_arch, "compute_<NN>"): 75, 80, 90, ...
int plan_sm(const Plan& p) { return arch_number(Options::from_meta(p.meta).arch); }  // checked: compute_<digits>
int64_t tune_target(const Plan& p, TuneKey k) { return Options::from_meta(p.meta).tune.get(k); }

std::string entry_name(const std::string& kernel_name) {
  std::string e = "opv_" + kernel_name;
  for (char& ch : e)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') ch = '_';
  return e;
}

// An index literal: plain when it fits an int, else opv_idx.
std::string I(int64_t v) {
  return std::to_string(v) + (v > INT32_MAX || v < INT32_MIN ? "LL" : "");
}

const char* c_type(DType dt) {
  switch (dt) {
    case DType::F32: return "float";
    case DType::F16: return "unsigned short";
    case DType::F64: return "double";
    case DType::U8:
    case DType::Bool: return "unsigned char";
    case DType::I8: return "signed char";
    case DType::I32: return "int";
    case DType::I64: return "long long";
    default: return nullptr;
  }
}

// Element `idx` of parameter `name` as float.
std::string load(DType dt, const std::string& name, const std::string& idx) {
  if (dt == DType::F16) return "opv_h2f(" + name + "[" + idx + "])";
  if (dt == DType::F32) return name + "[" + idx + "]";
  return "(float)(" + name + "[" + idx + "])";
}
// Stores float expression v; float output types only (families check).
std::string store(DType dt, const std::string& name, const std::string& idx, const std::string& v) {
  if (dt == DType::F16) return name + "[" + idx + "] = opv_f2h(" + v + ");";
  if (dt == DType::F64) return name + "[" + idx + "] = (double)(" + v + ");";
  return name + "[" + idx + "] = " + v + ";";
}

// Declares output coordinates o0..o<r-1> of flat index `i` over `shape` (row-major).
std::string coords(const Shape& shape, const std::string& i = "i") {
  std::string s = "  opv_idx r_ = " + i + ";\n";
  for (size_t d = shape.size(); d-- > 0;) {
    s += "  const opv_idx o" + std::to_string(d) + " = r_ % " + I(shape[d]) + ";";
    s += d ? " r_ /= " + I(shape[d]) + ";\n" : "\n";
  }
  s += "  (void)r_;\n";
  return s;
}

// Element strides of b's logical dims: row-major for Linear; NHWC (4-D [N,C,H,W] stored as
// [N,H,W,C]): C*H*W, 1, W*C, C.
std::vector<int64_t> strides_of(const Buffer& b) {
  const Shape& s = b.shape;
  if (b.layout == Layout::NHWC && s.size() == 4) return {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
  return row_major_strides(s);
}

// Whether b is stored channels-last in a way that matters (NHWC, more than one channel and pixel).
bool nhwc_stored(const Buffer& b) { return b.layout == Layout::NHWC && !layout_free(b.shape); }

// Declares the logical coordinates o0..o<r-1> of element `i` of buffer b in its storage order
// (NHWC: c fastest, then w, h, n), so that `i` is also b's storage offset of that element.
std::string coords(const Buffer& b, const std::string& i = "i") {
  if (b.layout != Layout::NHWC || b.shape.size() != 4) return coords(b.shape, i);
  const Shape& s = b.shape;
  return "  opv_idx r_ = " + i + ";\n  const opv_idx o1 = r_ % " + I(s[1]) + "; r_ /= " + I(s[1]) +
         ";\n  const opv_idx o3 = r_ % " + I(s[3]) + "; r_ /= " + I(s[3]) + ";\n  const opv_idx o2 = r_ % " + I(s[2]) +
         "; r_ /= " + I(s[2]) + ";\n  const opv_idx o0 = r_;\n";
}

// Offset into a tensor of shape `in` with strides `st` broadcast (numpy rules, right-aligned) to
// `out`, from the coordinates o<d> of `out`. "0" for a scalar.
std::string bcast_offset(const Shape& out, const Shape& in, const std::vector<int64_t>& st) {
  std::string e;
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    e += (e.empty() ? "" : " + ") + std::string("o") + std::to_string(d + lead) + " * " + I(st[d]);
  }
  return e.empty() ? "0" : e;
}
std::string bcast_offset(const Shape& out, const Shape& in) { return bcast_offset(out, in, row_major_strides(in)); }
std::string bcast_offset(const Shape& out, const Buffer& in) { return bcast_offset(out, in.shape, strides_of(in)); }

// Long reductions over few outputs (the head GEMVs: Gemm/MatMul) run one warp
// per output: the lanes split the reduction and add their partial sums with shuffles, so the
// GPU has 32x the threads and each a 32x shorter serial chain.
constexpr int64_t kSplitMinSteps = 256;        // ... each summing at least this many products (kSplitMaxOutputs: codegen_internal.h)


// The post-op epilogue on `float v` at output coordinates o<d>; "" with *why when an operand
// does not broadcast to the output.
bool post_ops_ok(const Ctx& x, std::string* why) {
  for (const PostOp& po : x.k.post_ops) {
    if (po.input < 0) {
      if (unary_expr(po, "v").empty()) return *why = std::string("post-op ") + op_name(po.op) + " has no expression", false;
      continue;
    }
    if (binary_expr(po.op, "a", "b").empty())
      return *why = std::string("post-op ") + op_name(po.op) + " has no expression", false;
    if (!x.has(size_t(po.input))) return *why = "post-op operand is absent", false;
    const Buffer& b = x.in(size_t(po.input));
    if (!is_float(b.dtype) || !broadcasts_to(b.shape, x.out().shape))
      return *why = "post-op operand " + b.name + " does not broadcast to the output", false;
  }
  return true;
}
std::string post_ops(const Ctx& x) { return post_ops_split(x, "").ops; }

SplitPostOps post_ops_split(const Ctx& x, const std::string& idx, const std::map<int, std::string>* computed) {
  SplitPostOps sp;
  for (const PostOp& po : x.k.post_ops) {
    if (po.input < 0) {
      sp.ops += "  v = " + unary_expr(po, "v") + ";\n";
      continue;
    }
    const Buffer& b = x.in(size_t(po.input));
    const auto cit = computed ? computed->find(po.input) : std::map<int, std::string>::const_iterator();
    const std::string a = computed && cit != computed->end() ? cit->second
                                                             : load(b.dtype, x.in_name(size_t(po.input)), bcast_offset(x.out().shape, b));
    const std::string r = idx.empty() ? a : "pfo" + std::to_string(sp.operands) + "[" + idx + "]";
    if (!idx.empty()) sp.loads += "  " + r + " = " + a + ";\n";
    ++sp.operands;
    sp.ops += "  v = " + (po.swapped ? binary_expr(po.op, r, "v") : binary_expr(po.op, "v", r)) + ";\n";
  }
  return sp;
}

std::string block_steps(int64_t n, int64_t threads, const std::string& indent) {
  const int64_t steps = (n + threads - 1) / threads;
  const std::string t = std::to_string(threads), nn = std::to_string(n);
  if (steps > kMaxBlockSteps) return indent + "for (int e = tid; e < " + nn + "; e += " + t + ") {\n";
  return indent + "#pragma unroll\n" + indent + "for (int i_ = 0; i_ < " + std::to_string(steps) + "; ++i_) {\n" + indent +
         "  const int e = tid + i_ * " + t + ";\n" +
         (n % threads ? indent + "  if (e >= " + nn + ") break;  // the last step's spare threads\n" : std::string());
}

std::string prefetch_decls(int operands, bool bias, const std::string& dims) {
  std::string d = bias ? "  float pfb" + dims + ";\n" : "";
  for (int j = 0; j < operands; ++j) d += "  float pfo" + std::to_string(j) + dims + ";\n";
  return d;
}

// ---- families: each returns the body (after `i` is known to be in range) or "" with *why -------

// Whether element i of `a` and of `b` are the same logical element (same element count, and the
// same layout where the layout changes the order).
bool same_storage(const Buffer& a, const Buffer& b) {
  if (numel(a.shape) != numel(b.shape)) return false;
  const bool la = layout_free(a.shape) || a.layout == Layout::Linear, lb = layout_free(b.shape) || b.layout == Layout::Linear;
  if (la && lb) return true;
  return a.layout == b.layout && a.shape == b.shape;
}

std::string elementwise(const Ctx& x, std::string* why) {
  const Kernel& k = x.k;
  const Buffer& y = x.out();
  const Shape& os = y.shape;
  // Typed copies: Reshape-like ops and Expand keep the element type (integers and bools too).
  const bool reshape = k.op == OpKind::Reshape || k.op == OpKind::Identity;
  if ((reshape || k.op == OpKind::Expand || (k.op == OpKind::Cast && x.in(0).dtype == y.dtype)) &&
      k.post_ops.empty()) {
    if (x.in(0).dtype != y.dtype) return *why = "copy between dtypes", "";
    if (same_storage(x.in(0), y)) return "  out0[i] = in0[i];\n";
    if (reshape && x.in(0).shape != os) return *why = "a reshaping copy of an NHWC buffer", "";
    if (!broadcasts_to(x.in(0).shape, os)) return *why = "Expand operand does not broadcast", "";
    return coords(y) + "  out0[i] = in0[" + bcast_offset(os, x.in(0)) + "];\n";
  }
  if (!is_float(y.dtype)) return typed_elementwise(x, why);  // movement.cpp
  std::string s = coords(y);
  auto operand = [&](size_t j) {
    const Buffer& b = x.in(j);
    return load(b.dtype, x.in_name(j), bcast_offset(os, b));
  };
  // Element i of input 0 where it has the output's shape (a copy: in storage order when both agree).
  const std::string in0_i = same_storage(x.in(0), y) ? "i" : bcast_offset(os, x.in(0));
  if (reshape) {
    if (!same_storage(x.in(0), y) && x.in(0).shape != os) return *why = "a reshaping copy of an NHWC buffer", "";
    s += "  float v = " + load(x.in(0).dtype, "in0", in0_i) + ";\n";
  } else if (k.op == OpKind::Cast) {
    s += "  float v = " + load(x.in(0).dtype, "in0", in0_i) + ";\n";
    if (k.attrs.has("round_to")) {
      if (DType(k.attrs.i("round_to")) != DType::F16) return *why = "Cast round_to other than f16", "";
      s += "  v = opv_h2f(opv_f2h(v));\n";
    }
  } else if (std::string u = unary_expr(unary_post_op(k.op, k.attrs), "a0"); !u.empty()) {
    if (!broadcasts_to(x.in(0).shape, os)) return *why = "operand shape", "";
    s += "  const float a0 = " + operand(0) + ";\n  float v = " + u + ";\n";
  } else if (k.op == OpKind::Mod) {  // C fmod; fmod=0 takes the divisor's sign, as the reference
    if (x.c.inputs.size() < 2) return *why = "Mod with one input", "";
    for (size_t j = 0; j < 2; ++j)
      if (!x.has(j) || !broadcasts_to(x.in(j).shape, os)) return *why = "operand does not broadcast", "";
    s += "  const float a0 = " + operand(0) + ", a1 = " + operand(1) + ";\n  float v = fmodf(a0, a1);\n";
    if (!k.attrs.i("fmod", 0)) s += "  if (v != 0.0f && ((v < 0.0f) != (a1 < 0.0f))) v += a1;\n";
  } else if (std::string b = binary_expr(k.op, "a0", "a1"); !b.empty()) {
    if (x.c.inputs.size() < 2) return *why = "binary op with one input", "";
    for (size_t j = 0; j < 2; ++j)
      if (!x.has(j) || !broadcasts_to(x.in(j).shape, os)) return *why = "operand does not broadcast", "";
    s += "  const float a0 = " + operand(0) + ", a1 = " + operand(1) + ";\n  float v = " + b + ";\n";
  } else {
    return *why = std::string("no element-wise form for ") + op_name(k.op), "";
  }
  for (size_t j = 0; j < x.c.inputs.size(); ++j)  // (Pow: an integer exponent, converted, as the reference)
    if (x.has(j) && !is_float(x.in(j).dtype) && k.op != OpKind::Cast && !(k.op == OpKind::Pow && j == 1))
      return *why = "non-float operand " + x.in(j).name, "";
  return s;
}

std::string conv(const Ctx& x, std::string* why) {
  const Buffer& X = x.in(0);
  const Buffer& W = x.in(1);
  const Shape& os = x.out().shape;
  if (X.shape.size() != 4 || W.shape.size() != 4 || os.size() != 4) return *why = "2-D convolutions only", "";
  const Attrs& a = x.k.attrs;
  const int64_t group = a.i("group", 1);
  const auto s = a.ints("strides", {1, 1}), d = a.ints("dilations", {1, 1}), pd = a.ints("pads", {0, 0, 0, 0});
  if (s.size() != 2 || d.size() != 2 || pd.size() != 4) return *why = "strides[2], dilations[2], pads[4] expected", "";
  const int64_t C = X.shape[1], H = X.shape[2], Wd = X.shape[3], M = os[1];
  if (group < 1 || C % group || M % group || W.shape[0] != M || W.shape[1] != C / group)
    return *why = "weight shape does not match the group", "";
  const int64_t Cg = C / group, Mg = M / group, KH = W.shape[2], KW = W.shape[3];
  const std::vector<int64_t> xst = strides_of(X);  // X's layout (Linear or NHWC)
  std::ostringstream b;
  b << coords(x.out());
  b << "  const opv_idx g = o1 / " << I(Mg) << ";\n  float acc = 0.0f;\n";
  b << "  for (int c = 0; c < " << Cg << "; ++c) {\n"
    << "    const opv_idx xc = o0 * " << I(xst[0]) << " + (g * " << I(Cg) << " + c) * " << I(xst[1]) << ";\n"
    << "    const opv_idx wc = (o1 * " << I(Cg) << " + c) * " << I(KH * KW) << ";\n"
    << "#pragma unroll\n    for (int kh = 0; kh < " << KH << "; ++kh) {\n"
    << "      const opv_idx ih = o2 * " << I(s[0]) << " - " << I(pd[0]) << " + kh * " << I(d[0]) << ";\n"
    << "      if (ih < 0 || ih >= " << I(H) << ") continue;\n"
    << "#pragma unroll\n      for (int kw = 0; kw < " << KW << "; ++kw) {\n"
    << "        const opv_idx iw = o3 * " << I(s[1]) << " - " << I(pd[1]) << " + kw * " << I(d[1]) << ";\n"
    << "        if (iw < 0 || iw >= " << I(Wd) << ") continue;\n"
    << "        acc = fmaf(" << load(X.dtype, "in0", "xc + ih * " + I(xst[2]) + " + iw * " + I(xst[3])) << ", "
    << load(W.dtype, "in1", "wc + kh * " + I(KW) + " + kw") << ", acc);\n"
    << "      }\n    }\n  }\n";
  if (x.has(2)) b << "  acc += " << load(x.in(2).dtype, "in2", "o1") << ";\n";
  b << "  float v = acc;\n";
  return b.str();
}

// 8 fp16 products of two 16-byte vectors added to acc in fp32 (the vectorised GEMV rows).
const char* kDot8 = R"(struct __align__(16) opv_u4 { unsigned x, y, z, w; };
__device__ __forceinline__ float opv_dot2(unsigned a, unsigned b, float acc) {
  acc = fmaf(opv_h2f((unsigned short)(a & 0xffffu)), opv_h2f((unsigned short)(b & 0xffffu)), acc);
  return fmaf(opv_h2f((unsigned short)(a >> 16)), opv_h2f((unsigned short)(b >> 16)), acc);
}
__device__ __forceinline__ float opv_dot8(opv_u4 a, opv_u4 b, float acc) {
  return opv_dot2(a.w, b.w, opv_dot2(a.z, b.z, opv_dot2(a.y, b.y, opv_dot2(a.x, b.x, acc))));
}
)";
// Dense (group 1) convolutions other than the tiled 1x1s (the 3x3 stride-2 stem): a thread
// computes CO output channels of one output pixel, so each input element it loads serves CO
// products; the block's CO x C x KH x KW weights sit in shared memory as fp32, [tap][CO] (16-byte
// broadcast reads: every thread of a block uses the same channels). A block is 128 consecutive
// pixels of one channel group.
constexpr int64_t kMultiSmemBytes = 32 << 10;
int64_t conv_multi_co(const Ctx& x) {
  if (x.k.op != OpKind::Conv || x.k.attrs.i("group", 1) != 1) return 0;
  const Shape& ws = x.in(1).shape;
  if (ws.size() != 4 || x.in(0).shape.size() != 4 || x.out().shape.size() != 4) return 0;
  const int64_t M = ws[0], taps = ws[1] * ws[2] * ws[3];
  if (taps < 9) return 0;  // little reuse to gain
  // 8 channels per thread: the stem's 64 x 64 x 128 outputs are 512 blocks (16 per thread:
  // 256 blocks, 19 us on the H200, from 53 us at one channel per thread).
  for (int64_t co : {8, 4})
    if (M % co == 0 && taps * co * 4 <= kMultiSmemBytes) return co;
  return 0;
}
std::string conv_multi(const Ctx& x, int64_t co, int64_t* blocks, const ConvInput* src) {
  const Buffer& X = x.in(0);
  const Buffer& W = x.in(1);
  const Shape& xs = src ? src->shape : X.shape;
  const Shape& os = x.out().shape;
  const Attrs& a = x.k.attrs;
  const auto s = a.ints("strides", {1, 1}), d = a.ints("dilations", {1, 1}), pd = a.ints("pads", {0, 0, 0, 0});
  const int64_t N = os[0], M = os[1], OH = os[2], OW = os[3], C = xs[1], H = xs[2], Wd = xs[3];
  const int64_t KH = W.shape[2], KW = W.shape[3], taps = C * KH * KW, PIX = OH * OW;
  const int64_t PB = (PIX + kMultiThreads - 1) / kMultiThreads, G = M / co;
  const std::vector<int64_t> xst = strides_of(X), yst = strides_of(x.out());  // Linear or NHWC
  const bool vec_store = nhwc_stored(x.out()) && x.out().dtype == DType::F16;
  *blocks = N * G * PB;
  std::ostringstream b;
  b << "  // " << co << " output channels per thread, weights in shared memory\n"
    << "  __shared__ __align__(16) float wsm[" << taps * co << "];\n"
    << "  const opv_idx pb = blockIdx.x % " << PB << ", cg = (blockIdx.x / " << PB << ") % " << G
    << ", o0 = blockIdx.x / " << PB * G << ";\n"
    << "  for (int e = threadIdx.x; e < " << taps * co << "; e += " << kMultiThreads << ") {\n"
    << "    const int j = e / " << taps << ", q = e % " << taps << ";\n"
    << "    wsm[q * " << co << " + j] = " << load(W.dtype, "in1", "(cg * " + I(co) + " + j) * " + I(taps) + " + q") << ";\n"
    << "  }\n" << (src ? src->prologue : std::string()) << "  __syncthreads();\n"
    << "  const opv_idx pix = pb * " << kMultiThreads << " + threadIdx.x;\n"
    << "  if (pix >= " << I(PIX) << ") return;\n"
    << "  const opv_idx o2 = pix / " << I(OW) << ", o3 = pix % " << I(OW) << ";\n"
    << (vec_store ? "  __align__(16) unsigned short hv[" + std::to_string(co) + "];  // the stored channels\n" : "")
    << "  float acc[" << co << "];\n"
    << "#pragma unroll\n  for (int j = 0; j < " << co << "; ++j) acc[j] = 0.0f;\n"
    << "  for (int c = 0; c < " << C << "; ++c) {\n"
    << "    const opv_idx xc = o0 * " << I(xst[0]) << " + c * " << I(xst[1]) << ";\n"
    << "#pragma unroll\n    for (int kh = 0; kh < " << KH << "; ++kh) {\n"
    << "      const opv_idx ih = o2 * " << I(s[0]) << " - " << I(pd[0]) << " + kh * " << I(d[0]) << ";\n"
    << "#pragma unroll\n      for (int kw = 0; kw < " << KW << "; ++kw) {\n"
    << "        const opv_idx iw = o3 * " << I(s[1]) << " - " << I(pd[1]) << " + kw * " << I(d[1]) << ";\n"
    << "        const float xv = (ih >= 0 && ih < " << I(H) << " && iw >= 0 && iw < " << I(Wd) << ") ? "
    << (src ? src->elem : load(X.dtype, "in0", "xc + ih * " + I(xst[2]) + " + iw * " + I(xst[3]))) << " : 0.0f;\n"
    << "        const float4* wq = (const float4*)(wsm + ((c * " << KH << " + kh) * " << KW << " + kw) * " << co << ");\n"
    << "#pragma unroll\n        for (int j = 0; j < " << co / 4 << "; ++j) {\n"
    << "          const float4 w4 = wq[j];\n"
    << "          acc[4 * j] = fmaf(xv, w4.x, acc[4 * j]); acc[4 * j + 1] = fmaf(xv, w4.y, acc[4 * j + 1]);\n"
    << "          acc[4 * j + 2] = fmaf(xv, w4.z, acc[4 * j + 2]); acc[4 * j + 3] = fmaf(xv, w4.w, acc[4 * j + 3]);\n"
    << "        }\n      }\n    }\n  }\n"
    << "#pragma unroll\n  for (int j = 0; j < " << co << "; ++j) {\n"
    << "    const opv_idx o1 = cg * " << I(co) << " + j;\n"
    << "    float v = acc[j]" << (x.has(2) ? " + " + load(x.in(2).dtype, "in2", "o1") : "") << ";\n"
    << post_ops(x) << "    ";
  const std::string y_at = "o0 * " + I(yst[0]) + " + o2 * " + I(yst[2]) + " + o3 * " + I(yst[3]);
  if (vec_store) {
    // NHWC fp16: the thread's co channels are adjacent, one 8- or 16-byte store (M % co == 0).
    b << "hv[j] = opv_f2h(v);\n  }\n"
      << "  *(" << (co == 8 ? "uint4" : "uint2") << "*)(out0 + " << y_at << " + cg * " << I(co) << ") = *(const "
      << (co == 8 ? "uint4" : "uint2") << "*)hv;\n";
    return b.str();
  }
  b << store(x.out().dtype, "out0", y_at + " + o1 * " + I(yst[1]), "v") << "\n  }\n";
  return b.str();
}

// NHWC fp16 depthwise convs (any kernel size, stride, padding, dilation): a thread computes 2
// adjacent channels of one output pixel, one 4-byte load of the input per tap (a warp: 32 x 4
// contiguous bytes) and the block's weights from shared memory, staged [tap][channel] as fp32 for
// its CH (<= 64) channels; one 4-byte store. The taps are summed in the order of the generic conv
// and the depthwise pair (kh, then kw; fmaf from 0; then the bias).
// (8 channels a thread with 16-byte loads, run 20 on the H200: the fixture's 7x7s 12 us a call,
// slower than the generic thread per output (8.3 us): a quarter of the threads, too few warps to
// hide the loads' latency on the small maps.)
constexpr int kDwNhwcThreads = 256;
constexpr int64_t kDwNhwcSmemBytes = 32 << 10;
bool dw_nhwc_ok(const Ctx& x) {
  if (x.k.op != OpKind::Conv || !x.has(1)) return false;
  const Buffer& X = x.in(0);
  const Buffer& W = x.in(1);
  const Buffer& Y = x.out();
  if (X.shape.size() != 4 || W.shape.size() != 4 || Y.shape.size() != 4) return false;
  const int64_t C = X.shape[1];
  const Attrs& a = x.k.attrs;
  if (a.i("group", 1) != C || Y.shape[1] != C || W.shape[0] != C || W.shape[1] != 1 || C % 2) return false;
  if (a.ints("strides", {1, 1}).size() != 2 || a.ints("dilations", {1, 1}).size() != 2 ||
      a.ints("pads", {0, 0, 0, 0}).size() != 4)
    return false;
  return nhwc_stored(X) && nhwc_stored(Y) && X.dtype == DType::F16 && Y.dtype == DType::F16 && is_float(W.dtype) &&
         W.shape[2] * W.shape[3] * 64 * 4 <= kDwNhwcSmemBytes;
}
std::string dw_nhwc(const Ctx& x, int64_t* blocks) {
  const Buffer& X = x.in(0);
  const Buffer& W = x.in(1);
  const Shape& os = x.out().shape;
  const Attrs& a = x.k.attrs;
  const auto s = a.ints("strides", {1, 1}), d = a.ints("dilations", {1, 1}), pd = a.ints("pads", {0, 0, 0, 0});
  const int64_t N = os[0], C = os[1], OH = os[2], OW = os[3], H = X.shape[2], Wd = X.shape[3];
  const int64_t KH = W.shape[2], KW = W.shape[3], TAPS = KH * KW, NPIX = N * OH * OW;
  int64_t CGB = 32;  // channel pairs a block
  while ((C / 2) % CGB) CGB /= 2;
  const int64_t CH = CGB * 2, PPB = kDwNhwcThreads / CGB, CC = C / CH, PB = (NPIX + PPB - 1) / PPB;
  *blocks = CC * PB;
  std::ostringstream b;
  b << "  // depthwise " << KH << "x" << KW << " NHWC: 2 channels a thread, " << CH << " channels x " << PPB
    << " pixels a block\n"
    << "  __shared__ __align__(16) float wsm[" << TAPS * CH << "];\n"
    << "  const int cc = (int)(blockIdx.x % " << CC << "), tid = threadIdx.x;\n"
    << "  const opv_idx pb = blockIdx.x / " << CC << ";\n"
    << "  for (int e = tid; e < " << TAPS * CH << "; e += " << kDwNhwcThreads << ") {\n"
    << "    const int ch = e / " << TAPS << ", q = e % " << TAPS << ";\n"
    << "    wsm[q * " << CH << " + ch] = " << load(W.dtype, "in1", "(cc * " + I(CH) + " + ch) * " + I(TAPS) + " + q") << ";\n"
    << "  }\n  __syncthreads();\n"
    << "  const int gq = tid % " << CGB << ";\n"
    << "  const opv_idx pix = pb * " << PPB << " + tid / " << CGB << ";\n"
    << "  if (pix >= " << I(NPIX) << ") return;\n"
    << "  const opv_idx o3 = pix % " << I(OW) << ", o2 = (pix / " << I(OW) << ") % " << I(OH) << ", o0 = pix / "
    << I(OH * OW) << ";\n"
    << "  const int c0 = cc * " << CH << " + gq * 2;\n"
    << "  float acc0 = 0.0f, acc1 = 0.0f;\n"
    << "#pragma unroll\n  for (int kh = 0; kh < " << KH << "; ++kh) {\n"
    << "    const opv_idx ih = o2 * " << I(s[0]) << " - " << I(pd[0]) << " + kh * " << I(d[0]) << ";\n"
    << "    if (ih < 0 || ih >= " << I(H) << ") continue;\n"
    << "#pragma unroll\n    for (int kw = 0; kw < " << KW << "; ++kw) {\n"
    << "      const opv_idx iw = o3 * " << I(s[1]) << " - " << I(pd[1]) << " + kw * " << I(d[1]) << ";\n"
    << "      if (iw < 0 || iw >= " << I(Wd) << ") continue;\n"
    << "      const unsigned xv = *(const unsigned*)(in0 + ((o0 * " << I(H) << " + ih) * " << I(Wd) << " + iw) * "
    << I(C) << " + c0);\n"
    << "      const float2 wv = *(const float2*)(wsm + (kh * " << KW << " + kw) * " << CH << " + gq * 2);\n"
    << "      acc0 = fmaf(opv_h2f((unsigned short)(xv & 0xffffu)), wv.x, acc0);\n"
    << "      acc1 = fmaf(opv_h2f((unsigned short)(xv >> 16)), wv.y, acc1);\n"
    << "    }\n  }\n"
    << "  unsigned short hv[2];\n"
    << "#pragma unroll\n  for (int j = 0; j < 2; ++j) {\n"
    << "    const opv_idx o1 = c0 + j;\n"
    << "    float v = (j ? acc1 : acc0)" << (x.has(2) ? " + " + load(x.in(2).dtype, "in2", "o1") : "") << ";\n"
    << post_ops(x) << "    hv[j] = opv_f2h(v);\n  }\n"
    << "  *(unsigned*)(out0 + pix * " << I(C) << " + c0) = (unsigned)hv[0] | ((unsigned)hv[1] << 16);\n";
  return b.str();
}

// Gemm (2-D, transA/transB, alpha, beta, C broadcast) and MatMul (rank >= 2, batch broadcast).
std::string matmul(const Ctx& x, std::string* why) {
  const Buffer& A = x.in(0);
  const Buffer& B = x.in(1);
  const bool gemm = x.k.op == OpKind::Gemm;
  // MatMul of a 1-D operand (numpy): A [K] as [1, K], B [K] as [K, 1], and the output with the
  // matching size-1 dims put back (the same elements in the same order).
  Shape as = A.shape, bs = B.shape, os = x.out().shape;
  if (!gemm && (as.size() == 1 || bs.size() == 1)) {
    if (!x.k.post_ops.empty()) return *why = "post-ops on a MatMul of a 1-D operand", "";
    if (bs.size() == 1) {
      bs.push_back(1);
      os.push_back(1);
    }
    if (as.size() == 1) {
      as.insert(as.begin(), 1);
      if (os.empty()) return *why = "MatMul output rank", "";
      os.insert(os.end() - 1, 1);
    }
  }
  if (as.size() < 2 || bs.size() < 2 || os.size() < 2 || (gemm && (as.size() != 2 || bs.size() != 2)))
    return *why = "A and B of rank 2 (Gemm) or >= 1 (MatMul) only", "";
  if (numel(os) != numel(x.out().shape)) return *why = "MatMul output shape", "";
  const bool ta = gemm && x.k.attrs.i("transA", 0), tb = gemm && x.k.attrs.i("transB", 0);
  const size_t ra = as.size(), rb = bs.size(), ro = os.size();
  const int64_t M = os[ro - 2], N = os[ro - 1];
  const int64_t K = ta ? as[0] : as[ra - 1];
  if ((tb ? bs[rb - 1] : bs[rb - 2]) != K) return *why = "inner dimensions differ", "";
  // Element (m, k) of A' and (k, n) of B' within their batch matrix.
  const std::string a_mk = ta ? "kk * " + I(as[ra - 1]) + " + m" : "m * " + I(K) + " + kk";
  const std::string b_kn = tb ? "n * " + I(K) + " + kk" : "kk * " + I(N) + " + n";
  // Batch offsets: the leading dims of A and B broadcast to the output's.
  Shape ob(os.begin(), os.end() - 2), ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  if (!broadcasts_to(ab, ob) || !broadcasts_to(bb, ob)) return *why = "batch dimensions do not broadcast", "";
  std::ostringstream s;
  s << coords(os);
  s << "  const opv_idx m = o" << ro - 2 << ", n = o" << ro - 1 << ";\n";
  s << "  const opv_idx a0 = (" << bcast_offset(ob, ab) << ") * " << I(M * K) << ";\n";
  s << "  const opv_idx b0 = (" << bcast_offset(ob, bb) << ") * " << I(K * N) << ";\n";
  // fp16 GEMV rows (B transposed: both operands contiguous along K): every lane reads 16 bytes
  // (8 halves) of A and of B per step, a warp 512 bytes of each.
  const bool vec = x.split && gemm && tb && !ta && A.dtype == DType::F16 && B.dtype == DType::F16 && K % 8 == 0;
  // The weight prologue (kEntryOpenLate) where B is a plan Constant and a lane's chunks of its row
  // fit a few registers: they are loaded before the wait for the kernels before this one in the
  // source and the PTX, A after it; the same chunks summed in the same order as the loop below.
  // (In the sm_90 SASS ptxas schedules the wait first, so B and A are loaded together after it:
  // session 26. A prologue through shared memory (cp.async) keeps its place.)
  const int64_t chunks = (K + 8 * kWarp - 1) / (8 * kWarp);
  if (vec && x.const_input(1) && chunks <= 8) {
    x.globals += kDot8;
    x.late_entry = true;
    s << "  opv_u4 wq[" << chunks << "];  // this lane's chunks of B's row n: weights, no kernel writes them\n"
      << "#pragma unroll\n  for (int q = 0; q < " << chunks << "; ++q) {\n"
      << "    const opv_idx kk = lane * 8 + q * " << 8 * kWarp << ";\n"
      << "    wq[q] = kk < " << I(K) << " ? *(const opv_u4*)(in1 + b0 + n * " << I(K) << " + kk) : opv_u4{0u, 0u, 0u, 0u};\n  }\n"
      << "  OPV_KERNEL_ENTRY();\n"
      << "  float acc = 0.0f;\n"
      << "#pragma unroll\n  for (int q = 0; q < " << chunks << "; ++q) {\n"
      << "    const opv_idx kk = lane * 8 + q * " << 8 * kWarp << ";\n"
      << "    if (kk < " << I(K) << ") acc = opv_dot8(*(const opv_u4*)(in0 + a0 + m * " << I(K) << " + kk), wq[q], acc);\n  }\n"
      << "  OPV_PDL_TRIGGER();  // the next kernel may be launched\n"
      << x.reduce_end();
  } else if (vec) {
    x.globals += kDot8;
    s << "  float acc = 0.0f;\n  for (opv_idx kk = lane * 8; kk < " << I(K) << "; kk += " << 8 * kWarp << ")\n"
      << "    acc = opv_dot8(*(const opv_u4*)(in0 + a0 + m * " << I(K) << " + kk), *(const opv_u4*)(in1 + b0 + n * "
      << I(K) << " + kk), acc);\n"
      << x.reduce_end();
  } else {
    s << "  float acc = 0.0f;\n  for (opv_idx kk = " << (x.split ? "lane" : "0") << "; kk < " << I(K) << "; kk += "
      << (x.split ? kWarp : 1) << ")\n"
      << "    acc = fmaf(" << load(A.dtype, "in0", "a0 + " + a_mk) << ", " << load(B.dtype, "in1", "b0 + " + b_kn)
      << ", acc);\n"
      << x.reduce_end();
  }
  s << "  float v = acc;\n";
  if (gemm) {
    const double alpha = x.k.attrs.f("alpha", 1.0), beta = x.k.attrs.f("beta", 1.0);
    if (alpha != 1.0) s << "  v *= " << float_literal(alpha) << ";\n";
    if (x.has(2)) {
      if (!broadcasts_to(x.in(2).shape, os)) return *why = "C does not broadcast", "";
      s << "  v += " << float_literal(beta) << " * " << load(x.in(2).dtype, "in2", bcast_offset(os, x.in(2).shape))
        << ";\n";
    }
  }
  return s.str();
}

// ReduceMean/Sum/Max/Min over normalised axes; GlobalAveragePool/GlobalMaxPool (all axes >= 2).
std::string reduce(const Ctx& x, std::string* why) {
  const Buffer& X = x.in(0);
  const Shape& xs = X.shape;
  const int64_t r = int64_t(xs.size());
  std::vector<bool> red(xs.size(), false);
  const OpKind op = x.k.op;
  if (op == OpKind::GlobalAveragePool || op == OpKind::GlobalMaxPool) {
    for (int64_t dd = 2; dd < r; ++dd) red[size_t(dd)] = true;
  } else {
    std::vector<int64_t> axes = x.k.attrs.ints("axes");
    if (axes.empty())
      for (int64_t dd = 0; dd < r; ++dd) axes.push_back(dd);
    for (int64_t ax : axes) {
      if (ax < 0 || ax >= r) return *why = "axis out of range", "";
      red[size_t(ax)] = true;
    }
  }
  const bool mean = op == OpKind::ReduceMean || op == OpKind::GlobalAveragePool;
  Shape kept, rshape;
  std::vector<int64_t> rstride;
  const std::vector<int64_t> st = strides_of(X);  // X's layout (Linear or NHWC)
  int64_t count = 1;
  for (size_t dd = 0; dd < xs.size(); ++dd) {
    kept.push_back(red[dd] ? 1 : xs[dd]);
    if (red[dd]) rshape.push_back(xs[dd]), rstride.push_back(st[dd]), count *= xs[dd];
  }
  if (count == 0) return *why = "empty reduction", "";
  std::ostringstream s;
  s << coords(kept);  // the output has the kept shape's element count (keepdims or not)
  std::string base;
  for (size_t dd = 0; dd < xs.size(); ++dd)
    if (!red[dd]) base += (base.empty() ? "" : " + ") + std::string("o") + std::to_string(dd) + " * " + I(st[dd]);
  s << "  const opv_idx base = " << (base.empty() ? "0" : base) << ";\n";
  // One pass over the reduced elements (element `e` at `off`) with `step` on the accumulator.
  auto pass = [&](const std::string& init, const std::string& step) {
    s << "  float " << init << ";\n";
    s << "  for (opv_idx q = 0; q < " << I(count) << "; ++q) {\n    opv_idx t = q, off = base;\n";
    for (size_t j = rshape.size(); j-- > 0;)
      s << "    off += (t % " << I(rshape[j]) << ") * " << I(rstride[j]) << "; t /= " << I(rshape[j]) << ";\n";
    s << "    const float e = " << load(X.dtype, "in0", "off") << ";\n    " << step << "\n  }\n";
  };
  switch (op) {
    case OpKind::ReduceMax:
    case OpKind::GlobalMaxPool: pass("acc = -OPV_INF", "acc = fmaxf(acc, e);"); break;
    case OpKind::ReduceMin: pass("acc = OPV_INF", "acc = fminf(acc, e);"); break;
    case OpKind::ReduceProd: pass("acc = 1.0f", "acc *= e;"); break;
    case OpKind::ReduceL1: pass("acc = 0.0f", "acc += fabsf(e);"); break;
    case OpKind::ReduceL2:
    case OpKind::ReduceSumSquare: pass("acc = 0.0f", "acc += e * e;"); break;
    case OpKind::ReduceLogSumExp:  // the maximum first, as the reference (exp would overflow)
      pass("mx = -OPV_INF", "mx = fmaxf(mx, e);");
      s << "  if (isinf(mx)) mx = 0.0f;\n";
      pass("acc = 0.0f", "acc += expf(e - mx);");
      break;
    default: pass("acc = 0.0f", "acc += e;"); break;  // Sum, Mean, LogSum, GlobalAveragePool
  }
  s << "  float v = acc" << (mean ? " / " + float_literal(double(count)) : "") << ";\n";
  if (op == OpKind::ReduceL2) s << "  v = sqrtf(v);\n";
  if (op == OpKind::ReduceLogSum) s << "  v = logf(v);\n";
  if (op == OpKind::ReduceLogSumExp) s << "  v = logf(v) + mx;\n";
  // The post-ops' operands are indexed by the coordinates o<d> above, those of the kept shape.
  if (!x.k.post_ops.empty() && kept != x.out().shape) return *why = "post-ops on a reduction without keepdims", "";
  return s.str();
}

std::string pool(const Ctx& x, std::string* why) {
  const Buffer& X = x.in(0);
  const Shape& os = x.out().shape;
  if (X.shape.size() != 4 || os.size() != 4) return *why = "2-D pools only", "";
  const Attrs& a = x.k.attrs;
  const auto k = a.ints("kernel"), s = a.ints("strides", {1, 1}), p = a.ints("pads", {0, 0, 0, 0}),
             d = a.ints("dilations", {1, 1});
  if (k.size() != 2 || s.size() != 2 || p.size() != 4 || d.size() != 2) return *why = "pool attributes", "";
  const bool mx = x.k.op == OpKind::MaxPool;
  const bool include_pad = a.i("count_include_pad", 0) != 0;
  const int64_t H = X.shape[2], W = X.shape[3];
  const std::vector<int64_t> xst = strides_of(X);  // Linear or NHWC
  std::ostringstream b;
  b << coords(x.out());
  b << "  const opv_idx xb = o0 * " << I(xst[0]) << " + o1 * " << I(xst[1]) << ";\n";
  b << "  float acc = " << (mx ? "-OPV_INF" : "0.0f") << ";\n  int n = 0;\n";
  b << "  for (int kh = 0; kh < " << k[0] << "; ++kh) {\n"
    << "    const opv_idx ih = o2 * " << I(s[0]) << " - " << I(p[0]) << " + kh * " << I(d[0]) << ";\n"
    << "    for (int kw = 0; kw < " << k[1] << "; ++kw) {\n"
    << "      const opv_idx iw = o3 * " << I(s[1]) << " - " << I(p[1]) << " + kw * " << I(d[1]) << ";\n"
    << "      if (ih < 0 || ih >= " << I(H) << " || iw < 0 || iw >= " << I(W) << ") {";
  // AveragePool with count_include_pad counts padding inside the padded input, not beyond it.
  if (!mx && include_pad)
    b << " if (ih < " << I(H + p[2]) << " && iw < " << I(W + p[3]) << ") ++n;";
  b << " continue; }\n";
  const std::string e = load(X.dtype, "in0", "xb + ih * " + I(xst[2]) + " + iw * " + I(xst[3]));
  b << (mx ? "      acc = fmaxf(acc, " + e + ");\n" : "      acc += " + e + ";\n") << "      ++n;\n    }\n  }\n";
  b << "  float v = " << (mx ? "acc" : "(n ? acc / (float)n : 0.0f)") << ";\n";
  return b.str();
}

// Concat: a typed copy per element; or, where the output type differs from the inputs' or the
// kernel has post-ops (a Concat fused with the Cast after it, fuse_concat_cast), the element as
// float for the shared epilogue. Post-op operands follow the concatenated inputs.
// The concatenated inputs of a Concat call: those before any post-op operand.
static size_t concat_inputs(const Ctx& x) {
  size_t n_cat = x.c.inputs.size();
  for (const PostOp& po : x.k.post_ops)
    if (po.input >= 0) n_cat = std::min(n_cat, size_t(po.input));
  return n_cat;
}
// Whether the Concat converts (post-ops, or an input of another dtype than the output): its
// body then sets `float v` from the input that holds output coordinates o<d>.
static bool concat_converts(const Ctx& x) {
  bool convert = !x.k.post_ops.empty();
  for (size_t j = 0; j < concat_inputs(x); ++j) convert |= x.has(j) && x.in(j).dtype != x.out().dtype;
  return convert;
}
// The input selection at output coordinates o<d> (declared before it), `indent` before each
// line: converting (or `to_v`), `v = input element as float` (v declared before it); else a typed
// copy into out0[i] and return. "" with *why when the inputs do not fit the output.
static std::string concat_select(const Ctx& x, std::string* why, const std::string& indent, bool to_v) {
  const Shape& os = x.out().shape;
  const int64_t axis = x.k.attrs.i("axis", 0);
  const bool convert = to_v || concat_converts(x);
  std::ostringstream s;
  int64_t start = 0;
  for (size_t j = 0; j < concat_inputs(x); ++j) {
    if (!x.has(j)) continue;
    const Buffer& b = x.in(j);
    if (b.shape.size() != os.size() || (!convert && b.dtype != x.out().dtype))
      return *why = "inputs differ in dtype or rank", "";
    const std::vector<int64_t> st = strides_of(b);
    std::string off;
    for (size_t dd = 0; dd < os.size(); ++dd) {
      std::string cd = std::to_string(dd).insert(0, 1, 'o');  // (not "o" + ...: GCC 12 -Wrestrict)
      if (int64_t(dd) == axis) cd += " - " + I(start);
      off += (off.empty() ? "(" : " + (") + cd + ") * " + I(st[dd]);
    }
    const int64_t end = start + b.shape[size_t(axis)];
    if (convert)
      s << indent << (start ? "else if" : "if") << " (o" << axis << " < " << I(end) << ") v = "
        << load(b.dtype, x.in_name(j), off) << ";\n";
    else
      s << indent << "if (o" << axis << " < " << I(end) << ") { out0[i] = " << x.in_name(j) << "[" << off << "]; return; }\n";
    start = end;
  }
  if (start != os[size_t(axis)]) return *why = "input sizes do not add up to the output", "";
  return s.str();
}
std::string concat(const Ctx& x, std::string* why) {
  const Shape& os = x.out().shape;
  const int64_t axis = x.k.attrs.i("axis", 0);
  if (axis < 0 || axis >= int64_t(os.size())) return *why = "axis out of range", "";
  const bool convert = concat_converts(x);
  if (convert && !is_float(x.out().dtype)) return *why = "a converting Concat to a non-float type", "";
  const std::string sel = concat_select(x, why, "  ", false);
  if (sel.empty()) return "";
  return coords(x.out()) + (convert ? "  float v = 0.0f;\n" : "") + sel;
}
// concat_vec's selection read as vectors: where every concatenated input is a dense row-major
// tensor of at most 8-byte elements whose V consecutive elements of the last dim span 4, 8 or 16
// bytes, the input holding coordinates o<d> (o<r-1>b: the first of the V) is read with one load
// of those bytes into vs[0 .. V-1] as floats (the uint8 input pack: one 8-byte load a thread
// where it made eight 1-byte loads). "" where an input does not fit.
static std::string concat_select_vec(const Ctx& x, int64_t V, const std::string& indent) {
  const Shape& os = x.out().shape;
  const int64_t axis = x.k.attrs.i("axis", 0), r = int64_t(os.size());
  std::ostringstream s;
  int64_t start = 0;
  for (size_t j = 0; j < concat_inputs(x); ++j) {
    if (!x.has(j)) continue;
    const Buffer& b = x.in(j);
    const int64_t bytes = int64_t(dtype_size(b.dtype)) * V;
    const char* ct = c_type(b.dtype);
    if (!ct || (bytes != 4 && bytes != 8 && bytes != 16) || b.layout != Layout::Linear) return "";
    const std::vector<int64_t> st = strides_of(b);
    if (st.back() != 1 || b.shape.back() != os.back()) return "";
    std::string off;
    for (int64_t dd = 0; dd < r; ++dd) {
      std::string cd = std::to_string(dd).insert(0, 1, 'o');
      if (dd == r - 1) cd += "b";
      if (dd == axis) cd += " - " + I(start);
      off += (off.empty() ? "(" : " + (") + cd + ") * " + I(st[size_t(dd)]);
    }
    const char* vt = bytes == 16 ? "uint4" : bytes == 8 ? "uint2" : "unsigned";
    const int64_t end = start + b.shape[size_t(axis)];
    s << indent << (start ? "else if" : "if") << " (o" << axis << " < " << I(end) << ") {\n"
      << indent << "  const " << vt << " raw = *(const " << vt << "*)(" << x.in_name(j) << " + " << off << ");\n"
      << indent << "  const " << ct << "* e = (const " << ct << "*)&raw;\n"
      << "#pragma unroll\n"
      << indent << "  for (int j = 0; j < " << V << "; ++j) vs[j] = " << load(b.dtype, "e", "j") << ";\n"
      << indent << "}\n";
    start = end;
  }
  if (start != os[size_t(axis)]) return "";
  return s.str();
}
// A Concat into a Linear fp16 (fp32) output whose last dim is a multiple of 8 (4), along another
// axis, every operand Linear: a thread computes 8 (4) consecutive outputs of the last dim, each
// as concat() does (selection, conversion, post-ops at its coordinates), and stores them with one
// 16-byte store (the input pack: 786,432 threads with 2-byte stores before). *count: the threads.
// "" when the call does not fit this form.
std::string concat_vec(const Ctx& x, int64_t* count) {
  const Buffer& y = x.out();
  const Shape& os = y.shape;
  const int64_t axis = x.k.attrs.i("axis", 0), r = int64_t(os.size());
  const int64_t V = y.dtype == DType::F16 ? 8 : y.dtype == DType::F32 ? 4 : 0;
  if (V == 0 || r < 2 || axis < 0 || axis >= r - 1 || os.back() % V || y.layout != Layout::Linear || numel(os) == 0)
    return "";
  for (size_t j = 0; j < x.c.inputs.size(); ++j)
    if (x.has(j) && x.in(j).layout != Layout::Linear) return "";
  std::string why;
  if (!post_ops_ok(x, &why)) return "";
  // Typed copies (no conversion) read through `v` too: fp16 and fp32 values round-trip exactly.
  const std::string sel = concat_select(x, &why, "    ", true);
  if (sel.empty()) return "";
  *count = numel(os) / V;
  const std::string L = "o" + std::to_string(r - 1);
  std::ostringstream s;
  s << "  // " << V << " outputs of the last dim a thread, one 16-byte store\n"
    << "  const opv_idx e0 = i * " << V << ";\n";
  int64_t inner = os.back();
  s << "  const opv_idx " << L << "b = e0 % " << I(os.back()) << ";\n";
  for (int64_t d = r - 2; d >= 0; --d) {
    s << "  const opv_idx o" << d << " = e0 / " << I(inner) << (d > 0 ? " % " + I(os[size_t(d)]) : std::string()) << ";\n";
    inner *= os[size_t(d)];
  }
  s << "  __align__(16) " << (V == 8 ? "unsigned short" : "float") << " hv[" << V << "];\n";
  const std::string vsel = concat_select_vec(x, V, "  ");
  if (!vsel.empty()) s << "  float vs[" << V << "] = {};\n" << vsel;
  s << "#pragma unroll\n  for (int j = 0; j < " << V << "; ++j) {\n"
    << "    const opv_idx " << L << " = " << L << "b + j;\n"
    << (vsel.empty() ? "    float v = 0.0f;\n" + sel : std::string("    float v = vs[j];\n"))
    << post_ops(x) << "    hv[j] = " << (V == 8 ? "opv_f2h(v)" : "v") << ";\n  }\n"
    << "  *(uint4*)(out0 + e0) = *(const uint4*)hv;\n";
  return s.str();
}

// Reorder (the layout-domain pass's conversions, NCHW <-> NHWC): a typed copy, each thread one
// element in the output's storage order (coalesced stores; the reads stride through the input).
std::string reorder(const Ctx& x, std::string* why) {
  const Buffer& X = x.in(0);
  const Buffer& Y = x.out();
  if (X.shape != Y.shape || X.dtype != Y.dtype || !x.k.post_ops.empty())
    return *why = "a Reorder between different shapes or dtypes", "";
  return coords(Y) + "  out0[i] = in0[" + bcast_offset(Y.shape, X) + "];\n";
}

// Whether the family of call x reads and writes NHWC buffers (strides_of / coords(Buffer)); the
// others (Gemm, MatMul, Softmax, Transpose, Reshape, ...) see Linear buffers only.
bool nhwc_family(const Ctx& x) {
  const OpKind op = x.k.op;
  if (op == OpKind::Conv || op == OpKind::MaxPool || op == OpKind::AveragePool || op == OpKind::Concat ||
      op == OpKind::Reorder || op == OpKind::Expand || is_unary(op) || is_binary(op))
    return true;
  const bool reduction = op == OpKind::GlobalAveragePool || op == OpKind::GlobalMaxPool || op == OpKind::ReduceMean ||
                         op == OpKind::ReduceSum || op == OpKind::ReduceMax || op == OpKind::ReduceMin;
  return reduction && !nhwc_stored(x.out());  // any input layout; the output indexed row-major
}

std::string transpose(const Ctx& x, std::string* why) {
  const Shape& os = x.out().shape;
  const Shape& is = x.in(0).shape;
  const std::vector<int64_t> perm = x.k.attrs.ints("perm");
  if (perm.size() != is.size() || os.size() != is.size()) return *why = "perm does not match the rank", "";
  const std::vector<int64_t> st = row_major_strides(is);
  std::string off;
  for (size_t dd = 0; dd < os.size(); ++dd) {
    if (perm[dd] < 0 || perm[dd] >= int64_t(is.size())) return *why = "perm out of range", "";
    off += (off.empty() ? "" : " + ") + std::string("o") + std::to_string(dd) + " * " + I(st[size_t(perm[dd])]);
  }
  if (off.empty()) off = "0";
  if (x.k.post_ops.empty() && x.in(0).dtype == x.out().dtype) return coords(os) + "  out0[i] = in0[" + off + "];\n";
  if (!is_float(x.out().dtype)) return *why = "post-ops on a non-float transpose", "";
  return coords(os) + "  float v = " + load(x.in(0).dtype, "in0", off) + ";\n";
}

// Dense 1x1 convolutions (stride 1, no padding): per image a GEMM Y[m, p] = sum_c W[m, c] X[c, p]
// over the P = H*W pixels, tiled through shared memory. A block of 256 threads computes a
// 64 (channels) x 64 (pixels) tile, each thread 4 x 4 of it (32 x 32 and 2 x 2 on small layers),
// stepping through the channels 16 at a time (W and X tiles staged in shared memory, X read
// coalesced along the pixels).
// Layers too small to give the GPU kTileMinBlocks tiles of 64 x 64 (the late stages' 4x8 and 8x16
// maps) take 32 x 32 tiles; where they also sum over many channels (>= kTileSplitMinC), the block's
// threads form kTileGroups groups that take every kTileGroups-th channel chunk (four times fewer
// serial steps, each waiting on memory) and add their partial tiles in shared memory at the end.
constexpr int kTileK = 16, kTileThreads = 256, kTileMinBlocks = 128, kTileGroups = 4, kTileSplitMinC = 256;
bool conv1x1_tiled_ok(const Ctx& x) {
  if (x.k.op != OpKind::Conv) return false;
  const Buffer& W = x.in(1);
  const Shape& xs = x.in(0).shape;
  if (W.shape.size() != 4 || xs.size() != 4 || W.shape[2] != 1 || W.shape[3] != 1) return false;
  const Attrs& a = x.k.attrs;
  if (a.i("group", 1) != 1 || a.ints("strides", {1, 1}) != std::vector<int64_t>{1, 1} ||
      a.ints("pads", {0, 0, 0, 0}) != std::vector<int64_t>{0, 0, 0, 0})
    return false;
  const Shape& os = x.out().shape;
  return os.size() == 4 && os[2] == xs[2] && os[3] == xs[3] && W.shape[1] == xs[1];
}
// The whole kernel body (after `i`); *threads: the launch's thread count.
std::string conv1x1_tiled(const Ctx& x, int64_t* threads) {
  const Buffer& X = x.in(0);
  const Buffer& W = x.in(1);
  const Shape& os = x.out().shape;
  const int64_t N = os[0], M = os[1], C = X.shape[1], OW = os[3], P = os[2] * os[3];
  auto blocks = [&](int64_t tile) { return N * ((M + tile - 1) / tile) * ((P + tile - 1) / tile); };
  const bool large = blocks(64) >= kTileMinBlocks;
  const int64_t T = large ? 64 : 32;                          // tile: T channels x T pixels
  const int64_t G = !large && C >= kTileSplitMinC ? kTileGroups : 1;  // channel groups
  const int64_t GT = kTileThreads / G;                          // threads per group
  const int64_t MU = T / int64_t(std::lround(std::sqrt(double(GT))));  // outputs per thread, per side
  const int64_t SIDE = T / MU;                                  // threads per side of the tile
  const int64_t MT = (M + T - 1) / T, PT = (P + T - 1) / T;
  *threads = N * MT * PT * kTileThreads;
  // Pixel p of image n, channel c: n * sN + c * sC + p * sP (Linear: sP = 1; NHWC: sC = 1, sP = C).
  auto at = [](const Buffer& b, const std::string& n, const std::string& c, const std::string& p) {
    const bool nhwc = nhwc_stored(b);
    const int64_t ch = b.shape[1], pix = b.shape[2] * b.shape[3];
    return n + " * " + I(ch * pix) + " + " + c + (nhwc ? "" : " * " + I(pix)) + " + " + p + (nhwc ? " * " + I(ch) : "");
  };
  const std::string t = std::to_string(T), tk = std::to_string(kTileK), mu = std::to_string(MU),
                    g = std::to_string(G), gt = std::to_string(GT);
  std::ostringstream b;
  b << "  __shared__ float ws[" << g << "][" << tk << "][" << t << "];\n"
    << "  __shared__ float xs[" << g << "][" << tk << "][" << t << "];\n"
    << "  __shared__ float red[" << g << "][" << T * T << "];\n"
    << "  opv_idx blk = blockIdx.x;\n"
    << "  const opv_idx p0 = (blk % " << PT << ") * " << t << "; blk /= " << PT << ";\n"
    << "  const opv_idx m0 = (blk % " << MT << ") * " << t << ";\n  const opv_idx n = blk / " << MT << ";\n"
    << "  const int tid = threadIdx.x, grp = tid / " << gt << ", lt = tid % " << gt << ";\n"
    << "  const int tm = (lt / " << SIDE << ") * " << mu << ", tp = (lt % " << SIDE << ") * " << mu << ";\n"
    << "  float acc[" << mu << "][" << mu << "] = {};\n"
    << "  for (opv_idx kb = 0; kb < " << I(C) << "; kb += " << G * kTileK << ") {\n"
    << "    const opv_idx k0 = kb + grp * " << tk << ";\n"
    << "    for (int e = lt; e < " << T * kTileK << "; e += " << gt << ") {\n"
    << "      const int mm = e / " << tk << ", kk = e % " << tk << ";\n"
    << "      const opv_idx m = m0 + mm, c = k0 + kk;\n"
    << "      ws[grp][kk][mm] = (m < " << I(M) << " && c < " << I(C) << ") ? "
    << load(W.dtype, "in1", "m * " + I(C) + " + c") << " : 0.0f;\n"
    << "      const int kx = e / " << t << ", pp = e % " << t << ";\n"
    << "      const opv_idx cx = k0 + kx, p = p0 + pp;\n"
    << "      xs[grp][kx][pp] = (cx < " << I(C) << " && p < " << I(P) << ") ? "
    << load(X.dtype, "in0", at(X, "n", "cx", "p")) << " : 0.0f;\n"
    << "    }\n    __syncthreads();\n"
    << "#pragma unroll\n    for (int kk = 0; kk < " << tk << "; ++kk) {\n"
    << "      float a[" << mu << "], bv[" << mu << "];\n"
    << "#pragma unroll\n      for (int q = 0; q < " << mu << "; ++q) { a[q] = ws[grp][kk][tm + q]; bv[q] = xs[grp][kk][tp + q]; }\n"
    << "#pragma unroll\n      for (int r = 0; r < " << mu << "; ++r)\n"
    << "#pragma unroll\n        for (int q = 0; q < " << mu << "; ++q) acc[r][q] = fmaf(a[r], bv[q], acc[r][q]);\n"
    << "    }\n    __syncthreads();\n  }\n"
    // The groups' partial tiles, added in a fixed order; then one output per thread and step,
    // adjacent threads on adjacent pixels (coalesced stores).
    << "#pragma unroll\n  for (int r = 0; r < " << mu << "; ++r)\n"
    << "#pragma unroll\n    for (int q = 0; q < " << mu << "; ++q) red[grp][(tm + r) * " << t << " + tp + q] = acc[r][q];\n"
    << "  __syncthreads();\n"
    << "  for (int o = tid; o < " << T * T << "; o += " << kTileThreads << ") {\n"
    << "    const opv_idx m = m0 + o / " << t << ", p = p0 + o % " << t << ";\n"
    << "    if (m >= " << I(M) << " || p >= " << I(P) << ") continue;\n"
    << "    float s = 0.0f;\n"
    << "#pragma unroll\n    for (int q = 0; q < " << g << "; ++q) s += red[q][o];\n"
    << "    const opv_idx o0 = n, o1 = m, o2 = p / " << I(OW) << ", o3 = p % " << I(OW) << ";\n"
    << "    (void)o0; (void)o1; (void)o2; (void)o3;\n"
    << "    float v = s" << (x.has(2) ? " + " + load(x.in(2).dtype, "in2", "m") : "") << ";\n";
  b << post_ops(x) << "    " << store(x.out().dtype, "out0", at(x.out(), "n", "m", "p"), "v") << "\n"
    << "  }\n";
  return b.str();
}

// Tensor-core 1x1 convolutions (fp16 activations and weights, plan arch compute_80 or newer): the
// same per-image GEMM Y[m, p] = sum_c W[m, c] X[c, p] with mma.sync m16n8k16 (fp16 inputs, fp32
// accumulators). A block of 4 warps computes a BM x BN tile (64x64, 64x32 or 32x32); every warp
// holds a 32 (channels) x 32 (pixels) accumulator tile, and the warps a tile has beyond
// (BM/32) x (BN/32) split each stage's channels between them (WK groups, added in shared memory
// at the end). Stages of KC channels go global -> shared memory with 16-byte cp.async where the
// rows are 16-byte aligned (K % 8, P % 8; element loads otherwise), double-buffered when a block
// has more than one stage; fragments come from shared memory with ldmatrix (.trans for X, which
// is pixel-major). Rows of both tiles are padded by 8 halves, so the 8 addresses of an ldmatrix
// phase fall in distinct bank groups.
// Layers too small for kMmaMinBlocks tiles split the channels over S blocks as well (split-K):
// every block writes its fp32 partial tile to a workspace in the module (__device__ arrays, so no
// ABI change), and the block that finishes a tile last (a per-tile counter, atomicAdd after
// __threadfence) adds the S partials in split order (deterministic), runs the epilogue and resets
// the counter for the next launch. Calls sharing such a kernel share its workspace, so they must
// not run concurrently (they don't: calls run in plan order on one stream, cuda_abi.h).
constexpr int kMmaThreads = 128;                   // 4 warps
constexpr int64_t kMmaMinBlocks = 96;              // tiles enough to fill the GPU without split-K
constexpr int64_t kMmaMaxSplit = 16;               // ... with at most this many splits
constexpr int64_t kMmaSingleStageBytes = 40 << 10; // one stage of the whole block's channels, up to this
constexpr int64_t kMmaDoubleStageBytes = 46 << 10; // two stages of KC channels, up to this
constexpr int64_t kMmaReduceInFlight = 48;         // float4 loads a thread in flight in split-K's last block
// struct MmaShape: codegen_internal.h
// The GEMM of N images, each M x P (rows x columns) over K: NCHW rows are output channels and
// columns pixels; NHWC (kmajor_b) rows are pixels and columns output channels.
MmaShape mma_shape(int64_t N, int64_t M, int64_t P, int64_t K, bool kmajor_b, int64_t target_blocks) {
  MmaShape s;
  s.kmajor_b = kmajor_b;
  const std::pair<int64_t, int64_t> cands[] = {{64, 64}, {64, 32}, {32, 32}};
  bool chosen = false;
  for (const auto& [bm, bn] : cands) {
    if ((bn == 64 && P <= 32) || (bm == 64 && M <= 32)) continue;  // half a tile of padding
    s.BM = bm, s.BN = bn;
    s.tiles = N * ((M + bm - 1) / bm) * ((P + bn - 1) / bn);
    if (s.tiles >= kMmaMinBlocks) { chosen = true; break; }
  }
  s.WM = s.BM / 32, s.WN = s.BN / 32, s.WK = 4 / (s.WM * s.WN);
  const int64_t gran = 16 * s.WK;                         // one k16 step per warp
  const int64_t kmax = (K + gran - 1) / gran * gran;
  s.S = chosen ? 1 : std::min<int64_t>({(target_blocks + s.tiles - 1) / s.tiles, kMmaMaxSplit, kmax / gran});
  s.S = std::max<int64_t>(s.S, 1);
  s.KB = ((K + s.S - 1) / s.S + gran - 1) / gran * gran;  // channels per block
  if (s.stage_bytes(s.KB) <= kMmaSingleStageBytes) {
    s.KC = s.KB;
  } else {
    s.KC = gran;
    while (2 * s.stage_bytes(s.KC + gran) <= kMmaDoubleStageBytes && s.KC + gran <= s.KB) s.KC += gran;
    s.KB = (s.KB + s.KC - 1) / s.KC * s.KC;
  }
  s.S = (K + s.KB - 1) / s.KB;
  return s;
}
// (Dense non-1x1 convs as implicit GEMMs on these tiles, X gathered im2col with element loads,
// were tried for the stem on 2026-12-03: 30 us on the H200 against 17 us for conv_multi. Not kept;
// conv_mma.cpp stages the input rows once per block instead: 9.9 against 21.2 us under ncu.)
bool conv1x1_mma_ok(const Ctx& x) {
  return x.sm >= 80 && conv1x1_tiled_ok(x) && x.in(0).dtype == DType::F16 && x.in(1).dtype == DType::F16 &&
         nhwc_stored(x.in(0)) == nhwc_stored(x.out());  // both NCHW or both NHWC
}
// Module-scope helpers of the mma kernels (PTX: ldmatrix, mma.sync, cp.async; no headers).
// opv_smem: the shared-window address of a generic pointer into shared memory. Through the
// compiler's intrinsic (not inline asm) ptxas folds an array's base and constant offsets into the
// ldmatrix/cp.async address operands: ffn_256's batch-32 kernel 1,336 SASS instructions against
// 1,648 with the asm cvta, whose 64-bit generic address arithmetic it kept per access (session 30).
const char* kMmaHelpers = R"(__device__ __forceinline__ unsigned opv_smem(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void opv_cp16(void* dst, const void* src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(opv_smem(dst)), "l"(src), "r"(ok ? 16 : 0) : "memory");
}
__device__ __forceinline__ void opv_ldsm4(unsigned* r, const unsigned short* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(opv_smem(p)) : "memory");
}
__device__ __forceinline__ void opv_ldsm4t(unsigned* r, const unsigned short* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(opv_smem(p)) : "memory");
}
__device__ __forceinline__ void opv_mma(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ float opv_ldcg(const float* p) { float v; asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p)); return v; }
)";
// Module-scope helpers of kernels whose blocks form thread-block clusters (compute_90+): the
// cluster-wide barrier (release/acquire: shared-memory writes before it are visible to every block
// of the cluster after it), the address of the same shared variable in block `rank` of the cluster
// (mapa.shared::cluster), a 16-byte load and a 2-byte store at such an address, and the barrier's
// halves (arrive with release, wait with acquire) for kernels that work between them.
// opv_cluster_exit() is the last barrier of a kernel whose blocks read their peers' shared memory:
// no block leaves while a peer may still read it. Its arrive is relaxed: each remote load before
// it has returned (the stores before the barrier consumed its value), and the block has nothing
// to publish to its peers, so the release fence is left out; that fence waited until the block's
// global stores (the kernel's outputs) were acknowledged before the arrive.
const char* kClusterHelpers = R"(__device__ __forceinline__ void opv_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ void opv_cluster_exit() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
__device__ __forceinline__ void opv_cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void opv_cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
__device__ __forceinline__ void opv_cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
__device__ __forceinline__ unsigned opv_cluster_addr(const void* p, unsigned rank) {
  unsigned a;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(opv_smem(p)), "r"(rank));
  return a;
}
__device__ __forceinline__ float4 opv_ld_cluster4(unsigned a) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ void opv_st_cluster2(unsigned a, unsigned short v) {
  asm volatile("st.shared::cluster.u16 [%0], %1;" :: "r"(a), "h"(v) : "memory");
}
__device__ __forceinline__ void opv_st_cluster4(unsigned a, uint4 v) {
  asm volatile("st.shared::cluster.v4.b32 [%0], {%1,%2,%3,%4};" :: "r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
)";
// The push form of a cluster split's sum (TuneKey::ClusterPush): each block's mbarrier, made with
// one expected arrival (the block's own, which also sets the bytes its share will receive) before
// the cluster barrier at the kernel's start (fence.mbarrier_init orders the init before that
// barrier's relaxed arrive for the peers); a peer's 16-byte st.async into the block's receive
// buffer completes 16 of those bytes on it, and the block waits for the phase (parity 0) to
// complete. No barrier at exit: a block leaves after its own wait, by which every push into it has
// landed, and a push's source is registers.
const char* kClusterPushHelpers = R"(__device__ __forceinline__ void opv_mbar_init(void* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(opv_smem(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void opv_mbar_arrive_expect(void* bar, unsigned bytes) {
  unsigned long long state;
  asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cta.b64 %0, [%1], %2;" : "=l"(state) : "r"(opv_smem(bar)), "r"(bytes) : "memory");
  (void)state;
}
__device__ __forceinline__ void opv_fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void opv_mbar_wait(void* bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(opv_smem(bar)), "r"(parity) : "memory");
  } while (!done);
}
__device__ __forceinline__ void opv_st_async4(unsigned a, float4 v, unsigned bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1,%2,%3,%4}, [%5];"
               :: "r"(a), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(bar) : "memory");
}
// Float4 f of block sp's partial to its owner o = f / per: row sp of o's receive buffer rs ([S][per]
// float4s), counted by o's mbarrier bar.
__device__ __forceinline__ void opv_push4(const float4* rs, void* bar, int f, int sp, int per, float4 v) {
  const int o = f / per;
  opv_st_async4(opv_cluster_addr(rs, o) + (unsigned)(sp * per + f - o * per) * 16u, v, opv_cluster_addr(bar, o));
}
)";
std::string cluster_push_start(int64_t per) {
  const std::string P = std::to_string(per);
  return "  if (tid == 0) {  // this block's mbarrier: its one arrival sets the bytes of its share S blocks push\n"
         "    opv_mbar_init(&rbar_, 1);\n"
         "    const int share = TILE / 4 - sp * " + P + " < " + P + " ? TILE / 4 - sp * " + P + " : " + P + ";\n"
         "    opv_mbar_arrive_expect(&rbar_, (unsigned)(S * (share > 0 ? share : 0) * 16));\n"
         "    opv_fence_mbar_init();\n  }\n";
}
// The whole kernel body (after `i`); *blocks: the launch's block count; *globals: module-scope
// declarations (helpers, split-K workspace).
// NHWC (X and Y channels-last): the transposed GEMM Y[p, m] = sum_c X[p, c] W[m, c], rows =
// pixels (A = X) and columns = output channels (B = W); both operands are contiguous along the
// channels, so B's tile is staged [BN][KC] and read with plain ldmatrix (the .col fragment), and
// adjacent threads store adjacent channels. The generated code's M / P / m / p name the rows and
// columns of whichever GEMM it is.
std::string conv1x1_mma(const Ctx& x, int64_t* blocks, std::string* globals) {
  const Buffer& X = x.in(0);
  const Shape& os = x.out().shape;
  const bool nhwc = nhwc_stored(X);
  const int64_t N = os[0], CH = os[1], K = X.shape[1], OW = os[3], PIX = os[2] * os[3];
  const int64_t M = nhwc ? PIX : CH, P = nhwc ? CH : PIX;  // GEMM rows, columns
  const MmaShape sh = mma_shape(N, M, P, K, nhwc, tune_target(x.p, TuneKey::MmaBlocks));
  const int64_t MT = (M + sh.BM - 1) / sh.BM, PT = (P + sh.BN - 1) / sh.BN, TILE = sh.BM * sh.BN;
  const int64_t nbuf = sh.KB > sh.KC ? 2 : 1;
  const int64_t stage_halves = sh.stage_bytes(sh.KC) / 2;
  const int64_t smem = std::max(nbuf * stage_halves * 2, sh.WK * TILE * 4);
  *blocks = sh.tiles * sh.S;
  *globals = kMmaHelpers;
  // Split-K through a thread-block cluster (compute_90+, Options::cluster): the S blocks of a tile
  // are one cluster (rank = sp); each leaves its partial tile in its shared memory, and after a
  // cluster barrier every block adds its share of the tile's float4s (PER = ceil(TILE / 4 / S)
  // from sp * PER; until session 32 float4s sp * threads + tid, + S * threads, ...: a 64 x 32 tile
  // split 16 ways went to 4 of the 16 blocks) from all S (ld.shared::cluster, in split order from
  // 0: the workspace form's sums bit for bit) and runs their epilogue; a second barrier keeps every
  // block's partial alive until all have read it. No workspace, fence, counter or last-block pass.
  const bool cluster = sh.S > 1 && x.sm >= 90 && Options::from_meta(x.p.meta).cluster;
  // The push form (TuneKey::ClusterPush, kClusterPushHelpers): each block pushes every peer's
  // share of its partial into that peer's receive buffer ([S][PER] float4s of static shared memory,
  // where it fits the 48 KB) with st.async, counted by the peer's mbarrier; no exit barrier.
  const int64_t per = (TILE / 4 + sh.S - 1) / sh.S;  // the cluster form's float4s a block (PER)
  const bool push = cluster && tune_target(x.p, TuneKey::ClusterPush) == 1 && sh.S * per * 16 <= kClusterPushMaxBytes &&
                    smem + sh.S * per * 16 + 64 <= (48 << 10) - 256;
  if (cluster) {
    x.cluster = sh.S;
    *globals += kClusterHelpers;
    if (push) *globals += kClusterPushHelpers;
  } else if (sh.S > 1)
    *globals += "__device__ __align__(16) float opv_ws[" + I(sh.tiles * sh.S * TILE) + "];  // split-K partial tiles\n" +
                "__device__ __forceinline__ float4 opv_ldcg4(const float* p) {\n"
                "  float4 v; asm volatile(\"ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];\" : \"=f\"(v.x), \"=f\"(v.y), \"=f\"(v.z), \"=f\"(v.w) : \"l\"(p));\n"
                "  return v;\n}\n" +
                "__device__ unsigned int opv_cnt[" + I(sh.tiles) + "];  // partials written per tile (0 between launches)\n";
  const bool vec_a = K % 8 == 0, vec_b = nhwc ? K % 8 == 0 : P % 8 == 0;
  std::ostringstream b;
  b << "  // tile " << sh.BM << "x" << sh.BN << ", warps " << sh.WM << "x" << sh.WN << "x" << sh.WK << " (K groups), split-K "
    << sh.S << " x " << sh.KB << " channels, stages of " << sh.KC << "\n"
    << "  constexpr int BM = " << sh.BM << ", BN = " << sh.BN << ", WM = " << sh.WM << ", WN = " << sh.WN
    << ", WK = " << sh.WK << ", KC = " << sh.KC << ", KB = " << sh.KB << ", S = " << sh.S << ", NBUF = " << nbuf << ";\n"
    << (nhwc ? "  constexpr int LDA = KC + 8, LDB = KC + 8, A_ST = BM * LDA, B_ST = BN * LDB, TILE = BM * BN;\n"
             : "  constexpr int LDA = KC + 8, LDB = BN + 8, A_ST = BM * LDA, B_ST = KC * LDB, TILE = BM * BN;\n")
    << "  constexpr opv_idx M = " << I(M) << ", K = " << I(K) << ", P = " << I(P) << ";\n"
    << "  __shared__ __align__(16) unsigned char smem_[" << smem << "];\n"
    << "  __shared__ int last_;\n"
    << (push ? "  __shared__ __align__(16) float4 Rs[" + I(sh.S * per) + "];  // [S][PER]: the S partials of this block's share\n"
               "  __shared__ __align__(8) unsigned long long rbar_;  // counts the bytes of this block's share the cluster pushed\n"
             : std::string())
    << "  unsigned short* As = (unsigned short*)smem_;\n"
    << "  unsigned short* Bs = As + NBUF * A_ST;\n"
    << "  float* red = (float*)smem_;\n"
    << "  (void)last_; (void)Bs;\n"
    << "  const opv_idx tile = blockIdx.x / S;\n"
    << "  const int sp = (int)(blockIdx.x % S);\n"
    << "  const opv_idx p0 = (tile % " << PT << ") * BN, m0 = ((tile / " << PT << ") % " << MT << ") * BM, n = tile / "
    << PT * MT << ";\n"
    << "  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;\n"
    << "  const int wk = warp / (WM * WN), wm = (warp % (WM * WN)) / WN, wn = warp % WN;\n"
    << "  const opv_idx kbeg = (opv_idx)sp * KB;\n"
    << "  const int nst = (int)(((K - kbeg < KB ? K - kbeg : KB) + KC - 1) / KC);\n"
    << (nhwc ? "  const unsigned short* Ag = in0 + n * (M * K);  // X, [pixel][channel]\n"
               "  const unsigned short* Bg = in1;  // W, [output channel][channel]\n"
             : "  const unsigned short* Ag = in1;  // W, [output channel][channel]\n"
               "  const unsigned short* Bg = in0 + n * (K * P);  // X, [channel][pixel]\n")
    << "  float acc[2][4][4];\n"
    << "#pragma unroll\n  for (int a = 0; a < 2; ++a)\n#pragma unroll\n    for (int c = 0; c < 4; ++c)\n#pragma unroll\n"
    << "      for (int r = 0; r < 4; ++r) acc[a][c][r] = 0.0f;\n"
    << "  auto load_a = [&](int buf, opv_idx kb) {\n"
    << "    unsigned short* a = As + buf * A_ST;\n";
  if (vec_a)
    b << block_steps(sh.BM * sh.KC / 8, kMmaThreads, "    ")
      << "      const int r = e / (KC / 8), cc = (e % (KC / 8)) * 8;\n"
      << "      const opv_idx m = m0 + r, c = kb + cc;\n"
      << "      const bool ok = m < M && c < K;\n"
      << "      opv_cp16(a + r * LDA + cc, ok ? Ag + m * K + c : Ag, ok);\n    }\n";
  else
    b << "    for (int e = tid; e < BM * KC; e += " << kMmaThreads << ") {\n"
      << "      const int r = e / KC, cc = e % KC;\n"
      << "      const opv_idx m = m0 + r, c = kb + cc;\n"
      << "      a[r * LDA + cc] = (m < M && c < K) ? Ag[m * K + c] : (unsigned short)0;\n    }\n";
  b << "  };\n"
    << "  auto load_b = [&](int buf, opv_idx kb) {\n"
    << "    unsigned short* bb = Bs + buf * B_ST;\n";
  if (nhwc && vec_b) {
    b << block_steps(sh.BN * sh.KC / 8, kMmaThreads, "    ")
      << "      const int r = e / (KC / 8), cc = (e % (KC / 8)) * 8;\n"
      << "      const opv_idx p = p0 + r, c = kb + cc;\n"
      << "      const bool ok = p < P && c < K;\n"
      << "      opv_cp16(bb + r * LDB + cc, ok ? Bg + p * K + c : Bg, ok);\n    }\n";
  } else if (nhwc) {
    b << "    for (int e = tid; e < BN * KC; e += " << kMmaThreads << ") {\n"
      << "      const int r = e / KC, cc = e % KC;\n"
      << "      const opv_idx p = p0 + r, c = kb + cc;\n"
      << "      bb[r * LDB + cc] = (p < P && c < K) ? Bg[p * K + c] : (unsigned short)0;\n    }\n";
  } else if (vec_b) {
    b << block_steps(sh.KC * sh.BN / 8, kMmaThreads, "    ")
      << "      const int r = e / (BN / 8), pp = (e % (BN / 8)) * 8;\n"
      << "      const opv_idx c = kb + r, p = p0 + pp;\n"
      << "      const bool ok = c < K && p < P;\n"
      << "      opv_cp16(bb + r * LDB + pp, ok ? Bg + c * P + p : Bg, ok);\n    }\n";
  } else {
    b << "    for (int e = tid; e < KC * BN; e += " << kMmaThreads << ") {\n"
      << "      const int r = e / BN, pp = e % BN;\n"
      << "      const opv_idx c = kb + r, p = p0 + pp;\n"
      << "      bb[r * LDB + pp] = (c < K && p < P) ? Bg[c * P + p] : (unsigned short)0;\n    }\n";
  }
  b << "  };\n"
    << "  auto load_stage = [&](int buf, opv_idx kb) {\n"
    << "    load_a(buf, kb);\n    load_b(buf, kb);\n"
    << "    asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n  };\n";
  // The weight prologue (kEntryOpenLate): the first stage's weights (A in NCHW, B in NHWC) before
  // the wait for the kernels before this one, its activations after.
  x.late_entry = x.const_input(1);
  const char* load_w = nhwc ? "load_b" : "load_a";
  const char* load_x = nhwc ? "load_a" : "load_b";
  if (push) b << cluster_push_start(per) << "  opv_cluster_arrive_relaxed();  // this block is running, its mbarrier made\n";
  if (x.late_entry) b << "  " << load_w << "(0, kbeg);  // weights: no kernel writes them\n  OPV_KERNEL_ENTRY();\n";
  // The epilogue on `sum` for output (m, p); with `pf` (an index into the prefetch registers)
  // the bias and the post-ops' operands come from registers loaded at the kernel's start (before
  // the main loop's barriers; loaded after them, each was a global-memory round trip after a
  // bar.sync; no measurable change on the H100, run 32).
  const char* ch = nhwc ? "p" : "m";  // the output channel: the column (NHWC) or the row
  const char* px = nhwc ? "m" : "p";  // the pixel
  const std::string coords = "      const opv_idx o0 = n, o1 = " + std::string(ch) + ", o2 = " + px + " / " + I(OW) +
                             ", o3 = " + px + " % " + I(OW) + ";\n      (void)o0; (void)o1; (void)o2; (void)o3;\n";
  auto epilogue = [&](const std::string& pf) {
    return coords + "      float v = sum" +
           (x.has(2) ? " + " + (pf.empty() ? load(x.in(2).dtype, "in2", ch) : "pfb[" + pf + "]") : std::string()) +
           ";\n" + post_ops_split(x, pf).ops + "      " +
           store(x.out().dtype, "out0", "(n * M + m) * P + p", "v") + "\n";
  };
  const int nops = post_ops_split(x, "").operands, npf = nops + (x.has(2) ? 1 : 0);
  auto prefetch_decl = [&](int64_t n) { return prefetch_decls(nops, x.has(2), "[" + std::to_string(n) + "]"); };
  auto prefetch = [&](const std::string& pf) {
    return coords + (x.has(2) ? "      pfb[" + pf + "] = " + load(x.in(2).dtype, "in2", ch) + ";\n" : std::string()) +
           post_ops_split(x, pf).loads;
  };
  std::ostringstream epi;
  epi << epilogue("");
  // Prefetch where a thread's outputs are few: the cluster form's one float4 (TILE / 4 <= S x
  // threads), the unsplit form's TILE / threads outputs up to 32 registers in all.
  const bool pf_cluster = cluster && npf > 0 && per <= kMmaThreads;
  const int64_t per_thread = TILE / kMmaThreads;
  const bool pf_single = !cluster && sh.S == 1 && npf > 0 && per_thread * npf <= 32;
  if (pf_cluster || pf_single) {  // the prefetch, before the first stage's loads
    if (pf_cluster)
      b << prefetch_decl(4) << "  if (tid < " << per << " && sp * " << per << " + tid < TILE / 4) {\n"
        << "#pragma unroll\n    for (int e = 0; e < 4; ++e) {\n"
        << "    const int o = (sp * " << per << " + tid) * 4 + e;\n";
    else
      b << prefetch_decl(per_thread) << "  {\n#pragma unroll\n    for (int e = 0; e < " << per_thread << "; ++e) {\n"
        << "    const int o = tid + e * " << kMmaThreads << ";\n";
    b << "    const opv_idx m = m0 + o / BN, p = p0 + o % BN;\n"
      << "    if (m < M && p < P) {\n" << prefetch("e") << "    }\n    }\n  }\n";
  }
  if (x.late_entry)
    b << "  " << load_x << "(0, kbeg);\n  asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n";
  else
    b << "  load_stage(0, kbeg);\n";
  b << "  for (int st = 0; st < nst; ++st) {\n"
    << "    if (st + 1 < nst) {\n"
    << "      load_stage((st + 1) % NBUF, kbeg + (opv_idx)(st + 1) * KC);\n"
    << "      asm volatile(\"cp.async.wait_group 1;\" ::: \"memory\");\n"
    << "    } else {\n"
    << "      asm volatile(\"cp.async.wait_group 0;\" ::: \"memory\");\n"
    << "    }\n"
    << "    __syncthreads();\n"
    << "    const unsigned short* a = As + (st % NBUF) * A_ST;\n"
    << "    const unsigned short* bb = Bs + (st % NBUF) * B_ST;\n"
    << "#pragma unroll\n    for (int ks = 0; ks < KC / WK / 16; ++ks) {\n"
    << "      const int kk = wk * (KC / WK) + ks * 16;\n"
    << "      unsigned af[2][4], bf[4][2];\n"
    << "#pragma unroll\n      for (int mi = 0; mi < 2; ++mi)\n"
    << "        opv_ldsm4(af[mi], a + (wm * 32 + mi * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LDA + kk + (lane >> 4) * 8);\n"
    << "#pragma unroll\n      for (int nj = 0; nj < 2; ++nj) {\n"
    << "        unsigned r[4];\n"
    << (nhwc ? "        opv_ldsm4(r, bb + (wn * 32 + nj * 16 + (lane & 7) + (lane >> 4) * 8) * LDB + kk + ((lane >> 3) & 1) * 8);\n"
             : "        opv_ldsm4t(r, bb + (kk + (lane & 7) + ((lane >> 3) & 1) * 8) * LDB + wn * 32 + nj * 16 + (lane >> 4) * 8);\n")
    << "        bf[2 * nj][0] = r[0]; bf[2 * nj][1] = r[1]; bf[2 * nj + 1][0] = r[2]; bf[2 * nj + 1][1] = r[3];\n"
    << "      }\n"
    << "#pragma unroll\n      for (int mi = 0; mi < 2; ++mi)\n"
    << "#pragma unroll\n        for (int ni = 0; ni < 4; ++ni) opv_mma(acc[mi][ni], af[mi], bf[ni]);\n"
    << "    }\n"
    << "    __syncthreads();\n"
    << "  }\n"
    << "  OPV_PDL_TRIGGER();  // the main loop is done: the next kernel may be launched\n"
    // Accumulators -> shared memory (per K group), then one output per thread and step, adjacent
    // threads on adjacent pixels.
    << "  {\n    const int g = lane >> 2, t = lane & 3;\n"
    << "#pragma unroll\n    for (int mi = 0; mi < 2; ++mi)\n"
    << "#pragma unroll\n      for (int ni = 0; ni < 4; ++ni)\n"
    << "#pragma unroll\n        for (int r = 0; r < 4; ++r)\n"
    << "          red[wk * TILE + (wm * 32 + mi * 16 + g + (r >> 1) * 8) * BN + wn * 32 + ni * 8 + 2 * t + (r & 1)] = acc[mi][ni][r];\n"
    << "  }\n  __syncthreads();\n";
  // Split-K: float4s of every partial a thread loads at once in the last block (at most
  // kMmaReduceInFlight; a divisor of TILE / 512, which every tile size is a multiple of).
  const int64_t nv = TILE / (4 * kMmaThreads);
  int64_t nvb = std::max<int64_t>(1, std::min<int64_t>(nv, kMmaReduceInFlight / std::max<int64_t>(sh.S, 1)));
  while (nv % nvb) --nvb;
  // The cluster forms' last sum: block sp's share, float4s f = sp * PER + ef, each the sum
  // `sum_lines` computes into s4 (in split order from 0: the workspace form's sums bit for bit),
  // then their epilogue.
  auto share_sum = [&](const std::string& sum_lines) {
    b << "#pragma unroll 1\n  for (int ef = tid; ef < " << per << "; ef += " << kMmaThreads << ") {  // this block's share\n"
      << "    const int f = sp * " << per << " + ef;\n"
      << "    if (f >= TILE / 4) break;\n"
      << "    float s4[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n"
      << sum_lines
      << "#pragma unroll\n    for (int e = 0; e < 4; ++e) {\n"
      << "    const int o = f * 4 + e;\n"
      << "    const opv_idx m = m0 + o / BN, p = p0 + o % BN;\n"
      << "    if (m < M && p < P) {\n"
      << "      const float sum = s4[e];\n"
      << (pf_cluster ? epilogue("e") : epi.str()) << "    }\n    }\n  }\n";
  };
  if (push) {
    // Float4 f of the block's partial (the K groups' sum, in their order) goes to block o = f / PER,
    // row sp of its receive buffer; the block then waits for its mbarrier's phase (all S rows of its
    // share landed) and sums its S rows.
    b << "  opv_cluster_wait();  // every peer's mbarrier made (the arrive at the kernel's start)\n"
      << "  for (int f = tid; f < TILE / 4; f += " << kMmaThreads << ") {  // the K groups' sum of float4 f, pushed to its block\n"
      << "    float4 v = ((const float4*)red)[f];\n"
      << "#pragma unroll\n    for (int q = 1; q < WK; ++q) {\n"
      << "      const float4 w = ((const float4*)red)[q * (TILE / 4) + f];\n"
      << "      v.x += w.x; v.y += w.y; v.z += w.z; v.w += w.w;\n    }\n"
      << "    opv_push4(Rs, &rbar_, f, sp, " << per << ", v);\n  }\n"
      << "  opv_mbar_wait(&rbar_, 0);  // every block's row of this block's share landed\n";
    share_sum("#pragma unroll\n    for (int q = 0; q < S; ++q) {\n"
              "      const float4 v = Rs[q * " + std::to_string(per) + " + ef];\n"
              "      s4[0] += v.x; s4[1] += v.y; s4[2] += v.z; s4[3] += v.w;\n    }\n");
  } else if (cluster) {
    b << "  for (int o = tid; o < TILE; o += " << kMmaThreads << ") {  // the K groups' sum: this block's partial, in place\n"
      << "    float sum = red[o];\n"
      << "#pragma unroll\n    for (int q = 1; q < WK; ++q) sum += red[q * TILE + o];\n"
      << "    red[o] = sum;\n  }\n"
      << "  opv_cluster_sync();  // every block's partial visible to the cluster\n"
      << "  unsigned peer[S];  // the S partials' addresses in the cluster's shared window\n"
      << "#pragma unroll\n  for (int q = 0; q < S; ++q) peer[q] = opv_cluster_addr(red, q);\n";
    share_sum("    float4 pv[S];\n"
              "#pragma unroll\n    for (int q = 0; q < S; ++q) pv[q] = opv_ld_cluster4(peer[q] + (unsigned)f * 16u);\n"
              "#pragma unroll\n    for (int q = 0; q < S; ++q) {\n"
              "      s4[0] += pv[q].x; s4[1] += pv[q].y; s4[2] += pv[q].z; s4[3] += pv[q].w;\n    }\n");
    b << "  opv_cluster_exit();  // no block leaves while a peer may still read its partial\n";
  } else if (sh.S == 1) {
    if (pf_single)
      b << "#pragma unroll\n  for (int e = 0; e < " << per_thread << "; ++e) {\n"
        << "    const int o = tid + e * " << kMmaThreads << ";\n";
    else
      b << "  for (int o = tid; o < TILE; o += " << kMmaThreads << ") {\n";
    b << "    const opv_idx m = m0 + o / BN, p = p0 + o % BN;\n"
      << "    if (m < M && p < P) {\n"
      << "      float sum = red[o];\n"
      << "#pragma unroll\n      for (int q = 1; q < WK; ++q) sum += red[q * TILE + o];\n"
      << (pf_single ? epilogue("e") : epi.str()) << "    }\n  }\n";
  } else {
    b << "  float* wsp = opv_ws + (tile * S + sp) * TILE;\n"
      << "  for (int o = tid; o < TILE; o += " << kMmaThreads << ") {\n"
      << "    float sum = red[o];\n"
      << "#pragma unroll\n    for (int q = 1; q < WK; ++q) sum += red[q * TILE + o];\n"
      << "    wsp[o] = sum;\n  }\n"
      << "  __threadfence();\n  __syncthreads();\n"
      << "  if (tid == 0) last_ = atomicAdd(&opv_cnt[tile], 1u) == (unsigned)(S - 1);\n"
      << "  __syncthreads();\n  if (!last_) return;\n  __threadfence();\n"
      << "  const float* wst = opv_ws + tile * S * TILE;\n"
      // Every partial's float4s of the thread (TILE / 512 a partial: TILE is a multiple of 512)
      // loaded before any is added: one memory round trip, not one per output (run 25's trace:
      // the summarize conv, S = 16, 14.6 us a call); added in split order from 0 as before.
      << "  constexpr int NV = TILE / " << 4 * kMmaThreads << ", NVB = " << nvb << ";\n"
      << "#pragma unroll 1\n  for (int j0 = 0; j0 < NV; j0 += NVB) {\n"
      << "    float4 pv[S][NVB];\n"
      << "#pragma unroll\n    for (int q = 0; q < S; ++q)\n#pragma unroll\n      for (int jj = 0; jj < NVB; ++jj)\n"
      << "        pv[q][jj] = opv_ldcg4(wst + q * TILE + ((j0 + jj) * " << kMmaThreads << " + tid) * 4);\n"
      << "#pragma unroll\n    for (int jj = 0; jj < NVB; ++jj) {\n"
      << "      float s4[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n"
      << "#pragma unroll\n      for (int q = 0; q < S; ++q) {\n"
      << "        s4[0] += pv[q][jj].x; s4[1] += pv[q][jj].y; s4[2] += pv[q][jj].z; s4[3] += pv[q][jj].w;\n      }\n"
      << "#pragma unroll\n      for (int e = 0; e < 4; ++e) {\n"
      << "    const int o = ((j0 + jj) * " << kMmaThreads << " + tid) * 4 + e;\n"
      << "    const opv_idx m = m0 + o / BN, p = p0 + o % BN;\n"
      << "    if (m < M && p < P) {\n"
      << "      const float sum = s4[e];\n"
      << epi.str() << "    }\n      }\n    }\n  }\n"
      << "  if (tid == 0) opv_cnt[tile] = 0u;\n";
  }
  return b.str();
}

// fp16 1x1 convs on a 1 x 1 map (the SE gate's squeeze) are GEMVs: a warp per output channel,
// 16-byte loads (as the Gemm rows), instead of mma tiles that would be 1/32 full.
bool conv1x1_gemv_ok(const Ctx& x) {
  if (!conv1x1_tiled_ok(x)) return false;
  const Shape& xs = x.in(0).shape;
  return xs[2] * xs[3] == 1 && x.in(0).dtype == DType::F16 && x.in(1).dtype == DType::F16 && xs[1] % 8 == 0 &&
         xs[1] >= kSplitMinSteps;
}
std::string conv1x1_gemv(const Ctx& x) {
  const int64_t K = x.in(0).shape[1];
  x.globals += kDot8;
  std::ostringstream s;
  s << coords(x.out().shape) << "  float acc = 0.0f;\n"
    << "  for (opv_idx kk = lane * 8; kk < " << I(K) << "; kk += " << 8 * kWarp << ")\n"
    << "    acc = opv_dot8(*(const opv_u4*)(in0 + o0 * " << I(K) << " + kk), *(const opv_u4*)(in1 + o1 * " << I(K)
    << " + kk), acc);\n"
    << x.reduce_end() << "  float v = acc" << (x.has(2) ? " + " + load(x.in(2).dtype, "in2", "o1") : "") << ";\n";
  return s.str();
}

// Softmax over one axis: one thread per (outer, inner) row; writes every element of its row.
std::string softmax(const Ctx& x, std::string* why, int64_t* rows) {
  const Shape& xs = x.in(0).shape;
  const int64_t axis = x.k.attrs.i("axis", -1);
  if (axis < 0 || axis >= int64_t(xs.size())) return *why = "axis out of range", "";
  if (!x.k.post_ops.empty()) return *why = "post-ops on Softmax", "";
  int64_t inner = 1;
  for (size_t dd = size_t(axis) + 1; dd < xs.size(); ++dd) inner *= xs[dd];
  const int64_t n = xs[size_t(axis)];
  *rows = numel(xs) / std::max<int64_t>(1, n);
  const DType it = x.in(0).dtype, ot = x.out().dtype;
  std::ostringstream s;
  s << "  const opv_idx base = (i / " << I(inner) << ") * " << I(n * inner) << " + i % " << I(inner) << ";\n";
  s << "  float mx = -OPV_INF;\n  for (opv_idx j = 0; j < " << I(n) << "; ++j) mx = fmaxf(mx, "
    << load(it, "in0", "base + j * " + I(inner)) << ");\n";
  s << "  float sum = 0.0f;\n  for (opv_idx j = 0; j < " << I(n) << "; ++j) sum += expf("
    << load(it, "in0", "base + j * " + I(inner)) << " - mx);\n";
  s << "  for (opv_idx j = 0; j < " << I(n) << "; ++j) { const float v = expf("
    << load(it, "in0", "base + j * " + I(inner)) << " - mx) / sum; " << store(ot, "out0", "base + j * " + I(inner), "v")
    << " }\n";
  return s.str();
}

// ---- batched GEMVs (the heads) -----------------------------------------------------------------
// Independent fp16 GEMV calls (Gemm, A [1, K], B [N, K] transposed, optional bias, unary post-ops,
// K % 8 == 0) become one launch: a warp per output row of any member, 16-byte loads (opv_dot8).
// Batch-M artifacts (compile --batch) have A [M, K], M <= kGemvMaxRows: a warp then computes one
// output row for MG rows of A at once (B's row loaded once for the MG dot products), each in the
// order the M = 1 form sums it, so sample m's outputs are those of the batch-1 artifact.
// Plan form, as the opencl target's batched calls (validate.cpp skips their shape check by the
// "cl_batch" attribute, plan_stats counts the member calls): outputs = [member 0's, member 1's,
// ...], inputs = [member 0's A, B, C, member 1's ...] (an absent C stays -1); the kernel's
// post-ops are the members' in order, "cuda_batch_post_ops" = how many each member has.
constexpr int kBatchMax = 64;  // members per batched launch (kernel parameters: 4 KB)
constexpr int64_t kGemvMaxRows = 256;  // rows of A (the batch) a member may have
// Rows of A one warp takes (its accumulators): the largest of 8, 4, 2, 1 dividing M.
int64_t gemv_rows_per_warp(int64_t M) {
  for (int64_t mg : {8, 4, 2})
    if (M % mg == 0) return mg;
  return 1;
}
bool gemv_batchable(const Plan& p, const Call& c) {
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  if (k.op != OpKind::Gemm || !k.source.empty() || c.outputs.size() != 1 || c.inputs.size() < 2 ||
      c.inputs[0] < 0 || c.inputs[1] < 0 || k.attrs.i("cl_batch", 0) > 0)
    return false;
  if (k.attrs.i("transA", 0) || !k.attrs.i("transB", 0) || k.attrs.f("alpha", 1.0) != 1.0 || k.attrs.f("beta", 1.0) != 1.0)
    return false;
  for (const PostOp& po : k.post_ops)
    if (po.input >= 0 || unary_expr(po, "v").empty()) return false;
  const Buffer& A = p.buffers.at(size_t(c.inputs[0]));
  const Buffer& B = p.buffers.at(size_t(c.inputs[1]));
  const Buffer& Y = p.buffers.at(size_t(c.outputs[0]));
  if (A.dtype != DType::F16 || B.dtype != DType::F16 || !is_float(Y.dtype) || A.shape.size() != 2 ||
      B.shape.size() != 2 || Y.layout != Layout::Linear || A.shape[0] < 1 || A.shape[0] > kGemvMaxRows ||
      A.shape[1] % 8 != 0 || B.shape[1] != A.shape[1] || Y.shape != Shape{A.shape[0], B.shape[0]})
    return false;
  if (c.inputs.size() > 2 && c.inputs[2] >= 0) {
    const Buffer& C = p.buffers.at(size_t(c.inputs[2]));
    if (!is_float(C.dtype) || numel(C.shape) != B.shape[0] || C.shape.back() != B.shape[0]) return false;
  }
  return true;
}
// The batched call's source (generate() on a call whose kernel has "cl_batch"): member g is
// outputs[g], inputs[3g .. 3g+2], and the next "cuda_batch_post_ops"[g] of the kernel's post-ops.
Generated gemv_batch(const Plan& p, const Call& c) {
  Generated gen;
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  const std::vector<int64_t> npo = k.attrs.ints("cuda_batch_post_ops");
  const size_t n = c.outputs.size();
  if (n == 0 || npo.size() != n || c.inputs.size() != 3 * n) return gen.why = "batched GEMV call out of shape", gen;
  std::string params;
  std::ostringstream body;
  int64_t rows = 0;
  size_t po_at = 0;
  for (size_t g = 0; g < n; ++g) {
    if (c.inputs[3 * g] < 0 || c.inputs[3 * g + 1] < 0) return gen.why = "batched GEMV without A or B", gen;
    const Buffer& A = p.buffers.at(size_t(c.inputs[3 * g]));
    const Buffer& B = p.buffers.at(size_t(c.inputs[3 * g + 1]));
    const Buffer& Y = p.buffers.at(size_t(c.outputs[g]));
    const int64_t N = B.shape.at(0), K = B.shape.at(1), M = A.shape.empty() ? 0 : A.shape[0];
    if (A.dtype != DType::F16 || B.dtype != DType::F16 || !is_float(Y.dtype) || K % 8 || M < 1 ||
        numel(A.shape) != M * K || numel(Y.shape) != M * N)
      return gen.why = "batched GEMV member " + std::to_string(g) + " is not an fp16 GEMV", gen;
    const std::string o = "out" + std::to_string(g), a = "in" + std::to_string(3 * g),
                      w = "in" + std::to_string(3 * g + 1), bias = "in" + std::to_string(3 * g + 2);
    // The member's epilogue on the dot product `acc` for B's `row`: + bias[row], its unary
    // post-ops, the store at output index `at`; false when its post-ops are not there.
    const auto epilogue = [&](const std::string& ind, const std::string& acc, const std::string& at) {
      body << ind << "float v = " << acc
           << (c.inputs[3 * g + 2] >= 0 ? " + " + load(p.buffers.at(size_t(c.inputs[3 * g + 2])).dtype, bias, "row")
                                         : std::string())
           << ";\n";
      for (int64_t q = 0; q < npo[g]; ++q, ++po_at) {
        if (po_at >= k.post_ops.size() || k.post_ops[po_at].input >= 0) return false;
        body << ind << "v = " << unary_expr(k.post_ops[po_at], "v") << ";\n";
      }
      body << ind << store(Y.dtype, o, at, "v") << "\n";
      return true;
    };
    if (M > 1) {  // MG rows of A a warp, B's row loaded once for them
      const int64_t MG = gemv_rows_per_warp(M), W = N * (M / MG);
      body << "  if (r < " << I(rows + W) << ") {  // member " << g << ": " << Y.name << ", " << M << " rows of A, "
           << MG << " a warp\n"
           << "    const opv_idx rr = r - " << I(rows) << ", row = rr % " << I(N) << ", m0 = (rr / " << I(N) << ") * "
           << MG << ";\n"
           << "    float acc[" << MG << "];\n"
           << "#pragma unroll\n    for (int q = 0; q < " << MG << "; ++q) acc[q] = 0.0f;\n"
           << "    for (opv_idx kk = lane * 8; kk < " << I(K) << "; kk += " << 8 * kWarp << ") {\n"
           << "      const opv_u4 wv = *(const opv_u4*)(" << w << " + row * " << I(K) << " + kk);\n"
           << "#pragma unroll\n      for (int q = 0; q < " << MG << "; ++q)\n"
           << "        acc[q] = opv_dot8(*(const opv_u4*)(" << a << " + (m0 + q) * " << I(K) << " + kk), wv, acc[q]);\n"
           << "    }\n"
           << "#pragma unroll\n    for (int q = 0; q < " << MG << "; ++q) acc[q] = opv_warp_sum(acc[q]);\n"
           << "    if (lane != 0) return;\n"
           << "#pragma unroll\n    for (int q = 0; q < " << MG << "; ++q) {\n";
      if (!epilogue("      ", "acc[q]", "(m0 + q) * " + I(N) + " + row")) return gen.why = "batched GEMV post-ops", gen;
      body << "    }\n    return;\n  }\n";
      rows += W;
    } else {
      body << "  if (r < " << I(rows + N) << ") {  // member " << g << ": " << Y.name << "\n"
           << "    const opv_idx row = r - " << I(rows) << ";\n"
           << "    float acc = 0.0f;\n"
           << "    for (opv_idx kk = lane * 8; kk < " << I(K) << "; kk += " << 8 * kWarp << ")\n"
           << "      acc = opv_dot8(*(const opv_u4*)(" << a << " + kk), *(const opv_u4*)(" << w << " + row * "
           << I(K) << " + kk), acc);\n"
           << "    acc = opv_warp_sum(acc);\n    if (lane != 0) return;\n";
      if (!epilogue("    ", "acc", "row")) return gen.why = "batched GEMV post-ops", gen;
      body << "    return;\n  }\n";
      rows += N;
    }
    params += std::string(params.empty() ? "" : ", ") + c_type(Y.dtype) + "* __restrict__ " + o;
  }
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (c.inputs[j] >= 0)
      params += input_param(p, c, j, c_type(p.buffers[size_t(c.inputs[j])].dtype));
  gen.entry = "opv_" + k.name;
  std::ostringstream src;
  src << "// generated by opvision src/target/cuda/codegen.cpp (kernel " << k.name << ", " << n
      << " batched GEMVs) -- do not edit\n"
      << kPrelude << "typedef int opv_idx;  // every index of this kernel fits an int\n"
      << kDot8 << "extern \"C\" __global__ void " << gen.entry << "(" << params << kEntryOpen
      << "  const opv_idx r = ((opv_idx)blockIdx.x * (opv_idx)blockDim.x + (opv_idx)threadIdx.x) / " << kWarp
      << ";  // one warp per output row\n"
      << "  const int lane = (int)(threadIdx.x % " << kWarp << ");\n"
      << body.str() << "}\n";
  gen.source = src.str();
  gen.global = {rows * kWarp, 0, 0};
  gen.local = {kBlock, 0, 0};
  return gen;
}
// Groups each batchable call with the later batchable calls whose inputs are all ready before it
// (plan inputs, constants, outputs of earlier calls): those move up into one launch. Before
// memory planning every buffer has one writer, so moving a call earlier past calls that neither
// write its inputs nor read its outputs changes no value.
void batch_gemvs(Plan& p) {
  for (const Buffer& b : p.buffers)
    if (b.kind == BufferKind::Intermediate && b.offset >= 0) return;  // planned: arena ranges are shared
  const size_t nc = p.calls.size();
  std::vector<char> ok(nc), moved(nc, 0), ready(p.buffers.size(), 0);
  for (size_t i = 0; i < nc; ++i) ok[i] = gemv_batchable(p, p.calls[i]);
  for (size_t b = 0; b < p.buffers.size(); ++b)
    ready[b] = p.buffers[b].kind == BufferKind::Input || p.buffers[b].kind == BufferKind::Constant;
  auto inputs_ready = [&](const Call& c) {
    for (int b : c.inputs)
      if (b >= 0 && !ready[size_t(b)]) return false;
    return true;
  };
  std::vector<Call> calls;
  for (size_t i = 0; i < nc; ++i) {
    if (moved[i]) continue;
    std::vector<const Call*> group{&p.calls[i]};
    if (ok[i])
      for (size_t j = i + 1; j < nc && group.size() < size_t(kBatchMax); ++j)
        if (ok[j] && !moved[j] && inputs_ready(p.calls[j])) group.push_back(&p.calls[j]), moved[j] = 1;
    if (group.size() == 1) {
      calls.push_back(p.calls[i]);
    } else {
      Call fused;
      Kernel k = p.kernels.at(size_t(group[0]->kernel));
      k.name = "gemv_f16_x" + std::to_string(group.size());
      k.post_ops.clear();
      std::vector<int64_t> npo;
      for (const Call* c : group) {
        fused.label += (fused.label.empty() ? "" : "+") + c->label;
        fused.outputs.push_back(c->outputs[0]);
        for (size_t j = 0; j < 3; ++j) fused.inputs.push_back(j < c->inputs.size() ? c->inputs[j] : -1);
        const Kernel& mk = p.kernels.at(size_t(c->kernel));
        k.post_ops.insert(k.post_ops.end(), mk.post_ops.begin(), mk.post_ops.end());
        npo.push_back(int64_t(mk.post_ops.size()));
      }
      k.attrs.set("cl_batch", int64_t(group.size()));
      k.attrs.set("cuda_batch_post_ops", npo);
      fused.kernel = int(p.kernels.size());
      p.kernels.push_back(std::move(k));
      calls.push_back(std::move(fused));
    }
    for (int b : calls.back().outputs) ready[size_t(b)] = 1;
  }
  p.calls = std::move(calls);
}

int64_t dw_same_size(const Plan& p, const Call& c) {
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  if (k.op != OpKind::Conv || !k.source.empty() || c.outputs.size() != 1 || c.inputs.size() < 2 || c.inputs[0] < 0 ||
      c.inputs[1] < 0 || k.attrs.i("cl_batch", 0) > 0)
    return 0;
  for (const PostOp& po : k.post_ops)
    if (po.input >= 0 || unary_expr(po, "v").empty()) return 0;
  const Buffer& X = p.buffers.at(size_t(c.inputs[0]));
  const Buffer& W = p.buffers.at(size_t(c.inputs[1]));
  const Buffer& Y = p.buffers.at(size_t(c.outputs[0]));
  if (X.shape.size() != 4 || W.shape.size() != 4 || Y.shape != X.shape || !is_float(X.dtype) || !is_float(W.dtype) ||
      !is_float(Y.dtype) || Y.layout != Layout::Linear || X.layout != Layout::Linear)
    return 0;
  const int64_t C = X.shape[1], K = W.shape[2];
  if (k.attrs.i("group", 1) != C || W.shape[0] != C || W.shape[1] != 1 || W.shape[3] != K || K % 2 == 0) return 0;
  const int64_t h = (K - 1) / 2;
  if (k.attrs.ints("strides", {1, 1}) != std::vector<int64_t>{1, 1} ||
      k.attrs.ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1} ||
      k.attrs.ints("pads", {0, 0, 0, 0}) != std::vector<int64_t>{h, h, h, h})
    return 0;
  if (c.inputs.size() > 2 && c.inputs[2] >= 0 && numel(p.buffers.at(size_t(c.inputs[2])).shape) != C) return 0;
  return K;
}
std::vector<int> reader_counts(const Plan& p) {
  std::vector<int> readers(p.buffers.size(), 0);
  for (const Call& c : p.calls)
    for (int b : c.inputs)
      if (b >= 0) ++readers[size_t(b)];
  return readers;
}
void fuse_pairs(Plan& p, const PairFuse& fuse) {
  std::vector<Call> calls;
  for (size_t i = 0; i < p.calls.size(); ++i) {
    const Call& a = p.calls[i];
    Kernel k;
    Call f;
    if (i + 1 < p.calls.size() && fuse(a, p.calls[i + 1], &k, &f)) {
      f.label = a.label + "+" + p.calls[i + 1].label;
      f.kernel = int(p.kernels.size());
      p.kernels.push_back(std::move(k));
      calls.push_back(std::move(f));
      ++i;
      continue;
    }
    calls.push_back(a);
  }
  p.calls = std::move(calls);
}
// A Concat whose output only the next call reads, a Cast to a float type (with its post-ops), runs
// as one call: the Concat's inputs, then the Cast's post-op operands; the Cast's output; the
// Concat's kernel with the Cast's post-ops (operand slots moved past the Concat's inputs). The
// input pack (two uint8 frames -> fp16, normalised) and the output's concat -> fp32.
void fuse_concat_cast(Plan& p) {
  const std::vector<int> readers = reader_counts(p);
  fuse_pairs(p, [&](const Call& a, const Call& b, Kernel* k, Call* f) {
    const Kernel& ak = p.kernels.at(size_t(a.kernel));
    if (ak.op != OpKind::Concat || !ak.source.empty() || !ak.post_ops.empty() || a.outputs.size() != 1 ||
        p.buffers.at(size_t(a.outputs[0])).kind != BufferKind::Intermediate || readers[size_t(a.outputs[0])] != 1)
      return false;
    const Kernel& bk = p.kernels.at(size_t(b.kernel));
    bool ok = bk.op == OpKind::Cast && bk.source.empty() && b.outputs.size() == 1 && !b.inputs.empty() &&
              b.inputs[0] == a.outputs[0] && is_float(p.buffers.at(size_t(b.outputs[0])).dtype) &&
              p.buffers.at(size_t(b.outputs[0])).shape == p.buffers.at(size_t(a.outputs[0])).shape;
    for (const PostOp& po : bk.post_ops) ok &= po.input != 0;
    if (!ok) return false;
    *k = ak;
    k->name = "concat_cast_" + std::string(dtype_name(p.buffers.at(size_t(b.outputs[0])).dtype));
    k->post_ops = bk.post_ops;
    for (PostOp& po : k->post_ops)
      if (po.input > 0) po.input += int(a.inputs.size()) - 1;
    f->outputs = b.outputs;
    f->inputs = a.inputs;
    f->inputs.insert(f->inputs.end(), b.inputs.begin() + 1, b.inputs.end());
    return true;
  });
}
}  // namespace detail

using namespace detail;

namespace {
Generated generate_family(const Plan& p, const Call& c);
}  // namespace

Generated generate(const Plan& p, const Call& c) {
  Generated g = generate_family(p, c);
  if (!g.source.empty() && tune_target(p, TuneKey::Probe) != 0) g.source = kProbePrelude + g.source;
  return g;
}

namespace {
// The call's family's kernel (generate() adds the probe).
Generated generate_family(const Plan& p, const Call& c) {
  Generated g;
  const Kernel& k = p.kernels.at(size_t(c.kernel));
  Ctx x{p, c, k};
  x.sm = plan_sm(p);
  if (k.op == OpKind::Gemm && k.attrs.i("cuda_heads", 0) > 0) return heads(p, c);
  if (k.op == OpKind::Gemm && k.attrs.i("cl_batch", 0) > 0) return gemv_batch(p, c);
  if (k.op == OpKind::Conv && k.attrs.i("cuda_dw_pair", 0) > 0) return dw_pair(p, c);
  if (k.op == OpKind::Conv && k.attrs.i("cuda_ffn", 0) > 0) return ffn(p, c);
  if (k.op == OpKind::Conv && k.attrs.i("cuda_pack_conv", 0) > 0) return pack_conv(p, c);
  if (k.attrs.i("cuda_se", 0) > 0) return se_gate(p, c);
  if (k.op == OpKind::Conv && k.attrs.i("cuda_stage", 0) > 0) return stage(p, c);
  if (dw_planes_ok(p, c)) return dw_planes(p, c);
  if (c.outputs.size() != 1 && k.op != OpKind::Split)
    return g.why = "calls with " + std::to_string(c.outputs.size()) + " outputs", g;
  for (int b : c.outputs)
    if (!c_type(p.buffers.at(size_t(b)).dtype)) return g.why = "output dtype", g;
  for (int b : c.inputs)
    if (b >= 0 && !c_type(p.buffers.at(size_t(b)).dtype)) return g.why = "input dtype", g;
  // Layouts: Linear, or NHWC where the call's family has an NHWC form (cuda_abi.h).
  bool any_nhwc = false;
  for (const std::vector<int>* ids : {&c.inputs, &c.outputs})
    for (int b : *ids) {
      if (b < 0) continue;
      const Buffer& buf = p.buffers.at(size_t(b));
      if (buf.layout != Layout::Linear && buf.layout != Layout::NHWC)
        return g.why = std::string("buffer ") + buf.name + " is " + layout_name(buf.layout), g;
      any_nhwc |= nhwc_stored(buf);
    }
  if (any_nhwc && !nhwc_family(x)) return g.why = std::string("no NHWC form of ") + op_name(k.op), g;
  const Buffer& y = x.out();
  int64_t count = numel(y.shape);
  if (count <= kSplitMaxOutputs && count > 0) {
    // Gemm/MatMul only: a conv's lanes read one pixel of 32 channels each, 32 cache lines per
    // load (on the H200 3x slower than a thread per output on large maps, and 2-7x slower than the
    // tiles below on the 4x8 and 8x16 maps); dense 1x1 convs take the shared-memory tiles.
    int64_t steps = 0;  // products summed per output
    if (k.op == OpKind::Gemm || k.op == OpKind::MatMul) {
      const Shape& a = x.in(0).shape;
      steps = a.empty() ? 0 : (k.attrs.i("transA", 0) ? a[0] : a.back());
    }
    x.split = steps >= kSplitMinSteps || conv1x1_gemv_ok(x);
  }
  std::string body, why;
  bool writes_itself = false;  // the family stores (concat/copies/softmax) instead of the epilogue
  bool own_post_ops = false;   // ... and applies the post-ops itself (tiled 1x1 conv)
  int64_t block = kBlock;      // threads per block
  std::string globals;         // module-scope declarations of the family
  switch (k.op) {
    case OpKind::Conv:
      if (x.split) {
        body = conv1x1_gemv(x);
      } else if (conv1x1_mma_ok(x)) {
        if (!post_ops_ok(x, &why)) break;
        int64_t blocks = 0;
        body = conv1x1_mma(x, &blocks, &globals);
        block = kMmaThreads;
        count = blocks * block;
        writes_itself = own_post_ops = true;
      } else if (conv1x1_tiled_ok(x)) {
        if (!post_ops_ok(x, &why)) break;
        body = conv1x1_tiled(x, &count);
        writes_itself = own_post_ops = true;
      } else if (dw_nhwc_ok(x)) {
        if (!post_ops_ok(x, &why)) break;
        int64_t blocks = 0;
        body = dw_nhwc(x, &blocks);
        block = kDwNhwcThreads;
        count = blocks * block;
        writes_itself = own_post_ops = true;
      } else if (conv_mma_ok(x)) {
        if (!post_ops_ok(x, &why)) break;
        int64_t blocks = 0;
        body = conv_mma(x, &blocks);
        globals = kMmaHelpers;
        block = kConvMmaThreads;
        count = blocks * block;
        writes_itself = own_post_ops = true;
      } else if (const int64_t co = conv_multi_co(x); co > 0) {
        if (!post_ops_ok(x, &why)) break;
        int64_t blocks = 0;
        body = conv_multi(x, co, &blocks);
        block = kMultiThreads;
        count = blocks * block;
        writes_itself = own_post_ops = true;
      } else {
        body = conv(x, &why);
      }
      break;
    case OpKind::Gemm:
    case OpKind::MatMul: body = matmul(x, &why); break;
    case OpKind::ReduceMean:
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::GlobalAveragePool:
    case OpKind::GlobalMaxPool:
    case OpKind::ReduceProd:
    case OpKind::ReduceL1:
    case OpKind::ReduceL2:
    case OpKind::ReduceSumSquare:
    case OpKind::ReduceLogSum:
    case OpKind::ReduceLogSumExp: body = reduce(x, &why); break;
    case OpKind::MaxPool:
    case OpKind::AveragePool: body = pool(x, &why); break;
    case OpKind::Concat:
      if (int64_t threads = 0; !(body = concat_vec(x, &threads)).empty()) {
        count = threads;
        writes_itself = own_post_ops = true;
        break;
      }
      body = concat(x, &why);
      writes_itself = body.find("float v") == std::string::npos;  // typed copies store themselves
      break;
    case OpKind::Transpose: body = transpose(x, &why); break;
    case OpKind::Reorder: body = reorder(x, &why); break;
    case OpKind::Softmax:
      body = softmax(x, &why, &count);
      writes_itself = true;
      break;
    case OpKind::Split:
      body = split(x, &why, &count);
      writes_itself = true;
      break;
    case OpKind::LayerNorm:
      body = layer_norm(x, &why, &count);
      writes_itself = true;
      break;
    case OpKind::CumSum:
      body = cumsum(x, &why, &count);
      writes_itself = true;
      break;
    case OpKind::LogSoftmax:
    case OpKind::Hardmax:
    case OpKind::LpNorm:
      body = axis_norm(x, &why, &count);
      writes_itself = true;
      break;
    default: body = movement_op(k.op) ? movement(x, &why) : elementwise(x, &why); break;
  }
  if (body.empty()) return g.why = why.empty() ? "no CUDA kernel family" : why, g;
  OPV_ASSERT(!x.late_entry || body.find("OPV_KERNEL_ENTRY();") != std::string::npos);
  // Copies write a typed element themselves ("out0[i] = ...;" without `float v`).
  if (body.find("float v") == std::string::npos) writes_itself = true;
  if (!writes_itself) {
    if (!is_float(y.dtype)) return g.why = std::string("output dtype ") + dtype_name(y.dtype), g;
    if (!post_ops_ok(x, &why)) return g.why = why, g;
    if (body.find("const opv_idx o0 ") == std::string::npos && !x.k.post_ops.empty()) body += coords(y);
    body += post_ops(x) + "  " + store(y.dtype, "out0", "i", "v") + "\n";
  } else if (!k.post_ops.empty() && !own_post_ops) {
    return g.why = "post-ops on a copy", g;
  }

  // Parameters: outputs then present inputs.
  std::string params;
  for (size_t j = 0; j < c.outputs.size(); ++j)
    params += std::string(params.empty() ? "" : ", ") + c_type(p.buffers[size_t(c.outputs[j])].dtype) +
              "* __restrict__ out" + std::to_string(j);
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (c.inputs[j] >= 0)
      params += input_param(p, c, j, c_type(p.buffers[size_t(c.inputs[j])].dtype));
  g.entry = entry_name(k.name);
  // 32-bit index arithmetic (much cheaper on GPUs) unless some buffer is too large for it.
  bool wide = count > INT32_MAX;
  for (const std::vector<int>* ids : {&c.inputs, &c.outputs})
    for (int b : *ids)
      if (b >= 0) wide |= numel(p.buffers[size_t(b)].shape) > INT32_MAX / 2;
  std::ostringstream src;
  src << "// generated by opvision src/target/cuda/codegen.cpp (kernel " << k.name << ", op " << op_name(k.op)
      << ") -- do not edit\n"
      << kPrelude << "typedef " << (wide ? "long long" : "int") << " opv_idx;  // "
      << (wide ? "a buffer of this kernel has 2^31 elements or more" : "every index of this kernel fits an int") << "\n"
      << globals << x.globals << "extern \"C\" __global__ void "
      << (x.cluster > 0 ? "__cluster_dims__(" + std::to_string(x.cluster) + ", 1, 1) " : std::string())
      << (block != kBlock ? "__launch_bounds__(" + std::to_string(block) + ") " : std::string()) << g.entry << "("
      << params << (x.late_entry ? kEntryOpenLate : kEntryOpen)
      << (x.split ? "  const opv_idx t_ = (opv_idx)blockIdx.x * (opv_idx)blockDim.x + (opv_idx)threadIdx.x;\n"
                    "  const opv_idx i = t_ / " + std::to_string(kWarp) + ";  // one warp per output\n"
                    "  const int lane = (int)(threadIdx.x % " + std::to_string(kWarp) + ");\n"
                  : "  const opv_idx i = (opv_idx)blockIdx.x * (opv_idx)blockDim.x + (opv_idx)threadIdx.x;\n")
      << "  if (i >= " << I(count) << ") return;\n"
      << body << "}\n";
  g.source = src.str();
  g.global = {std::max<int64_t>(count, 1) * (x.split ? kWarp : 1), 0, 0};
  g.local = {block, 0, 0};
  g.smem = x.smem;
  static_assert(kBlock == kTileThreads, "the tiled 1x1 conv assumes the common block size");
  return g;
}
}  // namespace

bool codegen(Plan& p, const PassCtx& ctx) {
  OPV_CHECK(p.target == "cuda", "cuda-codegen: plan targets '", p.target, "', not cuda");
  batch_gemvs(p);
  // the heads' GEMV layers chained into one launch (compute_90+, clusters)
  if (ctx.cuda.fuse_heads && ctx.cuda.cluster) fuse_heads(p);
  if (ctx.cuda.fuse_se) fuse_se(p);  // before fuse_ffn: the SE gate's two 1x1s are not a ConvFFN
  if (ctx.cuda.fuse_se) fold_se_ends(p);  // opt-in (--cuda-tune se_fold=1|2): its neighbours before any pairing
  // compile --cuda-ffn off keeps fc1 and fc2 apart; --cuda-ffn-dw off the depthwise conv before
  // them (then paired with the one before it where it can be)
  if (ctx.cuda.fuse_ffn && ctx.cuda.fuse_ffn_dw) fuse_ffn(p, true);
  fuse_dw_pairs(p);
  if (ctx.cuda.fuse_ffn) fuse_ffn(p, false);
  // FastViT blocks (depthwise pair + ConvFFN) chained into one kernel a run (compute_90+, clusters)
  if (ctx.cuda.fuse_stage && ctx.cuda.cluster) fuse_stage(p);
  // the depthwise pair before a fused ConvFFN inside that kernel (FfnPairMode)
  if (ctx.cuda.fuse_ffn) fuse_ffn_pairs(p, ctx.cuda.ffn_pair);
  fuse_concat_cast(p);
  // the Concat of the heads' outputs (and their input) inside the chains' launch
  if (ctx.cuda.fuse_heads && ctx.cuda.cluster) fold_heads_concat(p);
  if (ctx.cuda.fuse_pack) fuse_pack_conv(p);  // opt-in: not faster than two launches so far (BENCHMARKS.md)
  // Every kernel gets the programmatic-dependent-launch prologue (Options::pdl) from compute_90.
  const int64_t pdl = arch_number(ctx.cuda.arch) >= 90 ? int64_t(ctx.cuda.pdl) : 0;
  std::vector<Kernel> kernels;
  std::map<std::pair<std::string, std::string>, int> interned;  // (source, entry) -> kernel
  std::string refused;
  int n_refused = 0;
  for (Call& c : p.calls) {
    const Kernel& old = p.kernels.at(size_t(c.kernel));
    if (old.options == kSourceFormat || old.options == kPtxFormat) {  // generated already
      auto [it, fresh] = interned.emplace(std::make_pair(old.source, old.entry + "#" + std::to_string(c.kernel)),
                                          int(kernels.size()));
      if (fresh) kernels.push_back(old);
      c.kernel = it->second;
      continue;
    }
    Generated g = generate(p, c);
    if (g.source.empty()) {
      if (n_refused++ < 8)
        refused += "\n  call '" + c.label + "' (" + op_name(old.op) + ", kernel " + old.name + "): " + g.why;
      continue;
    }
    Kernel k = old;
    k.source = std::move(g.source);
    k.entry = std::move(g.entry);
    k.options = kSourceFormat;
    if (pdl) k.attrs.set("cuda_pdl", pdl);
    if (g.smem > 0) k.attrs.set("cuda_smem", g.smem);
    c.global = g.global;
    c.local = g.local;
    auto [it, fresh] = interned.emplace(std::make_pair(k.source, k.entry), int(kernels.size()));
    if (fresh) kernels.push_back(std::move(k));
    c.kernel = it->second;
  }
  if (n_refused)
    fail("target cuda has no kernel for ", n_refused, " call(s) of this model (no host fallback on this target):",
         refused, n_refused > 8 ? "\n  ..." : "");
  p.kernels = std::move(kernels);
  return true;
}

}  // namespace opv::plan::cuda
