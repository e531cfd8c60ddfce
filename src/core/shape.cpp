#include "core/shape.h"

#include <algorithm>

#include "core/error.h"

namespace opv {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail(what, ": integer overflow in ", a, " + ", b);
  return r;
}

int64_t checked_sub(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) fail(what, ": integer overflow in ", a, " - ", b);
  return r;
}

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(what, ": integer overflow in ", a, " * ", b);
  return r;
}

int64_t checked_numel(const Shape& s, const char* what) {
  int64_t n = 1;
  for (int64_t d : s) {
    OPV_CHECK(d >= 0, what, " ", shape_str(s), " has a negative dim");
    if (__builtin_mul_overflow(n, d, &n)) fail(what, " ", shape_str(s), " has too many elements (int64 overflow)");
  }
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ",";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = int64_t(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

bool broadcasts_to(const Shape& s, const Shape& target) {
  if (s.size() > target.size()) return false;
  const size_t off = target.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != 1 && s[i] != target[off + i]) return false;
  return true;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1)
      out[i] = da;
    else if (da == 1)
      out[i] = db;
    else
      fail("shapes ", shape_str(a), " and ", shape_str(b), " do not broadcast");
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  OPV_CHECK(a >= 0 && a < std::max<int64_t>(rank, 1), "axis ", axis, " out of range for rank ", rank);
  return a;
}

}  // namespace opv
