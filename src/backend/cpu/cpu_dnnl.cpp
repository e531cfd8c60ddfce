// oneDNN steps of the cpu backend: Conv, Gemm, MatMul, pooling, unary element-wise ops and
// Reorder. For each call:
//   1. describe the activations in their plan layout (nchw / nhwc tags, plain strides
//      otherwise) and let oneDNN choose the weight format (`any`);
//   2. map the kernel's leading post-ops to oneDNN attr post-ops (eltwise, binary with a
//      broadcast operand, `sum` when a residual operand is the destination itself);
//   3. create the primitive; when oneDNN cannot fuse the post-ops (or only with a reference
//      implementation) retry without them and leave them to the generic post-op step;
//   4. reorder constant weights into the chosen format and allocate the scratchpad, once.
// The returned closure only executes primitives on pointers fixed at load. Grouped convs with
// a channel multiplier run as a channel repeat into scratch + a depthwise conv (see below).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"

namespace opv::backend::cpu {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

memory::dims to_dims(const Shape& s) { return memory::dims(s.begin(), s.end()); }

// Descriptor of an F32 buffer over its logical shape (optionally padded with leading 1s); with
// `type`, of a copy in that type with the same element strides.
memory::desc md_of(const BufView& b, const Shape& logical, dt type = dt::f32) {
  std::vector<int64_t> st;
  if (logical == b.shape) {
    st = logical_strides(b.shape, b.layout);
  } else {
    st = row_major_strides(logical);  // padded/reshaped views are row-major
  }
  return memory::desc(to_dims(logical), type, memory::dims(st.begin(), st.end()));
}
memory::desc md_of(const BufView& b, dt type = dt::f32) { return md_of(b, b.shape, type); }
// A 4-D buffer whose NHWC and Linear bytes coincide is described in the layout of the
// primitive's other activation, so oneDNN sees one format (mixed formats fall to `ref`).
memory::desc md_like(const BufView& b, const BufView& other, dt type = dt::f32) {
  if (!plan::channels_trivial(b.shape) || b.shape.size() != 4 || other.shape.size() != 4) return md_of(b, type);
  BufView v = b;
  v.layout = plan::channels_trivial(other.shape) ? plan::Layout::Linear : other.layout;
  return md_of(v, type);
}

std::optional<std::pair<algorithm, std::pair<float, float>>> eltwise_of(OpKind op, float a, float b) {
  using R = std::pair<algorithm, std::pair<float, float>>;
  switch (op) {
    case OpKind::Identity: return R{algorithm::eltwise_linear, {1.f, 0.f}};
    case OpKind::Relu: return R{algorithm::eltwise_relu, {0.f, 0.f}};
    case OpKind::LeakyRelu: return R{algorithm::eltwise_relu, {a, 0.f}};
    case OpKind::Elu: return R{algorithm::eltwise_elu, {a, 0.f}};
    case OpKind::Sigmoid: return R{algorithm::eltwise_logistic, {0.f, 0.f}};
    case OpKind::Tanh: return R{algorithm::eltwise_tanh, {0.f, 0.f}};
    case OpKind::Gelu: return R{algorithm::eltwise_gelu_erf, {0.f, 0.f}};
    case OpKind::GeluTanh: return R{algorithm::eltwise_gelu_tanh, {0.f, 0.f}};
    case OpKind::Softplus: return R{algorithm::eltwise_soft_relu, {0.f, 0.f}};
    case OpKind::HardSwish: return R{algorithm::eltwise_hardswish, {0.f, 0.f}};
    case OpKind::Clip: return R{algorithm::eltwise_clip_v2, {a, b}};
    case OpKind::Exp: return R{algorithm::eltwise_exp, {0.f, 0.f}};
    case OpKind::Log: return R{algorithm::eltwise_log, {0.f, 0.f}};
    case OpKind::Abs: return R{algorithm::eltwise_abs, {0.f, 0.f}};
    case OpKind::Sqrt: return R{algorithm::eltwise_sqrt, {0.f, 0.f}};
    case OpKind::Neg: return R{algorithm::eltwise_linear, {-1.f, 0.f}};
    case OpKind::Reciprocal: return R{algorithm::eltwise_pow, {1.f, -1.f}};
    default: return std::nullopt;
  }
}

std::optional<algorithm> binary_of(OpKind op, bool swapped) {
  switch (op) {
    case OpKind::Add: return algorithm::binary_add;
    case OpKind::Mul: return algorithm::binary_mul;
    case OpKind::Max: return algorithm::binary_max;
    case OpKind::Min: return algorithm::binary_min;
    case OpKind::Sub: return swapped ? std::nullopt : std::optional(algorithm::binary_sub);
    case OpKind::Div: return swapped ? std::nullopt : std::optional(algorithm::binary_div);
    default: return std::nullopt;
  }
}

bool overlaps(const BufView& a, const BufView& b) {
  auto* a0 = static_cast<const char*>(a.ptr);
  auto* b0 = static_cast<const char*>(b.ptr);
  return a0 < b0 + b.bytes && b0 < a0 + a.bytes;
}

// Operands bound at execution: (arg id, memory).
using Args = std::unordered_map<int, memory>;

// A leading-post-op chain mapped onto oneDNN.
struct MappedPostOps {
  dnnl::post_ops ops;
  Args args;
  size_t count = 0;         // kernel post-ops covered
  size_t first_binary = 0;  // index of the first binary/sum post-op (== count when none)
  std::vector<StepFn> pre;  // copies of operands that alias the destination, run before it
  std::function<MappedPostOps(size_t)> remap;  // the same mapping limited to a prefix
};

// Maps post-ops [0, n) of `list` where possible; `pre` are extra leading binary operands (Gemm C).
// `dst_logical` is the shape the primitive's dst md uses (operands are right-aligned to it).
MappedPostOps map_post_ops(CallCtx& c, const std::vector<PostOp>& list, const BufView& dst, const Shape& dst_logical,
                           size_t limit = SIZE_MAX) {
  MappedPostOps m;
  m.remap = [&c, list, dst, dst_logical](size_t lim) { return map_post_ops(c, list, dst, dst_logical, lim); };
  int idx = 0;
  m.first_binary = SIZE_MAX;
  for (const PostOp& p : list) {
    if (m.count >= limit) break;
    if (is_unary(p.op)) {
      auto e = eltwise_of(p.op, p.alpha, p.beta);
      if (!e) break;
      m.ops.append_eltwise(1.f, e->first, e->second.first, e->second.second);
    } else {
      auto alg = binary_of(p.op, p.swapped);
      if (!alg || p.input < 0 || size_t(p.input) >= c.ins.size()) break;
      const BufView& o = c.ins[size_t(p.input)];
      if (!o.present() || o.dtype != DType::F32 || o.shape.size() > dst_logical.size()) break;
      Shape padded(dst_logical.size() - o.shape.size(), 1);
      padded.insert(padded.end(), o.shape.begin(), o.shape.end());
      bool ok = true;
      for (size_t d = 0; d < padded.size(); ++d) ok = ok && (padded[d] == 1 || padded[d] == dst_logical[d]);
      if (!ok) break;
      const bool exact_alias = o.ptr == dst.ptr && o.shape == dst.shape && o.layout == dst.layout;
      if (overlaps(o, dst) && p.op == OpKind::Add && exact_alias && idx == 0) {
        // The residual lives in the destination: oneDNN's `sum` adds the old contents (oneDNN
        // implementations take `sum` first in the chain only).
        m.ops.append_sum(1.f);
      } else if (overlaps(o, dst)) {
        // Any other operand in the destination's bytes is copied aside before the primitive.
        auto copy = std::make_shared<std::vector<char>>(size_t(o.bytes));
        BufView oc = o;
        oc.ptr = copy->data();
        memory::desc md = (padded == dst_logical && o.shape == dst.shape) ? md_of(oc) : md_of(oc, padded);
        m.ops.append_binary(*alg, md);
        m.args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) | DNNL_ARG_SRC_1] = memory(md, c.eng, oc.ptr);
        m.pre.push_back([copy, src = o.ptr] { std::memcpy(copy->data(), src, copy->size()); });
      } else {
        // NHWC operands of the full shape keep their layout; broadcast ones are row-major.
        memory::desc md = (padded == dst_logical && o.shape == dst.shape) ? md_of(o) : md_of(o, padded);
        m.ops.append_binary(*alg, md);
        m.args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) | DNNL_ARG_SRC_1] = memory(md, c.eng, o.ptr);
      }
    }
    if (!is_unary(p.op)) m.first_binary = std::min(m.first_binary, m.count);
    ++idx;
    ++m.count;
  }
  m.first_binary = std::min(m.first_binary, m.count);
  return m;
}

