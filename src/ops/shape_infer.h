// Static shape and dtype inference for canonical ops (see ops.def). Used by the importer after
// canonicalisation, by passes that create nodes, and by the plan validator.
#pragma once
#include <vector>

#include "core/attrs.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace opv {

struct ValueInfo {
  DType dtype = DType::F32;
  Shape shape;
  const Tensor* data = nullptr;  // constant contents when known (e.g. Gather indices)
};

// Computes the outputs' dtypes and shapes. `outs` arrives sized to the number of outputs; for
// ops whose output shape is carried by the value itself (Reshape, Expand, Slice, Resize...)
// the shape already in `outs` is validated against the input instead of being derived.
// Throws opv::Error with the reason (the caller prefixes the node label).
void infer_shapes(OpKind op, const Attrs& attrs, const std::vector<ValueInfo>& ins,
                  std::vector<ValueInfo>& outs);

}  // namespace opv
