// Plan pass `assign_nhwc_layout` (cpu target): store 4-D f32 activations NHWC between the ops
// that run as fast or faster on channels-last data, with explicit Reorder calls at the edges.
//   1. Classify every call. "Spatial" (Conv, MaxPool, AveragePool, GlobalAverage/MaxPool) and
//      "agnostic" (unary element-wise; binary element-wise and Concat on axis 1) calls can run in
//      NHWC; their data slots are input 0 of spatial calls, every input of the shape of the
//      output of agnostic calls, and full-shape operands of binary post-ops. Other slots of
//      these calls must be broadcast operands of per-channel ([1,C,1,1], [C,1,1]) or
//      scalar shape (layout-free), else the call is not NHWC-capable. All other ops need Linear.
//   2. In call order, a capable call joins the NHWC domain when it is spatial with a 4-D f32
//      output, or when one of its data inputs is already NHWC; then its 4-D f32 Intermediate
//      outputs whose NHWC and Linear bytes differ become NHWC.
//   3. Rewrite the call list: a slot whose buffer layout differs from what the call needs (the
//      domain layout for data slots, Linear elsewhere) reads a converted copy made by a Reorder
//      call inserted before it (one copy per buffer and layout, reused by later readers); a
//      domain-NHWC call writing a Linear buffer (a plan Output, ...) writes an NHWC temporary
//      that a Reorder after it converts. Existing Reorder calls are left alone, so the pass is
//      idempotent. Kernels used only by NHWC calls get a "_nhwc" suffix.
// Invariant: every call reads and writes each operand in the layout its kernel expects, the
// values computed are unchanged, Input/Output/Constant buffers keep their layout; new buffers
// are unplanned Intermediates (memory planning runs after this pass).
#include <map>
#include <set>

#include "core/error.h"
#include "plan/passes/passes.h"

namespace opv::plan {
namespace {

bool is_spatial(OpKind k) {
  return k == OpKind::Conv || k == OpKind::MaxPool || k == OpKind::AveragePool || k == OpKind::GlobalAveragePool ||
         k == OpKind::GlobalMaxPool;
}

// NHWC and Linear storage coincide when C == 1 or H*W == 1.
bool layout_free(const Shape& s) { return s.size() != 4 || s[1] == 1 || s[2] * s[3] == 1; }

// A broadcast operand whose bytes do not depend on the output's layout choice.
bool per_channel_or_scalar(const Shape& s, const Shape& out) {
  if (numel(s) == 1) return true;
  if (out.size() != 4 || s.size() > 4) return false;
  Shape p(4 - s.size(), 1);
  p.insert(p.end(), s.begin(), s.end());
  return p[0] == 1 && p[1] == out[1] && p[2] == 1 && p[3] == 1;
}

struct CallClass {
  bool capable = false;
  std::vector<bool> data_in;  // per input slot: follows the call's domain layout
};

struct NhwcPass {
  Plan& p;
  std::vector<CallClass> cls;
  std::vector<bool> nhwc_domain;
  std::map<std::pair<int, Layout>, int> converted;  // (buffer, layout) -> converted copy
  std::map<std::pair<Layout, DType>, int> reorder_kernels;  // kernel id + 1
  bool changed = false;

  explicit NhwcPass(Plan& plan) : p(plan) {}

  const Buffer& buf(int id) const { return p.buffers.at(size_t(id)); }

  CallClass classify(const Call& c) const {
    CallClass r;
    r.data_in.assign(c.inputs.size(), false);
    const Kernel& k = p.kernels.at(size_t(c.kernel));
    if (c.outputs.size() != 1 || c.inputs.empty() || c.inputs[0] < 0) return r;
    const Buffer& out = buf(c.outputs[0]);
    if (out.dtype != DType::F32 || out.shape.size() != 4) return r;
    std::vector<bool> allowed(c.inputs.size(), false);  // slots that are not data but layout-free
    if (is_spatial(k.op)) {
      if (buf(c.inputs[0]).shape.size() != 4) return r;
      r.data_in[0] = true;
      for (size_t i = 1; i < c.inputs.size(); ++i) allowed[i] = true;  // weights, bias
    } else if (is_unary(k.op) || is_binary(k.op) || (k.op == OpKind::Concat && k.attrs.i("axis", -1) == 1)) {
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        if (c.inputs[i] < 0) continue;
        const Buffer& b = buf(c.inputs[i]);
        if (k.op == OpKind::Concat) {
          if (b.shape.size() != 4) return r;
          r.data_in[i] = true;
        } else if (b.shape == out.shape) {
          r.data_in[i] = true;
        } else if (per_channel_or_scalar(b.shape, out.shape)) {
          allowed[i] = true;
        } else {
          return r;
        }
      }
      if (is_unary(k.op) && buf(c.inputs[0]).dtype != DType::F32) return r;
    } else {
      return r;
    }
    for (const PostOp& po : k.post_ops) {
      if (po.input < 0) continue;
      if (size_t(po.input) >= c.inputs.size() || c.inputs[size_t(po.input)] < 0) return r;
      const Buffer& b = buf(c.inputs[size_t(po.input)]);
      if (b.shape == out.shape) {
        r.data_in[size_t(po.input)] = true;
      } else if (per_channel_or_scalar(b.shape, out.shape)) {
        if (!r.data_in[size_t(po.input)]) allowed[size_t(po.input)] = true;
      } else {
        return r;
      }
    }
    r.capable = true;
    return r;
  }

