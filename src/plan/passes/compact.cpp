/* compact(): removes what no call uses and renumbers (run by the driver after the plan passes,
 * before memory planning, and by `opvision opt`).
 *   1. A buffer is kept when a call reads or writes it, or it is a plan Input/Output; a kernel is
 *      kept when a call runs it.
 *   2. Kept buffers and kernels keep their relative order and get dense new ids; calls and the
 *      plan's input/output lists are rewritten.
 *   3. The weights blob is rebuilt from the kept constants in their old offset order, each at a
 *      kAlign-aligned offset; constants that shared bytes (same old offset and size) still do.
 * Invariant: every call computes the same values on the same (renumbered) buffers; arena offsets
 * and arena_bytes are unchanged, so a memory-planned plan stays valid (only unused buffers go).
 */
#include <algorithm>
#include <cstring>
#include <map>

#include "plan/passes/passes.h"

namespace opv::plan {

bool compact(Plan& p) {
  const size_t nb = p.buffers.size(), nk = p.kernels.size();
  std::vector<char> used_b(nb, 0), used_k(nk, 0);
  for (const Call& c : p.calls) {
    used_k[size_t(c.kernel)] = 1;
    for (int b : c.inputs)
      if (b >= 0) used_b[size_t(b)] = 1;
    for (int b : c.outputs) used_b[size_t(b)] = 1;
  }
  for (int b : p.inputs) used_b[size_t(b)] = 1;
  for (int b : p.outputs) used_b[size_t(b)] = 1;

  std::vector<int> new_b(nb, -1), new_k(nk, -1);
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  for (size_t i = 0; i < nb; ++i)
    if (used_b[i]) {
      new_b[i] = int(buffers.size());
      buffers.push_back(std::move(p.buffers[i]));
    }
  for (size_t i = 0; i < nk; ++i)
    if (used_k[i]) {
      new_k[i] = int(kernels.size());
      kernels.push_back(std::move(p.kernels[i]));
    }
  const bool removed = buffers.size() != nb || kernels.size() != nk;
  for (Call& c : p.calls) {
    c.kernel = new_k[size_t(c.kernel)];
    for (int& b : c.inputs)
      if (b >= 0) b = new_b[size_t(b)];
    for (int& b : c.outputs) b = new_b[size_t(b)];
  }
  for (int& b : p.inputs) b = new_b[size_t(b)];
  for (int& b : p.outputs) b = new_b[size_t(b)];

  // Rebuild the weights blob.
  std::vector<int> consts;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].kind == BufferKind::Constant) consts.push_back(int(i));
  std::stable_sort(consts.begin(), consts.end(),
                   [&](int a, int b) { return buffers[size_t(a)].offset < buffers[size_t(b)].offset; });
  std::vector<uint8_t> blob;
  std::map<std::pair<int64_t, int64_t>, int64_t> moved;  // (old offset, bytes) -> new offset
  for (int i : consts) {
    Buffer& b = buffers[size_t(i)];
    auto [it, fresh] = moved.emplace(std::make_pair(b.offset, b.bytes), 0);
    if (fresh) {
      it->second = align_up(int64_t(blob.size()));
      blob.resize(size_t(it->second + b.bytes), 0);
      if (b.bytes) std::memcpy(blob.data() + it->second, p.weights.data() + b.offset, size_t(b.bytes));
    }
    b.offset = it->second;
  }
  const bool blob_changed = blob != p.weights;
  p.weights = std::move(blob);
  p.buffers = std::move(buffers);
  p.kernels = std::move(kernels);
  return removed || blob_changed;
}

}  // namespace opv::plan
