// Own loops of the cpu backend for everything oneDNN does not run: element-wise ops with
// numpy broadcasting (any mix of Linear/NHWC buffers), Where, Cast, data movement (Reshape,
// Transpose, Slice, Expand, Concat, Split, Gather, constant Pad, Reorder of non-f32 buffers),
// reductions, Softmax, LayerNorm, and the generic post-op step. Element-wise and data-movement
// ops are all one pattern: describe each operand by per-dim element strides over the output's
// logical shape and hand the nest to cpu_strided.h, which orders it by storage, merges dims and
// splits rows over OpenMP threads. The row functions keep fast paths for contiguous and
// broadcast inner rows so the compiler vectorises them.
#include <cmath>
#include <cstring>
#include <memory>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_strided.h"
#include "core/half.h"
#include "kernels/reference.h"

namespace opv::backend::cpu {
namespace {

constexpr size_t kMaxRank = 8;  // reductions keep their index on the stack

// Strides of `b` as an operand broadcast against `out_shape` (numpy right alignment).
std::vector<int64_t> bcast_strides(const BufView& b, const Shape& out_shape) {
  OPV_ASSERT(b.shape.size() <= out_shape.size());
  const size_t pad = out_shape.size() - b.shape.size();
  std::vector<int64_t> own = logical_strides(b.shape, b.layout);
  std::vector<int64_t> st(out_shape.size(), 0);
  for (size_t d = 0; d < b.shape.size(); ++d) st[pad + d] = b.shape[d] == 1 ? 0 : own[d];
  return st;
}


int64_t esize(const BufView& b) { return int64_t(dtype_size(b.dtype)); }
bool is_linear(const BufView& b) { return b.layout == plan::Layout::Linear || plan::channels_trivial(b.shape); }

template <typename U>
void copy_row(int64_t n, char** p, const int64_t* st) {
  U* o = reinterpret_cast<U*>(p[0]);
  const U* a = reinterpret_cast<const U*>(p[1]);
  if (st[0] == 1 && st[1] == 1) {
    std::memcpy(o, a, size_t(n) * sizeof(U));
  } else if (st[1] == 0) {
    const U v = a[0];
    for (int64_t i = 0; i < n; ++i) o[i * st[0]] = v;
  } else {
    for (int64_t i = 0; i < n; ++i) o[i * st[0]] = a[i * st[1]];
  }
}

// A strided copy out <- in over `shape`, both described by element strides.
StepFn copy_step(const Shape& shape, std::vector<int64_t> out_st, std::vector<int64_t> in_st, char* out, const char* in,
                 int64_t elem, int threads) {
  LoopNest n = make_nest(shape, {std::move(out_st), std::move(in_st)}, {elem, elem}, threads);
  std::vector<char*> base{out, const_cast<char*>(in)};
  switch (elem) {
    case 1: return [n, base] { run_nest(n, base, copy_row<uint8_t>); };
    case 2: return [n, base] { run_nest(n, base, copy_row<uint16_t>); };
    case 4: return [n, base] { run_nest(n, base, copy_row<uint32_t>); };
    case 8: return [n, base] { run_nest(n, base, copy_row<uint64_t>); };
    default: fail("cpu backend: element size ", elem, " not supported");
  }
}

// ---- element-wise -------------------------------------------------------------------------

template <typename F>
StepFn unary_f32_step(const BufView& x, const BufView& y, int threads, F f) {
  LoopNest n = make_nest(y.shape, {logical_strides(y.shape, y.layout), bcast_strides(x, y.shape)}, {4, 4}, threads);
  std::vector<char*> base{static_cast<char*>(y.ptr), static_cast<char*>(x.ptr)};
  return [n, base, f] {
    run_nest(n, base, [&](int64_t cnt, char** p, const int64_t* st) {
      float* o = reinterpret_cast<float*>(p[0]);
      const float* a = reinterpret_cast<const float*>(p[1]);
      if (st[0] == 1 && st[1] == 1)
        for (int64_t i = 0; i < cnt; ++i) o[i] = f(a[i]);
      else
        for (int64_t i = 0; i < cnt; ++i) o[i * st[0]] = f(a[i * st[1]]);
    });
  };
}

StepFn unary_step(const PostOp& p, const BufView& x, const BufView& y, int threads) {
  const float al = p.alpha, be = p.beta;
  switch (p.op) {
    case OpKind::Identity: return unary_f32_step(x, y, threads, [](float v) { return v; });
    case OpKind::Relu: return unary_f32_step(x, y, threads, [](float v) { return v > 0.f ? v : 0.f; });
    case OpKind::LeakyRelu: return unary_f32_step(x, y, threads, [al](float v) { return v >= 0.f ? v : al * v; });
    case OpKind::Elu: return unary_f32_step(x, y, threads, [al](float v) { return v >= 0.f ? v : al * std::expm1(v); });
    case OpKind::Sigmoid: return unary_f32_step(x, y, threads, [](float v) { return 1.f / (1.f + std::exp(-v)); });
    case OpKind::HardSigmoid:
      return unary_f32_step(x, y, threads, [al, be](float v) { return std::fmin(1.f, std::fmax(0.f, al * v + be)); });
    case OpKind::HardSwish:
      return unary_f32_step(x, y, threads,
                            [](float v) { return v * std::fmin(1.f, std::fmax(0.f, v / 6.f + 0.5f)); });
    case OpKind::Tanh: return unary_f32_step(x, y, threads, [](float v) { return std::tanh(v); });
    case OpKind::Softplus: return unary_f32_step(x, y, threads, [](float v) { return std::log1p(std::exp(v)); });
    case OpKind::Gelu:
      return unary_f32_step(x, y, threads, [](float v) { return 0.5f * v * (1.f + std::erf(v * float(M_SQRT1_2))); });
    case OpKind::GeluTanh:
      return unary_f32_step(x, y, threads, [](float v) {
        const float k = std::sqrt(2.f / float(M_PI));
        return 0.5f * v * (1.f + std::tanh(k * (v + 0.044715f * v * v * v)));
      });
    case OpKind::Erf: return unary_f32_step(x, y, threads, [](float v) { return std::erf(v); });
    case OpKind::Exp: return unary_f32_step(x, y, threads, [](float v) { return std::exp(v); });
    case OpKind::Log: return unary_f32_step(x, y, threads, [](float v) { return std::log(v); });
    case OpKind::Neg: return unary_f32_step(x, y, threads, [](float v) { return -v; });
    case OpKind::Abs: return unary_f32_step(x, y, threads, [](float v) { return std::fabs(v); });
    case OpKind::Reciprocal: return unary_f32_step(x, y, threads, [](float v) { return 1.f / v; });
    case OpKind::Sqrt: return unary_f32_step(x, y, threads, [](float v) { return std::sqrt(v); });
    case OpKind::Floor: return unary_f32_step(x, y, threads, [](float v) { return std::floor(v); });
    case OpKind::Ceil: return unary_f32_step(x, y, threads, [](float v) { return std::ceil(v); });
    case OpKind::Clip:
      return unary_f32_step(x, y, threads, [al, be](float v) { return std::fmin(be, std::fmax(al, v)); });
    default: return {};
  }
}

template <typename T, typename R, typename F>
void binary_row(int64_t n, char** p, const int64_t* st, F f) {
  R* o = reinterpret_cast<R*>(p[0]);
  const T* a = reinterpret_cast<const T*>(p[1]);
  const T* b = reinterpret_cast<const T*>(p[2]);
  if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
  } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
    const T bv = b[0];
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], bv);
  } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
    const T av = a[0];
    for (int64_t i = 0; i < n; ++i) o[i] = f(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i * st[0]] = f(a[i * st[1]], b[i * st[2]]);
  }
}

