// Statistics of a plan for `opvision inspect`: op histogram, calls per kernel, buffers by kind,
// memory (weights, arena, peak), FLOPs by category and bytes moved. See plan_stats.cpp for how
// FLOPs are counted.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "plan/plan.h"

namespace opv::tools {

struct FlopCount {
  int64_t conv = 0;         // Conv: 2 * N*M*OH*OW * (C/group)*kh*kw
  int64_t matmul = 0;       // Gemm, MatMul: 2 * outputs * K
  int64_t elementwise = 0;  // unary/binary/Where/BatchNorm, Gemm's C term, every fused post-op
  int64_t other = 0;        // pools, reductions, Softmax, LayerNorm, linear Resize
  int64_t total() const { return conv + matmul + elementwise + other; }
};

struct BufferKindStats {
  int64_t count = 0;
  int64_t bytes = 0;
};

// GPU kernels (target opencl): launches and texture traffic, from the attrs the code generator
// records per kernel: "cl_reads" texture reads per work-item, "cl_gated" how many of them are
// conditional, "cl_batch" calls merged into one launch.
struct GpuKernelStats {
  std::string family;          // "cl_family" attr; "host" for a host-fallback kernel
  int64_t launches = 0;        // plan calls using the kernel
  int64_t calls = 0;           // launches weighted by cl_batch (work of the original calls)
  int64_t work_items = 0;      // sum over launches of the global size
  int64_t reads_per_item = 0;  // texture reads per work-item
  int64_t gated_per_item = 0;  // of which conditional
  int64_t texture_reads() const { return reads_per_item * work_items; }
  int64_t gated_reads() const { return gated_per_item * work_items; }
};

struct PlanStats {
  std::map<std::string, int64_t> op_calls;      // op name -> calls
  std::map<std::string, int64_t> kernel_calls;  // kernel name -> calls
  std::map<plan::BufferKind, BufferKindStats> buffers;
  int64_t weights_bytes = 0;
  int64_t arena_bytes = 0;
  int64_t peak_bytes = 0;   // weights + arena + inputs + outputs
  int64_t bytes_moved = 0;  // sum over calls of input and output buffer bytes
  FlopCount flops;
  std::map<std::string, GpuKernelStats> gpu_kernels;  // kernel name -> stats (only kernels with cl_family or host fallback on GPU targets)
};

// FLOPs of one call, from the logical shapes of its buffers.
FlopCount call_flops(const plan::Plan& p, const plan::Call& c);
// Bytes one call moves: the storage bytes of every buffer it reads or writes.
int64_t call_bytes(const plan::Plan& p, const plan::Call& c);
PlanStats plan_stats(const plan::Plan& p);

}  // namespace opv::tools