bool all_f32(const CallCtx& c) {
  for (const auto& b : c.ins)
    if (b.present() && b.dtype != DType::F32) return false;
  for (const auto& b : c.outs)
    if (b.dtype != DType::F32) return false;
  return true;
}

// Creates a primitive descriptor with as many mapped post-ops as oneDNN runs well: all of
// them, else the element-wise prefix, else none (the rest go to the generic post-op step).
// A candidate is refused when oneDNN would run it in a reference implementation, or when it
// is the gemm-based convolution on nhwc data with binary post-ops: oneDNN 2.6.3 computes
// wrong values there (found by cpu_ops_test ConvRandomConfigs [nhwc]: 1x1, stride 2, pads).
template <typename PD, typename Desc>
PD make_pd(CallCtx& c, const Desc& desc, float oscale, MappedPostOps& m, size_t& done, bool nhwc_dst = false) {
  auto attempt = [&](const MappedPostOps& mm) -> std::optional<PD> {
    dnnl::primitive_attr attr;  // fresh each time: attr handles are shared on copy
    if (oscale != 1.f) attr.set_output_scales(0, {oscale});
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (mm.count > 0) attr.set_post_ops(mm.ops);
    try {
      return PD(desc, attr, c.eng);
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  };
  std::vector<size_t> limits{m.count};
  if (m.first_binary < m.count && m.first_binary > 0) limits.push_back(m.first_binary);
  if (m.count > 0) limits.push_back(0);
  std::optional<PD> fallback;
  MappedPostOps fallback_m;
  for (size_t li = 0; li < limits.size(); ++li) {
    const size_t lim = limits[li];
    MappedPostOps mm = lim == m.count ? m : (lim == 0 ? MappedPostOps{} : m.remap(lim));
    auto pd = attempt(mm);
    if (!pd) continue;
    const std::string impl = pd->impl_info_str();
    const bool is_ref = impl.rfind("ref", 0) == 0;
    if (nhwc_dst && impl.find("gemm") != std::string::npos && mm.first_binary < mm.count) continue;  // never: wrong values
    if (is_ref && lim > 0) {
      if (!fallback) fallback = pd, fallback_m = mm;
      continue;
    }
    m = std::move(mm);
    done = lim;
    return *pd;
  }
  if (fallback) {
    done = fallback_m.count;
    m = std::move(fallback_m);
    return *fallback;
  }
  fail(c.where(), ": oneDNN has no implementation for this configuration");
}

// Wraps a primitive and its bound memories into a step.
StepFn finish(CallCtx& c, dnnl::primitive prim, Args args, const memory::desc& scratch_md) {
  if (scratch_md.get_size() > 0) args[DNNL_ARG_SCRATCHPAD] = memory(scratch_md, c.eng);
  auto strm = c.strm;
  return [prim = std::move(prim), args = std::move(args), strm]() mutable { prim.execute(strm, args); };
}

// Weights: reorders a user-format weight into the primitive's format; constants once at load,
// other buffers at every run (the returned pre-step is then non-empty).
memory prepare_weights(CallCtx& c, const memory::desc& user_md, void* user_ptr, bool is_const,
                       const memory::desc& want, StepFn& pre) {
  memory user(user_md, c.eng, user_ptr);
  if (user_md == want) return user;
  memory packed(want, c.eng);
  dnnl::reorder r(user, packed);
  if (is_const) {
    r.execute(c.strm, user, packed);
    c.strm.wait();
  } else {
    auto strm = c.strm;
    pre = [r, user, packed, strm]() mutable { r.execute(strm, user, packed); };
  }
  return packed;
}

StepFn chain(StepFn pre, StepFn main) {
  if (!pre) return main;
  return [pre = std::move(pre), main = std::move(main)] {
    pre();
    main();
  };
}

// Runs the operand copies of a mapped chain before `main`.
StepFn with_copies(std::vector<StepFn> copies, StepFn main) {
  for (auto it = copies.rbegin(); it != copies.rend(); ++it) main = chain(std::move(*it), std::move(main));
  return main;
}

// Geometry of a 2-D convolution call, checked once.
struct ConvGeom {
  int64_t g, M, Cg, kh, kw;
  std::vector<int64_t> strides, pads, dil;
};

ConvGeom conv_geom(const CallCtx& c) {
  const BufView &x = c.ins[0], &w = c.ins[1];
  const Attrs& a = c.kernel.attrs;
  ConvGeom q{a.i("group", 1), w.shape[0], w.shape[1], w.shape[2], w.shape[3],
             a.ints("strides", {1, 1}), a.ints("pads", {0, 0, 0, 0}), a.ints("dilations", {1, 1})};
  OPV_CHECK(q.g >= 1 && q.M % q.g == 0 && x.shape[1] == q.Cg * q.g, c.where(), ": weight ", shape_str(w.shape),
            " does not match input ", shape_str(x.shape), " with group ", q.g);
  OPV_CHECK(q.strides.size() == 2 && q.pads.size() == 4 && q.dil.size() == 2, c.where(),
            ": bad strides/pads/dilations");
  return q;
}

// The oneDNN descriptor of a convolution with geometry `q` over the given memory descriptors.
dnnl::convolution_forward::desc conv_desc(const ConvGeom& q, const memory::desc& src, const memory::desc& w,
                                          const memory::desc& bias, const memory::desc& dst) {
  return {dnnl::prop_kind::forward_inference, algorithm::convolution_direct, src, w, bias, dst,
          {q.strides[0], q.strides[1]}, {q.dil[0] - 1, q.dil[1] - 1}, {q.pads[0], q.pads[1]},
          {q.pads[2], q.pads[3]}};
}

// Options::cpu_bf16: a dense convolution over at least this many input channels reads a bf16 copy
// of its input (one reorder per run into the shared scratch) and bf16 weights (packed once) and
// accumulates in fp32 into its fp32 output with all its post-ops. Fewer channels stay fp32: the
// input copy then costs more than the bf16 kernel saves (measured with AMX: a 64-channel 1x1 conv
// 0.79 ms fp32 vs 1.08 ms bf16 + copy; the fixture's 24-channel 3x3 stem 0.91 vs 0.98 ms).
constexpr int64_t kBf16MinChannels = 128;

// The bf16 form of conv_primitive (see kBf16MinChannels), or an empty step where oneDNN has no
// native bf16 kernel for it (its implementation name must say bf16; no reference kernels).
StepFn conv_primitive_bf16(CallCtx& c, size_t& done, const BufView& x, const BufView& y, const ConvGeom& q) {
  const BufView& w = c.ins[1];
  if (!c.bf16 || q.g != 1 || q.Cg < kBf16MinChannels) return {};
  const memory::desc src_f32 = md_like(x, y), src = md_like(x, y, dt::bf16), dst = md_like(y, x);
  const memory::dims wdims{q.M, q.Cg, q.kh, q.kw};
  const memory::desc w_user(wdims, dt::f32, tag::oihw), w_any(wdims, dt::bf16, tag::any);
  const bool has_bias = c.ins.size() > 2 && c.ins[2].present();
  const memory::desc bias_md = has_bias ? memory::desc({q.M}, dt::f32, tag::a) : memory::desc();
  using CF = dnnl::convolution_forward;
  const CF::desc d = conv_desc(q, src, w_any, bias_md, dst);
  MappedPostOps m = map_post_ops(c, c.kernel.post_ops, y, y.shape);
  const bool nhwc_dst = y.layout == plan::Layout::NHWC && !plan::channels_trivial(y.shape);
  size_t got = 0;
  std::optional<CF::primitive_desc> pd;
  try {
    pd = make_pd<CF::primitive_desc>(c, d, 1.f, m, got, nhwc_dst);
  } catch (const Error&) {
    return {};
  }
  const std::string impl = pd->impl_info_str();
  if (impl.find("bf16") == std::string::npos || impl.rfind("ref", 0) == 0) return {};
  if (pd->src_desc() != src || pd->dst_desc() != dst) return {};
  done = got;
  c.used_bf16 = true;

  StepFn pre;
  Args args = std::move(m.args);
  memory x_f32(src_f32, c.eng, x.ptr);
  memory x_b16(src, c.eng, DNNL_MEMORY_NONE);  // bound to the shared scratch at run
  c.bf16->bytes = std::max(c.bf16->bytes, src.get_size());
  args[DNNL_ARG_SRC] = x_b16;
  args[DNNL_ARG_WEIGHTS] = prepare_weights(c, w_user, w.ptr, w.is_const(), pd->weights_desc(), pre);
  if (has_bias) args[DNNL_ARG_BIAS] = memory(bias_md, c.eng, c.ins[2].ptr);
  args[DNNL_ARG_DST] = memory(pd->dst_desc(), c.eng, y.ptr);
  auto strm = c.strm;
  StepFn to_bf16 = [r = dnnl::reorder(x_f32, x_b16), x_f32, x_b16, scratch = c.bf16, strm]() mutable {
    x_b16.set_data_handle(scratch->ptr.get());
    r.execute(strm, x_f32, x_b16);
  };
  StepFn conv = finish(c, CF(*pd), std::move(args), pd->scratchpad_desc());
  return with_copies(std::move(m.pre), chain(std::move(to_bf16), chain(std::move(pre), std::move(conv))));
}

// The convolution primitive from `x` to `y` (the call's buffers, or the channel-multiplier
// scratch) with `g` groups of the call's weights. With `want_dw`, returns an empty step unless
// oneDNN picks a depthwise implementation.
StepFn conv_primitive(CallCtx& c, size_t& done, const BufView& x, const BufView& y, const ConvGeom& q, int64_t g,
                      bool want_dw) {
  const BufView& w = c.ins[1];
  const int64_t M = q.M, Cg = x.shape[1] / g;
  memory::desc src = md_like(x, y), dst = md_like(y, x);
  memory::dims wdims = g == 1 ? memory::dims{M, Cg, q.kh, q.kw} : memory::dims{g, M / g, Cg, q.kh, q.kw};
  memory::desc w_user(wdims, dt::f32, g == 1 ? tag::oihw : tag::goihw);
  memory::desc w_any(wdims, dt::f32, tag::any);
  const bool has_bias = c.ins.size() > 2 && c.ins[2].present();
  memory::desc bias_md = has_bias ? memory::desc({M}, dt::f32, tag::a) : memory::desc();
  using CF = dnnl::convolution_forward;
  const CF::desc d = conv_desc(q, src, w_any, bias_md, dst);
  MappedPostOps m = map_post_ops(c, c.kernel.post_ops, y, y.shape);
  const bool nhwc_dst = y.layout == plan::Layout::NHWC && !plan::channels_trivial(y.shape);
  size_t got = 0;
  CF::primitive_desc pd = make_pd<CF::primitive_desc>(c, d, 1.f, m, got, nhwc_dst);
  if (want_dw && std::string(pd.impl_info_str()).find("dw") == std::string::npos) return {};
  done = got;

  StepFn pre;
  Args args = std::move(m.args);
  args[DNNL_ARG_SRC] = memory(pd.src_desc(), c.eng, x.ptr);
  args[DNNL_ARG_WEIGHTS] = prepare_weights(c, w_user, w.ptr, w.is_const(), pd.weights_desc(), pre);
  if (has_bias) args[DNNL_ARG_BIAS] = memory(bias_md, c.eng, c.ins[2].ptr);
  args[DNNL_ARG_DST] = memory(pd.dst_desc(), c.eng, y.ptr);
  OPV_ASSERT(pd.src_desc() == src && pd.dst_desc() == dst);
  return with_copies(std::move(m.pre), chain(std::move(pre), finish(c, CF(pd), std::move(args), pd.scratchpad_desc())));
}

// o[c*mult + j] = s[c*cs] for j < mult; MU > 0 fixes mult at compile time so the loop
// vectorises (about 10x faster than the runtime-mult loop).
template <int64_t MU>
void repeat_row(const float* s, int64_t cs, float* o, int64_t C, int64_t mult) {
  const int64_t mu = MU > 0 ? MU : mult;
  if (cs == 1) {
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t j = 0; j < mu; ++j) o[ch * mu + j] = s[ch];
  } else {
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t j = 0; j < mu; ++j) o[ch * mu + j] = s[ch * cs];
  }
}