// y = f(a, b) with broadcasting; a/b/y of any layout.
template <typename T, typename R, typename F>
StepFn binary_typed(const BufView& a, const BufView& b, const BufView& y, int threads, F f) {
  LoopNest n = make_nest(y.shape,
                         {logical_strides(y.shape, y.layout), bcast_strides(a, y.shape), bcast_strides(b, y.shape)},
                         {int64_t(sizeof(R)), int64_t(sizeof(T)), int64_t(sizeof(T))}, threads);
  std::vector<char*> base{static_cast<char*>(y.ptr), static_cast<char*>(a.ptr), static_cast<char*>(b.ptr)};
  return [n, base, f] {
    run_nest(n, base, [&](int64_t cnt, char** p, const int64_t* st) { binary_row<T, R>(cnt, p, st, f); });
  };
}

template <typename T>
T int_div(T a, T b) {
  return b == 0 ? T(0) : T(a / b);
}
template <typename T>
T int_mod(T a, T b, bool fmod_mode) {
  if (b == 0) return T(0);
  T r = T(a % b);
  if (!fmod_mode && r != 0 && ((r < 0) != (b < 0))) r = T(r + b);
  return r;
}

// Arithmetic and comparisons on one numeric type.
template <typename T>
StepFn binary_numeric(OpKind op, const Attrs& at, const BufView& a, const BufView& b, const BufView& y, int th) {
  const bool fm = at.i("fmod", 0) != 0;
  switch (op) {
    case OpKind::Add: return binary_typed<T, T>(a, b, y, th, [](T u, T v) { return T(u + v); });
    case OpKind::Sub: return binary_typed<T, T>(a, b, y, th, [](T u, T v) { return T(u - v); });
    case OpKind::Mul: return binary_typed<T, T>(a, b, y, th, [](T u, T v) { return T(u * v); });
    case OpKind::Div:
      if constexpr (std::is_floating_point_v<T>) return binary_typed<T, T>(a, b, y, th, [](T u, T v) { return u / v; });
      else return binary_typed<T, T>(a, b, y, th, [](T u, T v) { return int_div(u, v); });
    case OpKind::Pow:
      return binary_typed<T, T>(a, b, y, th, [](T u, T v) { return T(std::pow(double(u), double(v))); });
    case OpKind::Min: return binary_typed<T, T>(a, b, y, th, [](T u, T v) { return v < u ? v : u; });
    case OpKind::Max: return binary_typed<T, T>(a, b, y, th, [](T u, T v) { return v > u ? v : u; });
    case OpKind::Mod:
      if constexpr (std::is_floating_point_v<T>)
        return binary_typed<T, T>(a, b, y, th, [](T u, T v) { return T(std::fmod(u, v)); });
      else return binary_typed<T, T>(a, b, y, th, [fm](T u, T v) { return int_mod(u, v, fm); });
    case OpKind::Equal: return binary_typed<T, uint8_t>(a, b, y, th, [](T u, T v) { return uint8_t(u == v); });
    case OpKind::Less: return binary_typed<T, uint8_t>(a, b, y, th, [](T u, T v) { return uint8_t(u < v); });
    case OpKind::Greater: return binary_typed<T, uint8_t>(a, b, y, th, [](T u, T v) { return uint8_t(u > v); });
    case OpKind::LessOrEqual: return binary_typed<T, uint8_t>(a, b, y, th, [](T u, T v) { return uint8_t(u <= v); });
    case OpKind::GreaterOrEqual:
      return binary_typed<T, uint8_t>(a, b, y, th, [](T u, T v) { return uint8_t(u >= v); });
    default: return {};
  }
}

