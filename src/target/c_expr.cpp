#include "target/c_expr.h"

#include <cmath>
#include <sstream>

namespace opv::plan {

std::string float_literal(double v) {
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  if (std::isnan(v)) return "NAN";
  std::ostringstream os;
  os.precision(9);
  os << std::scientific << v << "f";
  return os.str();
}

std::string unary_expr(const PostOp& u, const std::string& x) {
  const std::string a = float_literal(u.alpha), b = float_literal(u.beta), X = "(" + x + ")";
  switch (u.op) {
    case OpKind::Identity: return X;
    case OpKind::Relu: return "fmax(" + X + ", 0.0f)";
    case OpKind::LeakyRelu: return "select(" + a + " * " + X + ", " + X + ", " + X + " >= 0.0f)";
    case OpKind::Elu: return "select(" + a + " * (exp(" + X + ") - 1.0f), " + X + ", " + X + " >= 0.0f)";
    case OpKind::Sigmoid: return "opv_sigmoid(" + X + ")";
    case OpKind::HardSigmoid: return "clamp(" + a + " * " + X + " + " + b + ", 0.0f, 1.0f)";
    case OpKind::HardSwish: return X + " * clamp(" + X + " / 6.0f + 0.5f, 0.0f, 1.0f)";
    case OpKind::Tanh: return "tanh(" + X + ")";
    case OpKind::Softplus:
      return "select(log1p(exp(" + X + ")), " + X + " + log1p(exp(-" + X + ")), " + X + " > 0.0f)";
    case OpKind::Gelu: return "opv_gelu(" + X + ")";
    case OpKind::GeluTanh:
      return "(0.5f * " + X + " * (1.0f + tanh(0.7978845608f * (" + X + " + 0.044715f * " + X + " * " + X + " * " +
             X + "))))";
    case OpKind::Erf: return "erf(" + X + ")";
    case OpKind::Exp: return "exp(" + X + ")";
    case OpKind::Log: return "log(" + X + ")";
    case OpKind::Neg: return "(-" + X + ")";
    case OpKind::Abs: return "fabs(" + X + ")";
    case OpKind::Reciprocal: return "(1.0f / " + X + ")";
    case OpKind::Sqrt: return "sqrt(" + X + ")";
    case OpKind::Floor: return "floor(" + X + ")";
    case OpKind::Ceil: return "ceil(" + X + ")";
    case OpKind::Clip: return "fmin(fmax(" + X + ", " + a + "), " + b + ")";
    case OpKind::Sin: return "sin(" + X + ")";
    case OpKind::Cos: return "cos(" + X + ")";
    case OpKind::Tan: return "tan(" + X + ")";
    case OpKind::Asin: return "asin(" + X + ")";
    case OpKind::Acos: return "acos(" + X + ")";
    case OpKind::Atan: return "atan(" + X + ")";
    case OpKind::Sinh: return "sinh(" + X + ")";
    case OpKind::Cosh: return "cosh(" + X + ")";
    case OpKind::Asinh: return "asinh(" + X + ")";
    case OpKind::Acosh: return "acosh(" + X + ")";
    case OpKind::Atanh: return "atanh(" + X + ")";
    case OpKind::Round: return "rint(" + X + ")";  // half to even, as the reference
    case OpKind::Sign:  // NaN stays NaN
      return "select(select(select(0.0f, -1.0f, " + X + " < 0.0f), 1.0f, " + X + " > 0.0f), " + X + ", " + X +
             " != " + X + ")";
    case OpKind::Softsign: return "(" + X + " / (1.0f + fabs(" + X + ")))";
    case OpKind::Mish:
      return "(" + X + " * tanh(select(log1p(exp(" + X + ")), " + X + " + log1p(exp(-" + X + ")), " + X +
             " > 0.0f)))";
    case OpKind::Selu: return "select(" + b + " * (" + a + " * exp(" + X + ") - " + a + "), " + b + " * " + X + ", " + X + " > 0.0f)";
    case OpKind::ThresholdedRelu: return "select(0.0f, " + X + ", " + X + " > " + a + ")";
    case OpKind::Celu: return "(fmax(0.0f, " + X + ") + fmin(0.0f, " + a + " * expm1(" + X + " / " + a + ")))";
    case OpKind::Shrink:  // alpha = bias, beta = lambd
      return "select(select(0.0f, " + X + " - " + a + ", " + X + " > " + b + "), " + X + " + " + a + ", " + X +
             " < (0.0f - " + b + "))";
    default: return "";
  }
}

std::string binary_expr(OpKind op, const std::string& a, const std::string& b) {
  const std::string A = "(" + a + ")", B = "(" + b + ")";
  switch (op) {
    case OpKind::Add: return "(" + A + " + " + B + ")";
    case OpKind::Sub: return "(" + A + " - " + B + ")";
    case OpKind::Mul: return "(" + A + " * " + B + ")";
    case OpKind::Div: return "(" + A + " / " + B + ")";
    case OpKind::Pow: return "pow(" + A + ", " + B + ")";
    case OpKind::Min: return "fmin(" + A + ", " + B + ")";
    case OpKind::Max: return "fmax(" + A + ", " + B + ")";
    case OpKind::PRelu: return "select(" + A + ", " + A + " * " + B + ", " + A + " < 0.0f)";
    default: return "";
  }
}

}  // namespace opv::plan
