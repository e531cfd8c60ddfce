// Reference element-wise kernels: unary ops, binary ops with numpy broadcasting, Where,
// Cast, and the fused post-op epilogue.
// 1. Float outputs: operands are loaded as double, the op is evaluated in double and the
//    result is rounded once to the output dtype.
// 2. Integer outputs: exact int64 arithmetic (wrapping like two's complement hardware), then
//    truncation to the output width; integer Div truncates toward zero, Mod follows ONNX
//    (sign of the divisor, or of the dividend when fmod=1); division by zero is an error.
// 3. Bool: And/Or/Not, comparisons produce Bool, Where selects by a Bool condition.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/reference.h"
#include "core/half.h"
#include "kernels/reference/common.h"

namespace opv::ref::detail {

namespace {

constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kGeluTanhCubic = 0.044715;

double unary_f64(OpKind op, double x, double alpha, double beta) {
  switch (op) {
    case OpKind::Identity: return x;
    case OpKind::Relu: return x > 0 ? x : 0.0;
    case OpKind::LeakyRelu: return x >= 0 ? x : alpha * x;
    case OpKind::Elu: return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
    case OpKind::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case OpKind::HardSigmoid: return std::max(0.0, std::min(1.0, alpha * x + beta));
    case OpKind::HardSwish: return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5));
    case OpKind::Tanh: return std::tanh(x);
    case OpKind::Softplus: return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    case OpKind::Gelu: return 0.5 * x * std::erfc(-x / kSqrt2);  // x Phi(x); 1 + erf(x / sqrt 2) underflows to 0 below x ~ -8.3
    case OpKind::GeluTanh:
      return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + kGeluTanhCubic * x * x * x)));
    case OpKind::Erf: return std::erf(x);
    case OpKind::Exp: return std::exp(x);
    case OpKind::Log: return std::log(x);
    case OpKind::Neg: return -x;
    case OpKind::Abs: return std::fabs(x);
    case OpKind::Reciprocal: return 1.0 / x;
    case OpKind::Sqrt: return std::sqrt(x);
    case OpKind::Floor: return std::floor(x);
    case OpKind::Ceil: return std::ceil(x);
    case OpKind::Clip: return std::isnan(x) ? x : std::min(std::max(x, alpha), beta);
    case OpKind::Sin: return std::sin(x);
    case OpKind::Cos: return std::cos(x);
    case OpKind::Tan: return std::tan(x);
    case OpKind::Asin: return std::asin(x);
    case OpKind::Acos: return std::acos(x);
    case OpKind::Atan: return std::atan(x);
    case OpKind::Sinh: return std::sinh(x);
    case OpKind::Cosh: return std::cosh(x);
    case OpKind::Asinh: return std::asinh(x);
    case OpKind::Acosh: return std::acosh(x);
    case OpKind::Atanh: return std::atanh(x);
    case OpKind::Sign: return std::isnan(x) ? x : double((x > 0) - (x < 0));
    case OpKind::Round: return std::nearbyint(x);  // default rounding mode: half to even
    case OpKind::Softsign: return x / (1.0 + std::fabs(x));
    case OpKind::Mish: {
      double sp = x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
      return x * std::tanh(sp);
    }
    case OpKind::Selu: return x > 0 ? beta * x : beta * (alpha * std::exp(x) - alpha);
    case OpKind::ThresholdedRelu: return x > alpha ? x : 0.0;
    case OpKind::Celu: return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha));
    case OpKind::Shrink: return x < -beta ? x + alpha : x > beta ? x - alpha : 0.0;
    default: fail(op_name(op), ": not a float unary op");
  }
}

// Integer unary ops (exact); returns false when the op has no integer form.
bool unary_i64(OpKind op, const std::vector<int64_t>& x, double alpha, double beta,
               std::vector<int64_t>& y) {
  y.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t v = x[i];
    switch (op) {
      case OpKind::Identity:
      case OpKind::Floor:
      case OpKind::Ceil: y[i] = v; break;
      case OpKind::Relu: y[i] = v > 0 ? v : 0; break;
      case OpKind::Round: y[i] = v; break;
      case OpKind::Sign: y[i] = (v > 0) - (v < 0); break;
      case OpKind::Neg: y[i] = int64_t(0ull - uint64_t(v)); break;
      case OpKind::Abs: y[i] = v < 0 ? int64_t(0ull - uint64_t(v)) : v; break;
      case OpKind::Clip:
        // Bounds beyond int64 saturate (the cast of such a double is undefined).
        if (double(v) < alpha) v = alpha >= 0x1p63 ? INT64_MAX : int64_t(std::ceil(alpha));
        if (double(v) > beta) v = beta < -0x1p63 ? INT64_MIN : int64_t(std::floor(beta));
        y[i] = v;
        break;
      default: return false;
    }
  }
  return true;
}

