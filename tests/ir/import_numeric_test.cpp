// Numeric checks of imported graphs: the canonical graph, run with the reference kernels
// (ir::evaluate), must compute what the ONNX definition of the original ops says; expected
// values are computed here with plain loops straight from the ONNX operator definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "ir/evaluate.h"
#include "onnx_test_model.h"
#include "test_util.h"

namespace opv::test {
namespace {

using B = OnnxBuilder;

void expect_close(const Tensor& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.numel(), int64_t(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.get_f64(i), want[size_t(i)], tol) << "element " << i;
}

TEST(ImportNumeric, LegacySoftmaxCoercesTo2d) {
  OnnxBuilder b(11);
  b.input("x", kF32, {2, 3, 4});
  B::attr_i(b.node("Softmax", {"x"}, {"y"}), "axis", 1);
  b.output("y");
  ir::Graph g = b.import();
  Tensor x = random_f32({2, 3, 4}, 7, -3.f, 3.f);
  Tensor y = ir::evaluate(g, {{"x", x}}).at(0);
  std::vector<float> want(24);
  for (int n = 0; n < 2; ++n) {  // softmax over the 12 trailing elements of each batch row
    double sum = 0;
    for (int k = 0; k < 12; ++k) sum += std::exp(double(x.data<float>()[n * 12 + k]));
    for (int k = 0; k < 12; ++k) want[size_t(n * 12 + k)] = float(std::exp(double(x.data<float>()[n * 12 + k])) / sum);
  }
  expect_close(y, want);
}

TEST(ImportNumeric, SliceWithNegativeStepsAndClamping) {
  OnnxBuilder b;
  b.input("x", kF32, {3, 10, 6});
  b.init_i64("starts", {-1, 1});
  b.init_i64("ends", {INT64_MIN, 1000});
  b.init_i64("axes", {1, 2});
  b.init_i64("steps", {-3, 2});
  b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  b.output("y");
  ir::Graph g = b.import();
  Tensor x = random_f32({3, 10, 6}, 3);
  Tensor y = ir::evaluate(g, {{"x", x}}).at(0);
  std::vector<float> want;
  for (int i = 0; i < 3; ++i)
    for (int j = 9; j >= 0; j -= 3)
      for (int k = 1; k < 6; k += 2) want.push_back(x.data<float>()[(i * 10 + j) * 6 + k]);
  expect_close(y, want, 0);
}

TEST(ImportNumeric, ConvSameUpperStride2) {
  OnnxBuilder b;
  b.input("x", kF32, {1, 2, 5, 6});
  Tensor w = random_f32({3, 2, 3, 3}, 11);
  std::vector<float> wv(w.data<float>(), w.data<float>() + w.numel());
  b.init_f32("w", {3, 2, 3, 3}, wv);
  auto& n = b.node("Conv", {"x", "w"}, {"y"});
  B::attr_s(n, "auto_pad", "SAME_UPPER");
  B::attr_ints(n, "strides", {2, 2});
  b.output("y");
  ir::Graph g = b.import();
  Tensor x = random_f32({1, 2, 5, 6}, 12);
  Tensor y = ir::evaluate(g, {{"x", x}}).at(0);
  // ONNX SAME_UPPER: out = ceil(in/s); pad_total = (out-1)*s + k - in; head = total/2.
  const int H = 5, W = 6, OH = 3, OW = 3;
  const int ph = ((OH - 1) * 2 + 3 - H) / 2, pw = ((OW - 1) * 2 + 3 - W) / 2;
  std::vector<float> want;
  for (int m = 0; m < 3; ++m)
    for (int oy = 0; oy < OH; ++oy)
      for (int ox = 0; ox < OW; ++ox) {
        double acc = 0;
        for (int c = 0; c < 2; ++c)
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              int iy = oy * 2 + ky - ph, ix = ox * 2 + kx - pw;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              acc += double(x.data<float>()[(c * H + iy) * W + ix]) * wv[size_t(((m * 2 + c) * 3 + ky) * 3 + kx)];
            }
        want.push_back(float(acc));
      }
  EXPECT_EQ(y.shape(), (Shape{1, 3, OH, OW}));
  expect_close(y, want);
}

TEST(ImportNumeric, VariadicMeanMax) {
  OnnxBuilder b;
  for (const char* n : {"a", "b", "c"}) b.input(n, kF32, {4});
  b.node("Mean", {"a", "b", "c"}, {"m"});
  b.node("Max", {"a", "b", "c"}, {"x"});
  b.output("m");
  b.output("x");
  ir::Graph g = b.import();
  Tensor a = random_f32({4}, 1), bb = random_f32({4}, 2), c = random_f32({4}, 3);
  auto outs = ir::evaluate(g, {{"a", a}, {"b", bb}, {"c", c}});
  std::vector<float> mean, mx;
  for (int i = 0; i < 4; ++i) {
    float va = a.data<float>()[i], vb = bb.data<float>()[i], vc = c.data<float>()[i];
    mean.push_back((va + vb + vc) / 3.f);
    mx.push_back(std::max(va, std::max(vb, vc)));
  }
  expect_close(outs[0], mean);
  expect_close(outs[1], mx, 0);
}

TEST(ImportNumeric, PadReflectOnSelectedAxes) {
  OnnxBuilder b(18);
  b.input("x", kF32, {2, 4});
  b.init_i64("pads", {2, 1});  // axis 1: two before, one after
  b.init_i64("axes", {1});
  B::attr_s(b.node("Pad", {"x", "pads", "", "axes"}, {"y"}), "mode", "reflect");
  b.output("y");
  ir::Graph g = b.import();
  Tensor x = random_f32({2, 4}, 5);
  Tensor y = ir::evaluate(g, {{"x", x}}).at(0);
  const int src[] = {2, 1, 0, 1, 2, 3, 2};  // reflect (edge not repeated)
  std::vector<float> want;
  for (int r = 0; r < 2; ++r)
    for (int j : src) want.push_back(x.data<float>()[r * 4 + j]);
  expect_close(y, want, 0);
}

TEST(ImportNumeric, SplitAndGatherNegativeIndex) {
  OnnxBuilder b;
  b.input("x", kF32, {3, 4});
  B::attr_i(b.node("Split", {"x"}, {"p", "q"}), "axis", 1);
  b.init_i64("idx", {-1, 0});
  b.node("Gather", {"q", "idx"}, {"y"});
  b.output("p");
  b.output("y");
  ir::Graph g = b.import();
  Tensor x = random_f32({3, 4}, 9);
  auto outs = ir::evaluate(g, {{"x", x}});
  const float* xv = x.data<float>();
  expect_close(outs[0], {xv[0], xv[1], xv[4], xv[5], xv[8], xv[9]}, 0);
  expect_close(outs[1], {xv[10], xv[11], xv[2], xv[3]}, 0);
}

TEST(ImportNumeric, ShapeChainReshapeKeepsBytes) {
  OnnxBuilder b(13);
  b.input("x", kF32, {2, 3, 4});
  b.node("Shape", {"x"}, {"shape"});
  b.init(B::tensor_i64("i0", {0}, true, true));
  b.node("Gather", {"shape", "i0"}, {"d0"});
  b.init_i64("ax0", {0});
  b.node("Unsqueeze", {"d0", "ax0"}, {"d0u"});
  b.init_i64("m1", {-1});
  B::attr_i(b.node("Concat", {"d0u", "m1"}, {"target"}), "axis", 0);
  b.node("Reshape", {"x", "target"}, {"y"});
  b.output("y");
  ir::Graph g = b.import();
  Tensor x = random_f32({2, 3, 4}, 4);
  Tensor y = ir::evaluate(g, {{"x", x}}).at(0);
  EXPECT_TRUE(bit_equal(y, x.reshaped({2, 12})));
}

// Minimal reader for the fixture's reference .npz (zip members stored uncompressed, .npy v1-3
// little-endian, C order). Returns an empty map when the file uses something else.
std::map<std::string, Tensor> read_stored_npz(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string z((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::map<std::string, Tensor> out;
  auto u16 = [&](size_t o) { return size_t(uint8_t(z[o])) | size_t(uint8_t(z[o + 1])) << 8; };
  auto u32 = [&](size_t o) { return u16(o) | u16(o + 2) << 16; };
  const size_t kLocalHeader = 30;
  size_t pos = 0;
  while (pos + kLocalHeader <= z.size() && u32(pos) == 0x04034b50u) {
    if (u16(pos + 8) != 0) return {};  // compressed member
    std::string name = z.substr(pos + kLocalHeader, u16(pos + 26));
    size_t npy = pos + kLocalHeader + u16(pos + 26) + u16(pos + 28);
    if (z.compare(npy, 6, "\x93NUMPY") != 0) return {};
    int major = uint8_t(z[npy + 6]);
    size_t hlen = major == 1 ? u16(npy + 8) : u32(npy + 8);
    size_t hstart = npy + (major == 1 ? 10 : 12);
    std::string hdr = z.substr(hstart, hlen);
    size_t d = hdr.find("'descr': '") + 10;
    std::string descr = hdr.substr(d, hdr.find('\'', d) - d);
    DType t = descr == "|u1" ? DType::U8 : descr == "<f4" ? DType::F32 : descr == "<f2" ? DType::F16 : DType::Bool;
    if (t == DType::Bool || hdr.find("'fortran_order': False") == std::string::npos) return {};
    size_t sp = hdr.find("'shape': (") + 10;
    std::stringstream ss(hdr.substr(sp, hdr.find(')', sp) - sp));
    Shape shape;
    for (std::string tok; std::getline(ss, tok, ',');)
      if (tok.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(tok));
    Tensor tensor(t, shape);
    std::memcpy(tensor.raw(), z.data() + hstart + hlen, tensor.nbytes());
    if (name.size() > 4) name.resize(name.size() - 4);  // drop ".npy"
    size_t nbytes = tensor.nbytes();
    out.emplace(name, std::move(tensor));
    pos = hstart + hlen + nbytes;
  }
  return out;
}

// The imported fixture, run with the reference kernels, matches onnxruntime's outputs within
// the fp16-storage bound of DESIGN.md (relative L2 <= 1e-2).
TEST(ImportNumeric, FixtureMatchesOnnxruntime) {
  std::string dir = shared_models_dir();
  if (dir.empty()) GTEST_SKIP() << "shared fixture models not present";
  auto ref = read_stored_npz(dir + "/opvision_t12_fp16_ref.npz");
  if (!ref.count("img") || !ref.count("big_img") || !ref.count("outputs"))
    GTEST_SKIP() << "reference npz not in the stored layout this test reads";
  ir::Graph g = import_onnx(dir + "/opvision_t12_fp16.onnx");
  Tensor y = ir::evaluate(g, {{"img", ref.at("img")}, {"big_img", ref.at("big_img")}}).at(0);
  const Tensor& want = ref.at("outputs");
  ASSERT_EQ(y.shape(), want.shape());
  double num = 0, den = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    double dlt = y.get_f64(i) - want.get_f64(i);
    num += dlt * dlt;
    den += want.get_f64(i) * want.get_f64(i);
  }
  EXPECT_LE(std::sqrt(num / den), 1e-2);
}

}  // namespace
}  // namespace opv::test
