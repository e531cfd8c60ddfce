// The upload floor of a batch-1 inference's frames (the fixture: two uint8 inputs of 393,216
// bytes, packed by one kernel into 786,432 fp16 values): what each way of getting them from pinned
// host memory into the pack's output costs, as a CUDA graph replayed with one host sync each
// (opvision's form). Ways:
//   copy2   two memcpy nodes (one per input), then the pack reading device memory (the `copy` form)
//   copy1   one memcpy node of both inputs (adjacent in staging and on the device), then the pack
//   copyN   the frames in N memcpy nodes on parallel branches, then the pack
//   mapW    the pack reads mapped host memory (`auto`), W bytes a load (8, 16), U loads a thread
//   split   input 1 copied by a memcpy node while a pack of input 0 reads it mapped; then a pack of
//           input 1 from device memory (both packs write their halves of one output)
//   bw      large transfers (25 MB) by memcpy and by a mapped read, for the link's bandwidth
// Every replay's output checked against the host's pack (bytes differ each round).
//   nvcc -O2 -arch=sm_90 bench/cuda_upload.cu -o cuda_upload && ./cuda_upload [REPLAYS]
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "cuda_upload: %s: %s (line %d)\n", #x, cudaGetErrorString(e_),      \
                   __LINE__);                                                                  \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

constexpr size_t kInput = 12 * 128 * 256;  // bytes of one uint8 input
constexpr size_t kTotal = 2 * kInput;
constexpr float kScale = 1.0f / 127.5f;
constexpr float kBias = -1.0f;

// Packs 8 bytes (two words: lo, hi) into 8 fp16 values at dst (16-byte aligned).
__device__ __forceinline__ void pack8(unsigned lo, unsigned hi, __half* dst) {
  __align__(16) __half out[8];
#pragma unroll
  for (int b = 0; b < 8; ++b) {
    const unsigned byte = ((b < 4 ? lo : hi) >> (8 * (b % 4))) & 0xffu;
    out[b] = __float2half(float(byte) * kScale + kBias);
  }
  *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(out);
}

// Packs 16 bytes into 16 fp16 values at dst.
__device__ __forceinline__ void pack16(uint4 v, __half* dst) {
  pack8(v.x, v.y, dst);
  pack8(v.z, v.w, dst + 8);
}

// Packs `n` bytes from `src` (host-mapped or device) into fp16 at `dst`; each thread U loads of
// W bytes, all issued before the first is used.
template <int W, int U>
__global__ void pack(const unsigned char* __restrict__ src, __half* __restrict__ dst, size_t n) {
  const size_t per = size_t(W) * U;
  const size_t base = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * per;
  if (base >= n) return;
  uint4 v[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    if constexpr (W == 16) {
      v[u] = *reinterpret_cast<const uint4*>(src + base + size_t(u) * W);
    } else {
      uint2 t = *reinterpret_cast<const uint2*>(src + base + size_t(u) * W);
      v[u] = make_uint4(t.x, t.y, 0, 0);
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    if constexpr (W == 16) {
      pack16(v[u], dst + base + size_t(u) * W);
    } else {
      pack8(v[u].x, v[u].y, dst + base + size_t(u) * W);
    }
  }
}

// Reads n bytes (mapped or device) with 16-byte loads, U a thread; sums into one word so the loads
// are kept.
template <int U>
__global__ void read_all(const uint4* __restrict__ src, size_t n16, unsigned* sink) {
  size_t i = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * U;
  unsigned acc = 0;
  for (size_t stride = size_t(gridDim.x) * blockDim.x * U; i < n16; i += stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = i + u < n16 ? src[i + u] : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

// As pack<16, U>, the U loads of a thread a block apart (each load instruction of a warp reads 512
// contiguous bytes).
template <int U>
__global__ void pack_i(const unsigned char* __restrict__ src, __half* __restrict__ dst, size_t n) {
  const size_t base = size_t(blockIdx.x) * blockDim.x * 16 * U + size_t(threadIdx.x) * 16;
  uint4 v[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const size_t at = base + size_t(u) * blockDim.x * 16;
    v[u] = at < n ? *reinterpret_cast<const uint4*>(src + at) : make_uint4(0, 0, 0, 0);
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const size_t at = base + size_t(u) * blockDim.x * 16;
    if (at >= n) break;
    pack16(v[u], dst + at);
  }
}

// Each block copies its CHUNK bytes into shared memory with one bulk copy (the tensor memory
// accelerator, cp.async.bulk: large requests), then packs them.
template <int CHUNK>
__global__ void pack_tma(const unsigned char* __restrict__ src, __half* __restrict__ dst, size_t n) {
  __shared__ __align__(128) unsigned char buf[CHUNK];
  __shared__ __align__(8) unsigned long long bar;
  const size_t base = size_t(blockIdx.x) * CHUNK;
  const unsigned bytes = unsigned(n - base < CHUNK ? n - base : CHUNK);
  const unsigned sbar = unsigned(__cvta_generic_to_shared(&bar));
  const unsigned sbuf = unsigned(__cvta_generic_to_shared(buf));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(sbar));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(sbar), "r"(bytes) : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(sbuf),
        "l"(src + base), "r"(bytes), "r"(sbar)
        : "memory");
  }
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(sbar)
        : "memory");
  for (unsigned at = threadIdx.x * 16; at < bytes; at += blockDim.x * 16) {
    pack16(*reinterpret_cast<const uint4*>(buf + at), dst + base + at);
  }
}

