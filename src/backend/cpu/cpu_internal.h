// Internals of the cpu backend shared by its source files (not a public header).
// Every plan call becomes one prepared Step at load: a closure whose pointers (arena, constants,
// the backend-owned input/output buffers) are all fixed, so run() only calls the closures.
// Step builders live one family per file: cpu_dnnl.cpp (oneDNN: conv, gemm/matmul, pooling,
// eltwise, reorder), cpu_glue.cpp (own loops: element-wise, data movement, reductions),
// cpu_strided.h (the strided loop-nest engine the glue loops share).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "plan/layout.h"  // channels_trivial: NHWC and Linear storage coincide
#include "plan/plan.h"

namespace opv::backend::cpu {

// One buffer as a step sees it: where its bytes are and how they are laid out.
struct BufView {
  void* ptr = nullptr;  // nullptr for an absent optional input
  int id = -1;          // plan buffer id
  DType dtype = DType::F32;
  Shape shape;
  plan::Layout layout = plan::Layout::Linear;
  plan::BufferKind kind = plan::BufferKind::Intermediate;
  int64_t bytes = 0;
  bool present() const { return ptr != nullptr; }
  bool is_const() const { return kind == plan::BufferKind::Constant; }
};

using StepFn = std::function<void()>;

// Everything a step builder needs about one call.
struct CallCtx {
  const plan::Plan& plan;
  const plan::Call& call;
  const plan::Kernel& kernel;
  std::vector<BufView> ins;
  std::vector<BufView> outs;
  dnnl::engine& eng;
  dnnl::stream& strm;
  int threads = 1;
  // Options::cpu_bf16: the bf16 input copies of all convolutions share one scratch buffer (steps
  // run one at a time), sized by the largest at load and bound at run. Null: fp32 only.
  struct Bf16Scratch {
    size_t bytes = 0;
    std::shared_ptr<void> ptr;
  };
  std::shared_ptr<Bf16Scratch> bf16;
  bool used_bf16 = false;  // set by a step that runs in bf16 (for inspect)
  // "call 'label' (Op)" for error messages.
  std::string where() const;
};

// Element strides (not bytes) of each logical dim of a buffer in its layout.
std::vector<int64_t> logical_strides(const Shape& shape, plan::Layout layout);

// oneDNN steps (cpu_dnnl.cpp). Returns an empty StepFn when oneDNN does not cover the call;
// `post_ops_done` reports how many leading kernel post-ops the primitive applies itself.
StepFn build_dnnl_step(CallCtx& c, size_t& post_ops_done);

// Own loops (cpu_glue.cpp). Returns an empty StepFn when not covered.
StepFn build_glue_step(CallCtx& c);
// Applies kernel.post_ops[first..] to output 0 in place with the generic element-wise routine.
StepFn build_post_op_step(CallCtx& c, size_t first);
// Correct but slow fallback through ref::run for any call of a cpu plan: copies the inputs into
// row-major tensors and the outputs back (converting NHWC buffers) at run. Never empty.
StepFn build_ref_step(CallCtx& c);

// Fused steps over several consecutive plan calls (cpu_fused.cpp): GEMV runs (one OpenMP region
// for a run of single-row Gemm calls, e.g. the MLP heads) and the uint8 -> normalised NHWC input
// pass. FuseInfo holds what the matchers need about the whole plan (readers of each buffer).
struct FuseInfo {
  explicit FuseInfo(const plan::Plan& p);
  const plan::Plan& plan;
  std::vector<std::vector<int>> readers;  // per buffer: calls reading it, in order
  std::vector<bool> is_output;            // per buffer: a plan output
};
struct FusedStep {
  StepFn fn;
  size_t calls = 0;  // plan calls it replaces (0: no fusion applies at this call)
  std::string what;  // for inspect
};
// Views must be those of the loaded plan (pointers fixed); a fused step may move a buffer it
// writes to its own storage (updating views), so later calls are built after it. Returns
// calls == 0 when nothing fuses.
FusedStep build_fused_step(const FuseInfo& f, std::vector<BufView>& views, size_t first, int threads);

}  // namespace opv::backend::cpu
