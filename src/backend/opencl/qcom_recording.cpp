// cl_qcom_recordable_queues replay (see qcom_recording.h).
#include "backend/opencl/qcom_recording.h"

#include "backend/opencl/cl_runtime.h"

namespace opv::backend::qcom {

bool RecordingApi::load(cl_platform_id p) {
  auto get = [&](const char* name) { return clGetExtensionFunctionAddressForPlatform(p, name); };
  create = reinterpret_cast<NewFn>(get("clNewRecordingQCOM"));
  end = reinterpret_cast<EndFn>(get("clEndRecordingQCOM"));
  release = reinterpret_cast<ReleaseFn>(get("clReleaseRecordingQCOM"));
  enqueue = reinterpret_cast<EnqueueFn>(get("clEnqueueRecordingQCOM"));
  return create && end && release && enqueue;
}

void PlanRecording::reset() {
  if (rec_ && api_.release) api_.release(rec_);
  rec_ = nullptr;
  if (queue_) clReleaseCommandQueue(queue_);
  queue_ = nullptr;
}

bool PlanRecording::record(cl_platform_id platform, cl_context ctx, cl_device_id dev,
                           const std::vector<Launch>& launches, std::string* why_not) {
  reset();
  auto no = [&](const std::string& why, cl_int err) {
    if (why_not) *why_not = why + (err != CL_SUCCESS ? std::string(" (") + cl::error_name(err) + ")" : "");
    reset();
    return false;
  };
  if (launches.empty()) return no("nothing to record", CL_SUCCESS);
  if (!api_.load(platform)) return no("cl_qcom_recordable_queues entry points not found", CL_SUCCESS);
  cl_int err = CL_SUCCESS;
  // The recordable bit alone: drivers refuse it combined with other queue properties.
  const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, cl_queue_properties(kQueueRecordable), 0};
  queue_ = clCreateCommandQueueWithProperties(ctx, dev, props, &err);
  if (err != CL_SUCCESS || !queue_) return no("clCreateCommandQueueWithProperties(CL_QUEUE_RECORDABLE_QCOM)", err);
  rec_ = api_.create(queue_, &err);
  if (err != CL_SUCCESS || !rec_) return no("clNewRecordingQCOM", err);
  for (const Launch& l : launches) {
    err = clEnqueueNDRangeKernel(queue_, l.kernel, l.dims, nullptr, l.global, l.local, 0, nullptr, nullptr);
    if (err != CL_SUCCESS) return no("clEnqueueNDRangeKernel on the recordable queue", err);
  }
  err = api_.end(rec_);
  if (err != CL_SUCCESS) return no("clEndRecordingQCOM", err);
  return true;
}

cl_int PlanRecording::replay(cl_command_queue queue) const {
  return api_.enqueue(queue, rec_, 0, nullptr, 0, nullptr, 0, nullptr, 0, nullptr, 0, nullptr, nullptr);
}

}  // namespace opv::backend::qcom
