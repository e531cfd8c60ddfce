// The plan validator, run after lowering and after every plan pass that changed something.
#include <algorithm>

#include "core/error.h"
#include <cstring>

#include "core/limits.h"
#include "ops/shape_infer.h"
#include "plan/liveness.h"
#include "plan/plan.h"

namespace opv::plan {

namespace {
std::string call_label(const Plan& p, int c) {
  const Call& call = p.calls[c];
  std::string k = call.kernel >= 0 && call.kernel < int(p.kernels.size()) ? p.kernels[call.kernel].name : "?";
  return "call " + std::to_string(c) + " (" + k + ", '" + call.label + "')";
}

// Taps of one pooling window (kh * kw, dilated extents) beyond this are refused: no model needs
// them and a tampered kernel size would otherwise make a kernel loop for hours.
constexpr int64_t kMaxPoolWindowTaps = int64_t(1) << 24;

std::vector<int64_t> ints_n(const Attrs& a, const char* key, size_t n, int64_t dflt, const std::string& who) {
  std::vector<int64_t> v = a.ints(key, std::vector<int64_t>(n, dflt));
  OPV_CHECK(v.size() == n, who, ": attribute '", key, "' has ", v.size(), " values, expected ", n);
  return v;
}

// A loaded plan is untrusted even with valid CRCs: the settings of kernels whose loops and
// allocations follow their attributes must agree with the buffers they run on (issue 13).
void check_call_attrs(const Plan& p, int c) {
  const Call& call = p.calls[size_t(c)];
  const Kernel& k = p.kernels[size_t(call.kernel)];
  if (call.inputs.empty() || call.outputs.empty() || call.inputs[0] < 0) return;
  const Shape& x = p.buffers[size_t(call.inputs[0])].shape;
  const Shape& y = p.buffers[size_t(call.outputs[0])].shape;
  const std::string who = call_label(p, c);
  switch (k.op) {
    case OpKind::MaxPool:
    case OpKind::AveragePool: {
      OPV_CHECK(x.size() == 4 && y.size() == 4, who, ": pooling needs 4-D input and output, got ", shape_str(x),
                " -> ", shape_str(y));
      auto kk = ints_n(k.attrs, "kernel", 2, 1, who);
      auto st = ints_n(k.attrs, "strides", 2, 1, who);
      auto pd = ints_n(k.attrs, "pads", 4, 0, who);
      auto dl = ints_n(k.attrs, "dilations", 2, 1, who);
      OPV_CHECK(y[0] == x[0] && y[1] == x[1], who, ": output ", shape_str(y), " does not match input ", shape_str(x));
      int64_t taps = 1;
      for (int i = 0; i < 2; ++i) {
        OPV_CHECK(kk[size_t(i)] >= 1 && st[size_t(i)] >= 1 && dl[size_t(i)] >= 1, who,
                  ": kernel, strides and dilations must be >= 1");
        OPV_CHECK(pd[size_t(i)] >= 0 && pd[size_t(i) + 2] >= 0, who, ": pads must be >= 0");
        const int64_t eff = checked_add(checked_mul(kk[size_t(i)] - 1, dl[size_t(i)], who.c_str()), 1, who.c_str());
        OPV_CHECK(pd[size_t(i)] < eff && pd[size_t(i) + 2] < eff, who, ": pads must be smaller than the window ", eff);
        taps = checked_mul(taps, eff, who.c_str());
        const int64_t lead = checked_add(x[size_t(2 + i)], pd[size_t(i)], who.c_str());
        const int64_t span = checked_sub(checked_add(lead, pd[size_t(i) + 2], who.c_str()), eff, who.c_str());
        OPV_CHECK(span >= 0, who, ": window ", eff, " does not fit the padded input ", shape_str(x));
        const int64_t s = st[size_t(i)];
        const int64_t lo = span / s + 1;
        int64_t hi = span / s + (span % s != 0) + 1;
        if (hi - 1 >= lead / s + (lead % s != 0)) --hi;
        OPV_CHECK(y[size_t(2 + i)] == lo || y[size_t(2 + i)] == hi, who, ": output ", shape_str(y),
                  " does not follow from input ", shape_str(x), " and the kernel settings");
      }
      OPV_CHECK(taps <= kMaxPoolWindowTaps, who, ": pooling window of ", taps, " taps is implausible");
      break;
    }
    case OpKind::ReduceMean:
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin: {
      const int64_t r = int64_t(x.size());
      std::vector<char> seen(size_t(r), 0);
      for (int64_t ax : k.attrs.ints("axes", {})) {
        OPV_CHECK(ax >= -r && ax < r, who, ": reduce axis ", ax, " is out of range for input ", shape_str(x));
        int64_t n = ax < 0 ? ax + r : ax;
        OPV_CHECK(!seen[size_t(n)], who, ": reduce axis ", ax, " is repeated");
        seen[size_t(n)] = 1;
      }
      // (target cuda's SE gate with its depthwise conv folded in, se.cpp, reduces that conv's output,
      // which may have more channels than the call's input 0: its PTX does not follow these attrs)
      const bool folded_se = p.target == "cuda" && k.attrs.has("cuda_se_dw");
      OPV_CHECK(folded_se || numel(y) <= numel(x), who, ": reduce output ", shape_str(y), " is larger than its input ",
                shape_str(x));
      break;
    }
    case OpKind::Conv: {
      if (!k.attrs.has("strides")) break;
      for (int64_t v : k.attrs.ints("strides"))
        OPV_CHECK(v >= 1, who, ": strides must be >= 1");
      for (int64_t v : k.attrs.ints("dilations", {}))
        OPV_CHECK(v >= 1, who, ": dilations must be >= 1");
      for (int64_t v : k.attrs.ints("pads", {}))
        OPV_CHECK(v >= 0, who, ": pads must be >= 0");
      break;
    }
    default:
      break;
  }
}
// Every call's kernel settings must produce exactly its output buffers from its input buffers:
// shape inference (ops/shape_infer.h, the importer's own rules) re-run on the buffers' dtypes
// and logical shapes. This covers every op at once (movement ops with tampered perms, slices,
// axes, ...), not only those with a hand-written check above. Constant inputs are given their
// data, as the importer does. Kernels whose buffers are in GPU-specific storage (images, packed
// weights), with binary post-ops or batched are checked by the backends' own ABI instead.
void check_call_shapes(const Plan& p, int c) {
  const Call& call = p.calls[size_t(c)];
  const Kernel& k = p.kernels[size_t(call.kernel)];
  // Fused binary post-ops and batched launches (several calls' buffers in one) have their own
  // argument conventions, checked by the backends' ABI code; the plain form is checked here.
  for (const PostOp& po : k.post_ops)
    if (is_binary(po.op)) return;
  if (k.attrs.has("cl_batch")) return;
  std::vector<ValueInfo> ins, outs;
  std::vector<Tensor> data;
  data.reserve(call.inputs.size());
  for (int b : call.inputs) {
    if (b < 0) continue;  // an absent optional input (e.g. a convolution without bias)
    const Buffer& buf = p.buffers[size_t(b)];
    if (buf.layout == Layout::PackedWeight || buf.layout == Layout::ImageRGBA) return;
    ValueInfo v;
    v.dtype = buf.dtype;
    v.shape = buf.shape;
    if (buf.kind == BufferKind::Constant && buf.layout == Layout::Linear &&
        buf.bytes == int64_t(storage_bytes(buf.dtype, buf.shape, buf.layout))) {
      data.emplace_back(buf.dtype, buf.shape);
      if (buf.bytes) std::memcpy(data.back().raw(), p.weights.data() + buf.offset, size_t(buf.bytes));
      v.data = &data.back();
    }
    ins.push_back(v);
  }
  for (int b : call.outputs) {
    const Buffer& buf = p.buffers[size_t(b)];
    if (buf.layout == Layout::PackedWeight || buf.layout == Layout::ImageRGBA) return;
    ValueInfo v;
    v.dtype = buf.dtype;
    v.shape = buf.shape;
    outs.push_back(v);
  }
  std::vector<ValueInfo> want = outs;
  try {
    infer_shapes(k.op, k.attrs, ins, want);
  } catch (const Error& e) {
    fail(call_label(p, c), ": kernel settings do not fit its buffers: ", e.what());
  }
  for (size_t i = 0; i < outs.size() && i < want.size(); ++i)
    OPV_CHECK(want[i].shape == outs[i].shape, call_label(p, c), ": output ", i, " '", p.buffers[size_t(call.outputs[i])].name,
              "' has shape ", shape_str(outs[i].shape), " but the kernel's settings make ", shape_str(want[i].shape));
}

}  // namespace

void validate(const Plan& p) {
  OPV_CHECK(!p.target.empty(), "plan has no target");
  const int nb = int(p.buffers.size());
  for (int i = 0; i < nb; ++i) {
    const Buffer& b = p.buffers[i];
    std::string who = "buffer " + std::to_string(i) + " '" + b.name + "'";
    for (int64_t d : b.shape) OPV_CHECK(d >= 0, who, " has a negative dimension");
    (void)dtype_size(b.dtype);  // throws on an invalid dtype
    check_tensor_limits(b.dtype, b.shape, who);  // the same per-tensor limits as import
    OPV_CHECK(b.bytes >= storage_bytes(b.dtype, b.shape, b.layout) || b.layout == Layout::PackedWeight ||
                  b.layout == Layout::ImageRGBA,
              who, " holds ", b.bytes, " bytes, less than its shape needs");
    OPV_CHECK(b.layout != Layout::NHWC || b.shape.size() == 4, who, " is NHWC but not 4-D");
    if (b.kind == BufferKind::Constant) {
      OPV_CHECK(b.offset >= 0 && b.offset % kAlign == 0 && b.offset + b.bytes <= int64_t(p.weights.size()), who,
                " lies outside the weights blob or is misaligned (offset ", b.offset, ", ", b.bytes, " bytes, blob ",
                p.weights.size(), ")");
    }
  }
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    (void)op_name(p.kernels[k].op);
    for (const PostOp& po : p.kernels[k].post_ops)
      OPV_CHECK(is_unary(po.op) || is_binary(po.op), "kernel ", k, " '", p.kernels[k].name, "': post-op ",
                op_name(po.op), " is not element-wise");
  }
  std::vector<int> writes(nb, 0);
  std::vector<char> ready(nb, 0);
  for (int i = 0; i < nb; ++i)
    ready[i] = p.buffers[i].kind == BufferKind::Input || p.buffers[i].kind == BufferKind::Constant;
  for (int c = 0; c < int(p.calls.size()); ++c) {
    const Call& call = p.calls[c];
    OPV_CHECK(call.kernel >= 0 && call.kernel < int(p.kernels.size()), call_label(p, c), ": kernel id out of range");
    for (int b : call.inputs) {
      if (b < 0) continue;
      OPV_CHECK(b < nb, call_label(p, c), ": input buffer id ", b, " out of range");
      OPV_CHECK(ready[b], call_label(p, c), ": reads buffer '", p.buffers[b].name, "' before it is written");
    }
    for (const PostOp& po : p.kernels[call.kernel].post_ops)
      if (is_binary(po.op))
        OPV_CHECK(po.input >= 0 && po.input < int(call.inputs.size()) && call.inputs[po.input] >= 0,
                  call_label(p, c), ": post-op ", op_name(po.op), " reads missing input ", po.input);
    for (int b : call.outputs) {
      OPV_CHECK(b >= 0 && b < nb, call_label(p, c), ": output buffer id ", b, " out of range");
      BufferKind k = p.buffers[b].kind;
      OPV_CHECK(k == BufferKind::Intermediate || k == BufferKind::Output, call_label(p, c), ": writes ",
                buffer_kind_name(k), " buffer '", p.buffers[b].name, "'");
      OPV_CHECK(++writes[b] == 1, call_label(p, c), ": buffer '", p.buffers[b].name, "' is written twice");
      ready[b] = 1;
    }
    check_call_attrs(p, c);
    check_call_shapes(p, c);
  }
  for (int i = 0; i < nb; ++i) {
    const Buffer& b = p.buffers[i];
    bool listed_in = std::count(p.inputs.begin(), p.inputs.end(), i) == 1;
    bool listed_out = std::count(p.outputs.begin(), p.outputs.end(), i) == 1;
    OPV_CHECK(listed_in == (b.kind == BufferKind::Input), "buffer '", b.name, "': kind ", buffer_kind_name(b.kind),
              " disagrees with the plan's input list");
    OPV_CHECK(listed_out == (b.kind == BufferKind::Output), "buffer '", b.name, "': kind ",
              buffer_kind_name(b.kind), " disagrees with the plan's output list");
    if (b.kind == BufferKind::Output) OPV_CHECK(writes[i] == 1, "output '", b.name, "' is never written");
  }
  for (int v : p.inputs) OPV_CHECK(v >= 0 && v < nb, "plan input id ", v, " out of range");
  for (int v : p.outputs) OPV_CHECK(v >= 0 && v < nb, "plan output id ", v, " out of range");

