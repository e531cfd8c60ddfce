// Reference data-movement kernels; all are dtype-agnostic (elements copied by size).
// 1. Reshape/Reorder: the row-major bytes are copied unchanged (equal element counts).
// 2. Transpose/Slice/Expand/Tile/Pad: one table per output axis gives each output index's
//    contribution to the source offset (or "outside" for constant padding); the element
//    offsets are their sums (common.h offsets_from_tables).
// 3. Concat/Split/Gather: contiguous blocks of outer x (axis extent x inner) elements.
// Output shapes come from the output tensors and are checked against the attributes.
#include <algorithm>
#include <cstring>

#include "kernels/reference/common.h"

namespace opv::ref::detail {

namespace {

void run_copy(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  check_same_dtype(a, x, y);
  if (x.numel() != y.numel())
    a.error("cannot reinterpret ", shape_str(x.shape()), " (", x.numel(), " elements) as ", shape_str(y.shape()));
  if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
}

void run_transpose(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  check_same_dtype(a, x, y);
  const int64_t r = x.rank();
  std::vector<int64_t> perm = a.attrs.ints("perm");
  if (perm.empty())
    for (int64_t d = r - 1; d >= 0; --d) perm.push_back(d);
  if (int64_t(perm.size()) != r) a.error("perm has ", perm.size(), " entries for rank ", r);
  std::vector<bool> seen(size_t(r), false);
  Shape expect;
  for (int64_t p : perm) {
    if (p < 0 || p >= r || seen[size_t(p)]) a.error("perm ", a.attrs.str(), " is not a permutation of ", r, " axes");
    seen[size_t(p)] = true;
    expect.push_back(x.shape()[size_t(p)]);
  }
  if (y.shape() != expect) a.error("output shape ", shape_str(y.shape()), " must be ", shape_str(expect));
  const std::vector<int64_t> st = row_major_strides(x.shape());
  AxisTables tables(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d)
    for (int64_t o = 0; o < expect[size_t(d)]; ++o) tables[size_t(d)].push_back(o * st[size_t(perm[size_t(d)])]);
  copy_elements(x, y, offsets_from_tables(y.shape(), tables));
}

// Shape checks shared by Concat and Split: `parts` joined along `axis` make `whole`.
void check_join(const Args& a, const Shape& whole, const std::vector<const Tensor*>& parts, int64_t axis) {
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Shape& s = parts[i]->shape();
    bool ok = s.size() == whole.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = int64_t(d) == axis || s[d] == whole[d];
    if (!ok) a.error("part ", i, " shape ", shape_str(s), " does not fit ", shape_str(whole), " along axis ", axis);
    total += s[size_t(axis)];
  }
  if (total != whole[size_t(axis)])
    a.error("parts sum to ", total, " along axis ", axis, " but the whole has ", whole[size_t(axis)]);
}

// Copies blocks between a whole tensor and its parts along `axis` (to_whole: Concat).
void join_blocks(const Tensor& whole_t, const std::vector<const Tensor*>& parts, int64_t axis, bool to_whole,
                 Tensor* whole_out, const std::vector<Tensor*>& parts_out) {
  const Shape& whole = whole_t.shape();
  const size_t es = dtype_size(whole_t.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= whole[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < whole.size(); ++d) inner *= whole[d];
  const int64_t row = whole[size_t(axis)] * inner;
  int64_t start = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const int64_t block = parts[i]->shape()[size_t(axis)] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      const size_t wo = size_t(o * row + start) * es, po = size_t(o * block) * es;
      if (to_whole)
        std::memcpy(static_cast<uint8_t*>(whole_out->raw()) + wo, static_cast<const uint8_t*>(parts[i]->raw()) + po,
                    size_t(block) * es);
      else
        std::memcpy(static_cast<uint8_t*>(parts_out[i]->raw()) + po, static_cast<const uint8_t*>(whole_t.raw()) + wo,
                    size_t(block) * es);
    }
    start += block;
  }
}

