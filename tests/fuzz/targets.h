// Fuzz targets: one function per untrusted-input parser, shared by the libFuzzer executables
// (fuzz_main.cpp, OPV_FUZZ=ON, clang) and the replay test (fuzz_regress_test.cpp, any build).
// Each takes one input, returns 0, and treats opv::Error as the expected way to refuse it;
// anything else (a crash, a sanitizer report, another exception, a broken invariant: abort())
// is a finding. See FUZZING.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace opv::fuzz {

int fuzz_onnx(const uint8_t* data, size_t size);       // ONNX import + graph passes + lowering
int fuzz_opv(const uint8_t* data, size_t size);        // .opv load + validate + run (reference, cpu)
int fuzz_npy(const uint8_t* data, size_t size);        // .npy (or .npz when it starts with "PK")
int fuzz_ir3(const uint8_t* data, size_t size);        // ir3 decode/print/parse/legalize/sim
int fuzz_container(const uint8_t* data, size_t size);  // Qualcomm program binary
int fuzz_capture(const uint8_t* data, size_t size);    // ir3 capture.json (Capture::load)
int fuzz_pm4(const uint8_t* data, size_t size);        // a6xx PM4 stream decoder (backend/qcom/pm4.h)
int fuzz_ptx(const uint8_t* data, size_t size);        // PTX parse + a bounded run (cudasim; no-op without it)
int fuzz_cubin(const uint8_t* data, size_t size);      // a stored cubin's checks (cuda backend; no-op without it)

struct Target {
  const char* name;  // corpus/<name>, repro/<name>
  int (*fn)(const uint8_t*, size_t);
};
const std::vector<Target>& targets();

// For the opv target: rebuilds an artifact image from a (mutated) one so that the header,
// section table and both CRCs are consistent again and mutations reach the plan decoder.
// Exposed for tests; returns the input unchanged when it is too short to carry a header.
std::vector<uint8_t> fix_artifact(const uint8_t* data, size_t size);

}  // namespace opv::fuzz