  // Arena: either unplanned (all offsets -1) or every Intermediate placed without live overlap.
  bool planned = false;
  for (const Buffer& b : p.buffers)
    if (b.kind == BufferKind::Intermediate && b.offset >= 0) planned = true;
  if (!planned) return;
  std::vector<LiveRange> live = live_ranges(p);
  std::vector<int> inter;
  for (int i = 0; i < nb; ++i) {
    const Buffer& b = p.buffers[i];
    if (b.kind != BufferKind::Intermediate) continue;
    OPV_CHECK(b.offset >= 0 && b.offset % kAlign == 0 && b.offset + b.bytes <= p.arena_bytes, "buffer '", b.name,
              "' lies outside the arena (offset ", b.offset, ", ", b.bytes, " bytes, arena ", p.arena_bytes, ")");
    inter.push_back(i);
  }
  std::sort(inter.begin(), inter.end(), [&](int a, int b) { return p.buffers[a].offset < p.buffers[b].offset; });
  for (size_t x = 0; x < inter.size(); ++x) {
    const Buffer& a = p.buffers[inter[x]];
    for (size_t y = x + 1; y < inter.size(); ++y) {
      const Buffer& b = p.buffers[inter[y]];
      if (b.offset >= a.offset + a.bytes) break;
      LiveRange la = live[inter[x]], lb = live[inter[y]];
      bool disjoint = la.first >= 0 && lb.first >= 0 && (la.last < lb.first || lb.last < la.first);
      OPV_CHECK(disjoint, "buffers '", a.name, "' and '", b.name, "' overlap in the arena while both are live");
    }
  }
}

}  // namespace opv::plan
