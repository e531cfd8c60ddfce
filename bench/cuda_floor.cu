// The latency floor of a chain of small dependent GPU steps (issue 15's 0.10 ms goal is 46 such
// steps): what one step costs when it does no work, or one small dependent read and write, as
//   (a) a kernel per step, the steps a chain of kernel nodes in one CUDA graph (opvision's form);
//   (b) one persistent kernel, the steps separated by a grid-wide barrier (an atomic counter);
//   (c) one thread-block cluster, the steps separated by barrier.cluster (sm_90), data in
//       distributed shared memory;
//   (d) as (a), the edges programmatic (programmatic dependent launch, sm_90: each kernel starts
//       with griddepcontrol.launch_dependents + griddepcontrol.wait, opvision's --cuda-pdl early);
//   (e) as (d) with the wait alone: the next kernel launches as this one's blocks exit (--cuda-pdl on).
//   (b2) as (b), the barrier one red.release + an ld.acquire spin a block (the form a well-made grid
//       barrier takes) instead of an atomic spin with fences;
//   (f) as (b) without any barrier: dataflow, each block waiting only on the two blocks whose data
//       it reads or overwrites (per-block step counters, st.release / ld.acquire);
//   (g) as (d) (every kernel released at its blocks' start) with (f)'s per-block waits instead of
//       griddepcontrol.wait: a block starts as soon as the blocks it depends on have written, not
//       when the whole kernel before has finished (flags flip parity each replay: no reset node).
// The step reads its block's neighbour's values (block b reads block b+1's), so (f) and (g) have a
// real dependency between blocks of consecutive steps.
// Wall time per replay / steps, median of the rounds; every replay checked (the last step's
// value must equal the chain length). Built and run on the GPU machine (nvcc there):
//   nvcc -O2 -arch=sm_90 bench/cuda_floor.cu -o cuda_floor && ./cuda_floor [STEPS] [BLOCKS]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                            \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "cuda_floor: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

constexpr int kThreads = 256;

