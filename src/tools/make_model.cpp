/* make-model: builds an openpilot driving_vision-shaped ONNX model with libonnx's protobuf
 * classes, mirroring what torch.onnx.export writes for the FastViT-based fixture
 * (../shared/models/make_fixtures.py, opvision_t12_fp16.onnx).
 *
 * Graph, for widths w0..wS-1 and C = 2*in_chans:
 *  1. Concat(img, big_img) on channels -> Cast to the compute type -> Sub(mean) -> Div(std)
 *     with per-channel [1,C,1,1] initializers.
 *  2. Stem: 3x3 s2 conv C->w0 + GELU; depthwise 3x3 s2 + GELU; 1x1 + GELU. GELU is the erf
 *     form the exporter writes: Div(x, sqrt2) -> Erf -> Add(1) -> Mul(x, .) -> Mul(0.5), its
 *     constants as Constant nodes.
 *  3. Stage i > 0 opens with a patch embedding: 7x7 s2 grouped conv w(i-1)->wi (groups =
 *     gcd of the two widths, i.e. w(i-1) for doubling widths; no activation, as in the
 *     fixture) then 1x1 conv + GELU.
 *  4. depths[i] RepMixer blocks (reparameterised): t = depthwise 3x3 conv with bias (near
 *     identity, as a reparameterised mixer is); ConvMlp: depthwise 7x7 conv without bias ->
 *     BatchNormalization (kept as a node so BN folding matters) -> 1x1 expand x3 + GELU ->
 *     1x1 project -> Mul(layer scale [C,1,1]) -> Add(t, .).
 *  5. Final conv: 3x3 grouped conv wS->2wS (channel multiplier 2, as the fixture's
 *     MobileOne final conv) -> squeeze-excite (ReduceMean over H,W keepdims -> 1x1 -> Relu ->
 *     1x1 -> Sigmoid -> Mul) -> GELU.
 *  6. 1x1 summarise conv to 32 + GELU -> Flatten -> Gemm(->1024)+Relu -> Gemm(->hidden)+Relu.
 *  7. Heads: Gemm(hidden->256)+Relu -> Gemm(256->128)+Relu -> Gemm(128->n). Head 12 is a
 *     byte-identical copy of head 11 (Identity nodes on head 11's initializers, as the
 *     exporter writes shared parameters) when both exist with the same width.
 *  8. Concat([hidden, heads...], axis 1) -> Cast to float -> output `outputs`.
 * Weights: Kaiming-like normal draws from a seeded mt19937_64 (our own Box-Muller, so the
 * stream is the same on every standard library); BN statistics and layer scales are
 * non-trivial (the ranges make_fixtures.py uses). Invariant: the bytes written are a pure
 * function of the options.
 */
#include "tools/make_model.h"

#include <onnx/onnx_pb.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numbers>
#include <numeric>
#include <random>

#include "core/error.h"
#include "core/file_io.h"
#include "core/half.h"

