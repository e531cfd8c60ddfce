// A tiny builder for ONNX ModelProtos in the import tests, plus graph-inspection helpers.
#pragma once
#include <onnx/onnx_pb.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"
#include "import/onnx_import.h"
#include "ir/graph.h"

namespace opv::test {

constexpr int32_t kF32 = onnx::TensorProto::FLOAT;
constexpr int32_t kF16 = onnx::TensorProto::FLOAT16;
constexpr int32_t kI64 = onnx::TensorProto::INT64;
constexpr int32_t kU8 = onnx::TensorProto::UINT8;

class OnnxBuilder {
 public:
  onnx::ModelProto m;
  onnx::GraphProto* g;

  explicit OnnxBuilder(int opset = 17) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    g = m.mutable_graph();
    g->set_name("test");
  }

  // dims: -1 marks a symbolic dim "N".
  void input(const std::string& name, int32_t type, const std::vector<int64_t>& dims) {
    auto* vi = g->add_input();
    vi->set_name(name);
    fill_type(vi, type, dims);
  }
  void output(const std::string& name, int32_t type = 0, const std::vector<int64_t>* dims = nullptr) {
    auto* vi = g->add_output();
    vi->set_name(name);
    if (type) {
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(type);
      if (dims) fill_type(vi, type, *dims);
    }
  }

  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs, const std::string& name = "") {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? "/" + op + std::to_string(g->node_size()) : name);
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    return *n;
  }

  static void attr_i(onnx::NodeProto& n, const std::string& k, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_f(onnx::NodeProto& n, const std::string& k, float v) {
    auto* a = n.add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr_s(onnx::NodeProto& n, const std::string& k, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void attr_ints(onnx::NodeProto& n, const std::string& k, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr_t(onnx::NodeProto& n, const std::string& k, const onnx::TensorProto& t) {
    auto* a = n.add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = t;
  }

  static onnx::TensorProto tensor_f32(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<float>& v, bool raw) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(kF32);
    for (int64_t d : dims) t.add_dims(d);
    if (raw) t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
    else
      for (float x : v) t.add_float_data(x);
    return t;
  }
  static onnx::TensorProto tensor_i64(const std::string& name, const std::vector<int64_t>& v, bool raw = true,
                                      bool scalar = false) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(kI64);
    if (!scalar) t.add_dims(int64_t(v.size()));
    if (raw) t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8));
    else
      for (int64_t x : v) t.add_int64_data(x);
    return t;
  }

  void init(const onnx::TensorProto& t) { *g->add_initializer() = t; }
  void init_f32(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v,
                bool raw = true) {
    init(tensor_f32(name, dims, v, raw));
  }
  void init_i64(const std::string& name, const std::vector<int64_t>& v, bool raw = true) {
    init(tensor_i64(name, v, raw));
  }
  void init_f16(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v, bool raw) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(kF16);
    for (int64_t d : dims) t.add_dims(d);
    std::vector<uint16_t> h;
    for (float x : v) h.push_back(float_to_half(x));
    if (raw) t.set_raw_data(std::string(reinterpret_cast<const char*>(h.data()), h.size() * 2));
    else
      for (uint16_t x : h) t.add_int32_data(x);
    init(t);
  }

  std::string bytes() const { return m.SerializeAsString(); }
  ir::Graph import(const ImportOptions& o = {}) const { return import_onnx_bytes(bytes(), "", o); }

 private:
  static void fill_type(onnx::ValueInfoProto* vi, int32_t type, const std::vector<int64_t>& dims) {
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    auto* sh = tt->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = sh->add_dim();
      if (d < 0) dim->set_dim_param("N");
      else dim->set_dim_value(d);
    }
  }
};

inline int count_op(const ir::Graph& g, OpKind k) {
  int c = 0;
  for (const auto& n : g.nodes)
    if (!n.dead && n.op == k) ++c;
  return c;
}

// The only live node of kind k (fails the test otherwise via the returned nullptr).
inline const ir::Node* only_node(const ir::Graph& g, OpKind k) {
  const ir::Node* r = nullptr;
  for (const auto& n : g.nodes)
    if (!n.dead && n.op == k) {
      if (r) return nullptr;
      r = &n;
    }
  return r;
}

inline const ir::Value& out_value(const ir::Graph& g, size_t i = 0) { return g.values.at(size_t(g.outputs.at(i))); }

}  // namespace opv::test
