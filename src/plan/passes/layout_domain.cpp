// The layout-domain pass (layout_domain.h): classification and conversion come from the
// target's policy; the domain growth and the call-list rewrite are here.
#include "plan/passes/layout_domain.h"

#include <map>
#include <set>

namespace opv::plan {
namespace {

struct DomainPass {
  Plan& p;
  const LayoutPolicy& pol;
  std::vector<SlotClass> cls;
  std::vector<bool> in_domain;
  std::map<std::pair<int, Layout>, int> converted;  // (buffer, layout) -> converted copy
  std::map<std::string, int> reorders;              // Reorder kernel name -> kernel id
  bool changed = false;

  DomainPass(Plan& plan, const LayoutPolicy& policy) : p(plan), pol(policy) {}

  const Buffer& buf(int id) const { return p.buffers.at(size_t(id)); }

  int reorder_kernel(const Buffer& from, const Buffer& to) {
    std::string name = pol.reorder_name(from, to);
    auto it = reorders.find(name);
    if (it != reorders.end()) return it->second;
    Kernel kr;
    kr.name = name;
    kr.op = OpKind::Reorder;
    int id = p.add_kernel(std::move(kr));
    reorders.emplace(name, id);
    return id;
  }

  // An unplanned Intermediate copy of buffer `like` in `layout`.
  int new_buffer(int like, Layout layout) {
    Buffer b = buf(like);
    b.name += "/" + pol.layout_name(layout);
    b.kind = BufferKind::Intermediate;
    b.offset = -1;
    pol.convert(b, layout);
    return p.add_buffer(std::move(b));
  }

  Call reorder_call(int from, int to, const std::string& label) {
    Call r;
    r.kernel = reorder_kernel(buf(from), buf(to));
    r.inputs = {from};
    r.outputs = {to};
    r.label = label + "/to_" + pol.layout_name(buf(to).layout);
    return r;
  }

  Layout needed(size_t ci, size_t slot, const Buffer& b) const {
    if (!in_domain[ci]) return Layout::Linear;
    switch (cls[ci].slot[slot]) {
      case Slot::Data: return pol.domain;
      case Slot::Flex: return pol.flex_layout(p, p.calls[ci], b);
      case Slot::Other: return Layout::Linear;
    }
    return Layout::Linear;
  }

  bool run() {
    // Steps 1 and 2: classify and grow the domain in call order.
    in_domain.assign(p.calls.size(), false);
    // Buffers a domain call writes through a domain temporary (a plan Output...): their readers
    // join the domain as if the buffer were in its layout (they read the temporary, step 3).
    std::vector<bool> domain_copy(p.buffers.size(), false);
    cls.reserve(p.calls.size());
    for (size_t ci = 0; ci < p.calls.size(); ++ci) {
      const Call& c = p.calls[ci];
      cls.push_back(pol.classify(p, c));
      if (!cls.back().capable) continue;
      bool join = pol.starts_domain(p, c, pol.eligible(buf(c.outputs[0])));
      for (size_t i = 0; i < c.inputs.size(); ++i)
        if (cls.back().slot[i] != Slot::Other && c.inputs[i] >= 0 &&
            (buf(c.inputs[i]).layout == pol.domain || domain_copy[size_t(c.inputs[i])]))
          join = true;
      if (!join) continue;
      in_domain[ci] = true;
      for (int o : c.outputs)
        if (pol.eligible(buf(o))) {
          pol.convert(p.buffers[size_t(o)], pol.domain);
          changed = true;
        } else if (pol.needs_output_copy(buf(o))) {
          domain_copy[size_t(o)] = true;
        }
    }
    // Step 3: make every slot agree with its call.
    std::vector<Call> out;
    out.reserve(p.calls.size());
    std::set<int> domain_kernels, other_kernels;
    for (size_t ci = 0; ci < p.calls.size(); ++ci) {
      Call c = p.calls[ci];
      if (p.kernels[size_t(c.kernel)].op == OpKind::Reorder || pol.keeps(p, c)) {  // converts on purpose
        out.push_back(std::move(c));
        continue;
      }
      (in_domain[ci] ? domain_kernels : other_kernels).insert(c.kernel);
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        const int id = c.inputs[i];
        if (id < 0) continue;
        const Buffer b = buf(id);  // a copy: new buffers may be added below
        if (b.layout != Layout::Linear && b.layout != pol.domain) continue;  // packed formats are not ours
        const Layout need = needed(ci, i, b);
        if (b.layout == need || pol.same_bytes(b)) continue;
        auto key = std::make_pair(id, need);
        auto it = converted.find(key);
        if (it == converted.end()) {
          const int nb = new_buffer(id, need);
          out.push_back(reorder_call(id, nb, b.name));
          it = converted.emplace(key, nb).first;
        }
        c.inputs[i] = it->second;
        changed = true;
      }
      std::vector<Call> after;
      if (in_domain[ci]) {
        for (int& o : c.outputs) {
          if (!pol.needs_output_copy(buf(o))) continue;
          const int t = new_buffer(o, pol.domain);
          after.push_back(reorder_call(t, o, c.label));
          converted[{o, pol.domain}] = t;
          o = t;
          changed = true;
        }
      }
      out.push_back(std::move(c));
      for (Call& a : after) out.push_back(std::move(a));
    }
    p.calls = std::move(out);
    if (!pol.kernel_suffix.empty())
      for (int k : domain_kernels) {
        Kernel& kr = p.kernels[size_t(k)];
        if (!other_kernels.count(k) && kr.op != OpKind::Reorder && !kr.name.ends_with(pol.kernel_suffix))
          kr.name += pol.kernel_suffix;
      }
    return changed;
  }
};

}  // namespace

bool assign_layout_domain(Plan& p, const LayoutPolicy& policy) {
  DomainPass pass(p, policy);
  return pass.run();
}

}  // namespace opv::plan
