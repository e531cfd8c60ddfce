// plan::Plan — the target-specific kernel graph: buffers with explicit dtype and layout,
// kernels (what code runs) and an ordered list of calls (which buffers it runs on).
// It is what an artifact stores and what a backend loads; it never depends on ONNX.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/attrs.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "ops/op.h"

namespace opv::plan {

// How a buffer's elements are laid out in memory. The logical shape is always the ONNX shape.
enum class Layout : uint8_t {
  Linear = 1,       // row-major over the logical shape
  NHWC = 2,         // 4-D logical [N,C,H,W] stored as [N,H,W,C]
  ImageRGBA = 3,    // OpenCL image2d, 4 channels a texel (geometry defined by the OpenCL backend)
  PackedWeight = 4, // backend-specific packed order, described by the reading kernel's attrs
};
const char* layout_name(Layout l);
Layout layout_from_u8(uint8_t v);  // throws opv::Error on an unknown value

enum class BufferKind : uint8_t {
  Input = 1,         // bound from the caller's input tensor
  Output = 2,        // copied/converted into the caller's output tensor
  Intermediate = 3,  // lives in the arena at `offset`
  Constant = 4,      // lives in Plan::weights at `offset`
};
const char* buffer_kind_name(BufferKind k);

struct Buffer {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;            // logical shape
  Layout layout = Layout::Linear;
  BufferKind kind = BufferKind::Intermediate;
  int64_t offset = -1;    // arena offset (Intermediate, after memory planning) or weights offset
  int64_t bytes = 0;      // storage size in bytes (>= numel * dtype size)
};

struct Kernel {
  std::string name;        // spells out the variant, e.g. "conv2d_dw3x3_s1_f32_nhwc"
  OpKind op = OpKind::Identity;
  Attrs attrs;
  std::vector<PostOp> post_ops;
  std::string source;      // GPU backends: program source (empty for CPU backends)
  std::string entry;       // GPU backends: entry point
  std::string options;     // GPU backends: build options
};

struct Call {
  int kernel = -1;
  std::vector<int> inputs;   // buffer ids; -1 for an absent optional input
  std::vector<int> outputs;  // buffer ids
  std::array<int64_t, 3> global{0, 0, 0};  // GPU launch geometry (0 = unused)
  std::array<int64_t, 3> local{0, 0, 0};
  std::string label;         // the graph node it came from, for messages and profiles
};

struct Plan {
  std::string target;          // backend name this plan was lowered for
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<Call> calls;     // execution order
  std::vector<int> inputs;     // Input buffers, in model order (name = model input name)
  std::vector<int> outputs;    // Output buffers, in model order
  std::vector<uint8_t> weights;  // constant data; each Constant buffer at a 64-byte aligned offset
  int64_t arena_bytes = 0;     // after memory planning
  Attrs meta;                  // provenance: source model, compile options, pass log

  int add_buffer(Buffer b);
  // Adds a Constant buffer with the given bytes appended to `weights` (64-byte aligned).
  int add_constant(const std::string& name, DType dtype, const Shape& shape, Layout layout,
                   const void* data, size_t nbytes);
  int add_kernel(Kernel k);
  const uint8_t* constant_data(int buffer) const;
  std::string dump() const;  // readable text
};

constexpr int64_t kAlign = 64;
inline int64_t align_up(int64_t v, int64_t a = kAlign) { return (v + a - 1) / a * a; }
// Storage bytes of a buffer of this dtype/shape/layout (Linear/NHWC: dense).
int64_t storage_bytes(DType dtype, const Shape& shape, Layout layout);

// Structural validation run after every plan pass: ids in range, every buffer read is written
// before (or is an Input/Constant), Outputs written exactly once, constant ranges inside
// `weights`, arena ranges inside arena_bytes and not overlapping while both live, layouts
// allowed for the buffer kinds. Throws opv::Error naming the call/buffer.
void validate(const Plan& p);

}  // namespace opv::plan
