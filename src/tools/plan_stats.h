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

struct PlanStats {
  std::map<std::string, int64_t> op_calls;      // op name -> calls
  std::map<std::string, int64_t> kernel_calls;  // kernel name -> calls
  std::map<plan::BufferKind, BufferKindStats> buffers;
  int64_t weights_bytes = 0;
  int64_t arena_bytes = 0;
  int64_t peak_bytes = 0;   // weights + arena + inputs + outputs
  int64_t bytes_moved = 0;  // sum over calls of input and output buffer bytes
  FlopCount flops;
};

// FLOPs of one call, from the logical shapes of its buffers.
FlopCount call_flops(const plan::Plan& p, const plan::Call& c);
PlanStats plan_stats(const plan::Plan& p);

}  // namespace opv::tools
