// Lowering: optimised ir::Graph -> plan::Plan for one target.
//  1. Storage dtypes: CPU targets ("reference", "cpu") and opencl store every float tensor as F32
//     (F16 constants are widened here, F16 casts become F32 casts); cuda keeps F16 as F16. Model inputs/outputs keep their
//     dtype; a Cast call converts at the boundary when the storage dtype differs.
//  2. Buffers: one per live value (Input / Output / Intermediate / Constant); constants are
//     copied into the weights blob once, only when a live node reads them.
//  3. One Kernel + one Call per node, in graph (topological) order; the kernel name spells
//     out the variant.
//  4. Target plan passes, memory planning, validation (compile.cpp drives these).
// Invariant: the plan computes what the graph computes, up to the storage dtype change.
#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

#include "compiler/compile.h"
#include "core/error.h"

namespace opv {

namespace {

// CPU targets and opencl (whose layout pass picks F16 images itself) store floats as F32; cuda
// keeps a model's F16 tensors in F16 (fp16 storage, fp32 arithmetic in every kernel).
DType storage_dtype(DType t, const std::string& target) {
  if (target == "cuda") return t;
  return t == DType::F16 ? DType::F32 : t;
}

std::string lower_case(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "conv2d_dw_3x3_s2_d1_f32", "gemm_tb_f32", "add_f32", ...
std::string kernel_name(const ir::Graph& g, const ir::Node& n, DType dt) {
  std::ostringstream os;
  const Attrs& a = n.attrs;
  if (n.op == OpKind::Conv) {
    const Shape& w = g.values[n.inputs[1]].shape;
    int64_t group = a.i("group", 1);
    int64_t cin = w[1] * group;
    bool dw = group > 1 && group == cin;
    auto s = a.ints("strides", {1, 1});
    auto d = a.ints("dilations", {1, 1});
    os << "conv2d_" << (dw ? "dw_" : (group > 1 ? "g" + std::to_string(group) + "_" : "")) << w[2] << "x" << w[3]
       << "_s" << s[0];
    if (s[1] != s[0]) os << "x" << s[1];
    if (d[0] != 1 || d[1] != 1) os << "_d" << d[0];
  } else if (n.op == OpKind::Gemm) {
    os << "gemm" << (a.i("transA", 0) ? "_ta" : "") << (a.i("transB", 0) ? "_tb" : "");
  } else {
    os << lower_case(op_name(n.op));
  }
  os << "_" << dtype_name(dt);
  for (const PostOp& p : n.post_ops) os << "_" << lower_case(op_name(p.op));
  return os.str();
}

}  // namespace

plan::Plan lower_graph(const ir::Graph& g, const CompileOptions& opts) {
  using plan::Buffer;
  using plan::BufferKind;
  plan::Plan p;
  p.target = opts.target;
  p.meta.set("source", g.source);
  p.meta.set("opset", int64_t(g.opset));
  bool has_f16 = false;
  for (const ir::Value& v : g.values) has_f16 |= v.dtype == DType::F16;
  p.meta.set("precision", has_f16 ? "f16" : "f32");
  if (opts.batch > 0) p.meta.set(kBatchMetaKey, opts.batch);  // compile --batch (the graph was rewritten)
  std::vector<int> buf_of(g.values.size(), -1);
  std::vector<int> boundary_of(g.values.size(), -1);  // model-dtype buffer for inputs/outputs

  auto add_call = [&](plan::Kernel k, std::vector<int> ins, std::vector<int> outs, const std::string& label) {
    plan::Call c;
    c.kernel = p.add_kernel(std::move(k));
    c.inputs = std::move(ins);
    c.outputs = std::move(outs);
    c.label = label;
    p.calls.push_back(std::move(c));
  };
  auto cast_kernel = [&](DType from, DType to) {
    plan::Kernel k;
    k.op = OpKind::Cast;
    k.attrs.set("to", int64_t(to));
    k.name = std::string("cast_") + dtype_name(from) + "_" + dtype_name(to);
    return k;
  };
  auto new_buffer = [&](int v, BufferKind kind, DType dt) {
    Buffer b;
    b.name = g.values[v].name;
    b.dtype = dt;
    b.shape = g.values[v].shape;
    b.kind = kind;
    return p.add_buffer(std::move(b));
  };

  // Inputs.
  for (int v : g.inputs) {
    DType model_dt = g.values[v].dtype;
    DType st = storage_dtype(model_dt, opts.target);
    int in_buf = new_buffer(v, BufferKind::Input, model_dt);
    p.inputs.push_back(in_buf);
    boundary_of[v] = in_buf;
    if (st == model_dt) {
      buf_of[v] = in_buf;
    } else {
      buf_of[v] = new_buffer(v, BufferKind::Intermediate, st);
      p.buffers[buf_of[v]].name += ".storage";
      add_call(cast_kernel(model_dt, st), {in_buf}, {buf_of[v]}, "input " + g.values[v].name);
    }
  }

  auto const_buffer = [&](int v) {
    if (buf_of[v] >= 0) return buf_of[v];
    const ir::Value& val = g.values[v];
    DType st = storage_dtype(val.dtype, opts.target);
    Tensor t = st == val.dtype ? *val.data : val.data->cast(st);
    buf_of[v] = p.add_constant(val.name, st, t.shape(), plan::Layout::Linear, t.raw(), t.nbytes());
    return buf_of[v];
  };

  std::vector<char> is_output(g.values.size(), 0);
  for (int v : g.outputs) is_output[v] = 1;

  for (const ir::Node& n : g.nodes) {
    if (n.dead) continue;
    std::vector<int> ins;
    for (int v : n.inputs) {
      if (v < 0) {
        ins.push_back(-1);
        continue;
      }
      if (g.values[v].is_const()) {
        ins.push_back(const_buffer(v));
        continue;
      }
      OPV_CHECK(buf_of[v] >= 0, g.source, ": value '", g.values[v].name, "' used before it is produced");
      ins.push_back(buf_of[v]);
    }
    std::vector<int> outs;
    for (int v : n.outputs) {
      DType st = storage_dtype(g.values[v].dtype, opts.target);
      // An output whose model dtype equals its storage dtype is written in place.
      BufferKind kind = is_output[v] && st == g.values[v].dtype ? BufferKind::Output : BufferKind::Intermediate;
      buf_of[v] = new_buffer(v, kind, st);
      if (kind == BufferKind::Output) boundary_of[v] = buf_of[v];
      outs.push_back(buf_of[v]);
    }
    plan::Kernel k;
    k.op = n.op;
    k.attrs = n.attrs;
    k.post_ops = n.post_ops;
    if (n.op == OpKind::Cast) {
      DType to = DType(n.attrs.i("to"));
      DType st = storage_dtype(to, opts.target);
      k.attrs.set("to", int64_t(st));
      // The model rounds to fp16 here; keep that rounding although the storage is wider.
      if (st != to && to == DType::F16) k.attrs.set("round_to", int64_t(DType::F16));
    }
    DType main_dt = outs.empty() ? DType::F32 : p.buffers[outs[0]].dtype;
    k.name = kernel_name(g, n, main_dt);
    add_call(std::move(k), std::move(ins), std::move(outs), n.name);
  }

  // Outputs: convert to the model dtype, or copy when an output is an input/constant/repeated.
  for (int v : g.outputs) {
    bool in_place = boundary_of[v] >= 0 && p.buffers[boundary_of[v]].kind == BufferKind::Output &&
                    std::find(p.outputs.begin(), p.outputs.end(), boundary_of[v]) == p.outputs.end();
    if (in_place) {
      p.outputs.push_back(boundary_of[v]);
      continue;
    }
    int src = g.values[v].is_const() ? const_buffer(v) : buf_of[v];
    OPV_CHECK(src >= 0, "graph output '", g.values[v].name, "' is never produced");
    int out = new_buffer(v, BufferKind::Output, g.values[v].dtype);
    DType from = p.buffers[src].dtype, to = g.values[v].dtype;
    if (from == to) {
      plan::Kernel k;
      k.op = OpKind::Identity;
      k.name = std::string("copy_") + dtype_name(to);
      add_call(std::move(k), {src}, {out}, "output " + g.values[v].name);
    } else {
      add_call(cast_kernel(from, to), {src}, {out}, "output " + g.values[v].name);
    }
    p.outputs.push_back(out);
  }
  return p;
}

}  // namespace opv
