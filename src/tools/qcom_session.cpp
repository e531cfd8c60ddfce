// QcomSession: capture + device + lean command stream (see qcom_session.h).
#include "tools/qcom_session.h"

#include <filesystem>

#include "backend/qcom/sim_device.h"
#include "core/error.h"

namespace opv::tools {

QcomSession::QcomSession(const std::string& capture_dir, const Args& a, const char* who) {
  std::error_code ec;
  OPV_CHECK(std::filesystem::is_directory(capture_dir, ec), who, ": --backend qcom runs a capture directory ",
            "(tools/ir3_capture.py MODEL.onnx DIR), not '", capture_dir, "'");
  cap_ = ir3::Capture::load(capture_dir);
  std::string d = a.get("--device", qcom::kgsl_present() ? "kgsl" : "sim");
  OPV_CHECK(d == "sim" || d == "kgsl", who, ": --device for the qcom backend is sim or kgsl, not '", d, "'");
  if (d == "kgsl") dev_ = qcom::open_kgsl();
  else dev_ = std::make_unique<qcom::SimDevice>(qcom::SimDeviceOptions{});
  qcom::StreamOptions so;
  so.initializer = initializer_reader(capture_model_path(cap_, a, who), who);
  runner_ = std::make_unique<qcom::CaptureRunner>(cap_, *dev_, so);
}

}  // namespace opv::tools
