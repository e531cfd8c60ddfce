// Tensor shapes: static, fully known at compile time (dims >= 0).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace opv {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);  // "[1,24,128,256]"
// Row-major strides in elements.
std::vector<int64_t> row_major_strides(const Shape& s);
// Numpy-style broadcast of two shapes; throws opv::Error naming both shapes when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Normalises a possibly negative axis against rank; throws opv::Error when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank);

}  // namespace opv
