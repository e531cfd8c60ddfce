// The Chrome trace writer (src/tools/trace.cpp) on a hand-built plan: spans in microseconds, a
// call without a start of its own (NaN: fused into the call before; or a backend that records
// none) laid right after the call before, bytes and FLOPs from plan_stats, names escaped.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tools/trace.h"

namespace opv::tools {
namespace {

plan::Plan three_relus() {
  plan::Plan p;
  p.target = "reference";
  int prev = -1;
  for (int i = 0; i < 4; ++i) {
    plan::Buffer b;
    b.name = "b" + std::to_string(i);
    b.shape = {1, 4};
    b.bytes = 16;
    b.kind = i == 0 ? plan::BufferKind::Input : i == 3 ? plan::BufferKind::Output : plan::BufferKind::Intermediate;
    const int id = p.add_buffer(b);
    if (i == 0) p.inputs.push_back(id);
    if (i == 3) p.outputs.push_back(id);
    if (prev >= 0) {
      plan::Kernel k;
      k.name = i == 2 ? "relu \"quoted\"" : "relu_f32";
      k.op = OpKind::Relu;
      plan::Call c;
      c.kernel = p.add_kernel(k);
      c.inputs = {prev};
      c.outputs = {id};
      c.label = "node" + std::to_string(i);
      p.calls.push_back(c);
    }
    prev = id;
  }
  return p;
}

TEST(ChromeTrace, SpansFallbackAndArgs) {
  const plan::Plan p = three_relus();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  TraceRun r0{100.0, 10.0, {0.5, nan, 6.0}, {2.0, 1.5, 3.0}};
  TraceRun r1{200.0, 9.0, {}, {1.0, 1.0, 1.0}};  // a backend without starts: back to back
  const std::string t = chrome_trace(p, {r0, r1}, "m\\odel", "host", 2);
  EXPECT_NE(t.find("\"name\": \"opvision m\\\\odel on reference (host)\""), std::string::npos) << t;
  EXPECT_NE(t.find("\"name\": \"reference stream, threads 2"), std::string::npos) << t;
  // run 0 at 0 us; its calls at 500, 2500 (after call 0's 2 ms) and 6000 us
  EXPECT_NE(t.find("\"name\": \"inference 0\", \"cat\": \"run\", \"ts\": 0.000, \"dur\": 10000.000"), std::string::npos) << t;
  EXPECT_NE(t.find("\"ts\": 500.000, \"dur\": 2000.000, \"args\": {\"call\": 0, \"node\": \"node1\", \"bytes\": 32, \"flops\": 4}"),
            std::string::npos) << t;
  EXPECT_NE(t.find("\"name\": \"relu \\\"quoted\\\"\", \"cat\": \"Relu\", \"ts\": 2500.000, \"dur\": 1500.000"),
            std::string::npos) << t;
  EXPECT_NE(t.find("\"ts\": 6000.000, \"dur\": 3000.000"), std::string::npos) << t;
  // run 1 at 100 ms: calls at 0, 1, 2 ms from its start
  EXPECT_NE(t.find("\"name\": \"inference 1\", \"cat\": \"run\", \"ts\": 100000.000"), std::string::npos) << t;
  for (const char* ts : {"\"ts\": 100000.000, \"dur\": 1000.000", "\"ts\": 101000.000", "\"ts\": 102000.000"})
    EXPECT_NE(t.find(ts), std::string::npos) << ts << "\n" << t;
}

}  // namespace
}  // namespace opv::tools
