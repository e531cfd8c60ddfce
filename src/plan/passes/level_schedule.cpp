/* Plan pass "level-schedule": orders calls by (dependency level, kernel) so that independent
 * calls of the same program become neighbours (for the batch pass and for instruction-cache and
 * program-switch locality), without breaking any dependency.
 *   1. Call j depends on an earlier call i when i writes storage that j reads or writes, or i
 *      reads storage that j writes (read-after-write, write-after-write, write-after-read).
 *      Storage is the buffer id; after memory planning, Intermediate buffers whose arena ranges
 *      [offset, offset + bytes) overlap are the same storage too.
 *   2. level(j) = 1 + max level of the calls it depends on (0 when none).
 *   3. Stable sort by (level, program rank, original index), where the program rank is the
 *      position of the first call of the same level whose kernel has the same program (source +
 *      entry + options, or name + op + attrs + post-ops for source-less kernels). Programs keep
 *      the order of their first call within a level, so the pass is idempotent.
 * Invariant: every dependency i -> j has level(i) < level(j), so i stays before j; the values
 * every call computes are unchanged, and arena sharing stays valid (overlapping storage is a
 * dependency).
 */
#include <algorithm>
#include <map>

#include "plan/passes/passes.h"

namespace opv::plan {
namespace {

struct Access {
  int buffer;
  int64_t begin, end;  // arena range of a planned Intermediate, else begin = end = -1
};

struct Schedule {
  const Plan& p;
  std::vector<std::vector<Access>> reads, writes;
  bool planned = false;

  explicit Schedule(const Plan& plan) : p(plan) {
    for (const Buffer& b : p.buffers) planned |= b.kind == BufferKind::Intermediate && b.offset >= 0;
    for (const Call& c : p.calls) {
      reads.push_back(accesses(c.inputs));
      writes.push_back(accesses(c.outputs));
    }
  }

  std::vector<Access> accesses(const std::vector<int>& ids) const {
    std::vector<Access> r;
    for (int b : ids) {
      if (b < 0) continue;
      const Buffer& buf = p.buffers[size_t(b)];
      if (planned && buf.kind == BufferKind::Intermediate && buf.offset >= 0)
        r.push_back({b, buf.offset, buf.offset + std::max<int64_t>(buf.bytes, 1)});
      else
        r.push_back({b, -1, -1});
    }
    return r;
  }

  static bool same_storage(const Access& a, const Access& b) {
    if (a.buffer == b.buffer) return true;
    return a.begin >= 0 && b.begin >= 0 && a.begin < b.end && b.begin < a.end;
  }
  static bool any_overlap(const std::vector<Access>& x, const std::vector<Access>& y) {
    for (const Access& a : x)
      for (const Access& b : y)
        if (same_storage(a, b)) return true;
    return false;
  }
  bool depends(int i, int j) const {  // i < j
    return any_overlap(writes[size_t(i)], reads[size_t(j)]) || any_overlap(writes[size_t(i)], writes[size_t(j)]) ||
           any_overlap(reads[size_t(i)], writes[size_t(j)]);
  }

  std::vector<int> levels() const {
    const int n = int(p.calls.size());
    std::vector<int> level(static_cast<size_t>(n), 0);
    if (!planned) {
      // Buffer ids are the only storage: track, per buffer, the highest level of a writer and
      // of a reader so far (linear time).
      std::vector<int> writer(p.buffers.size(), -1), reader(p.buffers.size(), -1);
      for (int j = 0; j < n; ++j) {
        int lv = 0;
        for (const Access& a : reads[size_t(j)]) lv = std::max(lv, writer[size_t(a.buffer)] + 1);
        for (const Access& a : writes[size_t(j)])
          lv = std::max({lv, writer[size_t(a.buffer)] + 1, reader[size_t(a.buffer)] + 1});
        level[size_t(j)] = lv;
        for (const Access& a : reads[size_t(j)]) reader[size_t(a.buffer)] = std::max(reader[size_t(a.buffer)], lv);
        for (const Access& a : writes[size_t(j)]) writer[size_t(a.buffer)] = std::max(writer[size_t(a.buffer)], lv);
      }
      return level;
    }
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < j; ++i)
        if (level[size_t(i)] + 1 > level[size_t(j)] && depends(i, j)) level[size_t(j)] = level[size_t(i)] + 1;
    return level;
  }
};

std::string program_of(const Kernel& k) {
  if (!k.source.empty()) return "cl:" + k.entry + "\n" + k.options + "\n" + k.source;
  return "op:" + k.name + "\n" + std::string(op_name(k.op)) + "\n" + k.attrs.str() + "\n" + post_ops_str(k.post_ops);
}

}  // namespace

bool level_schedule(Plan& p, const PassCtx& /*ctx*/) {
  const int n = int(p.calls.size());
  if (n < 2) return false;
  std::vector<int> level = Schedule(p).levels();
  std::map<std::pair<int, std::string>, int> first_use;  // (level, program) -> first call index
  std::vector<int> rank(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j)
    rank[size_t(j)] =
        first_use.emplace(std::make_pair(level[size_t(j)], program_of(p.kernels[size_t(p.calls[size_t(j)].kernel)])), j)
            .first->second;
  std::vector<int> order(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) order[size_t(j)] = j;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (level[size_t(a)] != level[size_t(b)]) return level[size_t(a)] < level[size_t(b)];
    return rank[size_t(a)] < rank[size_t(b)];
  });
  bool changed = false;
  std::vector<Call> calls;
  calls.reserve(size_t(n));
  for (int j = 0; j < n; ++j) {
    changed |= order[size_t(j)] != j;
    calls.push_back(std::move(p.calls[size_t(order[size_t(j)])]));
  }
  p.calls = std::move(calls);
  return changed;
}

}  // namespace opv::plan
