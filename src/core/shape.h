// Tensor shapes: static, fully known at compile time (dims >= 0).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace opv {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s);
// numel with an overflow check: throws opv::Error naming `what` when a dim is negative or the
// product does not fit in int64.
int64_t checked_numel(const Shape& s, const char* what = "shape");

// Size arithmetic that throws opv::Error ("<what>: integer overflow in a + b") instead of
// wrapping. Use for every computation on untrusted dims, pads, strides and counts.
int64_t checked_add(int64_t a, int64_t b, const char* what = "size");
int64_t checked_sub(int64_t a, int64_t b, const char* what = "size");
int64_t checked_mul(int64_t a, int64_t b, const char* what = "size");
std::string shape_str(const Shape& s);  // "[1,24,128,256]"
// Row-major strides in elements.
std::vector<int64_t> row_major_strides(const Shape& s);
// Numpy-style broadcast of two shapes; throws opv::Error naming both shapes when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Whether `s` broadcasts (numpy rules, right-aligned) to exactly `target`.
bool broadcasts_to(const Shape& s, const Shape& target);
// Normalises a possibly negative axis against rank; throws opv::Error when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank);

}  // namespace opv