void run_concat(const Args& a) {
  Tensor& y = a.out(0);
  if (a.ins.empty()) a.error("needs at least one input");
  std::vector<const Tensor*> parts;
  for (size_t i = 0; i < a.ins.size(); ++i) {
    parts.push_back(&a.in(i));
    check_same_dtype(a, *parts.back(), y);
  }
  const int64_t axis = normalize_axis(a.attrs.i("axis", 0), y.rank());
  check_join(a, y.shape(), parts, axis);
  join_blocks(y, parts, axis, true, &y, {});
}

void run_split(const Args& a) {
  const Tensor& x = a.in(0);
  if (a.outs.empty()) a.error("needs at least one output");
  std::vector<const Tensor*> parts;
  for (size_t i = 0; i < a.outs.size(); ++i) {
    parts.push_back(&a.out(i));
    check_same_dtype(a, x, a.out(i));
  }
  const int64_t axis = normalize_axis(a.attrs.i("axis", 0), x.rank());
  check_join(a, x.shape(), parts, axis);
  std::vector<int64_t> split = a.attrs.ints("split");
  if (!split.empty()) {
    if (split.size() != parts.size()) a.error("split has ", split.size(), " sizes for ", parts.size(), " outputs");
    for (size_t i = 0; i < split.size(); ++i)
      if (split[i] != parts[i]->shape()[size_t(axis)])
        a.error("output ", i, " has ", parts[i]->shape()[size_t(axis)], " along axis ", axis, " but split says ", split[i]);
  }
  join_blocks(x, parts, axis, false, nullptr, a.outs);
}

void run_slice(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  check_same_dtype(a, x, y);
  const int64_t r = x.rank();
  std::vector<int64_t> starts = a.attrs.ints("starts");
  std::vector<int64_t> steps = a.attrs.ints("steps", std::vector<int64_t>(size_t(r), 1));
  if (int64_t(starts.size()) != r || int64_t(steps.size()) != r || y.rank() != r)
    a.error("starts/steps must cover all ", r, " axes (", a.attrs.str(), "), output ", shape_str(y.shape()));
  const std::vector<int64_t> st = row_major_strides(x.shape());
  AxisTables tables(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) {
    const int64_t n = y.shape()[size_t(d)], s0 = starts[size_t(d)], step = steps[size_t(d)], dim = x.shape()[size_t(d)];
    if (step == 0) a.error("step 0 on axis ", d);
    for (int64_t o = 0; o < n; ++o) {
      const int64_t i = s0 + o * step;
      if (i < 0 || i >= dim)
        a.error("axis ", d, ": output index ", o, " reads input index ", i, " outside [0,", dim, ") (", a.attrs.str(), ")");
      tables[size_t(d)].push_back(i * st[size_t(d)]);
    }
  }
  copy_elements(x, y, offsets_from_tables(y.shape(), tables));
}

void run_gather(const Args& a) {
  const Tensor& x = a.in(0);
  const Tensor& idx = a.in(1);
  Tensor& y = a.out(0);
  check_same_dtype(a, x, y);
  if (!is_int(idx.dtype())) a.unsupported("indices must be integers");
  if (x.rank() < 1) a.error("data must have rank >= 1");
  const int64_t axis = normalize_axis(a.attrs.i("axis", 0), x.rank());
  Shape expect(x.shape().begin(), x.shape().begin() + axis);
  expect.insert(expect.end(), idx.shape().begin(), idx.shape().end());
  expect.insert(expect.end(), x.shape().begin() + axis + 1, x.shape().end());
  if (y.shape() != expect) a.error("output shape ", shape_str(y.shape()), " must be ", shape_str(expect));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[size_t(d)];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[size_t(d)];
  const int64_t dim = x.shape()[size_t(axis)];
  const std::vector<int64_t> iv = load_i64(idx);
  const size_t es = dtype_size(x.dtype());
  const size_t block = size_t(inner) * es;
  const uint8_t* src = static_cast<const uint8_t*>(x.raw());
  uint8_t* dst = static_cast<uint8_t*>(y.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t k = 0; k < iv.size(); ++k) {
      int64_t i = iv[k];
      if (i < -dim || i >= dim) a.error("index ", i, " (element ", k, ") out of range for axis ", axis, " of size ", dim);
      if (i < 0) i += dim;
      std::memcpy(dst + (size_t(o) * iv.size() + k) * block, src + size_t(o * dim + i) * block, block);
    }
  }
}

