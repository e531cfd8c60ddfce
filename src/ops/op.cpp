#include "ops/op.h"

#include <cmath>
#include <sstream>

#include "core/error.h"

namespace opv {

namespace {
struct OpInfo {
  const char* name;
  OpFamily family;
};
constexpr OpInfo kOps[] = {
#define OPV_OP(name, family, doc) {#name, OpFamily::family},
#include "ops/ops.def"
#undef OPV_OP
};
}  // namespace

const char* op_name(OpKind k) {
  OPV_ASSERT(size_t(k) < size_t(OpKind::Count_));
  return kOps[size_t(k)].name;
}

OpFamily op_family(OpKind k) {
  OPV_ASSERT(size_t(k) < size_t(OpKind::Count_));
  return kOps[size_t(k)].family;
}

bool is_reduce(OpKind k) {
  switch (k) {
    case OpKind::ReduceMean:
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceProd:
    case OpKind::ReduceL1:
    case OpKind::ReduceL2:
    case OpKind::ReduceLogSum:
    case OpKind::ReduceLogSumExp:
    case OpKind::ReduceSumSquare:
      return true;
    default: return false;
  }
}

std::optional<OpKind> op_from_name(std::string_view name) {
  for (size_t i = 0; i < size_t(OpKind::Count_); ++i)
    if (name == kOps[i].name) return OpKind(i);
  return std::nullopt;
}

OpKind op_from_u16(uint16_t v) {
  OPV_CHECK(v < uint16_t(OpKind::Count_), "invalid op kind value ", v);
  return OpKind(v);
}

std::string post_ops_str(const std::vector<PostOp>& ops) {
  std::ostringstream os;
  for (size_t i = 0; i < ops.size(); ++i) {
    const PostOp& p = ops[i];
    os << (i ? " " : "") << "+" << op_name(p.op);
    if (p.input >= 0) os << "(in" << p.input << (p.swapped ? ",swapped" : "") << ")";
    if (p.op == OpKind::LeakyRelu || p.op == OpKind::Elu) os << "(" << p.alpha << ")";
    if (p.op == OpKind::HardSigmoid || p.op == OpKind::Clip) os << "(" << p.alpha << "," << p.beta << ")";
  }
  return os.str();
}

PostOp unary_post_op(OpKind k, const Attrs& a) {
  PostOp p;
  p.op = k;
  switch (k) {
    case OpKind::LeakyRelu: p.alpha = float(a.f("alpha", 0.01)); break;
    case OpKind::Elu: p.alpha = float(a.f("alpha", 1.0)); break;
    case OpKind::HardSigmoid:
      p.alpha = float(a.f("alpha", 0.2));
      p.beta = float(a.f("beta", 0.5));
      break;
    case OpKind::Clip:
      p.alpha = float(a.f("min", -INFINITY));
      p.beta = float(a.f("max", INFINITY));
      break;
    case OpKind::Selu:
      p.alpha = float(a.f("alpha", 1.67326319217681884765625));
      p.beta = float(a.f("gamma", 1.05070102214813232421875));
      break;
    case OpKind::ThresholdedRelu:
    case OpKind::Celu: p.alpha = float(a.f("alpha", 1.0)); break;
    case OpKind::Shrink:
      p.alpha = float(a.f("bias", 0.0));
      p.beta = float(a.f("lambd", 0.5));
      break;
    case OpKind::IsInf:
      p.alpha = float(a.i("detect_negative", 1));
      p.beta = float(a.i("detect_positive", 1));
      break;
    default: break;
  }
  return p;
}

Attrs unary_attrs(const PostOp& p) {
  Attrs a;
  switch (p.op) {
    case OpKind::LeakyRelu:
    case OpKind::Elu: a.set("alpha", double(p.alpha)); break;
    case OpKind::HardSigmoid:
      a.set("alpha", double(p.alpha));
      a.set("beta", double(p.beta));
      break;
    case OpKind::Clip:
      a.set("min", double(p.alpha));
      a.set("max", double(p.beta));
      break;
    case OpKind::Selu:
      a.set("alpha", double(p.alpha));
      a.set("gamma", double(p.beta));
      break;
    case OpKind::ThresholdedRelu:
    case OpKind::Celu: a.set("alpha", double(p.alpha)); break;
    case OpKind::Shrink:
      a.set("bias", double(p.alpha));
      a.set("lambd", double(p.beta));
      break;
    case OpKind::IsInf:
      a.set("detect_negative", int64_t(p.alpha));
      a.set("detect_positive", int64_t(p.beta));
      break;
    default: break;
  }
  return a;
}

}  // namespace opv