// True when every input slot from `own` on is absent or an operand of a binary post-op, i.e.
// the op itself reads only its first `own` inputs (fuse_epilogues appends post-op operands).
bool extra_slots_are_post_op_operands(const CallCtx& c, size_t own) {
  for (size_t i = own; i < c.ins.size(); ++i) {
    if (!c.ins[i].present()) continue;
    bool used = false;
    for (const PostOp& p : c.kernel.post_ops) used |= p.input == int(i);
    if (!used) return false;
  }
  return true;
}

StepFn build_binary(CallCtx& c) {
  if (c.ins.size() < 2 || !c.ins[0].present() || !c.ins[1].present()) return {};
  if (!extra_slots_are_post_op_operands(c, 2)) return {};  // e.g. a variadic Min/Max
  const BufView &a = c.ins[0], &b = c.ins[1], &y = c.outs[0];
  if (a.dtype != b.dtype || !broadcasts_to(a.shape, y.shape) || !broadcasts_to(b.shape, y.shape)) return {};
  const OpKind op = c.kernel.op;
  const bool cmp = op == OpKind::Equal || op == OpKind::Less || op == OpKind::Greater || op == OpKind::LessOrEqual ||
                   op == OpKind::GreaterOrEqual;
  if (op == OpKind::And || op == OpKind::Or) {
    if (a.dtype != DType::Bool || y.dtype != DType::Bool) return {};
    if (op == OpKind::And) return binary_typed<uint8_t, uint8_t>(a, b, y, c.threads, [](uint8_t u, uint8_t v) { return uint8_t(u && v); });
    return binary_typed<uint8_t, uint8_t>(a, b, y, c.threads, [](uint8_t u, uint8_t v) { return uint8_t(u || v); });
  }
  if (y.dtype != (cmp ? DType::Bool : a.dtype)) return {};
  switch (a.dtype) {
    case DType::F32: return binary_numeric<float>(op, c.kernel.attrs, a, b, y, c.threads);
    case DType::I64: return binary_numeric<int64_t>(op, c.kernel.attrs, a, b, y, c.threads);
    case DType::I32: return binary_numeric<int32_t>(op, c.kernel.attrs, a, b, y, c.threads);
    case DType::Bool: return op == OpKind::Equal ? binary_numeric<uint8_t>(op, c.kernel.attrs, a, b, y, c.threads) : StepFn{};
    default: return {};
  }
}

template <typename U>
StepFn where_typed(const BufView& cond, const BufView& x, const BufView& z, const BufView& y, int threads) {
  LoopNest n = make_nest(y.shape,
                         {logical_strides(y.shape, y.layout), bcast_strides(cond, y.shape), bcast_strides(x, y.shape),
                          bcast_strides(z, y.shape)},
                         {int64_t(sizeof(U)), 1, int64_t(sizeof(U)), int64_t(sizeof(U))}, threads);
  std::vector<char*> base{static_cast<char*>(y.ptr), static_cast<char*>(cond.ptr), static_cast<char*>(x.ptr),
                          static_cast<char*>(z.ptr)};
  return [n, base] {
    run_nest(n, base, [](int64_t cnt, char** p, const int64_t* st) {
      U* o = reinterpret_cast<U*>(p[0]);
      const uint8_t* m = reinterpret_cast<const uint8_t*>(p[1]);
      const U* a = reinterpret_cast<const U*>(p[2]);
      const U* b = reinterpret_cast<const U*>(p[3]);
      for (int64_t i = 0; i < cnt; ++i) o[i * st[0]] = m[i * st[1]] ? a[i * st[2]] : b[i * st[3]];
    });
  };
}

StepFn build_where(CallCtx& c) {
  if (c.ins.size() != 3) return {};
  const BufView &m = c.ins[0], &x = c.ins[1], &z = c.ins[2], &y = c.outs[0];
  if (m.dtype != DType::Bool || x.dtype != y.dtype || z.dtype != y.dtype) return {};
  for (const BufView* b : {&m, &x, &z})
    if (!broadcasts_to(b->shape, y.shape)) return {};
  switch (dtype_size(y.dtype)) {
    case 1: return where_typed<uint8_t>(m, x, z, y, c.threads);
    case 2: return where_typed<uint16_t>(m, x, z, y, c.threads);
    case 4: return where_typed<uint32_t>(m, x, z, y, c.threads);
    case 8: return where_typed<uint64_t>(m, x, z, y, c.threads);
    default: return {};
  }
}

// Cast: element-wise conversion through double (exact for every supported pair but i64 > 2^53,
// which goes through int64 directly).
double load_as_f64(DType t, const char* p) {
  switch (t) {
    case DType::F32: return *reinterpret_cast<const float*>(p);
    case DType::F16: return half_to_float(*reinterpret_cast<const uint16_t*>(p));
    case DType::F64: return *reinterpret_cast<const double*>(p);
    case DType::I32: return *reinterpret_cast<const int32_t*>(p);
    case DType::I8: return *reinterpret_cast<const int8_t*>(p);
    case DType::U8: return *reinterpret_cast<const uint8_t*>(p);
    case DType::Bool: return *reinterpret_cast<const uint8_t*>(p) ? 1.0 : 0.0;
    case DType::I64: return double(*reinterpret_cast<const int64_t*>(p));
  }
  return 0;
}
void store_f64(DType t, char* p, double v) {
  switch (t) {
    case DType::F32: *reinterpret_cast<float*>(p) = float(v); break;
    case DType::F16: *reinterpret_cast<uint16_t*>(p) = float_to_half(float(v)); break;
    case DType::F64: *reinterpret_cast<double*>(p) = v; break;
    case DType::I32: *reinterpret_cast<int32_t*>(p) = int32_t(float_to_i64(v)); break;
    case DType::I8: *reinterpret_cast<int8_t*>(p) = int8_t(float_to_i64(v)); break;
    case DType::U8: *reinterpret_cast<uint8_t*>(p) = uint8_t(float_to_i64(v)); break;
    case DType::Bool: *reinterpret_cast<uint8_t*>(p) = v != 0.0; break;
    case DType::I64: *reinterpret_cast<int64_t*>(p) = float_to_i64(v); break;
  }
}

