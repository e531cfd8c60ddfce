// Internal to the reorder and input-pack families (src/target/opencl/reorder.cpp defines these):
// kernel bodies that move NCHW Linear data into an ImageRGBA image and back, 4 consecutive
// texels along w per work-item (one vector load/store per channel plane and lane).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "target/opencl/kernel_desc.h"

namespace opv::plan::cl::pack {

// One NCHW Linear kernel parameter holding `channels` consecutive channels of the image.
struct Plane {
  std::string name;  // parameter name, e.g. "in0"
  DType dtype;
  int64_t channels;
};

// Both bodies access the image parameter (out0 / in0) of `d` with d.write_image / d.read_image.
// Body writing image out0 of logical shape `out` [N,C,H,W] from `planes` concatenated along C
// (their channels sum to C). Each lane is cast to float, rounded to fp16 precision when
// `round_f16`, then `post_ops` (statements on float4 v with n, h, w, cb in scope) run per
// texel; padded lanes are written as zero.
std::string linear_to_image_body(const KernelDesc& d, const std::vector<Plane>& planes, const Shape& out, bool round_f16,
                                 const std::string& post_ops);
// Body writing the Linear parameter out0 (dtype out_dt, row-major NCHW of `in`) from image in0.
std::string image_to_linear_body(const KernelDesc& d, const Shape& in, DType out_dt);
// The launch of both: (ceil(W/4) * C4, N * H).
std::array<int64_t, 3> global_4w(const Shape& s);
// Whether a Linear dtype can be loaded as a float4 by linear_to_image_body.
bool loadable(DType dt);

}  // namespace opv::plan::cl::pack
