// The CUDA backend: runs plans lowered for target "cuda" (see src/target/cuda/cuda_abi.h, the
// contract with the code generator) on an NVIDIA GPU through the CUDA driver API, loaded at run
// time (cuda_driver.h): no CUDA library is linked, and a machine without a driver fails at
// creation with "cuda backend: no CUDA driver (libcuda.so.1: ...)" or "... no CUDA device".
// Buffers are Linear only; every call runs a PTX kernel (Kernel.options "ptx"). Tolerance is the
// fp16-storage bound, as for opencl.
// load(): the device's primary context and one stream, device memory for the arena, the weights
// and each input/output, pinned staging for inputs/outputs, one module per kernel, per-call
// argument arrays and grid/block, and the whole inference built once as a CUDA graph whose edges
// are the calls' memory dependencies (Options.cuda_graph; graph_deps.h), so independent calls run
// as parallel branches.
// run(): inputs into staging (and, kept on the device under CudaIo::Device, uploaded before the
// graph), replay the graph (Options.cuda_inflight times, the uploads of the next replay
// overlapping the kernels of the current one unless Options.cuda_overlap_uploads is off; or, while
// profiling, enqueue each call between two events), one stream synchronize, outputs out of
// staging. run_device_inputs(): the same without the inputs' copies (input_device(): where the
// caller may write them on the GPU).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace opv::backend {

// Throws opv::Error when there is no CUDA driver or device, or Options.device names none.
std::unique_ptr<Backend> make_cuda_backend(const Options& opts);

// What a loaded CUDA backend chose and did, for tests and `--verbose` tools. Null for other
// backends and before load().
struct CudaLoadInfo {
  std::string device;       // "NVIDIA H200 (sm_90)"
  int driver_version = 0;   // cuDriverGetVersion
  int modules = 0;          // cuModuleLoadDataEx calls (one per kernel that a call uses)
  int sass_modules = 0;     // ... of them loaded from a stored cubin (cuda_abi.h "SASS"), the rest from PTX
  int sass_sm = 0;          // the cubins' SM (90 for sm_90; the highest where kernels differ), 0 = none
  std::string sass_refused; // the driver's answer to the first stored cubin it refused ("" = none)
  double load_ms = 0;       // wall time of the modules' loads (JIT compiles included), ms
  int launches = 0;         // kernel launches per inference
  bool graph = false;       // the inference was recorded as a CUDA graph
  bool branches = false;    // ... with memory-dependency edges (CudaGraph::Branches), not a chain
  int graph_nodes = 0;      // copies and launches in the graph
  int graph_edges = 0;      // dependencies between them (after transitive reduction)
  int graph_depth = 0;      // nodes on its longest path (= graph_nodes for a chain)
  int graph_width = 0;      // most nodes at one dependency level
  int pdl_edges = 0;        // of graph_edges, programmatic ones (kernel attr "cuda_pdl", cuda_abi.h)
  int64_t graph_runs = 0;   // graph replays (cuda_inflight per run)
  // Options.cuda_inflight > 1 with cuda_overlap_uploads: two more graphs without the input copies,
  // one per device copy of the inputs, replayed alternately after uploads on a second stream.
  bool overlapped_uploads = false;
  int64_t overlapped_replays = 0;  // replays that ran that way (counted in graph_runs too)
  int64_t direct_runs = 0;  // runs that enqueued each call (profiling)
  int mapped_inputs = 0;   // inputs the kernels read in their mapped pinned staging (Options.cuda_inputs)
  int mapped_outputs = 0;  // outputs the kernels write in their mapped pinned staging (Options.cuda_outputs)
  int device_inputs = 0;   // inputs kept in device memory, no copy node (Options.cuda_inputs Device)
};
const CudaLoadInfo* cuda_load_info(const Backend& b);

// The loaded inference's graph cut after each call and replayed (`opvision bench
// --replay-prefixes`): element k-1 is the median wall time in us, over `replays` replays each
// with the host wait, of the graph of the first k calls; the difference between neighbours is what
// a call adds to the replay's critical path. Throws opv::Error for other backends or before load().
std::vector<double> cuda_prefix_times_us(Backend& b, int replays);

// One block of one call as the probe saw it (compile --cuda-tune probe=1: every kernel's thread 0
// reads %globaltimer where the kernel opens, after its entry, the programmatic-dependent-launch
// wait, and where it leaves; cuda_abi.h "Probe"). Times in us since the first block of the replay
// opened.
struct CudaProbeBlock {
  int call = -1;     // plan call (-1: more records of a kernel than its calls' grids hold)
  int kernel = -1;   // plan kernel
  uint32_t block = 0;  // linear block index in the grid
  uint32_t sm = 0;     // %smid (low 8 bits)
  double open_us = 0, entry_us = 0, end_us = 0;
  uint32_t entry_cycles = 0, end_cycles = 0;  // the SM's clock64 from the open to the entry, to the end
};
// One replay of the loaded inference (the inputs as the last run left them) and every block's
// record, by call then block. Throws opv::Error for other backends, before load(), or when the
// plan was compiled without the probe.
std::vector<CudaProbeBlock> cuda_probe_replay(Backend& b);

}  // namespace opv::backend
