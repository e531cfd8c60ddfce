#include "core/dtype.h"

#include <cmath>
#include <cstdint>

#include "core/error.h"

namespace opv {

namespace {
struct DTypeInfo {
  DType t;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kInfo[] = {
    {DType::F32, "f32", 4}, {DType::F16, "f16", 2}, {DType::F64, "f64", 8},
    {DType::I64, "i64", 8}, {DType::I32, "i32", 4}, {DType::I8, "i8", 1},
    {DType::U8, "u8", 1},   {DType::Bool, "bool", 1},
};
const DTypeInfo& info(DType t) {
  for (const auto& i : kInfo)
    if (i.t == t) return i;
  fail("invalid dtype value ", int(t));
}
}  // namespace

size_t dtype_size(DType t) { return info(t).size; }
const char* dtype_name(DType t) { return info(t).name; }

DType dtype_from_name(std::string_view name) {
  for (const auto& i : kInfo)
    if (name == i.name) return i.t;
  fail("unknown dtype '", name, "'");
}

DType dtype_from_u8(uint8_t v) {
  for (const auto& i : kInfo)
    if (uint8_t(i.t) == v) return i.t;
  fail("invalid dtype value ", int(v));
}

int64_t float_to_i64(double v) {
  if (!std::isfinite(v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

}  // namespace opv