void run_expand(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  check_same_dtype(a, x, y);
  copy_elements(x, y, broadcast_offsets(x.shape(), y.shape()));
}

void run_tile(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  check_same_dtype(a, x, y);
  const int64_t r = x.rank();
  std::vector<int64_t> reps = a.attrs.ints("repeats");
  if (int64_t(reps.size()) != r) a.error("repeats has ", reps.size(), " entries for rank ", r);
  Shape expect;
  for (int64_t d = 0; d < r; ++d) expect.push_back(x.shape()[size_t(d)] * reps[size_t(d)]);
  if (y.shape() != expect) a.error("output shape ", shape_str(y.shape()), " must be ", shape_str(expect));
  const std::vector<int64_t> st = row_major_strides(x.shape());
  AxisTables tables(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d)
    for (int64_t o = 0; o < expect[size_t(d)]; ++o)
      tables[size_t(d)].push_back((o % x.shape()[size_t(d)]) * st[size_t(d)]);
  copy_elements(x, y, offsets_from_tables(y.shape(), tables));
}

void run_pad(const Args& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out(0);
  check_same_dtype(a, x, y);
  const int64_t r = x.rank();
  std::vector<int64_t> pads = a.attrs.ints("pads");
  const std::string mode = a.attrs.s("mode", "constant");
  if (int64_t(pads.size()) != 2 * r) a.error("pads has ", pads.size(), " entries for rank ", r);
  if (mode != "constant" && mode != "reflect" && mode != "edge") a.error("unknown mode '", mode, "'");
  Shape expect;
  for (int64_t d = 0; d < r; ++d) expect.push_back(x.shape()[size_t(d)] + pads[size_t(d)] + pads[size_t(d + r)]);
  if (y.shape() != expect) a.error("output shape ", shape_str(y.shape()), " must be ", shape_str(expect));
  const std::vector<int64_t> st = row_major_strides(x.shape());
  AxisTables tables(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) {
    const int64_t dim = x.shape()[size_t(d)];
    for (int64_t o = 0; o < expect[size_t(d)]; ++o) {
      int64_t i = o - pads[size_t(d)];
      if (i < 0 || i >= dim) {
        if (mode == "constant") {
          tables[size_t(d)].push_back(-1);
          continue;
        }
        if (dim == 0) a.error("cannot ", mode, "-pad an empty axis ", d);
        if (mode == "edge") {
          i = std::clamp<int64_t>(i, 0, dim - 1);
        } else {  // reflect without repeating the edge: period 2*(dim-1)
          if (dim == 1) {
            i = 0;
          } else {
            const int64_t period = 2 * (dim - 1);
            i = ((i % period) + period) % period;
            if (i >= dim) i = period - i;
          }
        }
      }
      tables[size_t(d)].push_back(i * st[size_t(d)]);
    }
  }
  Tensor pad_value(y.dtype(), {1});
  pad_value.set_f64(0, a.attrs.f("value", 0.0));
  copy_elements(x, y, offsets_from_tables(y.shape(), tables), &pad_value);
}

}  // namespace

void run_movement(const Args& a) {
  switch (a.op) {
    case OpKind::Reshape:
    case OpKind::Reorder: return run_copy(a);
    case OpKind::Transpose: return run_transpose(a);
    case OpKind::Concat: return run_concat(a);
    case OpKind::Split: return run_split(a);
    case OpKind::Slice: return run_slice(a);
    case OpKind::Gather: return run_gather(a);
    case OpKind::Expand: return run_expand(a);
    case OpKind::Tile: return run_tile(a);
    case OpKind::Pad: return run_pad(a);
    default: a.error("not a movement op");
  }
}

}  // namespace opv::ref::detail
