/* Static shape and dtype inference for the canonical op set (ops.def).
 *
 * 1. Element-wise families: unary keeps shape/dtype (Not -> bool, Cast -> `to`); binary
 *    broadcasts numpy-style, requires equal operand dtypes (Pow excepted) and yields bool for
 *    comparisons.
 * 2. Every other op derives its output from inputs + attributes and checks what the kernels
 *    rely on (Conv channels vs weight, MatMul inner dims, Concat dims, Split sizes...).
 * 3. Ops whose output shape lives on the value (Reshape, Expand, Slice, Resize, ConstantOfShape,
 *    pools with ceil_mode) validate the preset shape against the input instead.
 * Invariant: on return every output has a dtype and a fully static shape (dims >= 0); errors
 * are opv::Error with the reason only (callers prefix the node label).
 */
#include "ops/shape_infer.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <cmath>

#include "core/error.h"

namespace opv {

namespace {

const char* dn(DType t) { return dtype_name(t); }

// Dims, pads and strides beyond this are rejected as corrupt (keeps all arithmetic in range).
constexpr int64_t kMaxExtent = int64_t(1) << 40;

void check_extents(const std::vector<int64_t>& v, const char* what, int64_t lo = -kMaxExtent) {
  for (int64_t x : v) OPV_CHECK(x >= lo && x <= kMaxExtent, what, " value ", x, " is out of range");
}

// The product of dims with an overflow guard (an error instead of wrapping).
void check_size(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    OPV_CHECK(d >= 0 && d <= kMaxExtent, "dim ", d, " of ", shape_str(s), " is out of range");
    OPV_CHECK(d == 0 || n <= kMaxExtent / d, "shape ", shape_str(s), " is too large");
    n *= d;
  }
}

void need_inputs(const std::vector<ValueInfo>& ins, size_t lo, size_t hi) {
  OPV_CHECK(ins.size() >= lo && ins.size() <= hi, "expects ", lo, (lo == hi ? "" : ".."),
            (lo == hi ? std::string() : std::to_string(hi)), " inputs, got ", ins.size());
}

void need_outputs(const std::vector<ValueInfo>& outs, size_t n) {
  OPV_CHECK(outs.size() == n, "expects ", n, " outputs, got ", outs.size());
}

// Absent optional inputs arrive with an empty shape and F32; callers mark them via `present`.
bool present(const std::vector<ValueInfo>& ins, size_t i) { return i < ins.size(); }

bool is_compare(OpKind k) {
  return k == OpKind::Equal || k == OpKind::Less || k == OpKind::Greater || k == OpKind::LessOrEqual ||
         k == OpKind::GreaterOrEqual;
}

std::vector<int64_t> ints_of_size(const Attrs& a, const char* key, size_t n, int64_t dflt) {
  std::vector<int64_t> v = a.ints(key, std::vector<int64_t>(n, dflt));
  OPV_CHECK(v.size() == n, "attribute '", key, "' must have ", n, " values, got ", v.size());
  return v;
}

// Output extent of a window op; every step overflow-checked (kernel, dilation and pads are each
// bounded by kMaxExtent, but their products are not). Requires s >= 1.
int64_t pool_out(int64_t in, int64_t pb, int64_t pe, int64_t k, int64_t s, int64_t d, bool ceil_mode) {
  OPV_CHECK(s >= 1 && k >= 1 && d >= 1, "kernel, strides and dilations must be >= 1");
  int64_t eff = checked_add(checked_mul(k - 1, d, "kernel extent"), 1, "kernel extent");
  int64_t lead = checked_add(in, pb, "padded input");
  int64_t span = checked_sub(checked_add(lead, pe, "padded input"), eff, "padded input");
  OPV_CHECK(span >= 0, "window of ", eff, " does not fit input extent ", in, " with pads ", pb, "+", pe);
  int64_t out = (ceil_mode ? span / s + (span % s != 0) : span / s) + 1;
  // The last window must start inside the input or its leading padding: (out-1)*s < in + pb.
  if (ceil_mode && lead >= 0 && out - 1 >= lead / s + (lead % s != 0)) --out;
  return out;
}

void infer_conv(const Attrs& a, const std::vector<ValueInfo>& ins, std::vector<ValueInfo>& outs) {
  need_inputs(ins, 2, 3);
  const Shape& x = ins[0].shape;
  const Shape& w = ins[1].shape;
  OPV_CHECK(x.size() == 4, "input x must be 4-D [N,C,H,W], got ", shape_str(x));
  OPV_CHECK(w.size() == 4, "weight must be 4-D [M,C/group,kh,kw], got ", shape_str(w));
  OPV_CHECK(ins[1].dtype == ins[0].dtype, "weight dtype ", dn(ins[1].dtype), " differs from input dtype ",
            dn(ins[0].dtype));
  int64_t group = a.i("group", 1);
  OPV_CHECK(group >= 1, "group must be >= 1, got ", group);
  const int64_t want_c = checked_mul(w[1], group, "group channels");
  OPV_CHECK(x[1] == want_c, "input has ", x[1], " channels but weight ", shape_str(w), " with group ", group,
            " expects ", want_c);
  OPV_CHECK(w[0] % group == 0, "output channels ", w[0], " not divisible by group ", group);
  if (present(ins, 2)) {
    OPV_CHECK(ins[2].shape == Shape{w[0]}, "bias must be [", w[0], "], got ", shape_str(ins[2].shape));
    OPV_CHECK(ins[2].dtype == ins[0].dtype, "bias dtype ", dn(ins[2].dtype), " differs from input dtype");
  }
  auto st = ints_of_size(a, "strides", 2, 1);
  auto pd = ints_of_size(a, "pads", 4, 0);
  auto dl = ints_of_size(a, "dilations", 2, 1);
  check_extents(st, "strides");
  check_extents(pd, "pads");
  check_extents(dl, "dilations");
  for (int i = 0; i < 2; ++i) OPV_CHECK(st[i] >= 1 && dl[i] >= 1, "strides and dilations must be >= 1");
  for (int64_t p : pd) OPV_CHECK(p >= 0, "pads must be >= 0");
  Shape y = {x[0], w[0], 0, 0};
  for (int i = 0; i < 2; ++i) y[2 + i] = pool_out(x[2 + i], pd[i], pd[2 + i], w[2 + i], st[i], dl[i], false);
  outs[0].dtype = ins[0].dtype;
  outs[0].shape = y;
}

void infer_pool(OpKind op, const Attrs& a, const std::vector<ValueInfo>& ins, std::vector<ValueInfo>& outs) {
  need_inputs(ins, 1, 1);
  const Shape& x = ins[0].shape;
  OPV_CHECK(x.size() == 4, "input must be 4-D [N,C,H,W], got ", shape_str(x));
  auto k = ints_of_size(a, "kernel", 2, 1);
  OPV_CHECK(a.has("kernel"), "attribute 'kernel' is required");
  auto st = ints_of_size(a, "strides", 2, 1);
  auto pd = ints_of_size(a, "pads", 4, 0);
  auto dl = op == OpKind::MaxPool ? ints_of_size(a, "dilations", 2, 1) : std::vector<int64_t>{1, 1};
  check_extents(k, "kernel");
  check_extents(st, "strides");
  check_extents(pd, "pads");
  check_extents(dl, "dilations");
  for (int i = 0; i < 2; ++i)
    OPV_CHECK(k[i] >= 1 && st[i] >= 1 && dl[i] >= 1, "kernel, strides and dilations must be >= 1");
  Shape lo = x, hi = x;
  for (int i = 0; i < 2; ++i) {
    lo[2 + i] = pool_out(x[2 + i], pd[i], pd[2 + i], k[i], st[i], dl[i], false);
    hi[2 + i] = pool_out(x[2 + i], pd[i], pd[2 + i], k[i], st[i], dl[i], true);
  }
  const Shape& preset = outs[0].shape;
  if (!preset.empty() && preset != lo) {
    OPV_CHECK(preset == hi, "output shape ", shape_str(preset), " matches neither floor ", shape_str(lo),
              " nor ceil ", shape_str(hi), " rounding");
  } else {
    outs[0].shape = lo;
  }
  outs[0].dtype = ins[0].dtype;
}

void infer_matmul(const std::vector<ValueInfo>& ins, std::vector<ValueInfo>& outs) {
  need_inputs(ins, 2, 2);
  Shape a = ins[0].shape, b = ins[1].shape;
  OPV_CHECK(!a.empty() && !b.empty(), "operands must have rank >= 1, got ", shape_str(a), " and ", shape_str(b));
  OPV_CHECK(ins[0].dtype == ins[1].dtype, "operand dtypes differ: ", dn(ins[0].dtype), " vs ", dn(ins[1].dtype));
  bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  int64_t m = a[a.size() - 2], k = a.back(), k2 = b[b.size() - 2], n = b.back();
  OPV_CHECK(k == k2, "inner dimensions differ: ", shape_str(ins[0].shape), " x ", shape_str(ins[1].shape));
  Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape y = broadcast_shapes(ba, bb);
  if (!a1) y.push_back(m);
  if (!b1) y.push_back(n);
  outs[0].dtype = ins[0].dtype;
  outs[0].shape = y;
}

void infer_gemm(const Attrs& a, const std::vector<ValueInfo>& ins, std::vector<ValueInfo>& outs) {
  need_inputs(ins, 2, 3);
  const Shape& A = ins[0].shape;
  const Shape& B = ins[1].shape;
  OPV_CHECK(A.size() == 2 && B.size() == 2, "A and B must be 2-D, got ", shape_str(A), " and ", shape_str(B));
  OPV_CHECK(ins[0].dtype == ins[1].dtype, "operand dtypes differ: ", dn(ins[0].dtype), " vs ", dn(ins[1].dtype));
  bool ta = a.i("transA", 0) != 0, tb = a.i("transB", 0) != 0;
  int64_t m = ta ? A[1] : A[0], k = ta ? A[0] : A[1];
  int64_t k2 = tb ? B[1] : B[0], n = tb ? B[0] : B[1];
  OPV_CHECK(k == k2, "inner dimensions differ: A", shape_str(A), (ta ? "'" : ""), " x B", shape_str(B),
            (tb ? "'" : ""));
  Shape y = {m, n};
  if (present(ins, 2)) {
    OPV_CHECK(broadcasts_to(ins[2].shape, y), "C ", shape_str(ins[2].shape),
              " does not broadcast to ", shape_str(y));
    OPV_CHECK(ins[2].dtype == ins[0].dtype, "C dtype ", dn(ins[2].dtype), " differs from A dtype");
  }
  outs[0].dtype = ins[0].dtype;
  outs[0].shape = y;
}

std::vector<int64_t> check_axes(const Attrs& a, int64_t rank) {
  std::vector<int64_t> axes = a.ints("axes");
  OPV_CHECK(!axes.empty(), "attribute 'axes' must be non-empty");
  for (size_t i = 0; i < axes.size(); ++i) {
    OPV_CHECK(axes[i] >= 0 && axes[i] < rank, "axis ", axes[i], " out of range for rank ", rank);
    OPV_CHECK(i == 0 || axes[i] > axes[i - 1], "axes must be sorted and unique, got ", shape_str(axes));
  }
  return axes;
}

int64_t check_axis(const Attrs& a, int64_t rank, const char* key = "axis") {
  int64_t ax = a.i(key, 0);
  OPV_CHECK(ax >= 0 && ax < rank, "attribute '", key, "' = ", ax, " must be normalised to [0,", rank, ")");
  return ax;
}

int64_t scalar_i64(const ValueInfo& v) {
  OPV_ASSERT(v.data && v.data->numel() == 1);
  return v.data->get_i64(0);
}

void infer_range(const std::vector<ValueInfo>& ins, std::vector<ValueInfo>& outs) {
  need_inputs(ins, 3, 3);
  for (const ValueInfo& v : ins) {
    OPV_CHECK(v.shape.empty() || numel(v.shape) == 1, "inputs must be scalars, got ", shape_str(v.shape));
    OPV_CHECK(v.dtype == ins[0].dtype, "inputs must share one dtype");
  }
  outs[0].dtype = ins[0].dtype;
  if (ins[0].data && ins[1].data && ins[2].data) {
    double s = ins[0].data->get_f64(0), l = ins[1].data->get_f64(0), d = ins[2].data->get_f64(0);
    OPV_CHECK(d != 0, "delta must be non-zero");
    double count = std::ceil((l - s) / d);
    OPV_CHECK(count <= double(kMaxExtent), "range(", s, ",", l, ",", d, ") is too long");
    int64_t n = int64_t(std::max(0.0, count));
    if (!is_float(ins[0].dtype)) {
      int64_t si = scalar_i64(ins[0]), li = scalar_i64(ins[1]), di = scalar_i64(ins[2]);
      // ceil((limit - start) / delta) without overflow: the span is computed in checked
      // arithmetic (start/limit near the int64 ends wrap otherwise).
      OPV_CHECK(di != INT64_MIN, "delta ", di, " is out of range");
      int64_t span = di > 0 ? checked_sub(li, si, "range length") : checked_sub(si, li, "range length");
      int64_t step = di > 0 ? di : -di;
      n = span <= 0 ? 0 : span / step + (span % step != 0);
      OPV_CHECK(n <= kMaxExtent, "range(", si, ",", li, ",", di, ") is too long");
    }
    outs[0].shape = {n};
  } else {
    OPV_CHECK(outs[0].shape.size() == 1, "output shape must be known (1-D) when inputs are not constant");
  }
}

void infer_slice(const Attrs& a, const std::vector<ValueInfo>& ins, std::vector<ValueInfo>& outs) {
  need_inputs(ins, 1, 1);
  const Shape& x = ins[0].shape;
  const Shape& y = outs[0].shape;
  size_t r = x.size();
  auto starts = ints_of_size(a, "starts", r, 0);
  auto steps = ints_of_size(a, "steps", r, 1);
  OPV_CHECK(y.size() == r, "output shape ", shape_str(y), " must have the input's rank ", r);
  check_extents(starts, "starts");
  check_extents(steps, "steps");
  for (size_t i = 0; i < r; ++i) {
    OPV_CHECK(steps[i] != 0, "step of axis ", i, " is zero");
    OPV_CHECK(y[i] >= 0, "negative output dim");
    if (y[i] == 0) continue;
    int64_t last = checked_add(starts[i], checked_mul(y[i] - 1, steps[i], "slice extent"), "slice extent");
    OPV_CHECK(starts[i] >= 0 && starts[i] < x[i] && last >= 0 && last < x[i], "axis ", i, ": start ", starts[i],
              " step ", steps[i], " count ", y[i], " leaves the input extent ", x[i]);
  }
  outs[0].dtype = ins[0].dtype;
}

// Parses an explicit einsum equation "ab,bc->ac" (letters and digits as subscripts, no
// ellipsis: the importer expands it) into the operand and output subscripts.
void parse_einsum(const std::string& eq, std::vector<std::string>& terms, std::string& out) {
  size_t arrow = eq.find("->");
  OPV_CHECK(arrow != std::string::npos, "equation '", eq, "' must be explicit (with '->')");
  out = eq.substr(arrow + 2);
  std::string lhs = eq.substr(0, arrow);
  terms.clear();
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  auto ok = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; };
  for (const std::string& t : terms)
    for (char ch : t) OPV_CHECK(ok(ch), "equation '", eq, "': subscript '", ch, "' is not supported");
  for (char ch : out) OPV_CHECK(ok(ch), "equation '", eq, "': subscript '", ch, "' is not supported");
  for (size_t i = 0; i < out.size(); ++i)
    OPV_CHECK(out.find(out[i], i + 1) == std::string::npos, "equation '", eq, "': output subscript '", out[i],
              "' repeats");
}

