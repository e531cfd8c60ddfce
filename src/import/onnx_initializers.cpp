// read_onnx_initializers: parse the model, convert each initializer with the importer's own
// tensor reader (same dtype rules, limits and external-data confinement).
#include "import/onnx_initializers.h"

#include <filesystem>

#include "core/file_io.h"
#include "import/importer.h"

namespace opv {

std::map<std::string, Tensor> read_onnx_initializers(const std::string& path) {
  std::string bytes = read_file_string(path, "ONNX model", (uint64_t(1) << 31) - 1);
  onnx::ModelProto model;
  OPV_CHECK(!bytes.empty() && model.ParseFromString(bytes), path, ": not a valid ONNX protobuf (parse failed)");
  OPV_CHECK(model.has_graph(), path, ": not an ONNX model (no graph)");
  std::string dir = std::filesystem::path(path).parent_path().string();
  std::map<std::string, Tensor> out;
  try {
    for (const auto& t : model.graph().initializer()) out[t.name()] = onnx_import::tensor_from_proto(t, dir);
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
  return out;
}

}  // namespace opv
