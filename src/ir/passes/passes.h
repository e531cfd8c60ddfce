// Graph passes. Each is `bool pass(Graph&)` returning whether it changed anything; each lives
// in its own file opening with a comment that lists its steps and the invariant it keeps.
// run_graph_passes() drives them to a fixed point and validates the graph after each change.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace opv::ir {

bool fold_constants(Graph& g);    // evaluate nodes whose inputs are all constant (reference kernels)
bool drop_identity(Graph& g);     // Identity, Dropout leftovers, Cast to the same dtype, Reshape to same shape
bool fold_batchnorm(Graph& g);    // BatchNorm after Conv/Gemm -> scaled weights + bias; lone BN -> Mul+Add
bool fold_scales(Graph& g);       // Mul/Div by a per-output-channel constant after Conv/Gemm -> weights
bool fuse_gelu(Graph& g);         // erf and tanh GELU subgraphs -> Gelu / GeluTanh
bool fuse_epilogues(Graph& g);    // bias add, activation, layer-scale mul, residual add -> post-ops

// compile --batch N (set_batch.cpp): rewrites a batch-1 graph (every runtime input [1, ...]) to
// compute N independent samples: inputs [N, ...], the batch carried through every node whose op
// provably works per sample, batch-1 shapes the importer folded (Reshape/Expand targets [1, ...])
// rewritten. Runs once on the imported graph, before run_graph_passes. Returns false when every
// input already has leading dimension N. Throws opv::Error naming the node (and leaves the graph
// unchanged) where the model cannot be batched soundly.
bool set_batch(Graph& g, int64_t n);

struct GraphPassInfo {
  const char* name;
  bool (*fn)(Graph&);
  const char* doc;
};
// The passes in the order the driver runs them.
const std::vector<GraphPassInfo>& graph_passes();

struct PassLog {
  std::string pass;
  int nodes_before = 0;
  int nodes_after = 0;
};
// Runs every pass not listed in `disabled` (names from graph_passes()) repeatedly until none
// changes the graph; validates after each change. Unknown names in `disabled` are an error.
std::vector<PassLog> run_graph_passes(Graph& g, const std::vector<std::string>& disabled = {});

}  // namespace opv::ir
