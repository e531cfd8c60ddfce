// Scalar expressions of the element-wise ops in C-family kernel languages (OpenCL C, CUDA C++):
// one place that spells out what each unary/binary op computes, shared by the code generators of
// every GPU target. The expressions call these helpers, which each target's prelude defines (for
// float, and for OpenCL also for its vector types): opv_gelu, opv_sigmoid, select(a, b, c)
// (c ? b : a, OpenCL's argument order), clamp(x, lo, hi), and the C math functions fmax, fmin,
// exp, log, log1p, tanh, erf, sqrt, fabs, floor, ceil, pow.
#pragma once
#include <string>

#include "ops/op.h"

namespace opv::plan {

// The expression for a unary op applied to expression x (Relu, Gelu, Sigmoid, Tanh, Exp, Clip ...,
// with the op's alpha/beta from `u`); empty string when the op has none.
std::string unary_expr(const PostOp& u, const std::string& x);
// ... for a binary op (Add, Sub, Mul, Div, Max, Min, Pow); empty when it has none.
std::string binary_expr(OpKind op, const std::string& a, const std::string& b);
// A float literal for C-family source ("1.000000000e+00f", INFINITY, NAN).
std::string float_literal(double v);

}  // namespace opv::plan
