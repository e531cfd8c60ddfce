// Reference Resize: nearest modes and bilinear coordinate transformations against values
// worked out by hand from the ONNX formulas (and matching torch's interpolate).
#include "core/error.h"
#include "reference_test_util.h"
#include "test_util.h"

namespace opv {
namespace {

using reftest::expect_near;
using reftest::f32;
using reftest::run1;

Attrs resize_attrs(const std::string& mode, const std::string& coord, std::vector<double> scales,
                   const std::string& nearest_mode = "") {
  Attrs a;
  a.set("mode", mode);
  a.set("coord", coord);
  a.set("scales", scales);
  if (!nearest_mode.empty()) a.set("nearest_mode", nearest_mode);
  return a;
}

TEST(ReferenceResize, NearestUpsampleRepeats) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const std::vector<double> want = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
  for (const char* coord : {"asymmetric", "half_pixel"}) {
    SCOPED_TRACE(coord);
    expect_near(run1(OpKind::Resize, resize_attrs("nearest", coord, {1, 1, 2, 2}), {&x}, DType::F32, {1, 1, 4, 4}),
                want, 0, 0);
  }
  // U8 (dtype-agnostic nearest).
  Tensor u = x.cast(DType::U8);
  Tensor yu = run1(OpKind::Resize, resize_attrs("nearest", "asymmetric", {1, 1, 2, 2}), {&u}, DType::U8, {1, 1, 4, 4});
  expect_near(yu, want, 0, 0);
}

// Scales whose coordinates overflow (a tiny scale is 0 in float: o / s = inf, or NaN for o = 0)
// clamp to the axis' ends instead of casting inf or NaN to an index (undefined behaviour, which
// UBSan reports).
TEST(ReferenceResize, OverflowingCoordinatesClampToTheAxis) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    SCOPED_TRACE(nearest);
    expect_near(run1(OpKind::Resize, resize_attrs("nearest", "asymmetric", {1, 1, 1e-300, 1}, nearest), {&x}, DType::F32,
                     {1, 1, 2, 2}),
                {1, 2, 3, 4}, 0, 0);  // row 0: 0 / 0 = NaN -> 0; row 1: 1 / 0 = inf -> the last
  }
  expect_near(run1(OpKind::Resize, resize_attrs("linear", "asymmetric", {1, 1, 1e-300, 1e-300}), {&x}, DType::F32,
                   {1, 1, 2, 2}),
              {1, 2, 3, 4}, 0, 0);
}

TEST(ReferenceResize, NearestModes) {
  // 1-D-like: 4 -> 8 with scale 2, asymmetric: x_orig = o / 2 = 0, .5, 1, 1.5, ...
  Tensor x = f32({1, 4}, {10, 20, 30, 40});
  auto run_mode = [&](const std::string& m) {
    return run1(OpKind::Resize, resize_attrs("nearest", "asymmetric", {1, 2}, m), {&x}, DType::F32, {1, 8});
  };
  expect_near(run_mode("round_prefer_floor"), {10, 10, 20, 20, 30, 30, 40, 40}, 0, 0);
  expect_near(run_mode("round_prefer_ceil"), {10, 20, 20, 30, 30, 40, 40, 40}, 0, 0);
  expect_near(run_mode("floor"), {10, 10, 20, 20, 30, 30, 40, 40}, 0, 0);
  expect_near(run_mode("ceil"), {10, 20, 20, 30, 30, 40, 40, 40}, 0, 0);
  // Downsample by 2 with half_pixel: x_orig = (o + .5) * 2 - .5 = 0.5, 2.5 -> floor-preferred 0, 2.
  expect_near(run1(OpKind::Resize, resize_attrs("nearest", "half_pixel", {1, 0.5}), {&x}, DType::F32, {1, 2}),
              {10, 30}, 0, 0);
  EXPECT_THROW(run_mode("nearest_even"), Error);
  // Non-integer scale 0.6 (7 -> 4), asymmetric + floor: x_orig = o / 0.6 = 0, 1.67, 3.33, 5 — the
  // last is exactly 5 (as in onnxruntime's float arithmetic), not 4.999.
  Tensor x7 = f32({1, 7}, {0, 1, 2, 3, 4, 5, 6});
  expect_near(run1(OpKind::Resize, resize_attrs("nearest", "asymmetric", {1, double(0.6f)}, "floor"), {&x7},
                   DType::F32, {1, 4}),
              {0, 1, 3, 5}, 0, 0);
}

