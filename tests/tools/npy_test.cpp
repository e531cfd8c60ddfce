// Tests of .npy/.npz I/O (src/tools/npy.cpp): round trips per dtype, files written by numpy
// (stored and deflated npz, v1 and v2 headers) and read back by numpy, malformed input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "test_util.h"
#include "tools/npy.h"

namespace opv::tools {
namespace {

const DType kAllTypes[] = {DType::F32, DType::F16, DType::F64, DType::I64,
                           DType::I32, DType::I8,  DType::U8,  DType::Bool};

// The value pattern both sides (C++ here, numpy in the scripts below) compute independently:
// v(i) = (7*i mod 23) - 11, bools: v(i) odd, uint8: (7*i mod 23) + 200.
double pattern(DType t, int64_t i) {
  int64_t base = (7 * i) % 23;
  if (t == DType::Bool) return double(base % 2);
  if (t == DType::U8) return double(base + 200);
  return double(base - 11);
}
const char* kPyPattern =
    "def pat(dt, shape):\n"
    "    n = int(np.prod(shape)) if len(shape) else 1\n"
    "    b = (7 * np.arange(n)) % 23\n"
    "    v = (b % 2).astype(bool) if dt == '|b1' else (b + 200 if dt == '|u1' else b - 11)\n"
    "    return np.asarray(v).astype(np.dtype(dt)).reshape(shape)\n";

Tensor make(DType t, const Shape& shape) {
  Tensor x(t, shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.set_f64(i, pattern(t, i));
  return x;
}

void expect_pattern(const Tensor& x, DType t, const Shape& shape, const std::string& what) {
  ASSERT_EQ(x.dtype(), t) << what;
  ASSERT_EQ(x.shape(), shape) << what;
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(x.get_f64(i), pattern(t, i)) << what << " element " << i;
}

bool have_numpy() { return std::system("python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

int run_python(const std::string& dir, const std::string& body) {
  std::string script = dir + "/script.py";
  std::ofstream(script) << "import numpy as np, sys\n" << kPyPattern << body;
  return std::system(("python3 " + script).c_str());
}

std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// An .npy v1 image with the given header text (padded and newline-terminated) and data bytes.
std::vector<uint8_t> npy_with_header(const std::string& dict, size_t data_bytes) {
  std::string h = dict;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string s = std::string("\x93NUMPY\x01\x00", 8);
  s += char(h.size() & 0xff);
  s += char(h.size() >> 8);
  s += h;
  s += std::string(data_bytes, '\0');
  return bytes_of(s);
}

std::string parse_error(const std::vector<uint8_t>& b) {
  try {
    parse_npy(b.data(), b.size(), "test.npy");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Npy, RoundTripEveryDtype) {
  const Shape shapes[] = {{2, 3, 5}, {7}, {}, {0, 4}, {1, 1, 1, 1}};
  for (DType t : kAllTypes) {
    for (const Shape& s : shapes) {
      Tensor x = make(t, s);
      std::vector<uint8_t> b = encode_npy(x);
      EXPECT_EQ(b.size() % 64, size_t(x.nbytes() % 64)) << "header must be padded to 64 bytes";
      Tensor y = parse_npy(b.data(), b.size(), "mem");
      EXPECT_TRUE(bit_equal(x, y)) << dtype_name(t) << shape_str(s);
    }
  }
}

TEST(Npy, NpzRoundTripKeepsNamesAndOrder) {
  std::string dir = test::temp_dir();
  NamedArrays arrays;
  for (DType t : kAllTypes) arrays.emplace_back(std::string("a_") + dtype_name(t), make(t, {3, 4}));
  arrays.emplace_back("scalar", make(DType::F32, {}));
  write_npz(dir + "/x.npz", arrays);
  NamedArrays back = read_npz(dir + "/x.npz");
  ASSERT_EQ(back.size(), arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    EXPECT_EQ(back[i].first, arrays[i].first);
    EXPECT_TRUE(bit_equal(back[i].second, arrays[i].second)) << arrays[i].first;
  }
  // Writing is deterministic (fixed timestamps, stored members).
  write_npz(dir + "/y.npz", arrays);
  std::ifstream fx(dir + "/x.npz", std::ios::binary), fy(dir + "/y.npz", std::ios::binary);
  std::string sx((std::istreambuf_iterator<char>(fx)), {}), sy((std::istreambuf_iterator<char>(fy)), {});
  EXPECT_EQ(sx, sy);
  write_npy(dir + "/z.npy", arrays[0].second);
  EXPECT_TRUE(bit_equal(read_npy(dir + "/z.npy"), arrays[0].second));
}

TEST(Npy, ReadsFilesWrittenByNumpy) {
  if (!have_numpy()) GTEST_SKIP() << "python3 with numpy not available";
  std::string dir = test::temp_dir();
  int rc = run_python(dir,
                      "d = sys.argv[0].rsplit('/', 1)[0]\n"
                      "dts = ['<f4', '<f2', '<f8', '<i8', '<i4', '|i1', '|u1', '|b1']\n"
                      "arrs = {'k%d' % i: pat(dt, (2, 3, 4)) for i, dt in enumerate(dts)}\n"
                      "arrs['scalar'] = pat('<f8', ())\n"
                      "arrs['vec'] = pat('<i4', (5,))\n"
                      "np.savez(d + '/stored.npz', **arrs)\n"
                      "np.savez_compressed(d + '/deflated.npz', **arrs)\n"
                      "np.save(d + '/one.npy', pat('<f2', (3, 7)))\n"
                      "with open(d + '/v2.npy', 'wb') as f:\n"
                      "    np.lib.format.write_array(f, pat('<f4', (4, 2)), version=(2, 0))\n"
                      "np.save(d + '/fortran.npy', np.asfortranarray(pat('<f4', (3, 2))))\n"
                      "np.save(d + '/bigendian.npy', pat('<f4', (3,)).astype('>f4'))\n");
  ASSERT_EQ(rc, 0);
  const DType dts[] = {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32, DType::I8, DType::U8, DType::Bool};
  for (const char* file : {"stored.npz", "deflated.npz"}) {
    NamedArrays a = read_npz(dir + "/" + file);
    ASSERT_EQ(a.size(), 10u) << file;
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(a[i].first, "k" + std::to_string(i));
      expect_pattern(a[i].second, dts[i], {2, 3, 4}, std::string(file) + ":" + a[i].first);
    }
    EXPECT_EQ(a[8].first, "scalar");
    expect_pattern(a[8].second, DType::F64, {}, "scalar");
    expect_pattern(a[9].second, DType::I32, {5}, "vec");
  }
  expect_pattern(read_npy(dir + "/one.npy"), DType::F16, {3, 7}, "one.npy");
  expect_pattern(read_npy(dir + "/v2.npy"), DType::F32, {4, 2}, "v2.npy");
  try {
    read_npy(dir + "/fortran.npy");
    ADD_FAILURE() << "fortran order accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Fortran"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fortran.npy"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_npy(dir + "/bigendian.npy"), Error);
}

TEST(Npy, NumpyReadsOurFiles) {
  if (!have_numpy()) GTEST_SKIP() << "python3 with numpy not available";
  std::string dir = test::temp_dir();
  NamedArrays arrays;
  const char* descrs[] = {"<f4", "<f2", "<f8", "<i8", "<i4", "|i1", "|u1", "|b1"};
  for (size_t i = 0; i < 8; ++i) arrays.emplace_back("k" + std::to_string(i), make(kAllTypes[i], {3, 1, 5}));
  write_npz(dir + "/ours.npz", arrays);
  write_npy(dir + "/ours.npy", make(DType::F16, {}));
  std::string check =
      "d = sys.argv[0].rsplit('/', 1)[0]\n"
      "z = np.load(d + '/ours.npz')\n"
      "dts = [" ;
  for (size_t i = 0; i < 8; ++i) check += std::string(i ? ", " : "") + "'" + descrs[i] + "'";
  check +=
      "]\n"
      "assert list(z.keys()) == ['k%d' % i for i in range(8)], list(z.keys())\n"
      "for i, dt in enumerate(dts):\n"
      "    a = z['k%d' % i]\n"
      "    assert a.dtype == np.dtype(dt) and a.shape == (3, 1, 5), (dt, a.dtype, a.shape)\n"
      "    assert np.array_equal(a, pat(dt, (3, 1, 5))), dt\n"
      "s = np.load(d + '/ours.npy')\n"
      "assert s.shape == () and s.dtype == np.float16 and s == pat('<f2', ())\n";
  EXPECT_EQ(run_python(dir, check), 0);
}

TEST(Npy, MalformedHeadersError) {
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_EQ(parse_error(npy_with_header(f4, 24)), "");  // the well-formed base case
  struct Case {
    std::vector<uint8_t> bytes;
    const char* expect;
  };
  std::vector<uint8_t> bad_magic = npy_with_header(f4, 24);
  bad_magic[1] = 'X';
  std::vector<uint8_t> bad_version = npy_with_header(f4, 24);
  bad_version[6] = 9;
  std::vector<uint8_t> long_header = npy_with_header(f4, 24);
  long_header[8] = 0xff;
  long_header[9] = 0x7f;
  const Case cases[] = {
      {bytes_of("\x93NUM"), "too short"},
      {bad_magic, "magic"},
      {bad_version, "version"},
      {long_header, "truncated"},
      {npy_with_header(f4, 20), "data size"},
      {npy_with_header(f4, 28), "data size"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24), "Fortran"},
      {npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24), "dtype"},
      {npy_with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }", 48), "dtype"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, }", 24), "shape"},
      {npy_with_header("{'descr': '<f4', 'shape': (2, 3), }", 24), "fortran_order"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", 24), "integer"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", 24), "unsupported"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 'y'}", 24), "unexpected"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", 24), "expected"},
      {npy_with_header("{'descr: '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24), "expected"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", 24), "expected"},
      {npy_with_header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24),
       "duplicate"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, "
                       "4611686018427387904), }",
                       24),
       "needs more data"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 24),
       "too large"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }", 24), "unsupported"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': 6, }", 24), "unsupported"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } trailing", 24), "after"},
  };
  for (const Case& c : cases) {
    std::string err = parse_error(c.bytes);
    EXPECT_NE(err.find(c.expect), std::string::npos) << "expected '" << c.expect << "', got '" << err << "'";
    EXPECT_NE(err.find("test.npy"), std::string::npos) << err;
  }
  // Every truncation of a valid file errors (and never reads out of bounds).
  std::vector<uint8_t> good = encode_npy(make(DType::I32, {4, 4}));
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + long(n));
    EXPECT_NE(parse_error(cut), "") << "length " << n;
  }
}

