// Plan pass `assign_image_layout` ("layout-image", target opencl, first pass): 4-D float
// activations between calls that have image kernels are stored as Layout::ImageRGBA with F16
// storage (half textures, fp32 arithmetic in the kernels), with explicit Reorder calls at the
// edges of that domain.
//   1. Classify every call. Image-capable: Conv (input 0 is data; weights/bias are not),
//      GlobalAverage/MaxPool, ReduceMean over {2,3} with keepdims, MaxPool/AveragePool
//      (input 0 is data), unary element-wise ops with a unary_expr, binary Add/Sub/Mul/Div/
//      Pow/Min/Max, Concat on axis 1 (every input is data). Every slot is one of: Data (same
//      shape as the output, the conv/pool input, a concat input: must be an image), Flex ([N,C,1,1] with the output's N and C: read as a 1-pixel
//      image when it is one, else as a per-channel Linear vector), Other (weights, bias,
//      per-channel/scalar constants: Linear). Binary post-op operands are classified the same
//      way (the rule of post_ops_image_ok). A slot of any other shape makes the call Linear.
//      Every image-side shape must fit an image (fits_image).
//   2. In call order, a capable call joins the image domain when it is spatial (conv, pool,
//      reduce) with an eligible output, or is a Conv (there is no Linear conv kernel), or when a
//      Data/Flex input is already an image; then its
//      eligible outputs (Intermediate, float, Linear, fits an image) become ImageRGBA/F16.
//   3. Rewrite the call list: a slot whose buffer layout differs from what its call needs reads
//      a converted copy made by a Reorder call inserted before it (one copy per buffer and
//      layout, reused by later readers); a domain call writing a non-image buffer (a plan
//      Output...) writes an image temporary that a Reorder after it converts. A Reshape whose
//      input is an image and whose output is a float Linear buffer keeps reading the image (the
//      reorder family writes it in row-major NCHW order: no extra call). Existing Reorder calls
//      are left alone, so the pass is idempotent.
// Invariant: every call reads and writes each operand in the layout its kernel expects; values
// change only by the fp16 rounding of image storage; Input/Output/Constant buffers keep their
// layout; new buffers are unplanned Intermediates (memory planning runs last).
#include <map>
#include <optional>
#include <tuple>

#include "core/error.h"
#include "target/opencl/cl_abi.h"
#include "target/opencl/codegen.h"
#include "target/opencl/passes.h"

namespace opv::plan {
namespace {

enum class Slot : uint8_t { Other, Data, Flex };

bool is_f32_f16(DType dt) { return dt == DType::F32 || dt == DType::F16; }

bool is_image_binary(OpKind k) {
  return k == OpKind::Add || k == OpKind::Sub || k == OpKind::Mul || k == OpKind::Div || k == OpKind::Pow ||
         k == OpKind::Min || k == OpKind::Max;
}

// Calls that make a new 4-D activation from an image input (they start an image domain).
bool is_spatial(const Kernel& k) {
  switch (k.op) {
    case OpKind::Conv:
    case OpKind::MaxPool:
    case OpKind::AveragePool:
    case OpKind::GlobalAveragePool:
    case OpKind::GlobalMaxPool: return true;
    case OpKind::ReduceMean:
      return k.attrs.ints("axes") == std::vector<int64_t>{2, 3} && k.attrs.i("keepdims", 1) == 1;
    default: return false;
  }
}

// A per-channel ([C], [C,1,1], [1,C,1,1]) or scalar operand of an output [N,C,H,W].
bool per_channel_or_scalar(const Shape& s, const Shape& out) {
  if (numel(s) == 1) return true;
  if (s.size() > 4) return false;
  Shape p(4 - s.size(), 1);
  p.insert(p.end(), s.begin(), s.end());
  return p[0] == 1 && p[1] == out[1] && p[2] == 1 && p[3] == 1;
}

struct CallClass {
  bool capable = false;
  std::vector<Slot> slot;
};

struct ImagePass {
  Plan& p;
  std::vector<CallClass> cls;
  std::vector<bool> domain;
  std::map<std::pair<int, Layout>, int> converted;                  // (buffer, layout) -> copy
  std::map<std::tuple<Layout, DType, Layout, DType>, int> reorders;  // kernel id + 1
  bool changed = false;

  explicit ImagePass(Plan& plan) : p(plan) {}

  const Buffer& buf(int id) const { return p.buffers.at(size_t(id)); }

