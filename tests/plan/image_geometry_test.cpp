// Tests of the ImageRGBA geometry (src/plan/image_geometry.cpp), the one definition the OpenCL
// code generator, the plan validator and the OpenCL backend share.
#include <gtest/gtest.h>

#include "core/error.h"
#include "plan/image_geometry.h"
#include "plan/plan.h"

namespace opv::plan {
namespace {

TEST(ImageGeometry, Geometry) {
  // [N,C,H,W] = [1,6,5,7]: C4 = 2 texels per pixel, width = 7*2, height = 1*5.
  ImageGeom g = image_geom({1, 6, 5, 7});
  EXPECT_EQ(g.c4, 2);
  EXPECT_EQ(g.width, 14);
  EXPECT_EQ(g.height, 5);
  g = image_geom({2, 4, 3, 3});
  EXPECT_EQ(g.c4, 1);
  EXPECT_EQ(g.width, 3);
  EXPECT_EQ(g.height, 6);
  g = image_geom({1, 1, 1, 1});
  EXPECT_EQ(g.c4, 1);
  // 4 channels a texel, 2 bytes (f16) or 4 (f32) each.
  EXPECT_EQ(image_bytes(DType::F16, {1, 6, 5, 7}), 14 * 5 * 4 * 2);
  EXPECT_EQ(image_bytes(DType::F32, {2, 4, 3, 3}), 3 * 6 * 4 * 4);
  EXPECT_EQ(storage_bytes(DType::F16, {1, 6, 5, 7}, Layout::ImageRGBA), 14 * 5 * 4 * 2);
  EXPECT_EQ(storage_bytes(DType::F16, {1, 6, 5, 7}, Layout::Linear), 6 * 5 * 7 * 2);
  EXPECT_THROW(image_geom({4, 4, 4}), opv::Error);
  EXPECT_THROW(image_bytes(DType::F16, {1, 2}), opv::Error);
}

TEST(ImageGeometry, FitsImage) {
  EXPECT_TRUE(fits_image({1, 4, 16, 16}));
  EXPECT_TRUE(fits_image({1, 4, kMaxImageSide, 1}));           // height exactly at the limit
  EXPECT_FALSE(fits_image({1, 4, kMaxImageSide + 1, 1}));
  EXPECT_TRUE(fits_image({1, 8, 1, kMaxImageSide / 2}));       // width = W * C4 = limit
  EXPECT_FALSE(fits_image({1, 9, 1, kMaxImageSide / 2}));      // C4 = 3
  EXPECT_FALSE(fits_image({3, 4, kMaxImageSide / 2, 1}));      // height = N * H
  EXPECT_FALSE(fits_image({1, 4, 4}));
  EXPECT_FALSE(fits_image({1, 0, 4, 4}));
}

}  // namespace
}  // namespace opv::plan