StepFn build_cast(CallCtx& c) {
  const BufView &x = c.ins[0], &y = c.outs[0];
  if (x.shape != y.shape) return {};
  const DType from = x.dtype, to = y.dtype;
  LoopNest n = make_nest(y.shape, {logical_strides(y.shape, y.layout), logical_strides(x.shape, x.layout)},
                         {esize(y), esize(x)}, c.threads);
  std::vector<char*> base{static_cast<char*>(y.ptr), static_cast<char*>(x.ptr)};
  // Every 8-bit integer is exactly representable in fp16, so rounding them is the identity.
  const bool exact_in_f16 = from == DType::U8 || from == DType::I8 || from == DType::Bool;
  if (c.kernel.attrs.has("round_to") && !exact_in_f16) {
    // Widened fp16 storage: the result keeps fp16 precision (see ops.def Cast).
    if (c.kernel.attrs.i("round_to") != int64_t(DType::F16) || !is_float(to)) return {};
    if (from == DType::F32 && to == DType::F32)
      return unary_f32_step(x, y, c.threads, [](float v) { return round_to_half(v); });
    return [n, base, from, to, ey = esize(y), ex = esize(x)] {
      run_nest(n, base, [&](int64_t cnt, char** p, const int64_t* st) {
        for (int64_t i = 0; i < cnt; ++i)
          store_f64(to, p[0] + i * st[0] * ey, round_to_half(float(load_as_f64(from, p[1] + i * st[1] * ex))));
      });
    };
  }
  if (from == to)
    return copy_step(y.shape, logical_strides(y.shape, y.layout), logical_strides(x.shape, x.layout), base[0], base[1],
                     esize(x), c.threads);
  if (from == DType::U8 && to == DType::F32)
    return [n, base] {
      run_nest(n, base, [](int64_t cnt, char** p, const int64_t* st) {
        float* o = reinterpret_cast<float*>(p[0]);
        const uint8_t* a = reinterpret_cast<const uint8_t*>(p[1]);
        for (int64_t i = 0; i < cnt; ++i) o[i * st[0]] = float(a[i * st[1]]);
      });
    };
  const bool int_src = is_int(from) || from == DType::Bool;
  const bool int_dst = is_int(to) || to == DType::Bool;
  return [n, base, from, to, int_src, int_dst, ey = esize(y), ex = esize(x)] {
    run_nest(n, base, [&](int64_t cnt, char** p, const int64_t* st) {
      for (int64_t i = 0; i < cnt; ++i) {
        const char* src = p[1] + i * st[1] * ex;
        char* dst = p[0] + i * st[0] * ey;
        if (int_src && int_dst) {
          // Integer to integer stays exact (int64 beyond 2^53 included).
          const int64_t v = from == DType::I64 ? *reinterpret_cast<const int64_t*>(src) : float_to_i64(load_as_f64(from, src));
          switch (to) {
            case DType::I64: *reinterpret_cast<int64_t*>(dst) = v; break;
            case DType::I32: *reinterpret_cast<int32_t*>(dst) = int32_t(v); break;
            case DType::I8: *reinterpret_cast<int8_t*>(dst) = int8_t(v); break;
            case DType::U8: *reinterpret_cast<uint8_t*>(dst) = uint8_t(v); break;
            default: *reinterpret_cast<uint8_t*>(dst) = v != 0; break;
          }
        } else {
          store_f64(to, dst, load_as_f64(from, src));
        }
      }
    });
  };
}

// ---- data movement ------------------------------------------------------------------------

StepFn build_transpose(CallCtx& c) {
  const BufView &x = c.ins[0], &y = c.outs[0];
  std::vector<int64_t> perm = c.kernel.attrs.ints("perm");
  if (perm.empty())
    for (size_t d = x.shape.size(); d-- > 0;) perm.push_back(int64_t(d));
  OPV_CHECK(perm.size() == x.shape.size(), c.where(), ": perm has ", perm.size(), " entries for rank ", x.shape.size());
  OPV_CHECK(y.shape.size() == x.shape.size(), c.where(), ": transpose output ", shape_str(y.shape), " is not of its input's rank ",
            shape_str(x.shape));
  auto xs = logical_strides(x.shape, x.layout);
  std::vector<int64_t> in_st(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) {
    OPV_CHECK(perm[d] >= 0 && size_t(perm[d]) < perm.size() && x.shape[size_t(perm[d])] == y.shape[d], c.where(),
              ": perm does not match the output shape");
    in_st[d] = xs[size_t(perm[d])];
  }
  return copy_step(y.shape, logical_strides(y.shape, y.layout), in_st, static_cast<char*>(y.ptr),
                   static_cast<char*>(x.ptr), esize(x), c.threads);
}

