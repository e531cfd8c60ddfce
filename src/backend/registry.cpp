// Backend registry: the one place that knows every backend of this build.
#include <algorithm>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#if OPV_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif
#include "backend/opencl/opencl_backend.h"
#include "backend/reference/reference_backend.h"
#include "core/error.h"

namespace opv::backend {

namespace {
struct Entry {
  const char* name;
  std::unique_ptr<Backend> (*make)(const Options&);
};
const Entry kBackends[] = {
    {"reference", make_reference_backend},
    {"cpu", make_cpu_backend},
    {"opencl", make_opencl_backend},
#if OPV_HAVE_CUDA
    // Listed whenever built with CUDA support (compiling for target cuda needs no device);
    // creating it throws without a CUDA driver or device.
    {"cuda", make_cuda_backend},
#endif
};
}  // namespace

Tolerance tolerance_for(const Backend& b, const plan::Plan& plan) {
  Tolerance t = b.tolerance();
  if (plan.meta.s("precision", "f32") == "f16") {
    constexpr double kF16Bound = 1e-2;  // DESIGN.md: fp16 storage / fp32 accumulate
    t.rel_l2 = std::max(t.rel_l2, kF16Bound);
    t.max_abs_rel = std::max(t.max_abs_rel, kF16Bound);
  }
  return t;
}

std::vector<std::string> available() {
  std::vector<std::string> r;
  for (const Entry& e : kBackends) r.push_back(e.name);
  return r;
}

std::unique_ptr<Backend> create(const std::string& name, const Options& opts) {
  for (const Entry& e : kBackends)
    if (name == e.name) return e.make(opts);
  std::string list;
  for (const Entry& e : kBackends) list += (list.empty() ? "" : ", ") + std::string(e.name);
  fail("unknown backend '", name, "' (available: ", list, ")");
}

}  // namespace opv::backend
