// A capture: real a630 kernels of a whole model and the schedule that runs them, as written by
// tools/ir3_capture.py (tinygrad + Mesa's ir3 compiler, offline). See that tool for the layout:
//   DIR/capture.json   kernels (register footprint, const layout, bindings), buffers, setup,
//                      per-inference schedule, inputs and outputs
//   DIR/kernels/*.bin  code images;  DIR/data.bin  setup bytes that are not ONNX initializers
// A capture is untrusted input: load() checks every index, size and offset before use and
// throws opv::Error naming the file and the field.
#pragma once
#include <array>
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace opv::ir3 {

struct CaptureKernel {
  std::string name, image_file, sha256;
  std::vector<uint64_t> code;
  int max_reg = -1, max_half_reg = -1;  // highest register used (-1 = none)
  int branchstack = 0;
  bool mergedregs = false;  // half and full registers share one file
  uint32_t pvtmem_bytes = 0, shared_bytes = 0, constlen_vec4 = 0;
  int work_group_id_regid = 252, local_invocation_id_regid = 252;  // 252 = not delivered
  std::optional<uint32_t> local_size_const_byte;
  uint32_t args_const_byte = 0, immediates_const_byte = 0;
  std::vector<uint32_t> immediates;
  int num_tex = 0, num_ibo = 0;
  std::vector<int> tex_to_image;
};

struct CaptureArg {
  enum class Kind { Buffer, Image, Value } kind = Kind::Buffer;
  int buffer = -1;
  uint64_t offset = 0, bytes = 0;
  std::string dtype;  // tinygrad dtype name: half, float, unsigned char, int ...
  bool reads = false, writes = false;
  int height = 0, width = 0;  // images: texels (RGBA)
  int64_t value = 0;          // values
};

struct CaptureLaunch {
  int kernel = -1;
  std::array<uint32_t, 3> global_size{1, 1, 1};  // work-groups
  std::array<uint32_t, 3> local_size{1, 1, 1};
  std::vector<CaptureArg> args;
};

struct CaptureCopy {
  int buffer = -1;
  uint64_t offset = 0, bytes = 0;
  std::string initializer;         // from the ONNX model, if set
  std::optional<uint64_t> data_offset;  // from data.bin, if set
  int src_buffer = -1;             // from another buffer, if >= 0
  uint64_t src_offset = 0;
  std::string sha256;
};

struct CaptureStep {
  bool is_launch = false;
  CaptureLaunch launch;
  CaptureCopy copy;
};

struct CaptureTensor {
  std::string name, dtype;
  int buffer = -1;
  uint64_t offset = 0;
  std::vector<int64_t> shape;
  uint64_t bytes() const;
};

struct Capture {
  std::string dir, gpu, model_file, model_sha256;
  std::vector<CaptureKernel> kernels;
  std::vector<uint64_t> buffer_bytes;
  std::vector<CaptureStep> setup;
  std::vector<CaptureLaunch> schedule;
  std::vector<CaptureTensor> inputs, outputs;
  std::vector<uint8_t> data;  // data.bin

  static Capture load(const std::string& dir);
  // Writes DIR/capture.json (kernels' code to DIR/kernels/) keeping everything else of `src`;
  // used to store rewritten kernels next to the original schedule.
  void save(const std::string& dir, const std::string& original_json_dir) const;
};

// The bytes a setup copy writes: the ONNX initializer (checked against the capture's size and
// SHA-256), a range of data.bin, or a range of another buffer read through `read_buffer`.
// `who` prefixes errors ("ir3 replay", "qcom").
std::vector<uint8_t> setup_copy_bytes(const Capture& cap, const CaptureCopy& c,
                                      const std::function<std::vector<uint8_t>(const std::string&)>& initializer,
                                      const std::function<void(int buffer, uint64_t offset, void* dst, uint64_t bytes)>& read_buffer,
                                      const char* who);

// Lower-case hex SHA-256 of bytes (OpenSSL), as the capture tool writes them.
std::string sha256_hex(const void* data, size_t n);

// Element size in bytes of a capture dtype name (0 if unknown).
int capture_dtype_bytes(const std::string& dtype);

}  // namespace opv::ir3
