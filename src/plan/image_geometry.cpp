// Layout::ImageRGBA geometry (image_geometry.h): texel (x, y) = (w*C4 + c/4, n*H + h).
#include "plan/image_geometry.h"

#include "core/error.h"

namespace opv::plan {

ImageGeom image_geom(const Shape& s) {
  OPV_CHECK(s.size() == 4, "image layout needs a 4-D [N,C,H,W] shape, got ", shape_str(s));
  ImageGeom g;
  g.c4 = (s[1] + 3) / 4;
  g.width = s[3] * g.c4;
  g.height = s[0] * s[2];
  return g;
}

int64_t image_bytes(DType dt, const Shape& s) {
  ImageGeom g = image_geom(s);
  return g.width * g.height * kImageChannelsPerTexel * int64_t(dtype_size(dt));
}

bool fits_image(const Shape& s) {
  if (s.size() != 4) return false;
  for (int64_t d : s)
    if (d <= 0) return false;
  ImageGeom g = image_geom(s);
  return g.width <= kMaxImageSide && g.height <= kMaxImageSide;
}

}  // namespace opv::plan