// Element i of a step reads element i + kThreads (the next block's; the last block reads the first's).
__device__ __forceinline__ int next_elem() {
  return ((blockIdx.x + 1) % gridDim.x) * kThreads + threadIdx.x;
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void red_release_add(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__global__ void empty_step(float*) {}
// One dependent step: every block reads its 256 floats of the previous step and writes them + 1.
__global__ void rw_step(const float* __restrict__ x, float* __restrict__ y) {
  y[blockIdx.x * kThreads + threadIdx.x] = x[next_elem()] + 1.0f;
}
// (d): the same step behind the programmatic-dependent-launch prologue.
__global__ void rw_step_pdl(const float* __restrict__ x, float* __restrict__ y) {
  asm volatile("griddepcontrol.launch_dependents;\n\tgriddepcontrol.wait;" ::: "memory");
  y[blockIdx.x * kThreads + threadIdx.x] = x[next_elem()] + 1.0f;
}
__global__ void empty_step_pdl(float*) {
  asm volatile("griddepcontrol.launch_dependents;\n\tgriddepcontrol.wait;" ::: "memory");
}
// (e): the wait alone.
__global__ void rw_step_wait(const float* __restrict__ x, float* __restrict__ y) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  y[blockIdx.x * kThreads + threadIdx.x] = x[next_elem()] + 1.0f;
}
__global__ void empty_step_wait(float*) { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// All steps in one launch: a grid barrier (monotonic counter; every block co-resident) per step.
__global__ void persistent(float* a, float* b, unsigned* counter, int steps, unsigned base) {
  const int i = blockIdx.x * kThreads + threadIdx.x;
  for (int s = 0; s < steps; ++s) {
    const float* x = (s & 1) ? b : a;
    float* y = (s & 1) ? a : b;
    y[i] = __ldcg(x + next_elem()) + 1.0f;
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      const unsigned target = base + (unsigned)(s + 1) * gridDim.x;
      atomicAdd(counter, 1u);
      while (atomicAdd(counter, 0u) < target) {}
      __threadfence();
    }
    __syncthreads();
  }
}
// (b2): the barrier as one red.release and an ld.acquire spin by one thread a block.
__global__ void persistent_ra(float* a, float* b, unsigned* counter, int steps, unsigned base) {
  const int i = blockIdx.x * kThreads + threadIdx.x;
  for (int s = 0; s < steps; ++s) {
    const float* x = (s & 1) ? b : a;
    float* y = (s & 1) ? a : b;
    y[i] = x[next_elem()] + 1.0f;
    __syncthreads();
    if (threadIdx.x == 0) {
      const unsigned target = base + (unsigned)(s + 1) * gridDim.x;
      red_release_add(counter, 1u);
      while (ld_acquire(counter) < target) {}
    }
    __syncthreads();
  }
}
// (f): no barrier. done[b] = base + the steps block b has finished. Step s of block b reads block
// b+1's values of step s-1 and overwrites its own values of step s-2, which block b-1 read in step
// s-1: it waits until both neighbours have finished step s-1.
__global__ void persistent_flow(float* a, float* b, unsigned* done, int steps, unsigned base) {
  const int g = gridDim.x, blk = blockIdx.x;
  const int i = blk * kThreads + threadIdx.x;
  unsigned* nb = done + (blk + 1) % g;
  unsigned* pb = done + (blk + g - 1) % g;
  for (int s = 0; s < steps; ++s) {
    const float* x = (s & 1) ? b : a;
    float* y = (s & 1) ? a : b;
    if (s > 0) {
      if (threadIdx.x == 0) {
        while (ld_acquire(nb) < base + s) {}
        while (ld_acquire(pb) < base + s) {}
      }
      __syncthreads();
    }
    y[i] = x[next_elem()] + 1.0f;
    __syncthreads();
    if (threadIdx.x == 0) st_release(done + blk, base + s + 1);
  }
}
// (g): a kernel a step, released at its start; flags[s * G + b] is block b's flag of step s, set to
// this replay's phase (the flip of the value the block finds in its own flag, which the replay
// before set) when the block has written. A block waits for the flags of step s-1 it depends on.
__global__ void flow_step(const float* x, float* y, unsigned* flags, int s) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int g = gridDim.x, blk = blockIdx.x;
  unsigned* mine = flags + s * g + blk;
  const unsigned phase = *mine ^ 1u;  // own flag: last written by this block in the replay before
  if (s > 0) {
    if (threadIdx.x == 0) {
      const unsigned* prev = flags + (s - 1) * g;
      while (ld_acquire(prev + (blk + 1) % g) != phase) {}
      while (ld_acquire(prev + (blk + g - 1) % g) != phase) {}
    }
    __syncthreads();
  }
  y[blk * kThreads + threadIdx.x] = x[next_elem()] + 1.0f;
  __syncthreads();
  if (threadIdx.x == 0) st_release(mine, phase);
}
// All steps in one cluster: each block's 256 floats in shared memory; step s reads the NEXT block's
// values through distributed shared memory (mapa + ld.shared::cluster), then a cluster barrier.
__global__ void cluster_steps(float* out, int steps) {
  __shared__ float v[2][kThreads];
  unsigned rank, n;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  v[0][threadIdx.x] = 0.0f;
  asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory");
  for (int s = 0; s < steps; ++s) {
    const unsigned src = (unsigned)__cvta_generic_to_shared(&v[s & 1][threadIdx.x]);
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(src), "r"((rank + 1) % n));
    float x;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(x) : "r"(remote) : "memory");
    v[(s + 1) & 1][threadIdx.x] = x + 1.0f;
    asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory");
  }
  out[blockIdx.x * kThreads + threadIdx.x] = v[steps & 1][threadIdx.x];
}

