// Element types of tensors and buffers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace opv {

enum class DType : uint8_t {
  F32 = 1,
  F16 = 2,
  F64 = 3,
  I64 = 4,
  I32 = 5,
  I8 = 6,
  U8 = 7,
  Bool = 8,
};

size_t dtype_size(DType t);
// Float -> integer conversion without undefined behaviour: NaN and +-Inf give 0 (what the
// reference kernels always did), finite values outside int64 saturate; narrower integer types
// then wrap as C++20 defines (ONNX leaves out-of-range casts undefined).
int64_t float_to_i64(double v);
const char* dtype_name(DType t);  // "f32", "f16", "i64", ...
// Parses a name written by dtype_name; throws opv::Error on an unknown name.
DType dtype_from_name(std::string_view name);
// Converts a raw enum value read from a file; throws opv::Error when it names no DType.
DType dtype_from_u8(uint8_t v);
inline bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::F64; }
inline bool is_int(DType t) {
  return t == DType::I64 || t == DType::I32 || t == DType::I8 || t == DType::U8;
}

}  // namespace opv