struct Bufs {
  unsigned char* host = nullptr;    // pinned, mapped
  unsigned char* mapped = nullptr;  // its device pointer
  unsigned char* dev = nullptr;
  __half* out = nullptr;
};

template <int W, int U>
void add_pack(cudaGraph_t g, cudaGraphNode_t* node, const std::vector<cudaGraphNode_t>& deps,
              const unsigned char* src, __half* dst, size_t n) {
  const unsigned threads = 256;
  const size_t per = size_t(W) * U;
  const unsigned blocks = std::max(1u, unsigned((n / per + threads - 1) / threads));
  cudaKernelNodeParams p{};
  void* args[] = {&src, &dst, &n};
  p.func = reinterpret_cast<void*>(pack<W, U>);
  p.gridDim = dim3(blocks);
  p.blockDim = dim3(threads);
  p.kernelParams = args;
  CK(cudaGraphAddKernelNode(node, g, deps.data(), deps.size(), &p));
}

template <typename K>
void add_kernel(cudaGraph_t g, cudaGraphNode_t* node, const std::vector<cudaGraphNode_t>& deps, K kern,
                unsigned blocks, const unsigned char* src, __half* dst, size_t n) {
  cudaKernelNodeParams p{};
  void* args[] = {&src, &dst, &n};
  p.func = reinterpret_cast<void*>(kern);
  p.gridDim = dim3(blocks);
  p.blockDim = dim3(256);
  p.kernelParams = args;
  CK(cudaGraphAddKernelNode(node, g, deps.data(), deps.size(), &p));
}