template <int64_t MU>
struct RepeatRow {  // a functor, so the pixel loop inlines the row
  void operator()(const float* s, int64_t cs, float* o, int64_t C, int64_t mult) const {
    repeat_row<MU>(s, cs, o, C, mult);
  }
};

struct FreeFloats {
  void operator()(float* p) const { std::free(p); }
};
std::shared_ptr<float> alloc_scratch(const CallCtx& c, const Shape& shape, int64_t& bytes) {
  bytes = plan::align_up(numel(shape) * int64_t(sizeof(float)));
  std::shared_ptr<float> p(static_cast<float*>(std::aligned_alloc(size_t(plan::kAlign), size_t(bytes))), FreeFloats{});
  OPV_CHECK(p, c.where(), ": out of memory allocating ", bytes, " bytes of conv scratch");
  return p;
}

// Grouped convolution with a channel multiplier (group == C_in, C_out == mult * C_in, mult > 1):
// oneDNN runs it in its generic grouped kernel (jit grouped on nhwc, gemm:jit on nchw), several
// times slower than its depthwise ones. ONNX's output channel o reads input channel o / mult,
// so repeating every input channel mult times into a scratch buffer (rep channel c*mult+j =
// input channel c) turns it into a depthwise convolution with C_out groups over the same
// weights: brdgmm_dw / jit_dw. Those take nhwc activations only, so the scratch is always nhwc;
// a Linear input is transposed by the same repeat loop, and a Linear output is produced in an
// nhwc scratch then reordered (post-ops oneDNN does not fuse there run after, on the output).
// Scratch is allocated here, at load; returns an empty step when oneDNN has no depthwise
// implementation for the configuration (the caller keeps the grouped path).
StepFn build_conv_channel_multiplier(CallCtx& c, size_t& done, const ConvGeom& q) {
  const BufView &x = c.ins[0], &y = c.outs[0];
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3], mult = q.M / q.g;
  BufView xr = x;
  xr.shape = {N, q.M, H, W};
  xr.layout = plan::Layout::NHWC;
  xr.kind = plan::BufferKind::Intermediate;
  std::shared_ptr<float> rep = alloc_scratch(c, xr.shape, xr.bytes);
  xr.ptr = rep.get();
  // A Linear output (unless its bytes are the same in nhwc) goes through an nhwc scratch.
  const bool y_via_scratch = y.layout != plan::Layout::NHWC && !plan::channels_trivial(y.shape);
  BufView yr = y;
  std::shared_ptr<float> yscratch;
  if (y_via_scratch) {
    yr.layout = plan::Layout::NHWC;
    yr.kind = plan::BufferKind::Intermediate;
    yscratch = alloc_scratch(c, yr.shape, yr.bytes);
    yr.ptr = yscratch.get();
  }
  StepFn conv;
  try {
    conv = conv_primitive(c, done, xr, yr, q, q.M, true);
  } catch (const std::exception&) {
    return {};
  }
  if (!conv) return {};
  if (y_via_scratch) {
    memory from(md_of(yr), c.eng, yr.ptr), to(md_of(y), c.eng, y.ptr);
    dnnl::reorder r(from, to);
    auto strm = c.strm;
    conv = chain(std::move(conv), [r, from, to, strm]() mutable { r.execute(strm, from, to); });
  }

  const std::vector<int64_t> xs = logical_strides(x.shape, x.layout), rs = logical_strides(xr.shape, xr.layout);
  OPV_ASSERT(rs[1] == 1);
  const float* src = static_cast<const float*>(x.ptr);
  // Pixel by pixel: the C input values (strided by xs[1]) become C*mult contiguous values.
  auto pixels = [=, r = rep.get()](auto row) {
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          row(src + n * xs[0] + h * xs[2] + w * xs[3], xs[1], r + n * rs[0] + h * rs[2] + w * rs[3], C, mult);
  };
  StepFn repeat;
  switch (mult) {
    case 2: repeat = [pixels] { pixels(RepeatRow<2>{}); }; break;
    case 3: repeat = [pixels] { pixels(RepeatRow<3>{}); }; break;
    case 4: repeat = [pixels] { pixels(RepeatRow<4>{}); }; break;
    default: repeat = [pixels] { pixels(RepeatRow<0>{}); }; break;
  }
  return [repeat = std::move(repeat), conv = std::move(conv), rep, yscratch] {
    repeat();
    conv();
  };
}