bool infer_extra(OpKind op, const Attrs& a, const std::vector<ValueInfo>& ins, std::vector<ValueInfo>& outs) {
  switch (op) {
    case OpKind::ArgMax:
    case OpKind::ArgMin: {
      need_inputs(ins, 1, 1);
      const Shape& x = ins[0].shape;
      OPV_CHECK(!x.empty(), "input must have rank >= 1");
      int64_t ax = check_axis(a, int64_t(x.size()));
      OPV_CHECK(x[size_t(ax)] > 0, "axis ", ax, " of ", shape_str(x), " is empty");
      Shape y = x;
      if (a.i("keepdims", 1) != 0) y[size_t(ax)] = 1;
      else y.erase(y.begin() + ax);
      outs[0] = {DType::I64, y, nullptr};
      return true;
    }
    case OpKind::LogSoftmax:
    case OpKind::Hardmax:
    case OpKind::LpNorm:
    case OpKind::CumSum: {
      need_inputs(ins, 1, 1);
      OPV_CHECK(!ins[0].shape.empty(), "input must have rank >= 1");
      check_axis(a, int64_t(ins[0].shape.size()));
      if (op == OpKind::LpNorm) {
        int64_t p = a.i("p", 2);
        OPV_CHECK(p == 1 || p == 2, "p must be 1 or 2, got ", p);
      }
      if (op != OpKind::CumSum) OPV_CHECK(is_float(ins[0].dtype), "input must be a float tensor");
      outs[0] = {ins[0].dtype, ins[0].shape, nullptr};
      return true;
    }
    case OpKind::InstanceNorm: {
      need_inputs(ins, 3, 3);
      const Shape& x = ins[0].shape;
      OPV_CHECK(x.size() >= 3, "input must be [N,C,D1,...], got ", shape_str(x));
      OPV_CHECK(ins[1].shape == Shape{x[1]} && ins[2].shape == Shape{x[1]}, "scale and bias must be [", x[1], "]");
      OPV_CHECK(is_float(ins[0].dtype), "input must be a float tensor");
      outs[0] = {ins[0].dtype, x, nullptr};
      return true;
    }
    case OpKind::Trilu: {
      need_inputs(ins, 1, 1);
      OPV_CHECK(ins[0].shape.size() >= 2, "input must have rank >= 2, got ", shape_str(ins[0].shape));
      outs[0] = {ins[0].dtype, ins[0].shape, nullptr};
      return true;
    }
    case OpKind::TopK: {
      need_inputs(ins, 1, 1);
      OPV_CHECK(outs.size() == 2, "expects 2 outputs");
      const Shape& x = ins[0].shape;
      OPV_CHECK(!x.empty(), "input must have rank >= 1");
      int64_t ax = check_axis(a, int64_t(x.size()));
      int64_t k = a.i("k", -1);
      OPV_CHECK(k >= 0 && k <= x[size_t(ax)], "k = ", k, " must be in [0, ", x[size_t(ax)], "]");
      Shape y = x;
      y[size_t(ax)] = k;
      outs[0] = {ins[0].dtype, y, nullptr};
      outs[1] = {DType::I64, y, nullptr};
      return true;
    }
    case OpKind::Einsum: {
      OPV_CHECK(!ins.empty(), "needs at least one input");
      std::vector<std::string> terms;
      std::string out;
      parse_einsum(a.s("equation", ""), terms, out);
      OPV_CHECK(terms.size() == ins.size(), "equation has ", terms.size(), " operands, node has ", ins.size(), " inputs");
      int64_t dims[128];
      for (int64_t& d : dims) d = -1;
      for (size_t i = 0; i < ins.size(); ++i) {
        OPV_CHECK(ins[i].dtype == ins[0].dtype, "operand dtypes differ");
        OPV_CHECK(terms[i].size() == ins[i].shape.size(), "operand ", i, " ", shape_str(ins[i].shape), " has rank ",
                  ins[i].shape.size(), " but subscripts '", terms[i], "'");
        for (size_t k = 0; k < terms[i].size(); ++k) {
          int64_t& d = dims[size_t(static_cast<unsigned char>(terms[i][k]) & 127)];
          int64_t e = ins[i].shape[k];
          if (d < 0 || d == 1) d = e;
          OPV_CHECK(e == d || e == 1, "subscript '", terms[i][k], "' has extents ", d, " and ", e);
        }
      }
      Shape y;
      for (char ch : out) {
        int64_t d = dims[size_t(static_cast<unsigned char>(ch) & 127)];
        OPV_CHECK(d >= 0, "output subscript '", ch, "' appears in no operand");
        y.push_back(d);
      }
      outs[0] = {ins[0].dtype, y, nullptr};
      return true;
    }
    case OpKind::ConvTranspose: {
      need_inputs(ins, 2, 3);
      const Shape& x = ins[0].shape;
      const Shape& w = ins[1].shape;
      OPV_CHECK(x.size() == 4 && w.size() == 4, "input and weight must be 4-D, got ", shape_str(x), " and ", shape_str(w));
      OPV_CHECK(ins[1].dtype == ins[0].dtype, "weight dtype differs from input dtype");
      int64_t group = a.i("group", 1);
      OPV_CHECK(group >= 1 && x[1] == w[0] && w[0] % group == 0, "input channels ", x[1], " do not match weight ",
                shape_str(w), " with group ", group);
      const int64_t m = checked_mul(w[1], group, "output channels");
      if (present(ins, 2)) OPV_CHECK(ins[2].shape == Shape{m}, "bias must be [", m, "]");
      auto st = ints_of_size(a, "strides", 2, 1);
      auto pd = ints_of_size(a, "pads", 4, 0);
      auto dl = ints_of_size(a, "dilations", 2, 1);
      auto op_ = ints_of_size(a, "output_padding", 2, 0);
      check_extents(st, "strides");
      check_extents(pd, "pads");
      check_extents(dl, "dilations");
      check_extents(op_, "output_padding");
      Shape y = {x[0], m, 0, 0};
      for (int i = 0; i < 2; ++i) {
        OPV_CHECK(st[i] >= 1 && dl[i] >= 1 && op_[i] >= 0, "strides/dilations must be >= 1, output_padding >= 0");
        int64_t full = checked_add(checked_mul(x[2 + i] - 1, st[i], "output extent"),
                                   checked_mul(w[2 + i] - 1, dl[i], "output extent") + 1 + op_[i], "output extent");
        y[2 + i] = full - pd[i] - pd[2 + i];
        OPV_CHECK(y[2 + i] >= 0, "pads ", shape_str(pd), " leave no output");
      }
      outs[0] = {ins[0].dtype, y, nullptr};
      return true;
    }
    case OpKind::GridSample: {
      need_inputs(ins, 2, 2);
      const Shape& x = ins[0].shape;
      const Shape& g = ins[1].shape;
      OPV_CHECK(x.size() == 4, "only 2-D sampling of [N,C,H,W] is supported, input is ", shape_str(x));
      OPV_CHECK(g.size() == 4 && g[0] == x[0] && g[3] == 2, "grid must be [N,H_out,W_out,2], got ", shape_str(g));
      OPV_CHECK(is_float(ins[0].dtype) && is_float(ins[1].dtype), "input and grid must be float tensors");
      std::string mode = a.s("mode", "linear"), pad = a.s("padding", "zeros");
      OPV_CHECK(mode == "linear" || mode == "nearest" || mode == "cubic", "mode '", mode, "' is not supported");
      OPV_CHECK(pad == "zeros" || pad == "border" || pad == "reflection", "padding_mode '", pad, "' is not supported");
      outs[0] = {ins[0].dtype, {x[0], x[1], g[1], g[2]}, nullptr};
      return true;
    }
    case OpKind::GatherElements: {
      need_inputs(ins, 2, 2);
      const Shape& x = ins[0].shape;
      const Shape& idx = ins[1].shape;
      int64_t ax = check_axis(a, int64_t(x.size()));
      OPV_CHECK(ins[1].dtype == DType::I64 || ins[1].dtype == DType::I32, "indices must be i32 or i64");
      OPV_CHECK(idx.size() == x.size(), "indices ", shape_str(idx), " must have the rank of x ", shape_str(x));
      for (size_t d = 0; d < x.size(); ++d)
        OPV_CHECK(int64_t(d) == ax || idx[d] <= x[d], "indices ", shape_str(idx), " exceed x ", shape_str(x));
      outs[0] = {ins[0].dtype, idx, nullptr};
      return true;
    }
    case OpKind::ScatterElements: {
      need_inputs(ins, 3, 3);
      const Shape& x = ins[0].shape;
      const Shape& idx = ins[1].shape;
      int64_t ax = check_axis(a, int64_t(x.size()));
      OPV_CHECK(ins[1].dtype == DType::I64 || ins[1].dtype == DType::I32, "indices must be i32 or i64");
      OPV_CHECK(ins[2].shape == idx, "updates ", shape_str(ins[2].shape), " must have the shape of indices ",
                shape_str(idx));
      OPV_CHECK(ins[2].dtype == ins[0].dtype, "updates dtype differs from x");
      OPV_CHECK(idx.size() == x.size(), "indices must have the rank of x");
      for (size_t d = 0; d < x.size(); ++d)
        OPV_CHECK(int64_t(d) == ax || idx[d] <= x[d], "indices ", shape_str(idx), " exceed x ", shape_str(x));
      std::string r = a.s("reduction", "none");
      OPV_CHECK(r == "none" || r == "add" || r == "mul" || r == "max" || r == "min", "reduction '", r,
                "' is not supported");
      outs[0] = {ins[0].dtype, x, nullptr};
      return true;
    }
    default: return false;
  }
}