  bool eligible(int id) const {
    const Buffer& b = buf(id);
    return b.kind == BufferKind::Intermediate && b.dtype == DType::F32 && b.layout == Layout::Linear &&
           !layout_free(b.shape);
  }

  int reorder_kernel(Layout to, DType dt) {
    int& k = reorder_kernels[{to, dt}];
    if (k == 0) {
      Kernel kr;
      kr.name = std::string(to == Layout::NHWC ? "reorder_nchw_to_nhwc_" : "reorder_nhwc_to_nchw_") + dtype_name(dt);
      kr.op = OpKind::Reorder;
      k = p.add_kernel(std::move(kr)) + 1;
    }
    return k - 1;
  }

  int new_buffer(int like, Layout layout, const char* suffix) {
    Buffer b = buf(like);
    b.name += suffix;
    b.kind = BufferKind::Intermediate;
    b.layout = layout;
    b.offset = -1;
    b.bytes = storage_bytes(b.dtype, b.shape, layout);
    return p.add_buffer(std::move(b));
  }

  Call reorder_call(int from, int to, Layout layout, const std::string& label) {
    Call r;
    r.kernel = reorder_kernel(layout, buf(from).dtype);
    r.inputs = {from};
    r.outputs = {to};
    r.label = label + (layout == Layout::NHWC ? "/to_nhwc" : "/to_nchw");
    return r;
  }

  bool run() {
    // Steps 1 and 2: classify and assign layouts in call order.
    cls.reserve(p.calls.size());
    nhwc_domain.assign(p.calls.size(), false);
    for (size_t ci = 0; ci < p.calls.size(); ++ci) {
      const Call& c = p.calls[ci];
      cls.push_back(classify(c));
      if (!cls.back().capable) continue;
      bool join = is_spatial(p.kernels[size_t(c.kernel)].op) && eligible(c.outputs[0]);
      for (size_t i = 0; i < c.inputs.size(); ++i)
        if (cls.back().data_in[i] && buf(c.inputs[i]).layout == Layout::NHWC) join = true;
      if (!join) continue;
      nhwc_domain[ci] = true;
      for (int o : c.outputs)
        if (eligible(o)) {
          p.buffers[size_t(o)].layout = Layout::NHWC;
          p.buffers[size_t(o)].bytes = storage_bytes(DType::F32, p.buffers[size_t(o)].shape, Layout::NHWC);
          changed = true;
        }
    }
    // Step 3: make every slot agree with its call.
    std::vector<Call> out;
    out.reserve(p.calls.size());
    std::set<int> nhwc_kernels, linear_kernels;
    for (size_t ci = 0; ci < p.calls.size(); ++ci) {
      Call c = p.calls[ci];
      if (p.kernels[size_t(c.kernel)].op == OpKind::Reorder) {  // converts on purpose
        out.push_back(std::move(c));
        continue;
      }
      const Layout dom = nhwc_domain[ci] ? Layout::NHWC : Layout::Linear;
      (nhwc_domain[ci] ? nhwc_kernels : linear_kernels).insert(c.kernel);
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        const int id = c.inputs[i];
        if (id < 0) continue;
        const Buffer b = buf(id);  // a copy: new buffers may be added below
        const Layout need = cls[ci].capable && cls[ci].data_in[i] ? dom : Layout::Linear;
        if (b.layout == need || layout_free(b.shape) || (b.layout != Layout::NHWC && need == Layout::Linear)) continue;
        if (b.layout != Layout::Linear && b.layout != Layout::NHWC) continue;  // packed formats are not ours
        auto key = std::make_pair(id, need);
        auto it = converted.find(key);
        if (it == converted.end()) {
          const int nb = new_buffer(id, need, need == Layout::NHWC ? "/nhwc" : "/nchw");
          out.push_back(reorder_call(id, nb, need, b.name));
          it = converted.emplace(key, nb).first;
        }
        c.inputs[i] = it->second;
        changed = true;
      }
      std::vector<Call> after;
      if (dom == Layout::NHWC) {
        for (int& o : c.outputs) {
          const Buffer& b = buf(o);
          if (b.layout == Layout::NHWC || layout_free(b.shape) || b.dtype != DType::F32) continue;
          const int t = new_buffer(o, Layout::NHWC, "/nhwc");
          after.push_back(reorder_call(t, o, Layout::Linear, c.label));
          converted[{o, Layout::NHWC}] = t;
          o = t;
          changed = true;
        }
      }
      out.push_back(std::move(c));
      for (Call& a : after) out.push_back(std::move(a));
    }
    p.calls = std::move(out);
    for (int k : nhwc_kernels) {
      Kernel& kr = p.kernels[size_t(k)];
      if (!linear_kernels.count(k) && kr.op != OpKind::Reorder && !kr.name.ends_with("_nhwc")) kr.name += "_nhwc";
    }
    return changed;
  }
};

}  // namespace

bool assign_nhwc_layout(Plan& p) {
  NhwcPass pass(p);
  return pass.run();
}

}  // namespace opv::plan
