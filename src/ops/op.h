// Operator kinds and fused post-operations (see ops.def for the canonical forms).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/attrs.h"

namespace opv {

enum class OpKind : uint16_t {
#define OPV_OP(name, family, doc) name,
#include "ops/ops.def"
#undef OPV_OP
  Count_
};

enum class OpFamily : uint8_t { Unary, Binary, Other };

const char* op_name(OpKind k);
OpFamily op_family(OpKind k);
std::optional<OpKind> op_from_name(std::string_view name);
// Throws opv::Error when v names no OpKind (used when reading artifacts).
OpKind op_from_u16(uint16_t v);
inline bool is_unary(OpKind k) { return op_family(k) == OpFamily::Unary; }
inline bool is_binary(OpKind k) { return op_family(k) == OpFamily::Binary; }
// ReduceMean/Sum/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare: x | axes keepdims, one output.
bool is_reduce(OpKind k);

// An element-wise operation applied to an op's output, in order, before it is stored.
// Unary: y = op(y) with alpha/beta as the op's parameters (LeakyRelu/Elu alpha, HardSigmoid
//   alpha/beta, Clip min=alpha max=beta).
// Binary: y = op(y, in[input]) where `input` indexes the owning node's/call's inputs and that
//   operand broadcasts to the output shape (bias [C,1,1], layer scale, residual). When
//   `swapped` is set the operand comes first: y = op(in[input], y) (matters for Sub/Div).
struct PostOp {
  OpKind op = OpKind::Identity;
  float alpha = 0.f;
  float beta = 0.f;
  int input = -1;
  bool swapped = false;
  bool operator==(const PostOp& o) const = default;
};
std::string post_ops_str(const std::vector<PostOp>& ops);  // "+gelu +mul(in3) +add(in4)"

// Fills alpha/beta of a unary PostOp from a node's attributes (inverse: unary_attrs).
PostOp unary_post_op(OpKind k, const Attrs& a);
Attrs unary_attrs(const PostOp& p);

}  // namespace opv