StepFn build_slice(CallCtx& c) {
  const BufView &x = c.ins[0], &y = c.outs[0];
  auto starts = c.kernel.attrs.ints("starts");
  auto steps = c.kernel.attrs.ints("steps", std::vector<int64_t>(x.shape.size(), 1));
  const size_t r = x.shape.size();
  OPV_CHECK(starts.size() == r && steps.size() == r && y.shape.size() == r, c.where(), ": starts/steps must have rank ", r);
  auto xs = logical_strides(x.shape, x.layout);
  int64_t off = 0;
  std::vector<int64_t> in_st(r);
  for (size_t d = 0; d < r; ++d) {
    if (y.shape[d] > 0) {
      const int64_t last = starts[d] + (y.shape[d] - 1) * steps[d];
      OPV_CHECK(starts[d] >= 0 && starts[d] < x.shape[d] && last >= 0 && last < x.shape[d], c.where(),
                ": slice along axis ", d, " leaves the input");
    }
    off += starts[d] * xs[d];
    in_st[d] = xs[d] * steps[d];
  }
  return copy_step(y.shape, logical_strides(y.shape, y.layout), in_st, static_cast<char*>(y.ptr),
                   static_cast<char*>(x.ptr) + off * esize(x), esize(x), c.threads);
}

StepFn build_expand(CallCtx& c) {
  const BufView &x = c.ins[0], &y = c.outs[0];
  if (!broadcasts_to(x.shape, y.shape)) return {};
  return copy_step(y.shape, logical_strides(y.shape, y.layout), bcast_strides(x, y.shape), static_cast<char*>(y.ptr),
                   static_cast<char*>(x.ptr), esize(x), c.threads);
}

StepFn build_reshape(CallCtx& c) {
  const BufView &x = c.ins[0], &y = c.outs[0];
  if (!is_linear(x) || !is_linear(y) || x.dtype != y.dtype || numel(x.shape) != numel(y.shape)) return {};
  const size_t bytes = size_t(numel(x.shape)) * dtype_size(x.dtype);
  void *dst = y.ptr, *src = x.ptr;
  return [dst, src, bytes] {
    if (dst != src) std::memmove(dst, src, bytes);
  };
}

StepFn seq(std::vector<StepFn> parts) {
  return [parts = std::move(parts)] {
    for (const auto& f : parts) f();
  };
}

StepFn build_concat(CallCtx& c) {
  const BufView& y = c.outs[0];
  const size_t axis = size_t(c.kernel.attrs.i("axis", 0));
  OPV_CHECK(axis < y.shape.size(), c.where(), ": axis out of range");
  auto ys = logical_strides(y.shape, y.layout);
  std::vector<StepFn> parts;
  int64_t at = 0;
  for (const BufView& x : c.ins) {
    if (!x.present()) continue;
    if (x.dtype != y.dtype || x.shape.size() != y.shape.size()) return {};
    parts.push_back(copy_step(x.shape, ys, logical_strides(x.shape, x.layout),
                              static_cast<char*>(y.ptr) + at * ys[axis] * esize(y), static_cast<char*>(x.ptr),
                              esize(x), c.threads));
    at += x.shape[axis];
  }
  OPV_CHECK(at == y.shape[axis], c.where(), ": inputs add up to ", at, " along axis ", axis, ", output has ",
            y.shape[axis]);
  return seq(std::move(parts));
}

StepFn build_split(CallCtx& c) {
  const BufView& x = c.ins[0];
  const size_t axis = size_t(c.kernel.attrs.i("axis", 0));
  OPV_CHECK(axis < x.shape.size(), c.where(), ": axis out of range");
  auto xs = logical_strides(x.shape, x.layout);
  std::vector<StepFn> parts;
  int64_t at = 0;
  for (const BufView& y : c.outs) {
    if (y.dtype != x.dtype || y.shape.size() != x.shape.size()) return {};
    parts.push_back(copy_step(y.shape, logical_strides(y.shape, y.layout), xs, static_cast<char*>(y.ptr),
                              static_cast<char*>(x.ptr) + at * xs[axis] * esize(x), esize(x), c.threads));
    at += y.shape[axis];
  }
  OPV_CHECK(at <= x.shape[axis], c.where(), ": outputs exceed the input along axis ", axis);
  return seq(std::move(parts));
}

StepFn build_gather(CallCtx& c) {
  if (c.ins.size() != 2) return {};
  const BufView &x = c.ins[0], &idx = c.ins[1], &y = c.outs[0];
  if (!is_linear(x) || !is_linear(y) || !is_linear(idx) || (idx.dtype != DType::I64 && idx.dtype != DType::I32))
    return {};
  const size_t axis = size_t(c.kernel.attrs.i("axis", 0));
  OPV_CHECK(axis < x.shape.size(), c.where(), ": axis out of range");
  int64_t pre = 1, post = 1;
  for (size_t d = 0; d < axis; ++d) pre *= x.shape[d];
  for (size_t d = axis + 1; d < x.shape.size(); ++d) post *= x.shape[d];
  const int64_t dim = x.shape[axis], nidx = numel(idx.shape), es = esize(x);
  OPV_CHECK(numel(y.shape) == pre * nidx * post, c.where(), ": output shape ", shape_str(y.shape), " does not match");
  auto resolved = std::make_shared<std::vector<int64_t>>(size_t(nidx));
  const char* xp = static_cast<const char*>(x.ptr);
  char* yp = static_cast<char*>(y.ptr);
  const void* ip = idx.ptr;
  const bool i64 = idx.dtype == DType::I64;
  const int threads = c.threads;
  std::string where = c.where();
  return [=] {
    for (int64_t j = 0; j < nidx; ++j) {
      int64_t v = i64 ? static_cast<const int64_t*>(ip)[j] : static_cast<const int32_t*>(ip)[j];
      if (v < 0) v += dim;
      OPV_CHECK(v >= 0 && v < dim, "cpu backend: ", where, ": index ", j, " is out of range for axis size ", dim);
      (*resolved)[size_t(j)] = v;
    }
    const int64_t rows = pre * nidx;
    const int nt = rows * post >= kParallelMinElems ? threads : 1;
#pragma omp parallel for num_threads(nt) if (nt > 1)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t p = r / nidx, j = r % nidx;
      std::memcpy(yp + r * post * es, xp + (p * dim + (*resolved)[size_t(j)]) * post * es, size_t(post * es));
    }
  };
}

