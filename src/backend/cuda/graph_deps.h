// The dependency graph of one inference of a cuda plan, as the CUDA graph the backend builds from
// it (cuda_backend.cpp record()): pure plan arithmetic, no driver, so it is tested without a GPU.
// 1. Nodes, in plan order (a topological order): one host->device copy per plan input with bytes,
//    one launch per call, one device->host copy per plan output with bytes.
// 2. What each node touches, as byte ranges of memory spaces (memory_of): an Intermediate is
//    [offset, offset + storage) of the one arena, so buffers the memory planner placed on the same
//    bytes conflict whatever their ids; each Input and Output buffer is its own allocation;
//    Constants are never written and take no part. A call also reads and writes the pseudo-space
//    of its kernel: calls that share a kernel share its module's __device__ workspace (split-K
//    partials and counters, cuda_abi.h "Order"), so they stay ordered. The host->device copies
//    all write one pseudo-space and so do the device->host copies: each direction's copies stay in
//    order, one after another over the one link, as a stream would run them; copies in parallel
//    gain nothing there, and their fork and join cost about a microsecond per inference on an
//    H200 (2026-12-03: a plan whose only branches were its two input copies, 0.2129 ms against
//    0.2117 ms as a chain, 4 of 5 rounds).
// 3. Edges (CudaGraph::Branches): j -> i for j before i whenever one writes bytes the other reads
//    or writes (RAW, WAR, WAW), then transitively reduced (an edge implied by a longer path is
//    dropped; the reachability is a bit set per node, cheap for plans of a few hundred calls).
//    CudaGraph::Chain: every node on the one before it, plan order (one stream's order).
// Invariant: every pair of nodes whose accesses conflict is ordered by a path, in either shape;
// nodes with no path between them touch disjoint bytes and may run concurrently.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "plan/plan.h"

namespace opv::backend::cuda {

// Dense bytes of a buffer's logical tensor (what crosses to and from the caller).
int64_t dense_bytes(const plan::Buffer& b);
// Bytes a buffer occupies on the device: its declared storage, at least the dense size.
int64_t storage_of(const plan::Buffer& b);

enum class NodeKind { InputCopy, Call, OutputCopy };

struct GraphNode {
  NodeKind kind = NodeKind::Call;
  int index = 0;          // InputCopy: position in plan.inputs; Call: call index; OutputCopy: in plan.outputs
  std::vector<int> deps;  // nodes this one waits for, ascending node indices, all before it
};

// A byte range [begin, end) of one memory space (see the file comment, step 2).
struct ByteRange {
  int64_t space = 0;
  int64_t begin = 0, end = 0;
};
// Memory spaces: the arena; the two copy directions; each Input/Output buffer; each kernel's
// module workspace.
constexpr int64_t kArenaSpace = 0;
constexpr int64_t kHostToDeviceSpace = 1;
constexpr int64_t kDeviceToHostSpace = 2;
constexpr int64_t kFirstBufferSpace = 3;
inline int64_t buffer_space(int buffer) { return kFirstBufferSpace + buffer; }
inline int64_t kernel_space(const plan::Plan& p, int kernel) {
  return kFirstBufferSpace + int64_t(p.buffers.size()) + kernel;
}
// The bytes `buffer` occupies; space -1 for a Constant (read-only: it orders nothing).
ByteRange memory_of(const plan::Plan& p, int buffer);

// The nodes of one inference with their dependencies (see the file comment). Buffer and kernel
// ids must be in range (backend::check_plan_ids).
std::vector<GraphNode> graph_nodes(const plan::Plan& p, CudaGraph shape);
// The same nodes without the copies of the inputs i with drop_input[i] and the outputs o with
// drop_output[o] (plan.inputs / plan.outputs order), indices renumbered, a node that waited for a
// dropped one waiting for what that one waited for: the graph of an inference whose kernels read
// those inputs, or write those outputs, in mapped host memory (Options.cuda_inputs, cuda_outputs).
std::vector<GraphNode> without_copies(const std::vector<GraphNode>& nodes, const std::vector<bool>& drop_input,
                                      const std::vector<bool>& drop_output);

// Whether plan buffer `buffer` (an Input or Output) is mapped under `io` (CudaIo::Auto: where the
// plan reads it once: an input that exactly one call reads, as an operand of an element-wise
// (unary or binary) or Concat kernel that reads each of its elements once, i.e. not a post-op
// operand and, for a binary op, not broadcast; an output that no call reads).
bool mapped_io(const plan::Plan& p, int buffer, CudaIo io);

// Shape figures of a node list, for load info and the benchmark notes.
struct GraphStats {
  int nodes = 0;
  int edges = 0;
  int depth = 0;  // nodes on the longest path (= nodes for a chain)
  int width = 0;  // most nodes at one depth level
};
GraphStats graph_stats(const std::vector<GraphNode>& nodes);

}  // namespace opv::backend::cuda
