// Hostile ONNX models (issue 13): attributes that divided by zero or overflowed in shape
// arithmetic, tensors beyond the size limits, cyclic graphs, and external data that tried to
// leave the model's folder. Each must be refused with an opv::Error naming the node / tensor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>

#include "onnx_test_model.h"
#include "test_util.h"

namespace opv::test {
namespace {

std::string import_error(const OnnxBuilder& b, const ImportOptions& o = {}) {
  try {
    b.import(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

#define EXPECT_HAS(hay, needle) EXPECT_NE((hay).find(needle), std::string::npos) << (hay)

// x:[1,3,8,8] -> op(attrs) -> y
OnnxBuilder window_model(const std::string& op, const std::function<void(onnx::NodeProto&)>& attrs) {
  OnnxBuilder b;
  b.input("x", kF32, {1, 3, 8, 8});
  if (op == "Conv") {
    b.init_f32("w", {3, 3, 3, 3}, std::vector<float>(81, 0.5f));
    attrs(b.node(op, {"x", "w"}, {"y"}, "/win"));
  } else {
    attrs(b.node(op, {"x"}, {"y"}, "/win"));
  }
  b.output("y");
  return b;
}

TEST(HostileImport, PoolStrideZeroIsRefused) {
  for (const char* op : {"MaxPool", "AveragePool"}) {
    for (const char* pad : {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}) {
      std::string e = import_error(window_model(op, [&](onnx::NodeProto& n) {
        OnnxBuilder::attr_ints(n, "kernel_shape", {2, 2});
        OnnxBuilder::attr_ints(n, "strides", {0, 1});
        OnnxBuilder::attr_s(n, "auto_pad", pad);
      }));
      EXPECT_HAS(e, std::string("node '/win' (") + op + "): attribute 'strides' must be >= 1, got [0,1]");
    }
    std::string e = import_error(window_model(op, [&](onnx::NodeProto& n) {
      OnnxBuilder::attr_ints(n, "kernel_shape", {0, 2});
    }));
    EXPECT_HAS(e, "attribute 'kernel_shape' must be >= 1");
  }
}

TEST(HostileImport, ConvStrideOrDilationZeroOrNegativeIsRefused) {
  for (const char* key : {"strides", "dilations"}) {
    for (int64_t v : {int64_t(0), int64_t(-1)}) {
      for (const char* pad : {"NOTSET", "SAME_UPPER"}) {
        std::string e = import_error(window_model("Conv", [&](onnx::NodeProto& n) {
          OnnxBuilder::attr_ints(n, key, {1, v});
          OnnxBuilder::attr_s(n, "auto_pad", pad);
        }));
        EXPECT_HAS(e, std::string("node '/win' (Conv): attribute '") + key + "' must be >= 1");
      }
    }
  }
}

TEST(HostileImport, HugeKernelDilationsAndPadsDoNotOverflow) {
  const int64_t big = int64_t(1) << 40;
  std::string e = import_error(window_model("MaxPool", [&](onnx::NodeProto& n) {
    OnnxBuilder::attr_ints(n, "kernel_shape", {big, 2});
    OnnxBuilder::attr_ints(n, "dilations", {big, 1});
  }));
  EXPECT_HAS(e, "node '/win' (MaxPool)");
  EXPECT_HAS(e, "overflow");
  e = import_error(window_model("MaxPool", [&](onnx::NodeProto& n) {
    OnnxBuilder::attr_ints(n, "kernel_shape", {INT64_MAX, 2});
    OnnxBuilder::attr_ints(n, "dilations", {2, 1});
    OnnxBuilder::attr_s(n, "auto_pad", "SAME_UPPER");
  }));
  EXPECT_HAS(e, "node '/win' (MaxPool)");
  EXPECT_HAS(e, "overflow");
  e = import_error(window_model("AveragePool", [&](onnx::NodeProto& n) {
    OnnxBuilder::attr_ints(n, "kernel_shape", {2, 2});
    OnnxBuilder::attr_ints(n, "pads", {INT64_MAX, 0, INT64_MAX, 0});
  }));
  EXPECT_HAS(e, "node '/win' (AveragePool)");
  e = import_error(window_model("Conv", [&](onnx::NodeProto& n) {
    OnnxBuilder::attr_ints(n, "dilations", {INT64_MAX, 1});
  }));
  EXPECT_HAS(e, "node '/win' (Conv): dilations value 9223372036854775807 is out of range");
}

TEST(HostileImport, RangeAndSplitOverflowAreErrors) {
  OnnxBuilder b;
  // ceil((limit - start) / delta) = 4 elements, but limit - start does not fit in int64.
  b.init(OnnxBuilder::tensor_i64("s", {INT64_MIN}, true, true));
  b.init(OnnxBuilder::tensor_i64("l", {INT64_MAX}, true, true));
  b.init(OnnxBuilder::tensor_i64("d", {int64_t(1) << 62}, true, true));
  b.node("Range", {"s", "l", "d"}, {"y"}, "/range");
  b.output("y");
  std::string e = import_error(b);
  EXPECT_HAS(e, "node '/range' (Range)");
  EXPECT_HAS(e, "overflow");

  OnnxBuilder sp(11);
  sp.input("x", kF32, {4});
  auto& n = sp.node("Split", {"x"}, {"a", "b"}, "/split");
  OnnxBuilder::attr_ints(n, "split", {INT64_MAX, 5});
  sp.output("a");
  sp.output("b");
  e = import_error(sp);
  EXPECT_HAS(e, "node '/split' (Split)");
}

TEST(HostileImport, BillionElementTensorsAreRefusedUnderDefaultLimits) {
  OnnxBuilder b;
  b.input("x", kF32, {1000, 1000, 1000});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  std::string e = import_error(b);
  EXPECT_HAS(e, "graph input 'x': tensor f32[1000,1000,1000] has more than 268435456 elements");

  // An inferred value over the limit (small input, Tile to 1e9 elements) names its node.
  OnnxBuilder t;
  t.input("x", kF32, {10, 10});
  t.init_i64("r", {100000, 100000});
  t.node("Tile", {"x", "r"}, {"y"}, "/tile");
  t.output("y");
  e = import_error(t);
  EXPECT_HAS(e, "node '/tile' (Tile)");
  EXPECT_HAS(e, "the per-tensor limit");

  // The limits are configurable per import.
  OnnxBuilder s;
  s.input("x", kF32, {64, 64});
  s.node("Relu", {"x"}, {"y"});
  s.output("y");
  ImportOptions o;
  EXPECT_EQ(import_error(s, o), "<no error>");
  o.limits.max_tensor_elems = 1000;
  EXPECT_HAS(import_error(s, o), "more than 1000 elements");
  o.limits = Limits{};
  o.limits.max_tensor_bytes = 1024;
  EXPECT_HAS(import_error(s, o), "more than the per-tensor limit of 1024 bytes");
}

TEST(HostileImport, CyclicGraphIsNamed) {
  OnnxBuilder b;
  b.input("x", kF32, {4});
  b.node("Add", {"x", "c"}, {"a"}, "/first");
  b.node("Relu", {"a"}, {"c"}, "/second");
  b.node("Relu", {"a"}, {"y"}, "/out");
  b.output("y");
  std::string e = import_error(b);
  EXPECT_HAS(e, "graph has a cycle through node '/");
  EXPECT_HAS(e, "'/first' (Add)");
  EXPECT_HAS(e, "'/second' (Relu)");
  EXPECT_EQ(e.find("not produced by any node"), std::string::npos) << e;

  OnnxBuilder m;  // a genuinely missing input keeps its message
  m.input("x", kF32, {4});
  m.node("Add", {"x", "nowhere"}, {"y"}, "/add");
  m.output("y");
  EXPECT_HAS(import_error(m), "input 'nowhere' is not produced by any node");
}

OnnxBuilder external_model(const std::string& loc) {
  OnnxBuilder b;
  b.input("x", kF32, {2});
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(kF32);
  t.add_dims(2);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = t.add_external_data();
  e->set_key("location");
  e->set_value(loc);
  b.init(t);
  b.node("Mul", {"x", "w"}, {"y"});
  b.output("y");
  return b;
}

std::string import_file_error(const std::string& path) {
  try {
    import_onnx(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(HostileImport, ExternalDataIsConfinedToTheModelFolder) {
  namespace fs = std::filesystem;
  const fs::path root = temp_dir();
  const fs::path dir = root / "model";
  fs::create_directories(dir / "sub");
  const float w[2] = {3.f, 4.f};
  auto write_weights = [&](const fs::path& p) {
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(w), sizeof w);
  };
  write_weights(root / "secret.bin");  // outside the model folder
  write_weights(dir / "sub" / "w.bin");
  fs::create_symlink(root / "secret.bin", dir / "escape.bin");
  fs::create_symlink(dir / "sub" / "w.bin", dir / "inside.bin");
  fs::create_directory_symlink(root, dir / "up");
  auto model_at = [&](const std::string& loc) {
    const fs::path p = dir / "m.onnx";
    std::ofstream(p, std::ios::binary | std::ios::trunc) << external_model(loc).bytes();
    return p.string();
  };

  // Inside the folder: plain, in a subfolder, and through a symlink that stays inside.
  for (const char* ok : {"sub/w.bin", "./sub/w.bin", "inside.bin"}) {
    ir::Graph g = import_onnx(model_at(ok));
    EXPECT_EQ(g.values[size_t(g.nodes.at(0).inputs[1])].data->get_f64(1), 4.0) << ok;
  }
  EXPECT_HAS(import_file_error(model_at("../secret.bin")), "initializer 'w': external data location '../secret.bin' contains '..'");
  EXPECT_HAS(import_file_error(model_at("sub/../../secret.bin")), "contains '..'");
  EXPECT_HAS(import_file_error(model_at((root / "secret.bin").string())), "is an absolute path");
  EXPECT_HAS(import_file_error(model_at("escape.bin")), "outside the model's folder");
  EXPECT_HAS(import_file_error(model_at("up/secret.bin")), "outside the model's folder");
  EXPECT_HAS(import_file_error(model_at("sub")), "not a regular file");
  fs::remove_all(root);
}

}  // namespace
}  // namespace opv::test