StepFn build_pad(CallCtx& c) {
  const BufView &x = c.ins[0], &y = c.outs[0];
  if (c.kernel.attrs.s("mode", "constant") != "constant" || x.dtype != DType::F32) return {};
  auto pads = c.kernel.attrs.ints("pads");
  const size_t r = x.shape.size();
  OPV_CHECK(pads.size() == 2 * r, c.where(), ": pads must have ", 2 * r, " entries");
  const float value = float(c.kernel.attrs.f("value", 0.0));
  auto xs = logical_strides(x.shape, x.layout), ys = logical_strides(y.shape, y.layout);
  Shape region(r);
  int64_t xoff = 0, yoff = 0;
  for (size_t d = 0; d < r; ++d) {
    const int64_t b = pads[d], e = pads[r + d];
    OPV_CHECK(x.shape[d] + b + e == y.shape[d], c.where(), ": pads do not match the output shape");
    const int64_t lo = std::max<int64_t>(0, -b), hi = x.shape[d] - std::max<int64_t>(0, -e);
    region[d] = std::max<int64_t>(0, hi - lo);
    xoff += lo * xs[d];
    yoff += std::max<int64_t>(0, b) * ys[d];
  }
  auto val = std::make_shared<float>(value);
  LoopNest fill = make_nest(y.shape, {ys, std::vector<int64_t>(r, 0)}, {4, 4}, c.threads);
  std::vector<char*> fb{static_cast<char*>(y.ptr), reinterpret_cast<char*>(val.get())};
  StepFn copy = numel(region) ? copy_step(region, ys, xs, static_cast<char*>(y.ptr) + yoff * 4,
                                          static_cast<char*>(x.ptr) + xoff * 4, 4, c.threads)
                              : StepFn([] {});
  return [fill, fb, val, copy] {
    run_nest(fill, fb, copy_row<uint32_t>);
    copy();
  };
}

// ---- reductions and normalisations --------------------------------------------------------

StepFn build_reduce(CallCtx& c) {
  const BufView &x = c.ins[0], &y = c.outs[0];
  if (x.dtype != DType::F32 || y.dtype != DType::F32) return {};
  const size_t r = x.shape.size();
  if (r > kMaxRank) return {};
  auto axes = c.kernel.attrs.ints("axes");
  const bool keep = c.kernel.attrs.i("keepdims", 1) != 0;
  std::vector<bool> red(r, false);
  for (int64_t a : axes) {
    OPV_CHECK(a >= 0 && size_t(a) < r, c.where(), ": axis ", a, " out of range");
    red[size_t(a)] = true;
  }
  if (axes.empty()) red.assign(r, true);
  // Output strides in the input's rank (0 on reduced dims).
  std::vector<int64_t> yst(r, 0);
  if (keep) {
    if (y.shape.size() != r) return {};
    auto s = logical_strides(y.shape, y.layout);
    for (size_t d = 0; d < r; ++d) yst[d] = red[d] ? 0 : s[d];
  } else {
    if (!is_linear(y)) return {};
    auto s = row_major_strides(y.shape);
    size_t k = 0;
    for (size_t d = 0; d < r; ++d)
      if (!red[d]) yst[d] = k < s.size() ? s[k++] : 0;
  }
  auto xs = logical_strides(x.shape, x.layout);
  Shape kept(r), rdims;
  std::vector<int64_t> rst;
  std::vector<int64_t> kst(r);
  int64_t count = 1;
  for (size_t d = 0; d < r; ++d) {
    kept[d] = red[d] ? 1 : x.shape[d];
    kst[d] = red[d] ? 0 : xs[d];
    if (red[d]) rdims.push_back(x.shape[d]), rst.push_back(xs[d]), count *= x.shape[d];
  }
  const OpKind op = c.kernel.op;
  LoopNest n = make_nest(kept, {yst, kst}, {4, 4}, c.threads);
  std::vector<char*> base{static_cast<char*>(y.ptr), static_cast<char*>(x.ptr)};
  return [n, base, rdims, rst, count, op] {
    run_nest(n, base, [&](int64_t cnt, char** p, const int64_t* st) {
      int64_t ix[kMaxRank];
      const size_t nr = rdims.size();
      for (int64_t i = 0; i < cnt; ++i) {
        const float* src = reinterpret_cast<const float*>(p[1]) + i * st[1];
        double acc = op == OpKind::ReduceMax ? -INFINITY : op == OpKind::ReduceMin ? INFINITY : 0.0;
        std::fill(ix, ix + nr, 0);
        for (int64_t e = 0; e < count; ++e) {
          int64_t off = 0;
          for (size_t k = 0; k < nr; ++k) off += ix[k] * rst[k];
          const double v = src[off];
          if (op == OpKind::ReduceMax) acc = std::max(acc, v);
          else if (op == OpKind::ReduceMin) acc = std::min(acc, v);
          else acc += v;
          for (size_t k = nr; k-- > 0;) {
            if (++ix[k] < rdims[k]) break;
            ix[k] = 0;
          }
        }
        if (op == OpKind::ReduceMean) acc /= double(count);
        reinterpret_cast<float*>(p[0])[i * st[0]] = float(acc);
      }
    });
  };
}