StepFn build_conv(CallCtx& c, size_t& done) {
  if (!all_f32(c) || c.ins.size() < 2) return {};
  const BufView &x = c.ins[0], &w = c.ins[1], &y = c.outs[0];
  if (x.shape.size() != 4 || w.shape.size() != 4 || y.shape.size() != 4) return {};
  const ConvGeom q = conv_geom(c);
  if (q.g > 1 && q.Cg == 1 && q.M > q.g) {
    if (StepFn s = build_conv_channel_multiplier(c, done, q)) return s;
  }
  if (StepFn s = conv_primitive_bf16(c, done, x, y, q)) return s;
  return conv_primitive(c, done, x, y, q, q.g, false);
}

// Gemm: y = alpha * A' * B' + beta * C, all 2-D row-major.
StepFn build_gemm(CallCtx& c, size_t& done) {
  if (!all_f32(c) || c.ins.size() < 2) return {};
  const BufView &A = c.ins[0], &B = c.ins[1], &y = c.outs[0];
  if (A.shape.size() != 2 || B.shape.size() != 2 || y.shape.size() != 2 || y.layout != plan::Layout::Linear) return {};
  const Attrs& at = c.kernel.attrs;
  const bool ta = at.i("transA", 0) != 0, tb = at.i("transB", 0) != 0;
  const float alpha = float(at.f("alpha", 1.0)), beta = float(at.f("beta", 1.0));
  const int64_t M = ta ? A.shape[1] : A.shape[0], K = ta ? A.shape[0] : A.shape[1];
  const int64_t N = tb ? B.shape[0] : B.shape[1];
  OPV_CHECK((tb ? B.shape[1] : B.shape[0]) == K && y.shape == Shape({M, N}), c.where(), ": shapes A",
            shape_str(A.shape), " B", shape_str(B.shape), " y", shape_str(y.shape), " do not match");
  memory::desc src({M, K}, dt::f32, ta ? memory::dims{1, M} : memory::dims{K, 1});
  memory::desc w_user({K, N}, dt::f32, tb ? memory::dims{1, K} : memory::dims{N, 1});
  memory::desc w_want = B.is_const() ? memory::desc({K, N}, dt::f32, tag::any) : w_user;
  memory::desc dst({M, N}, dt::f32, tag::ab);

  const BufView* C = c.ins.size() > 2 && c.ins[2].present() && beta != 0.f ? &c.ins[2] : nullptr;
  memory::desc bias_md;
  std::vector<PostOp> list = c.kernel.post_ops;
  std::shared_ptr<std::vector<float>> scaled_c;  // beta * C for a constant C
  const BufView* c_operand = nullptr;
  BufView c_scaled_view;
  if (C) {
    if (C->shape.size() > 2) return {};
    Shape cp(2 - C->shape.size(), 1);
    cp.insert(cp.end(), C->shape.begin(), C->shape.end());
    if (!((cp[0] == 1 || cp[0] == M) && (cp[1] == 1 || cp[1] == N))) return {};
    if (alpha == 1.f && beta == 1.f && cp[0] == 1 && cp[1] == N) {
      bias_md = memory::desc({1, N}, dt::f32, tag::ab);
    } else if (beta == 1.f) {
      c_operand = C;
    } else if (C->is_const()) {
      scaled_c = std::make_shared<std::vector<float>>(size_t(numel(C->shape)));
      const float* src_c = static_cast<const float*>(C->ptr);
      for (size_t i = 0; i < scaled_c->size(); ++i) (*scaled_c)[i] = beta * src_c[i];
      c_scaled_view = *C;
      c_scaled_view.ptr = scaled_c->data();
      c_scaled_view.kind = plan::BufferKind::Constant;
      c_operand = &c_scaled_view;
    } else {
      return {};
    }
  }
  // C as a leading binary add post-op: give it a pseudo input slot past the real inputs.
  CallCtx cc = c;
  if (c_operand) {
    cc.ins.push_back(*c_operand);
    PostOp add;
    add.op = OpKind::Add;
    add.input = int(cc.ins.size()) - 1;
    list.insert(list.begin(), add);
  }
  MappedPostOps m = map_post_ops(cc, list, y, y.shape);
  if (c_operand && m.count == 0) return {};
  dnnl::matmul::desc d = bias_md.get_size() ? dnnl::matmul::desc(src, w_want, bias_md, dst)
                                            : dnnl::matmul::desc(src, w_want, dst);
  size_t got = 0;
  dnnl::matmul::primitive_desc pd = make_pd<dnnl::matmul::primitive_desc>(cc, d, alpha, m, got);
  if (c_operand && got == 0) return {};
  done = c_operand ? got - 1 : got;

  StepFn pre;
  Args args = std::move(m.args);
  args[DNNL_ARG_SRC] = memory(src, c.eng, A.ptr);
  args[DNNL_ARG_WEIGHTS] = prepare_weights(c, w_user, B.ptr, B.is_const(), pd.weights_desc(), pre);
  if (bias_md.get_size()) args[DNNL_ARG_BIAS] = memory(bias_md, c.eng, C->ptr);
  args[DNNL_ARG_DST] = memory(dst, c.eng, y.ptr);
  StepFn main = finish(c, dnnl::matmul(pd), std::move(args), pd.scratchpad_desc());
  if (scaled_c) main = [main = std::move(main), keep = scaled_c] { main(); };
  return with_copies(std::move(m.pre), chain(std::move(pre), std::move(main)));
}

