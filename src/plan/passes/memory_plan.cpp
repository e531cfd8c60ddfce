// Memory planning: Intermediate buffers share one arena.
//  1. Live range of each Intermediate buffer: [call that writes it, last call that reads it].
//  2. Buffers are placed largest first; each goes to the lowest 64-byte-aligned offset that
//     does not overlap any already placed buffer whose live range intersects its own.
//  3. arena_bytes = the highest end offset.
// Invariant: two buffers share bytes only when their live ranges are disjoint, so a call never
// reads data that a call between its producer and itself overwrote.
#include <algorithm>

#include "plan/liveness.h"
#include "plan/passes/passes.h"

namespace opv::plan {

int64_t unplanned_bytes(const Plan& p) {
  int64_t total = 0;
  for (const Buffer& b : p.buffers)
    if (b.kind == BufferKind::Intermediate) total += align_up(b.bytes);
  return total;
}

bool plan_memory(Plan& p) {
  std::vector<LiveRange> live = live_ranges(p);
  std::vector<int> order;
  for (int i = 0; i < int(p.buffers.size()); ++i)
    if (p.buffers[i].kind == BufferKind::Intermediate) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return p.buffers[a].bytes > p.buffers[b].bytes; });
  struct Placed {
    int64_t begin, end;
    LiveRange live;
  };
  std::vector<Placed> placed;
  int64_t arena = 0;
  for (int b : order) {
    LiveRange lr = live[b];
    if (lr.first < 0) lr = {0, int(p.calls.size())};  // never written: keep it apart from everything
    int64_t size = align_up(std::max<int64_t>(p.buffers[b].bytes, 1));
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Placed& q : placed)
      if (!(q.live.last < lr.first || lr.last < q.live.first)) busy.push_back({q.begin, q.end});
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (const auto& [s, e] : busy) {
      if (off + size <= s) break;
      off = std::max(off, e);
    }
    p.buffers[b].offset = off;
    placed.push_back({off, off + size, lr});
    arena = std::max(arena, off + size);
  }
  p.arena_bytes = arena;
  return !order.empty();
}

}  // namespace opv::plan
