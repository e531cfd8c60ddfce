// Shared helpers of the reference kernels: checked argument access, dtype conversions to
// flat double/int64 vectors, and offset tables for dtype-agnostic element copies.
#include "kernels/reference/common.h"

#include <cmath>
#include <cstring>

#include "core/half.h"

namespace opv::ref::detail {

std::string dtypes_str(const std::vector<const Tensor*>& ins, const std::vector<Tensor*>& outs) {
  std::string s = "in=(";
  for (size_t i = 0; i < ins.size(); ++i)
    s += std::string(i ? "," : "") + (ins[i] ? dtype_name(ins[i]->dtype()) : "-");
  s += ") out=(";
  for (size_t i = 0; i < outs.size(); ++i)
    s += std::string(i ? "," : "") + (outs[i] ? dtype_name(outs[i]->dtype()) : "-");
  return s + ")";
}

const Tensor& Args::in(size_t i) const {
  if (i >= ins.size() || ins[i] == nullptr) error("input ", i, " is missing (got ", ins.size(), " inputs)");
  return *ins[i];
}

const Tensor* Args::opt(size_t i) const { return i < ins.size() ? ins[i] : nullptr; }

Tensor& Args::out(size_t i) const {
  if (i >= outs.size() || outs[i] == nullptr) error("output ", i, " is missing (got ", outs.size(), " outputs)");
  return *outs[i];
}

void Args::unsupported(const std::string& why) const {
  fail(name(), ": unsupported dtypes ", dtypes_str(ins, outs), why.empty() ? "" : " (", why,
       why.empty() ? "" : ")");
}

void check_same_dtype(const Args& a, const Tensor& x, const Tensor& y) {
  if (x.dtype() != y.dtype()) a.unsupported("input and output dtypes must match");
}

namespace {
template <typename T, typename U>
void convert_loop(const void* src, U* dst, int64_t n) {
  const T* s = static_cast<const T*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = U(s[i]);
}
}  // namespace

std::vector<double> load_f64(const Tensor& t) {
  std::vector<double> v(size_t(t.numel()));
  const int64_t n = t.numel();
  const void* p = t.raw();
  switch (t.dtype()) {
    case DType::F32: convert_loop<float>(p, v.data(), n); break;
    case DType::F64: convert_loop<double>(p, v.data(), n); break;
    case DType::I64: convert_loop<int64_t>(p, v.data(), n); break;
    case DType::I32: convert_loop<int32_t>(p, v.data(), n); break;
    case DType::I8: convert_loop<int8_t>(p, v.data(), n); break;
    case DType::U8: convert_loop<uint8_t>(p, v.data(), n); break;
    case DType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(p);
      for (int64_t i = 0; i < n; ++i) v[size_t(i)] = half_to_float(s[i]);
      break;
    }
    case DType::Bool: {
      const uint8_t* s = static_cast<const uint8_t*>(p);
      for (int64_t i = 0; i < n; ++i) v[size_t(i)] = s[i] ? 1.0 : 0.0;
      break;
    }
  }
  return v;
}

std::vector<int64_t> load_i64(const Tensor& t) {
  std::vector<int64_t> v(size_t(t.numel()));
  const int64_t n = t.numel();
  const void* p = t.raw();
  switch (t.dtype()) {
    case DType::I64: convert_loop<int64_t>(p, v.data(), n); break;
    case DType::I32: convert_loop<int32_t>(p, v.data(), n); break;
    case DType::I8: convert_loop<int8_t>(p, v.data(), n); break;
    case DType::U8: convert_loop<uint8_t>(p, v.data(), n); break;
    case DType::Bool: {
      const uint8_t* s = static_cast<const uint8_t*>(p);
      for (int64_t i = 0; i < n; ++i) v[size_t(i)] = s[i] ? 1 : 0;
      break;
    }
    default:  // floats: truncate toward zero like a Cast
      for (int64_t i = 0; i < n; ++i) v[size_t(i)] = t.get_i64(i);
      break;
  }
  return v;
}

void store_f64(Tensor& t, const std::vector<double>& v) {
  OPV_ASSERT(int64_t(v.size()) == t.numel());
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case DType::F32: {
      float* d = t.data<float>();
      for (int64_t i = 0; i < n; ++i) d[i] = float(v[size_t(i)]);
      break;
    }
    case DType::F64: {
      double* d = t.data<double>();
      for (int64_t i = 0; i < n; ++i) d[i] = v[size_t(i)];
      break;
    }
    case DType::F16: {
      uint16_t* d = t.data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_half(float(v[size_t(i)]));
      break;
    }
    default:
      for (int64_t i = 0; i < n; ++i) t.set_f64(i, v[size_t(i)]);
      break;
  }
}

