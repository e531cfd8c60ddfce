// The reference kernels: plain loops, obviously correct, the oracle for every other backend.
// They implement every canonical op (ops.def) plus post-ops, on row-major tensors.
// Floating-point math is done in fp32 with fp64 accumulation for reductions/dot products;
// F16 tensors are read and written through half<->float conversion.
// Used by the reference backend and by constant folding in the compiler.
#pragma once
#include <vector>

#include "core/attrs.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace opv::ref {

struct OpCall {
  OpKind op;
  const Attrs& attrs;
  const std::vector<PostOp>& post_ops;
};

// Runs one op. Inputs may contain nullptr for absent optional inputs. Outputs must arrive
// allocated with their final dtype and shape. Throws opv::Error on unsupported dtype combos.
void run(const OpCall& call, const std::vector<const Tensor*>& ins,
         const std::vector<Tensor*>& outs);

// Applies post-ops to y in place (y is the op's output; ins are the op's inputs).
void apply_post_ops(const std::vector<PostOp>& post_ops, const std::vector<const Tensor*>& ins,
                    Tensor& y);

}  // namespace opv::ref
