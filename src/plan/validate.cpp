// The plan validator, run after lowering and after every plan pass that changed something.
#include <algorithm>

#include "core/error.h"
#include "plan/liveness.h"
#include "plan/plan.h"

namespace opv::plan {

namespace {
std::string call_label(const Plan& p, int c) {
  const Call& call = p.calls[c];
  std::string k = call.kernel >= 0 && call.kernel < int(p.kernels.size()) ? p.kernels[call.kernel].name : "?";
  return "call " + std::to_string(c) + " (" + k + ", '" + call.label + "')";
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
