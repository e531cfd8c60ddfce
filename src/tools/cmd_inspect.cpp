// `opvision inspect MODEL`: what a model's plan contains and costs.
// 1. Op histogram over calls and the kernels used (calls per kernel name).
// 2. Buffers: count and bytes per kind; weights, arena (planned and unplanned), peak bytes.
// 3. FLOPs per call from the logical shapes: Conv 2*N*M*OH*OW*(C/group)*kh*kw, Gemm/MatMul
//    2*outputs*K, element-wise ops and each fused post-op one per output element, reductions
//    and pools one per input element read, a few per element for Softmax/LayerNorm; data
//    movement (Reshape, Transpose, Concat, ...) none. Bytes moved: every call's input and output
//    buffer bytes.
#include <cstdio>
#include <iostream>
#include <map>

#include "plan/passes.h"
#include "tools/common.h"

namespace opv::tools {

namespace {

// Approximate arithmetic per element for composite ops (counted as in most FLOP tables).
constexpr int64_t kSoftmaxFlopsPerElem = 5;    // max, sub, exp, sum, div
constexpr int64_t kLayerNormFlopsPerElem = 8;  // mean, sub, square, sum, rsqrt-mul, scale, bias
constexpr int64_t kBatchNormFlopsPerElem = 2;  // folded scale and shift
constexpr int64_t kResizeLinearFlopsPerElem = 8;
constexpr int64_t kMacFlops = 2;  // one multiply-accumulate = 2 FLOPs

struct Cost {
  int64_t conv = 0, matmul = 0, elementwise = 0, other = 0;
  int64_t total() const { return conv + matmul + elementwise + other; }
};

const Shape& shape_of(const plan::Plan& p, int id) {
  static const Shape kEmpty;
  return id >= 0 && size_t(id) < p.buffers.size() ? p.buffers[size_t(id)].shape : kEmpty;
}

void add_call_cost(const plan::Plan& p, const plan::Call& c, Cost& cost) {
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
}

std::string human_bytes(int64_t b) {
  constexpr double kKiB = 1024.0, kMiB = kKiB * 1024.0;
  if (b >= int64_t(kMiB)) return fmt("%lld B (%.2f MiB)", (long long)b, double(b) / kMiB);
  if (b >= int64_t(kKiB)) return fmt("%lld B (%.1f KiB)", (long long)b, double(b) / kKiB);
  return fmt("%lld B", (long long)b);
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
  ArgParser p("opvision inspect",
              "Summarises a model's plan: op histogram, kernels, buffers (count and bytes by kind), weights, "
              "arena and peak bytes, FLOPs and bytes moved.",
              "MODEL [options]");
  p.positional("MODEL", "an ONNX model (compiled on the fly) or a .opv artifact")
      .option("--target", "B", "backend to compile for (.opv: must match the artifact, default its target)",
              kDefaultBackend)
      .flag("--dump", "also print the whole plan");
  Args a;
  if (!parse_or_help(p, argc, argv, a)) return kExitOk;
  const std::string& model = a.positionals[0];
  plan::Plan plan = load_model(model, a.get("--target"));

  std::map<std::string, int64_t> ops, kernel_calls;
  Cost cost;
  int64_t bytes_moved = 0;
  for (const plan::Call& c : plan.calls) {
    const plan::Kernel& k = plan.kernels[size_t(c.kernel)];
    ops[op_name(k.op)] += 1;
    kernel_calls[k.name] += 1;
    add_call_cost(plan, c, cost);
    for (int b : c.inputs)
      if (b >= 0) bytes_moved += plan.buffers[size_t(b)].bytes;
    for (int b : c.outputs) bytes_moved += plan.buffers[size_t(b)].bytes;
  }
  struct KindRow {
    int64_t count = 0, bytes = 0;
  };
  std::map<plan::BufferKind, KindRow> kinds;
  for (const plan::Buffer& b : plan.buffers) {
    kinds[b.kind].count += 1;
    kinds[b.kind].bytes += b.bytes;
  }
  const int64_t io_bytes = kinds[plan::BufferKind::Input].bytes + kinds[plan::BufferKind::Output].bytes;
  const int64_t weights = int64_t(plan.weights.size());
  const int64_t peak = weights + plan.arena_bytes + io_bytes;
  constexpr double kGiga = 1e9, kMega = 1e6;

  std::printf("model %s  target %s\n", model.c_str(), plan.target.c_str());
  if (!plan.meta.map().empty()) std::printf("meta %s\n", plan.meta.str().c_str());
  std::printf("calls %zu  kernels %zu  buffers %zu\n", plan.calls.size(), plan.kernels.size(), plan.buffers.size());
  std::printf("\nops (calls per op):\n");
  for (const auto& [name, n] : ops) std::printf("  %-20s %6lld\n", name.c_str(), (long long)n);
  std::printf("\nkernels (calls per kernel):\n");
  for (const auto& [name, n] : kernel_calls) std::printf("  %-48s %6lld\n", name.c_str(), (long long)n);
  std::printf("\nbuffers by kind:\n");
  for (const auto& [kind, row] : kinds)
    std::printf("  %-8s %6lld  %s\n", plan::buffer_kind_name(kind), (long long)row.count, human_bytes(row.bytes).c_str());
  std::printf("\nweights      %s\n", human_bytes(weights).c_str());
  std::printf("arena        %s (without reuse: %s)\n", human_bytes(plan.arena_bytes).c_str(),
              human_bytes(plan::unplanned_bytes(plan)).c_str());
  std::printf("peak         %s (weights + arena + inputs + outputs)\n", human_bytes(peak).c_str());
  std::printf("FLOPs        %.4f GFLOP (conv %.4f, gemm/matmul %.4f, element-wise %.4f, other %.4f)\n",
              double(cost.total()) / kGiga, double(cost.conv) / kGiga, double(cost.matmul) / kGiga,
              double(cost.elementwise) / kGiga, double(cost.other) / kGiga);
  std::printf("bytes moved  %.3f MB (inputs + outputs of every call)\n", double(bytes_moved) / kMega);
  if (a.has("--dump")) std::cout << "\n" << plan.dump();
  return kExitOk;
}

}  // namespace opv::tools
