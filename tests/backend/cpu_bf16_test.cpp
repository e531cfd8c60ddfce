// Options::cpu_bf16 (--cpu-precision bf16): dense convolutions over >= 128 input channels run
// with bf16 inputs and weights and fp32 accumulation where oneDNN has a native bf16 kernel; the
// rest stays fp32. Checked against the reference kernels within the bf16 tolerance (1e-2), with
// post-ops and both activation layouts; skipped where the CPU has no native bf16 kernel.
#include <gtest/gtest.h>

#include <tuple>

#include "cpu_test_plan.h"

namespace opv::test {
namespace {

Attrs conv_attrs(int64_t k, int64_t s) {
  Attrs a;
  a.set("group", int64_t(1));
  a.set("strides", std::vector<int64_t>{s, s});
  a.set("pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
  a.set("dilations", std::vector<int64_t>{1, 1});
  return a;
}

int bf16_calls(const OneCallResult& r) {
  int n = 0;
  for (const backend::CallPath& p : r.paths) n += p.why.rfind("bf16", 0) == 0;
  return n;
}

void expect_within(const OneCallResult& r, double tol, const std::string& what) {
  ErrorMetrics m = compare(r.cpu[0], r.ref[0]);
  EXPECT_TRUE(m.finite) << what;
  EXPECT_LE(m.rel_l2, tol) << what;
  EXPECT_LE(m.max_abs_rel, tol) << what;
}

TEST(CpuBf16, DenseConvsRunInBf16WithinTolerance) {
  struct Case {
    int64_t C, M, k, s, H, W;
  };
  // 1x1 (fc1/fc2-like) and 3x3 stride 2, over 128..256 input channels.
  const Case cases[] = {{160, 96, 1, 1, 12, 20}, {256, 64, 1, 1, 8, 8}, {128, 32, 3, 2, 10, 14}};
  int ran_bf16 = 0;
  for (const Case& c : cases)
    for (int post_kind = 0; post_kind < 2; ++post_kind)
      for (bool nhwc : {false, true}) {
        const Attrs a = conv_attrs(c.k, c.s);
        Tensor x = rnd({1, c.C, c.H, c.W}, 1 + c.C), w = rnd({c.M, c.C, c.k, c.k}, 2 + c.M, -0.2f, 0.2f);
        std::vector<Arg> args{in(x), cst(w), cst(rnd({c.M}, 3))};
        auto outs = infer_outs(OpKind::Conv, a, args, {ValueInfo{}});
        std::vector<PostOp> post;
        if (post_kind == 0) post = {unary_po(OpKind::Gelu)};
        if (post_kind == 1) {
          args.push_back(in(rnd(outs[0].shape, 4)));
          post = {binary_po(OpKind::Add, 3)};  // a residual, like fc2
        }
        const std::string what = "conv C" + std::to_string(c.C) + " M" + std::to_string(c.M) + " k" +
                                 std::to_string(c.k) + (nhwc ? " [nhwc]" : "") + " " + post_ops_str(post);
        const OneCallResult b = run_one_call(OpKind::Conv, a, post, args, outs, 2, nhwc, /*bf16=*/true);
        expect_within(b, 1e-2, what);
        if (bf16_calls(b) == 0) continue;
        ++ran_bf16;
        // bf16 is really used: the result is not the fp32 one, and is further from the reference.
        const OneCallResult f = run_one_call(OpKind::Conv, a, post, args, outs, 2, nhwc, /*bf16=*/false);
        EXPECT_EQ(bf16_calls(f), 0) << what;
        EXPECT_FALSE(bit_equal(b.cpu[0], f.cpu[0])) << what;
        EXPECT_GT(compare(b.cpu[0], b.ref[0]).rel_l2, compare(f.cpu[0], f.ref[0]).rel_l2) << what;
      }
  if (ran_bf16 == 0) GTEST_SKIP() << "oneDNN has no native bf16 convolution on this CPU (AMX / AVX512-BF16)";
}

TEST(CpuBf16, SmallReductionsAndDepthwiseStayFp32) {
  // 1x1 over 64 channels, a 24-channel 3x3 stem (216 products per output, but few channels) and a
  // depthwise 7x7: bit-identical to fp32.
  for (const auto& [C, k, s] : {std::tuple<int64_t, int64_t, int64_t>{64, 1, 1}, {24, 3, 2}}) {
    const Attrs a = conv_attrs(k, s);
    std::vector<Arg> args{in(rnd({1, C, 8, 12}, 5)), cst(rnd({32, C, k, k}, 6)), cst(rnd({32}, 7))};
    auto outs = infer_outs(OpKind::Conv, a, args, {ValueInfo{}});
    const OneCallResult b = run_one_call(OpKind::Conv, a, {}, args, outs, 1, true, true);
    const OneCallResult f = run_one_call(OpKind::Conv, a, {}, args, outs, 1, true, false);
    EXPECT_EQ(bf16_calls(b), 0) << "C" << C;
    EXPECT_TRUE(bit_equal(b.cpu[0], f.cpu[0])) << "C" << C;
  }
  {
    Attrs a = conv_attrs(7, 1);
    a.set("group", int64_t(32));
    std::vector<Arg> args{in(rnd({1, 32, 9, 9}, 8)), cst(rnd({32, 1, 7, 7}, 9)), cst(rnd({32}, 10))};
    auto outs = infer_outs(OpKind::Conv, a, args, {ValueInfo{}});
    const OneCallResult b = run_one_call(OpKind::Conv, a, {}, args, outs, 1, true, true);
    const OneCallResult f = run_one_call(OpKind::Conv, a, {}, args, outs, 1, true, false);
    EXPECT_EQ(bf16_calls(b), 0);
    EXPECT_TRUE(bit_equal(b.cpu[0], f.cpu[0]));
    expect_close(b, "depthwise 7x7 with bf16 requested");
  }
}

}  // namespace
}  // namespace opv::test
