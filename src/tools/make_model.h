// make-model: writes a deterministic, randomly initialised ONNX model with the shape of
// openpilot's driving_vision network (FastViT-style trunk, summarise conv, hidden MLP and
// small MLP heads), in the op patterns PyTorch's exporter produces. Used by the CLI
// (`opvision make-model`, `opvision demo`), the tests and the benchmark; it never needs
// PyTorch. The architecture is described in make_model.cpp's opening comment.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace opv::tools {

struct MakeModelOptions {
  int64_t height = 128;   // per-image height; divisible by the total stride (32 for 4 stages)
  int64_t width = 256;    // per-image width; same rule
  int64_t in_chans = 12;  // channels of each uint8 input (`img`, `big_img`)
  std::vector<int64_t> widths{64, 128, 256, 512};  // channels of each trunk stage
  std::vector<int64_t> depths{2, 2, 6, 2};          // RepMixer blocks per stage
  int64_t hidden = 512;                             // width of the hidden state
  std::vector<int64_t> heads{12, 12, 6, 6, 32, 8, 8, 2, 2, 8, 8, 4, 4, 4, 4};  // head outputs
  bool fp16 = false;  // fp16 weights and arithmetic (uint8 inputs, fp32 output stay)
  uint64_t seed = 0;  // weights are a pure function of (options, seed)
  int64_t opset = 17; // ONNX default-domain opset, kMakeModelMinOpset..kMakeModelMaxOpset
};

inline constexpr int64_t kMakeModelMinOpset = 13;
inline constexpr int64_t kMakeModelMaxOpset = 21;

// Throws opv::Error naming the offending option when the options cannot describe a model.
void validate(const MakeModelOptions& opts);

// Number of elements of the output `outputs` ([1, hidden + sum(heads)]).
int64_t make_model_output_size(const MakeModelOptions& opts);

// The serialized ONNX ModelProto for the options (validates them first).
std::string make_model_bytes(const MakeModelOptions& opts);

// Writes make_model_bytes(opts) to out_path; throws opv::Error on bad options or I/O failure.
void make_model(const MakeModelOptions& opts, const std::string& out_path);

}  // namespace opv::tools
