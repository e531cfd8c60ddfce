// Hostile inputs at the CLI's own readers (issue 13): range-checked integer options, .npz
// members whose header or declared size is checked before they are inflated, and non-regular
// files given as arrays.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "test_util.h"
#include "tools/args.h"
#include "tools/npy.h"

namespace opv::tools {
namespace {

#define EXPECT_HAS(hay, needle) EXPECT_NE(std::string(hay).find(needle), std::string::npos) << (hay)

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(HostileArgs, IntegerOptionsAreRangeChecked) {
  ArgParser p("opvision run", "Runs a model.", "MODEL [options]");
  p.positional("MODEL", "the model").option("--threads", "N", "CPU threads", "0").option("--widths", "L", "w", "");
  EXPECT_EQ(p.parse({"m", "--threads", "4"}).get_int("--threads", 0, 0, 1024), 4);
  EXPECT_EQ(p.parse({"m"}).get_int("--threads", 0, 0, 1024), 0);
  // 2^32 + 1 used to wrap to 1 through an int cast.
  std::string e = error_of([&] { p.parse({"m", "--threads", "4294967297"}).get_int("--threads", 0, 0, 1024); });
  EXPECT_HAS(e, "option --threads: '4294967297' is not an integer in [0, 1024]");
  EXPECT_THROW(p.parse({"m", "--threads", "-1"}).get_int("--threads", 0, 0, 1024), UsageError);
  EXPECT_THROW(p.parse({"m", "--widths", "1,2,-3"}).get_ints("--widths", {}, 1, 100), UsageError);
  EXPECT_EQ(p.parse({"m", "--widths", "1,2,3"}).get_ints("--widths", {}, 1, 100), (std::vector<int64_t>{1, 2, 3}));
}

TEST(HostileNpy, NonRegularFilesAreRefused) {
  const std::string dir = test::temp_dir();
  EXPECT_HAS(error_of([&] { read_npy(dir); }), "it is a directory");
  EXPECT_HAS(error_of([&] { read_npz(dir); }), "it is a directory");
  EXPECT_HAS(error_of([] { read_npy("/dev/zero"); }), "character device");
  const std::string fifo = dir + "/f.npz";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_HAS(error_of([&] { read_npz(fifo); }), "it is a FIFO");  // must not block
  std::filesystem::remove_all(dir);
}

TEST(HostileNpy, NpzMembersAreCheckedBeforeInflating) {
  if (std::system("python3 -c 'import zipfile, zlib' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  const std::string dir = test::temp_dir();
  const std::string script = dir + "/make.py";
  // (1) a 64-byte array followed by 64 MiB of zeros, deflated to a few KB; (2) a header within
  // the file's size but over the per-tensor element limit (289e6 u8), deflated.
  std::ofstream(script) << "import zipfile, sys\n"
                           "d = sys.argv[1]\n"
                           "def npy(descr, shape, nbytes):\n"
                           "    h = \"{'descr': '%s', 'fortran_order': False, 'shape': %s, }\" % (descr, shape)\n"
                           "    h += ' ' * ((64 - (10 + len(h) + 1) % 64) % 64) + '\\n'\n"
                           "    return b'\\x93NUMPY\\x01\\x00' + len(h).to_bytes(2, 'little') + h.encode() + bytes(nbytes)\n"
                           "with zipfile.ZipFile(d + '/bomb.npz', 'w', zipfile.ZIP_DEFLATED) as z:\n"
                           "    z.writestr('x.npy', npy('<f4', '(16,)', 64 + (64 << 20)))\n"
                           "with zipfile.ZipFile(d + '/big.npz', 'w', zipfile.ZIP_DEFLATED) as z:\n"
                           "    z.writestr('y.npy', npy('|u1', '(17000, 17000)', 17000 * 17000))\n";
  ASSERT_EQ(std::system(("python3 " + script + " " + dir).c_str()), 0);
  ASSERT_LT(std::filesystem::file_size(dir + "/bomb.npz"), uint64_t(1) << 20);
  auto t0 = std::chrono::steady_clock::now();
  std::string e = error_of([&] { read_npz(dir + "/bomb.npz"); });
  EXPECT_HAS(e, "bomb.npz:x.npy: data size");
  EXPECT_HAS(e, "does not match shape [16]");
  e = error_of([&] { read_npz(dir + "/big.npz"); });
  EXPECT_HAS(e, "big.npz:y.npy: tensor u8[17000,17000] has more than 268435456 elements");
  // Refused from the header: no inflation of the ~350 MB the two members declare.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace opv::tools
