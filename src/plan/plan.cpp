#include "plan/plan.h"

#include <cstring>
#include <sstream>

#include "core/error.h"
#include "plan/image_geometry.h"

namespace opv::plan {

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Linear: return "linear";
    case Layout::NHWC: return "nhwc";
    case Layout::ImageRGBA: return "image_rgba";
    case Layout::PackedWeight: return "packed";
  }
  return "?";
}

Layout layout_from_u8(uint8_t v) {
  OPV_CHECK(v >= uint8_t(Layout::Linear) && v <= uint8_t(Layout::PackedWeight), "invalid layout value ", int(v));
  return Layout(v);
}

const char* buffer_kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::Input: return "input";
    case BufferKind::Output: return "output";
    case BufferKind::Intermediate: return "temp";
    case BufferKind::Constant: return "const";
  }
  return "?";
}

int64_t storage_bytes(DType dtype, const Shape& shape, Layout layout) {
  if (layout == Layout::ImageRGBA) return image_bytes(dtype, shape);
  return numel(shape) * int64_t(dtype_size(dtype));
}

int Plan::add_buffer(Buffer b) {
  if (b.bytes == 0) b.bytes = storage_bytes(b.dtype, b.shape, b.layout);
  buffers.push_back(std::move(b));
  return int(buffers.size()) - 1;
}

int Plan::add_constant(const std::string& name, DType dtype, const Shape& shape, Layout layout,
                       const void* data, size_t nbytes) {
  Buffer b;
  b.name = name;
  b.dtype = dtype;
  b.shape = shape;
  b.layout = layout;
  b.kind = BufferKind::Constant;
  b.offset = align_up(int64_t(weights.size()));
  b.bytes = int64_t(nbytes);
  weights.resize(size_t(b.offset) + nbytes, 0);
  if (nbytes) std::memcpy(weights.data() + b.offset, data, nbytes);
  return add_buffer(std::move(b));
}

int Plan::add_kernel(Kernel k) {
  kernels.push_back(std::move(k));
  return int(kernels.size()) - 1;
}

const uint8_t* Plan::constant_data(int buffer) const {
  const Buffer& b = buffers.at(size_t(buffer));
  OPV_CHECK(b.kind == BufferKind::Constant, "buffer '", b.name, "' is not a constant");
  OPV_CHECK(b.offset >= 0 && b.offset + b.bytes <= int64_t(weights.size()), "constant '", b.name,
            "' lies outside the weights blob");
  return weights.data() + b.offset;
}

std::string Plan::dump() const {
  std::ostringstream os;
  os << "plan target=" << target << " buffers=" << buffers.size() << " kernels=" << kernels.size()
     << " calls=" << calls.size() << " weights=" << weights.size() << "B arena=" << arena_bytes << "B\n";
  if (!meta.map().empty()) os << "meta " << meta.str() << "\n";
  os << "buffers:\n";
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    os << "  b" << i << " " << buffer_kind_name(b.kind) << " " << dtype_name(b.dtype) << shape_str(b.shape) << " "
       << layout_name(b.layout) << " @" << b.offset << "+" << b.bytes << " '" << b.name << "'\n";
  }
  os << "kernels:\n";
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Kernel& k = kernels[i];
    os << "  k" << i << " " << k.name << " " << op_name(k.op);
    if (!k.attrs.map().empty()) os << " {" << k.attrs.str() << "}";
    if (!k.post_ops.empty()) os << " " << post_ops_str(k.post_ops);
    os << "\n";
  }
  os << "calls:\n";
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    os << "  c" << i << " k" << c.kernel << " (";
    for (size_t j = 0; j < c.inputs.size(); ++j) os << (j ? "," : "") << (c.inputs[j] < 0 ? std::string("_") : "b" + std::to_string(c.inputs[j]));
    os << ") -> (";
    for (size_t j = 0; j < c.outputs.size(); ++j) os << (j ? "," : "") << "b" << c.outputs[j];
    os << ")";
    if (c.global[0]) os << " global=" << c.global[0] << "x" << c.global[1] << "x" << c.global[2];
    if (c.local[0]) os << " local=" << c.local[0] << "x" << c.local[1] << "x" << c.local[2];
    os << "  # " << c.label << "\n";
  }
  return os.str();
}

}  // namespace opv::plan