  // Slot class of an element-wise operand of shape s for an output of shape out, or nullopt.
  static std::optional<Slot> operand_slot(const Buffer& b, const Shape& out) {
    if (!is_f32_f16(b.dtype)) return std::nullopt;
    if (b.shape == out) return fits_image(b.shape) ? std::optional<Slot>(Slot::Data) : std::nullopt;
    if (b.shape.size() == 4 && b.shape[0] == out[0] && b.shape[1] == out[1] && b.shape[2] == 1 && b.shape[3] == 1)
      return Slot::Flex;
    if (per_channel_or_scalar(b.shape, out)) return Slot::Other;
    return std::nullopt;
  }

  CallClass classify(const Call& c) const {
    CallClass r;
    r.slot.assign(c.inputs.size(), Slot::Other);
    const Kernel& k = p.kernels.at(size_t(c.kernel));
    if (k.op == OpKind::Reorder || c.outputs.size() != 1 || c.inputs.empty() || c.inputs[0] < 0) return r;
    const Buffer& out = buf(c.outputs[0]);
    if (!is_f32_f16(out.dtype) || !fits_image(out.shape)) return r;
    if (is_spatial(k)) {
      const Buffer& x = buf(c.inputs[0]);
      if (!is_f32_f16(x.dtype) || !fits_image(x.shape)) return r;
      r.slot[0] = Slot::Data;
    } else if (is_unary(k.op)) {
      if (k.op == OpKind::Cast || cl::unary_expr(unary_post_op(k.op, k.attrs), "x").empty()) return r;
      const Buffer& x = buf(c.inputs[0]);
      if (!is_f32_f16(x.dtype) || x.shape != out.shape) return r;
      r.slot[0] = Slot::Data;
    } else if (is_image_binary(k.op)) {
      if (c.inputs.size() < 2 || c.inputs[1] < 0) return r;
      bool any_data = false;
      for (size_t i = 0; i < 2; ++i) {
        auto s = operand_slot(buf(c.inputs[i]), out.shape);
        if (!s) return r;
        r.slot[i] = *s;
        any_data |= *s == Slot::Data;
      }
      if (!any_data) return r;
    } else if (k.op == OpKind::Concat && k.attrs.i("axis", -1) == 1) {
      if (!k.post_ops.empty()) return r;
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        if (c.inputs[i] < 0) return r;
        const Buffer& b = buf(c.inputs[i]);
        if (!is_f32_f16(b.dtype) || !fits_image(b.shape)) return r;
        r.slot[i] = Slot::Data;
      }
    } else {
      return r;
    }
    for (const PostOp& po : k.post_ops) {
      if (is_unary(po.op)) {
        if (cl::unary_expr(po, "x").empty()) return r;
        continue;
      }
      if (cl::binary_expr(po.op, "a", "b").empty()) return r;
      if (po.input < 0 || size_t(po.input) >= c.inputs.size() || c.inputs[size_t(po.input)] < 0) return r;
      auto s = operand_slot(buf(c.inputs[size_t(po.input)]), out.shape);
      if (!s) return r;
      Slot& cur = r.slot[size_t(po.input)];
      if (cur == Slot::Other || *s == Slot::Data) cur = *s;
    }
    r.capable = true;
    return r;
  }

  bool eligible(int id) const {
    const Buffer& b = buf(id);
    return b.kind == BufferKind::Intermediate && is_f32_f16(b.dtype) && b.layout == Layout::Linear &&
           fits_image(b.shape);
  }

  void make_image(Buffer& b) {
    b.layout = Layout::ImageRGBA;
    b.dtype = DType::F16;
    b.offset = -1;
    b.bytes = storage_bytes(b.dtype, b.shape, b.layout);
  }

  int reorder_kernel(const Buffer& from, const Buffer& to) {
    int& k = reorders[{from.layout, from.dtype, to.layout, to.dtype}];
    if (k == 0) {
      Kernel kr;
      auto side = [](const Buffer& b) {
        return std::string(dtype_name(b.dtype)) + (b.layout == Layout::ImageRGBA ? "_image" : "_linear");
      };
      kr.name = "reorder_" + side(from) + "_to_" + side(to);
      kr.op = OpKind::Reorder;
      k = p.add_kernel(std::move(kr)) + 1;
    }
    return k - 1;
  }

  // An unplanned Intermediate copy of buffer `like` in `layout` (images: F16; Linear: F32).
  int new_buffer(int like, Layout layout, const char* suffix) {
    Buffer b = buf(like);
    b.name += suffix;
    b.kind = BufferKind::Intermediate;
    b.offset = -1;
    if (layout == Layout::ImageRGBA) {
      make_image(b);
    } else {
      b.layout = layout;
      b.dtype = DType::F32;
      b.bytes = storage_bytes(b.dtype, b.shape, b.layout);
    }
    return p.add_buffer(std::move(b));
  }

