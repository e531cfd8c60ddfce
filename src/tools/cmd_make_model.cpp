// `opvision make-model OUT.onnx [options]`: writes the openpilot-architecture model of
// src/tools/make_model.h with the given shape options.
#include <cstdio>

#include "tools/common.h"
#include "tools/make_model.h"

namespace opv::tools {

namespace {
std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}
}  // namespace

int cmd_make_model(int argc, char** argv) {
  const MakeModelOptions d;
  ArgParser p("opvision make-model", "Writes an ONNX model shaped like openpilot's driving_vision network "
                                     "(FastViT-style trunk, hidden MLP, heads) with seeded random weights.",
              "OUT.onnx [options]");
  p.positional("OUT.onnx", "path of the model to write")
      .option("--height", "H", "per-image input height", std::to_string(d.height))
      .option("--width", "W", "per-image input width", std::to_string(d.width))
      .option("--in-chans", "C", "channels of each uint8 input (img, big_img)", std::to_string(d.in_chans))
      .option("--widths", "LIST", "channels of each trunk stage", join(d.widths))
      .option("--depths", "LIST", "blocks per trunk stage", join(d.depths))
      .option("--hidden", "N", "width of the hidden state", std::to_string(d.hidden))
      .option("--heads", "LIST", "output size of each head", join(d.heads))
      .flag("--fp16", "fp16 weights and arithmetic (inputs stay uint8, output fp32)")
      .option("--seed", "S", "weight seed", std::to_string(d.seed))
      .option("--opset", "N", "ONNX opset", std::to_string(d.opset));
  Args a;
  if (!parse_or_help(p, argc, argv, a)) return kExitOk;

  MakeModelOptions o;
  o.height = a.get_int("--height", d.height);
  o.width = a.get_int("--width", d.width);
  o.in_chans = a.get_int("--in-chans", d.in_chans);
  o.widths = a.get_ints("--widths", d.widths);
  o.depths = a.get_ints("--depths", d.depths);
  o.hidden = a.get_int("--hidden", d.hidden);
  o.heads = a.get_ints("--heads", d.heads);
  o.fp16 = a.has("--fp16");
  o.seed = uint64_t(a.get_int("--seed", int64_t(d.seed)));
  o.opset = a.get_int("--opset", d.opset);
  const std::string& out = a.positionals[0];
  make_model(o, out);
  std::fprintf(stderr, "[make-model] wrote %s (%lldx%lld x%lld ch, %s, output [1,%lld], opset %lld, seed %llu)\n",
               out.c_str(), (long long)o.height, (long long)o.width, (long long)o.in_chans, o.fp16 ? "fp16" : "fp32",
               (long long)make_model_output_size(o), (long long)o.opset, (unsigned long long)o.seed);
  return kExitOk;
}

}  // namespace opv::tools
