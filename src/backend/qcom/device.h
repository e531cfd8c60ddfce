// The qcom device interface: GPU memory objects with GPU addresses, one command buffer (IB)
// submission at a time, timestamp waits. Two implementations: the real KGSL driver
// (/dev/kgsl-3d0, KgslDevice) and a simulated a630 (SimDevice, sim_device.h) that decodes the
// PM4 stream and runs each dispatch on the ir3 simulator.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace opv::qcom {

struct GpuObject {
  uint32_t id = 0;        // 0 = none
  uint64_t gpu_addr = 0;  // address the GPU uses (SP_CS_BASE, descriptors, consts)
  uint64_t size = 0;      // bytes (rounded up to a page)
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  // Zero-filled, page-aligned object of at least `bytes`.
  virtual GpuObject alloc(uint64_t bytes) = 0;
  virtual void free(const GpuObject& obj) = 0;
  // Host access to an object (the caller orders it with submissions: write before submit,
  // read after wait). Offsets are checked against the object.
  virtual void write(const GpuObject& obj, uint64_t offset, const void* src, uint64_t bytes) = 0;
  virtual void read(const GpuObject& obj, uint64_t offset, void* dst, uint64_t bytes) = 0;
  // Submits `dwords` PM4 dwords at GPU address `ib` (inside an object); returns the timestamp.
  virtual uint32_t submit(uint64_t ib, uint32_t dwords) = 0;
  virtual void wait(uint32_t timestamp) = 0;
};

inline constexpr const char* kKgslPath = "/dev/kgsl-3d0";
bool kgsl_present(const std::string& path = kKgslPath);
// Opens the real driver (throws opv::Error where it is absent or refuses).
std::unique_ptr<Device> open_kgsl(const std::string& path = kKgslPath);

}  // namespace opv::qcom
