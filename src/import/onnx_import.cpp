/* ONNX import driver: ModelProto -> canonical ir::Graph.
 *
 * 1. Parse the protobuf, check the graph is present and the default-domain opset is 7..21 (older
 *    only for ops unchanged since opset 1).
 * 2. Initializers become constants; graph inputs that are not initializers become runtime
 *    inputs with static shapes (ImportOptions overrides, else unknown dims = 1 with a note).
 * 3. Nodes are imported in dependency order. Each is canonicalised (canonicalize_*.cpp) into
 *    ops of ops.def through Importer::emit, which infers shapes and folds nodes whose inputs
 *    are all constant at once, so shape arithmetic (Shape->Gather->Concat->Reshape) vanishes.
 * 4. Graph outputs are bound and checked against their declared dtype/shape; unused constants
 *    and nodes are dropped (Graph::compact) and the graph is validated.
 * Invariant: the returned graph is topologically sorted, SSA, every value has a static shape,
 * value names are unique, and Graph::validate() passes.
 */
#include <filesystem>
#include <iostream>
#include <sstream>

#include "core/file_io.h"

#include "import/importer.h"
#include "ir/evaluate.h"
#include "ops/shape_infer.h"

namespace opv {
namespace onnx_import {

namespace {

// Opset 7-10 models are upgraded while importing (attribute-to-input changes, Upsample ->
// Resize, TopK's k, Slice's attributes: see the canonicalisers' opset branches).
constexpr int kMinOpset = 7;
// Before opset 7 only models made of these ops (unchanged since opset 1 apart from added
// types) are accepted; anything else needs onnx.version_converter first.
constexpr const char* kOpset1Ops[] = {"Not", "Identity", "Transpose", "MatMul", "Shape", "Size"};
constexpr int kMaxOpset = 21;
// Folding is skipped when it would materialise more than this many elements from inputs at
// least this many times smaller (Expand/Tile/ConstantOfShape of small inputs).
constexpr int64_t kMaxFoldGrowthElems = int64_t(1) << 20;
// protobuf's own limit on a serialized message.
constexpr uint64_t kMaxOnnxBytes = (uint64_t(1) << 31) - 1;

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// NodeCtx

int NodeCtx::num_inputs() const {
  int k = n.input_size();
  while (k > 0 && n.input(k - 1).empty()) --k;
  return k;
}

int NodeCtx::num_outputs() const { return n.output_size(); }

int NodeCtx::in(int i) const {
  if (!has_input(i)) fail("input ", i, " is required");
  return im.lookup(n.input(i));
}

int NodeCtx::in_opt(int i) const { return has_input(i) ? im.lookup(n.input(i)) : -1; }

const Tensor& NodeCtx::const_in(int i, const char* what) const {
  if (!has_input(i)) fail("input '", what, "' is required");
  const ir::Value& v = val(in(i));
  if (!v.is_const()) fail("input '", what, "' must be a constant");
  return *v.data;
}

std::vector<int64_t> NodeCtx::const_ints(int i, const char* what) const {
  const Tensor& t = const_in(i, what);
  if (is_float(t.dtype())) fail("input '", what, "' must be an integer tensor, got ", dtype_name(t.dtype()));
  std::vector<int64_t> r(size_t(t.numel()));
  for (int64_t k = 0; k < t.numel(); ++k) r[size_t(k)] = t.get_i64(k);
  return r;
}

double NodeCtx::const_scalar(int i, const char* what) const {
  const Tensor& t = const_in(i, what);
  if (t.numel() != 1) fail("input '", what, "' must be a scalar, got ", shape_str(t.shape()));
  return t.get_f64(0);
}

void NodeCtx::require_unused_outputs_from(int first, const char* what) const {
  for (int k = first; k < n.output_size(); ++k)
    if (output_used(k)) fail("output ", k, " ('", n.output(k), "', ", what, ") is used; it is not supported");
}

void NodeCtx::alias_out(int i, int v) const {
  if (im.is_graph_output(n.output(i)))
    emit_out(OpKind::Identity, {}, {v});
  else
    bind_out(i, v);
}

int NodeCtx::emit_out(OpKind op, Attrs a, std::vector<int> ins, const std::optional<Shape>& preset) const {
  int v = im.emit1(*this, op, std::move(a), std::move(ins), n.output(0), preset);
  bind_out(0, v);
  return v;
}

int NodeCtx::emit_tmp(OpKind op, Attrs a, std::vector<int> ins, const std::string& suffix,
                      const std::optional<Shape>& preset) const {
  return im.emit1(*this, op, std::move(a), std::move(ins), name + "/" + suffix, preset);
}

const onnx::AttributeProto* NodeCtx::attr(const char* key) const {
  for (const auto& a : n.attribute())
    if (a.name() == key) return &a;
  return nullptr;
}

int64_t NodeCtx::i(const char* key, int64_t dflt) const {
  const auto* a = attr(key);
  if (!a) return dflt;
  if (a->type() != onnx::AttributeProto::INT) fail("attribute '", key, "' must be an int");
  return a->i();
}

double NodeCtx::f(const char* key, double dflt) const {
  const auto* a = attr(key);
  if (!a) return dflt;
  if (a->type() == onnx::AttributeProto::INT) return double(a->i());
  if (a->type() != onnx::AttributeProto::FLOAT) fail("attribute '", key, "' must be a float");
  return a->f();
}

std::string NodeCtx::s(const char* key, const std::string& dflt) const {
  const auto* a = attr(key);
  if (!a) return dflt;
  if (a->type() != onnx::AttributeProto::STRING) fail("attribute '", key, "' must be a string");
  return a->s();
}

std::vector<int64_t> NodeCtx::ints(const char* key, const std::vector<int64_t>& dflt) const {
  const auto* a = attr(key);
  if (!a) return dflt;
  if (a->type() == onnx::AttributeProto::INT) return {a->i()};
  if (a->type() != onnx::AttributeProto::INTS) fail("attribute '", key, "' must be a list of ints");
  return {a->ints().begin(), a->ints().end()};
}

std::vector<double> NodeCtx::floats(const char* key, const std::vector<double>& dflt) const {
  const auto* a = attr(key);
  if (!a) return dflt;
  if (a->type() == onnx::AttributeProto::FLOAT) return {double(a->f())};
  if (a->type() != onnx::AttributeProto::FLOATS) fail("attribute '", key, "' must be a list of floats");
  return {a->floats().begin(), a->floats().end()};
}

void NodeCtx::allow_attrs(std::initializer_list<const char*> keys) const {
  for (const auto& a : n.attribute()) {
    bool ok = false;
    for (const char* k : keys) ok = ok || a.name() == k;
    if (!ok) fail("attribute '", a.name(), "' is not supported");
  }
}

// ---------------------------------------------------------------------------------------------
// Importer

int Importer::lookup(const std::string& onnx_name) const {
  auto it = by_name_.find(onnx_name);
  OPV_CHECK(it != by_name_.end(), "value '", onnx_name, "' is not produced by any earlier node");
  return it->second;
}

std::string Importer::unique_name(const std::string& base) {
  std::string b = base.empty() ? std::string("v") : base;
  std::string nm = b;
  for (int k = 1; names_.count(nm); ++k) nm = b + "_" + std::to_string(k);
  names_.insert(nm);
  return nm;
}

int Importer::add_const(const std::string& name, Tensor t) { return g.add_const(unique_name(name), std::move(t)); }

int Importer::emit1(const NodeCtx& ctx, OpKind op, Attrs attrs, std::vector<int> ins, const std::string& out_name,
                    const std::optional<Shape>& preset) {
  std::vector<Shape> p;
  if (preset) p.push_back(*preset);
  return emit(ctx, op, std::move(attrs), std::move(ins), {out_name}, p).at(0);
}

std::vector<int> Importer::emit(const NodeCtx& ctx, OpKind op, Attrs attrs, std::vector<int> ins,
                                const std::vector<std::string>& out_names, const std::vector<Shape>& preset) {
  while (!ins.empty() && ins.back() < 0) ins.pop_back();
  std::vector<ValueInfo> vin;
  bool all_const = true;
  int64_t in_elems = 0;
  for (int id : ins) {
    OPV_ASSERT(id >= 0 && id < int(g.values.size()));
    const ir::Value& v = g.values[size_t(id)];
    vin.push_back({v.dtype, v.shape, v.data.get()});
    all_const = all_const && v.is_const();
    in_elems += numel(v.shape);
  }
  std::vector<ValueInfo> vout(out_names.size());
  for (size_t k = 0; k < preset.size() && k < vout.size(); ++k) vout[k].shape = preset[k];
  try {
    infer_shapes(op, attrs, vin, vout);
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  int64_t out_elems = 0;
  for (size_t k = 0; k < vout.size(); ++k) {
    try {
      check_tensor_limits(vout[k].dtype, vout[k].shape, "output '" + out_names[k] + "'", opts_.limits);
    } catch (const Error& e) {
      ctx.fail(e.what());
    }
    out_elems += numel(vout[k].shape);
  }
  bool fold = all_const && !(out_elems > kMaxFoldGrowthElems && out_elems > 4 * in_elems);

  ir::Node node;
  node.name = ctx.name;
  node.op = op;
  node.attrs = std::move(attrs);
  node.inputs = ins;
  if (fold) {
    std::vector<Tensor> results;
    if (op == OpKind::Identity || op == OpKind::Reshape) {
      results.push_back(g.values[size_t(ins[0])].data->reshaped(vout[0].shape));
    } else {
      // evaluate_node allocates outputs from the node's values: give it scratch values.
      ir::Graph scratch;
      std::vector<const Tensor*> tin;
      for (int id : ins) tin.push_back(g.values[size_t(id)].data.get());
      ir::Node sn = node;
      sn.outputs.clear();
      for (const ValueInfo& v : vout) {
        ir::Value sv;
        sv.dtype = v.dtype;
        sv.shape = v.shape;
        sn.outputs.push_back(scratch.add_value(sv));
      }
      try {
        results = ir::evaluate_node(scratch, sn, tin);
      } catch (const Error& e) {
        ctx.fail("constant folding ", op_name(op), " failed: ", e.what());
      }
    }
    std::vector<int> outs;
    for (size_t k = 0; k < results.size(); ++k) outs.push_back(add_const(out_names[k], std::move(results[k])));
    return outs;
  }
  for (size_t k = 0; k < vout.size(); ++k) {
    ir::Value v;
    v.name = unique_name(out_names[k]);
    v.dtype = vout[k].dtype;
    v.shape = vout[k].shape;
    node.outputs.push_back(g.add_value(std::move(v)));
  }
  std::vector<int> outs = node.outputs;
  g.add_node(std::move(node));
  return outs;
}

void Importer::import_node(const onnx::NodeProto& n, int index) {
  std::string label = !n.name().empty() ? n.name()
                      : n.output_size() && !n.output(0).empty() ? n.output(0)
                                                                 : n.op_type() + "_" + std::to_string(index);
  NodeCtx c(*this, n, label);
  if (n.output_size() == 0 || n.output(0).empty()) c.fail("node has no output");
  if (!is_default_domain(n.domain())) c.fail("operator domain '", n.domain(), "' is not supported");
  for (const auto& a : n.attribute())
    if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS)
      c.fail("subgraph attribute '", a.name(), "' is not supported");
  try {
    if (canonicalize_elementwise(c) || canonicalize_nn(c) || canonicalize_shape(c) || canonicalize_extra(c)) return;
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind("node '", 0) == 0) throw;
    c.fail(msg);
  }
  c.fail("operator '", n.op_type(), "' is not supported");
}

ir::Graph Importer::run(const onnx::ModelProto& model) {
  OPV_CHECK(model.has_graph(), "model has no graph");
  opset = 0;
  for (const auto& os : model.opset_import()) {
    if (is_default_domain(os.domain())) opset = int(os.version());
  }
  OPV_CHECK(opset != 0, "model imports no default-domain (ai.onnx) opset");
  OPV_CHECK(opset >= 1 && opset <= kMaxOpset, "opset ", opset, " is not supported (supported: ", kMinOpset, "..",
            kMaxOpset, "; newer models: convert down with onnx.version_converter)");
  if (opset < kMinOpset) {
    for (const auto& n : model.graph().node()) {
      bool ok = false;
      for (const char* k : kOpset1Ops) ok = ok || n.op_type() == k;
      OPV_CHECK(ok, "opset ", opset, " is not supported (supported: ", kMinOpset, "..", kMaxOpset, "): operator '",
                n.op_type(), "' changed before opset ", kMinOpset,
                "; upgrade the model with onnx.version_converter first");
    }
  }
  g.opset = opset;
  const onnx::GraphProto& gp = model.graph();

  // Which values are read (for "extra output must be unused" checks).
  for (const auto& n : gp.node())
    for (const auto& in : n.input()) used_.insert(in);
  for (const auto& o : gp.output()) {
    used_.insert(o.name());
    graph_outputs_.insert(o.name());
  }

  // Initializers.
  for (const auto& t : gp.initializer()) {
    OPV_CHECK(!t.name().empty(), "an initializer has no name");
    Tensor tensor = tensor_from_proto(t, base_dir_, opts_.limits);
    bind(t.name(), add_const(t.name(), std::move(tensor)));
  }
  OPV_CHECK(gp.sparse_initializer_size() == 0, "sparse initializers are not supported");

  // Runtime inputs.
  std::set<std::string> overridden;
  for (const auto& vi : gp.input()) {
    if (by_name_.count(vi.name())) continue;  // an initializer: a constant
    OPV_CHECK(vi.type().has_tensor_type(), "graph input '", vi.name(), "' is not a tensor");
    const auto& tt = vi.type().tensor_type();
    auto dt = dtype_from_onnx(tt.elem_type());
    OPV_CHECK(dt, "graph input '", vi.name(), "': element type ", onnx_type_name(tt.elem_type()), " is not supported");
    const std::pair<std::string, Shape>* ov = nullptr;
    for (const auto& o : opts_.input_shapes)
      if (o.first == vi.name()) ov = &o;
    Shape shape;
    if (ov) {
      overridden.insert(vi.name());
      shape = ov->second;
      if (tt.has_shape()) {
        OPV_CHECK(tt.shape().dim_size() == int(shape.size()), "graph input '", vi.name(), "': shape override ",
                  shape_str(shape), " has rank ", shape.size(), " but the model says rank ", tt.shape().dim_size());
        for (int d = 0; d < tt.shape().dim_size(); ++d) {
          const auto& dim = tt.shape().dim(d);
          OPV_CHECK(!dim.has_dim_value() || dim.dim_value() == shape[size_t(d)], "graph input '", vi.name(),
                    "': shape override ", shape_str(shape), " conflicts with the model's dim ", d, " = ",
                    dim.dim_value());
        }
      }
      for (int64_t d : shape)
        OPV_CHECK(d >= 0 && d <= kMaxImportElems, "graph input '", vi.name(), "': dim ", d, " out of range");
    } else {
      OPV_CHECK(tt.has_shape(), "graph input '", vi.name(),
                "' has no shape; give one with ImportOptions::input_shapes");
      for (int d = 0; d < tt.shape().dim_size(); ++d) {
        const auto& dim = tt.shape().dim(d);
        if (dim.has_dim_value() && dim.dim_value() >= 0) {
          OPV_CHECK(dim.dim_value() <= kMaxImportElems, "graph input '", vi.name(), "': dim ", d, " = ",
                    dim.dim_value(), " is out of range");
          shape.push_back(dim.dim_value());
        } else {
          std::cerr << "opvision: note: input '" << vi.name() << "' dim " << d
                    << (dim.has_dim_param() ? " ('" + dim.dim_param() + "')" : std::string()) << " is unknown; using 1\n";
          shape.push_back(1);
        }
      }
    }
    int64_t total = 1;
    for (int64_t d : shape) {
      OPV_CHECK(d == 0 || total <= kMaxImportElems / d, "graph input '", vi.name(), "': shape ", shape_str(shape),
                " is too large");
      total *= d;
    }
    check_tensor_limits(*dt, shape, "graph input '" + vi.name() + "'", opts_.limits);
    ir::Value v;
    v.name = unique_name(vi.name());
    v.dtype = *dt;
    v.shape = shape;
    int id = g.add_value(std::move(v));
    g.inputs.push_back(id);
    bind(vi.name(), id);
  }
  for (const auto& o : opts_.input_shapes)
    OPV_CHECK(overridden.count(o.first), "shape override names '", o.first, "', which is not a runtime input");

  // Nodes, in dependency order (ONNX requires it, but tolerate unsorted files).
  std::vector<int> pending(size_t(gp.node_size()));
  for (int i = 0; i < gp.node_size(); ++i) pending[size_t(i)] = i;
  while (!pending.empty()) {
    std::vector<int> later;
    for (int i : pending) {
      const auto& n = gp.node(i);
      bool ready = true;
      for (const auto& in : n.input())
        if (!in.empty() && !by_name_.count(in)) ready = false;
      if (ready) import_node(n, i);
      else later.push_back(i);
    }
    if (later.size() == pending.size()) {
      // No progress: either an input nobody produces, or nodes waiting on each other (a cycle).
      std::unordered_map<std::string, int> producer;  // output name -> pending node
      for (int i : later)
        for (const auto& o : gp.node(i).output())
          if (!o.empty()) producer.emplace(o, i);
      auto label = [&](int i) {
        const auto& n = gp.node(i);
        return "'" + (n.name().empty() ? (n.output_size() ? n.output(0) : std::string("?")) : n.name()) + "' (" +
               n.op_type() + ")";
      };
      for (int i : later)
        for (const auto& in : gp.node(i).input())
          if (!in.empty() && !by_name_.count(in) && !producer.count(in))
            fail("node ", label(i), ": input '", in, "' is not produced by any node");
      // Every missing input has a pending producer: walking producers must revisit a node.
      std::vector<int> seen_at(size_t(gp.node_size()), -1);
      std::vector<int> path;
      int cur = later[0];
      while (seen_at[size_t(cur)] < 0) {
        seen_at[size_t(cur)] = int(path.size());
        path.push_back(cur);
        int next = -1;
        for (const auto& in : gp.node(cur).input())
          if (!in.empty() && !by_name_.count(in)) {
            next = producer.at(in);
            break;
          }
        OPV_ASSERT(next >= 0);
        cur = next;
      }
      std::string cycle;
      for (size_t k = size_t(seen_at[size_t(cur)]); k < path.size(); ++k) cycle += label(path[k]) + " <- ";
      fail("graph has a cycle through node ", label(cur), ": ", cycle, label(cur));
    }
    pending = std::move(later);
  }

  // Outputs.
  for (const auto& vi : gp.output()) {
    auto it = by_name_.find(vi.name());
    OPV_CHECK(it != by_name_.end(), "graph output '", vi.name(), "' is not produced by any node");
    int id = it->second;
    const ir::Value& v = g.values[size_t(id)];
    if (vi.type().has_tensor_type()) {
      const auto& tt = vi.type().tensor_type();
      auto dt = dtype_from_onnx(tt.elem_type());
      OPV_CHECK(!tt.elem_type() || (dt && *dt == v.dtype), "graph output '", vi.name(), "' is declared ",
                onnx_type_name(tt.elem_type()), " but computes ", dtype_name(v.dtype));
      if (tt.has_shape()) {
        bool ok = tt.shape().dim_size() == int(v.shape.size());
        for (int d = 0; ok && d < tt.shape().dim_size(); ++d)
          if (tt.shape().dim(d).has_dim_value()) ok = tt.shape().dim(d).dim_value() == v.shape[size_t(d)];
        OPV_CHECK(ok, "graph output '", vi.name(), "': declared shape disagrees with the computed ",
                  shape_str(v.shape));
      }
    }
    g.outputs.push_back(id);
  }
  g.compact();
  g.validate();
  return std::move(g);
}

}  // namespace onnx_import

namespace {

ir::Graph import_model(const std::string& bytes, const std::string& base_dir, const ImportOptions& opts,
                       const std::string& source) {
  onnx::ModelProto model;
  OPV_CHECK(!bytes.empty(), source, ": file is empty");
  OPV_CHECK(model.ParseFromString(bytes), source, ": not a valid ONNX protobuf (parse failed)");
  OPV_CHECK(model.has_graph() && (model.ir_version() > 0 || model.opset_import_size() > 0), source,
            ": not an ONNX model (no graph / ir_version)");
  try {
    onnx_import::Importer im(opts, base_dir);
    ir::Graph g = im.run(model);
    g.source = source;
    return g;
  } catch (const Error& e) {
    fail(source, ": ", e.what());
  }
}

}  // namespace

ir::Graph import_onnx(const std::string& path, const ImportOptions& opts) {
  // protobuf refuses messages of 2 GiB and more; refuse them before reading.
  std::string bytes = read_file_string(path, "ONNX model", onnx_import::kMaxOnnxBytes);
  std::string dir = std::filesystem::path(path).parent_path().string();
  return import_model(bytes, dir, opts, path);
}

ir::Graph import_onnx_bytes(const std::string& bytes, const std::string& base_dir, const ImportOptions& opts) {
  return import_model(bytes, base_dir, opts, "<memory>");
}

}  // namespace opv
