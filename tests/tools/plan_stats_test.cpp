// Tests of the `opvision inspect` statistics (src/tools/plan_stats.cpp) on a hand-built plan
// whose FLOPs and bytes are worked out by hand below.
#include <gtest/gtest.h>

#include "tools/plan_stats.h"

namespace opv::tools {
namespace {

int add(plan::Plan& p, const char* name, Shape shape, plan::BufferKind kind, DType dt = DType::F32) {
  plan::Buffer b;
  b.name = name;
  b.shape = std::move(shape);
  b.kind = kind;
  b.dtype = dt;
  return p.add_buffer(b);
}

void call(plan::Plan& p, OpKind op, std::vector<int> in, std::vector<int> out, Attrs attrs = {},
          std::vector<PostOp> post = {}) {
  plan::Kernel k;
  k.name = std::string(op_name(op)) + "_k";
  k.op = op;
  k.attrs = std::move(attrs);
  k.post_ops = std::move(post);
  plan::Call c;
  c.kernel = p.add_kernel(k);
  c.inputs = std::move(in);
  c.outputs = std::move(out);
  p.calls.push_back(c);
}

TEST(PlanStats, FlopsAndBytesByHand) {
  using K = plan::BufferKind;
  plan::Plan p;
  p.target = "reference";
  int x = add(p, "x", {1, 4, 8, 8}, K::Input);                  // 256 elems, 1024 B
  int w = add(p, "w", {6, 2, 3, 3}, K::Constant);               // grouped conv, group 2: C/g = 2
  int y = add(p, "y", {1, 6, 8, 8}, K::Intermediate);           // 384 elems, 1536 B
  int f = add(p, "f", {2, 192}, K::Intermediate);               // reshape of y
  int gw = add(p, "gw", {10, 192}, K::Constant);                // Gemm B, transB
  int gb = add(p, "gb", {10}, K::Constant);
  int g = add(p, "g", {2, 10}, K::Intermediate);
  int mw = add(p, "mw", {3, 10, 5}, K::Constant);               // batched MatMul [3,2,10]x[3,10,5]
  int gm = add(p, "gm", {3, 2, 10}, K::Intermediate);
  int o = add(p, "o", {3, 2, 5}, K::Output);
  p.arena_bytes = 4096;
  p.weights.resize(1000);

  Attrs conv;
  conv.set("group", int64_t(2));
  PostOp relu;
  relu.op = OpKind::Relu;
  PostOp add_bias;
  add_bias.op = OpKind::Add;
  add_bias.input = 2;
  call(p, OpKind::Conv, {x, w, -1}, {y}, conv, {relu});
  call(p, OpKind::Reshape, {y}, {f});
  Attrs gemm;
  gemm.set("transB", int64_t(1));
  call(p, OpKind::Gemm, {f, gw, gb}, {g}, gemm);
  call(p, OpKind::Expand, {g}, {gm});
  call(p, OpKind::MatMul, {gm, mw}, {o}, {}, {add_bias});
  call(p, OpKind::Sigmoid, {o}, {o});

  // Conv: 2 * (1*6*8*8 outputs) * (2*3*3) = 2*384*18 = 13824; its Relu: 384.
  FlopCount c0 = call_flops(p, p.calls[0]);
  EXPECT_EQ(c0.conv, 13824);
  EXPECT_EQ(c0.elementwise, 384);
  EXPECT_EQ(call_flops(p, p.calls[1]).total(), 0);  // Reshape moves no arithmetic
  // Gemm: 2 * 20 outputs * K=192 = 7680, plus the C term 20.
  FlopCount c2 = call_flops(p, p.calls[2]);
  EXPECT_EQ(c2.matmul, 7680);
  EXPECT_EQ(c2.elementwise, 20);
  EXPECT_EQ(call_flops(p, p.calls[3]).total(), 0);  // Expand
  // MatMul: 2 * 30 outputs * K=10 = 600; the fused Add: 30. Sigmoid: 30.
  FlopCount c4 = call_flops(p, p.calls[4]);
  EXPECT_EQ(c4.matmul, 600);
  EXPECT_EQ(c4.elementwise, 30);
  EXPECT_EQ(call_flops(p, p.calls[5]).elementwise, 30);

  PlanStats s = plan_stats(p);
  EXPECT_EQ(s.flops.conv, 13824);
  EXPECT_EQ(s.flops.matmul, 7680 + 600);
  EXPECT_EQ(s.flops.elementwise, 384 + 20 + 30 + 30);
  EXPECT_EQ(s.flops.total(), 13824 + 8280 + 464);
  EXPECT_EQ(s.op_calls.at("Conv"), 1);
  EXPECT_EQ(s.op_calls.size(), 6u);
  EXPECT_EQ(s.kernel_calls.at("Gemm_k"), 1);
  EXPECT_EQ(s.buffers.at(K::Constant).count, 4);
  EXPECT_EQ(s.buffers.at(K::Constant).bytes, 4 * (108 + 1920 + 10 + 150));
  EXPECT_EQ(s.buffers.at(K::Input).bytes, 1024);
  EXPECT_EQ(s.buffers.at(K::Output).bytes, 120);
  EXPECT_EQ(s.weights_bytes, 1000);
  EXPECT_EQ(s.peak_bytes, 1000 + 4096 + 1024 + 120);
  // Bytes moved, in elements*4: conv 256+108+384, reshape 384+384, gemm 384+1920+10+20,
  // expand 20+60, matmul 60+150+30, sigmoid 30+30.
  const int64_t elems = (256 + 108 + 384) + (384 + 384) + (384 + 1920 + 10 + 20) + (20 + 60) + (60 + 150 + 30) +
                        (30 + 30);
  EXPECT_EQ(s.bytes_moved, 4 * elems);
}

TEST(PlanStats, PoolsReductionsAndComposites) {
  using K = plan::BufferKind;
  plan::Plan p;
  int x = add(p, "x", {1, 2, 6, 6}, K::Input);  // 72
  int mp = add(p, "mp", {1, 2, 3, 3}, K::Intermediate);  // 18
  int gp = add(p, "gp", {1, 2, 1, 1}, K::Intermediate);
  int sm = add(p, "sm", {1, 2, 6, 6}, K::Intermediate);
  int ln = add(p, "ln", {1, 2, 6, 6}, K::Output);
  Attrs pool;
  pool.set("kernel", std::vector<int64_t>{2, 2});
  call(p, OpKind::MaxPool, {x}, {mp}, pool);
  call(p, OpKind::GlobalAveragePool, {x}, {gp});
  Attrs axis;
  axis.set("axis", int64_t(3));
  call(p, OpKind::Softmax, {x}, {sm}, axis);
  call(p, OpKind::LayerNorm, {sm}, {ln}, axis);
  call(p, OpKind::Cast, {x}, {sm});
  EXPECT_EQ(call_flops(p, p.calls[0]).other, 18 * 4);  // one per window element
  EXPECT_EQ(call_flops(p, p.calls[1]).other, 72);      // one per input element
  EXPECT_GT(call_flops(p, p.calls[2]).other, 72);      // several per element
  EXPECT_GT(call_flops(p, p.calls[3]).other, 72);
  EXPECT_EQ(call_flops(p, p.calls[4]).total(), 0);     // Cast converts, no arithmetic counted
}


// Merged calls (kernel attr "cl_batch") count their members' work, not only the first member's.
TEST(PlanStats, MergedCallsCountEveryMember) {
  using K = plan::BufferKind;
  plan::Plan p;
  p.target = "cuda";
  int x = add(p, "x", {1, 8, 4, 4}, K::Input, DType::F16);          // 16 pixels
  int w3 = add(p, "w3", {8, 1, 3, 3}, K::Constant, DType::F16);     // depthwise 3x3: 72 weights
  int w7 = add(p, "w7", {8, 1, 7, 7}, K::Constant, DType::F16);     // depthwise 7x7: 392
  int y1 = add(p, "y1", {1, 8, 4, 4}, K::Intermediate, DType::F16);
  int y2 = add(p, "y2", {1, 8, 4, 4}, K::Intermediate, DType::F16);
  int w1 = add(p, "w1", {24, 8, 1, 1}, K::Constant, DType::F16);    // fc1: 192
  int w2 = add(p, "w2", {8, 24, 1, 1}, K::Constant, DType::F16);    // fc2: 192
  int b1 = add(p, "b1", {24}, K::Constant, DType::F16);             // rank 1: not a member conv
  int y3 = add(p, "y3", {1, 8, 4, 4}, K::Intermediate, DType::F16);
  int a = add(p, "a", {1, 16}, K::Intermediate, DType::F16);
  int ga = add(p, "ga", {4, 16}, K::Constant, DType::F16);
  int gb = add(p, "gb", {6, 16}, K::Constant, DType::F16);
  int o1 = add(p, "o1", {1, 4}, K::Output, DType::F16);
  int o2 = add(p, "o2", {1, 6}, K::Output, DType::F16);
  int se = add(p, "se", {1, 8, 4, 4}, K::Intermediate, DType::F16);
  int s1 = add(p, "s1", {2, 8, 1, 1}, K::Constant, DType::F16);
  int s2 = add(p, "s2", {8, 2, 1, 1}, K::Constant, DType::F16);
  PostOp gelu;
  gelu.op = OpKind::Gelu;

  Attrs pair;
  pair.set("cl_batch", int64_t(2));
  pair.set("cuda_dw_pair", int64_t(1));
  call(p, OpKind::Conv, {x, w3, -1, w7, -1}, {y1, y2}, pair);
  Attrs ffn;
  ffn.set("cl_batch", int64_t(2));
  ffn.set("cuda_ffn", int64_t(1));
  call(p, OpKind::Conv, {y2, w1, b1, w2, -1, y1}, {y3}, ffn, {gelu});
  Attrs gemv;  // two Gemms of 16 -> 4 and 16 -> 6 outputs, 3 inputs each; only the second has a ReLU
  gemv.set("cl_batch", int64_t(2));
  gemv.set("transB", int64_t(1));
  gemv.set("cuda_batch_post_ops", std::vector<int64_t>{0, 1});
  call(p, OpKind::Gemm, {a, ga, -1, a, gb, -1}, {o1, o2}, gemv, {PostOp{OpKind::Relu}});
  Attrs sea;
  sea.set("cl_batch", int64_t(4));
  sea.set("cuda_se", int64_t(1));
  call(p, OpKind::ReduceMean, {y3, s1, -1, s2, -1}, {se}, sea);

  // The pair: 2 * 16 pixels * (72 + 392) = 14848, not the first conv's 2 * 128 * 9 = 2304.
  EXPECT_EQ(call_flops(p, p.calls[0]).conv, 14848);
  // The ConvFFN: 2 * 16 * (192 + 192) = 12288 (fc1's alone: 6144); its GELU counted per output.
  FlopCount f = call_flops(p, p.calls[1]);
  EXPECT_EQ(f.conv, 12288);
  EXPECT_EQ(f.elementwise, 128);
  // The GEMVs: 2 * (4 + 6) * 16 = 320 (the first member's alone: 128).
  EXPECT_EQ(call_flops(p, p.calls[2]).matmul, 320);
  EXPECT_EQ(call_flops(p, p.calls[2]).elementwise, 6) << "the second member's ReLU on its 6 outputs";
  // The SE gate: the mean over 128 inputs, 2 * (16 + 16) for its two 1x1s, 128 products.
  FlopCount g = call_flops(p, p.calls[3]);
  EXPECT_EQ(g.other, 128);
  EXPECT_EQ(g.conv, 64);
  EXPECT_EQ(g.elementwise, 128);
  EXPECT_EQ(plan_stats(p).flops.conv, 14848 + 12288 + 64);
}

}  // namespace
}  // namespace opv::tools
