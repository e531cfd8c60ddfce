/* Plan pass "dedupe": removes calls that recompute what an earlier call already computed.
 *   1. Kernels are grouped by content (name, op, attrs, post-ops, source, entry, options), so two
 *      kernel ids with equal content count as one kernel.
 *   2. Constant buffers are grouped by content: dtype, shape, layout, byte size and a 64-bit hash
 *      of their bytes pick candidates; a byte compare confirms, so equal hashes of different
 *      bytes never merge. Every buffer gets a canonical id (its group's first buffer).
 *   3. In call order, a call's key is (kernel group, canonical ids of its inputs with earlier
 *      replacements applied, launch geometry, output dtypes/shapes/layouts). The first call with a
 *      key is kept; a later call with the same key is removed unless one of its outputs is a plan
 *      Output, and each of its outputs is replaced by the kept call's output in every later
 *      reader. Since readers come after writers, a whole duplicated chain collapses in one sweep;
 *      the sweep repeats until nothing changes (a fixed point).
 * Invariant: every remaining call reads buffers holding the same values as before, plan Outputs
 * are still written exactly once. Removed calls' outputs become unused buffers (compact() drops
 * them). When the plan had arena offsets, they are cleared (rewiring extends live ranges), so
 * memory planning must run again (the driver always runs it last).
 */
#include <cstring>
#include <map>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "plan/passes/passes.h"

namespace opv::plan {
namespace {

uint64_t hash_bytes(const uint8_t* p, size_t n) {
  constexpr uint64_t kFnvOffset = 1469598103934665603ull, kFnvPrime = 1099511628211ull;
  uint64_t h = kFnvOffset;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}

using KernelKey = std::tuple<std::string, int, std::string, std::string, std::string, std::string, std::string>;
KernelKey kernel_key(const Kernel& k) {
  return {k.name, int(k.op), k.attrs.str(), post_ops_str(k.post_ops), k.source, k.entry, k.options};
}

struct Dedupe {
  Plan& p;
  std::vector<int> kernel_group;  // kernel id -> first kernel id with equal content
  std::vector<int> canon;         // buffer id -> canonical buffer id (constants by content)

  explicit Dedupe(Plan& plan) : p(plan) {}

  void group_kernels() {
    std::map<KernelKey, int> seen;
    kernel_group.resize(p.kernels.size());
    for (size_t k = 0; k < p.kernels.size(); ++k) {
      KernelKey key = kernel_key(p.kernels[k]);
      // attrs.str() may print two different doubles alike: confirm with the exact comparison.
      auto it = seen.find(key);
      const Kernel& a = p.kernels[k];
      if (it != seen.end()) {
        const Kernel& b = p.kernels[size_t(it->second)];
        if (a.attrs == b.attrs && a.post_ops == b.post_ops) {
          kernel_group[k] = it->second;
          continue;
        }
      } else {
        seen.emplace(key, int(k));
      }
      kernel_group[k] = int(k);
    }
  }

  void group_constants() {
    using ConstKey = std::tuple<int, std::vector<int64_t>, int, int64_t, uint64_t>;
    std::map<ConstKey, std::vector<int>> groups;  // candidates with this key (distinct contents)
    canon.resize(p.buffers.size());
    for (size_t i = 0; i < p.buffers.size(); ++i) {
      canon[i] = int(i);
      const Buffer& b = p.buffers[i];
      if (b.kind != BufferKind::Constant) continue;
      const uint8_t* data = p.constant_data(int(i));
      ConstKey key{int(b.dtype), b.shape, int(b.layout), b.bytes, hash_bytes(data, size_t(b.bytes))};
      std::vector<int>& cands = groups[key];
      for (int c : cands)
        if (std::memcmp(p.constant_data(c), data, size_t(b.bytes)) == 0) {
          canon[i] = c;
          break;
        }
      if (canon[i] == int(i)) cands.push_back(int(i));
    }
  }

  // One sweep in call order; returns true when it removed a call.
  bool sweep() {
    using CallKey = std::tuple<int, std::vector<int>, std::array<int64_t, 3>, std::array<int64_t, 3>, std::string>;
    std::map<CallKey, int> first;             // key -> index into `kept`
    std::unordered_map<int, int> replace;     // removed output buffer -> kept output buffer
    std::vector<Call> kept;
    bool removed = false;
    for (Call c : p.calls) {
      for (int& b : c.inputs)
        if (b >= 0) {
          auto r = replace.find(b);
          if (r != replace.end()) b = r->second;
        }
      std::vector<int> ins;
      for (int b : c.inputs) ins.push_back(b < 0 ? -1 : canon[size_t(b)]);
      std::string outs;  // output types: a duplicate must produce interchangeable buffers
      bool writes_output = false;
      for (int b : c.outputs) {
        const Buffer& o = p.buffers[size_t(b)];
        outs += std::to_string(int(o.dtype)) + shape_str(o.shape) + layout_name(o.layout) + ":" +
                std::to_string(o.bytes) + ";";
        writes_output |= o.kind == BufferKind::Output;
      }
      CallKey key{kernel_group[size_t(c.kernel)], ins, c.global, c.local, outs};
      auto it = first.find(key);
      if (it == first.end()) {
        first.emplace(std::move(key), int(kept.size()));
        kept.push_back(std::move(c));
        continue;
      }
      if (writes_output) {  // kept: the caller's output must still be written
        kept.push_back(std::move(c));
        continue;
      }
      const Call& orig = kept[size_t(it->second)];
      for (size_t j = 0; j < c.outputs.size(); ++j) replace[c.outputs[j]] = orig.outputs[j];
      removed = true;
    }
    p.calls = std::move(kept);
    return removed;
  }
};

}  // namespace

bool dedupe(Plan& p, const PassCtx& /*ctx*/) {
  Dedupe d(p);
  d.group_kernels();
  d.group_constants();
  bool changed = false;
  while (d.sweep()) changed = true;
  if (changed) {
    bool planned = false;
    for (const Buffer& b : p.buffers) planned |= b.kind == BufferKind::Intermediate && b.offset >= 0;
    if (planned) {
      for (Buffer& b : p.buffers)
        if (b.kind == BufferKind::Intermediate) b.offset = -1;
      p.arena_bytes = 0;
    }
  }
  return changed;
}

}  // namespace opv::plan
