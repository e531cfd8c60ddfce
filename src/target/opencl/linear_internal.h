// Internal interface of the "linear" OpenCL kernel family (linear.cpp, linear_gemm.cpp,
// linear_misc.cpp): kernels on Linear buffers — GEMV/GEMM, element-wise with broadcasting,
// data movement, casts, reductions. Not a public header: only these three files include it.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "target/opencl/codegen.h"

namespace opv::plan::cl::lin {

constexpr const char* kFamilyName = "linear";
// Packing names (PackedWeight constants "<name>@<packing>", kernel attr "cl_pack").
// GEMV weights: F16 [N/4][K/4][4 k][4 n] (zero padded), one 16-half block per (n-block,
// k-block). The work-group of output tile nb streams the K/4 blocks of row nb, its lanes taking
// consecutive blocks (lane l: blocks l, l+L, ..), so a wave reads one contiguous range.
constexpr const char* kPackGemvWeights = "gemv_n4k4:f16";
// GEMV bias: F32 [ceil(N/4)*4] (zero padded), read as one float4 per work-item.
constexpr const char* kPackGemvBias = "gemv_bias_n4:f32";
constexpr int64_t kBlock = 4;  // vector width of the packed layouts and of the n-tile

// ---- index arithmetic (compile-time shapes) -------------------------------------------------

// How several operands are addressed from one flat row-major index over `dims`: operand j's
// element offset is base[j] + sum_d coord_d * strides[j][d] (stride 0 = broadcast).
struct Addressing {
  Shape dims;
  std::vector<int64_t> base;
  std::vector<std::vector<int64_t>> strides;
};
// Drops unit axes and merges adjacent axes that every operand walks contiguously (fewer divisions
// in the generated index math). The flat index meaning is unchanged.
Addressing collapse(const Addressing& a);
// OpenCL C expression of operand j's offset from the flat index variable `var`.
std::string offset_expr(const Addressing& a, size_t j, const std::string& var);
// Row-major element strides of a shape.
std::vector<int64_t> strides_of(const Shape& s);
// Strides of `s` broadcast to `out` (numpy rules, right-aligned; broadcast axes get 0).
std::vector<int64_t> broadcast_strides(const Shape& s, const Shape& out);

// ---- small helpers ---------------------------------------------------------------------------

bool is_float_dt(DType dt);  // F32 or F16 (what the float kernels read and write)
// An unsigned type of the element size (uchar/ushort/uint/ulong): byte-exact copies of any dtype
// (F16 included, without cl_khr_fp16).
std::string raw_type(DType dt);
// "(__global RAW*)name" / "(__global const RAW*)name".
std::string raw_ptr(DType dt, const std::string& name, bool is_const);
// Shape written into kernel names: "1x512".
std::string dims_str(const Shape& s);
std::string lower(std::string s);
// "_relu_add" from the post-ops.
std::string post_ops_suffix(const std::vector<PostOp>& ops);
const Buffer& in_buf(const Plan& p, const Call& c, size_t j);
const Buffer& out_buf(const Plan& p, const Call& c, size_t j = 0);
bool has_in(const Call& c, size_t j);
// Every buffer the call touches is Linear.
bool all_linear(const Plan& p, const Call& c);

// The family's kernel description (prelude cl_prelude + `defs`, entry = name, call_params,
// work-group local arrays `locals`, launch global/local; zeros = NULL) and k's name, options and
// attrs.
KernelDesc finish(const Plan& p, const Call& c, Kernel& k, const std::string& name, const std::string& defs,
                  const std::string& body, const std::string& options, std::array<int64_t, 3> global,
                  std::vector<KernelLocal> locals = {}, std::array<int64_t, 3> local = {0, 0, 0});

// ---- the two halves of the family -------------------------------------------------------------

bool gemm_supports(const Plan& p, const Call& c, const Kernel& k);
KernelDesc gemm_generate(const Plan& p, const Call& c, Kernel& k);
bool gemm_pack_weights(Plan& p, int call, const Options& o);

bool misc_supports(const Plan& p, const Call& c, const Kernel& k);
KernelDesc misc_generate(const Plan& p, const Call& c, Kernel& k);

}  // namespace opv::plan::cl::lin