void add_copy(cudaGraph_t g, cudaGraphNode_t* node, const std::vector<cudaGraphNode_t>& deps,
              void* dst, const void* src, size_t n) {
  CK(cudaGraphAddMemcpyNode1D(node, g, deps.data(), deps.size(), dst, src, n,
                              cudaMemcpyHostToDevice));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Replays `exec` `replays` times, each followed by a stream sync (host wall clock, us); the
// output checked after a replay every 16.
double time_graph(cudaGraphExec_t exec, cudaStream_t s, const Bufs& b, int replays,
                  const char* name) {
  std::vector<double> t;
  std::vector<__half> out(kTotal);
  for (int r = -20; r < replays; ++r) {
    const bool check = r >= 0 && r % 16 == 0;
    if (check) {
      for (size_t i = 0; i < kTotal; ++i) b.host[i] = (unsigned char)((i * 131 + r * 7) >> 3);
      CK(cudaMemset(b.out, 0xff, kTotal * sizeof(__half)));
      CK(cudaDeviceSynchronize());
    }
    const auto t0 = std::chrono::steady_clock::now();
    CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    const auto t1 = std::chrono::steady_clock::now();
    if (r >= 0) t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    if (check) {
      CK(cudaMemcpy(out.data(), b.out, kTotal * sizeof(__half), cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < kTotal; ++i) {
        const float want = float(b.host[i]) * kScale + kBias;
        if (std::abs(__half2float(out[i]) - want) > 1e-2f) {
          std::fprintf(stderr, "cuda_upload: %s: element %zu is %g, want %g\n", name, i,
                       __half2float(out[i]), want);
          std::exit(1);
        }
      }
    }
  }
  return median(t);
}

int main(int argc, char** argv) {
  const int replays = argc > 1 ? std::atoi(argv[1]) : 400;
  CK(cudaSetDeviceFlags(cudaDeviceMapHost));
  Bufs b;
  CK(cudaHostAlloc(&b.host, kTotal, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&b.mapped), b.host, 0));
  CK(cudaMalloc(&b.dev, kTotal));
  CK(cudaMalloc(&b.out, kTotal * sizeof(__half)));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  struct Way {
    std::string name;
    cudaGraph_t g;
  };
  std::vector<Way> ways;
  auto make = [&](const std::string& name, auto build) {
    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    build(g);
    ways.push_back({name, g});
  };
  make("copy2", [&](cudaGraph_t g) {
    cudaGraphNode_t c0, c1, k;
    add_copy(g, &c0, {}, b.dev, b.host, kInput);
    add_copy(g, &c1, {c0}, b.dev + kInput, b.host + kInput, kInput);  // as a stream capture orders them
    add_pack<8, 1>(g, &k, {c1}, b.dev, b.out, kTotal);
  });
  make("copy2par", [&](cudaGraph_t g) {
    cudaGraphNode_t c0, c1, k;
    add_copy(g, &c0, {}, b.dev, b.host, kInput);
    add_copy(g, &c1, {}, b.dev + kInput, b.host + kInput, kInput);
    add_pack<8, 1>(g, &k, {c0, c1}, b.dev, b.out, kTotal);
  });
  make("copy1", [&](cudaGraph_t g) {
    cudaGraphNode_t c0, k;
    add_copy(g, &c0, {}, b.dev, b.host, kTotal);
    add_pack<8, 1>(g, &k, {c0}, b.dev, b.out, kTotal);
  });
  make("copy4par", [&](cudaGraph_t g) {
    std::vector<cudaGraphNode_t> c(4);
    for (int i = 0; i < 4; ++i)
      add_copy(g, &c[i], {}, b.dev + i * kTotal / 4, b.host + i * kTotal / 4, kTotal / 4);
    cudaGraphNode_t k;
    add_pack<8, 1>(g, &k, c, b.dev, b.out, kTotal);
  });
  // One kernel over the mapped frames, `per_block` bytes a block of 256 threads.
  auto mapped_kernel = [&](const std::string& name, auto kern, size_t per_block) {
    make(name, [&](cudaGraph_t g) {
      cudaGraphNode_t k;
      add_kernel(g, &k, {}, kern, unsigned((kTotal + per_block - 1) / per_block), b.mapped, b.out, kTotal);
    });
  };
  mapped_kernel("map8x1", pack<8, 1>, 256 * 8);
  mapped_kernel("map16x1", pack<16, 1>, 256 * 16);
  mapped_kernel("map16x2", pack<16, 2>, 256 * 32);
  mapped_kernel("map16x4", pack<16, 4>, 256 * 64);
  mapped_kernel("mapI2", pack_i<2>, 256 * 16 * 2);
  mapped_kernel("mapI4", pack_i<4>, 256 * 16 * 4);
  mapped_kernel("mapI8", pack_i<8>, 256 * 16 * 8);
  mapped_kernel("tma2k", pack_tma<2048>, 2048);
  mapped_kernel("tma4k", pack_tma<4096>, 4096);
  mapped_kernel("tma8k", pack_tma<8192>, 8192);
  mapped_kernel("tma16k", pack_tma<16384>, 16384);
  mapped_kernel("tma32k", pack_tma<32768>, 32768);
  make("devtma4k", [&](cudaGraph_t g) {  // the same from device memory (after one copy), for scale
    cudaGraphNode_t c, k;
    add_copy(g, &c, {}, b.dev, b.host, kTotal);
    add_kernel(g, &k, {c}, pack_tma<4096>, unsigned((kTotal + 4095) / 4096), b.dev, b.out, kTotal);
  });
  make("split", [&](cudaGraph_t g) {
    cudaGraphNode_t c1, k0, k1;
    add_copy(g, &c1, {}, b.dev + kInput, b.host + kInput, kInput);
    add_pack<8, 1>(g, &k0, {}, b.mapped, b.out, kInput);
    add_pack<8, 1>(g, &k1, {c1, k0}, b.dev + kInput, b.out + kInput, kInput);
  });
  // A third of the frames copied, two thirds read mapped (the DMA's share smaller).
  make("split3", [&](cudaGraph_t g) {
    const size_t cut = (kTotal * 2 / 3) / 4096 * 4096;
    cudaGraphNode_t c1, k0, k1;
    add_copy(g, &c1, {}, b.dev + cut, b.host + cut, kTotal - cut);
    add_pack<8, 1>(g, &k0, {}, b.mapped, b.out, cut);
    add_pack<8, 1>(g, &k1, {c1, k0}, b.dev + cut, b.out + cut, kTotal - cut);
  });
  make("split2x", [&](cudaGraph_t g) {  // half copied in two parallel nodes
    const size_t q = kInput / 2;
    cudaGraphNode_t c1, c2, k0, k1;
    add_copy(g, &c1, {}, b.dev + kInput, b.host + kInput, q);
    add_copy(g, &c2, {}, b.dev + kInput + q, b.host + kInput + q, q);
    add_pack<8, 1>(g, &k0, {}, b.mapped, b.out, kInput);
    add_pack<8, 1>(g, &k1, {c1, c2, k0}, b.dev + kInput, b.out + kInput, kInput);
  });

  std::printf("%-10s %10s  (median of %d replays, each with a host sync; us)\n", "way", "us",
              replays);
  std::vector<std::vector<double>> rounds(ways.size());
  std::vector<cudaGraphExec_t> execs(ways.size());
  for (size_t w = 0; w < ways.size(); ++w)
    CK(cudaGraphInstantiate(&execs[w], ways[w].g, nullptr, nullptr, 0));
  for (int round = 0; round < 3; ++round)
    for (size_t w = 0; w < ways.size(); ++w)
      rounds[w].push_back(time_graph(execs[w], s, b, replays, ways[w].name.c_str()));
  for (size_t w = 0; w < ways.size(); ++w)
    std::printf("%-10s %10.2f  rounds %.2f %.2f %.2f\n", ways[w].name.c_str(), median(rounds[w]),
                rounds[w][0], rounds[w][1], rounds[w][2]);

  // An empty graph's replay (one kernel that does nothing) for the fixed cost.
  {
    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t k;
    add_pack<8, 1>(g, &k, {}, b.dev, b.out, 0);
    cudaGraphExec_t e;
    CK(cudaGraphInstantiate(&e, g, nullptr, nullptr, 0));
    std::vector<double> t;
    for (int r = -20; r < replays; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      CK(cudaGraphLaunch(e, s));
      CK(cudaStreamSynchronize(s));
      const auto t1 = std::chrono::steady_clock::now();
      if (r >= 0) t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::printf("%-10s %10.2f  (one empty kernel)\n", "empty", median(t));
  }

  // The link's bandwidth: 25 MB by memcpy and by a mapped read (events, median of 10).
  {
    const size_t n = 32 * kTotal;
    unsigned char *h, *hm, *d;
    unsigned* sink;
    CK(cudaHostAlloc(&h, n, cudaHostAllocMapped));
    std::memset(h, 1, n);
    CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&hm), h, 0));
    CK(cudaMalloc(&d, n));
    CK(cudaMalloc(&sink, 4));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto bw = [&](const char* name, size_t bytes, auto op) {
      std::vector<double> t;
      for (int r = 0; r < 12; ++r) {
        CK(cudaEventRecord(e0, s));
        op(bytes);
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 2) t.push_back(ms * 1e3);
      }
      const double us = median(t);
      std::printf("%-22s %9zu bytes %9.2f us %7.2f GB/s\n", name, bytes, us, bytes / us * 1e-3);
    };
    for (size_t bytes : {kInput, kTotal, n}) {
      bw("memcpy H2D", bytes, [&](size_t k) { CK(cudaMemcpyAsync(d, h, k, cudaMemcpyHostToDevice, s)); });
      bw("mapped read 16Bx1", bytes, [&](size_t k) {
        read_all<1><<<unsigned(std::min<size_t>(k / 16 / 256 + 1, 132 * 8)), 256, 0, s>>>(
            reinterpret_cast<const uint4*>(hm), k / 16, sink);
      });
      bw("mapped read 16Bx4", bytes, [&](size_t k) {
        read_all<4><<<unsigned(std::min<size_t>(k / 64 / 256 + 1, 132 * 8)), 256, 0, s>>>(
            reinterpret_cast<const uint4*>(hm), k / 16, sink);
      });
      bw("device read 16Bx4", bytes, [&](size_t k) {
        read_all<4><<<unsigned(std::min<size_t>(k / 64 / 256 + 1, 132 * 8)), 256, 0, s>>>(
            reinterpret_cast<const uint4*>(d), k / 16, sink);
      });
    }
    CK(cudaGetLastError());
  }
  std::printf("cuda_upload: ok\n");
  return 0;
}
