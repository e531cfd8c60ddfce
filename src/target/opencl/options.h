// Typed compile options of target "opencl" (compile --cl-* flags), handed to its plan passes in
// plan::PassCtx (plan/passes/passes.h) instead of being read back from plan meta strings.
//
// Recording: the compile writes the options that differ from their defaults into plan meta under
// the keys below, so an artifact says how it was made and `opvision opt` re-runs passes on a
// loaded plan with the same options (from_meta). One of them is also plan ABI: "cl_image_storage"
// = "buffer" tells the backend that ImageRGBA buffers live in global buffers (images_in_buffers()
// in codegen.h reads the plan's record, as the backend does).
#pragma once
#include <cstdint>
#include <string>

#include "core/attrs.h"
#include "core/dtype.h"

namespace opv::plan::cl {

// Most calls one batched launch may merge (Options::batch_max is clamped to 1..this).
constexpr int64_t kMaxBatchLimit = 64;

struct Options {
  // Work-items the target GPU needs in flight to stay busy ("cl_busy_items"); 0 = the kernels'
  // default, sized for an Adreno 630. Wider tiles per work-item are chosen only where a layer
  // leaves this much work; large desktop GPUs want ~65536.
  int64_t busy_items = 0;
  // Element type of packed conv weights ("cl_weight_dtype" = "f32"): F16 (Adreno) or F32 (GPUs that
  // compute in fp32 then skip a conversion per weight).
  DType weight_dtype = DType::F16;
  // ImageRGBA activations in global buffers instead of image2d_t ("cl_image_storage" = "buffer").
  bool images_in_buffers = false;
  // Most calls plan pass "batch" merges into one launch ("cl_batch_max"), 1..kMaxBatchLimit.
  int64_t batch_max = 4;
  // Kernel tuning (compile --cl-tune KEY=N, for tuning on a device), see conv_image.cpp: the dense
  // conv K-split limits on wide targets and the depthwise row-split threshold.
  int64_t ks_max_lanes = 64;       // "cl_ks_max_lanes"
  int64_t ks_min_steps = 4;        // "cl_ks_min_steps"
  int64_t dw_split_min_taps = 25;  // "cl_dw_split_min_taps"

  // Sets a --cl-tune value by its meta key; false when `key` is not a tuning key.
  bool set_tune(const std::string& key, int64_t value);
  // "cl_ks_max_lanes, cl_ks_min_steps, cl_dw_split_min_taps" for messages.
  static const char* tune_keys();

  // Writes the options that differ from the defaults into `meta` (and erases the keys of those
  // that do not). from_meta reads them back; values of the wrong type or range: opv::Error.
  void record(Attrs& meta) const;
  static Options from_meta(const Attrs& meta);
  bool operator==(const Options& o) const;
};

}  // namespace opv::plan::cl
