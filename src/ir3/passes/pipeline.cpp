// The pass table: names in pipeline order.
#include "core/error.h"
#include "ir3/passes/passes.h"

namespace opv::ir3::passes {

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names{"fold", "cp", "coalesce", "reassoc", "dce", "accum", "relocate", "rpt", "rename", "guards", "hoist", "tidy", "legalize"};
  return names;
}

bool run_pass(const std::string& name, Code& c) {
  if (name == "fold") return fold(c);
  if (name == "cp") return cp(c);
  if (name == "coalesce") return coalesce(c);
  if (name == "reassoc") return reassoc(c);
  if (name == "dce") return dce(c);
  if (name == "accum") return accum(c);
  if (name == "relocate") return relocate(c);
  if (name == "rpt") return rpt(c);
  if (name == "rename") return rename(c);
  if (name == "guards") return guards(c);
  if (name == "hoist") return hoist(c);
  if (name == "tidy") return tidy(c);
  if (name == "legalize") return legalize(c);
  fail("ir3 opt: unknown pass '", name, "' (passes: fold, cp, coalesce, reassoc, dce, accum, relocate, rpt, rename, guards, hoist, tidy, legalize)");
}

}  // namespace opv::ir3::passes
