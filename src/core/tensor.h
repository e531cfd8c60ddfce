// A dense row-major tensor that owns its bytes. Used for constants, graph inputs/outputs,
// and by the reference kernels. Storage is 64-byte aligned so backends can use it directly.
// Tensor::view borrows a caller's bytes instead (the Python binding's zero-copy runs).
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"

namespace opv {

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  // zero-filled
  Tensor(const Tensor& o);
  Tensor& operator=(const Tensor& o);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return int64_t(shape_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return size_t(numel_) * dtype_size(dtype_); }
  bool empty() const { return !data_; }

  void* raw() { return data_.get(); }
  const void* raw() const { return data_.get(); }
  std::span<uint8_t> bytes() { return {static_cast<uint8_t*>(raw()), nbytes()}; }
  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(raw()), nbytes()}; }

  // Typed access; checks that T matches dtype() in size (asserts on mismatch).
  template <typename T>
  T* data() {
    OPV_ASSERT(sizeof(T) == dtype_size(dtype_));
    return static_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    OPV_ASSERT(sizeof(T) == dtype_size(dtype_));
    return static_cast<const T*>(raw());
  }

  // Same bytes, new shape with equal element count (throws opv::Error otherwise).
  Tensor reshaped(const Shape& s) const;
  // Element i converted to double / int64 (any dtype; f16 decoded).
  double get_f64(int64_t i) const;
  int64_t get_i64(int64_t i) const;
  // Stores v into element i, converting to dtype() (f16 rounded, ints truncated, bool != 0).
  void set_f64(int64_t i, double v);
  // Returns a copy converted to another dtype (element-wise, like ONNX Cast).
  Tensor cast(DType to) const;

  static Tensor scalar_f32(float v);
  static Tensor from_i64(const std::vector<int64_t>& v);  // 1-D int64
  static Tensor from_f32(const Shape& shape, const std::vector<float>& v);
  // A tensor over `data`, which the caller owns, keeps alive and holds numel(shape) elements of
  // `dtype` aligned to the element size (not 64 bytes). Nothing is copied or freed; a copy of a
  // view owns its bytes again.
  static Tensor view(DType dtype, Shape shape, void* data);

 private:
  struct FreeDeleter {
    FreeDeleter() : owned(true) {}
    explicit FreeDeleter(bool owns) : owned(owns) {}
    bool owned;  // false for a view
    void operator()(void* p) const;
  };
  DType dtype_ = DType::F32;
  Shape shape_;
  int64_t numel_ = 0;
  std::unique_ptr<void, FreeDeleter> data_;
};

// True when dtype, shape and bytes are all equal.
bool bit_equal(const Tensor& a, const Tensor& b);

}  // namespace opv
