// Plan statistics for `opvision inspect` (see plan_stats.h).
// FLOPs per call from the logical shapes: Conv 2*N*M*OH*OW*(C/group)*kh*kw, Gemm/MatMul
// 2*outputs*K, element-wise ops and each fused post-op one per output element, reductions and
// global pools one per input element, windowed pools one per window element, a few per element
// for Softmax/LayerNorm/BatchNorm/linear Resize; data movement (Reshape, Transpose, Concat,
// Cast, Reorder, ...) none. Bytes moved: every call's input and output buffer bytes.
// Merged calls (kernel attr "cl_batch" = n calls in one launch) count the work of their members:
//   - batches of one op (opencl's batch pass, cuda's batched GEMVs): n groups, each its share of
//     the inputs and outputs (cl_abi.h, cuda_abi.h), counted as the call it was;
//   - cuda's chains of stride-1 convs on one map (depthwise pair, ConvFFN, FastViT stage; kernel
//     attr "cuda_dw_pair", "cuda_ffn" or "cuda_stage", cuda_abi.h): each rank-4 weight input W
//     is one member conv, 2 * N*OH*OW * numel(W) over the output's map;
//   - cuda's GEMV chains ("cuda_heads" = L): 2 * numel(B) for every layer's weight B (one row of A);
//   - cuda's SE gate ("cuda_se"): the mean over X, its two 1x1 convs on the N squeezed vectors,
//     and the product with X;
//   - others (cuda's input pack inside the stem conv) as their first member.
// Their post-ops count one per output element each, as a plain call's.
#include "tools/plan_stats.h"

#include <algorithm>

namespace opv::tools {

namespace {

// Approximate arithmetic per element for composite ops (counted as in most FLOP tables).
constexpr int64_t kSoftmaxFlopsPerElem = 5;    // max, sub, exp, sum, div
constexpr int64_t kLayerNormFlopsPerElem = 8;  // mean, sub, square, sum, rsqrt-mul, scale, bias
constexpr int64_t kBatchNormFlopsPerElem = 2;  // folded scale and shift
constexpr int64_t kResizeLinearFlopsPerElem = 8;
constexpr int64_t kMacFlops = 2;  // one multiply-accumulate = 2 FLOPs

const Shape& shape_of(const plan::Plan& p, int id) {
  static const Shape kEmpty;
  return id >= 0 && size_t(id) < p.buffers.size() ? p.buffers[size_t(id)].shape : kEmpty;
}

// The FLOPs of a call as one op of kernel k (the inputs and outputs of one member of a batch).
FlopCount op_flops(const plan::Plan& p, const plan::Kernel& k, const plan::Call& c) {
  FlopCount cost;
  const int64_t out = c.outputs.empty() ? 0 : numel(shape_of(p, c.outputs[0]));
  auto in_shape = [&](size_t i) -> const Shape& { return shape_of(p, i < c.inputs.size() ? c.inputs[i] : -1); };
  const int64_t in0 = c.inputs.empty() ? 0 : numel(in_shape(0));
  switch (k.op) {
    case OpKind::Conv: {
      const Shape& w = in_shape(1);
      if (!w.empty() && w[0] > 0) cost.conv += kMacFlops * out * (numel(w) / w[0]);
      break;
    }
    case OpKind::Gemm: {
      const Shape& a = in_shape(0);
      if (a.size() == 2) cost.matmul += kMacFlops * out * (k.attrs.i("transA", 0) ? a[0] : a[1]);
      if (c.inputs.size() > 2 && c.inputs[2] >= 0) cost.elementwise += out;  // + beta*C
      break;
    }
    case OpKind::MatMul: {
      const Shape& a = in_shape(0);
      if (!a.empty()) cost.matmul += kMacFlops * out * a.back();
      break;
    }
    case OpKind::Identity:
    case OpKind::Cast:
      break;
    case OpKind::BatchNorm: cost.elementwise += kBatchNormFlopsPerElem * out; break;
    case OpKind::MaxPool:
    case OpKind::AveragePool: {
      int64_t area = 1;
      for (int64_t kd : k.attrs.ints("kernel")) area *= kd;
      cost.other += out * area;
      break;
    }
    case OpKind::GlobalAveragePool:
    case OpKind::GlobalMaxPool:
    case OpKind::ReduceMean:
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin: cost.other += in0; break;
    case OpKind::Softmax: cost.other += kSoftmaxFlopsPerElem * out; break;
    case OpKind::LayerNorm: cost.other += kLayerNormFlopsPerElem * out; break;
    case OpKind::Resize:
      if (k.attrs.s("mode", "nearest") == "linear") cost.other += kResizeLinearFlopsPerElem * out;
      break;
    case OpKind::Where: cost.elementwise += out; break;
    default:
      if (is_unary(k.op) || is_binary(k.op)) cost.elementwise += out;
      break;  // data movement: Reshape, Transpose, Concat, Split, Slice, Gather, Pad, Reorder, ...
  }
  return cost;
}

// Work of the member convs of a cuda chain: every rank-4 Constant input from slot 1 on.
int64_t chain_conv_flops(const plan::Plan& p, const plan::Call& c) {
  if (c.outputs.empty()) return 0;
  const Shape& y = shape_of(p, c.outputs[0]);
  if (y.size() != 4) return 0;
  const int64_t pixels = y[0] * y[2] * y[3];
  int64_t flops = 0;
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    const int b = c.inputs[i];
    if (b < 0 || size_t(b) >= p.buffers.size() || p.buffers[size_t(b)].kind != plan::BufferKind::Constant) continue;
    const Shape& w = p.buffers[size_t(b)].shape;
    if (w.size() == 4) flops += kMacFlops * pixels * numel(w);
  }
  return flops;
}

}  // namespace