namespace opv::tools {
namespace {

constexpr int64_t kStemStride = 4;          // two stride-2 convs in the stem
constexpr int64_t kStageStride = 2;         // each patch embedding halves H and W
constexpr int64_t kMlpRatio = 3;            // ConvMlp expansion
constexpr int64_t kSeReduction = 16;        // squeeze-excite channel reduction
constexpr int64_t kSummariseChannels = 32;  // summarise conv output channels
constexpr int64_t kHiddenPre = 1024;        // first hidden Gemm width
constexpr int64_t kHeadL1 = 256;
constexpr int64_t kHeadL2 = 128;
constexpr size_t kDupHeadSrc = 11;  // head 12 repeats head 11 (openpilot's duplicate chain)
constexpr size_t kDupHeadDst = 12;
constexpr int64_t kMaxDim = 1 << 16;  // sanity bound on any size option
// Protobuf refuses messages of 2 GiB and more; leave room for the graph itself.
constexpr double kMaxWeightBytes = 1.9 * 1024.0 * 1024.0 * 1024.0;
constexpr float kBnEpsilon = 1e-5f;
constexpr float kBnMomentum = 0.9f;

// ONNX IR version that goes with an opset of the default domain (onnx/docs/Versioning.md).
int64_t ir_version_for_opset(int64_t opset) {
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  return 10;
}

// Deterministic draws; independent of the standard library's distributions.
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  double uniform() { return double(gen_() >> 11) * (1.0 / 9007199254740992.0); }  // [0,1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    double u1 = 0;
    while (u1 <= 0) u1 = uniform();
    double u2 = uniform();
    double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
    have_spare_ = true;
    return r * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::mt19937_64 gen_;
  double spare_ = 0;
  bool have_spare_ = false;
};

std::string join_dims(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s;
}

// Total downsampling of the trunk: the stem, then one patch embedding per later stage.
int64_t stage_stride(const MakeModelOptions& o) {
  int64_t s = kStemStride;
  for (size_t i = 1; i < o.widths.size(); ++i) s *= kStageStride;
  return s;
}

// Weight-element count of the model, for the protobuf size check.
double count_weights(const MakeModelOptions& o) {
  double n = 0;
  const double c_in = 2.0 * double(o.in_chans);
  const double w0 = double(o.widths[0]);
  n += 2 * c_in + c_in * w0 * 9 + w0 * 9 + w0 * w0 + 3 * w0;
  for (size_t i = 0; i < o.widths.size(); ++i) {
    double c = double(o.widths[i]);
    if (i > 0) {
      double p = double(o.widths[i - 1]);
      double g = double(std::gcd(o.widths[i - 1], o.widths[i]));
      n += c * (p / g) * 49 + c * c + 2 * c;
    }
    n += double(o.depths[i]) * (c * 9 + c * 49 + 4 * c + 2 * kMlpRatio * c * c + 5 * c);
  }
  double last = double(o.widths.back());
  n += 2 * last * 9 + 2 * last + 2 * (2 * last * (2 * last / kSeReduction + 1));
  const double stride = double(kStemStride) * std::pow(double(kStageStride), o.widths.size() - 1);
  const double spatial = double(o.height) * double(o.width) / (stride * stride);
  n += 2 * last * kSummariseChannels + kSummariseChannels;
  n += kSummariseChannels * spatial * kHiddenPre + kHiddenPre;
  n += kHiddenPre * double(o.hidden) + double(o.hidden);
  for (int64_t h : o.heads)
    n += double(o.hidden) * kHeadL1 + kHeadL1 + kHeadL1 * kHeadL2 + kHeadL2 + kHeadL2 * h + h;
  return n;
}

// Appends graph pieces with exporter-style names ("/scope/Op" nodes, "<node>_output_0"
// values, dotted parameter names for initializers).
class Builder {
 public:
  Builder(onnx::GraphProto* graph, const MakeModelOptions& opts)
      : g_(graph), opts_(opts), rng_(opts.seed) {}

  int32_t compute_type() const {
    return opts_.fp16 ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT;
  }

  // An initializer in the compute type holding `values`.
  std::string init(const std::string& name, const std::vector<int64_t>& dims,
                   const std::vector<float>& values) {
    onnx::TensorProto* t = g_->add_initializer();
    fill_tensor(t, name, dims, values);
    return name;
  }

  std::string init_normal(const std::string& name, const std::vector<int64_t>& dims,
                          double stddev) {
    std::vector<float> v(size_t(numel(dims)));
    for (float& x : v) x = float(rng_.normal() * stddev);
    return init(name, dims, v);
  }

  std::string init_uniform(const std::string& name, const std::vector<int64_t>& dims, double lo,
                           double hi) {
    std::vector<float> v(size_t(numel(dims)));
    for (float& x : v) x = float(rng_.uniform(lo, hi));
    return init(name, dims, v);
  }

  // A scalar Constant node in the compute type, named like the exporter's.
  std::string constant(const std::string& scope, const std::string& tag, float value) {
    std::string name = scope + "/" + tag;
    onnx::NodeProto* n = g_->add_node();
    n->set_op_type("Constant");
    n->set_name(name);
    n->add_output(name + "_output_0");
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    fill_tensor(a->mutable_t(), "", {}, {value});
    return n->output(0);
  }

