// Private to src/import: the state shared by the ONNX reader, the import driver and the
// per-op-group canonicalisers. Only these files include protobuf/libonnx headers.
#pragma once
#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "import/onnx_import.h"
#include "ir/graph.h"

namespace opv::onnx_import {

// Tensors/dims larger than this many elements are rejected as corrupt input.
constexpr int64_t kMaxImportElems = int64_t(1) << 40;

// ---- onnx_reader.cpp ----
// Maps an ONNX TensorProto data type to a DType; nullopt for types we do not carry.
std::optional<DType> dtype_from_onnx(int32_t t);
const char* onnx_type_name(int32_t t);
// Converts an initializer / Constant tensor, reading external data relative to base_dir.
// The tensor's size is checked against `limits` before anything is allocated or read. External
// data must be a regular file inside base_dir (no absolute paths, no '..', no symlink leading out).
Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& base_dir, const Limits& limits = Limits{});

// One ONNX node being imported: attribute access with defaults and error helpers that name it.
class NodeCtx;

// The import state: graph under construction plus the ONNX name -> value id map.
class Importer {
 public:
  Importer(const ImportOptions& opts, std::string base_dir) : opts_(opts), base_dir_(std::move(base_dir)) {}
  ir::Graph run(const onnx::ModelProto& model);

  ir::Graph g;
  int opset = 0;
  const std::string& base_dir() const { return base_dir_; }
  const Limits& limits() const { return opts_.limits; }

  // Adds a canonical node with inputs `ins` (-1 = absent), infers its output shapes (`preset`
  // gives shapes for ops whose output shape lives on the value), folds it right away when all
  // inputs are constant (unless the result would be a huge constant built from small inputs),
  // and returns the output value ids. `out_names` name the outputs (made unique).
  std::vector<int> emit(const NodeCtx& ctx, OpKind op, Attrs attrs, std::vector<int> ins,
                        const std::vector<std::string>& out_names, const std::vector<Shape>& preset = {});
  int emit1(const NodeCtx& ctx, OpKind op, Attrs attrs, std::vector<int> ins, const std::string& out_name,
            const std::optional<Shape>& preset = std::nullopt);
  int add_const(const std::string& name, Tensor t);
  std::string unique_name(const std::string& base);

  // ONNX name -> value id.
  void bind(const std::string& onnx_name, int v) { by_name_[onnx_name] = v; }
  int lookup(const std::string& onnx_name) const;
  // Whether an ONNX value is read by any node or is a graph output.
  bool is_used(const std::string& onnx_name) const { return used_.count(onnx_name) != 0; }
  bool is_graph_output(const std::string& onnx_name) const { return graph_outputs_.count(onnx_name) != 0; }

 private:
  void import_node(const onnx::NodeProto& n, int index);
  const ImportOptions& opts_;
  std::string base_dir_;
  std::unordered_map<std::string, int> by_name_;
  std::set<std::string> names_;
  std::set<std::string> used_;
  std::set<std::string> graph_outputs_;
};

class NodeCtx {
 public:
  NodeCtx(Importer& im, const onnx::NodeProto& n, std::string label_name)
      : im(im), n(n), name(std::move(label_name)) {}
  Importer& im;
  const onnx::NodeProto& n;
  std::string name;  // node name used in messages and for generated values

  const std::string& op() const { return n.op_type(); }
  std::string label() const { return "node '" + name + "' (" + n.op_type() + ")"; }
  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    ::opv::fail(label(), ": ", args...);
  }

  // Inputs: count (trailing empty names ignored), id or -1 for absent, and helpers.
  int num_inputs() const;
  bool has_input(int i) const { return i < num_inputs() && !n.input(i).empty(); }
  int in(int i) const;        // required input: error when absent
  int in_opt(int i) const;    // -1 when absent
  const ir::Value& val(int id) const { return im.g.values.at(size_t(id)); }
  // Constant contents of input i; error "input 'what' must be a constant" otherwise.
  const Tensor& const_in(int i, const char* what) const;
  std::vector<int64_t> const_ints(int i, const char* what) const;
  double const_scalar(int i, const char* what) const;

  // Outputs.
  int num_outputs() const;
  const std::string& out_name(int i) const { return n.output(i); }
  bool output_used(int i) const { return i < n.output_size() && !n.output(i).empty() && im.is_used(n.output(i)); }
  void require_unused_outputs_from(int first, const char* what) const;
  void bind_out(int i, int v) const { im.bind(n.output(i), v); }
  // Aliases output i to value v (Identity-like ops); emits an Identity node instead when the
  // output is a graph output so the model's output keeps its name.
  void alias_out(int i, int v) const;

  // Emits the node's final op (outputs named after the ONNX outputs) and binds them.
  int emit_out(OpKind op, Attrs a, std::vector<int> ins, const std::optional<Shape>& preset = std::nullopt) const;
  // Emits an intermediate node whose output gets a generated name.
  int emit_tmp(OpKind op, Attrs a, std::vector<int> ins, const std::string& suffix,
               const std::optional<Shape>& preset = std::nullopt) const;

  // Attributes.
  const onnx::AttributeProto* attr(const char* key) const;
  bool has(const char* key) const { return attr(key) != nullptr; }
  int64_t i(const char* key, int64_t dflt) const;
  double f(const char* key, double dflt) const;
  std::string s(const char* key, const std::string& dflt) const;
  std::vector<int64_t> ints(const char* key, const std::vector<int64_t>& dflt = {}) const;
  std::vector<double> floats(const char* key, const std::vector<double>& dflt = {}) const;
  // Fails on any attribute not listed (catches silently ignored semantics).
  void allow_attrs(std::initializer_list<const char*> keys) const;
};

// An ONNX op that maps one-to-one onto an OpKind with no attributes.
struct SimpleOp {
  const char* onnx;
  OpKind op;
};
// Emits c's op when it is one of `unary` (one input) or `binary` (two inputs), refusing any
// attribute; false when the op type is in neither table.
template <size_t NU, size_t NB>
bool emit_simple(NodeCtx& c, const SimpleOp (&unary)[NU], const SimpleOp (&binary)[NB]) {
  for (const SimpleOp& s : unary)
    if (c.op() == s.onnx) {
      c.allow_attrs({});
      c.emit_out(s.op, {}, {c.in(0)});
      return true;
    }
  for (const SimpleOp& s : binary)
    if (c.op() == s.onnx) {
      c.allow_attrs({});
      c.emit_out(s.op, {}, {c.in(0), c.in(1)});
      return true;
    }
  return false;
}

// ---- canonicalisers: each returns false when it does not handle the op type ----
bool canonicalize_elementwise(NodeCtx& c);  // canonicalize_elementwise.cpp
bool canonicalize_nn(NodeCtx& c);           // canonicalize_nn.cpp
bool canonicalize_shape(NodeCtx& c);        // canonicalize_shape.cpp
bool canonicalize_extra(NodeCtx& c);        // canonicalize_extra.cpp

}  // namespace opv::onnx_import