StepFn build_softmax(CallCtx& c) {
  const BufView &x = c.ins[0], &y = c.outs[0];
  if (x.dtype != DType::F32 || x.shape != y.shape) return {};
  const size_t axis = size_t(c.kernel.attrs.i("axis", int64_t(x.shape.size()) - 1));
  OPV_CHECK(axis < x.shape.size(), c.where(), ": axis out of range");
  auto xs = logical_strides(x.shape, x.layout), ys = logical_strides(y.shape, y.layout);
  Shape outer = x.shape;
  outer[axis] = 1;
  const int64_t len = x.shape[axis], sx = xs[axis], sy = ys[axis];
  LoopNest n = make_nest(outer, {ys, xs}, {4, 4}, c.threads);
  std::vector<char*> base{static_cast<char*>(y.ptr), static_cast<char*>(x.ptr)};
  return [n, base, len, sx, sy] {
    run_nest(n, base, [&](int64_t cnt, char** p, const int64_t* st) {
      for (int64_t i = 0; i < cnt; ++i) {
        const float* a = reinterpret_cast<const float*>(p[1]) + i * st[1];
        float* o = reinterpret_cast<float*>(p[0]) + i * st[0];
        float mx = -INFINITY;
        for (int64_t k = 0; k < len; ++k) mx = std::max(mx, a[k * sx]);
        double sum = 0;
        for (int64_t k = 0; k < len; ++k) {
          const float e = std::exp(a[k * sx] - mx);
          o[k * sy] = e;
          sum += e;
        }
        const float inv = float(1.0 / sum);
        for (int64_t k = 0; k < len; ++k) o[k * sy] *= inv;
      }
    });
  };
}

StepFn build_layernorm(CallCtx& c) {
  if (c.ins.size() < 2) return {};
  const BufView &x = c.ins[0], &s = c.ins[1], &y = c.outs[0];
  const BufView* b = c.ins.size() > 2 && c.ins[2].present() ? &c.ins[2] : nullptr;
  if (x.dtype != DType::F32 || s.dtype != DType::F32 || !is_linear(x) || !is_linear(y) || !is_linear(s)) return {};
  if (b && (b->dtype != DType::F32 || !is_linear(*b))) return {};
  const size_t axis = size_t(c.kernel.attrs.i("axis", -1));
  OPV_CHECK(axis < x.shape.size(), c.where(), ": axis out of range");
  int64_t inner = 1;
  for (size_t d = axis; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t ns = numel(s.shape), nb = b ? numel(b->shape) : 0;
  if ((ns != inner && ns != 1) || (b && nb != inner && nb != 1)) return {};
  const int64_t outer = numel(x.shape) / std::max<int64_t>(inner, 1);
  const float eps = float(c.kernel.attrs.f("epsilon", 1e-5));
  const float* xp = static_cast<const float*>(x.ptr);
  const float* sp = static_cast<const float*>(s.ptr);
  const float* bp = b ? static_cast<const float*>(b->ptr) : nullptr;
  float* yp = static_cast<float*>(y.ptr);
  const int nt = numel(x.shape) >= kParallelMinElems ? c.threads : 1;
  return [=] {
#pragma omp parallel for num_threads(nt) if (nt > 1)
    for (int64_t r = 0; r < outer; ++r) {
      const float* a = xp + r * inner;
      float* o = yp + r * inner;
      double sum = 0, sq = 0;
      for (int64_t k = 0; k < inner; ++k) sum += a[k];
      const double mean = sum / double(inner);
      for (int64_t k = 0; k < inner; ++k) sq += (a[k] - mean) * (a[k] - mean);
      const float inv = float(1.0 / std::sqrt(sq / double(inner) + eps));
      const float m = float(mean);
      for (int64_t k = 0; k < inner; ++k) {
        float v = (a[k] - m) * inv * sp[ns == 1 ? 0 : k];
        if (bp) v += bp[nb == 1 ? 0 : k];
        o[k] = v;
      }
    }
  };
}

}  // namespace

StepFn build_glue_step(CallCtx& c) {
  const OpKind op = c.kernel.op;
  if (c.ins.empty() || !c.ins[0].present() || c.outs.empty()) return {};
  const BufView &x = c.ins[0], &y = c.outs[0];
  switch (op) {
    case OpKind::Identity:
    case OpKind::Reorder:
      if (x.dtype != y.dtype || x.shape != y.shape) return {};
      return copy_step(y.shape, logical_strides(y.shape, y.layout), logical_strides(x.shape, x.layout),
                       static_cast<char*>(y.ptr), static_cast<char*>(x.ptr), esize(x), c.threads);
    case OpKind::Cast: return build_cast(c);
    case OpKind::Not:
      if (x.dtype != DType::Bool || y.dtype != DType::Bool || x.shape != y.shape) return {};
      {
        LoopNest n = make_nest(y.shape, {logical_strides(y.shape, y.layout), logical_strides(x.shape, x.layout)},
                               {1, 1}, c.threads);
        std::vector<char*> base{static_cast<char*>(y.ptr), static_cast<char*>(x.ptr)};
        return [n, base] {
          run_nest(n, base, [](int64_t cnt, char** p, const int64_t* st) {
            for (int64_t i = 0; i < cnt; ++i) p[0][i * st[0]] = !p[1][i * st[1]];
          });
        };
      }
    case OpKind::Where: return build_where(c);
    case OpKind::Reshape: return build_reshape(c);
    case OpKind::Transpose: return build_transpose(c);
    case OpKind::Slice: return build_slice(c);
    case OpKind::Expand: return build_expand(c);
    case OpKind::Concat: return build_concat(c);
    case OpKind::Split: return build_split(c);
    case OpKind::Gather: return build_gather(c);
    case OpKind::Pad: return build_pad(c);
    case OpKind::ReduceMean:
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin: return build_reduce(c);
    case OpKind::Softmax: return build_softmax(c);
    case OpKind::LayerNorm: return build_layernorm(c);
    default: break;
  }
  if (is_binary(op)) return build_binary(c);
  if (is_unary(op) && x.dtype == DType::F32 && y.dtype == DType::F32 && x.shape == y.shape)
    return unary_step(unary_post_op(op, c.kernel.attrs), x, y, c.threads);
  return {};
}

