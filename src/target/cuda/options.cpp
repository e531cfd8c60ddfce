#include "target/cuda/options.h"

#include <cctype>

#include "core/error.h"

namespace opv::plan::cuda {

namespace {
constexpr const char* kArchKey = "cuda_arch";
constexpr const char* kArchPrefix = "compute_";
}  // namespace

void Options::check_arch(const std::string& arch) {
  const std::string prefix = kArchPrefix;
  bool ok = arch.size() > prefix.size() && arch.size() <= prefix.size() + 4 && arch.compare(0, prefix.size(), prefix) == 0;
  for (size_t i = prefix.size(); ok && i < arch.size(); ++i) ok = std::isdigit(static_cast<unsigned char>(arch[i])) != 0;
  OPV_CHECK(ok, "cuda arch must be compute_<NN> (a virtual architecture, e.g. compute_75 or compute_90), got '", arch,
            "'");
}

void Options::record(Attrs& meta) const {
  if (arch != Options().arch)
    meta.set(kArchKey, arch);
  else
    meta.erase(kArchKey);
}

Options Options::from_meta(const Attrs& meta) {
  Options o;
  o.arch = meta.s(kArchKey, o.arch);
  check_arch(o.arch);
  return o;
}

}  // namespace opv::plan::cuda
