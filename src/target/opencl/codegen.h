// OpenCL code generation for target "opencl": kernel families, each one source per op family,
// specialised per call at compile time (shapes, strides, post-ops and weight packing become
// #defines / unrolled code; see cl_abi.h for what a generated kernel may assume).
//
// Family files (one each): reorder.cpp (Linear <-> ImageRGBA), conv_image.cpp (1x1, depthwise
// incl. channel multiplier, dense kxk, general grouped), pool_image.cpp (global average pool /
// ReduceMean over H,W, max/average pool), eltwise_image.cpp (element-wise on images incl.
// squeeze-excite gating by a per-channel vector), linear.cpp (GEMV/GEMM, element-wise with
// broadcasting, concat, cast, copies on Linear buffers), input_pack.cpp (uint8 camera inputs ->
// normalised image in one launch; created by plan pass "input-pack").
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "target/c_expr.h"
#include "target/opencl/cl_abi.h"
#include "target/opencl/kernel_desc.h"
#include "target/opencl/options.h"
#include "plan/plan.h"

namespace opv::plan::cl {

struct Family {
  const char* name;
  // Whether this family can generate a kernel for call `c` with the buffers' current layouts,
  // dtypes and shapes (the kernel's op/attrs/post_ops are p.kernels[c.kernel]). `o`: the compile's
  // typed options (tiling for the target GPU, weight dtype); every function of a family gets them.
  bool (*supports)(const Plan& p, const Call& c, const Options& o);
  // Describes the kernel for `c` (kernel_desc.h: entry, prelude, parameters, locals, body, launch)
  // and sets k.name/options and the family's own attrs; the codegen driver renders the
  // description (k.source, k.entry, attrs "cl_family" = name and "cl_params") and sets
  // c.global/c.local from it. k arrives as a copy of p.kernels[c.kernel] (op, attrs, post_ops, name
  // filled in). Throws opv::Error when it cannot (only after supports() said yes: that is a bug).
  KernelDesc (*generate)(const Plan& p, const Call& c, Kernel& k, const Options& o);
  // Optional, for plan pass "weight-pack": replaces call `call`'s Linear constant weights by
  // PackedWeight constants (add_packed_constant) in exactly the order generate() then reads
  // them (4-wide vectors, contiguous), and regenerates the kernel. Returns true when it changed
  // anything; false when the call has nothing to pack or is packed already.
  bool (*pack_weights)(Plan& p, int call, const Options& o) = nullptr;
};

// All families, in the order they are asked (first that supports a call wins).
const std::vector<const Family*>& families();
const Family& reorder_family();
const Family& conv_image_family();
const Family& pool_image_family();
const Family& eltwise_image_family();
const Family& linear_family();
const Family& input_pack_family();

// Plan pass "codegen" (target opencl, always on): gives every call a kernel from the first family
// that supports it (or leaves its source empty: host fallback), then merges kernels whose
// (source, entry, options) are identical and drops unused ones. Calls whose kernel already has a
// "cl_family" attr are regenerated with that family (so passes may change layouts/weights and
// call regenerate()). Returns true when any kernel changed.
bool codegen(Plan& p, const Options& o);
// Family f describes call `c` (f.supports(p, c) must hold); the description is rendered into k
// (source, entry, attrs "cl_family" and "cl_params") and its launch geometry into c.
void emit(const Family& f, const Plan& p, Call& c, Kernel& k, const Options& o);
// The description of call c's kernel, derived again by the family that made it (kernel attr
// "cl_family"), for passes that transform kernels (plan pass "batch"). nullopt when the kernel
// is a host fallback or batched, its family is unknown or no longer supports the call, or the
// description does not render to exactly the kernel's source and entry (the kernel was changed
// after codegen: its description is not known).
std::optional<KernelDesc> describe(const Plan& p, const Call& c, const Options& o);
// Regenerates the kernel of one call in place (gives the call its own kernel first when the
// kernel is shared). Used by passes that change a call's buffers (weight-pack, input-pack).
void regenerate(Plan& p, int call, const Options& o);
// Merges kernels whose (name, op, attrs, post-ops, source, entry, options) are identical and drops
// kernels no call uses (passes that regenerate calls one by one end with it). True if any merged.
bool intern_kernels(Plan& p);

// A PackedWeight constant derived from constant `src` by packing `packing` (e.g. "conv_o4i:f16"):
// returns the existing buffer named "<src name>@<packing>" if an earlier call made it, else adds
// it with these bytes. The old constant stays until compact() drops unused buffers.
int add_packed_constant(Plan& p, int src, const std::string& packing, DType dt, const Shape& shape,
                        const std::vector<uint8_t>& bytes);

// Plan meta "cl_image_storage" = "buffer" (recorded from Options::images_in_buffers by the compile;
// plan ABI, the backend reads the same record): ImageRGBA buffers live in global buffers with the
// same texel layout; call_params() gives their parameters ParamStorage::ImageInBuffer
// (kernel_desc.h), so every family's image accesses and render() follow.
bool images_in_buffers(const Plan& p);

// ---- helpers shared by the families ----------------------------------------------------------

// OpenCL C type of one element of a Linear buffer: float, half (storage only), uchar, char, int,
// long, ... Throws for dtypes OpenCL lacks.
std::string cl_type(DType dt);
// Load of element `idx` (an expression) of Linear buffer parameter `name` as float:
// "name[idx]" cast to float, or "vload_half(idx, name)" for F16.
std::string cl_load(DType dt, const std::string& name, const std::string& idx);
// Store of float expression `val` to element `idx`: "name[idx] = (T)(val)" or vstore_half_rte.
std::string cl_store(DType dt, const std::string& name, const std::string& idx, const std::string& val);

// The index head of the kernels that compute one texel of image output `out` [N,C,H,W] per
// work-item (launch {width, height}): ints x, y (returns outside the image), w, cb, n, h.
std::string texel_head(const Shape& out);

// How a float operand broadcasts over an image output [N,C,H,W]: a same-shape image, an [N,C,1,1]
// image, a per-channel ([C,1,1], [1,C,1,1]) or per-batch-channel ([N,C,1,1]) Linear vector, a
// scalar, or not at all (Bad).
enum class ImageOperand { Bad, SameImage, ChannelImage, Channel, BatchChannel, Scalar };
ImageOperand classify_image_operand(const Buffer& b, const Shape& out);

// Post-ops on an ImageRGBA output. In scope: `float4 v` (channels 4*cb..4*cb+3 of pixel n,h,w),
// ints n, h, w, cb, and the parameters of `d` (call_params() names). Emits statements that
// update v, reading same-shape image operands at the output texel and per-channel
// ([C],[C,1,1],[1,C,1,1]) / scalar Linear operands (or 1x1 image operands) broadcast, each image
// read through d.read_image(). Throws for operands of other shapes (supports() must check with
// post_ops_image_ok first). post_ops_image_reads: how many texel reads those statements make.
std::string emit_post_ops_image(const Plan& p, const Call& c, const Kernel& k, const KernelDesc& d);
int post_ops_image_reads(const Plan& p, const Call& c, const Kernel& k);
bool post_ops_image_ok(const Plan& p, const Call& c, const Kernel& k);
// Post-ops on a Linear output. In scope: `float v` and `long i` (flat row-major output index).
// Operands: any shape that broadcasts to the output (index computed from i), Linear only.
std::string emit_post_ops_linear(const Plan& p, const Call& c, const Kernel& k);
bool post_ops_linear_ok(const Plan& p, const Call& c, const Kernel& k);
// unary_expr / binary_expr (target/c_expr.h): the op expressions, shared with the other C-family
// targets; cl_prelude() defines the helpers they call.

}  // namespace opv::plan::cl
