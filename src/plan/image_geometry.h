// Geometry of Layout::ImageRGBA: the one definition used by the compile-time OpenCL target
// (src/target/opencl: codegen, layout choice, packing) and by the runtime (storage sizes, the
// plan validator, the OpenCL backend's image allocation). The full ABI is target/opencl/cl_abi.h.
//   A 4-D logical [N,C,H,W] tensor is one image2d of width W * C4 and height N * H texels,
//   C4 = ceil(C / 4), 4 channels (RGBA) a texel: texel (x, y) = (w*C4 + c/4, n*H + h).
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/shape.h"

namespace opv::plan {

struct ImageGeom {
  int64_t width = 0;   // texels: W * C4
  int64_t height = 0;  // N * H
  int64_t c4 = 0;      // ceil(C / 4)
};
constexpr int64_t kImageChannelsPerTexel = 4;  // CL_RGBA
// Geometry of a 4-D [N,C,H,W] tensor stored as ImageRGBA. Throws opv::Error for other ranks.
ImageGeom image_geom(const Shape& s);
// Bytes of that image's storage (texels * 4 * element size).
int64_t image_bytes(DType dt, const Shape& s);
// The largest image side the compiler assumes every target allows (Adreno a6xx descriptors
// have 15-bit fields; tinygrad uses 16384). Tensors whose image would be larger stay Linear.
constexpr int64_t kMaxImageSide = 16384;
// True when `s` is 4-D with positive extents and its image fits kMaxImageSide on both sides.
bool fits_image(const Shape& s);

}  // namespace opv::plan