FlopCount call_flops(const plan::Plan& p, const plan::Call& c) {
  FlopCount cost;
  if (c.kernel < 0 || size_t(c.kernel) >= p.kernels.size()) return cost;
  const plan::Kernel& k = p.kernels[size_t(c.kernel)];
  const int64_t out = c.outputs.empty() ? 0 : numel(shape_of(p, c.outputs[0]));
  const int64_t n = k.attrs.i("cl_batch", 0);
  if (n <= 1) {
    cost = op_flops(p, k, c);
  } else if (k.attrs.has("cuda_dw_pair") || k.attrs.has("cuda_ffn") || k.attrs.has("cuda_stage")) {
    cost.conv += chain_conv_flops(p, c);
  } else if (const int64_t layers = k.attrs.i("cuda_heads", 0); layers > 0) {
    // n chains of one-row GEMVs: inputs per chain [A, then B, C per layer]: 2 * N * K a layer
    const size_t stride = size_t(1 + 2 * layers);
    for (size_t j = 0; j < c.inputs.size(); ++j)
      if (j % stride % 2 == 1) cost.matmul += kMacFlops * numel(shape_of(p, c.inputs[j]));
  } else if (k.attrs.has("cuda_se")) {
    // inputs [X, W1, B1, W2, B2]: mean over H, W; W1 [Cr, C, 1, 1] and W2 [C, Cr, 1, 1] on N vectors.
    // Folded (se.cpp fold_se_ends): X is the depthwise conv's input and its W at slot 5 (the conv's
    // outputs are the gate's [N, C, H, W]); the 1x1's W [Co, C, 1, 1] follows, its output the call's.
    const bool dw = k.attrs.i("cuda_se_dw", 0) > 0, proj = k.attrs.i("cuda_se_proj", 0) > 0;
    const Shape& x = shape_of(p, c.inputs.empty() ? -1 : c.inputs[0]);
    const int64_t batch = x.empty() ? 0 : x[0];
    const size_t wv = dw ? 7 : 5;
    const Shape& w1 = shape_of(p, c.inputs.size() > 1 ? c.inputs[1] : -1);
    const Shape& wvs = shape_of(p, proj && wv < c.inputs.size() ? c.inputs[wv] : -1);
    const int64_t C = w1.size() > 1 ? w1[1] : 0, vo = wvs.empty() ? 0 : wvs[0];
    const int64_t gated = proj ? (vo > 0 ? out / vo * C : 0) : out;  // N * C * H * W
    cost.other += dw ? gated : (c.inputs.empty() ? 0 : numel(x));
    for (size_t i : {size_t(1), size_t(3)})
      if (i < c.inputs.size()) cost.conv += kMacFlops * batch * numel(shape_of(p, c.inputs[i]));
    if (dw && c.inputs.size() > 5 && C > 0) {
      const Shape& wd = shape_of(p, c.inputs[5]);
      cost.conv += kMacFlops * gated * (wd.size() == 4 ? wd[2] * wd[3] : 0);
    }
    if (proj) cost.conv += kMacFlops * out * C;
    cost.elementwise += gated;
  } else if (c.inputs.size() % size_t(n) == 0 && c.outputs.size() % size_t(n) == 0 && !c.outputs.empty()) {
    const size_t ni = c.inputs.size() / size_t(n), no = c.outputs.size() / size_t(n);
    // cuda's GEMV batches hold every member's post-ops ("cuda_batch_post_ops" = their counts);
    // opencl's batches apply the kernel's post-ops in every group
    const std::vector<int64_t> npo = k.attrs.ints("cuda_batch_post_ops");
    for (size_t g = 0; g < size_t(n); ++g) {
      plan::Call m;
      m.inputs.assign(c.inputs.begin() + std::ptrdiff_t(g * ni), c.inputs.begin() + std::ptrdiff_t((g + 1) * ni));
      m.outputs.assign(c.outputs.begin() + std::ptrdiff_t(g * no), c.outputs.begin() + std::ptrdiff_t((g + 1) * no));
      const FlopCount f = op_flops(p, k, m);
      cost.conv += f.conv, cost.matmul += f.matmul, cost.elementwise += f.elementwise, cost.other += f.other;
      cost.elementwise += numel(shape_of(p, m.outputs[0])) * (npo.size() == size_t(n) ? npo[g] : int64_t(k.post_ops.size()));
    }
    return cost;
  } else {
    cost = op_flops(p, k, c);
  }
  cost.elementwise += out * int64_t(k.post_ops.size());
  return cost;
}