TEST(ReferenceResize, BilinearHalfPixel) {
  // torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  expect_near(run1(OpKind::Resize, resize_attrs("linear", "half_pixel", {1, 1, 2, 2}), {&x}, DType::F32, {1, 1, 4, 4}),
              {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  // pytorch_half_pixel agrees here (output length > 1).
  expect_near(
      run1(OpKind::Resize, resize_attrs("linear", "pytorch_half_pixel", {1, 1, 2, 2}), {&x}, DType::F32, {1, 1, 4, 4}),
      {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
}

TEST(ReferenceResize, BilinearAlignCornersAndAsymmetric) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  // align_corners 2 -> 3: x_orig = o * (2-1)/(3-1) = 0, .5, 1.
  expect_near(run1(OpKind::Resize, resize_attrs("linear", "align_corners", {1, 1, 1.5, 1.5}), {&x}, DType::F32,
                   {1, 1, 3, 3}),
              {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
  // asymmetric 2 -> 4: x_orig = o / 2 = 0, .5, 1, 1.5 (clamped to 1).
  expect_near(run1(OpKind::Resize, resize_attrs("linear", "asymmetric", {1, 1, 2, 2}), {&x}, DType::F32, {1, 1, 4, 4}),
              {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4});
  // half_pixel_symmetric with an integer scale equals half_pixel.
  expect_near(run1(OpKind::Resize, resize_attrs("linear", "half_pixel_symmetric", {1, 1, 2, 2}), {&x}, DType::F32,
                   {1, 1, 4, 4}),
              {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  // Linear resize changing a leading axis is rejected (bilinear over the last two only).
  EXPECT_THROW(run1(OpKind::Resize, resize_attrs("linear", "asymmetric", {2, 1, 2, 2}), {&x}, DType::F32, {2, 1, 4, 4}),
               Error);
}

TEST(ReferenceResize, TfCropAndResizeExtrapolates) {
  // roi = [starts..., ends...]; last axis crops [0.25, 1.5] of a length-3 axis into 3 samples:
  // x_orig = 0.25*2 + o*(1.25)*2/2 = 0.5, 1.75, 3.0 (> 2: outside -> extrapolation_value).
  Tensor x = f32({1, 3}, {10, 20, 30});
  Attrs a = resize_attrs("linear", "tf_crop_and_resize", {1, 1});
  a.set("roi", std::vector<double>{0, 0.25, 1, 1.5});
  a.set("extrapolation_value", -1.0);
  expect_near(run1(OpKind::Resize, a, {&x}, DType::F32, {1, 3}), {15, 27.5, -1});
}

TEST(ReferenceResize, BilinearF16MatchesF32) {
  Tensor x = test::random_f32({1, 3, 5, 7}, 4);
  Tensor xh = x.cast(DType::F16);
  Tensor xr = xh.cast(DType::F32);  // the same values in f32
  Attrs a = resize_attrs("linear", "half_pixel", {1, 1, 2, 2});
  Tensor y32 = run1(OpKind::Resize, a, {&xr}, DType::F32, {1, 3, 10, 14});
  Tensor y16 = run1(OpKind::Resize, a, {&xh}, DType::F16, {1, 3, 10, 14});
  for (int64_t i = 0; i < y32.numel(); ++i)
    EXPECT_EQ(y16.data<uint16_t>()[i], float_to_half(y32.data<float>()[i])) << i;
}

}  // namespace
}  // namespace opv