// MatMul: numpy semantics; 1-D operands are promoted, batch dims broadcast.
StepFn build_matmul(CallCtx& c, size_t& done) {
  if (!all_f32(c) || c.ins.size() != 2) return {};
  const BufView &A = c.ins[0], &B = c.ins[1], &y = c.outs[0];
  if (A.layout != plan::Layout::Linear || B.layout != plan::Layout::Linear || y.layout != plan::Layout::Linear) return {};
  Shape as = A.shape, bs = B.shape;
  if (as.empty() || bs.empty()) return {};
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const size_t r = std::max(as.size(), bs.size());
  if (r > 6) return {};
  as.insert(as.begin(), r - as.size(), 1);
  bs.insert(bs.begin(), r - bs.size(), 1);
  Shape ys(r);
  for (size_t d = 0; d + 2 < r; ++d) {
    if (as[d] != bs[d] && as[d] != 1 && bs[d] != 1) return {};
    ys[d] = std::max(as[d], bs[d]);
  }
  ys[r - 2] = as[r - 2];
  ys[r - 1] = bs[r - 1];
  if (numel(ys) != numel(y.shape) || as[r - 1] != bs[r - 2]) return {};
  auto ast = row_major_strides(as);
  memory::desc src(to_dims(as), dt::f32, memory::dims(ast.begin(), ast.end()));
  auto bst = row_major_strides(bs);
  memory::desc w_user(to_dims(bs), dt::f32, memory::dims(bst.begin(), bst.end()));
  memory::desc w_want = (B.is_const() && r == 2) ? memory::desc(to_dims(bs), dt::f32, tag::any) : w_user;
  auto yst = row_major_strides(ys);
  memory::desc dst(to_dims(ys), dt::f32, memory::dims(yst.begin(), yst.end()));
  MappedPostOps m = map_post_ops(c, c.kernel.post_ops, y, ys);
  dnnl::matmul::primitive_desc pd;
  try {
    dnnl::matmul::desc d(src, w_want, dst);
    pd = make_pd<dnnl::matmul::primitive_desc>(c, d, 1.f, m, done);
  } catch (const std::exception&) {
    return {};  // e.g. a broadcast pattern oneDNN does not take: the reference covers it
  }
  StepFn pre;
  Args args = std::move(m.args);
  args[DNNL_ARG_SRC] = memory(src, c.eng, A.ptr);
  args[DNNL_ARG_WEIGHTS] = prepare_weights(c, w_user, B.ptr, B.is_const(), pd.weights_desc(), pre);
  args[DNNL_ARG_DST] = memory(dst, c.eng, y.ptr);
  return with_copies(std::move(m.pre),
                     chain(std::move(pre), finish(c, dnnl::matmul(pd), std::move(args), pd.scratchpad_desc())));
}

