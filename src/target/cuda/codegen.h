// CUDA code generation for target "cuda" (plans as cuda_abi.h describes them): one CUDA C++
// kernel per call, specialised at compile time (shapes, strides, broadcasting and post-ops are
// compiled in), fp32 arithmetic on the stored types.
//
// Families (codegen.cpp): element-wise (unary, binary with broadcasting, Cast to float types,
// Reshape-like copies, Expand), Conv (2-D, any group/stride/pad/dilation; dense non-1x1 convs
// with several output channels per thread, or, fp16 at compute_80+, as implicit GEMMs on the
// tensor cores: conv_mma.cpp, the stem), dense 1x1 convs as GEMMs (fp16 storage at
// compute_80+: mma.sync m16n8k16 tensor-core tiles with split-K; otherwise fp32 shared-memory
// tiles; on a 1x1 map, GEMV rows), Gemm and MatMul (long reductions: a warp per output),
// reductions (ReduceMean/Sum/Max/Min, global pools), MaxPool/AveragePool, Concat, Transpose,
// Softmax. Every float-output family ends in the shared post-op epilogue (post_ops of the kernel:
// unary ops and broadcast binary operands, target/c_expr.h).
// Layouts (cuda_abi.h): every family indexes each operand through its own layout (Linear or NHWC,
// the pass "cuda-layout"); the tensor-core 1x1s, the fused ConvFFN, the multi-channel stem and a
// depthwise family have NHWC forms of their own (the implicit-GEMM conv: NCHW input, any output); Gemm, MatMul, Softmax, Transpose and Reshape see
// Linear buffers only. The depthwise pairs and the pack inside the stem are NCHW-only.
// Launch-merging rewrites of the plan, before generation (pass "cuda-codegen"): independent fp16
// GEMVs batched into one launch (the heads), chains of such batches (each layer reading the one
// before: the heads' MLPs) with the Concat of their outputs as one launch on a thread-block
// cluster per chain (heads.cpp, compute_90+; --cuda-heads off, Options::fuse_heads, keeps a launch
// a layer), the squeeze-excitation gate (mean pool -> 1x1 ->
// 1x1 -> scale of its input; se.cpp, Options::fuse_se) as one launch, bit-identical to the four
// calls, a depthwise conv followed by another on its output
// as one launch (RepMixer -> ConvFFN), the ConvFFN's fc1 -> GELU -> fc2 (+ residual) as one
// tensor-core launch keeping the hidden tile in shared memory, its weights streamed through a ring
// of shared-memory slabs by cp.async (compute_80+; compile --cuda-ffn off, Options::fuse_ffn,
// keeps them apart), opt-in (--cuda-ffn-dw on, Options::fuse_ffn_dw) with the depthwise conv
// that alone feeds fc1 computed in that launch too (FastViT's 7x7), or opt-in (--cuda-ffn-pair
// split|all, Options::ffn_pair: slower on the H200 so far) with the whole depthwise pair before
// it (ffn.cpp), a Concat and the Cast of its output as one launch (the input
// pack, the output), and, opt-in (Options::fuse_pack: not faster so far), such a pack
// (Concat or Cast to float, element-wise post-ops) computed inside the dense conv that alone reads
// it (the stem reads the uint8 frames: pack_conv.cpp), and, opt-in (Options::fuse_stage: slower on
// the H200 so far), a run of FastViT blocks (depthwise pair -> ConvFFN + residual) as one kernel on
// one thread-block cluster per image (stage.cpp, compute_90+); cuda_abi.h gives their argument order.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "plan/passes/passes.h"
#include "plan/plan.h"

namespace opv::plan::cuda {

// The CUDA C++ source of call `c` (complete: prelude + one extern "C" __global__ kernel named
// `entry`), with its launch geometry in global/local. Empty string (and *why set) when no family
// handles the call.
struct Generated {
  std::string source, entry, why;
  std::array<int64_t, 3> global{0, 0, 0}, local{0, 0, 0};
  int64_t smem = 0;  // bytes of dynamic shared memory a launch (kernel attr "cuda_smem")
};
Generated generate(const Plan& p, const Call& c);

// Plan pass "cuda-codegen" (always on): first the launch-merging rewrites (above; before memory
// planning only), then every call gets its own kernel with the CUDA source in Kernel.source
// (Kernel.options "cuda") and its launch geometry; identical kernels are merged.
// Throws opv::Error naming every call no family handles (this target has no host fallback).
bool codegen(Plan& p, const PassCtx& ctx);

// Plan pass "nvrtc" (always on, last): compiles every kernel's CUDA source to PTX for
// ctx.cuda.arch with NVRTC (loaded at run time: libnvrtc.so of CUDA 12/13) and stores the PTX in
// Kernel.source with Kernel.options = kPtxFormat; kernels with attr "cuda_pdl" are compiled with
// OPV_PDL defined (their programmatic-dependent-launch prologue). With ctx.cuda.sass_sms() (compile
// --cuda-sass, default the arch's own GPU) each kernel also gets a cubin per SM in its attrs
// (cuda_abi.h "SASS"). Errors carry NVRTC's log and the kernel name.
bool nvrtc_compile(Plan& p, const PassCtx& ctx);

// Compiles one CUDA C++ source to PTX (exposed for tests), with -D<define> for each of `defines`.
// Throws opv::Error when NVRTC is missing or the source does not compile (with the log).
std::string compile_to_ptx(const std::string& source, const std::string& name, const std::string& arch,
                           const std::vector<std::string>& defines = {});
// What ptxas reports (-v) for one entry function's SASS; -1 where the report lacks it.
struct SassResources {
  int64_t registers = -1, stack_bytes = -1, spill_store_bytes = -1, spill_load_bytes = -1, static_smem_bytes = -1;
};
// Parses NVRTC's program log of a compile with --ptxas-options=-v (the first entry function's).
SassResources parse_ptxas_report(const std::string& log);
// A kernel compiled for the artifact: the PTX for `arch` and, for each SM of `sass_sms` (each at
// least the arch's), that GPU's cubin (NVRTC's SASS), in the order asked, with ptxas's report of
// the first. Throws as compile_to_ptx.
struct CompiledKernel {
  std::string ptx;
  std::vector<std::pair<int, std::string>> sass;  // {90, cubin of sm_90}, ...
  SassResources resources;  // the first cubin's (registers = -1 without SASS)
};
CompiledKernel compile_kernel(const std::string& source, const std::string& name, const std::string& arch,
                              const std::vector<int>& sass_sms, const std::vector<std::string>& defines = {});
// Whether NVRTC can be loaded here (tests skip the compile step without it).
bool nvrtc_available(std::string* why = nullptr);

}  // namespace opv::plan::cuda
