// Shared by the commands that run IR3 captures (ir3 replay, qcom run, run/verify/bench with
// --backend qcom): the model that holds a capture's weights, the inputs (from an .npz or
// random), the outputs as named tensors, and the comparison with a reference .npz.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir3/capture.h"
#include "tools/args.h"
#include "tools/npy.h"

namespace opv::tools {

// The ONNX model with the capture's weights: --model, else the capture's model file name next
// to the capture or in its parent folder. `who` prefixes errors ("ir3 replay").
std::string capture_model_path(const ir3::Capture& c, const Args& a, const char* who);

// Reads the model's initializers once; the returned function gives one's raw bytes by name.
std::function<std::vector<uint8_t>(const std::string&)> initializer_reader(const std::string& model, const char* who);

struct CaptureFeed {
  std::map<std::string, std::vector<uint8_t>> bytes;  // by input name
  NamedArrays arrays;                                  // the same, when generated (--seed)
};
// Inputs from --inputs IN.npz (checked against the capture's names, dtypes and sizes) or
// random uint8 from --seed.
CaptureFeed capture_inputs(const ir3::Capture& c, const Args& a, const char* who);
// Inputs by name from an .npz (extra entries, e.g. reference outputs, are ignored).
CaptureFeed capture_inputs_from(const ir3::Capture& c, const std::string& npz_path);

// Raw output bytes (capture order) as named tensors.
NamedArrays capture_outputs(const ir3::Capture& c, const std::vector<std::vector<uint8_t>>& outs);

// Compares outputs with --ref REF.npz by name, prints "rel_l2=<x> max_abs_rel=<y>" (worst over
// outputs); true when both are within `tol` and nothing is non-finite.
bool compare_with_reference(const NamedArrays& outs, const std::string& ref_path, double tol);

}  // namespace opv::tools