// Reduce* (is_reduce): the axes reduced, kept as 1 with keepdims.
void infer_reduce(const Attrs& a, const std::vector<ValueInfo>& ins, std::vector<ValueInfo>& outs) {
  need_inputs(ins, 1, 1);
  const Shape& x = ins[0].shape;
  auto axes = check_axes(a, int64_t(x.size()));
  bool keep = a.i("keepdims", 1) != 0;
  Shape y;
  for (size_t i = 0; i < x.size(); ++i) {
    bool red = std::find(axes.begin(), axes.end(), int64_t(i)) != axes.end();
    if (!red) y.push_back(x[i]);
    else if (keep) y.push_back(1);
  }
  outs[0].dtype = ins[0].dtype;
  outs[0].shape = y;
}

void infer_other(OpKind op, const Attrs& a, const std::vector<ValueInfo>& ins, std::vector<ValueInfo>& outs) {
  if (is_reduce(op)) return infer_reduce(a, ins, outs);
  switch (op) {
    case OpKind::Where: {
      need_inputs(ins, 3, 3);
      OPV_CHECK(ins[0].dtype == DType::Bool, "condition must be bool, got ", dn(ins[0].dtype));
      OPV_CHECK(ins[1].dtype == ins[2].dtype, "x and y dtypes differ: ", dn(ins[1].dtype), " vs ", dn(ins[2].dtype));
      outs[0].dtype = ins[1].dtype;
      outs[0].shape = broadcast_shapes(broadcast_shapes(ins[0].shape, ins[1].shape), ins[2].shape);
      return;
    }
    case OpKind::Conv: return infer_conv(a, ins, outs);
    case OpKind::Gemm: return infer_gemm(a, ins, outs);
    case OpKind::MatMul: return infer_matmul(ins, outs);
    case OpKind::BatchNorm: {
      need_inputs(ins, 5, 5);
      const Shape& x = ins[0].shape;
      OPV_CHECK(x.size() >= 2, "input must have rank >= 2, got ", shape_str(x));
      for (size_t i = 1; i < 5; ++i)
        OPV_CHECK(ins[i].shape == Shape{x[1]}, "parameter ", i, " must be [", x[1], "], got ",
                  shape_str(ins[i].shape));
      outs[0].dtype = ins[0].dtype;
      outs[0].shape = x;
      return;
    }
    case OpKind::MaxPool:
    case OpKind::AveragePool: return infer_pool(op, a, ins, outs);
    case OpKind::GlobalAveragePool:
    case OpKind::GlobalMaxPool: {
      need_inputs(ins, 1, 1);
      Shape y = ins[0].shape;
      OPV_CHECK(y.size() >= 3, "input must be [N,C,...] with rank >= 3, got ", shape_str(y));
      for (size_t i = 2; i < y.size(); ++i) y[i] = 1;
      outs[0].dtype = ins[0].dtype;
      outs[0].shape = y;
      return;
    }
    case OpKind::Softmax: {
      need_inputs(ins, 1, 1);
      check_axis(a, int64_t(ins[0].shape.size()));
      outs[0] = {ins[0].dtype, ins[0].shape, nullptr};
      return;
    }
    case OpKind::LayerNorm: {
      need_inputs(ins, 2, 3);
      const Shape& x = ins[0].shape;
      int64_t ax = check_axis(a, int64_t(x.size()));
      Shape tail(x.begin() + ax, x.end());
      for (size_t i = 1; i < ins.size(); ++i) {
        OPV_CHECK(broadcasts_to(ins[i].shape, tail),
                  (i == 1 ? "scale " : "bias "), shape_str(ins[i].shape), " does not broadcast to the normalised shape ",
                  shape_str(tail));
      }
      outs[0] = {ins[0].dtype, x, nullptr};
      return;
    }
    case OpKind::Reshape: {
      need_inputs(ins, 1, 1);
      OPV_CHECK(numel(outs[0].shape) == numel(ins[0].shape), "cannot reshape ", shape_str(ins[0].shape), " to ",
                shape_str(outs[0].shape));
      outs[0].dtype = ins[0].dtype;
      return;
    }
    case OpKind::Transpose: {
      need_inputs(ins, 1, 1);
      const Shape& x = ins[0].shape;
      auto perm = a.ints("perm");
      OPV_CHECK(perm.size() == x.size(), "perm ", shape_str(perm), " must have ", x.size(), " entries");
      std::vector<char> seen(x.size(), 0);
      Shape y(x.size());
      for (size_t i = 0; i < perm.size(); ++i) {
        OPV_CHECK(perm[i] >= 0 && perm[i] < int64_t(x.size()) && !seen[perm[i]], "perm ", shape_str(perm),
                  " is not a permutation");
        seen[perm[i]] = 1;
        y[i] = x[perm[i]];
      }
      outs[0] = {ins[0].dtype, y, nullptr};
      return;
    }
    case OpKind::Concat: {
      OPV_CHECK(!ins.empty(), "needs at least one input");
      const Shape& x0 = ins[0].shape;
      int64_t ax = check_axis(a, int64_t(x0.size()));
      Shape y = x0;
      for (size_t i = 1; i < ins.size(); ++i) {
        const Shape& xi = ins[i].shape;
        OPV_CHECK(ins[i].dtype == ins[0].dtype, "input ", i, " dtype ", dn(ins[i].dtype), " differs from input 0 ",
                  dn(ins[0].dtype));
        OPV_CHECK(xi.size() == x0.size(), "input ", i, " ", shape_str(xi), " has a different rank than ", shape_str(x0));
        for (size_t d = 0; d < x0.size(); ++d)
          OPV_CHECK(int64_t(d) == ax || xi[d] == x0[d], "input ", i, " ", shape_str(xi), " differs from ",
                    shape_str(x0), " in dim ", d, " (concat axis ", ax, ")");
        y[ax] = checked_add(y[ax], xi[ax], "concat axis");
      }
      outs[0] = {ins[0].dtype, y, nullptr};
      return;
    }
    case OpKind::Split: {
      need_inputs(ins, 1, 1);
      const Shape& x = ins[0].shape;
      int64_t ax = check_axis(a, int64_t(x.size()));
      auto sizes = a.ints("split");
      OPV_CHECK(sizes.size() == outs.size(), "split ", shape_str(sizes), " must have one size per output (",
                outs.size(), ")");
      int64_t total = 0;
      for (size_t i = 0; i < sizes.size(); ++i) {
        OPV_CHECK(sizes[i] >= 0, "negative split size");
        total = checked_add(total, sizes[i], "split sizes");
        outs[i].dtype = ins[0].dtype;
        outs[i].shape = x;
        outs[i].shape[ax] = sizes[i];
      }
      OPV_CHECK(total == x[ax], "split sizes ", shape_str(sizes), " sum to ", total, ", axis ", ax, " of ",
                shape_str(x), " has ", x[ax]);
      return;
    }
    case OpKind::Slice: return infer_slice(a, ins, outs);
    case OpKind::Gather: {
      need_inputs(ins, 2, 2);
      const Shape& x = ins[0].shape;
      int64_t ax = check_axis(a, int64_t(x.size()));
      OPV_CHECK(ins[1].dtype == DType::I64 || ins[1].dtype == DType::I32, "indices must be i32 or i64, got ",
                dn(ins[1].dtype));
      if (ins[1].data)
        for (int64_t i = 0; i < ins[1].data->numel(); ++i) {
          int64_t v = ins[1].data->get_i64(i);
          OPV_CHECK(v >= -x[ax] && v < x[ax], "index ", v, " out of range for axis ", ax, " of extent ", x[ax]);
        }
      Shape y(x.begin(), x.begin() + ax);
      y.insert(y.end(), ins[1].shape.begin(), ins[1].shape.end());
      y.insert(y.end(), x.begin() + ax + 1, x.end());
      outs[0] = {ins[0].dtype, y, nullptr};
      return;
    }
    case OpKind::Expand: {
      need_inputs(ins, 1, 1);
      OPV_CHECK(broadcasts_to(ins[0].shape, outs[0].shape), "cannot expand ",
                shape_str(ins[0].shape), " to ", shape_str(outs[0].shape));
      outs[0].dtype = ins[0].dtype;
      return;
    }
    case OpKind::Tile: {
      need_inputs(ins, 1, 1);
      const Shape& x = ins[0].shape;
      auto rep = ints_of_size(a, "repeats", x.size(), 1);
  check_extents(rep, "repeats", 0);
      Shape y = x;
      for (size_t i = 0; i < x.size(); ++i) {
        OPV_CHECK(rep[i] >= 0, "negative repeat");
        OPV_CHECK(rep[i] == 0 || y[i] <= kMaxExtent / rep[i], "repeats ", shape_str(rep), " make the output too large");
        y[i] *= rep[i];
      }
      check_size(y);
      outs[0] = {ins[0].dtype, y, nullptr};
      return;
    }
    case OpKind::Pad: {
      need_inputs(ins, 1, 1);
      const Shape& x = ins[0].shape;
      auto pads = ints_of_size(a, "pads", 2 * x.size(), 0);
      check_extents(pads, "pads");
      std::string mode = a.s("mode", "constant");
      OPV_CHECK(mode == "constant" || mode == "reflect" || mode == "edge", "mode '", mode, "' is not supported");
      Shape y = x;
      for (size_t i = 0; i < x.size(); ++i) {
        y[i] = checked_add(checked_add(x[i], pads[i], "padded axis"), pads[i + x.size()], "padded axis");
        OPV_CHECK(y[i] >= 0, "pads ", shape_str(pads), " make axis ", i, " negative");
        if (mode == "reflect")
          OPV_CHECK(pads[i] < x[i] && pads[i + x.size()] < x[i], "reflect pads must be smaller than the axis (", x[i], ")");
        if (mode == "edge" && (pads[i] > 0 || pads[i + x.size()] > 0))
          OPV_CHECK(x[i] > 0, "edge padding of an empty axis");
      }
      outs[0] = {ins[0].dtype, y, nullptr};
      return;
    }
    case OpKind::Resize: {
      need_inputs(ins, 1, 1);
      const Shape& x = ins[0].shape;
      const Shape& y = outs[0].shape;
      OPV_CHECK(y.size() == x.size(), "output shape ", shape_str(y), " must have the input's rank ", x.size());
      auto scales = a.floats("scales");
      OPV_CHECK(scales.size() == x.size(), "attribute 'scales' must have ", x.size(), " values");
      for (double s : scales) OPV_CHECK(s > 0 && std::isfinite(s), "scales must be positive and finite");
      std::string mode = a.s("mode", "nearest");
      OPV_CHECK(mode == "nearest" || mode == "linear", "mode '", mode, "' is not supported");
      outs[0].dtype = ins[0].dtype;
      return;
    }
    case OpKind::Range: return infer_range(ins, outs);
    case OpKind::ConstantOfShape: {
      outs[0].dtype = a.has("dtype") ? dtype_from_u8(uint8_t(a.i("dtype"))) : DType::F32;
      return;
    }
    case OpKind::Reorder: {
      need_inputs(ins, 1, 1);
      outs[0] = {ins[0].dtype, ins[0].shape, nullptr};
      return;
    }
    default:
      if (infer_extra(op, a, ins, outs)) return;
      fail("no shape inference for op ", op_name(op));
  }
}

