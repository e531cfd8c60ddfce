/* The common prelude of every generated OpenCL kernel (cl_abi.h): the zero-border sampler and the
 * GELU/sigmoid and half load/store helpers, guarded so that a program may include it twice. The
 * program forms (body function, one-group and batched entries) are rendered by kernel_desc.cpp;
 * the ImageRGBA geometry is plan/image_geometry.cpp, shared with the runtime.
 */
#include "target/opencl/cl_abi.h"

namespace opv::plan::cl {

const std::string& cl_prelude() {
  // opv_gelu/opv_sigmoid are macros so that they apply to float and float4 alike (OpenCL C has
  // no overloading of user functions without an extension attribute). GELU = x Phi(x) with Phi(x)
  // = 0.5 erfc(-x / sqrt 2): no 1 + erf cancellation for negative x (0.5 x (1 + erf(x / sqrt 2)),
  // the form up to session 31, was 4 % off at x = -5 and 57 % at -5.5 with a correctly rounded float erf; ClAbi.GeluIsAccurateOnDevice).
  static const std::string kPrelude =
      "#ifndef OPV_PRELUDE\n"
      "#define OPV_PRELUDE\n"
      "__constant sampler_t opv_smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;\n"
      "#ifndef M_SQRT1_2_F\n"
      "#define M_SQRT1_2_F 0.707106781186547524f\n"
      "#endif\n"
      "#define opv_gelu(x) (0.5f * (x) * erfc(-(x) * M_SQRT1_2_F))\n"
      "#define opv_sigmoid(x) (1.0f / (1.0f + exp(-(x))))\n"
      "#define opv_gelu4(x) opv_gelu(x)\n"
      "#define opv_sigmoid4(x) opv_sigmoid(x)\n"
      "#define OPV_LOAD_HALF(p, i) vload_half((i), (p))\n"
      "#define OPV_STORE_HALF(p, i, v) vstore_half_rte((v), (i), (p))\n"
      "#define OPV_LOAD_HALF4(p, i) vload_half4((i), (p))\n"
      "#define OPV_STORE_HALF4(p, i, v) vstore_half4_rte((v), (i), (p))\n"
      "#endif\n";
  return kPrelude;
}

}  // namespace opv::plan::cl
