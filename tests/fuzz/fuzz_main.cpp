// libFuzzer entry point of one harness; OPV_FUZZ_ENTRY names the target in targets.h.
#include <cstddef>
#include <cstdint>

#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return opv::fuzz::OPV_FUZZ_ENTRY(data, size);
}
