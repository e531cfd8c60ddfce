// The cuda backend (src/backend/cuda; contract src/target/cuda/cuda_abi.h) on hand-written plans
// whose kernels are small hand-written PTX:
//   sub_f32_<n>        y = a - b over n floats, 1-D (a non-commutative op: argument order shows)
//   copy_f32_<w>x<h>   y = x over an h x w matrix, 2-D grid (ctaid.y / ntid.y)
//   sub_f32_<n> staged through the last words of dynamic shared memory (kernel attr cuda_smem)
// Without a CUDA driver or device (CI): "cuda" is listed when built with it, creating it throws a
// clear opv::Error, and a bad device selector is refused before the driver is asked; the graph's
// dependencies (graph_deps.h) come from arena bytes, not buffer ids, on hand-built plans. With a
// GPU: outputs equal the reference backend's in both graph shapes (branches, chain), the CUDA
// graph replays with changing inputs and with several inferences in flight, profiling gives one
// time per call, dynamic shared memory (attr cuda_smem) reaches the graph's and the direct
// launches, and plans the backend cannot run are refused naming the call.
// GPU tests skip cleanly without one; on the H200 they run through scripts/device_gtest.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/error.h"
#include "test_util.h"

#if OPV_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/graph_deps.h"
#include "target/cuda/cuda_abi.h"
#endif

