// Private helpers shared by the reference kernel families (src/kernels/reference/*.cpp):
// 1. Args: the op, its attributes, inputs and outputs, with checked accessors whose errors
//    name the op and the input/output index.
// 2. Conversions between any-dtype tensors and flat double / int64 vectors (floats are
//    computed in double and rounded once on store; integers in exact int64 arithmetic).
// 3. Offset tables: every data-movement kernel is "for each output element, which source
//    element" — built from one table per output axis and then copied by element size, so
//    movement kernels are dtype-agnostic.
// Invariant: helpers never alias their inputs and outputs (loads copy before stores).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/attrs.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace opv::ref::detail {

struct Args {
  OpKind op;
  const Attrs& attrs;
  const std::vector<const Tensor*>& ins;
  const std::vector<Tensor*>& outs;

  // Input i; throws naming the op when it is absent.
  const Tensor& in(size_t i) const;
  // Input i or nullptr when absent (optional inputs).
  const Tensor* opt(size_t i) const;
  Tensor& out(size_t i) const;
  // Throws "<Op>: unsupported dtypes in=(..) out=(..)".
  [[noreturn]] void unsupported(const std::string& why = "") const;
  // Throws "<Op>: <msg>".
  template <typename... A>
  [[noreturn]] void error(const A&... a) const;
  const char* name() const { return op_name(op); }
};

std::string dtypes_str(const std::vector<const Tensor*>& ins, const std::vector<Tensor*>& outs);

template <typename... A>
void Args::error(const A&... a) const {
  fail(name(), ": ", a...);
}

// Whole-tensor conversions (any dtype; f16 decoded; bool as 0/1).
std::vector<double> load_f64(const Tensor& t);
std::vector<int64_t> load_i64(const Tensor& t);
// Stores values converted to t.dtype() (float rounding; ints truncate toward zero and wrap;
// bool is != 0). `v` must hold t.numel() values.
void store_f64(Tensor& t, const std::vector<double>& v);
void store_i64(Tensor& t, const std::vector<int64_t>& v);

// Source element offsets for every output element (row-major over out_shape).
// tables[d][o] is the contribution of output index o on axis d to the source offset, or -1
// when that index lies outside the source (the element is then -1: a padding position).
using AxisTables = std::vector<std::vector<int64_t>>;
std::vector<int64_t> offsets_from_tables(const Shape& out_shape, const AxisTables& tables);

// Tables for numpy broadcasting of `in` (right-aligned) to `out`; throws when `in` does not
// broadcast to `out`.
AxisTables broadcast_tables(const Shape& in, const Shape& out);
inline std::vector<int64_t> broadcast_offsets(const Shape& in, const Shape& out) {
  return offsets_from_tables(out, broadcast_tables(in, out));
}

// dst[i] = src[offsets[i]] element by element (dtype-agnostic, by element size); where
// offsets[i] == -1 the element is filled from `pad` (one element of dst's dtype, or zeros).
void copy_elements(const Tensor& src, Tensor& dst, const std::vector<int64_t>& offsets,
                   const Tensor* pad = nullptr);

// Same dtype required for byte-copying kernels.
void check_same_dtype(const Args& a, const Tensor& x, const Tensor& y);

// Op families (one source file each).
void run_unary(const Args& a);        // elementwise.cpp
void run_binary(const Args& a);       // elementwise.cpp
void run_where(const Args& a);        // elementwise.cpp
void apply_post_ops_impl(const std::vector<PostOp>& post_ops, const std::vector<const Tensor*>& ins,
                         Tensor& y);  // elementwise.cpp
void run_conv(const Args& a);         // conv.cpp
void run_gemm(const Args& a);         // gemm.cpp
void run_matmul(const Args& a);       // gemm.cpp
void run_max_pool(const Args& a);     // pool.cpp
void run_average_pool(const Args& a); // pool.cpp
void run_global_pool(const Args& a);  // pool.cpp
void run_reduce(const Args& a);       // reduce.cpp
void run_softmax(const Args& a);      // reduce.cpp
void run_layer_norm(const Args& a);   // reduce.cpp
void run_batch_norm(const Args& a);   // reduce.cpp
void run_movement(const Args& a);     // movement.cpp (Reshape, Transpose, Concat, Split, ...)
void run_resize(const Args& a);       // resize.cpp
void run_range(const Args& a);        // generate.cpp
void run_constant_of_shape(const Args& a);  // generate.cpp
// extra.cpp
void run_arg_reduce(const Args& a);              // ArgMax, ArgMin
void run_axis_norm(const Args& a);               // LogSoftmax, Hardmax, LpNorm
void run_cumsum(const Args& a);
void run_instance_norm(const Args& a);
void run_trilu(const Args& a);
void run_topk(const Args& a);
void run_einsum(const Args& a);
void run_conv_transpose(const Args& a);
void run_grid_sample(const Args& a);
void run_gather_scatter_elements(const Args& a);  // GatherElements, ScatterElements

}  // namespace opv::ref::detail
