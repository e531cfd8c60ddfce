// The real KGSL device (../shared/qcom/KGSL.md "Submission life cycle"): open, create a draw
// context, GPUOBJ_ALLOC + mmap(id << 12) per object (USE_CPU_MAP: the GPU address is the CPU
// mapping's address, as tinygrad relies on; confirmed here with GPUOBJ_INFO), GPU_COMMAND with
// one IB command object, DEVICE_WAITTIMESTAMP_CTXTID. Builds on any Linux host; only used where
// /dev/kgsl-3d0 exists. Not run on a device yet.
#include <cerrno>
#include <cstring>
#include <map>

#include "backend/qcom/device.h"
#include "backend/qcom/kgsl_uapi.h"
#include "core/error.h"

#if defined(__linux__)
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace opv::qcom {

bool kgsl_present(const std::string& path) {
#if defined(__linux__)
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
#else
  (void)path;
  return false;
#endif
}

#if defined(__linux__)
namespace {

using namespace kgsl;

class KgslDevice final : public Device {
 public:
  explicit KgslDevice(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    OPV_CHECK(fd_ >= 0, "qcom: cannot open ", path, ": ", std::strerror(errno));
    try {
      kgsl_drawctxt_create c{};
      c.flags = KGSL_CONTEXT_NO_GMEM_ALLOC | KGSL_CONTEXT_PREAMBLE | KGSL_CONTEXT_NO_FAULT_TOLERANCE |
                KGSL_CONTEXT_PWR_CONSTRAINT | (8u << KGSL_CONTEXT_PRIORITY_SHIFT) |
                (KGSL_CONTEXT_PREEMPT_STYLE_FINEGRAIN << KGSL_CONTEXT_PREEMPT_STYLE_SHIFT);
      call(IOCTL_KGSL_DRAWCTXT_CREATE, &c, "DRAWCTXT_CREATE");
      ctx_ = c.drawctxt_id;
      kgsl_devinfo info{};
      kgsl_device_getproperty gp{};
      gp.type = KGSL_PROP_DEVICE_INFO;
      gp.value = reinterpret_cast<uint64_t>(&info);
      gp.sizebytes = sizeof info;
      call(IOCTL_KGSL_DEVICE_GETPROPERTY, &gp, "DEVICE_GETPROPERTY(DEVICE_INFO)");
      chip_id_ = info.chip_id;
      uint32_t core = chip_id_ >> 24, major = (chip_id_ >> 16) & 0xff;
      OPV_CHECK(core == 6, "qcom: ", path, " is not an a6xx GPU (chip id 0x", std::hex, chip_id_, ")");
      (void)major;
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
  ~KgslDevice() override {
    for (auto& [id, m] : maps_) {
      kgsl_gpuobj_free fr{};
      fr.id = id;
      ::ioctl(fd_, IOCTL_KGSL_GPUOBJ_FREE, &fr);
      ::munmap(m.host, m.size);
    }
    kgsl_drawctxt_destroy d{ctx_};
    ::ioctl(fd_, IOCTL_KGSL_DRAWCTXT_DESTROY, &d);
    ::close(fd_);
  }
  std::string name() const override {
    char b[64];
    std::snprintf(b, sizeof b, "kgsl (%s, chip 0x%08x)", path_.c_str(), chip_id_);
    return b;
  }
  GpuObject alloc(uint64_t bytes) override {
    uint64_t size = (std::max<uint64_t>(bytes, 1) + kPageBytes - 1) / kPageBytes * kPageBytes;
    kgsl_gpuobj_alloc a{};
    a.size = size;
    a.flags = (uint64_t(12) << KGSL_MEMALIGN_SHIFT) | KGSL_MEMFLAGS_USE_CPU_MAP;
    call(IOCTL_KGSL_GPUOBJ_ALLOC, &a, "GPUOBJ_ALLOC");
    void* host = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(uint64_t(a.id) << 12));
    if (host == MAP_FAILED) {
      kgsl_gpuobj_free fr{};
      fr.id = a.id;
      ::ioctl(fd_, IOCTL_KGSL_GPUOBJ_FREE, &fr);
      fail("qcom: mmap of GPU object ", a.id, " failed: ", std::strerror(errno));
    }
    kgsl_gpuobj_info inf{};
    inf.id = a.id;
    call(IOCTL_KGSL_GPUOBJ_INFO, &inf, "GPUOBJ_INFO");
    std::memset(host, 0, size);
    maps_[a.id] = {host, size};
    return GpuObject{a.id, inf.gpuaddr ? inf.gpuaddr : reinterpret_cast<uint64_t>(host), size};
  }
  void free(const GpuObject& o) override {
    auto it = maps_.find(o.id);
    OPV_CHECK(it != maps_.end(), "qcom: free of unknown GPU object ", o.id);
    kgsl_gpuobj_free fr{};
    fr.id = o.id;
    call(IOCTL_KGSL_GPUOBJ_FREE, &fr, "GPUOBJ_FREE");
    ::munmap(it->second.host, it->second.size);
    maps_.erase(it);
  }
  void write(const GpuObject& o, uint64_t off, const void* src, uint64_t n) override {
    std::memcpy(at(o, off, n), src, n);
  }
  void read(const GpuObject& o, uint64_t off, void* dst, uint64_t n) override { std::memcpy(dst, at(o, off, n), n); }
  uint32_t submit(uint64_t ib, uint32_t dwords) override {
    kgsl_command_object obj{};
    obj.gpuaddr = ib;
    obj.size = uint64_t(dwords) * 4;
    obj.flags = KGSL_CMDLIST_IB;
    kgsl_gpu_command cmd{};
    cmd.cmdlist = reinterpret_cast<uint64_t>(&obj);
    cmd.cmdsize = sizeof obj;
    cmd.numcmds = 1;
    cmd.context_id = ctx_;
    call(IOCTL_KGSL_GPU_COMMAND, &cmd, "GPU_COMMAND");
    return cmd.timestamp;
  }
  void wait(uint32_t ts) override {
    kgsl_device_waittimestamp_ctxtid w{ctx_, ts, 0xffffffffu};
    call(IOCTL_KGSL_DEVICE_WAITTIMESTAMP_CTXTID, &w, "DEVICE_WAITTIMESTAMP_CTXTID");
  }

 private:
  struct Map {
    void* host;
    uint64_t size;
  };
  void call(unsigned long req, void* arg, const char* what) {
    int r;
    do r = ::ioctl(fd_, req, arg);
    while (r < 0 && errno == EINTR);
    OPV_CHECK(r == 0, "qcom: ioctl ", what, " failed: ", std::strerror(errno));
  }
  uint8_t* at(const GpuObject& o, uint64_t off, uint64_t n) {
    auto it = maps_.find(o.id);
    OPV_CHECK(it != maps_.end(), "qcom: access to unknown GPU object ", o.id);
    OPV_CHECK(off <= it->second.size && n <= it->second.size - off, "qcom: access of ", n, " bytes at ", off,
              " outside GPU object ", o.id, " (", it->second.size, " bytes)");
    return static_cast<uint8_t*>(it->second.host) + off;
  }
  std::string path_;
  int fd_ = -1;
  uint32_t ctx_ = 0, chip_id_ = 0;
  std::map<uint32_t, Map> maps_;
};

}  // namespace

std::unique_ptr<Device> open_kgsl(const std::string& path) { return std::make_unique<KgslDevice>(path); }
#else
std::unique_ptr<Device> open_kgsl(const std::string& path) { fail("qcom: KGSL needs Linux (", path, ")"); }
#endif

}  // namespace opv::qcom
