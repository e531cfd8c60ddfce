// The OpenCL backend: runs plans lowered for target "opencl" (see src/target/opencl/cl_abi.h, the
// contract with the code generator) on any OpenCL 1.2+ device with image support: the Adreno
// driver, PoCL, NVIDIA's OpenCL. Tolerance is the fp16-storage bound.
// supports_buffer/supports_call (backend.h's caps query) answer from the device (Options.device,
// see cl::select_device): image limits and formats, linear inputs/outputs, host-fallback calls on
// linear buffers. load(): require that answer, create every cl_mem (images shared by arena
// offset + geometry, Linear intermediates as sub-buffers of one arena where aligned), upload
// constants, build every kernel through the program cache (disk cache per
// Options.cl_disk_cache), create one cl_kernel per call with its arguments bound, and, for replay
// plans on devices with cl_khr_command_buffer (Options.cl_command_buffer) or else
// cl_qcom_recordable_queues (Options.cl_qcom_recording), record the whole plan once.
// run(): write inputs, enqueue (or replay) the calls, read outputs; kernels with empty source run
// on the host through the reference kernels.
#pragma once
#include <memory>
#include <string>

#include "backend/backend.h"

namespace opv::backend {

std::unique_ptr<Backend> make_opencl_backend(const Options& opts);

// What a loaded OpenCL backend chose, for tests and `--verbose` tools. Null for other backends
// and before load().
struct OpenCLLoadInfo {
  std::string device;          // "platform / device"
  bool replay = false;         // plan meta cl_replay: no host sync between kernels
  bool command_buffer = false; // the calls replay from a recorded cl_khr_command_buffer
  bool qcom_recording = false; // ... else from a cl_qcom_recordable_queues recording
  std::string qcom_recording_skipped;  // why a device with that extension did not record
  int host_calls = 0;          // calls run on the host (empty kernel source)
  int images = 0;              // distinct image objects
  int arena_sub_buffers = 0;   // Linear intermediates placed as sub-buffers of the arena
  int separate_buffers = 0;    // Linear intermediates given their own cl_mem
};
const OpenCLLoadInfo* opencl_load_info(const Backend& b);

}  // namespace opv::backend