int64_t wrap_add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t wrap_sub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
int64_t wrap_mul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }

int64_t int_pow(int64_t base, int64_t e) {
  if (e < 0) {
    if (base == 1) return 1;
    if (base == -1) return (e % 2 == 0) ? 1 : -1;
    OPV_CHECK(base != 0, "Pow: 0 raised to a negative integer power");
    return 0;
  }
  int64_t r = 1;
  while (e > 0) {
    if (e & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return r;
}

int64_t binary_i64(OpKind op, int64_t a, int64_t b, bool fmod_mode) {
  switch (op) {
    case OpKind::Add: return wrap_add(a, b);
    case OpKind::Sub: return wrap_sub(a, b);
    case OpKind::Mul: return wrap_mul(a, b);
    case OpKind::Div:
      OPV_CHECK(b != 0, "Div: integer division by zero");
      if (a == std::numeric_limits<int64_t>::min() && b == -1) return a;
      return a / b;
    case OpKind::Mod: {
      OPV_CHECK(b != 0, "Mod: integer division by zero");
      if (b == -1) return 0;
      int64_t r = a % b;
      if (!fmod_mode && r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
    case OpKind::Pow: return int_pow(a, b);
    case OpKind::Min: return std::min(a, b);
    case OpKind::Max: return std::max(a, b);
    case OpKind::PRelu: return a < 0 ? wrap_mul(a, b) : a;
    case OpKind::BitwiseAnd: return a & b;
    case OpKind::BitwiseOr: return a | b;
    case OpKind::BitwiseXor: return a ^ b;
    default: fail(op_name(op), ": not an integer binary op");
  }
}

double binary_f64(OpKind op, double a, double b, bool fmod_mode) {
  switch (op) {
    case OpKind::Add: return a + b;
    case OpKind::Sub: return a - b;
    case OpKind::Mul: return a * b;
    case OpKind::Div: return a / b;
    case OpKind::Pow: return std::pow(a, b);
    case OpKind::Min: return (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b);
    case OpKind::Max: return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b);
    case OpKind::Mod: {
      double r = std::fmod(a, b);
      if (!fmod_mode && r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
    case OpKind::PRelu: return a < 0 ? a * b : a;
    default: fail(op_name(op), ": not a float binary op");
  }
}

template <typename T>
bool compare(OpKind op, T a, T b) {
  switch (op) {
    case OpKind::Equal: return a == b;
    case OpKind::Less: return a < b;
    case OpKind::Greater: return a > b;
    case OpKind::LessOrEqual: return a <= b;
    case OpKind::GreaterOrEqual: return a >= b;
    default: fail(op_name(op), ": not a comparison");
  }
}

bool is_comparison(OpKind op) {
  return op == OpKind::Equal || op == OpKind::Less || op == OpKind::Greater ||
         op == OpKind::LessOrEqual || op == OpKind::GreaterOrEqual;
}

// y = op(a, b) with a and b broadcast to y's shape. Reads a and b completely before writing y,
// so y may alias either operand (post-ops).
void binary_into(const Args& args, OpKind op, const Tensor& a, const Tensor& b, Tensor& y) {
  const Shape& os = y.shape();
  std::vector<int64_t> oa = broadcast_offsets(a.shape(), os);
  std::vector<int64_t> ob = broadcast_offsets(b.shape(), os);
  const size_t n = oa.size();
  const bool fmod_mode = args.attrs.i("fmod", 0) != 0;
  if (op == OpKind::And || op == OpKind::Or || op == OpKind::Xor) {
    if (a.dtype() != DType::Bool || b.dtype() != DType::Bool || y.dtype() != DType::Bool)
      args.unsupported("And/Or/Xor take and produce bool");
    const uint8_t* pa = a.data<uint8_t>();
    const uint8_t* pb = b.data<uint8_t>();
    std::vector<uint8_t> r(n);
    for (size_t i = 0; i < n; ++i) {
      bool x = pa[oa[i]] != 0, z = pb[ob[i]] != 0;
      r[i] = (op == OpKind::And ? (x && z) : op == OpKind::Or ? (x || z) : (x != z)) ? 1 : 0;
    }
    if (n) std::memcpy(y.raw(), r.data(), n);  // empty tensors have no storage (fuzz_onnx)
    return;
  }
  if (is_comparison(op)) {
    if (y.dtype() != DType::Bool) args.unsupported("comparisons produce bool");
    std::vector<uint8_t> r(n);
    if (is_float(a.dtype()) || is_float(b.dtype())) {
      std::vector<double> va = load_f64(a), vb = load_f64(b);
      for (size_t i = 0; i < n; ++i) r[i] = compare(op, va[size_t(oa[i])], vb[size_t(ob[i])]);
    } else {
      std::vector<int64_t> va = load_i64(a), vb = load_i64(b);
      for (size_t i = 0; i < n; ++i) r[i] = compare(op, va[size_t(oa[i])], vb[size_t(ob[i])]);
    }
    if (n) std::memcpy(y.raw(), r.data(), n);  // empty tensors have no storage (fuzz_onnx)
    return;
  }
  const bool bitwise = op == OpKind::BitwiseAnd || op == OpKind::BitwiseOr || op == OpKind::BitwiseXor;
  if (is_float(y.dtype()) && !bitwise) {
    std::vector<double> va = load_f64(a), vb = load_f64(b), r(n);
    for (size_t i = 0; i < n; ++i) r[i] = binary_f64(op, va[size_t(oa[i])], vb[size_t(ob[i])], fmod_mode);
    store_f64(y, r);
    return;
  }
  if (is_int(y.dtype()) && !is_float(a.dtype()) && (op == OpKind::Pow || !is_float(b.dtype()))) {
    std::vector<int64_t> va = load_i64(a), vb = load_i64(b), r(n);
    for (size_t i = 0; i < n; ++i) r[i] = binary_i64(op, va[size_t(oa[i])], vb[size_t(ob[i])], fmod_mode);
    store_i64(y, r);
    return;
  }
  args.unsupported();
}

void unary_into(const Args& args, OpKind op, double alpha, double beta, const Tensor& x, Tensor& y) {
  if (op == OpKind::Not) {
    if (x.dtype() != DType::Bool || y.dtype() != DType::Bool) args.unsupported("Not takes and produces bool");
    const uint8_t* px = x.data<uint8_t>();
    uint8_t* py = y.data<uint8_t>();
    for (int64_t i = 0; i < x.numel(); ++i) py[i] = px[i] ? 0 : 1;
    return;
  }
  if (op == OpKind::IsNaN || op == OpKind::IsInf) {
    if (!is_float(x.dtype()) || y.dtype() != DType::Bool) args.unsupported("IsNaN/IsInf take floats and produce bool");
    std::vector<double> v = load_f64(x);
    uint8_t* py = y.data<uint8_t>();
    for (size_t i = 0; i < v.size(); ++i) {
      const double e = v[i];
      py[i] = op == OpKind::IsNaN ? std::isnan(e) : ((alpha != 0 && e == -INFINITY) || (beta != 0 && e == INFINITY));
    }
    return;
  }
  if (is_float(y.dtype()) && is_float(x.dtype())) {
    std::vector<double> v = load_f64(x);
    for (double& e : v) e = unary_f64(op, e, alpha, beta);
    store_f64(y, v);
    return;
  }
  if (is_int(y.dtype()) && is_int(x.dtype())) {
    std::vector<int64_t> r;
    if (unary_i64(op, load_i64(x), alpha, beta, r)) {
      store_i64(y, r);
      return;
    }
  }
  if (op == OpKind::Identity && x.dtype() == y.dtype()) {
    if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
    return;
  }
  args.unsupported();
}

}  // namespace

void run_unary(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  if (x.shape() != y.shape())
    a.error("output shape ", shape_str(y.shape()), " differs from input shape ", shape_str(x.shape()));
  if (a.op == OpKind::Cast) {
    int64_t to = a.attrs.i("to", int64_t(y.dtype()));
    if (to != int64_t(y.dtype()))
      a.error("attribute to=", to, " does not match the output dtype ", dtype_name(y.dtype()));
    Tensor c = x.cast(y.dtype());
    if (a.attrs.has("round_to")) {  // widened fp16 storage: keep the precision of the model's dtype
      DType r = dtype_from_u8(uint8_t(a.attrs.i("round_to")));
      if (r != DType::F16 || !is_float(y.dtype())) a.error("round_to supports f16 into a float output only");
      for (int64_t i = 0; i < c.numel(); ++i) c.set_f64(i, double(round_to_half(float(c.get_f64(i)))));
    }
    if (c.nbytes()) std::memcpy(y.raw(), c.raw(), c.nbytes());
    return;
  }
  if (a.op == OpKind::Identity && x.dtype() == y.dtype()) {
    if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
    return;
  }
  if (a.op == OpKind::Clip) {  // bounds kept in double (integer clips in shape arithmetic)
    unary_into(a, a.op, a.attrs.f("min", -INFINITY), a.attrs.f("max", INFINITY), x, y);
    return;
  }
  PostOp p = unary_post_op(a.op, a.attrs);
  unary_into(a, a.op, p.alpha, p.beta, x, y);
}

void run_binary(const Args& a) {
  const Tensor& x = a.in(0);
  const Tensor& z = a.in(1);
  Shape bs = broadcast_shapes(x.shape(), z.shape());
  if (bs != a.out(0).shape())
    a.error("output shape ", shape_str(a.out(0).shape()), " is not the broadcast of ", shape_str(x.shape()),
            " and ", shape_str(z.shape()));
  binary_into(a, a.op, x, z, a.out(0));
}

void run_where(const Args& a) {
  const Tensor& c = a.in(0);
  const Tensor& x = a.in(1);
  const Tensor& z = a.in(2);
  Tensor& y = a.out(0);
  if (c.dtype() != DType::Bool) a.unsupported("condition must be bool");
  if (x.dtype() != y.dtype() || z.dtype() != y.dtype()) a.unsupported("x, y and output dtypes must match");
  Shape bs = broadcast_shapes(broadcast_shapes(c.shape(), x.shape()), z.shape());
  if (bs != y.shape()) a.error("output shape ", shape_str(y.shape()), " is not the broadcast shape ", shape_str(bs));
  std::vector<int64_t> oc = broadcast_offsets(c.shape(), y.shape());
  std::vector<int64_t> ox = broadcast_offsets(x.shape(), y.shape());
  std::vector<int64_t> oz = broadcast_offsets(z.shape(), y.shape());
  // Select per element between the two sources, then copy by element size.
  const uint8_t* pc = c.data<uint8_t>();
  const size_t es = dtype_size(y.dtype());
  const uint8_t* px = static_cast<const uint8_t*>(x.raw());
  const uint8_t* pz = static_cast<const uint8_t*>(z.raw());
  uint8_t* py = static_cast<uint8_t*>(y.raw());
  for (size_t i = 0; i < oc.size(); ++i) {
    const uint8_t* src = pc[oc[i]] ? px + size_t(ox[i]) * es : pz + size_t(oz[i]) * es;
    std::memcpy(py + i * es, src, es);
  }
}

void apply_post_ops_impl(const std::vector<PostOp>& post_ops, const std::vector<const Tensor*>& ins, Tensor& y) {
  static const Attrs kNoAttrs;
  static const std::vector<Tensor*> kNoOuts;
  for (size_t k = 0; k < post_ops.size(); ++k) {
    const PostOp& p = post_ops[k];
    Args a{p.op, kNoAttrs, ins, kNoOuts};
    if (is_unary(p.op)) {
      if (p.op == OpKind::Cast) a.error("cannot be a post-op");
      unary_into(a, p.op, p.alpha, p.beta, y, y);
    } else if (is_binary(p.op)) {
      if (p.input < 0 || size_t(p.input) >= ins.size() || ins[size_t(p.input)] == nullptr)
        a.error("post-op ", k, " reads input ", p.input, " which is not present (", ins.size(), " inputs)");
      const Tensor& operand = *ins[size_t(p.input)];
      if (p.swapped)
        binary_into(a, p.op, operand, y, y);
      else
        binary_into(a, p.op, y, operand, y);
    } else {
      a.error("post-op ", k, " is not an element-wise op");
    }
  }
}

}  // namespace opv::ref::detail

namespace opv::ref {
void apply_post_ops(const std::vector<PostOp>& post_ops, const std::vector<const Tensor*>& ins, Tensor& y) {
  detail::apply_post_ops_impl(post_ops, ins, y);
}
}  // namespace opv::ref