namespace opv {
namespace {

bool listed(const std::string& name) {
  const std::vector<std::string> a = backend::available();
  return std::find(a.begin(), a.end(), name) != a.end();
}

#if !OPV_HAVE_CUDA

TEST(CudaBackend, NotListedWithoutCudaSupport) { EXPECT_FALSE(listed("cuda")); }

#else

using opv::test::error_of;
using plan::BufferKind;
using plan::Layout;

// The message of creating the backend, "" when a CUDA device is there.
std::string creation_error(const backend::Options& o = {}) {
  return error_of([&] { backend::create("cuda", o); });
}

#define SKIP_WITHOUT_CUDA()                                                   \
  do {                                                                        \
    const std::string why = creation_error();                                 \
    if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;              \
  } while (0)

TEST(CudaBackend, ListedWhenBuiltWithCuda) { EXPECT_TRUE(listed("cuda")); }

TEST(CudaBackend, NoDriverOrDeviceIsAClearError) {
  const std::string why = creation_error();
  if (why.empty()) GTEST_SKIP() << "a CUDA device is present";
  const bool no_driver = why.rfind("cuda backend: no CUDA driver (libcuda.so.1", 0) == 0;
  const bool no_device = why.rfind("cuda backend: no CUDA device", 0) == 0;
  EXPECT_TRUE(no_driver || no_device) << why;
  // The same answer every time (the failed load is remembered, not retried into a crash).
  EXPECT_EQ(creation_error(), why);
}

TEST(CudaBackend, DeviceSelectorIsAnIndex) {
  backend::Options o;
  o.device = "nvidia";
  EXPECT_EQ(creation_error(o),
            "cuda backend: device selector 'nvidia' is not a device index (the cuda backend selects devices by "
            "index: 0, 1, ...)");
}

// ---- hand-written PTX -------------------------------------------------------------------------

constexpr const char* kPtxHeader = ".version 7.0\n.target sm_52\n.address_size 64\n";

// y[i] = a[i] - b[i] for i < n; one thread an element.
std::string ptx_sub(int64_t n) {
  return std::string(kPtxHeader) + ".visible .entry sub_f32_" + std::to_string(n) +
         "(.param .u64 y, .param .u64 a, .param .u64 b)\n{\n"
         "  .reg .pred %p;\n  .reg .b32 %r<5>;\n  .reg .f32 %f<4>;\n  .reg .b64 %rd<8>;\n"
         "  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n  mov.u32 %r3, %tid.x;\n"
         "  mad.lo.s32 %r4, %r1, %r2, %r3;\n"
         "  setp.ge.u32 %p, %r4, " + std::to_string(n) + ";\n  @%p bra DONE;\n"
         "  ld.param.u64 %rd1, [y];\n  ld.param.u64 %rd2, [a];\n  ld.param.u64 %rd3, [b];\n"
         "  mul.wide.u32 %rd4, %r4, 4;\n"
         "  add.s64 %rd5, %rd2, %rd4;\n  ld.global.f32 %f1, [%rd5];\n"
         "  add.s64 %rd6, %rd3, %rd4;\n  ld.global.f32 %f2, [%rd6];\n"
         "  sub.f32 %f3, %f1, %f2;\n"
         "  add.s64 %rd7, %rd1, %rd4;\n  st.global.f32 [%rd7], %f3;\n"
         "DONE:\n  ret;\n}\n";
}

// y[r][c] = x[r][c] for c < w, r < h; x from the grid's x dimension, r from y.
std::string ptx_copy2d(int64_t w, int64_t h) {
  return std::string(kPtxHeader) + ".visible .entry copy_f32_" + std::to_string(w) + "x" + std::to_string(h) +
         "(.param .u64 y, .param .u64 x)\n{\n"
         "  .reg .pred %p<3>;\n  .reg .b32 %r<7>;\n  .reg .f32 %f1;\n  .reg .b64 %rd<6>;\n"
         "  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n  mov.u32 %r3, %tid.x;\n"
         "  mad.lo.s32 %r4, %r1, %r2, %r3;\n"
         "  mov.u32 %r1, %ctaid.y;\n  mov.u32 %r2, %ntid.y;\n  mov.u32 %r3, %tid.y;\n"
         "  mad.lo.s32 %r5, %r1, %r2, %r3;\n"
         "  setp.ge.u32 %p1, %r4, " + std::to_string(w) + ";\n  setp.ge.u32 %p2, %r5, " + std::to_string(h) +
         ";\n  or.pred %p1, %p1, %p2;\n  @%p1 bra DONE;\n"
         "  mad.lo.s32 %r6, %r5, " + std::to_string(w) + ", %r4;\n"
         "  ld.param.u64 %rd1, [y];\n  ld.param.u64 %rd2, [x];\n"
         "  mul.wide.u32 %rd3, %r6, 4;\n"
         "  add.s64 %rd4, %rd2, %rd3;\n  ld.global.f32 %f1, [%rd4];\n"
         "  add.s64 %rd5, %rd1, %rd3;\n  st.global.f32 [%rd5], %f1;\n"
         "DONE:\n  ret;\n}\n";
}

// sub_f32_<n> that stores each difference in dynamic shared memory and reads it back before
// storing it: thread t of a block uses word (smem / 4 - ntid + t), the last ntid words of `smem`
// bytes, so it faults (cudasim) unless every launch gets them all.
std::string ptx_sub_dsmem(int64_t n, int64_t smem) {
  return std::string(kPtxHeader) + ".extern .shared .align 16 .b8 opv_dsmem[];\n" + ".visible .entry sub_f32_" +
         std::to_string(n) +
         "(.param .u64 y, .param .u64 a, .param .u64 b)\n{\n"
         "  .reg .pred %p;\n  .reg .b32 %r<9>;\n  .reg .f32 %f<5>;\n  .reg .b64 %rd<8>;\n"
         "  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n  mov.u32 %r3, %tid.x;\n"
         "  mad.lo.s32 %r4, %r1, %r2, %r3;\n"
         "  setp.ge.u32 %p, %r4, " + std::to_string(n) + ";\n  @%p bra DONE;\n"
         "  ld.param.u64 %rd1, [y];\n  ld.param.u64 %rd2, [a];\n  ld.param.u64 %rd3, [b];\n"
         "  mul.wide.u32 %rd4, %r4, 4;\n"
         "  add.s64 %rd5, %rd2, %rd4;\n  ld.global.f32 %f1, [%rd5];\n"
         "  add.s64 %rd6, %rd3, %rd4;\n  ld.global.f32 %f2, [%rd6];\n"
         "  sub.f32 %f3, %f1, %f2;\n"
         "  mov.u32 %r5, " + std::to_string(smem / 4) + ";\n  sub.s32 %r5, %r5, %r2;\n  add.s32 %r5, %r5, %r3;\n"
         "  mov.u32 %r6, opv_dsmem;\n  mad.lo.s32 %r7, %r5, 4, %r6;\n"
         "  st.shared.f32 [%r7], %f3;\n  ld.volatile.shared.f32 %f4, [%r7];\n"
         "  add.s64 %rd7, %rd1, %rd4;\n  st.global.f32 [%rd7], %f4;\n"
         "DONE:\n  ret;\n}\n";
}

constexpr int64_t kW = 40, kH = 25, kN = kW * kH;  // 1000: not a multiple of any block size used

// a, b inputs; w a constant; t, u intermediates in the arena; y, z outputs; every buffer f32[25,40]:
//   0: t = a - w      sub     global {1000}   local {128}    (partial last block)
//   1: u = t          copy    global {40,25}  local {16,8}   (2-D; inputs {t, -1}: absent skipped)
//   2: y = b - u      sub     global {1000}   local {0}      (local 0 = 1)
//   3: z = t          copy    global {40,25}  local {8,8}
plan::Plan chain_plan() {
  plan::Plan p;
  p.target = "cuda";
  const Shape shape{kH, kW};
  const int64_t bytes = kN * 4;
  auto buffer = [&](const char* name, BufferKind kind, int64_t offset) {
    plan::Buffer b;
    b.name = name;
    b.shape = shape;
    b.kind = kind;
    b.offset = offset;
    b.bytes = bytes;
    return p.add_buffer(b);
  };
  const int a = buffer("a", BufferKind::Input, -1);
  const int b = buffer("b", BufferKind::Input, -1);
  const Tensor wt = test::random_f32(shape, 99);
  const int w = p.add_constant("w", DType::F32, shape, Layout::Linear, wt.raw(), wt.nbytes());
  const int t = buffer("t", BufferKind::Intermediate, 0);
  const int u = buffer("u", BufferKind::Intermediate, plan::align_up(bytes));
  const int y = buffer("y", BufferKind::Output, -1);
  const int z = buffer("z", BufferKind::Output, -1);
  p.arena_bytes = 2 * plan::align_up(bytes);
  p.inputs = {a, b};
  p.outputs = {y, z};
  auto kernel = [&](OpKind op, const std::string& ptx, const std::string& entry) {
    plan::Kernel k;
    k.name = entry;
    k.op = op;
    k.source = ptx;
    k.entry = entry;
    k.options = plan::cuda::kPtxFormat;
    return p.add_kernel(k);
  };
  const int sub = kernel(OpKind::Sub, ptx_sub(kN), "sub_f32_" + std::to_string(kN));
  const int copy = kernel(OpKind::Identity, ptx_copy2d(kW, kH), "copy_f32_40x25");
  p.calls.push_back({sub, {a, w}, {t}, {kN, 0, 0}, {128, 0, 0}, "t"});
  p.calls.push_back({copy, {t, -1}, {u}, {kW, kH, 0}, {16, 8, 0}, "u"});
  p.calls.push_back({sub, {b, u}, {y}, {kN, 0, 0}, {0, 0, 0}, "y"});
  p.calls.push_back({copy, {t}, {z}, {kW, kH, 0}, {8, 8, 0}, "z"});
  plan::validate(p);
  return p;
}

// Two branches over the arena, each call its own kernel (so no module workspace orders them):
//   0: t = a - w    1: y = t    2: s = b - w    3: z = s
// alias: s at t's arena offset (what the memory planner may do once y has read t): call 2 must wait
// for call 1 (WAR) though they share no buffer id. Otherwise s lies after t and the branches
// {0, 1} and {2, 3} are independent.
plan::Plan two_branch_plan(bool alias) {
  plan::Plan p;
  p.target = "cuda";
  const Shape shape{kH, kW};
  const int64_t bytes = kN * 4;
  auto buffer = [&](const char* name, BufferKind kind, int64_t offset) {
    plan::Buffer b;
    b.name = name;
    b.shape = shape;
    b.kind = kind;
    b.offset = offset;
    b.bytes = bytes;
    return p.add_buffer(b);
  };
  const int a = buffer("a", BufferKind::Input, -1);
  const int b = buffer("b", BufferKind::Input, -1);
  const Tensor wt = test::random_f32(shape, 98);
  const int w = p.add_constant("w", DType::F32, shape, Layout::Linear, wt.raw(), wt.nbytes());
  const int t = buffer("t", BufferKind::Intermediate, 0);
  const int s = buffer("s", BufferKind::Intermediate, alias ? 0 : plan::align_up(bytes));
  const int y = buffer("y", BufferKind::Output, -1);
  const int z = buffer("z", BufferKind::Output, -1);
  p.arena_bytes = (alias ? 1 : 2) * plan::align_up(bytes);
  p.inputs = {a, b};
  p.outputs = {y, z};
  auto kernel = [&](OpKind op, const std::string& ptx, const std::string& entry, const std::string& name) {
    plan::Kernel k;
    k.name = name;
    k.op = op;
    k.source = ptx;
    k.entry = entry;
    k.options = plan::cuda::kPtxFormat;
    return p.add_kernel(k);
  };
  const std::string sub = "sub_f32_" + std::to_string(kN), copy = "copy_f32_40x25";
  const int sub0 = kernel(OpKind::Sub, ptx_sub(kN), sub, sub + "_t");
  const int copy0 = kernel(OpKind::Identity, ptx_copy2d(kW, kH), copy, copy + "_y");
  const int sub1 = kernel(OpKind::Sub, ptx_sub(kN), sub, sub + "_s");
  const int copy1 = kernel(OpKind::Identity, ptx_copy2d(kW, kH), copy, copy + "_z");
  p.calls.push_back({sub0, {a, w}, {t}, {kN, 0, 0}, {128, 0, 0}, "t"});
  p.calls.push_back({copy0, {t}, {y}, {kW, kH, 0}, {16, 8, 0}, "y"});
  p.calls.push_back({sub1, {b, w}, {s}, {kN, 0, 0}, {256, 0, 0}, "s"});
  p.calls.push_back({copy1, {s}, {z}, {kW, kH, 0}, {8, 8, 0}, "z"});
  plan::validate(p);
  return p;
}

// ---- graph dependencies (no GPU) --------------------------------------------------------------

using backend::CudaGraph;
using backend::cuda::GraphNode;
using backend::cuda::graph_nodes;
using backend::cuda::NodeKind;

// Each node as "kind index <- deps", e.g. "call 2 <- 1 3" (deps are node indices).
std::vector<std::string> describe(const std::vector<GraphNode>& nodes) {
  std::vector<std::string> r;
  for (const GraphNode& n : nodes) {
    const char* kind = n.kind == NodeKind::InputCopy ? "in" : n.kind == NodeKind::Call ? "call" : "out";
    std::ostringstream s;
    s << kind << ' ' << n.index << " <-";
    for (int d : n.deps) s << ' ' << d;
    r.push_back(s.str());
  }
  return r;
}

TEST(CudaGraphDeps, ChainPlanBranchesAfterT) {
  // Nodes: 0 in a, 1 in b, 2..5 calls 0..3, 6 out y, 7 out z. Call 2 (y = b - u) shares call 0's
  // kernel, reached anyway through call 1; call 3 (z = t) shares call 1's kernel and reads t, both
  // reached through call 1. Calls 2 and 3 are independent. The copies of one direction stay in
  // order (in b after in a, out z after out y).
  const plan::Plan p = chain_plan();
  EXPECT_EQ(describe(graph_nodes(p, CudaGraph::Branches)),
            (std::vector<std::string>{"in 0 <-", "in 1 <- 0", "call 0 <- 0", "call 1 <- 2", "call 2 <- 1 3",
                                      "call 3 <- 3", "out 0 <- 4", "out 1 <- 5 6"}));
  const auto st = backend::cuda::graph_stats(graph_nodes(p, CudaGraph::Branches));
  EXPECT_EQ(st.nodes, 8);
  EXPECT_EQ(st.edges, 9);
  EXPECT_EQ(st.depth, 6);  // in a, t, u, y | z, out y, out z
  EXPECT_EQ(st.width, 2);
}

// Mapped inputs/outputs: the graph without those copies, renumbered; a node that waited for a
// dropped copy waits for what the copy waited for.
TEST(CudaGraphDeps, WithoutCopiesKeepsTheOrderThroughThem) {
  using backend::cuda::without_copies;
  const std::vector<bool> all{true, true}, none{false, false};
  const std::vector<GraphNode> nodes = graph_nodes(chain_plan(), CudaGraph::Branches);
  EXPECT_EQ(describe(without_copies(nodes, all, none)),
            (std::vector<std::string>{"call 0 <-", "call 1 <- 0", "call 2 <- 1", "call 3 <- 1", "out 0 <- 2",
                                      "out 1 <- 3 4"}));
  EXPECT_EQ(describe(without_copies(nodes, none, all)),
            (std::vector<std::string>{"in 0 <-", "in 1 <- 0", "call 0 <- 0", "call 1 <- 2", "call 2 <- 1 3",
                                      "call 3 <- 3"}));
  EXPECT_EQ(describe(without_copies(graph_nodes(chain_plan(), CudaGraph::Chain), all, all)),
            (std::vector<std::string>{"call 0 <-", "call 1 <- 0", "call 2 <- 1", "call 3 <- 2"}));
  EXPECT_EQ(describe(without_copies(nodes, none, none)), describe(nodes));
  EXPECT_EQ(describe(without_copies(nodes, {false, true}, {true, false})),  // in b and out y
            (std::vector<std::string>{"in 0 <-", "call 0 <- 0", "call 1 <- 1", "call 2 <- 0 2", "call 3 <- 2",
                                      "out 1 <- 3 4"}));
  // Through a dropped node: call 1 waited for an output copy that waited for calls 0 and 2.
  std::vector<GraphNode> through(4);
  through[1].index = 2;
  through[2] = {NodeKind::OutputCopy, 0, {0, 1}};
  through[3] = {NodeKind::Call, 1, {1, 2}};
  EXPECT_EQ(describe(without_copies(through, {}, {true})),
            (std::vector<std::string>{"call 0 <-", "call 2 <-", "call 1 <- 0 1"}));
}

TEST(CudaGraphDeps, ChainShapeIsPlanOrder) {
  const std::vector<GraphNode> nodes = graph_nodes(chain_plan(), CudaGraph::Chain);
  ASSERT_EQ(nodes.size(), 8u);
  EXPECT_TRUE(nodes[0].deps.empty());
  for (size_t i = 1; i < nodes.size(); ++i) EXPECT_EQ(nodes[i].deps, std::vector<int>{int(i) - 1}) << i;
  const auto st = backend::cuda::graph_stats(nodes);
  EXPECT_EQ(st.depth, 8);
  EXPECT_EQ(st.width, 1);
}

TEST(CudaGraphDeps, IndependentBranchesHaveNoEdgeBetweenThem) {
  // 0 in a, 1 in b, 2 t, 3 y, 4 s, 5 z, 6 out y, 7 out z: two chains side by side.
  EXPECT_EQ(describe(graph_nodes(two_branch_plan(false), CudaGraph::Branches)),
            (std::vector<std::string>{"in 0 <-", "in 1 <- 0", "call 0 <- 0", "call 1 <- 2", "call 2 <- 1",
                                      "call 3 <- 4", "out 0 <- 3", "out 1 <- 5 6"}));
}

TEST(CudaGraphDeps, SharedArenaBytesOrderBuffersOfOtherIds) {
  // s takes t's bytes: call 2 (writes s) after call 1 (reads t: WAR; call 0's WAW is implied).
  EXPECT_EQ(describe(graph_nodes(two_branch_plan(true), CudaGraph::Branches)),
            (std::vector<std::string>{"in 0 <-", "in 1 <- 0", "call 0 <- 0", "call 1 <- 2", "call 2 <- 1 3",
                                      "call 3 <- 4", "out 0 <- 3", "out 1 <- 5 6"}));
  // A partial overlap counts as well: s one aligned step into t's 4000 bytes.
  plan::Plan p = two_branch_plan(false);
  p.buffers[size_t(p.calls[2].outputs[0])].offset = plan::kAlign;
  EXPECT_EQ(describe(graph_nodes(p, CudaGraph::Branches))[4], "call 2 <- 1 3");
  // Adjacent ranges do not: s starts where t's storage ends.
  p.buffers[size_t(p.calls[2].outputs[0])].offset = plan::align_up(kN * 4);
  EXPECT_EQ(describe(graph_nodes(p, CudaGraph::Branches))[4], "call 2 <- 1");
}

TEST(CudaGraphDeps, CallsOfOneKernelStayOrderedAndEdgesAreReduced) {
  // The two-branch plan with one sub kernel for calls 0 and 2: its module workspace orders them
  // (call 2 after call 0, the only link between the branches).
  plan::Plan p = two_branch_plan(false);
  p.calls[2].kernel = p.calls[0].kernel;
  std::vector<GraphNode> nodes = graph_nodes(p, CudaGraph::Branches);
  EXPECT_EQ(describe(nodes)[4], "call 2 <- 1 2");
  // Reduction: z = t + (reads t, the kernel of y) after y: its RAW edge on call 0 is implied by
  // call 1 (the shared kernel) and dropped.
  p = two_branch_plan(false);
  p.calls[3].inputs = {p.calls[0].outputs[0]};
  p.calls[3].kernel = p.calls[1].kernel;
  nodes = graph_nodes(p, CudaGraph::Branches);
  EXPECT_EQ(describe(nodes)[5], "call 3 <- 3");
  // Every conflicting pair is still connected by a path: 2 (t) ... 5 (reads t).
  const auto st = backend::cuda::graph_stats(nodes);
  EXPECT_EQ(st.edges, 8);
}

TEST(CudaGraphDeps, ZeroByteTensorsHaveNoCopyNode) {
  plan::Plan p = two_branch_plan(false);
  p.buffers[size_t(p.outputs[1])].shape = {0, kW};
  const std::vector<std::string> d = describe(graph_nodes(p, CudaGraph::Branches));
  ASSERT_EQ(d.size(), 7u);
  EXPECT_EQ(d.back(), "out 0 <- 3");
}

struct Io {
  std::vector<Tensor> ins, outs;
  std::vector<const Tensor*> in_ptrs() const {
    std::vector<const Tensor*> r;
    for (const Tensor& t : ins) r.push_back(&t);
    return r;
  }
  std::vector<Tensor*> out_ptrs() {
    std::vector<Tensor*> r;
    for (Tensor& t : outs) r.push_back(&t);
    return r;
  }
};

// Random inputs (input i from seed + i, as test::run_on_reference) and outputs poisoned with NaN,
// so an element the device never writes fails the comparison.
Io make_io(const plan::Plan& p, uint64_t seed) {
  Io io;
  for (size_t i = 0; i < p.inputs.size(); ++i)
    io.ins.push_back(test::random_f32(p.buffers[size_t(p.inputs[i])].shape, seed + i));
  for (int o : p.outputs) {
    Tensor t(p.buffers[size_t(o)].dtype, p.buffers[size_t(o)].shape);
    std::fill(t.data<float>(), t.data<float>() + t.numel(), std::nanf(""));
    io.outs.push_back(std::move(t));
  }
  return io;
}

std::vector<Tensor> reference_outputs(plan::Plan p, uint64_t seed) {
  p.target = "reference";
  return test::run_on_reference(p, seed);
}

// Largest |got - want| (infinity when a value is not finite or the sizes differ).
double max_abs_diff(const Tensor& got, const Tensor& want) {
  if (got.numel() != want.numel()) return INFINITY;
  double m = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double d = std::fabs(double(got.data<float>()[i]) - double(want.data<float>()[i]));
    if (!std::isfinite(d)) return INFINITY;
    m = std::max(m, d);
  }
  return m;
}

// Runs `be` (loaded with p) on the inputs of `seed` and expects the reference outputs: sub and
// copy are exact in f32, so they must match bit for bit.
void expect_matches_reference(backend::Backend& be, const plan::Plan& p, uint64_t seed) {
  Io io = make_io(p, seed);
  be.run(io.in_ptrs(), io.out_ptrs());
  const std::vector<Tensor> want = reference_outputs(p, seed);
  ASSERT_EQ(want.size(), io.outs.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(max_abs_diff(io.outs[i], want[i]), 0.0) << "output " << i << " seed " << seed;
}

// The test plan itself is sound: valid, and the reference backend computes y = b - (a - w) and
// z = a - w from it (the oracle of the GPU tests; runs without a GPU).
TEST(CudaBackend, TestPlanRunsOnReference) {
  const plan::Plan p = chain_plan();
  const uint64_t seed = 3;
  const std::vector<Tensor> out = reference_outputs(p, seed);
  ASSERT_EQ(out.size(), 2u);
  const Tensor a = test::random_f32({kH, kW}, seed), b = test::random_f32({kH, kW}, seed + 1);
  const float* w = reinterpret_cast<const float*>(p.constant_data(2));
  for (int64_t i = 0; i < kN; ++i) {
    const float t = a.data<float>()[i] - w[i];
    ASSERT_EQ(out[1].data<float>()[i], t) << i;
    ASSERT_EQ(out[0].data<float>()[i], b.data<float>()[i] - t) << i;
  }
}

// ---- with a GPU -------------------------------------------------------------------------------

TEST(CudaBackendGpu, CapsNameTheDevice) {
  SKIP_WITHOUT_CUDA();
  auto be = backend::create("cuda");
  const backend::Caps c = be->caps();
  EXPECT_EQ(backend::layout_list(c.layouts), "linear, nhwc");
  EXPECT_TRUE(c.per_call_times);
  EXPECT_EQ(c.device.rfind("CUDA: ", 0), 0u) << c.device;
  EXPECT_NE(c.device.find("(sm_"), std::string::npos) << c.device;
  EXPECT_EQ(be->tolerance().rel_l2, 1e-2);
  std::printf("device: %s\n", c.device.c_str());
}

TEST(CudaBackendGpu, MatchesReferenceAndReplaysTheGraph) {
  SKIP_WITHOUT_CUDA();
  const plan::Plan p = chain_plan();
  auto be = backend::create("cuda");
  ASSERT_TRUE(backend::supports(*be, p)) << backend::supports(*be, p).why;
  be->load(p);
  const backend::CudaLoadInfo* info = backend::cuda_load_info(*be);
  ASSERT_NE(info, nullptr);
  EXPECT_TRUE(info->graph);
  EXPECT_TRUE(info->branches);  // the default
  // CudaIo::Auto, the default: both inputs are read once by a Sub, no call reads the outputs, so the
  // kernels read and write them in mapped host memory: the graph is the four calls (t, u, y | z).
  EXPECT_EQ(info->mapped_inputs, 2);
  EXPECT_EQ(info->mapped_outputs, 2);
  EXPECT_EQ(info->graph_nodes, 4);
  EXPECT_EQ(info->graph_edges, 3);
  EXPECT_EQ(info->graph_depth, 3);
  EXPECT_EQ(info->modules, 2);
  EXPECT_EQ(info->launches, 4);
  // Changing inputs on every replay: each run's outputs follow its own inputs.
  for (uint64_t seed : {1u, 2u, 3u, 4u}) expect_matches_reference(*be, p, seed * 10);
  EXPECT_EQ(info->graph_runs, 4);
  EXPECT_EQ(info->direct_runs, 0);
  EXPECT_TRUE(be->call_times_ms().empty());
  std::printf("driver %d, %s\n", info->driver_version, info->device.c_str());
}

// Both graph shapes on plans with and without arena reuse: every output equals the reference's,
// over replays with changing inputs (a missing edge between aliasing calls would race).
TEST(CudaBackendGpu, BothGraphShapesMatchTheReference) {
  SKIP_WITHOUT_CUDA();
  for (CudaGraph shape : {CudaGraph::Branches, CudaGraph::Chain}) {
    backend::Options o;
    o.cuda_graph = shape;
    o.cuda_inputs = o.cuda_outputs = backend::CudaIo::Copy;  // the copies are part of the shapes checked
    for (const plan::Plan& p : {chain_plan(), two_branch_plan(false), two_branch_plan(true)}) {
      auto be = backend::create("cuda", o);
      be->load(p);
      const backend::CudaLoadInfo* info = backend::cuda_load_info(*be);
      ASSERT_NE(info, nullptr);
      EXPECT_EQ(info->branches, shape == CudaGraph::Branches);
      EXPECT_EQ(info->graph_nodes, 8);
      if (shape == CudaGraph::Chain) {
        EXPECT_EQ(info->graph_depth, 8);
      }
      for (uint64_t seed = 40; seed < 60; ++seed) expect_matches_reference(*be, p, seed);
      EXPECT_EQ(info->graph_runs, 20);
    }
  }
}

// Options.cuda_inflight (bench --inflight): N graph replays per run, one wait, same outputs.
TEST(CudaBackendGpu, InflightReplaysTheGraphNTimesPerRun) {
  SKIP_WITHOUT_CUDA();
  backend::Options o;
  o.cuda_inflight = 3;
  const plan::Plan p = two_branch_plan(true);
  auto be = backend::create("cuda", o);
  be->load(p);
  expect_matches_reference(*be, p, 61);
  expect_matches_reference(*be, p, 62);
  EXPECT_EQ(backend::cuda_load_info(*be)->graph_runs, 6);
  o.cuda_inflight = 0;
  EXPECT_EQ(creation_error(o), "cuda backend: 0 inferences in flight; 1 to 4096");
}

// Options.cuda_inflight > 1 uploads each replay's inputs on a second stream into one of two device
// copies, alternating (cuda_overlap_uploads, the default), or inside each replay's graph (off):
// both give every run's outputs from its own inputs (a replay reading a slot that missed its
// upload, or read before the upload landed, would give an earlier run's); with one in flight
// there is no second slot. With CudaIo::Auto (the default) the test plan's inputs and outputs,
// each read once, are mapped, except the inputs of replays whose uploads overlap.
TEST(CudaBackendGpu, InflightOverlappedUploadsAlternateTwoInputSlots) {
  SKIP_WITHOUT_CUDA();
  const plan::Plan p = two_branch_plan(true);
  for (backend::CudaIo io : {backend::CudaIo::Copy, backend::CudaIo::Auto}) {
    for (int n : {1, 2, 3, 5}) {
      for (bool overlap : {true, false}) {
        SCOPED_TRACE(std::to_string(n) + " in flight, overlap " + (overlap ? "on" : "off") +
                     (io == backend::CudaIo::Auto ? ", auto" : ", copy"));
        backend::Options o;
        o.cuda_inflight = n;
        o.cuda_overlap_uploads = overlap;
        o.cuda_inputs = o.cuda_outputs = io;
        auto be = backend::create("cuda", o);
        be->load(p);
        const backend::CudaLoadInfo* info = backend::cuda_load_info(*be);
        ASSERT_NE(info, nullptr);
        const bool autoio = io == backend::CudaIo::Auto;
        EXPECT_EQ(info->mapped_inputs, autoio && !(n > 1 && overlap) ? 2 : 0);
        EXPECT_EQ(info->mapped_outputs, autoio ? 2 : 0);
        EXPECT_EQ(info->overlapped_uploads, overlap && n > 1);
        for (uint64_t seed = 70; seed < 76; ++seed) expect_matches_reference(*be, p, seed);
        EXPECT_EQ(info->graph_runs, 6 * n);
        EXPECT_EQ(info->overlapped_replays, overlap && n > 1 ? 6 * n : 0);
      }
    }
  }
}

// Writes `bytes` at device address `dst` through the driver, in device 0's primary context (the
// backend's), and waits: a caller making its inputs on the GPU.
void write_device(uint64_t dst, const void* src, size_t bytes) {
  const backend::cu::Driver& d = backend::cu::driver();
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  ASSERT_EQ(d.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  ASSERT_EQ(d.cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  {
    backend::cu::ScopedContext scope(ctx);
    EXPECT_EQ(d.cuMemcpyHtoDAsync(CUdeviceptr(dst), src, bytes, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(d.cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  }
  d.cuDevicePrimaryCtxRelease(dev);
}

// Options.cuda_inputs Device (--cuda-inputs device): every input has device memory that keeps it
// between runs and no copy node; run() uploads the caller's tensors before the graph (in flight
// and profiled too), run_device_inputs() runs again on what is there, including what the caller
// wrote at input_device() itself; the outputs follow whichever inputs are there (a stale upload or
// a graph still copying from the staging would not). Refused for outputs; other modes and other
// backends have no device inputs.
TEST(CudaBackendGpu, DeviceInputsStayOnTheDeviceBetweenRuns) {
  SKIP_WITHOUT_CUDA();
  using backend::CudaIo;
  {
    backend::Options o;
    o.cuda_outputs = CudaIo::Device;
    EXPECT_NE(creation_error(o).find("outputs are not kept on the device"), std::string::npos) << creation_error(o);
  }
  auto ref = backend::create("reference");
  EXPECT_EQ(ref->input_device(0), 0u);
  EXPECT_THROW(ref->run_device_inputs({}), Error);
  for (const plan::Plan& p : {chain_plan(), two_branch_plan(true)}) {
    {
      auto copied = backend::create("cuda");
      copied->load(p);
      EXPECT_EQ(copied->input_device(0), 0u);
      Io io = make_io(p, 1);
      try {
        copied->run_device_inputs(io.out_ptrs());
        ADD_FAILURE() << "run_device_inputs without device inputs";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("is not kept on the device"), std::string::npos) << e.what();
      }
    }
    for (int n : {1, 3}) {
      SCOPED_TRACE(std::to_string(n) + " in flight");
      backend::Options o;
      o.cuda_inputs = CudaIo::Device;
      o.cuda_inflight = n;
      auto be = backend::create("cuda", o);
      EXPECT_EQ(be->input_device(0), 0u) << "before load";
      be->load(p);
      const backend::CudaLoadInfo* info = backend::cuda_load_info(*be);
      ASSERT_NE(info, nullptr);
      EXPECT_EQ(info->device_inputs, int(p.inputs.size()));
      EXPECT_EQ(info->mapped_inputs, 0);
      EXPECT_FALSE(info->overlapped_uploads);
      EXPECT_EQ(be->input_device(p.inputs.size()), 0u);
      for (size_t i = 0; i < p.inputs.size(); ++i) EXPECT_NE(be->input_device(i), 0u) << i;
      auto expect_ref = [&](Io& io, uint64_t seed) {
        const std::vector<Tensor> want = reference_outputs(p, seed);
        for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(max_abs_diff(io.outs[i], want[i]), 0.0) << i << " " << seed;
      };
      for (uint64_t seed = 100; seed < 104; ++seed) {
        expect_matches_reference(*be, p, seed);  // run(): uploaded before the graph
        Io again = make_io(p, seed);             // fresh NaN outputs, the same inputs on the device
        be->run_device_inputs(again.out_ptrs());
        expect_ref(again, seed);
      }
      for (uint64_t seed = 110; seed < 113; ++seed) {  // written on the device by the caller
        Io io = make_io(p, seed);
        for (size_t i = 0; i < p.inputs.size(); ++i) write_device(be->input_device(i), io.ins[i].raw(), io.ins[i].nbytes());
        be->run_device_inputs(io.out_ptrs());
        expect_ref(io, seed);
      }
      EXPECT_EQ(info->graph_runs, 11 * n);
      be->set_profiling(true);
      expect_matches_reference(*be, p, 120);
      Io io = make_io(p, 120);
      be->run_device_inputs(io.out_ptrs());
      expect_ref(io, 120);
      EXPECT_EQ(info->direct_runs, 2);
      EXPECT_EQ(be->call_times_ms().size(), p.calls.size());
      Io bad = make_io(p, 1);
      std::vector<Tensor*> outs = bad.out_ptrs();
      outs.pop_back();
      EXPECT_THROW(be->run_device_inputs(outs), Error);
    }
  }
}

// Options.cuda_inputs / cuda_outputs (--cuda-inputs / --cuda-outputs mapped): the kernels read
// the inputs, or write the outputs, in their mapped pinned staging: no copy nodes, and every run's
// outputs follow its own inputs (a kernel reading a stale or unmapped buffer, or an output read
// back before its kernel wrote it, would not), in the graph, with replays in flight (nothing to
// overlap) and in the profiled path.
TEST(CudaBackendGpu, MappedInputsAndOutputsNeedNoCopies) {
  SKIP_WITHOUT_CUDA();
  using backend::CudaIo;
  for (const plan::Plan& p : {chain_plan(), two_branch_plan(false), two_branch_plan(true)}) {
    for (int mapped : {1, 2, 3}) {  // inputs, outputs, both
      for (int n : {1, 3}) {
        SCOPED_TRACE(std::to_string(mapped) + ", " + std::to_string(n) + " in flight");
        backend::Options o;
        o.cuda_inputs = mapped & 1 ? CudaIo::Mapped : CudaIo::Copy;
        o.cuda_outputs = mapped & 2 ? CudaIo::Mapped : CudaIo::Copy;
        o.cuda_inflight = n;
        auto be = backend::create("cuda", o);
        be->load(p);
        const backend::CudaLoadInfo* info = backend::cuda_load_info(*be);
        ASSERT_NE(info, nullptr);
        const int ins = mapped & 1 ? int(p.inputs.size()) : 0, outs = mapped & 2 ? int(p.outputs.size()) : 0;
        EXPECT_EQ(info->mapped_inputs, ins);
        EXPECT_EQ(info->mapped_outputs, outs);
        EXPECT_EQ(info->overlapped_uploads, n > 1 && ins == 0);
        EXPECT_EQ(info->graph_nodes, 8 - ins - outs);
        for (uint64_t seed = 80; seed < 86; ++seed) expect_matches_reference(*be, p, seed);
        EXPECT_EQ(info->graph_runs, 6 * n);
        be->set_profiling(true);
        expect_matches_reference(*be, p, 87);
        EXPECT_EQ(info->direct_runs, 1);
        EXPECT_EQ(be->call_times_ms().size(), p.calls.size());
      }
    }
  }
}

// CudaIo::Auto maps an input that one element-wise call reads once (not one read twice or as a
// broadcast operand) and an output no call reads (not one a later call reads).
TEST(CudaGraphDeps, AutoMapsWhatThePlanReadsOnce) {
  using backend::CudaIo;
  using backend::cuda::mapped_io;
  plan::Plan p = chain_plan();  // a and b each read once by a Sub; y and z never read
  for (int b : p.inputs) EXPECT_TRUE(mapped_io(p, b, CudaIo::Auto)) << b;
  for (int b : p.outputs) EXPECT_TRUE(mapped_io(p, b, CudaIo::Auto)) << b;
  for (int b : p.inputs) EXPECT_FALSE(mapped_io(p, b, CudaIo::Copy)) << b;
  EXPECT_TRUE(mapped_io(p, p.inputs[0], CudaIo::Mapped));
  p.calls[3].inputs = {p.inputs[0]};  // z = a: a read twice
  EXPECT_FALSE(mapped_io(p, p.inputs[0], CudaIo::Auto));
  EXPECT_TRUE(mapped_io(p, p.inputs[1], CudaIo::Auto));
  p = chain_plan();
  p.calls[3].inputs = {p.outputs[0]};  // z = y: y read by a call
  p.calls[3].kernel = p.calls[1].kernel;
  EXPECT_FALSE(mapped_io(p, p.outputs[0], CudaIo::Auto));
  EXPECT_TRUE(mapped_io(p, p.outputs[1], CudaIo::Auto));
  p = chain_plan();
  p.kernels[size_t(p.calls[0].kernel)].op = OpKind::Conv;  // a read by a kernel that may read it many times
  EXPECT_FALSE(mapped_io(p, p.inputs[0], CudaIo::Auto));
  p = chain_plan();
  p.kernels[size_t(p.calls[0].kernel)].post_ops.push_back({OpKind::Add, 0.f, 0.f, 0, false});  // a as a post-op operand
  EXPECT_FALSE(mapped_io(p, p.inputs[0], CudaIo::Auto));
}

// Backend::input_staging: inputs written in place into the pinned staging (copied or mapped) are
// what a run with views of that memory reads, run after run with new values; the reference
// backend has no such memory.
TEST(CudaBackendGpu, InputsWrittenInPlaceInTheStaging) {
  SKIP_WITHOUT_CUDA();
  const plan::Plan p = two_branch_plan(true);
  EXPECT_EQ(backend::create("reference")->input_staging(0), nullptr);
  for (bool mapped : {false, true}) {
    SCOPED_TRACE(mapped ? "mapped" : "copied");
    backend::Options o;
    o.cuda_inputs = mapped ? backend::CudaIo::Mapped : backend::CudaIo::Copy;
    auto be = backend::create("cuda", o);
    EXPECT_EQ(be->input_staging(0), nullptr) << "before load";
    be->load(p);
    EXPECT_EQ(be->input_staging(p.inputs.size()), nullptr);
    for (uint64_t seed = 90; seed < 94; ++seed) {
      Io io = make_io(p, seed);
      std::vector<Tensor> views;
      for (size_t i = 0; i < p.inputs.size(); ++i) {
        void* at = be->input_staging(i);
        ASSERT_NE(at, nullptr);
        views.push_back(Tensor::view(io.ins[i].dtype(), io.ins[i].shape(), at));
        std::memcpy(at, io.ins[i].raw(), io.ins[i].nbytes());
      }
      std::vector<const Tensor*> in;
      for (const Tensor& t : views) in.push_back(&t);
      be->run(in, io.out_ptrs());
      const std::vector<Tensor> want = reference_outputs(p, seed);
      for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(max_abs_diff(io.outs[i], want[i]), 0.0) << i << " " << seed;
    }
  }
}

TEST(CudaBackendGpu, ProfilingGivesOneTimePerCall) {
  SKIP_WITHOUT_CUDA();
  const plan::Plan p = chain_plan();
  auto be = backend::create("cuda");
  be->load(p);
  be->set_profiling(true);
  expect_matches_reference(*be, p, 5);
  const std::vector<double> ms = be->call_times_ms();
  ASSERT_EQ(ms.size(), p.calls.size());
  double total = 0;
  for (double t : ms) {
    EXPECT_GE(t, 0.0);
    EXPECT_LT(t, 1000.0);
    total += t;
  }
  EXPECT_GT(total, 0.0);
  // Starts from the run's start (before the input copies), in plan order on one stream.
  const std::vector<double> starts = be->call_starts_ms();
  ASSERT_EQ(starts.size(), p.calls.size());
  EXPECT_GE(starts[0], 0.0);
  constexpr double kEventResolutionMs = 0.002;  // cuEventElapsedTime: about 0.5 us
  for (size_t i = 1; i < starts.size(); ++i)
    EXPECT_GE(starts[i], starts[i - 1] + ms[i - 1] - kEventResolutionMs) << i;
  const backend::CudaLoadInfo* info = backend::cuda_load_info(*be);
  EXPECT_EQ(info->direct_runs, 1);
  EXPECT_EQ(info->graph_runs, 0);
  // Off again: back to the graph, same outputs.
  be->set_profiling(false);
  expect_matches_reference(*be, p, 6);
  EXPECT_TRUE(be->call_times_ms().empty());
  EXPECT_TRUE(be->call_starts_ms().empty());
  EXPECT_EQ(info->graph_runs, 1);
  // Profiling switched on before load.
  auto be2 = backend::create("cuda");
  be2->set_profiling(true);
  be2->load(p);
  expect_matches_reference(*be2, p, 7);
  EXPECT_EQ(be2->call_times_ms().size(), p.calls.size());
}

// `bench --replay-prefixes`: the graph cut after each call, one median time per call, and the
// backend's own graph and counters unchanged by it.
TEST(CudaBackendGpu, ReplayPrefixesTimeEveryCutOfTheGraph) {
  SKIP_WITHOUT_CUDA();
  const plan::Plan p = chain_plan();
  auto be = backend::create("cuda");
  EXPECT_THROW(backend::cuda_prefix_times_us(*be, 3), Error);  // before load()
  be->load(p);
  const backend::CudaLoadInfo before = *backend::cuda_load_info(*be);
  EXPECT_THROW(backend::cuda_prefix_times_us(*be, 0), Error);
  const std::vector<double> us = backend::cuda_prefix_times_us(*be, 3);
  ASSERT_EQ(us.size(), p.calls.size());
  for (double t : us) {
    EXPECT_GT(t, 0.0);
    EXPECT_LT(t, 1e7);
  }
  const backend::CudaLoadInfo* after = backend::cuda_load_info(*be);
  EXPECT_EQ(after->pdl_edges, before.pdl_edges);
  EXPECT_EQ(after->graph_runs, before.graph_runs);
  expect_matches_reference(*be, p, 8);  // the inference's own graph still runs
  auto ref = backend::create("reference");
  EXPECT_THROW(backend::cuda_prefix_times_us(*ref, 3), Error);
}

TEST(CudaBackendGpu, SpinWaitReloadAndTwoBackends) {
  SKIP_WITHOUT_CUDA();
  const plan::Plan p = chain_plan();
  backend::Options o;
  o.spin_wait = true;
  o.device = "0";
  auto a = backend::create("cuda", o);
  auto b = backend::create("cuda");
  a->load(p);
  b->load(p);
  expect_matches_reference(*a, p, 11);
  expect_matches_reference(*b, p, 12);
  a->load(p);  // re-load drops the previous plan's objects
  expect_matches_reference(*a, p, 13);
  b.reset();  // one backend's teardown leaves the other (same primary context) working
  expect_matches_reference(*a, p, 14);
}

TEST(CudaBackendGpu, RefusesWhatItCannotRun) {
  SKIP_WITHOUT_CUDA();
  auto be = backend::create("cuda");
  {  // a kernel that is not PTX
    plan::Plan p = chain_plan();
    p.kernels[1].options = "cuda-c++";
    const backend::Support s = be->supports_call(p, 1);
    EXPECT_FALSE(s);
    EXPECT_EQ(s.why,
              "call 1 (u) kernel 'copy_f32_40x25' has options 'cuda-c++', not 'ptx': the cuda backend loads only PTX "
              "(run the plan pass nvrtc; cuda_abi.h)");
    EXPECT_TRUE(be->supports_call(p, 0));
    EXPECT_EQ(error_of([&] { be->load(p); }), "cuda backend: " + s.why);
  }
  {  // no source: no host fallback on this target
    plan::Plan p = chain_plan();
    p.kernels[0].source.clear();
    EXPECT_EQ(backend::supports(*be, p).why,
              "call 0 (t) kernel 'sub_f32_1000' has no source; target cuda has no host fallback (cuda_abi.h)");
  }
  {  // a block larger than the device allows
    plan::Plan p = chain_plan();
    p.calls[2].local = {4096, 0, 0};
    const backend::Support s = be->supports_call(p, 2);
    EXPECT_FALSE(s);
    EXPECT_NE(s.why.find("has blocks of 4096x1x1 = 4096 threads"), std::string::npos) << s.why;
  }
  {  // a layout other than Linear and NHWC
    plan::Plan p = chain_plan();
    p.buffers[size_t(p.calls[0].outputs[0])].layout = Layout::ImageRGBA;
    const backend::Support s = backend::supports(*be, p);
    EXPECT_FALSE(s);
    EXPECT_NE(s.why.find("the cuda backend stores only linear, nhwc"), std::string::npos) << s.why;
  }
  {  // an NHWC plan Output (the caller's tensors are Linear)
    plan::Plan p = chain_plan();
    p.buffers[size_t(p.outputs[0])].layout = Layout::NHWC;
    const backend::Support s = be->supports_buffer(p, p.outputs[0]);
    EXPECT_FALSE(s);
    EXPECT_NE(s.why.find("copies inputs and outputs as Linear tensors"), std::string::npos) << s.why;
  }
  {  // an intermediate outside the arena
    plan::Plan p = chain_plan();
    p.arena_bytes = 64;
    EXPECT_NE(backend::supports(*be, p).why.find("intermediate 't' at arena offset 0"), std::string::npos);
  }
  {  // another target's plan
    plan::Plan p = chain_plan();
    p.target = "opencl";
    EXPECT_FALSE(backend::supports(*be, p));
  }
}

TEST(CudaBackendGpu, LoadErrorsNameTheKernel) {
  SKIP_WITHOUT_CUDA();
  auto be = backend::create("cuda");
  {  // PTX the JIT rejects: the message quotes its log
    plan::Plan p = chain_plan();
    p.kernels[1].source = std::string(kPtxHeader) + ".visible .entry copy_f32_40x25(.param .u64 y)\n{\n  bogus;\n}\n";
    const std::string e = error_of([&] { be->load(p); });
    EXPECT_EQ(e.rfind("cuda backend: cuModuleLoadDataEx failed: ", 0), 0u) << e;
    EXPECT_NE(e.find("kernel 'copy_f32_40x25'"), std::string::npos) << e;
    std::printf("bad PTX: %s\n", e.c_str());
  }
  {  // an entry the module does not have
    plan::Plan p = chain_plan();
    p.kernels[1].entry = "no_such_entry";
    const std::string e = error_of([&] { be->load(p); });
    EXPECT_EQ(e.rfind("cuda backend: cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND", 0), 0u) << e;
    EXPECT_NE(e.find("entry 'no_such_entry'"), std::string::npos) << e;
  }
  {  // a call binding fewer pointers than the kernel takes (where the driver can tell)
    plan::Plan p = chain_plan();
    p.calls[2].inputs = {p.calls[2].inputs[0]};
    const std::string e = error_of([&] { be->load(p); });
    if (!e.empty())
      EXPECT_EQ(e, "cuda backend: call 2 (y): kernel 'sub_f32_1000' takes 3 parameters, the call binds 2 (outputs "
                   "then present inputs, cuda_abi.h)");
    else
      std::printf("the driver cannot list kernel parameters (no cuFuncGetParamInfo): not checked\n");
  }
  // After failed loads the backend loads and runs a good plan.
  const plan::Plan p = chain_plan();
  be->load(p);
  expect_matches_reference(*be, p, 21);
}

// Dynamic shared memory (cuda_abi.h, kernel attr cuda_smem): 100 KB, beyond the 48 KB a launch
// gets without cuFuncSetAttribute, for the sub kernel (calls 0 and 2); the graph's kernel nodes
// and, while profiling, the direct launches both give the reference's outputs.
TEST(CudaBackendGpu, DynamicSharedMemoryReachesEveryLaunch) {
  SKIP_WITHOUT_CUDA();
  constexpr int64_t kSmem = 100 * 1024;
  plan::Plan p = chain_plan();
  p.kernels[0].source = ptx_sub_dsmem(kN, kSmem);
  p.kernels[0].attrs.set("cuda_smem", kSmem);
  auto be = backend::create("cuda");
  ASSERT_TRUE(backend::supports(*be, p)) << backend::supports(*be, p).why;
  be->load(p);
  expect_matches_reference(*be, p, 81);
  expect_matches_reference(*be, p, 82);
  EXPECT_EQ(backend::cuda_load_info(*be)->graph_runs, 2);
  be->set_profiling(true);
  expect_matches_reference(*be, p, 83);
  EXPECT_EQ(backend::cuda_load_info(*be)->direct_runs, 1);
}

// A corrupt or hostile cuda_smem (an .opv is input) is refused naming the call and the kernel, a
// size no device has fails cuFuncSetAttribute naming the kernel; the backend loads a good plan after.
TEST(CudaBackendGpu, HostileDynamicSharedMemoryIsAClearError) {
  SKIP_WITHOUT_CUDA();
  auto be = backend::create("cuda");
  for (const int64_t bytes :
       {int64_t(-5), int64_t(1) << 40, (int64_t(1) << 20) + 1, std::numeric_limits<int64_t>::min()}) {
    plan::Plan p = chain_plan();
    p.kernels[0].attrs.set("cuda_smem", bytes);
    const std::string e = error_of([&] { be->load(p); });
    EXPECT_EQ(e, "cuda backend: call 0 (t) kernel 'sub_f32_1000' asks for " + std::to_string(bytes) +
                     " bytes of dynamic shared memory (attr cuda_smem); 0 to 1048576 (cuda_abi.h)");
  }
  {
    plan::Plan p = chain_plan();
    p.kernels[0].attrs.set("cuda_smem", std::string("lots"));
    EXPECT_EQ(error_of([&] { be->load(p); }),
              "cuda backend: call 0 (t) kernel 'sub_f32_1000' has a non-integer attr cuda_smem (bytes of dynamic "
              "shared memory)");
  }
  {  // within the bound, beyond every device's limit per block (227 KB on sm_90)
    plan::Plan p = chain_plan();
    p.kernels[0].attrs.set("cuda_smem", int64_t(1) << 20);
    const std::string e = error_of([&] { be->load(p); });
    EXPECT_EQ(e.rfind("cuda backend: cuFuncSetAttribute failed: CUDA_ERROR_INVALID_VALUE", 0), 0u) << e;
    EXPECT_NE(e.find("kernel 'sub_f32_1000': 1048576 bytes of dynamic shared memory (attr cuda_smem)"),
              std::string::npos)
        << e;
  }
  const plan::Plan p = chain_plan();
  be->load(p);
  expect_matches_reference(*be, p, 84);
}

TEST(CudaBackendGpu, RunChecksItsTensors) {
  SKIP_WITHOUT_CUDA();
  const plan::Plan p = chain_plan();
  auto be = backend::create("cuda");
  Io io = make_io(p, 1);
  EXPECT_EQ(error_of([&] { be->run(io.in_ptrs(), io.out_ptrs()); }), "cuda backend: run() before load()");
  be->load(p);
  io.ins[1] = Tensor(DType::F32, {kH, kW + 1});
  EXPECT_EQ(error_of([&] { be->run(io.in_ptrs(), io.out_ptrs()); }),
            "input 'b' must be f32[25,40], got f32[25,41] (the shape differs)");
  expect_matches_reference(*be, p, 31);  // still fine afterwards
}

#endif  // OPV_HAVE_CUDA

}  // namespace
}  // namespace opv