StepFn build_pool(CallCtx& c, size_t& done) {
  if (!all_f32(c) || c.ins.empty()) return {};
  const BufView &x = c.ins[0], &y = c.outs[0];
  if (x.shape.size() != 4 || y.shape.size() != 4) return {};
  const Attrs& a = c.kernel.attrs;
  const OpKind op = c.kernel.op;
  std::vector<int64_t> k, s{1, 1}, pads{0, 0, 0, 0}, dil{1, 1};
  algorithm alg;
  if (op == OpKind::GlobalAveragePool || op == OpKind::GlobalMaxPool) {
    k = {x.shape[2], x.shape[3]};
    alg = op == OpKind::GlobalMaxPool ? algorithm::pooling_max : algorithm::pooling_avg_include_padding;
  } else {
    k = a.ints("kernel");
    s = a.ints("strides", {1, 1});
    pads = a.ints("pads", {0, 0, 0, 0});
    dil = a.ints("dilations", {1, 1});
    OPV_CHECK(k.size() == 2 && s.size() == 2 && pads.size() == 4 && dil.size() == 2, c.where(),
              ": bad kernel/strides/pads/dilations");
    alg = op == OpKind::MaxPool ? algorithm::pooling_max
          : a.i("count_include_pad", 0) ? algorithm::pooling_avg_include_padding
                                         : algorithm::pooling_avg_exclude_padding;
  }
  // The output shape is on the value (ceil mode included): grow the right padding until
  // oneDNN's floor formula gives it; configurations it cannot express go to the reference.
  memory::dims pr(2);
  for (int i = 0; i < 2; ++i) {
    const int64_t in = x.shape[size_t(2 + i)], out = y.shape[size_t(2 + i)];
    const int64_t ext = (k[size_t(i)] - 1) * dil[size_t(i)] + 1, st = s[size_t(i)], pl = pads[size_t(i)];
    int64_t r = pads[size_t(2 + i)];
    while ((in + pl + r - ext) / st + 1 < out && r < ext) ++r;
    if ((in + pl + r - ext) / st + 1 != out || pl >= ext || r >= ext) return {};
    pr[size_t(i)] = r;
  }
  memory::desc src = md_like(x, y), dst = md_like(y, x);
  dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, dst, {s[0], s[1]}, {k[0], k[1]},
                                   {dil[0] - 1, dil[1] - 1}, {pads[0], pads[1]}, pr);
  MappedPostOps m = map_post_ops(c, c.kernel.post_ops, y, y.shape);
  auto pd = make_pd<dnnl::pooling_v2_forward::primitive_desc>(c, d, 1.f, m, done);
  Args args = std::move(m.args);
  args[DNNL_ARG_SRC] = memory(src, c.eng, x.ptr);
  args[DNNL_ARG_DST] = memory(dst, c.eng, y.ptr);
  return with_copies(std::move(m.pre), finish(c, dnnl::pooling_v2_forward(pd), std::move(args), pd.scratchpad_desc()));
}

