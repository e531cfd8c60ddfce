// `--backend qcom` for run / verify / bench: MODEL is a capture directory (tools/ir3_capture.py)
// whose schedule runs as one PM4 stream per inference on a qcom device -- the KGSL driver when
// /dev/kgsl-3d0 exists (or --device kgsl), else the simulated a630 (--device sim).
#pragma once
#include <memory>
#include <string>

#include "backend/qcom/capture_stream.h"
#include "backend/qcom/device.h"
#include "ir3/capture.h"
#include "tools/args.h"
#include "tools/capture_io.h"

namespace opv::tools {

constexpr const char* kQcomBackend = "qcom";

class QcomSession {
 public:
  // `who` prefixes errors ("run"). Reads --device (sim|kgsl) and --model (the weights).
  QcomSession(const std::string& capture_dir, const Args& a, const char* who);
  NamedArrays run(const CaptureFeed& feed) { return capture_outputs(cap_, runner_->run(feed.bytes)); }
  const ir3::Capture& capture() const { return cap_; }
  const qcom::StreamStats& stream_stats() const { return runner_->stats(); }
  std::string device_name() const { return dev_->name(); }

 private:
  ir3::Capture cap_;
  std::unique_ptr<qcom::Device> dev_;
  std::unique_ptr<qcom::CaptureRunner> runner_;
};

}  // namespace opv::tools
