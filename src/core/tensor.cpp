#include "core/tensor.h"

#include <cmath>
#include <cstdlib>

#include "core/half.h"

namespace opv {

void Tensor::FreeDeleter::operator()(void* p) const {
  if (owned) std::free(p);
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t d : shape_) OPV_CHECK(d >= 0, "negative dimension in shape ", shape_str(shape_));
  numel_ = opv::numel(shape_);
  size_t n = nbytes();
  size_t alloc = (std::max<size_t>(n, 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, alloc);
  OPV_CHECK(p != nullptr, "out of memory allocating ", alloc, " bytes for tensor ", shape_str(shape_));
  std::memset(p, 0, alloc);
  data_.reset(p);
}

Tensor::Tensor(const Tensor& o) : Tensor() { *this = o; }

Tensor& Tensor::operator=(const Tensor& o) {
  if (this == &o) return *this;
  if (o.empty()) {
    dtype_ = o.dtype_;
    shape_ = o.shape_;
    numel_ = o.numel_;
    data_.reset();
    return *this;
  }
  Tensor t(o.dtype_, o.shape_);
  std::memcpy(t.raw(), o.raw(), o.nbytes());
  *this = std::move(t);
  return *this;
}

Tensor Tensor::view(DType dtype, Shape shape, void* data) {
  Tensor t;
  for (int64_t d : shape) OPV_CHECK(d >= 0, "negative dimension in shape ", shape_str(shape));
  t.dtype_ = dtype;
  t.numel_ = opv::numel(shape);
  t.shape_ = std::move(shape);
  OPV_CHECK(data != nullptr || t.numel_ == 0, "tensor view of ", shape_str(t.shape_), " over no data");
  t.data_ = std::unique_ptr<void, FreeDeleter>(data, FreeDeleter{false});
  return t;
}

Tensor Tensor::reshaped(const Shape& s) const {
  OPV_CHECK(opv::numel(s) == numel_, "cannot reshape ", shape_str(shape_), " to ", shape_str(s));
  Tensor t(*this);
  t.shape_ = s;
  return t;
}

double Tensor::get_f64(int64_t i) const {
  const void* p = raw();
  switch (dtype_) {
    case DType::F32: return static_cast<const float*>(p)[i];
    case DType::F16: return half_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::F64: return static_cast<const double*>(p)[i];
    case DType::I64: return double(static_cast<const int64_t*>(p)[i]);
    case DType::I32: return static_cast<const int32_t*>(p)[i];
    case DType::I8: return static_cast<const int8_t*>(p)[i];
    case DType::U8: return static_cast<const uint8_t*>(p)[i];
    case DType::Bool: return static_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0;
  }
  return 0;
}

int64_t Tensor::get_i64(int64_t i) const {
  const void* p = raw();
  switch (dtype_) {
    case DType::I64: return static_cast<const int64_t*>(p)[i];
    case DType::I32: return static_cast<const int32_t*>(p)[i];
    case DType::I8: return static_cast<const int8_t*>(p)[i];
    case DType::U8: return static_cast<const uint8_t*>(p)[i];
    case DType::Bool: return static_cast<const uint8_t*>(p)[i] ? 1 : 0;
    default: return float_to_i64(get_f64(i));  // as set_f64 stores: NaN and +-Inf 0, saturating
  }
}

void Tensor::set_f64(int64_t i, double v) {
  void* p = raw();
  switch (dtype_) {
    case DType::F32: static_cast<float*>(p)[i] = float(v); break;
    case DType::F16: static_cast<uint16_t*>(p)[i] = float_to_half(float(v)); break;
    case DType::F64: static_cast<double*>(p)[i] = v; break;
    case DType::I64: static_cast<int64_t*>(p)[i] = float_to_i64(v); break;
    case DType::I32: static_cast<int32_t*>(p)[i] = int32_t(float_to_i64(v)); break;
    case DType::I8: static_cast<int8_t*>(p)[i] = int8_t(float_to_i64(v)); break;
    case DType::U8: static_cast<uint8_t*>(p)[i] = uint8_t(float_to_i64(v)); break;
    case DType::Bool: static_cast<uint8_t*>(p)[i] = v != 0.0 ? 1 : 0; break;
  }
}

Tensor Tensor::cast(DType to) const {
  Tensor t(to, shape_);
  if (to == dtype_) {
    std::memcpy(t.raw(), raw(), nbytes());
    return t;
  }
  bool int_path = !is_float(dtype_) && !is_float(to);
  for (int64_t i = 0; i < numel_; ++i) {
    if (int_path && to != DType::Bool) {
      int64_t v = get_i64(i);
      switch (to) {
        case DType::I64: t.data<int64_t>()[i] = v; break;
        case DType::I32: t.data<int32_t>()[i] = int32_t(v); break;
        case DType::I8: t.data<int8_t>()[i] = int8_t(v); break;
        case DType::U8: t.data<uint8_t>()[i] = uint8_t(v); break;
        default: break;
      }
    } else {
      t.set_f64(i, get_f64(i));
    }
  }
  return t;
}

Tensor Tensor::scalar_f32(float v) {
  Tensor t(DType::F32, {});
  t.data<float>()[0] = v;
  return t;
}

Tensor Tensor::from_i64(const std::vector<int64_t>& v) {
  Tensor t(DType::I64, {int64_t(v.size())});
  if (!v.empty()) std::memcpy(t.raw(), v.data(), v.size() * 8);
  return t;
}

Tensor Tensor::from_f32(const Shape& shape, const std::vector<float>& v) {
  Tensor t(DType::F32, shape);
  OPV_CHECK(int64_t(v.size()) == t.numel(), "from_f32: ", v.size(), " values for shape ", shape_str(shape));
  if (!v.empty()) std::memcpy(t.raw(), v.data(), v.size() * 4);
  return t;
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

}  // namespace opv
