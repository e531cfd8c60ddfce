// Hostile-input helpers of src/core (issue 13): checked size arithmetic, the per-tensor limits,
// whole-file reading of regular files only, checked atomic writes, and metrics that do not let
// non-finite references pass.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>

#include "core/file_io.h"
#include "core/limits.h"
#include "core/metrics.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "test_util.h"

namespace opv {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

#define EXPECT_HAS(hay, needle) EXPECT_NE((hay).find(needle), std::string::npos) << (hay)

TEST(CheckedArithmetic, OverflowThrowsInsteadOfWrapping) {
  EXPECT_EQ(checked_add(2, 3), 5);
  EXPECT_EQ(checked_sub(-2, 3), -5);
  EXPECT_EQ(checked_mul(int64_t(1) << 31, int64_t(1) << 31), int64_t(1) << 62);
  EXPECT_HAS(error_of([] { checked_add(INT64_MAX, 1, "pads"); }), "pads: integer overflow");
  EXPECT_HAS(error_of([] { checked_sub(INT64_MIN, 1); }), "integer overflow");
  EXPECT_HAS(error_of([] { checked_mul(int64_t(1) << 40, int64_t(1) << 40); }), "integer overflow");
  EXPECT_EQ(checked_numel({2, 3, 4}), 24);
  EXPECT_HAS(error_of([] { checked_numel({int64_t(1) << 32, int64_t(1) << 32}); }), "too many elements");
  EXPECT_HAS(error_of([] { checked_numel({2, -1}); }), "negative dim");
}

// A float tensor read as int64 (shape and index operands) converts as float_to_i64 (core/dtype.h):
// NaN and +-Inf read 0, finite values beyond int64 saturate, where the plain cast is undefined.
TEST(CheckedArithmetic, FloatReadAsInt64Saturates) {
  Tensor t = Tensor::from_f32({7}, {NAN, INFINITY, -INFINITY, 1e30f, -1e30f, -2.75f, 3.5f});
  const std::vector<int64_t> want{0, 0, 0, INT64_MAX, INT64_MIN, -2, 3};
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.get_i64(i), want[size_t(i)]) << i;
}

TEST(Limits, DefaultsRefuseABillionElements) {
  EXPECT_EQ(error_of([] { check_tensor_limits(DType::F32, {1, 12, 128, 256}, "x"); }), "<no error>");
  EXPECT_HAS(error_of([] { check_tensor_limits(DType::F32, {1000, 1000, 1000}, "x"); }),
             "x: tensor f32[1000,1000,1000] has more than 268435456 elements");
  // Under the element limit but over the byte limit.
  EXPECT_HAS(error_of([] { check_tensor_limits(DType::F64, {int64_t(1) << 28}, "y"); }), "bytes");
  EXPECT_HAS(error_of([] { check_tensor_limits(DType::U8, {INT64_MAX, INT64_MAX}, "z"); }), "more than");
  Limits small;
  small.max_tensor_elems = 10;
  EXPECT_HAS(error_of([&] { check_tensor_limits(DType::U8, {11}, "w", small); }), "more than 10 elements");
  // An empty tensor is still refused for a dim above the element limit (kernels tabulate dims).
  EXPECT_EQ(error_of([&] { check_tensor_limits(DType::U8, {0, 10}, "e", small); }), "<no error>");
  EXPECT_HAS(error_of([&] { check_tensor_limits(DType::U8, {0, 11}, "e", small); }),
             "e: tensor u8[0,11] has a dim of 11, more than the per-tensor limit of 10 elements");
  EXPECT_HAS(error_of([] { check_tensor_limits(DType::F32, {0, int64_t(1) << 40}, "e"); }), "has a dim of");
}

TEST(FileIo, ReadsOnlyRegularFilesWithoutBlocking) {
  const std::string dir = test::temp_dir();
  EXPECT_HAS(error_of([] { read_file_bytes("/dev/zero", "model"); }),
             "cannot read model '/dev/zero': it is a character device, not a regular file");
  EXPECT_HAS(error_of([&] { read_file_bytes(dir, "model"); }), "it is a directory");
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_HAS(error_of([&] { read_file_bytes(fifo, ".npy file"); }), "it is a FIFO");  // must not hang
  EXPECT_HAS(error_of([&] { read_file_bytes(dir + "/missing", "artifact"); }),
             "cannot open artifact '" + dir + "/missing': No such file or directory");
  const std::string f = dir + "/data";
  std::ofstream(f, std::ios::binary) << "0123456789";
  EXPECT_EQ(read_file_string(f), "0123456789");
  EXPECT_HAS(error_of([&] { read_file_bytes(f, "file", 9); }), "10 bytes is more than the limit of 9 bytes");
  std::filesystem::remove_all(dir);
}

TEST(FileIo, AtomicWriteIsCheckedAndLeavesNoTemporaries) {
  namespace fs = std::filesystem;
  const std::string dir = test::temp_dir();
  const std::string out = dir + "/out.bin";
  write_file_atomic(out, std::string("hello"));
  EXPECT_EQ(read_file_string(out), "hello");
  write_file_atomic(out, std::string("replaced"));
  EXPECT_EQ(read_file_string(out), "replaced");
  // A planted symlink at the final name is replaced, its target left alone.
  const std::string victim = dir + "/victim";
  std::ofstream(victim) << "keep";
  const std::string link = dir + "/link.bin";
  fs::create_symlink(victim, link);
  write_file_atomic(link, std::string("new"));
  EXPECT_EQ(read_file_string(victim), "keep");
  EXPECT_FALSE(fs::is_symlink(link));
  EXPECT_EQ(read_file_string(link), "new");
  // A full device fails with the errno reason; a missing folder and a directory target fail too.
  EXPECT_HAS(error_of([] { write_file_atomic("/dev/full", std::string("x"), "output"); }),
             "cannot write output '/dev/full': No space left on device");
  EXPECT_HAS(error_of([&] { write_file_atomic(dir + "/nope/out.bin", std::string("x")); }),
             "No such file or directory");
  EXPECT_HAS(error_of([&] { write_file_atomic(dir, std::string("x")); }), "it is a directory");
  // Nothing but the files written above is left in the folder.
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
    ++n;
  }
  EXPECT_EQ(n, 3);
  fs::remove_all(dir);
}

TEST(Metrics, NonFiniteElementsMustMatchExactly) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  auto t = [](std::vector<float> v) {
    Tensor x(DType::F32, {int64_t(v.size())});
    for (size_t i = 0; i < v.size(); ++i) x.data<float>()[i] = v[i];
    return x;
  };
  ErrorMetrics m = compare(t({1, 2, 3}), t({nan, nan, nan}));  // all-NaN reference
  EXPECT_FALSE(m.finite);
  EXPECT_EQ(m.ref_nonfinite, 3);
  EXPECT_TRUE(std::isinf(m.rel_l2));
  m = compare(t({1, inf, 3}), t({1, 2, 3}));  // non-finite output
  EXPECT_FALSE(m.finite);
  EXPECT_EQ(m.ref_nonfinite, 0);
  m = compare(t({1, -inf, 3}), t({1, inf, 3}));  // opposite infinities
  EXPECT_FALSE(m.finite);
  m = compare(t({1, nan, inf}), t({1, nan, inf}));  // identical non-finite positions
  EXPECT_TRUE(m.finite);
  EXPECT_EQ(m.ref_nonfinite, 2);
  EXPECT_EQ(m.rel_l2, 0.0);
}

}  // namespace
}  // namespace opv
