// The SASS a cuda plan's kernels may carry beside their PTX (src/target/cuda/cuda_abi.h "SASS"):
// checking a stored cubin before the driver sees it, and picking the one a device runs.
#pragma once
#include <string>

#include "plan/plan.h"

namespace opv::backend::cuda_sass {

// The SM (90 for sm_90) a CUDA cubin was built for: an ELF64 little-endian image for EM_CUDA whose
// header, program and section header tables lie inside it. 0, with *why saying what is wrong, for
// anything else.
int cubin_sm(const std::string& image, std::string* why);

// "" when kernel k's SASS attrs are well formed: attr "cuda_sass" a list of distinct SMs, each
// with its image attr holding a cubin for that SM (cubin_sm); else what is wrong.
std::string problem(const plan::Kernel& k);

// The SM of k's cubin that a device of compute capability major.minor runs (the same major, the
// highest minor not above the device's), or 0 when k has none (the PTX is loaded). k must have
// passed problem().
int pick(const plan::Kernel& k, int major, int minor);

}  // namespace opv::backend::cuda_sass
