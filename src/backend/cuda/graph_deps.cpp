// Dependencies of one inference's nodes (see graph_deps.h for the steps and the invariant).
#include "backend/cuda/graph_deps.h"

#include <algorithm>

namespace opv::backend::cuda {

int64_t dense_bytes(const plan::Buffer& b) { return numel(b.shape) * int64_t(dtype_size(b.dtype)); }
int64_t storage_of(const plan::Buffer& b) { return std::max(b.bytes, dense_bytes(b)); }

ByteRange memory_of(const plan::Plan& p, int buffer) {
  const plan::Buffer& b = p.buffers[size_t(buffer)];
  switch (b.kind) {
    case plan::BufferKind::Intermediate: return {kArenaSpace, b.offset, b.offset + storage_of(b)};
    case plan::BufferKind::Constant: return {-1, 0, 0};
    case plan::BufferKind::Input:
    case plan::BufferKind::Output: break;
  }
  return {buffer_space(buffer), 0, std::max<int64_t>(storage_of(b), 1)};
}

namespace {

struct Access {
  std::vector<ByteRange> reads, writes;
};

bool overlap(const ByteRange& a, const ByteRange& b) {
  return a.space == b.space && a.begin < b.end && b.begin < a.end;
}
bool any_overlap(const std::vector<ByteRange>& a, const std::vector<ByteRange>& b) {
  for (const ByteRange& x : a)
    for (const ByteRange& y : b)
      if (overlap(x, y)) return true;
  return false;
}
// RAW, WAR or WAW between an earlier node `a` and a later node `b`.
bool conflict(const Access& a, const Access& b) {
  return any_overlap(a.writes, b.reads) || any_overlap(a.reads, b.writes) || any_overlap(a.writes, b.writes);
}

// Ancestor sets as bit rows, one per node.
struct BitRows {
  size_t words;
  std::vector<uint64_t> bits;
  explicit BitRows(size_t n) : words((n + 63) / 64), bits(n * words, 0) {}
  uint64_t* row(size_t i) { return bits.data() + i * words; }
  bool test(size_t i, size_t j) const { return (bits[i * words + j / 64] >> (j % 64)) & 1u; }
};

// Keeps, of each node's dependencies, those no other kept dependency already reaches; fills the
// ancestor rows. Dependencies are visited latest first: a later one may reach an earlier one,
// never the reverse (every edge goes forward).
void reduce(std::vector<GraphNode>& nodes) {
  BitRows anc(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<int> deps = nodes[i].deps, kept;
    std::sort(deps.rbegin(), deps.rend());
    uint64_t* mine = anc.row(i);
    for (int d : deps) {
      if (anc.test(i, size_t(d))) continue;  // reached through a kept later dependency
      kept.push_back(d);
      const uint64_t* theirs = anc.row(size_t(d));
      for (size_t w = 0; w < anc.words; ++w) mine[w] |= theirs[w];
      mine[size_t(d) / 64] |= uint64_t(1) << (size_t(d) % 64);
    }
    std::sort(kept.begin(), kept.end());
    nodes[i].deps = std::move(kept);
  }
}

}  // namespace

std::vector<GraphNode> graph_nodes(const plan::Plan& p, CudaGraph shape) {
  std::vector<GraphNode> nodes;
  std::vector<Access> access;
  auto add = [&](NodeKind kind, int index, Access a) {
    nodes.push_back({kind, index, {}});
    access.push_back(std::move(a));
  };
  auto range = [&](int buffer, std::vector<ByteRange>& into) {
    if (buffer < 0) return;  // an absent optional input
    const ByteRange r = memory_of(p, buffer);
    if (r.space >= 0) into.push_back(r);
  };
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    if (dense_bytes(p.buffers[size_t(p.inputs[i])]) == 0) continue;
    Access a;
    range(p.inputs[i], a.writes);
    a.writes.push_back({kHostToDeviceSpace, 0, 1});  // copies of one direction stay in order
    add(NodeKind::InputCopy, int(i), std::move(a));
  }
  for (size_t ci = 0; ci < p.calls.size(); ++ci) {
    const plan::Call& c = p.calls[ci];
    Access a;
    for (int b : c.inputs) range(b, a.reads);
    for (int b : c.outputs) range(b, a.writes);
    a.writes.push_back({kernel_space(p, c.kernel), 0, 1});  // the module's workspace
    add(NodeKind::Call, int(ci), std::move(a));
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    if (dense_bytes(p.buffers[size_t(p.outputs[i])]) == 0) continue;
    Access a;
    range(p.outputs[i], a.reads);
    a.writes.push_back({kDeviceToHostSpace, 0, 1});
    add(NodeKind::OutputCopy, int(i), std::move(a));
  }
  if (shape == CudaGraph::Chain) {
    for (size_t i = 1; i < nodes.size(); ++i) nodes[i].deps = {int(i) - 1};
    return nodes;
  }
  for (size_t i = 0; i < nodes.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (conflict(access[j], access[i])) nodes[i].deps.push_back(int(j));
  reduce(nodes);
  return nodes;
}

GraphStats graph_stats(const std::vector<GraphNode>& nodes) {
  GraphStats s;
  s.nodes = int(nodes.size());
  std::vector<int> level(nodes.size(), 0), per_level;
  for (size_t i = 0; i < nodes.size(); ++i) {
    s.edges += int(nodes[i].deps.size());
    for (int d : nodes[i].deps) level[i] = std::max(level[i], level[size_t(d)] + 1);
    if (size_t(level[i]) >= per_level.size()) per_level.resize(size_t(level[i]) + 1, 0);
    ++per_level[size_t(level[i])];
    s.depth = std::max(s.depth, level[i] + 1);
  }
  for (int n : per_level) s.width = std::max(s.width, n);
  return s;
}

std::vector<GraphNode> without_copies(const std::vector<GraphNode>& nodes, const std::vector<bool>& drop_input,
                                      const std::vector<bool>& drop_output) {
  auto dropped = [&](const GraphNode& n) {
    const std::vector<bool>* d = n.kind == NodeKind::InputCopy ? &drop_input
                                 : n.kind == NodeKind::OutputCopy ? &drop_output
                                                                  : nullptr;
    return d && size_t(n.index) < d->size() && (*d)[size_t(n.index)];
  };
  std::vector<int> renumbered(nodes.size(), -1);
  std::vector<std::vector<int>> waits(nodes.size());  // per node, the kept nodes it waits for
  std::vector<GraphNode> kept;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int j : nodes[i].deps) {
      if (renumbered[size_t(j)] >= 0)
        waits[i].push_back(renumbered[size_t(j)]);
      else
        waits[i].insert(waits[i].end(), waits[size_t(j)].begin(), waits[size_t(j)].end());
    }
    std::sort(waits[i].begin(), waits[i].end());
    waits[i].erase(std::unique(waits[i].begin(), waits[i].end()), waits[i].end());
    if (dropped(nodes[i])) continue;
    GraphNode n = nodes[i];
    n.deps = waits[i];
    renumbered[i] = int(kept.size());
    kept.push_back(std::move(n));
  }
  return kept;
}

bool mapped_io(const plan::Plan& p, int buffer, CudaIo io) {
  if (io != CudaIo::Auto) return io == CudaIo::Mapped;
  const plan::Buffer& b = p.buffers[size_t(buffer)];
  int readers = 0;
  bool once = true;
  for (const plan::Call& c : p.calls) {
    for (size_t j = 0; j < c.inputs.size(); ++j) {
      if (c.inputs[j] != buffer) continue;
      ++readers;
      const plan::Kernel& k = p.kernels[size_t(c.kernel)];
      size_t operands = c.inputs.size();  // the op's own operands come before any post-op operand
      for (const PostOp& po : k.post_ops)
        if (po.input >= 0) operands = std::min(operands, size_t(po.input));
      const bool elementwise = is_unary(k.op) ||  // Cast and Identity too
                               (is_binary(k.op) && !c.outputs.empty() &&
                                numel(p.buffers[size_t(c.outputs[0])].shape) == numel(b.shape));
      once &= j < operands && (elementwise || k.op == OpKind::Concat);
    }
  }
  return b.kind == plan::BufferKind::Output ? readers == 0 : readers == 1 && once;
}

}  // namespace opv::backend::cuda