int64_t call_bytes(const plan::Plan& p, const plan::Call& c) {
  int64_t bytes = 0;
  for (int b : c.inputs)
    if (b >= 0) bytes += p.buffers[size_t(b)].bytes;
  for (int b : c.outputs) bytes += p.buffers[size_t(b)].bytes;
  return bytes;
}

PlanStats plan_stats(const plan::Plan& p) {
  PlanStats s;
  for (const plan::Call& c : p.calls) {
    const plan::Kernel& k = p.kernels[size_t(c.kernel)];
    s.op_calls[op_name(k.op)] += 1;
    s.kernel_calls[k.name] += 1;
    if (p.target == "opencl") {
      GpuKernelStats& g = s.gpu_kernels[k.name];
      g.family = k.source.empty() ? "host" : k.attrs.s("cl_family", "?");
      g.launches += 1;
      g.calls += std::max<int64_t>(1, k.attrs.i("cl_batch", 1));
      int64_t items = 1;
      for (int64_t d : c.global)
        if (d > 0) items *= d;
      if (!k.source.empty()) g.work_items += items;
      g.reads_per_item = k.attrs.i("cl_reads", 0);
      g.gated_per_item = k.attrs.i("cl_gated", 0);
    }
    FlopCount f = call_flops(p, c);
    s.flops.conv += f.conv;
    s.flops.matmul += f.matmul;
    s.flops.elementwise += f.elementwise;
    s.flops.other += f.other;
    s.bytes_moved += call_bytes(p, c);
  }
  for (const plan::Buffer& b : p.buffers) {
    s.buffers[b.kind].count += 1;
    s.buffers[b.kind].bytes += b.bytes;
  }
  s.weights_bytes = int64_t(p.weights.size());
  s.arena_bytes = p.arena_bytes;
  auto kind_bytes = [&](plan::BufferKind k) {
    auto it = s.buffers.find(k);
    return it == s.buffers.end() ? int64_t(0) : it->second.bytes;
  };
  s.peak_bytes = s.weights_bytes + s.arena_bytes + kind_bytes(plan::BufferKind::Input) +
                 kind_bytes(plan::BufferKind::Output);
  return s;
}

}  // namespace opv::tools
