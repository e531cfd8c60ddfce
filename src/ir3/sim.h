// Functional simulator for a6xx compute shaders (ir3 machine code).
//
// Model: waves of `wave_size` fibers over a grid of work-groups; per fiber r0-r47 (merged
// half/full: hrN.c is one 16-bit half of r(N/2)), a0.x/a1.x and p0.x-w; shared r48-r55 per
// wave; const file, global memory, per-group local memory, per-fiber private memory, 2D images
// (isam/sam/getsize) and IBO buffers (ldib/stib), all in host memory. Divergence is handled by
// running, at each step, the fibers whose pc is the lowest (reconverging at joins); (rptN)
// repeats with (r) source increments. Execution is deterministic. What the hardware does that
// the docs leave open is chosen and marked "(assumed)" in sim.cpp.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir3/isa.h"

namespace opv::ir3 {

// A 2D image bound as t#N: row-major texels. Its texels live either in `data` (tightly
// packed) or, when `address` is set, in global memory at address + y*pitch + x*texel_bytes()
// (a view that kernels of the same run also write through an IBO).
struct SimImage {
  enum class Format { RGBA32F, RGBA16F, R32F, RGBA32UI };
  Format format = Format::RGBA32F;
  int width = 0, height = 0;
  std::vector<uint8_t> data;
  uint64_t address = 0;  // 0: texels in `data`
  uint32_t pitch = 0;    // bytes per row when `address` is set (0: width * texel_bytes())
  int texel_bytes() const;
};

// A buffer bound as an IBO (ldib.b/stib.b index SSBO): a range of global memory. Untyped
// access indexes elements of the instruction's type; typed access (.typed) addresses texels of
// `image` (x, y), converting to and from its format, as a storage image.
struct SimBuffer {
  uint64_t address = 0;
  uint64_t size = 0;
  bool is_image = false;
  SimImage image;  // format, width, height, pitch (address/data unused)
};

struct SimConfig {
  std::array<uint32_t, 3> local_size{64, 1, 1};
  std::array<uint32_t, 3> num_groups{1, 1, 1};
  int wave_size = 64;
  uint32_t local_mem_bytes = 32 * 1024;
  uint32_t private_mem_bytes = 1024;
  // Where a fiber finds its ids (regids: 4*n + component; -1 = not provided). The local id
  // goes to three consecutive full registers (r0.x-z by default, tinygrad's LOCALIDREGID=0
  // reading (assumed)); the work-group id likewise. A regid in r48-r55 is a shared register
  // (one value per wave), which is where Mesa's a6xx compute shaders read the work-group id.
  int local_id_reg = 0;
  int group_id_reg = -1;
  // Merged register file (a6xx `mergedregs`): hrN.c is one 16-bit half of r(N/2). When false,
  // half registers are a file of their own, as in Mesa's compute variants with mergedregs=0.
  bool merged_regs = true;
  // Debugging: print every instruction lane `trace_lane` of work-group `trace_group` (linear
  // index, first wave) executes, with its destination register, to stderr (-1: off).
  int trace_group = -1, trace_lane = 0;
  uint64_t max_steps = 50'000'000;  // instructions issued per wave before giving up
};

struct SimStats {
  uint64_t instructions = 0;  // instructions issued (per wave, summed)
  uint64_t fiber_instructions = 0;
  // mad.f32 elements issued (per wave, summed; an (rptN) instruction issues N + 1), and those
  // issued inside (rptN) groups, N > 0
  uint64_t mad_f32 = 0, mad_f32_packed = 0;
  uint64_t barriers = 0;
  uint64_t waves = 0;
};

class Simulator {
 public:
  explicit Simulator(std::vector<uint64_t> program, int gen = kGenA6xx);
  // Replaces the program and keeps global memory (one memory, many kernels: a replay).
  void set_program(const std::vector<uint64_t>& program);

  // Global memory: allocations are 256-byte aligned, never freed, zero-filled.
  uint64_t alloc(uint64_t bytes);
  void write(uint64_t addr, const void* src, uint64_t bytes);
  void read(uint64_t addr, void* dst, uint64_t bytes) const;
  template <typename T>
  std::vector<T> read_vec(uint64_t addr, size_t n) const {
    std::vector<T> v(n);
    read(addr, v.data(), n * sizeof(T));
    return v;
  }

  std::vector<uint32_t> consts;      // c0.x = consts[0], c0.y = consts[1], ...
  void set_const_u64(int regid, uint64_t v);  // two consecutive dwords (e.g. a buffer address)
  std::vector<SimImage> images;      // t#N
  std::vector<SimBuffer> ibos;       // IBO N

  SimStats run(const SimConfig& cfg);

  // Optional observer of the kernels' global-memory accesses (address, bytes, kind), called
  // after each load/store/texel access that reaches global memory. The simulated KGSL device
  // (backend/qcom) uses it to check ordering between dispatches. Unset: one test per access.
  enum class Access { Read, Write, TextureRead };
  std::function<void(uint64_t addr, uint64_t bytes, Access kind)> on_access;

  const std::vector<Instr>& program() const { return prog_; }

 private:
  struct Impl;
  std::vector<Instr> prog_;
  int gen_;
  std::vector<uint8_t> mem_;  // global memory, addresses start at kBase
  friend struct Impl;
};

}  // namespace opv::ir3
