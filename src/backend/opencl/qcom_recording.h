// Replay through Qualcomm's cl_qcom_recordable_queues (the Adreno driver's counterpart of
// cl_khr_command_buffer): the launches of a plan are enqueued once on a queue created with
// CL_QUEUE_RECORDABLE_QCOM between clNewRecordingQCOM and clEndRecordingQCOM, and each inference
// replays the recording on the backend's own queue with clEnqueueRecordingQCOM (no argument,
// offset or work-size updates: the plan binds every argument once at load).
// Evidence for the API (no Khronos header declares it): entry points and argument lists as used
// by public Adreno OpenCL code (Qualcomm's QcNode samples, TFLite-style recordable queue users);
// queue property bit 0x40000000. Not run on an Adreno device here: record() reports why it did
// not record (extension absent, entry points missing, any call failing) and the backend then
// enqueues call by call.
#pragma once
#include <CL/cl.h>

#include <cstddef>
#include <string>
#include <vector>

namespace opv::backend::qcom {

constexpr cl_command_queue_properties kQueueRecordable = cl_command_queue_properties(1) << 30;  // CL_QUEUE_RECORDABLE_QCOM

using Recording = struct _cl_recording_qcom*;

struct RecordingApi {
  using NewFn = Recording(CL_API_CALL*)(cl_command_queue, cl_int*);
  using EndFn = cl_int(CL_API_CALL*)(Recording);
  using ReleaseFn = cl_int(CL_API_CALL*)(Recording);
  // (queue, recording, #args, args, #offsets, offsets, #global sizes, global sizes,
  //  #local sizes, local sizes, #wait events, wait events, event); the update arrays are unused.
  using EnqueueFn = cl_int(CL_API_CALL*)(cl_command_queue, Recording, size_t, const void*, size_t, const void*, size_t,
                                         const void*, size_t, const void*, cl_uint, const cl_event*, cl_event*);
  NewFn create = nullptr;
  EndFn end = nullptr;
  ReleaseFn release = nullptr;
  EnqueueFn enqueue = nullptr;
  // Looks the entry points up for platform p; true when all four exist.
  bool load(cl_platform_id p);
};

// One launch to record (kernel with its arguments bound; dims 1..3; local may be null).
struct Launch {
  cl_kernel kernel = nullptr;
  cl_uint dims = 0;
  const size_t* global = nullptr;
  const size_t* local = nullptr;
};

// A recorded plan and the recordable queue it was recorded on (kept alive with it).
class PlanRecording {
 public:
  PlanRecording() = default;
  ~PlanRecording() { reset(); }
  PlanRecording(const PlanRecording&) = delete;
  PlanRecording& operator=(const PlanRecording&) = delete;
  // Records `launches` in order on a fresh recordable queue of (ctx, dev). Returns true when the
  // recording is ready; else false with *why_not set, and nothing held.
  bool record(cl_platform_id platform, cl_context ctx, cl_device_id dev, const std::vector<Launch>& launches,
              std::string* why_not);
  // Enqueues the recording on `queue` (in order after what is already there).
  cl_int replay(cl_command_queue queue) const;
  explicit operator bool() const { return rec_ != nullptr; }
  void reset();

 private:
  RecordingApi api_;
  cl_command_queue queue_ = nullptr;
  Recording rec_ = nullptr;
};

}  // namespace opv::backend::qcom
