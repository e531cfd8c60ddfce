// Internals shared by the CUDA code generator's files (codegen.cpp: the families, the pass; ffn.cpp:
// the fused ConvFFN). Compile time only; nothing outside src/target/cuda includes this.
#pragma once
#include <cstdint>
#include <string>

#include "plan/plan.h"
#include "target/cuda/codegen.h"

namespace opv::plan::cuda::detail {

// One call being generated: its plan, kernel and what the families share.
struct Ctx {
  const Plan& p;
  const Call& c;
  const Kernel& k;
  int sm = 75;         // the virtual architecture's number (plan meta cuda_arch): >= 80 enables mma.sync
  bool split = false;  // one warp per output (`lane` in scope; Gemm/MatMul), see kSplitMaxOutputs
  mutable std::string globals{};  // module-scope declarations a family needs (helpers, workspaces)
  // The code that ends a split reduction (warp sum, lanes 1.. leave).
  std::string reduce_end() const { return split ? "  acc = opv_warp_sum(acc);\n  if (lane != 0) return;\n" : ""; }
  const Buffer& in(size_t j) const { return p.buffers.at(size_t(c.inputs.at(j))); }
  bool has(size_t j) const { return j < c.inputs.size() && c.inputs[j] >= 0; }
  const Buffer& out(size_t j = 0) const { return p.buffers.at(size_t(c.outputs.at(j))); }
  std::string in_name(size_t j) const { return "in" + std::to_string(j); }
};

extern const char* kPrelude;     // helpers every generated source starts with (F16 conversions, ...)
extern const char* kMmaHelpers;  // module-scope PTX helpers of the mma kernels (ldmatrix, mma.sync, cp.async)

int plan_sm(const Plan& p);  // the plan's virtual architecture number (meta cuda_arch): 75, 80, 90, ...
std::string I(int64_t v);    // an index literal: plain when it fits an int, else opv_idx
const char* c_type(DType dt);
std::string load(DType dt, const std::string& name, const std::string& idx);  // element as float
std::string store(DType dt, const std::string& name, const std::string& idx, const std::string& v);
// The post-op epilogue on `float v` at output coordinates o<d> (post_ops_ok first: "" with *why
// when an operand does not broadcast to the output).
bool post_ops_ok(const Ctx& x, std::string* why);
std::string post_ops(const Ctx& x);
bool conv1x1_tiled_ok(const Ctx& x);  // a dense 1x1 conv (stride 1, no padding) the 1x1 families take

// ffn.cpp: the ConvFFN's fc1 -> GELU -> fc2 (+ residual) merged into one call (compute_80+), and
// the source of such a call (cuda_abi.h "ConvFFN").
void fuse_ffn(Plan& p);
Generated ffn(const Plan& p, const Call& c);

}  // namespace opv::plan::cuda::detail
