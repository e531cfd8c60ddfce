// The .opv artifact: a versioned, checksummed container of a plan and its packed weights.
// Loading needs no ONNX/protobuf. Truncated or corrupted files are reported as opv::Error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace opv::plan {

constexpr uint32_t kArtifactVersion = 1;
// The first bytes of every .opv file: the one definition (artifact.cpp writes and checks it, the
// CLI sniffs files with has_artifact_magic()).
constexpr char kArtifactMagic[8] = {'O', 'P', 'V', 'I', 'S', 'I', 'O', 'N'};
constexpr size_t kArtifactMagicSize = sizeof(kArtifactMagic);
// True when the n bytes at `head` start with kArtifactMagic (false when n is too short).
bool has_artifact_magic(const void* head, size_t n);

std::vector<uint8_t> serialize(const Plan& p);
Plan deserialize(const uint8_t* data, size_t size);  // validates the result too
void save_artifact(const Plan& p, const std::string& path);
Plan load_artifact(const std::string& path);

}  // namespace opv::plan
