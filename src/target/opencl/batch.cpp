/* Plan pass "batch": merges up to Options::batch_max (compile --cl-batch) neighbouring, independent
 * calls of the same GPU kernel and launch geometry into one launch (the seed batches its
 * same-program head kernels in fours; wide GPUs take more per launch).
 *   1. Walk the call list; a run starts at a call whose kernel has a description (cl::describe:
 *      its family derives it again from the plan, and it renders to exactly the kernel's source;
 *      not for batched kernels or host fallbacks), one parameter per present argument, and whose
 *      launch uses at most two dimensions (global[2] in {0, 1}).
 *   2. The run grows with the following calls of the same kernel id and the same global/local
 *      geometry, while the new call shares no storage with any call already in the run (no
 *      buffer read by one and written by another, or written by both; after memory planning
 *      overlapping arena ranges count as shared), up to batch_max calls.
 *   3. A run of n >= 2 calls becomes one call of kernel `<name>_x<n>` (made once per (kernel, n)):
 *      source, entry `<entry>_x<n>` and "cl_params" from cl::render_batched(description, n,
 *      n_outputs) (kernel_desc.h: the generated text is never parsed), attrs copied + "cl_batch" = n.
 *      Argument order (chosen here, documented in cl_abi.h): the backend binds a call's outputs
 *      then its inputs, so the batched call has outputs = [outputs of group 0, group 1, ...] and
 *      inputs = [inputs of group 0, group 1, ...] (absent inputs stay -1), and the batched
 *      kernel's parameters are the output parameters of groups 0..n-1, then the input
 *      parameters of groups 0..n-1. Group g runs at get_global_id(2) == g: global[2] = n,
 *      global[1] = max(global[1], 1); with a local size, local[1] = max(local[1], 1) and
 *      local[2] = 1. label = the labels joined with '+'.
 * Invariant: every group computes what its call computed (same body, same buffers); calls in one
 * launch are independent, so running them concurrently changes no value. Binary post-op input
 * indices keep pointing at group 0's inputs (the kernel's own code reads each group's operands).
 */
#include <algorithm>
#include <map>
#include <optional>

#include "target/opencl/codegen.h"
#include "target/opencl/kernel_desc.h"
#include "target/opencl/passes.h"

namespace opv::plan {
namespace {

struct Storage {
  int buffer;
  int64_t begin, end;  // arena range of a planned Intermediate, else -1
};

struct Batcher {
  Plan& p;
  const cl::Options& opts;
  bool planned = false;
  std::map<std::pair<int, int>, int> batched_kernel;  // (kernel, n) -> batched kernel id
  std::map<int, std::optional<cl::KernelDesc>> descs;  // kernel -> its description (from its first call)

  Batcher(Plan& plan, const cl::Options& o) : p(plan), opts(o) {
    for (const Buffer& b : p.buffers) planned |= b.kind == BufferKind::Intermediate && b.offset >= 0;
  }

  std::vector<Storage> storage(const std::vector<int>& ids) const {
    std::vector<Storage> r;
    for (int b : ids) {
      if (b < 0) continue;
      const Buffer& buf = p.buffers[size_t(b)];
      bool arena = planned && buf.kind == BufferKind::Intermediate && buf.offset >= 0;
      r.push_back({b, arena ? buf.offset : -1, arena ? buf.offset + std::max<int64_t>(buf.bytes, 1) : -1});
    }
    return r;
  }
  static bool overlap(const std::vector<Storage>& x, const std::vector<Storage>& y) {
    for (const Storage& a : x)
      for (const Storage& b : y)
        if (a.buffer == b.buffer || (a.begin >= 0 && b.begin >= 0 && a.begin < b.end && b.begin < a.end)) return true;
    return false;
  }
  bool independent(const Call& a, const Call& b) const {
    std::vector<Storage> ra = storage(a.inputs), wa = storage(a.outputs);
    std::vector<Storage> rb = storage(b.inputs), wb = storage(b.outputs);
    return !overlap(wa, rb) && !overlap(wa, wb) && !overlap(ra, wb);
  }

  int present_args(const Call& c) const {
    int n = int(c.outputs.size());
    for (int b : c.inputs) n += b >= 0;
    return n;
  }

  const std::optional<cl::KernelDesc>& desc(const Call& c) {
    auto it = descs.find(c.kernel);
    if (it == descs.end()) it = descs.emplace(c.kernel, cl::describe(p, c, opts)).first;
    return it->second;
  }

  bool batchable(const Call& c) {
    if (c.global[0] <= 0 || c.global[2] > 1) return false;
    if (c.local[2] > 1) return false;
    const std::optional<cl::KernelDesc>& d = desc(c);
    return d && int(d->params.size()) == present_args(c);
  }

  int kernel_for(int kid, int n, int n_outputs) {
    auto it = batched_kernel.find({kid, n});
    if (it != batched_kernel.end()) return it->second;
    Kernel k = p.kernels[size_t(kid)];
    const cl::BatchedKernel b = cl::render_batched(*descs.at(kid), n, n_outputs);
    k.source = b.source;
    k.entry = b.entry;
    k.name += "_x" + std::to_string(n);
    k.attrs.set("cl_batch", int64_t(n));
    k.attrs.set("cl_params", b.params);
    int id = p.add_kernel(std::move(k));
    batched_kernel[{kid, n}] = id;
    return id;
  }

  Call merge(const std::vector<Call>& run) {
    const int n = int(run.size());
    Call m;
    m.kernel = kernel_for(run[0].kernel, n, int(run[0].outputs.size()));
    for (const Call& c : run) {
      m.outputs.insert(m.outputs.end(), c.outputs.begin(), c.outputs.end());
      m.inputs.insert(m.inputs.end(), c.inputs.begin(), c.inputs.end());
      m.label += (m.label.empty() ? "" : "+") + c.label;
    }
    m.global = run[0].global;
    m.global[1] = std::max<int64_t>(m.global[1], 1);
    m.global[2] = n;
    m.local = run[0].local;
    if (m.local[0] > 0) {
      m.local[1] = std::max<int64_t>(m.local[1], 1);
      m.local[2] = 1;
    }
    return m;
  }

  bool run() {
    const int max_batch = int(std::clamp<int64_t>(opts.batch_max, 1, cl::kMaxBatchLimit));
    std::vector<Call> out;
    bool changed = false;
    size_t i = 0;
    while (i < p.calls.size()) {
      const Call& head = p.calls[i];
      std::vector<Call> group{head};
      if (batchable(head)) {
        for (size_t j = i + 1; j < p.calls.size() && int(group.size()) < max_batch; ++j) {
          const Call& c = p.calls[j];
          if (c.kernel != head.kernel || c.global != head.global || c.local != head.local ||
              c.outputs.size() != head.outputs.size() || c.inputs.size() != head.inputs.size())
            break;
          bool same_absent = true;
          for (size_t a = 0; a < c.inputs.size(); ++a) same_absent &= (c.inputs[a] < 0) == (head.inputs[a] < 0);
          bool indep = same_absent;
          for (const Call& g : group) indep = indep && independent(g, c);
          if (!indep) break;
          group.push_back(c);
        }
      }
      i += group.size();
      if (group.size() >= 2) {
        out.push_back(merge(group));
        changed = true;
      } else {
        out.push_back(std::move(group[0]));
      }
    }
    p.calls = std::move(out);
    return changed;
  }
};

}  // namespace

bool batch_calls(Plan& p, const PassCtx& ctx) { return Batcher(p, ctx.cl).run(); }

}  // namespace opv::plan
