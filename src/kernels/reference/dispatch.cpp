// ref::run: routes each canonical op (ops.def) to its kernel family, then applies the fused
// post-ops. When post-ops follow an arithmetic op with an F16 output, the op and its post-ops
// run on an F32 temporary that is rounded to F16 once at the end, as a fused kernel would.
#include "kernels/reference.h"
#include "kernels/reference/common.h"

namespace opv::ref {

namespace {

using detail::Args;

// Ops whose kernels compute through double and may write a wider float output than their
// inputs (so the post-op epilogue can keep full precision).
bool computes_in_float(OpKind op) {
  switch (op) {
    case OpKind::Identity:
    case OpKind::Cast:
    case OpKind::Not:
      return false;
    default: break;
  }
  if (is_unary(op)) return true;
  switch (op) {
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Pow:
    case OpKind::Min:
    case OpKind::Max:
    case OpKind::Mod:
    case OpKind::Conv:
    case OpKind::Gemm:
    case OpKind::MatMul:
    case OpKind::BatchNorm:
    case OpKind::AveragePool:
    case OpKind::GlobalAveragePool:
    case OpKind::ReduceMean:
    case OpKind::ReduceSum:
    case OpKind::Softmax:
    case OpKind::LayerNorm:
    case OpKind::PRelu:
    case OpKind::ReduceL1:
    case OpKind::ReduceL2:
    case OpKind::ReduceLogSum:
    case OpKind::ReduceLogSumExp:
    case OpKind::ReduceSumSquare:
    case OpKind::ReduceProd:
    case OpKind::LogSoftmax:
    case OpKind::LpNorm:
    case OpKind::InstanceNorm:
    case OpKind::ConvTranspose:
    case OpKind::GridSample:
    case OpKind::Einsum:
      return true;
    default: return false;
  }
}

void dispatch(const Args& a) {
  switch (a.op) {
    case OpKind::ReduceMean:
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceProd:
    case OpKind::ReduceL1:
    case OpKind::ReduceL2:
    case OpKind::ReduceLogSum:
    case OpKind::ReduceLogSumExp:
    case OpKind::ReduceSumSquare: return detail::run_reduce(a);
    case OpKind::Identity:
    case OpKind::Relu:
    case OpKind::LeakyRelu:
    case OpKind::Elu:
    case OpKind::Sigmoid:
    case OpKind::HardSigmoid:
    case OpKind::HardSwish:
    case OpKind::Tanh:
    case OpKind::Softplus:
    case OpKind::Gelu:
    case OpKind::GeluTanh:
    case OpKind::Erf:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Reciprocal:
    case OpKind::Sqrt:
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Not:
    case OpKind::Clip:
    case OpKind::Cast:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Tan:
    case OpKind::Asin:
    case OpKind::Acos:
    case OpKind::Atan:
    case OpKind::Sinh:
    case OpKind::Cosh:
    case OpKind::Asinh:
    case OpKind::Acosh:
    case OpKind::Atanh:
    case OpKind::Sign:
    case OpKind::Round:
    case OpKind::Softsign:
    case OpKind::Mish:
    case OpKind::Selu:
    case OpKind::ThresholdedRelu:
    case OpKind::Celu:
    case OpKind::Shrink:
    case OpKind::IsNaN:
    case OpKind::IsInf: return detail::run_unary(a);
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Pow:
    case OpKind::Min:
    case OpKind::Max:
    case OpKind::Mod:
    case OpKind::Equal:
    case OpKind::Less:
    case OpKind::Greater:
    case OpKind::LessOrEqual:
    case OpKind::GreaterOrEqual:
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Xor:
    case OpKind::PRelu:
    case OpKind::BitwiseAnd:
    case OpKind::BitwiseOr:
    case OpKind::BitwiseXor: return detail::run_binary(a);
    case OpKind::Where: return detail::run_where(a);
    case OpKind::Conv: return detail::run_conv(a);
    case OpKind::Gemm: return detail::run_gemm(a);
    case OpKind::MatMul: return detail::run_matmul(a);
    case OpKind::BatchNorm: return detail::run_batch_norm(a);
    case OpKind::MaxPool: return detail::run_max_pool(a);
    case OpKind::AveragePool: return detail::run_average_pool(a);
    case OpKind::GlobalAveragePool:
    case OpKind::GlobalMaxPool: return detail::run_global_pool(a);
    case OpKind::ArgMax:
    case OpKind::ArgMin: return detail::run_arg_reduce(a);
    case OpKind::LogSoftmax:
    case OpKind::Hardmax:
    case OpKind::LpNorm: return detail::run_axis_norm(a);
    case OpKind::CumSum: return detail::run_cumsum(a);
    case OpKind::InstanceNorm: return detail::run_instance_norm(a);
    case OpKind::Trilu: return detail::run_trilu(a);
    case OpKind::TopK: return detail::run_topk(a);
    case OpKind::Einsum: return detail::run_einsum(a);
    case OpKind::ConvTranspose: return detail::run_conv_transpose(a);
    case OpKind::GridSample: return detail::run_grid_sample(a);
    case OpKind::GatherElements:
    case OpKind::ScatterElements: return detail::run_gather_scatter_elements(a);
    case OpKind::Softmax: return detail::run_softmax(a);
    case OpKind::LayerNorm: return detail::run_layer_norm(a);
    case OpKind::Reshape:
    case OpKind::Transpose:
    case OpKind::Concat:
    case OpKind::Split:
    case OpKind::Slice:
    case OpKind::Gather:
    case OpKind::Expand:
    case OpKind::Tile:
    case OpKind::Pad:
    case OpKind::Reorder: return detail::run_movement(a);
    case OpKind::Resize: return detail::run_resize(a);
    case OpKind::Range: return detail::run_range(a);
    case OpKind::ConstantOfShape: return detail::run_constant_of_shape(a);
    case OpKind::Count_: break;
  }
  a.error("no reference kernel");
}

}  // namespace

void run(const OpCall& call, const std::vector<const Tensor*>& ins, const std::vector<Tensor*>& outs) {
  OPV_CHECK(size_t(call.op) < size_t(OpKind::Count_), "invalid op kind ", int(call.op));
  const char* name = op_name(call.op);
  OPV_CHECK(!outs.empty(), name, ": no outputs given");
  for (size_t i = 0; i < outs.size(); ++i) {
    OPV_CHECK(outs[i] != nullptr, name, ": output ", i, " is null");
    OPV_CHECK(outs[i]->numel() == 0 || !outs[i]->empty(), name, ": output ", i, " is not allocated");
  }
  for (size_t i = 0; i < ins.size(); ++i)
    OPV_CHECK(ins[i] == nullptr || ins[i]->numel() == 0 || !ins[i]->empty(), name, ": input ", i,
              " has no data");
  if (call.post_ops.empty()) {
    dispatch(Args{call.op, call.attrs, ins, outs});
    return;
  }
  OPV_CHECK(outs.size() == 1, name, ": post-ops need a single-output op, got ", outs.size(), " outputs");
  Tensor& y = *outs[0];
  const bool widen = y.dtype() == DType::F16 && computes_in_float(call.op);
  Tensor wide;
  if (widen) wide = Tensor(DType::F32, y.shape());
  Tensor& target = widen ? wide : y;
  std::vector<Tensor*> targets{&target};
  dispatch(Args{call.op, call.attrs, ins, targets});
  try {
    apply_post_ops(call.post_ops, ins, target);
  } catch (const Error& e) {
    fail(name, " post-ops [", post_ops_str(call.post_ops), "]: ", e.what());
  }
  if (widen) detail::store_f64(y, detail::load_f64(wide));
}

}  // namespace opv::ref