template <class F>
double time_us(F&& replay, int iters) {  // median wall time of one replay, microseconds
  for (int i = 0; i < 20; ++i) replay();
  CK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    replay();
    CK(cudaDeviceSynchronize());
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// `steps` launches of `blocks` x kThreads captured on `st` as one graph, each after the one before
// through a programmatic edge (the first has no kernel before it); launch(cfg, s) enqueues step s.
template <class F>
cudaGraphExec_t programmatic_chain(cudaStream_t st, int steps, int blocks, F&& launch) {
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int s = 0; s < steps; ++s) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(kThreads);
    cfg.stream = st;
    cfg.attrs = s > 0 ? &attr : nullptr;
    cfg.numAttrs = s > 0 ? 1 : 0;
    launch(cfg, s);
  }
  CK(cudaStreamEndCapture(st, &g));
  cudaGraphExec_t ge;
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphDestroy(g));
  return ge;
}

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 46;
  int blocks = argc > 2 ? std::atoi(argv[2]) : 0;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  if (blocks <= 0) blocks = prop.multiProcessorCount;
  const int n = blocks * kThreads;
  float *a, *b;
  unsigned* counter;
  CK(cudaMalloc(&a, n * sizeof(float)));
  CK(cudaMalloc(&b, n * sizeof(float)));
  CK(cudaMalloc(&counter, sizeof(unsigned)));
  CK(cudaMemset(counter, 0, sizeof(unsigned)));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  std::printf("%s, %d SMs; %d steps of %d blocks x %d threads; us per step (median replay / steps)\n", prop.name,
              prop.multiProcessorCount, steps, blocks, kThreads);
  std::vector<float> h(n);
  auto check = [&](const float* p, float want, const char* what) {
    CK(cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i)
      if (h[i] != want) {
        std::fprintf(stderr, "cuda_floor: %s: element %d is %g, want %g\n", what, i, h[i], want);
        std::exit(1);
      }
  };
  const int iters = 200;
  for (int rw = 0; rw < 2; ++rw) {  // (a): a graph of `steps` kernel nodes, each on the one before
    CK(cudaMemset(a, 0, n * sizeof(float)));
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (int s = 0; s < steps; ++s) {
      if (rw) rw_step<<<blocks, kThreads, 0, st>>>((s & 1) ? b : a, (s & 1) ? a : b);
      else empty_step<<<blocks, kThreads, 0, st>>>(a);
    }
    CK(cudaStreamEndCapture(st, &g));
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, g, 0));
    const double us = time_us([&] { CK(cudaGraphLaunch(ge, st)); }, iters);
    if (rw) {  // one more replay from zeros: the chain's last buffer holds `steps`
      CK(cudaMemset(a, 0, n * sizeof(float)));
      CK(cudaGraphLaunch(ge, st));
      CK(cudaStreamSynchronize(st));
      check((steps & 1) ? b : a, float(steps), "graph chain");
    }
    std::printf("  (a) graph of kernels, %-24s %7.2f us/step  (%.1f us a replay)\n",
                rw ? "a dependent read+write:" : "empty:", us / steps, us);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
  }
  for (int v = 0; v < 4; ++v) {  // (d), (e): (a) with programmatic edges (captured launch attribute)
    const int rw = v & 1;
    const bool early = v < 2;
    CK(cudaMemset(a, 0, n * sizeof(float)));
    cudaGraphExec_t ge = programmatic_chain(st, steps, blocks, [&](cudaLaunchConfig_t& cfg, int s) {
      float* x = (s & 1) ? b : a;
      float* y = (s & 1) ? a : b;
      if (rw) CK(cudaLaunchKernelEx(&cfg, early ? rw_step_pdl : rw_step_wait, (const float*)x, y));
      else CK(cudaLaunchKernelEx(&cfg, early ? empty_step_pdl : empty_step_wait, a));
    });
    const double us = time_us([&] { CK(cudaGraphLaunch(ge, st)); }, iters);
    if (rw) {
      CK(cudaMemset(a, 0, n * sizeof(float)));
      CK(cudaGraphLaunch(ge, st));
      CK(cudaStreamSynchronize(st));
      check((steps & 1) ? b : a, float(steps), "programmatic chain");
    }
    std::printf("  (%c) graph, programmatic edges%s, %-18s %7.2f us/step  (%.1f us a replay)\n", early ? 'd' : 'e',
                early ? " (early)" : " (wait)", rw ? "dependent r+w:" : "empty:", us / steps, us);
    CK(cudaGraphExecDestroy(ge));
  }
  {  // (b): one persistent kernel (blocks <= SMs: all co-resident)
    unsigned base = 0;
    CK(cudaMemset(counter, 0, sizeof(unsigned)));
    const double us = time_us(
        [&] {
          persistent<<<blocks, kThreads, 0, st>>>(a, b, counter, steps, base);
          base += unsigned(steps) * unsigned(blocks);
        },
        iters);
    CK(cudaMemset(a, 0, n * sizeof(float)));
    persistent<<<blocks, kThreads, 0, st>>>(a, b, counter, steps, base);
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    check((steps & 1) ? b : a, float(steps), "persistent");
    std::printf("  (b) one kernel, grid barrier per step:   %7.2f us/step  (%.1f us a launch)\n", us / steps, us);
  }
  // (b2), (f): the same launch with a release/acquire barrier, and with per-block dataflow waits
  unsigned* done;
  CK(cudaMalloc(&done, blocks * sizeof(unsigned)));
  for (int flow = 0; flow < 2; ++flow) {
    unsigned base = 0;
    unsigned* c = flow ? done : counter;
    CK(cudaMemset(c, 0, (flow ? blocks : 1) * sizeof(unsigned)));
    auto launch = [&] {
      if (flow) persistent_flow<<<blocks, kThreads, 0, st>>>(a, b, c, steps, base);
      else persistent_ra<<<blocks, kThreads, 0, st>>>(a, b, c, steps, base);
      base += flow ? unsigned(steps) : unsigned(steps) * unsigned(blocks);
    };
    const double us = time_us(launch, iters);
    CK(cudaMemset(a, 0, n * sizeof(float)));
    launch();
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    check((steps & 1) ? b : a, float(steps), flow ? "persistent dataflow" : "persistent release/acquire");
    std::printf("  (%s) one kernel, %-27s %7.2f us/step  (%.1f us a launch)\n", flow ? "f" : "b2",
                flow ? "per-block waits:" : "release/acquire barrier:", us / steps, us);
  }
  {  // (g): a graph of kernels released at their start, per-block waits instead of griddepcontrol.wait
    unsigned* flags;
    CK(cudaMalloc(&flags, size_t(steps) * blocks * sizeof(unsigned)));
    CK(cudaMemset(flags, 0, size_t(steps) * blocks * sizeof(unsigned)));
    cudaGraphExec_t ge = programmatic_chain(st, steps, blocks, [&](cudaLaunchConfig_t& cfg, int s) {
      const float* x = (s & 1) ? b : a;
      float* y = (s & 1) ? a : b;
      CK(cudaLaunchKernelEx(&cfg, flow_step, x, y, flags, s));
    });
    const double us = time_us([&] { CK(cudaGraphLaunch(ge, st)); }, iters);
    CK(cudaMemset(a, 0, n * sizeof(float)));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaStreamSynchronize(st));
    check((steps & 1) ? b : a, float(steps), "programmatic dataflow chain");
    std::printf("  (g) graph, released at start, per-block waits: %6.2f us/step  (%.1f us a replay)\n", us / steps, us);
    CK(cudaGraphExecDestroy(ge));
  }
  for (int cl : {8, 16}) {  // (c): one cluster of cl blocks
    CK(cudaFuncSetAttribute(cluster_steps, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(cl);
    cfg.blockDim = dim3(kThreads);
    cfg.stream = st;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = cl;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    const double us = time_us([&] { CK(cudaLaunchKernelEx(&cfg, cluster_steps, a, steps)); }, iters);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h.data(), a, cl * kThreads * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < cl * kThreads; ++i)
      if (h[i] != float(steps)) {
        std::fprintf(stderr, "cuda_floor: cluster %d: element %d is %g\n", cl, i, h[i]);
        return 1;
      }
    std::printf("  (c) one cluster of %2d, barrier.cluster + DSMEM read per step: %6.2f us/step  (%.1f us a launch)\n",
                cl, us / steps, us);
  }
  return 0;
}