  Call reorder_call(int from, int to, const std::string& label) {
    Call r;
    r.kernel = reorder_kernel(buf(from), buf(to));
    r.inputs = {from};
    r.outputs = {to};
    r.label = label + (buf(to).layout == Layout::ImageRGBA ? "/to_image" : "/to_linear");
    return r;
  }

  // A Reshape that reads an image and writes float Linear data (reorder family, no extra call).
  bool reshape_from_image(const Call& c) const {
    const Kernel& k = p.kernels.at(size_t(c.kernel));
    if (k.op != OpKind::Reshape || c.inputs.size() != 1 || c.outputs.size() != 1 || c.inputs[0] < 0) return false;
    const Buffer& in = buf(c.inputs[0]);
    const Buffer& out = buf(c.outputs[0]);
    return in.layout == Layout::ImageRGBA && out.layout == Layout::Linear && is_f32_f16(out.dtype) &&
           numel(in.shape) == numel(out.shape) && k.post_ops.empty();
  }

  Layout needed(size_t ci, size_t slot, const Buffer& b) const {
    if (!domain[ci]) return Layout::Linear;
    switch (cls[ci].slot[slot]) {
      case Slot::Data: return Layout::ImageRGBA;
      case Slot::Flex: {
        const Shape& out = buf(p.calls[ci].outputs[0]).shape;
        return b.layout == Layout::ImageRGBA && b.shape[0] == out[0] ? Layout::ImageRGBA : Layout::Linear;
      }
      case Slot::Other: return Layout::Linear;
    }
    return Layout::Linear;
  }

  bool run() {
    OPV_CHECK(p.target == "opencl", "layout-image: plan targets '", p.target, "', not opencl");
    // Steps 1 and 2.
    domain.assign(p.calls.size(), false);
    cls.reserve(p.calls.size());
    for (size_t ci = 0; ci < p.calls.size(); ++ci) {
      const Call& c = p.calls[ci];
      cls.push_back(classify(c));
      if (!cls.back().capable) continue;
      // Conv has no Linear kernel on this target: it joins even when it writes a plan Output.
      const Kernel& k = p.kernels[size_t(c.kernel)];
      bool join = is_spatial(k) && (eligible(c.outputs[0]) || k.op == OpKind::Conv);
      for (size_t i = 0; i < c.inputs.size(); ++i)
        if (cls.back().slot[i] != Slot::Other && buf(c.inputs[i]).layout == Layout::ImageRGBA) join = true;
      if (!join) continue;
      domain[ci] = true;
      if (eligible(c.outputs[0])) {
        make_image(p.buffers[size_t(c.outputs[0])]);
        changed = true;
      }
    }
    // Step 3.
    std::vector<Call> out;
    out.reserve(p.calls.size());
    for (size_t ci = 0; ci < p.calls.size(); ++ci) {
      Call c = p.calls[ci];
      if (p.kernels[size_t(c.kernel)].op == OpKind::Reorder || reshape_from_image(c)) {
        out.push_back(std::move(c));
        continue;
      }
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        const int id = c.inputs[i];
        if (id < 0) continue;
        const Buffer b = buf(id);  // a copy: new buffers may be added below
        if (b.layout != Layout::Linear && b.layout != Layout::ImageRGBA) continue;  // packed: not ours
        const Layout need = needed(ci, i, b);
        if (b.layout == need) continue;
        auto key = std::make_pair(id, need);
        auto it = converted.find(key);
        if (it == converted.end()) {
          const int nb = new_buffer(id, need, need == Layout::ImageRGBA ? "/image" : "/linear");
          out.push_back(reorder_call(id, nb, b.name));
          it = converted.emplace(key, nb).first;
        }
        c.inputs[i] = it->second;
        changed = true;
      }
      std::vector<Call> after;
      if (domain[ci]) {
        int& o = c.outputs[0];
        if (buf(o).layout != Layout::ImageRGBA) {
          const int t = new_buffer(o, Layout::ImageRGBA, "/image");
          after.push_back(reorder_call(t, o, c.label));
          converted[{o, Layout::ImageRGBA}] = t;
          o = t;
          changed = true;
        }
      }
      out.push_back(std::move(c));
      for (Call& a : after) out.push_back(std::move(a));
    }
    p.calls = std::move(out);
    return changed;
  }
};

}  // namespace

bool assign_image_layout(Plan& p) {
  ImagePass pass(p);
  return pass.run();
}

}  // namespace opv::plan
