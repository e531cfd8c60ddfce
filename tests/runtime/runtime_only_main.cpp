// runtime_only: loads a .opv artifact and runs it through runtime::Session, linked against
// opv_runtime and opv_core alone (every object of opv_runtime, --whole-archive: see
// CMakeLists.txt). That this program links proves the runtime needs no compiler code (no
// ONNX/protobuf, no plan pass, no code generator); check_runtime_link.sh runs it.
//   usage: runtime_only MODEL.opv [SEED]
// Runs the model twice on deterministic random inputs and fails (exit 1) unless every output is
// finite and both runs agree bit for bit; prints one line per output.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "core/error.h"
#include "core/tensor.h"
#include "runtime/session.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: runtime_only MODEL.opv [SEED]\n");
    return 2;
  }
  try {
    const uint64_t seed = argc == 3 ? std::strtoull(argv[2], nullptr, 10) : 1;
    opv::runtime::Session s = opv::runtime::Session::open(argv[1]);
    const opv::runtime::NamedTensors inputs = s.random_inputs(seed);
    const opv::runtime::NamedTensors first = s.run(inputs);
    const opv::runtime::NamedTensors second = s.run(inputs);
    bool ok = !first.empty();
    for (size_t i = 0; i < first.size(); ++i) {
      const opv::Tensor& t = first[i].second;
      double sum = 0;
      int64_t nonfinite = 0;
      for (int64_t e = 0; e < t.numel(); ++e) {
        const double v = t.get_f64(e);
        if (std::isfinite(v)) sum += v; else ++nonfinite;
      }
      const bool same = opv::bit_equal(t, second[i].second);
      std::printf("output %s %s%s sum=%.6g nonfinite=%lld rerun=%s\n", first[i].first.c_str(),
                  opv::dtype_name(t.dtype()), opv::shape_str(t.shape()).c_str(), sum, (long long)nonfinite,
                  same ? "identical" : "DIFFERENT");
      ok = ok && nonfinite == 0 && same;
    }
    std::printf("runtime_only: target %s, %zu outputs: %s\n", s.plan().target.c_str(), first.size(),
                ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runtime_only: %s\n", e.what());
    return 1;
  }
}