void infer_impl(OpKind op, const Attrs& attrs, const std::vector<ValueInfo>& ins, std::vector<ValueInfo>& outs) {
  if (op == OpKind::Split) {
    OPV_CHECK(!outs.empty(), "expects at least one output");
  } else {
    need_outputs(outs, 1);
  }
  if (is_unary(op)) {
    need_inputs(ins, 1, 1);
    DType t = ins[0].dtype;
    if (op == OpKind::Not) {
      OPV_CHECK(t == DType::Bool, "input must be bool, got ", dn(t));
    } else if (op == OpKind::IsNaN || op == OpKind::IsInf) {
      OPV_CHECK(is_float(t), "input must be a float tensor, got ", dn(t));
      t = DType::Bool;
    } else if (op == OpKind::Cast) {
      OPV_CHECK(attrs.has("to"), "attribute 'to' is required");
      t = dtype_from_u8(uint8_t(attrs.i("to")));
    }
    outs[0].dtype = t;
    outs[0].shape = ins[0].shape;
    return;
  }
  if (is_binary(op)) {
    need_inputs(ins, 2, 2);
    DType a = ins[0].dtype, b = ins[1].dtype;
    if (op == OpKind::And || op == OpKind::Or || op == OpKind::Xor)
      OPV_CHECK(a == DType::Bool && b == DType::Bool, "operands must be bool, got ", dn(a), " and ", dn(b));
    if (op == OpKind::BitwiseAnd || op == OpKind::BitwiseOr || op == OpKind::BitwiseXor)
      OPV_CHECK(is_int(a), "operands must be integers, got ", dn(a));
    if (op == OpKind::PRelu)
      OPV_CHECK(broadcasts_to(ins[1].shape, ins[0].shape), "slope ", shape_str(ins[1].shape),
                " does not broadcast to x ", shape_str(ins[0].shape));
    if (op != OpKind::Pow)
      OPV_CHECK(a == b, "operand dtypes differ: ", dn(a), " vs ", dn(b));
    outs[0].shape = broadcast_shapes(ins[0].shape, ins[1].shape);
    outs[0].dtype = is_compare(op) ? DType::Bool : a;
    return;
  }
  infer_other(op, attrs, ins, outs);
}

}  // namespace

void infer_shapes(OpKind op, const Attrs& attrs, const std::vector<ValueInfo>& ins, std::vector<ValueInfo>& outs) {
  for (const ValueInfo& v : ins) check_size(v.shape);
  for (const ValueInfo& v : outs) check_size(v.shape);
  infer_impl(op, attrs, ins, outs);
  for (const ValueInfo& v : outs) check_size(v.shape);
}

}  // namespace opv
