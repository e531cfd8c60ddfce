// ONNX import: the only code that uses protobuf/libonnx. Produces a canonical ir::Graph (ops.def)
// with static shapes; shape arithmetic is folded while importing.
#pragma once
#include <string>

#include "core/limits.h"
#include "ir/graph.h"

namespace opv {

struct ImportOptions {
  // Overrides for graph inputs whose ONNX shape has symbolic/unknown dims: name -> shape.
  // Unknown dims without an override default to 1 (batch-like), with a note on stderr.
  std::vector<std::pair<std::string, Shape>> input_shapes;
  // Per-tensor size limits (core/limits.h) applied to every initializer, graph input and
  // inferred value; a model breaking them is refused before anything that large is allocated.
  // Defaults to the process-wide limits at the time the options are made.
  Limits limits = default_limits();
};

// Reads an ONNX model file (external-data initializers are resolved relative to its folder).
// Throws opv::Error naming the node, op and what is unsupported.
ir::Graph import_onnx(const std::string& path, const ImportOptions& opts = {});
// Same, from bytes in memory (external data resolved relative to `base_dir`).
ir::Graph import_onnx_bytes(const std::string& bytes, const std::string& base_dir,
                            const ImportOptions& opts = {});

}  // namespace opv