  onnx::NodeProto* node(const std::string& op, const std::string& name,
                        const std::vector<std::string>& inputs) {
    onnx::NodeProto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const std::string& in : inputs) n->add_input(in);
    n->add_output(name + "_output_0");
    return n;
  }

  static void attr_ints(onnx::NodeProto* n, const std::string& key,
                        const std::vector<int64_t>& v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr_int(onnx::NodeProto* n, const std::string& key, int64_t v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_float(onnx::NodeProto* n, const std::string& key, float v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }

  // Conv with Kaiming-like weights (gain: 2 before GELU/ReLU, 1 otherwise).
  std::string conv(const std::string& scope, const std::string& param, const std::string& x,
                   int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t groups,
                   bool bias, double gain) {
    const int64_t fan_in = cin / groups * k * k;
    std::vector<std::string> ins{x, init_normal(param + ".weight", {cout, cin / groups, k, k},
                                                std::sqrt(gain / double(fan_in)))};
    if (bias) ins.push_back(init_uniform(param + ".bias", {cout}, -0.1, 0.1));
    onnx::NodeProto* n = node("Conv", scope + "/Conv", ins);
    attr_ints(n, "dilations", {1, 1});
    attr_int(n, "group", groups);
    attr_ints(n, "kernel_shape", {k, k});
    const int64_t pad = k / 2;
    attr_ints(n, "pads", {pad, pad, pad, pad});
    attr_ints(n, "strides", {stride, stride});
    return n->output(0);
  }

  // Depthwise 3x3 conv that starts from the identity (centre tap 1) plus noise: the shape
  // of a reparameterised RepMixer token mixer, x + scale * (mix(x) - bn(x)).
  std::string mixer_conv(const std::string& scope, const std::string& param, const std::string& x,
                         int64_t c) {
    constexpr int64_t k = 3;
    std::vector<float> w(size_t(c * k * k));
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < k * k; ++i)
        w[size_t(ch * k * k + i)] = float((i == k * k / 2 ? 1.0 : 0.0) + 0.15 * rng_.normal());
    std::vector<std::string> ins{x, init(param + ".weight", {c, 1, k, k}, w),
                                 init_uniform(param + ".bias", {c}, -0.1, 0.1)};
    onnx::NodeProto* n = node("Conv", scope + "/Conv", ins);
    attr_ints(n, "dilations", {1, 1});
    attr_int(n, "group", c);
    attr_ints(n, "kernel_shape", {k, k});
    attr_ints(n, "pads", {1, 1, 1, 1});
    attr_ints(n, "strides", {1, 1});
    return n->output(0);
  }

  // GELU in the erf form torch.onnx.export writes for nn.GELU().
  std::string gelu(const std::string& scope, const std::string& x) {
    std::string c0 = constant(scope, "Constant", float(std::numbers::sqrt2));
    std::string d = node("Div", scope + "/Div", {x, c0})->output(0);
    std::string e = node("Erf", scope + "/Erf", {d})->output(0);
    std::string c1 = constant(scope, "Constant_1", 1.0f);
    std::string a = node("Add", scope + "/Add", {e, c1})->output(0);
    std::string m = node("Mul", scope + "/Mul", {x, a})->output(0);
    std::string c2 = constant(scope, "Constant_2", 0.5f);
    return node("Mul", scope + "/Mul_1", {m, c2})->output(0);
  }

  std::string unary(const std::string& op, const std::string& scope, const std::string& x) {
    return node(op, scope + "/" + op, {x})->output(0);
  }

  // Gemm with transB=1 as nn.Linear exports; weights named param.weight/bias.
  std::string linear(const std::string& scope, const std::string& param, const std::string& x,
                     int64_t in, int64_t out, double gain) {
    std::string w = init_normal(param + ".weight", {out, in}, std::sqrt(gain / double(in)));
    std::string b = init_uniform(param + ".bias", {out}, -0.1, 0.1);
    return linear_with(scope, x, w, b);
  }
  std::string linear_with(const std::string& scope, const std::string& x, const std::string& w,
                          const std::string& b) {
    onnx::NodeProto* n = node("Gemm", scope + "/Gemm", {x, w, b});
    attr_float(n, "alpha", 1.0f);
    attr_float(n, "beta", 1.0f);
    attr_int(n, "transB", 1);
    return n->output(0);
  }

  // Identity node from an existing initializer to a new name (shared parameters).
  std::string alias(const std::string& src, const std::string& dst) {
    onnx::NodeProto* n = g_->add_node();
    n->set_op_type("Identity");
    n->set_name("Identity_" + dst);
    n->add_input(src);
    n->add_output(dst);
    return dst;
  }

  // BatchNormalization in inference mode with non-trivial statistics.
  std::string batch_norm(const std::string& scope, const std::string& param, const std::string& x,
                         int64_t c) {
    std::vector<std::string> ins{x, init_uniform(param + ".weight", {c}, 0.5, 1.5),
                                 init_uniform(param + ".bias", {c}, -0.2, 0.2),
                                 init_uniform(param + ".running_mean", {c}, -0.2, 0.2),
                                 init_uniform(param + ".running_var", {c}, 0.5, 1.5)};
    onnx::NodeProto* n = node("BatchNormalization", scope + "/BatchNormalization", ins);
    attr_float(n, "epsilon", kBnEpsilon);
    attr_float(n, "momentum", kBnMomentum);
    return n->output(0);
  }

  // ReduceMean over H and W with keepdims; axes moved from attribute to input in opset 18.
  std::string reduce_mean_hw(const std::string& scope, const std::string& x) {
    if (opts_.opset >= 18) {
      std::string axes = scope + "/Constant_output_0";
      onnx::NodeProto* c = g_->add_node();
      c->set_op_type("Constant");
      c->set_name(scope + "/Constant");
      c->add_output(axes);
      onnx::AttributeProto* a = c->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      onnx::TensorProto* t = a->mutable_t();
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_dims(2);
      t->add_int64_data(2);
      t->add_int64_data(3);
      onnx::NodeProto* n = node("ReduceMean", scope + "/ReduceMean", {x, axes});
      attr_int(n, "keepdims", 1);
      return n->output(0);
    }
    onnx::NodeProto* n = node("ReduceMean", scope + "/ReduceMean", {x});
    attr_ints(n, "axes", {2, 3});
    attr_int(n, "keepdims", 1);
    return n->output(0);
  }

 private:
  static int64_t numel(const std::vector<int64_t>& dims) {
    return std::accumulate(dims.begin(), dims.end(), int64_t(1), std::multiplies<int64_t>());
  }

  // Little-endian raw_data in the compute type (ONNX stores raw_data little-endian).
  void fill_tensor(onnx::TensorProto* t, const std::string& name, const std::vector<int64_t>& dims,
                   const std::vector<float>& values) const {
    if (!name.empty()) t->set_name(name);
    for (int64_t d : dims) t->add_dims(d);
    t->set_data_type(compute_type());
    std::string raw;
    if (opts_.fp16) {
      raw.resize(values.size() * 2);
      for (size_t i = 0; i < values.size(); ++i) {
        uint16_t h = float_to_half(values[i]);
        raw[2 * i] = char(h & 0xff);
        raw[2 * i + 1] = char(h >> 8);
      }
    } else {
      raw.resize(values.size() * 4);
      for (size_t i = 0; i < values.size(); ++i) {
        uint32_t b;
        std::memcpy(&b, &values[i], 4);
        for (int k = 0; k < 4; ++k) raw[4 * i + size_t(k)] = char((b >> (8 * k)) & 0xff);
      }
    }
    t->set_raw_data(std::move(raw));
  }

  onnx::GraphProto* g_;
  const MakeModelOptions& opts_;
  Rng rng_;
};

void add_io(onnx::ValueInfoProto* v, const std::string& name, int32_t elem,
            const std::vector<int64_t>& dims) {
  v->set_name(name);
  onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

constexpr double kGainRelu = 2.0;    // Kaiming gain for layers followed by GELU/ReLU
constexpr double kGainLinear = 1.0;  // for layers followed by nothing

void build_graph(onnx::GraphProto* g, const MakeModelOptions& o) {
  Builder b(g, o);
  const int64_t c_in = 2 * o.in_chans;
  add_io(g->add_input(), "img", onnx::TensorProto::UINT8, {1, o.in_chans, o.height, o.width});
  add_io(g->add_input(), "big_img", onnx::TensorProto::UINT8,
         {1, o.in_chans, o.height, o.width});

  // 1. input normalisation
  onnx::NodeProto* cat = b.node("Concat", "/Concat", {"img", "big_img"});
  Builder::attr_int(cat, "axis", 1);
  onnx::NodeProto* cast = b.node("Cast", "/Cast", {cat->output(0)});
  Builder::attr_int(cast, "to", b.compute_type());
  std::string mean = b.init_uniform("mean", {1, c_in, 1, 1}, 100.0, 140.0);
  std::string stdv = b.init_uniform("std", {1, c_in, 1, 1}, 50.0, 70.0);
  std::string x = b.node("Sub", "/Sub", {cast->output(0), mean})->output(0);
  x = b.node("Div", "/Div", {x, stdv})->output(0);

  // 2. stem
  const int64_t w0 = o.widths[0];
  x = b.conv("/trunk/stem/stem.0/reparam_conv", "trunk.stem.0.reparam_conv", x, c_in, w0, 3, 2, 1,
             true, kGainRelu);
  x = b.gelu("/trunk/stem/stem.0/act", x);
  x = b.conv("/trunk/stem/stem.1/reparam_conv", "trunk.stem.1.reparam_conv", x, w0, w0, 3, 2, w0,
             true, kGainRelu);
  x = b.gelu("/trunk/stem/stem.1/act", x);
  x = b.conv("/trunk/stem/stem.2/reparam_conv", "trunk.stem.2.reparam_conv", x, w0, w0, 1, 1, 1,
             true, kGainRelu);
  x = b.gelu("/trunk/stem/stem.2/act", x);

  // 3-4. stages
  for (size_t s = 0; s < o.widths.size(); ++s) {
    const int64_t c = o.widths[s];
    const std::string st = "/trunk/stages." + std::to_string(s);
    const std::string sp = "trunk.stages." + std::to_string(s);
    if (s > 0) {
      const int64_t p = o.widths[s - 1];
      x = b.conv(st + "/downsample/proj/proj.0/reparam_conv", sp + ".downsample.proj.0.reparam_conv",
                 x, p, c, 7, 2, std::gcd(p, c), true, kGainLinear);
      x = b.conv(st + "/downsample/proj/proj.1/reparam_conv", sp + ".downsample.proj.1.reparam_conv",
                 x, c, c, 1, 1, 1, true, kGainRelu);
      x = b.gelu(st + "/downsample/proj/proj.1/act", x);
    }
    for (int64_t k = 0; k < o.depths[s]; ++k) {
      const std::string bs = st + "/blocks/blocks." + std::to_string(k);
      const std::string bp = sp + ".blocks." + std::to_string(k);
      std::string t = b.mixer_conv(bs + "/token_mixer/reparam_conv",
                                   bp + ".token_mixer.reparam_conv", x, c);
      std::string m = b.conv(bs + "/mlp/conv/conv", bp + ".mlp.conv.conv", t, c, c, 7, 1, c, false,
                             kGainLinear);
      m = b.batch_norm(bs + "/mlp/conv/bn", bp + ".mlp.conv.bn", m, c);
      m = b.conv(bs + "/mlp/fc1", bp + ".mlp.fc1", m, c, kMlpRatio * c, 1, 1, 1, true, kGainRelu);
      m = b.gelu(bs + "/mlp/act", m);
      m = b.conv(bs + "/mlp/fc2", bp + ".mlp.fc2", m, kMlpRatio * c, c, 1, 1, 1, true,
                 kGainLinear);
      std::string gamma = b.init_uniform(bp + ".layer_scale.gamma", {c, 1, 1}, 0.05, 0.5);
      m = b.node("Mul", bs + "/layer_scale/Mul", {m, gamma})->output(0);
      x = b.node("Add", bs + "/Add", {t, m})->output(0);
    }
  }

  // 5. final conv with squeeze-excite
  const int64_t last = o.widths.back();
  const int64_t fc = 2 * last;
  const int64_t rd = std::max<int64_t>(1, fc / kSeReduction);
  x = b.conv("/trunk/final_conv/reparam_conv", "trunk.final_conv.reparam_conv", x, last, fc, 3, 1,
             last, true, kGainLinear);
  std::string se = b.reduce_mean_hw("/trunk/final_conv/se", x);
  se = b.conv("/trunk/final_conv/se/fc1", "trunk.final_conv.se.fc1", se, fc, rd, 1, 1, 1, true,
              kGainRelu);
  se = b.unary("Relu", "/trunk/final_conv/se", se);
  se = b.conv("/trunk/final_conv/se/fc2", "trunk.final_conv.se.fc2", se, rd, fc, 1, 1, 1, true,
              kGainLinear);
  se = b.unary("Sigmoid", "/trunk/final_conv/se", se);
  x = b.node("Mul", "/trunk/final_conv/se/Mul", {x, se})->output(0);
  x = b.gelu("/trunk/final_conv/act", x);

  // 6. summarise and hidden state
  const int64_t stride = stage_stride(o);
  const int64_t spatial = (o.height / stride) * (o.width / stride);
  x = b.conv("/summarize/summarize.0", "summarize.0", x, fc, kSummariseChannels, 1, 1, 1, true,
             kGainRelu);
  x = b.gelu("/summarize/summarize.1", x);
  onnx::NodeProto* flat = b.node("Flatten", "/Flatten", {x});
  Builder::attr_int(flat, "axis", 1);
  x = b.linear("/hidden/hidden.0", "hidden.0", flat->output(0), kSummariseChannels * spatial,
               kHiddenPre, kGainRelu);
  x = b.unary("Relu", "/hidden/hidden.1", x);
  x = b.linear("/hidden/hidden.2", "hidden.2", x, kHiddenPre, o.hidden, kGainRelu);
  const std::string hidden = b.unary("Relu", "/hidden/hidden.3", x);

  // 7. heads
  std::vector<std::string> outs{hidden};
  for (size_t h = 0; h < o.heads.size(); ++h) {
    const std::string hs = "/heads." + std::to_string(h);
    const std::string hp = "heads." + std::to_string(h);
    const bool dup = h == kDupHeadDst && o.heads[kDupHeadSrc] == o.heads[kDupHeadDst];
    const std::string src = "heads." + std::to_string(kDupHeadSrc);
    const int64_t in[3] = {o.hidden, kHeadL1, kHeadL2};
    const int64_t out[3] = {kHeadL1, kHeadL2, o.heads[h]};
    std::string y = hidden;
    for (int l = 0; l < 3; ++l) {
      const std::string ls = hs + "/l" + std::to_string(l + 1);
      const std::string lp = hp + ".l" + std::to_string(l + 1);
      const double gain = l < 2 ? kGainRelu : kGainLinear;
      if (dup) {
        const std::string sp = src + ".l" + std::to_string(l + 1);
        std::string w = b.alias(sp + ".weight", lp + ".weight");
        std::string bias = b.alias(sp + ".bias", lp + ".bias");
        y = b.linear_with(ls, y, w, bias);
      } else {
        y = b.linear(ls, lp, y, in[l], out[l], gain);
      }
      if (l < 2) y = b.unary("Relu", hs + "/Relu" + std::to_string(l), y);
    }
    outs.push_back(y);
  }

  // 8. output
  onnx::NodeProto* all = b.node("Concat", "/Concat_1", outs);
  Builder::attr_int(all, "axis", 1);
  onnx::NodeProto* fin = g->add_node();
  fin->set_op_type("Cast");
  fin->set_name("/Cast_1");
  fin->add_input(all->output(0));
  fin->add_output("outputs");
  Builder::attr_int(fin, "to", onnx::TensorProto::FLOAT);
  add_io(g->add_output(), "outputs", onnx::TensorProto::FLOAT, {1, make_model_output_size(o)});
}

}  // namespace

void validate(const MakeModelOptions& o) {
  auto positive = [](int64_t v, const char* what) {
    OPV_CHECK(v > 0 && v <= kMaxDim, "make-model: ", what, " must be in 1..", kMaxDim, ", got ",
              v);
  };
  positive(o.in_chans, "--in-chans");
  positive(o.hidden, "--hidden");
  OPV_CHECK(!o.widths.empty(), "make-model: --widths must list at least one stage width");
  OPV_CHECK(o.widths.size() <= 8, "make-model: at most 8 stages are supported, --widths has ",
            o.widths.size());
  OPV_CHECK(o.widths.size() == o.depths.size(), "make-model: --widths has ", o.widths.size(),
            " entries (", join_dims(o.widths), ") but --depths has ", o.depths.size(), " (",
            join_dims(o.depths), "); they must match");
  for (size_t i = 0; i < o.widths.size(); ++i) {
    OPV_CHECK(o.widths[i] > 0 && o.widths[i] <= kMaxDim, "make-model: --widths entry ", i,
              " must be in 1..", kMaxDim, ", got ", o.widths[i]);
    OPV_CHECK(o.depths[i] >= 0 && o.depths[i] <= 64, "make-model: --depths entry ", i,
              " must be in 0..64, got ", o.depths[i]);
  }
  OPV_CHECK(!o.heads.empty(), "make-model: --heads must list at least one head");
  for (size_t i = 0; i < o.heads.size(); ++i)
    OPV_CHECK(o.heads[i] > 0 && o.heads[i] <= kMaxDim, "make-model: --heads entry ", i,
              " must be in 1..", kMaxDim, ", got ", o.heads[i]);
  const int64_t stride = stage_stride(o);
  OPV_CHECK(o.height > 0 && o.height <= kMaxDim && o.height % stride == 0,
            "make-model: --height must be a positive multiple of ", stride, " (stem stride ",
            kStemStride, " x 2 per stage after the first, for ", o.widths.size(),
            " stages) up to ", kMaxDim, ", got ", o.height);
  OPV_CHECK(o.width > 0 && o.width <= kMaxDim && o.width % stride == 0,
            "make-model: --width must be a positive multiple of ", stride, " (stem stride ",
            kStemStride, " x 2 per stage after the first, for ", o.widths.size(),
            " stages) up to ", kMaxDim, ", got ", o.width);
  OPV_CHECK(o.opset >= kMakeModelMinOpset && o.opset <= kMakeModelMaxOpset,
            "make-model: --opset must be in ", kMakeModelMinOpset, "..", kMakeModelMaxOpset,
            ", got ", o.opset);
  const double bytes = count_weights(o) * (o.fp16 ? 2.0 : 4.0);
  OPV_CHECK(bytes < kMaxWeightBytes, "make-model: these sizes need about ",
            int64_t(bytes / (1024.0 * 1024.0)),
            " MiB of weights; a single ONNX protobuf file must stay under 2 GiB");
}

int64_t make_model_output_size(const MakeModelOptions& o) {
  return o.hidden + std::accumulate(o.heads.begin(), o.heads.end(), int64_t(0));
}

std::string make_model_bytes(const MakeModelOptions& opts) {
  validate(opts);
  onnx::ModelProto model;
  model.set_ir_version(ir_version_for_opset(opts.opset));
  model.set_producer_name("opvision make-model");
  model.set_producer_version("1");
  model.set_doc_string("openpilot driving_vision-shaped model with random weights (seed " +
                       std::to_string(opts.seed) + ")");
  onnx::OperatorSetIdProto* op = model.add_opset_import();
  op->set_domain("");
  op->set_version(opts.opset);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("opvision_vision");
  build_graph(g, opts);
  std::string bytes;
  OPV_CHECK(model.SerializeToString(&bytes), "make-model: protobuf serialisation failed");
  return bytes;
}

void make_model(const MakeModelOptions& opts, const std::string& out_path) {
  const std::string bytes = make_model_bytes(opts);
  // Temp file + fsync + rename: a failed write never leaves a truncated model behind.
  try {
    write_file_atomic(out_path, bytes, "ONNX model");
  } catch (const Error& e) {
    fail("make-model: ", e.what());
  }
}

}  // namespace opv::tools
