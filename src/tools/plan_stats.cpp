// Plan statistics for `opvision inspect` (see plan_stats.h).
// FLOPs per call from the logical shapes: Conv 2*N*M*OH*OW*(C/group)*kh*kw, Gemm/MatMul
// 2*outputs*K, element-wise ops and each fused post-op one per output element, reductions and
// global pools one per input element, windowed pools one per window element, a few per element
// for Softmax/LayerNorm/BatchNorm/linear Resize; data movement (Reshape, Transpose, Concat,
// Cast, Reorder, ...) none. Bytes moved: every call's input and output buffer bytes.
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

}  // namespace

FlopCount call_flops(const plan::Plan& p, const plan::Call& c) {
  FlopCount cost;
  const plan::Kernel& k = p.kernels[size_t(c.kernel)];
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