StepFn build_post_op_step(CallCtx& c, size_t first) {
  OPV_CHECK(!c.outs.empty() && c.outs[0].dtype == DType::F32, "cpu backend: ", c.where(),
            ": post-ops need an f32 output");
  const BufView& y = c.outs[0];
  std::vector<StepFn> parts;
  for (size_t i = first; i < c.kernel.post_ops.size(); ++i) {
    const PostOp& p = c.kernel.post_ops[i];
    StepFn s;
    if (is_unary(p.op)) {
      s = unary_step(p, y, y, c.threads);
    } else {
      OPV_CHECK(p.input >= 0 && size_t(p.input) < c.ins.size() && c.ins[size_t(p.input)].present(), "cpu backend: ",
                c.where(), ": post-op ", op_name(p.op), " reads missing input ", p.input);
      const BufView& o = c.ins[size_t(p.input)];
      const char *o0 = static_cast<const char*>(o.ptr), *y0 = static_cast<const char*>(y.ptr);
      OPV_CHECK(o0 + o.bytes <= y0 || y0 + y.bytes <= o0, "cpu backend: ", c.where(), ": post-op ", op_name(p.op),
                " operand (input ", p.input, ") shares memory with the output");
      OPV_CHECK(o.dtype == DType::F32 && broadcasts_to(o.shape, y.shape), "cpu backend: ", c.where(), ": post-op ",
                op_name(p.op), " operand ", dtype_name(o.dtype), shape_str(o.shape), " does not broadcast to ",
                shape_str(y.shape));
      s = p.swapped ? binary_numeric<float>(p.op, {}, o, y, y, c.threads)
                    : binary_numeric<float>(p.op, {}, y, o, y, c.threads);
    }
    OPV_CHECK(s, "cpu backend: ", c.where(), ": post-op ", op_name(p.op), " is not supported");
    parts.push_back(std::move(s));
  }
  return seq(std::move(parts));
}

// ---- reference fallback -------------------------------------------------------------------

// Runs the call through ref::run on row-major tensors owned by the step: inputs are copied in
// (NHWC ones converted to row-major by a strided copy), outputs copied back out into their
// plan layout. Dtypes are the buffers' own (the cpu plan already stores fp16 values as f32), so
// the reference kernel sees exactly what the reference backend would. The copies make it slow;
// it is the path for rare ops and operand combinations the native steps do not cover. Because
// every input is copied before any output is written, an output may share memory with an input.
StepFn build_ref_step(CallCtx& c) {
  struct State {
    OpKind op;
    Attrs attrs;
    std::vector<PostOp> post_ops;
    std::vector<Tensor> ins, outs;
    std::vector<const Tensor*> in_ptrs;
    std::vector<Tensor*> out_ptrs;
    std::vector<StepFn> copy_in, copy_out;
  };
  auto st = std::make_shared<State>();
  st->op = c.kernel.op;
  st->attrs = c.kernel.attrs;
  st->post_ops = c.kernel.post_ops;
  st->ins.reserve(c.ins.size());
  st->outs.reserve(c.outs.size());
  for (const BufView& b : c.ins) st->ins.push_back(b.present() ? Tensor(b.dtype, b.shape) : Tensor());
  for (const BufView& b : c.outs) st->outs.emplace_back(b.dtype, b.shape);
  // Tensors are in place now: their data pointers are fixed for the closures below.
  for (size_t i = 0; i < c.ins.size(); ++i) {
    const BufView& b = c.ins[i];
    st->in_ptrs.push_back(b.present() ? &st->ins[i] : nullptr);
    if (!b.present() || numel(b.shape) == 0) continue;
    st->copy_in.push_back(copy_step(b.shape, row_major_strides(b.shape), logical_strides(b.shape, b.layout),
                                    static_cast<char*>(st->ins[i].raw()), static_cast<const char*>(b.ptr), esize(b),
                                    c.threads));
  }
  for (size_t i = 0; i < c.outs.size(); ++i) {
    const BufView& b = c.outs[i];
    st->out_ptrs.push_back(&st->outs[i]);
    if (numel(b.shape) == 0) continue;
    st->copy_out.push_back(copy_step(b.shape, logical_strides(b.shape, b.layout), row_major_strides(b.shape),
                                     static_cast<char*>(b.ptr), static_cast<const char*>(st->outs[i].raw()), esize(b),
                                     c.threads));
  }
  const std::string where = c.where();
  return [st, where] {
    for (const StepFn& f : st->copy_in) f();
    try {
      ref::run({st->op, st->attrs, st->post_ops}, st->in_ptrs, st->out_ptrs);
    } catch (const Error& e) {
      fail("cpu backend: ", where, " (reference kernel): ", e.what());
    }
    for (const StepFn& f : st->copy_out) f();
  };
}

}  // namespace opv::backend::cpu
