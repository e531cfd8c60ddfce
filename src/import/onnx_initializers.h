// Raw initializers of an ONNX model, by name, exactly as stored (for tools that need a model's
// weights byte for byte, such as replaying a captured a630 schedule: tools/ir3_capture.py).
#pragma once
#include <map>
#include <string>

#include "core/tensor.h"

namespace opv {

// Reads every graph initializer of the ONNX file at `path` (external data resolved and confined
// like import_onnx). Throws opv::Error naming the file and the initializer.
std::map<std::string, Tensor> read_onnx_initializers(const std::string& path);

}  // namespace opv
