// A simulated Adreno 630 behind the qcom device interface (a virtual KGSL): it owns the GPU
// memory objects (in the ir3 simulator's global memory), decodes every submitted PM4 stream with
// our decoder (pm4.h), keeps the CP register file and the compute state that CP_LOAD_STATE6
// loads (consts, texture/IBO descriptors, samplers), and on every CP_EXEC_CS runs the program at
// SP_CS_BASE on the ir3 simulator with the state the stream set up (descriptors decoded: format,
// width, height, pitch, base address).
//
// Ordering check (on by default): the device records, per byte, the last dispatch that wrote and
// read it, and at every access of a dispatch it requires that
//   * no byte written (or read, for a write) by an earlier dispatch is accessed unless a
//     CP_WAIT_FOR_IDLE came between them (RAW, WAR, WAW);
//   * a texture fetch of a byte an earlier dispatch wrote, and any read of host-written bytes,
//     come after a CACHE_INVALIDATE that followed that write's completion;
//   * the host reads GPU-written bytes only after a CACHE_FLUSH_TS that followed the write.
// A violation is an opv::Error naming both dispatches and the address.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/qcom/device.h"
#include "backend/qcom/pm4.h"
#include "ir3/sim.h"

namespace opv::qcom {

struct SimDeviceOptions {
  bool check_order = true;
  uint64_t max_steps = 200'000'000;  // per wave, as ir3 replay
};

struct SimDeviceStats {
  uint64_t submissions = 0, packets = 0, dispatches = 0, wait_for_idle = 0, cache_flushes = 0, cache_invalidates = 0;
  uint64_t stream_bytes = 0, instructions = 0, fiber_instructions = 0;
};

class SimDevice final : public Device {
 public:
  explicit SimDevice(SimDeviceOptions opts = {});
  std::string name() const override { return "simulated a630 (ir3 simulator)"; }
  GpuObject alloc(uint64_t bytes) override;
  void free(const GpuObject& obj) override;
  void write(const GpuObject& obj, uint64_t offset, const void* src, uint64_t bytes) override;
  void read(const GpuObject& obj, uint64_t offset, void* dst, uint64_t bytes) override;
  uint32_t submit(uint64_t ib, uint32_t dwords) override;
  void wait(uint32_t timestamp) override;

  const SimDeviceStats& stats() const { return stats_; }
  ir3::Simulator& simulator() { return sim_; }
  uint32_t reg(uint32_t r) const;

 private:
  struct Obj {
    uint32_t id;
    uint64_t size;
  };
  uint64_t checked(uint64_t addr, uint64_t bytes, const char* what) const;  // addr inside a live object
  const std::pair<const uint64_t, Obj>& object(const GpuObject& o) const;
  void execute(uint64_t ib, uint32_t dwords, int depth);
  void load_state(const Packet& p);
  void event(const Packet& p);
  void exec_cs(const Packet& p);
  ir3::SimImage image_of(const std::array<uint32_t, 16>& d, const char* what, int index) const;
  void on_access(uint64_t addr, uint64_t bytes, ir3::Simulator::Access kind);
  void grow_shadow();

  SimDeviceOptions opts_;
  ir3::Simulator sim_;
  uint64_t base_ = 0;                 // first simulator address (shadow index 0)
  std::map<uint64_t, Obj> objs_;      // by GPU address, live objects
  std::map<uint32_t, uint64_t> ids_;  // id -> GPU address
  uint32_t next_id_ = 1, timestamp_ = 0;
  std::unordered_map<uint32_t, uint32_t> regs_;
  std::vector<uint32_t> consts_;
  std::vector<std::array<uint32_t, 16>> tex_, ibo_;
  std::vector<std::array<uint32_t, 4>> samp_;
  SimDeviceStats stats_;
  // ordering check
  std::vector<uint32_t> last_write_, last_read_;  // sequence numbers per byte (0 = never)
  std::vector<bool> host_seq_;                    // sequence number -> a host write
  uint32_t seq_ = 0, cur_ = 0;                    // last sequence number, running dispatch
  uint32_t done_ = 0;          // every dispatch with seq <= done_ has completed (CP_WAIT_FOR_IDLE)
  uint32_t inv_dispatch_ = 0;  // dispatch writes up to here were invalidated out of the texture cache
  uint32_t inv_host_ = 0, submit_seq_ = 0;  // host writes up to here were invalidated
  uint32_t flushed_ = 0;       // dispatch writes up to here were flushed for the host
  uint64_t dispatch_in_submit_ = 0;
  std::vector<std::string> seq_name_;
};

}  // namespace opv::qcom
