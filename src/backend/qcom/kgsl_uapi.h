// The KGSL (/dev/kgsl-3d0) uapi subset we use, laid out as the kernel's msm_kgsl.h has it on
// aarch64 LP64 (../shared/qcom/KGSL.md "Struct layouts"; fields are fixed-width here so the
// layout is the same on every host, and static_asserts pin sizes and offsets). ioctl numbers
// are computed as the kernel's _IOW/_IOWR do: dir<<30 | size<<16 | KGSL_IOC_TYPE<<8 | nr, and
// checked against the numbers KGSL.md lists.
#pragma once
#include <cstddef>
#include <cstdint>

namespace opv::qcom::kgsl {

inline constexpr uint32_t KGSL_IOC_TYPE = 0x09;
inline constexpr uint32_t IOC_WRITE = 1, IOC_READ = 2;  // _IOC_WRITE / _IOC_READ
constexpr uint32_t ioc(uint32_t dir, uint32_t nr, uint32_t size) { return dir << 30 | size << 16 | KGSL_IOC_TYPE << 8 | nr; }

struct kgsl_device_getproperty {
  uint32_t type;
  uint32_t pad_;
  uint64_t value;  // user pointer
  uint64_t sizebytes;
};
struct kgsl_devinfo {
  uint32_t device_id, chip_id, mmu_enabled, pad_;
  uint64_t gmem_gpubaseaddr;
  uint32_t gpu_id, pad2_;
  uint64_t gmem_sizebytes;
};
struct kgsl_device_constraint {
  uint32_t type, context_id;
  uint64_t data;  // user pointer
  uint64_t size;
};
struct kgsl_drawctxt_create {
  uint32_t flags, drawctxt_id;
};
struct kgsl_drawctxt_destroy {
  uint32_t drawctxt_id;
};
struct kgsl_gpuobj_alloc {
  uint64_t size, flags, va_len, mmapsize;
  uint32_t id, metadata_len;
  uint64_t metadata;
};
struct kgsl_gpuobj_free {
  uint64_t flags, priv;
  uint32_t id, type, len, pad_;
};
struct kgsl_gpuobj_info {
  uint64_t gpuaddr, flags, size, va_len, va_addr;
  uint32_t id, pad_;
};
struct kgsl_command_object {
  uint64_t offset, gpuaddr, size;
  uint32_t flags, id;
};
struct kgsl_gpu_command {
  uint64_t flags;
  uint64_t cmdlist;  // user pointer to kgsl_command_object[]
  uint32_t cmdsize, numcmds;
  uint64_t objlist;
  uint32_t objsize, numobjs;
  uint64_t synclist;
  uint32_t syncsize, numsyncs;
  uint32_t context_id, timestamp;
};
struct kgsl_device_waittimestamp_ctxtid {
  uint32_t context_id, timestamp, timeout;  // timeout in milliseconds
};
struct kgsl_cmdstream_readtimestamp_ctxtid {
  uint32_t context_id, type, timestamp;
};

static_assert(sizeof(kgsl_device_getproperty) == 24 && offsetof(kgsl_device_getproperty, value) == 8 &&
              offsetof(kgsl_device_getproperty, sizebytes) == 16);
static_assert(sizeof(kgsl_devinfo) == 40 && offsetof(kgsl_devinfo, chip_id) == 4 &&
              offsetof(kgsl_devinfo, gmem_gpubaseaddr) == 16 && offsetof(kgsl_devinfo, gpu_id) == 24 &&
              offsetof(kgsl_devinfo, gmem_sizebytes) == 32);
static_assert(sizeof(kgsl_device_constraint) == 24 && offsetof(kgsl_device_constraint, data) == 8);
static_assert(sizeof(kgsl_drawctxt_create) == 8 && offsetof(kgsl_drawctxt_create, drawctxt_id) == 4);
static_assert(sizeof(kgsl_drawctxt_destroy) == 4);
static_assert(sizeof(kgsl_gpuobj_alloc) == 48 && offsetof(kgsl_gpuobj_alloc, mmapsize) == 24 &&
              offsetof(kgsl_gpuobj_alloc, id) == 32 && offsetof(kgsl_gpuobj_alloc, metadata) == 40);
static_assert(sizeof(kgsl_gpuobj_free) == 32 && offsetof(kgsl_gpuobj_free, id) == 16 && offsetof(kgsl_gpuobj_free, len) == 24);
static_assert(sizeof(kgsl_gpuobj_info) == 48 && offsetof(kgsl_gpuobj_info, va_addr) == 32 && offsetof(kgsl_gpuobj_info, id) == 40);
static_assert(sizeof(kgsl_command_object) == 32 && offsetof(kgsl_command_object, flags) == 24 &&
              offsetof(kgsl_command_object, id) == 28);
static_assert(sizeof(kgsl_gpu_command) == 64 && offsetof(kgsl_gpu_command, cmdsize) == 16 &&
              offsetof(kgsl_gpu_command, objlist) == 24 && offsetof(kgsl_gpu_command, synclist) == 40 &&
              offsetof(kgsl_gpu_command, context_id) == 56 && offsetof(kgsl_gpu_command, timestamp) == 60);
static_assert(sizeof(kgsl_device_waittimestamp_ctxtid) == 12);
static_assert(sizeof(kgsl_cmdstream_readtimestamp_ctxtid) == 12);

inline constexpr uint32_t IOCTL_KGSL_DEVICE_GETPROPERTY = ioc(IOC_READ | IOC_WRITE, 0x02, sizeof(kgsl_device_getproperty));
inline constexpr uint32_t IOCTL_KGSL_DEVICE_WAITTIMESTAMP_CTXTID = ioc(IOC_WRITE, 0x07, sizeof(kgsl_device_waittimestamp_ctxtid));
inline constexpr uint32_t IOCTL_KGSL_DRAWCTXT_CREATE = ioc(IOC_READ | IOC_WRITE, 0x13, sizeof(kgsl_drawctxt_create));
inline constexpr uint32_t IOCTL_KGSL_DRAWCTXT_DESTROY = ioc(IOC_WRITE, 0x14, sizeof(kgsl_drawctxt_destroy));
inline constexpr uint32_t IOCTL_KGSL_CMDSTREAM_READTIMESTAMP_CTXTID =
    ioc(IOC_READ | IOC_WRITE, 0x16, sizeof(kgsl_cmdstream_readtimestamp_ctxtid));
inline constexpr uint32_t IOCTL_KGSL_SETPROPERTY = ioc(IOC_WRITE, 0x32, sizeof(kgsl_device_getproperty));
inline constexpr uint32_t IOCTL_KGSL_GPUOBJ_ALLOC = ioc(IOC_READ | IOC_WRITE, 0x45, sizeof(kgsl_gpuobj_alloc));
inline constexpr uint32_t IOCTL_KGSL_GPUOBJ_FREE = ioc(IOC_WRITE, 0x46, sizeof(kgsl_gpuobj_free));
inline constexpr uint32_t IOCTL_KGSL_GPUOBJ_INFO = ioc(IOC_READ | IOC_WRITE, 0x47, sizeof(kgsl_gpuobj_info));
inline constexpr uint32_t IOCTL_KGSL_GPU_COMMAND = ioc(IOC_READ | IOC_WRITE, 0x4A, sizeof(kgsl_gpu_command));

// The numbers KGSL.md lists (from tinygrad's autogen, cross-checked against turnip).
static_assert(IOCTL_KGSL_DEVICE_GETPROPERTY == 0xC0180902u);
static_assert(IOCTL_KGSL_DEVICE_WAITTIMESTAMP_CTXTID == 0x400C0907u);
static_assert(IOCTL_KGSL_DRAWCTXT_CREATE == 0xC0080913u);
static_assert(IOCTL_KGSL_DRAWCTXT_DESTROY == 0x40040914u);
static_assert(IOCTL_KGSL_CMDSTREAM_READTIMESTAMP_CTXTID == 0xC00C0916u);
static_assert(IOCTL_KGSL_SETPROPERTY == 0x40180932u);
static_assert(IOCTL_KGSL_GPUOBJ_ALLOC == 0xC0300945u);
static_assert(IOCTL_KGSL_GPUOBJ_FREE == 0x40200946u);
static_assert(IOCTL_KGSL_GPUOBJ_INFO == 0xC0300947u);
static_assert(IOCTL_KGSL_GPU_COMMAND == 0xC040094Au);

// Constants (KGSL.md "Flags used").
inline constexpr uint32_t KGSL_PROP_DEVICE_INFO = 0x1;
inline constexpr uint32_t KGSL_PROP_PWR_CONSTRAINT = 0x12;
inline constexpr uint32_t KGSL_CONSTRAINT_PWRLEVEL = 1, KGSL_CONSTRAINT_PWR_MAX = 1;
inline constexpr uint32_t KGSL_CONTEXT_NO_GMEM_ALLOC = 0x2, KGSL_CONTEXT_PREAMBLE = 0x10,
                          KGSL_CONTEXT_NO_FAULT_TOLERANCE = 0x200, KGSL_CONTEXT_PWR_CONSTRAINT = 0x800;
inline constexpr uint32_t KGSL_CONTEXT_PRIORITY_SHIFT = 12, KGSL_CONTEXT_PREEMPT_STYLE_SHIFT = 25,
                          KGSL_CONTEXT_PREEMPT_STYLE_FINEGRAIN = 2;
inline constexpr uint64_t KGSL_MEMALIGN_SHIFT = 16, KGSL_MEMFLAGS_USE_CPU_MAP = 0x10000000;
inline constexpr uint32_t KGSL_CMDLIST_IB = 0x1;
inline constexpr uint32_t KGSL_TIMESTAMP_RETIRED = 2;
inline constexpr uint64_t kPageBytes = 4096;

}  // namespace opv::qcom::kgsl
