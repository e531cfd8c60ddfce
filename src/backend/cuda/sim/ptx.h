// cudasim: a functional PTX simulator, so the cuda backend's generated kernels run (slowly, exactly
// as the PTX says) on a machine without an NVIDIA GPU. It backs libopv_cudasim.so, a stand-in for
// libcuda.so.1 (driver.cpp; the backend loads it when OPV_CUDA_DRIVER names it).
//
// 1. parse_module(): PTX text as NVRTC writes it (.version/.target, .entry kernels with .param
//    lists, .reg/.shared declarations, .maxntid/.reqntid/.reqnctapercluster, labels, predicated
//    instructions) into pre-decoded instructions: register names become slots, labels become
//    instruction indexes, shared symbols become offsets. Dynamic shared memory: module-scope
//    `.extern .shared .align A .b8 NAME[];` (NVRTC's form of `extern __shared__`) declares arrays
//    that all begin at the kernel's dynamic region, which follows its static .shared symbols,
//    aligned to the largest alignment of those the kernel names (as on a GPU). Anything outside
//    the subset it knows is refused with the line named ("cudasim: line 41: unsupported
//    instruction 'tex.2d...'"), never run approximately.
// 2. launch(): runs a grid. Blocks run one cluster at a time (a kernel without clusters: one
//    block at a time); within a cluster every thread is an interpreter state, stepped until it
//    reaches a synchronisation point: bar.sync (its block), a warp-wide instruction (shfl.sync,
//    ldmatrix, mma.sync: its warp, all lanes at the same instruction) or barrier.cluster.wait
//    (its cluster). What the PTX ISA leaves to the hardware is fixed here: cp.async copies when
//    issued, mma.sync accumulates its 16 products in k order with fused multiply-adds onto C,
//    .approx functions are the C library's.
// 3. Memory is checked: every global access must lie inside one allocation the driver made
//    (Memory), every shared access inside the block's shared memory (static and the launch's
//    dynamic bytes, its own or, through shared::cluster, a peer's), every address aligned to its
//    access size; a violation stops the launch with the kernel, instruction and address named. A
//    deadlock (threads waiting at different barriers) is reported the same way.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace opv::cudasim {

// Every refusal and fault of the simulator ("cudasim: ..."); the driver turns it into a CUresult.
struct SimError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Device allocations: [base, base + bytes) ranges of host memory standing in for device memory.
class Memory {
 public:
  void add(uint64_t base, uint64_t bytes) { ranges_[base] = Range{bytes, false}; }
  void remove(uint64_t base) { ranges_.erase(base); }
  bool contains(uint64_t base) const { return ranges_.count(base) != 0; }
  // The allocation holding [addr, addr + bytes), or false; *written (optional): its flag "a kernel
  // has stored into it" (set by the executor; reads of an allocation no kernel writes, such as the
  // weights, may come before griddepcontrol.wait).
  bool find(uint64_t addr, uint64_t bytes, uint64_t* base, uint64_t* size, bool** written = nullptr);

 private:
  struct Range {
    uint64_t bytes;
    bool kernel_written;
  };
  std::map<uint64_t, Range> ranges_;
};

struct Instr;  // ptx.cpp

struct Param {
  std::string name;
  uint32_t offset = 0, size = 0;
};

struct Kernel {
  std::string name;
  std::vector<Param> params;
  uint32_t param_bytes = 0;
  uint32_t shared_bytes = 0;  // static .shared symbols
  // Where the dynamic shared memory (the .extern .shared arrays, all at this offset) begins:
  // shared_bytes aligned up to the largest alignment of the arrays the kernel names. A block has
  // dynamic_base + the launch's dynamic bytes of shared memory.
  uint32_t dynamic_base = 0;
  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as cuFuncSetAttribute set it (driver.cpp);
  // -1: never set (the device's default, 48 KB less the static bytes).
  int64_t max_dynamic_shared = -1;
  uint32_t local_bytes = 0;   // .local symbols (per thread: the compiler's stack frames)
  uint32_t max_threads = 1024;  // .maxntid / .reqntid product, else the device limit
  uint32_t cluster[3] = {0, 0, 0};  // .reqnctapercluster; 0 = no cluster
  uint32_t registers = 0;  // register slots (the simulator's, not the hardware's)
  // Has griddepcontrol.wait (programmatic dependent launch): a thread's global memory accesses
  // before it has executed one are faults (on a GPU they could race the kernels before it).
  bool grid_dep_wait = false;
  std::vector<Instr> code;
  std::vector<std::string> labels;  // per instruction: the source line, for messages
  Kernel();
  ~Kernel();
  Kernel(Kernel&&) noexcept;
  Kernel& operator=(Kernel&&) noexcept;
};

// A module-scope .global variable: zero-filled (or initialised) memory the module owns; the driver
// registers it with Memory while the module is loaded.
struct GlobalVar {
  std::string name;
  std::unique_ptr<uint8_t[]> storage;
  uint8_t* data = nullptr;  // aligned within storage
  uint64_t bytes = 0;
};

struct Module {
  std::vector<Kernel> kernels;
  std::vector<GlobalVar> globals;
  const Kernel* find(const std::string& name) const;
};

// Parses PTX text; throws SimError "cudasim: line N: ..." on anything it does not support.
std::unique_ptr<Module> parse_module(const std::string& ptx);

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

// Runs kernel `k` over grid x block with `params` (k.param_bytes bytes, laid out as k.params say)
// and `dynamic_shared` bytes of dynamic shared memory per block (the driver checks them against
// the device's limits; here only against what the simulator addresses, 16 MiB a block).
// Throws SimError naming the kernel, the instruction and the fault; also once the threads have run
// `max_steps` instructions in all (0: no bound; the fuzz target bounds hostile loops with it).
void launch(const Kernel& k, Dim3 grid, Dim3 block, const uint8_t* params, Memory& mem,
            uint64_t max_steps = 0, uint32_t dynamic_shared = 0);

}  // namespace opv::cudasim
