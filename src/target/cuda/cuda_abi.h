// The contract between the CUDA code generator (src/target/cuda, compile time, linked into the
// compiler only) and the CUDA backend (src/backend/cuda, run time: the CUDA driver API, loaded
// with dlopen, no CUDA runtime library). Everything a plan for target "cuda" means is written
// down here.
//
// Buffers
//   Layout::Linear (row-major over its logical shape) or, for 4-D Intermediates the plan pass
//   "cuda-layout" chose (compile --cuda-layout; plan meta "cuda_layout_plan" = nhwc), Layout::NHWC:
//   logical [N,C,H,W] stored [N,H,W,C]. Inputs, Outputs and Constants are always Linear. Element
//   type from the dtype (F16 = IEEE half, BOOL = one byte 0/1). A kernel reads and writes each
//   buffer in the layout it has (the generator compiles in each operand's strides); Reorder
//   calls (a typed copy, NCHW <-> NHWC) convert at the NHWC domain's edges. Inputs and Outputs are device buffers the
//   backend fills from / copies into the caller's tensors; Intermediates live in one device arena
//   at Buffer::offset (memory planning); Constants are uploaded once from Plan::weights at
//   Buffer::offset. Every device address a kernel gets is at least 64-byte aligned (kAlign).
// Kernels
//   Kernel.source      PTX text, compiled ahead of time by NVRTC (plan pass "nvrtc") from the CUDA
//                      C++ the pass "cuda-codegen" wrote there (compile --dump-after cuda-codegen
//                      shows that source). The backend loads it with cuModuleLoadData (the driver
//                      JIT-compiles PTX for the device it runs on).
//   SASS               kernel attr "cuda_sass" (ints, ascending: e.g. [90]) = the GPUs whose machine
//                      code the kernel also holds, each as attr "cuda_sass_<NN>" (string: NVRTC's
//                      cubin for sm_NN, an ELF image, EM_CUDA, whose header names sm_NN), compiled
//                      from the same CUDA C++ as the PTX (compile --cuda-sass; default the arch's own
//                      GPU). A device of compute capability X.y loads the cubin of the highest
//                      sm_XZ with Z <= y (SASS runs on the GPUs of its major version from its minor
//                      on) instead of JIT-compiling the PTX; without one, or where the driver
//                      refuses it (the backend then loads the PTX and says why: CudaLoadInfo), the
//                      PTX. A listed SM without its image, an image that is not such a cubin or
//                      names another SM is refused as a corrupt plan (supports_call). With
//                      SASS, ptxas's report of the first listed SM's code: attrs "cuda_regs",
//                      "cuda_stack", "cuda_spill" ([store, load] bytes), "cuda_smem_static"
//                      (informational; inspect prints them).
//   Kernel.entry       the extern "C" __global__ function.
//   Kernel.options     kPtxFormat ("ptx") once the source is PTX; anything else is not loadable.
//   Every call has a kernel: there is no host fallback on this target (the compiler refuses ops
//   it has no kernel for, naming them).
//   Arguments          the call's outputs, then its inputs (absent inputs, id -1, are skipped),
//                      one device pointer (CUdeviceptr, 8 bytes) each. No scalar arguments:
//                      shapes are compiled in.
//   Launch             Call.local = the block size (x, y, z; 0 = 1), Call.global = the number of
//                      threads per dimension (0 = 1); the grid is ceil(global / local) per
//                      dimension. Kernels check their own bounds (the compiled-in element count),
//                      so a partial last block is safe.
//                      Dynamic shared memory: kernel attr "cuda_smem" (int, default 0) = the bytes
//                      every launch of the kernel gets, which it declares as
//                      `extern __shared__ __align__(128) unsigned char opv_dsmem[];` (PTX:
//                      `.extern .shared .align 128 .b8 opv_dsmem[];`); they follow its static
//                      __shared__ data. When > 0 the backend sets CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_
//                      SHARED_SIZE_BYTES to it once (cuFuncSetAttribute after cuModuleGetFunction:
//                      beyond 48 KB less the static bytes a launch needs it) and passes it as
//                      sharedMemBytes of every launch (cuLaunchKernel, graph kernel nodes), so
//                      static + dynamic can reach the device's opt-in limit (232448 bytes a block
//                      on sm_90); more fails the load naming the kernel. A value below 0, above
//                      1 MiB or not an integer is refused as a corrupt plan (supports_call).
//   Order              each call sees the effects of every earlier call whose memory it overlaps;
//                      nothing between them needs the host. The backend records the inference
//                      (input copies, launches, output copies) once as a CUDA graph whose edges
//                      are those overlaps (read/write byte ranges of the buffers, arena sharing
//                      included: src/backend/cuda/graph_deps.h), so calls that touch disjoint
//                      memory may run concurrently (--cuda-graph chain: plan order). Calls that
//                      share a kernel may share its module's __device__ workspace (split-K 1x1
//                      convs, the fused ConvFFN), so they stay in plan order. From compute_90
//                      (Options::cluster) those split layers instead run a tile's blocks as one
//                      thread-block cluster (the PTX requires it: .reqnctapercluster; the backend
//                      opts clusters wider than 8 in) and keep no workspace.
//                      Kernel attr "cuda_pdl" = 1, 2 or 3 (compute_90+, Options::pdl): the kernel
//                      executes griddepcontrol.wait (2: griddepcontrol.launch_dependents before it,
//                      3: after it) before any access of memory a kernel writes; before the wait it
//                      may only read plan Constants (the weight prologues of the tensor-core convs,
//                      the ConvFFN, the depthwise pairs and the GEMV chains), so the backend may make the graph
//                      edges from kernel nodes into it programmatic (CU_GRAPH_DEPENDENCY_TYPE_
//                      PROGRAMMATIC, from port CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC): its blocks
//                      may be launched once every block of the kernels before it has executed
//                      launch_dependents or exited, and they wait there until those kernels have
//                      finished and their writes are visible. Edges from copies, and into kernels
//                      without the attr, stay ordinary.
//   Merged calls       kernel attr "cl_batch" = n original calls in one launch (validate.cpp skips
//                      its shape check for these, as for opencl's batches):
//                      batched fp16 GEMVs (Gemm): outputs = the members' outputs in order, inputs
//                      = 3 per member (A, B, C; an absent C is -1);
//                      depthwise pairs (Conv, "cuda_dw_pair"; NCHW buffers only): outputs = [first conv's, second
//                      conv's], inputs = [X, W1, B1, W2, B2] (an absent bias is -1).
//                      ConvFFN (Conv, "cuda_ffn", compute_80+; X and output both NCHW or both NHWC,
//                      the depthwise conv inside NCHW only): fc1 (1x1, unary post-ops) and fc2
//                      (1x1 on fc1's output, which nothing else reads) as one tensor-core launch:
//                      output = fc2's, inputs = [X, W1, B1, W2, B2, fc2's inputs from slot 3 on];
//                      fc2's post-op operand slots move by 2; hidden-split partials and counters in
//                      a module __device__ workspace, as the split-K 1x1s. With the depthwise conv
//                      that alone feeds fc1 inside ("cuda_ffn_dw" = its kernel size K, "cl_batch" =
//                      3; Options::fuse_ffn_dw): inputs = [its X, W1, B1, W2, B2, its W, its B,
//                      fc2's inputs from slot 3 on], fc2's operand slots move by 4. With the
//                      depthwise pair before it inside ("cuda_ffn_pair" = [KA, KB], "cl_batch" =
//                      4; Options::ffn_pair; NCHW, 16-pixel tiles, unsplit or split over a
//                      cluster): inputs = [the pair's X, W1, B1, W2, B2, the pair's WA, BA, WB,
//                      BB, fc2's inputs from slot 3 on], fc2's operand slots move by 6 (4 past
//                      the ConvFFN call's); the slot of fc2's residual (the pair's first output,
//                      computed again in the kernel) is "cuda_ffn_res" and holds the pair's X.
//                      Their post-ops are the members' in order, "cuda_batch_post_ops" = counts.
//                      SE gate (ReduceMean/GlobalAveragePool, "cuda_se", compute_80+; Options::fuse_se):
//                      a mean over H, W of an fp16 NCHW X, a 1x1 conv on it, a 1x1 conv on that,
//                      and X times the result, as one launch (se.cpp): output = the Mul's, inputs
//                      = [X, W1, B1, W2, B2]; "cl_batch" = 4, "cuda_se_forms" = the two convs'
//                      forms (1 GEMV, 2 tensor cores); post-ops (unary) the convs' and the Mul's.
//                      With --cuda-tune se_fold=1 (compute_90 cluster form) also the 1x1 conv after
//                      it ("cuda_se_proj" = 1; its W, B after the gate's; output = the 1x1's, or a
//                      Reshape's of it), with se_fold=2 also the depthwise conv before it
//                      ("cuda_se_dw" = 1, its strides/pads/dilations as "cuda_se_dw_*"; slot 0
//                      holds the conv's input, slots 5, 6 its W, B; then the 1x1's):
//                      "cuda_batch_post_ops" = 5 counts (the gate's 3, the conv's, the 1x1's).
//                      A Concat fused with the Cast of its output (no "cl_batch"): inputs = the
//                      Concat's, then the Cast's post-op operands; output = the Cast's.
//                      FastViT stage (Conv, "cuda_stage" = n blocks, compute_90+; Options::fuse_stage,
//                      opt-in): n blocks, each a depthwise pair and its ConvFFN (fused or fc1, fc2
//                      calls) adding the pair's first output, as one launch on one thread-block
//                      cluster per image (stage.cpp; dynamic shared memory, "cuda_smem"): output = the
//                      last block's; inputs = [X, then per block W3, B3, W7, B7, W1, B1, W2, B2]
//                      (absent bias -1); post-ops (unary) the pair's two convs', fc1's, and fc2's after
//                      the residual op, "cuda_batch_post_ops" = their 4 counts; the residual op itself
//                      in "cuda_stage_res" (OpKind) and "cuda_stage_res_swapped"; "cl_batch" = the calls merged.
//                      GEMV chains (Gemm, "cuda_heads" = L layers, compute_90+; Options::fuse_heads):
//                      n chains of L batched fp16 GEMVs, each layer's A the layer before's output,
//                      as one launch, a thread-block cluster per chain (heads.cpp): outputs = the
//                      last layers' (chain order), inputs = per chain its A, then per layer B, C
//                      (1 + 2L a chain; an absent C is -1); post-ops (unary) per chain per layer,
//                      "cuda_batch_post_ops" = their n x L counts; "cl_batch" = n. With a Concat
//                      of [1, k] vectors folded in ("cuda_heads_cat" = per Concat input its chain,
//                      or -1 for the chains' common A): the one output is the Concat's (F16 or
//                      F32), each chain's fp16 output converted into its columns.
//                      The pack inside a conv (Conv, "cuda_pack_conv", opt-in Options::fuse_pack):
//                      output = the conv's; inputs = the conv's with slot 0 = the pack's input 0
//                      and slot 2 kept (-1 without a bias), then the pack's inputs 1.. from slot
//                      "cuda_pack_from"; post-ops = the conv's then the pack's (operands moved to
//                      their slots); X (never stored) described by "cuda_pack_shape" / "_dtype" /
//                      "_axis" / "_cat" (the pack's data inputs); "cl_batch" = 2.
//   Probe              (plan meta "cuda_tune" with probe=1; a measuring build) every module
//                      declares `__device__ unsigned long long* opv_probe_dst` and `__device__
//                      unsigned opv_probe_kernel`; the backend sets them (cuModuleGetGlobal) to
//                      one device buffer ([0] records written, [1] capacity, 5-word records from
//                      [4]) and the plan's kernel index. Thread 0 of every block appends
//                      {%globaltimer where the kernel opens, after its entry (the PDL wait), where
//                      it leaves; kernel << 40 | (%smid & 0xff) << 32 | linear block index;
//                      clock64 cycles from the open to the entry << 32 | to the end (each
//                      saturated at 2^32 - 1)}. A module without opv_probe_dst has no probe.
#pragma once

#include <cstdlib>
#include <string>

namespace opv::plan::cuda {

constexpr const char* kPtxFormat = "ptx";  // Kernel.options of a loadable kernel
constexpr const char* kSassSmsAttr = "cuda_sass";  // the SMs whose cubins a kernel holds ("SASS")
inline std::string sass_attr(int sm) { return "cuda_sass_" + std::to_string(sm); }  // one cubin
// ptxas's report of the first listed SM's cubin (informational: inspect shows them, nothing runs on
// them): registers a thread, stack frame bytes (local memory), [spill store, spill load] bytes,
// static shared memory bytes.
constexpr const char* kRegistersAttr = "cuda_regs";
constexpr const char* kStackAttr = "cuda_stack";
constexpr const char* kSpillAttr = "cuda_spill";
constexpr const char* kStaticSmemAttr = "cuda_smem_static";

// The number of a "compute_<NN>" architecture (plan meta "cuda_arch"; "" = the default, 75).
inline int arch_number(const std::string& arch) {
  const std::string prefix = "compute_";
  if (arch.compare(0, prefix.size(), prefix) != 0) return 75;
  return std::atoi(arch.c_str() + prefix.size());
}

}  // namespace opv::plan::cuda