TEST(Npy, NpzErrorsNameFileAndMember) {
  std::string dir = test::temp_dir();
  std::ofstream(dir + "/notzip.npz") << "this is not a zip file";
  try {
    read_npz(dir + "/notzip.npz");
    ADD_FAILURE() << "read a non-zip";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("notzip.npz"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_npz(dir + "/missing.npz"), Error);
  EXPECT_THROW(read_npy(dir + "/missing.npy"), Error);
  EXPECT_THROW(write_npz(dir + "/empty.npz", {}), Error);
  NamedArrays dup;
  dup.emplace_back("a", make(DType::F32, {1}));
  dup.emplace_back("a", make(DType::F32, {1}));
  EXPECT_THROW(write_npz(dir + "/dup.npz", dup), Error);

  if (!have_numpy()) return;
  // A zip holding a member that is not an .npy: the error names archive and member.
  ASSERT_EQ(run_python(dir,
                       "import zipfile\n"
                       "d = sys.argv[0].rsplit('/', 1)[0]\n"
                       "with zipfile.ZipFile(d + '/badmember.npz', 'w') as z:\n"
                       "    z.writestr('good.npy', b'')\n"
                       "    z.writestr('junk.npy', b'not an npy at all')\n"),
            0);
  try {
    read_npz(dir + "/badmember.npz");
    ADD_FAILURE() << "read a bad member";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("badmember.npz:good.npy"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace opv::tools