void store_i64(Tensor& t, const std::vector<int64_t>& v) {
  OPV_ASSERT(int64_t(v.size()) == t.numel());
  const int64_t n = t.numel();
  void* p = t.raw();
  for (int64_t i = 0; i < n; ++i) {
    int64_t x = v[size_t(i)];
    switch (t.dtype()) {
      case DType::I64: static_cast<int64_t*>(p)[i] = x; break;
      case DType::I32: static_cast<int32_t*>(p)[i] = int32_t(x); break;
      case DType::I8: static_cast<int8_t*>(p)[i] = int8_t(x); break;
      case DType::U8: static_cast<uint8_t*>(p)[i] = uint8_t(x); break;
      case DType::Bool: static_cast<uint8_t*>(p)[i] = x != 0 ? 1 : 0; break;
      default: t.set_f64(i, double(x)); break;
    }
  }
}

namespace {
void fill_offsets(const Shape& out, const AxisTables& tables, size_t d, int64_t base,
                  int64_t*& dst) {
  const std::vector<int64_t>& tab = tables[d];
  const int64_t n = out[d];
  if (d + 1 == out.size()) {
    for (int64_t o = 0; o < n; ++o) *dst++ = (base < 0 || tab[size_t(o)] < 0) ? -1 : base + tab[size_t(o)];
    return;
  }
  for (int64_t o = 0; o < n; ++o) {
    int64_t t = tab[size_t(o)];
    fill_offsets(out, tables, d + 1, (base < 0 || t < 0) ? -1 : base + t, dst);
  }
}
}  // namespace

std::vector<int64_t> offsets_from_tables(const Shape& out_shape, const AxisTables& tables) {
  OPV_ASSERT(tables.size() == out_shape.size());
  for (size_t d = 0; d < out_shape.size(); ++d) OPV_ASSERT(int64_t(tables[d].size()) == out_shape[d]);
  std::vector<int64_t> offs(size_t(numel(out_shape)));
  if (offs.empty()) return offs;
  if (out_shape.empty()) {
    offs[0] = 0;
    return offs;
  }
  int64_t* dst = offs.data();
  fill_offsets(out_shape, tables, 0, 0, dst);
  return offs;
}

AxisTables broadcast_tables(const Shape& in, const Shape& out) {
  OPV_CHECK(in.size() <= out.size(), "shape ", shape_str(in), " does not broadcast to ", shape_str(out));
  const size_t lead = out.size() - in.size();
  std::vector<int64_t> st = row_major_strides(in);
  AxisTables tables(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    tables[d].assign(size_t(out[d]), 0);
    if (d < lead) continue;
    int64_t di = in[d - lead];
    OPV_CHECK(di == out[d] || di == 1, "shape ", shape_str(in), " does not broadcast to ", shape_str(out));
    if (di == 1) continue;
    for (int64_t o = 0; o < out[d]; ++o) tables[d][size_t(o)] = o * st[d - lead];
  }
  return tables;
}

namespace {
template <typename T>
void copy_typed(const void* src, void* dst, const std::vector<int64_t>& offs, T pad) {
  const T* s = static_cast<const T*>(src);
  T* d = static_cast<T*>(dst);
  for (size_t i = 0; i < offs.size(); ++i) d[i] = offs[i] < 0 ? pad : s[offs[i]];
}
template <typename T>
T pad_value(const Tensor* pad) {
  T v{};
  if (pad) std::memcpy(&v, pad->raw(), sizeof(T));
  return v;
}
}  // namespace

void copy_elements(const Tensor& src, Tensor& dst, const std::vector<int64_t>& offsets, const Tensor* pad) {
  OPV_ASSERT(src.dtype() == dst.dtype());
  OPV_ASSERT(int64_t(offsets.size()) == dst.numel());
  OPV_ASSERT(pad == nullptr || (pad->dtype() == dst.dtype() && pad->numel() >= 1));
  for (int64_t o : offsets) OPV_ASSERT(o < src.numel());
  switch (dtype_size(dst.dtype())) {
    case 1: copy_typed<uint8_t>(src.raw(), dst.raw(), offsets, pad_value<uint8_t>(pad)); break;
    case 2: copy_typed<uint16_t>(src.raw(), dst.raw(), offsets, pad_value<uint16_t>(pad)); break;
    case 4: copy_typed<uint32_t>(src.raw(), dst.raw(), offsets, pad_value<uint32_t>(pad)); break;
    case 8: copy_typed<uint64_t>(src.raw(), dst.raw(), offsets, pad_value<uint64_t>(pad)); break;
    default: OPV_ASSERT(false);
  }
}

}  // namespace opv::ref::detail