// Unary activations over the flat buffer (same layout in and out, so layout does not matter).
StepFn build_eltwise(CallCtx& c, size_t& done) {
  if (!all_f32(c) || c.ins.size() != 1 || c.outs.size() != 1) return {};
  const BufView &x = c.ins[0], &y = c.outs[0];
  if (x.layout != y.layout && !plan::channels_trivial(x.shape)) return {};
  if (c.kernel.op == OpKind::Identity) return {};
  PostOp p = unary_post_op(c.kernel.op, c.kernel.attrs);
  auto e = eltwise_of(p.op, p.alpha, p.beta);
  if (!e) return {};
  memory::desc md({numel(x.shape)}, dt::f32, tag::a);
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, e->first, md, e->second.first, e->second.second);
  MappedPostOps none;
  auto pd = make_pd<dnnl::eltwise_forward::primitive_desc>(c, d, 1.f, none, done);
  Args args{{DNNL_ARG_SRC, memory(md, c.eng, x.ptr)}, {DNNL_ARG_DST, memory(md, c.eng, y.ptr)}};
  return finish(c, dnnl::eltwise_forward(pd), std::move(args), pd.scratchpad_desc());
}

// oneDNN's jitted reorder for every dtype it has (the generic strided copy is far slower on
// the channel-interleaving NCHW <-> NHWC case, e.g. a uint8 camera image).
StepFn build_reorder(CallCtx& c) {
  if (c.ins.size() != 1 || c.outs.size() != 1) return {};
  const BufView &x = c.ins[0], &y = c.outs[0];
  if (x.shape != y.shape || x.shape.size() != 4 || x.dtype != y.dtype) return {};
  dt d;
  switch (x.dtype) {
    case DType::F32: d = dt::f32; break;
    case DType::U8: d = dt::u8; break;
    case DType::I8: d = dt::s8; break;
    case DType::I32: d = dt::s32; break;
    default: return {};
  }
  auto md = [&](const BufView& b) {
    std::vector<int64_t> st = logical_strides(b.shape, b.layout);
    return memory::desc(to_dims(b.shape), d, memory::dims(st.begin(), st.end()));
  };
  memory src(md(x), c.eng, x.ptr), dst(md(y), c.eng, y.ptr);
  dnnl::reorder r(src, dst);
  auto strm = c.strm;
  return [r, src, dst, strm]() mutable { r.execute(strm, src, dst); };
}

}  // namespace

StepFn build_dnnl_step(CallCtx& c, size_t& post_ops_done) {
  post_ops_done = 0;
  if (c.outs.size() != 1) return {};
  switch (c.kernel.op) {
    case OpKind::Conv: return build_conv(c, post_ops_done);
    case OpKind::Gemm: return build_gemm(c, post_ops_done);
    case OpKind::MatMul: return build_matmul(c, post_ops_done);
    case OpKind::MaxPool:
    case OpKind::AveragePool:
    case OpKind::GlobalAveragePool:
    case OpKind::GlobalMaxPool: return build_pool(c, post_ops_done);
    case OpKind::Reorder: return build_reorder(c);
    default:
      if (is_unary(c.kernel.op)) return build_eltwise(c, post_ops_done);
      return {};
  }
}

}  // namespace opv::backend::cpu
