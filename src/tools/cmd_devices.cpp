// `opvision devices`: lists every OpenCL platform and device with the capabilities the opencl
// backend cares about (fp16, images and their maximum size, command buffers, extension count),
// the index and P:D selectors that --device accepts, and which device the default selection takes.
#include <cstdio>

#include "backend/opencl/cl_runtime.h"
#include "core/error.h"
#include "tools/common.h"

namespace opv::tools {

int cmd_devices(int argc, char** argv) {
  ArgParser p("opvision devices",
              "Lists OpenCL platforms and devices with their capabilities; the selectors shown ([N] and P:D) and "
              "any part of a platform or device name are what --device accepts.",
              "[options]");
  p.flag("--extensions", "also list every extension of each device");
  Args a;
  if (!parse_or_help(p, argc, argv, a)) return kExitOk;
  const std::vector<backend::cl::DeviceInfo> devs = backend::cl::list_devices();
  if (devs.empty()) {
    std::printf("no OpenCL platform or device found (install an ICD, e.g. pocl-opencl-icd, or register a driver in "
                "/etc/OpenCL/vendors)\n");
    return kExitOk;
  }
  const backend::cl::DeviceInfo def = backend::cl::select_device(devs, "");
  int platform = -1;
  for (const backend::cl::DeviceInfo& d : devs) {
    if (d.platform_index != platform) {
      platform = d.platform_index;
      std::printf("platform %d: %s (%s)\n", platform, d.platform_name.c_str(), d.platform_version.c_str());
    }
    std::printf("  [%d] %d:%d %s (%s)%s\n", d.global_index, d.platform_index, d.device_index, d.name.c_str(),
                d.type_name(), d.device == def.device ? "  <- default" : "");
    std::printf("      %s; driver %s\n", d.version.c_str(), d.driver_version.c_str());
    std::printf("      %s\n", d.summary().c_str());
    std::printf("      %lld compute units, max work-group %lld, global memory %.1f GiB, base address align %lld B\n",
                (long long)d.compute_units, (long long)d.max_work_group_size,
                double(d.global_mem_bytes) / (1024.0 * 1024.0 * 1024.0), (long long)d.mem_base_addr_align);
    if (a.has("--extensions"))
      for (const std::string& e : d.extensions) std::printf("        %s\n", e.c_str());
  }
  // What each backend offers (its caps query; opencl and cuda: on the default device). A backend
  // this build has but this machine cannot run (cuda without a driver) says why.
  for (const std::string& name : backend::available()) {
    backend::Caps c;
    try {
      c = backend::create(name)->caps();
    } catch (const Error& e) {
      std::printf("backend %s: unavailable: %s\n", name.c_str(), e.what());
      continue;
    }
    std::printf("backend %s: layouts %s; per-call times %s; runs on %s\n", name.c_str(),
                backend::layout_list(c.layouts).c_str(), c.per_call_times ? "yes" : "no", c.device.c_str());
  }
  return kExitOk;
}

}  // namespace opv::tools
