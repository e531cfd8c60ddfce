// The .opv artifact: a versioned, checksummed container of a plan and its packed weights.
// Loading needs no ONNX/protobuf. Truncated or corrupted files are reported as opv::Error.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace opv::plan {

constexpr uint32_t kArtifactVersion = 1;

std::vector<uint8_t> serialize(const Plan& p);
Plan deserialize(const uint8_t* data, size_t size);  // validates the result too
void save_artifact(const Plan& p, const std::string& path);
Plan load_artifact(const std::string& path);

}  // namespace opv::plan
