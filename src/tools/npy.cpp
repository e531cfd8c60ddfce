// NumPy .npy/.npz I/O (see npy.h).
// .npy layout: magic "\x93NUMPY", major and minor version bytes, header length (u16 for v1,
// u32 for v2/v3, little-endian), then an ASCII (v3: UTF-8) Python dict literal
// {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces and ending in '\n'
// so that the data starts at a multiple of kNpyAlign, then the raw C-order data.
// Reading: the dict is parsed by a small literal parser (strings, True/False, int tuples); the
// data size is checked against the shape before anything is allocated.
// .npz: libzip; members read through zip_fread (stored or deflated), written stored with a fixed
// timestamp so identical arrays give identical files.
#include "tools/npy.h"

#include <unistd.h>
#include <zip.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "core/error.h"
#include "core/file_io.h"
#include "core/limits.h"

namespace opv::tools {

static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicSize = 6;
constexpr size_t kNpyPreambleV1 = kNpyMagicSize + 2 + 2;  // magic, version, u16 header length
constexpr size_t kNpyPreambleV2 = kNpyMagicSize + 2 + 4;  // magic, version, u32 header length
constexpr size_t kNpyAlign = 64;                          // data offset alignment numpy uses
constexpr uint8_t kNpyMajorV1 = 1, kNpyMajorV2 = 2, kNpyMajorV3 = 3;
constexpr size_t kMaxHeaderV1 = std::numeric_limits<uint16_t>::max();
constexpr size_t kMaxHeaderLen = size_t(1) << 20;  // sanity bound when reading v2/v3 headers
constexpr size_t kMaxRank = 32;                    // numpy's own limit (NPY_MAXDIMS)
constexpr const char* kNpzSuffix = ".npy";
constexpr size_t kZipReadChunk = size_t(1) << 20;
constexpr uint64_t kMaxArrayFileBytes = uint64_t(2) << 30;  // one .npy (file or .npz member)
constexpr time_t kZipFixedMtime = 315532800;  // 1980-01-01 00:00:00 UTC, the DOS time epoch

struct DescrEntry {
  DType dtype;
  const char* descr;
};
constexpr DescrEntry kDescrs[] = {
    {DType::F32, "<f4"}, {DType::F16, "<f2"}, {DType::F64, "<f8"}, {DType::I64, "<i8"},
    {DType::I32, "<i4"}, {DType::I8, "|i1"},  {DType::U8, "|u1"},  {DType::Bool, "|b1"},
};

// ---- Python dict literal parser -----------------------------------------------------------------

struct HeaderValue {
  enum Kind { String, Bool, Tuple } kind = String;
  std::string s;
  bool b = false;
  std::vector<int64_t> ints;
};

class DictParser {
 public:
  DictParser(const std::string& text, const std::string& what) : t_(text), what_(what) {}

  std::map<std::string, HeaderValue> parse() {
    std::map<std::string, HeaderValue> d;
    ws();
    expect('{');
    for (;;) {
      ws();
      if (peek() == '}') {
        ++i_;
        break;
      }
      std::string key = string_lit();
      ws();
      expect(':');
      ws();
      HeaderValue v = value();
      if (!d.emplace(key, std::move(v)).second) error("duplicate key '" + key + "'");
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      if (peek() == '}') continue;
      error(std::string("expected ',' or '}'"));
    }
    ws();
    if (i_ != t_.size()) error("unexpected text after the dict");
    return d;
  }

 private:
  [[noreturn]] void error(const std::string& msg) const {
    fail(what_, ": malformed .npy header: ", msg, " at header character ", i_);
  }
  char peek() const { return i_ < t_.size() ? t_[i_] : '\0'; }
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) error(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string_lit() {
    char q = peek();
    if (q != '\'' && q != '"') error("expected a quoted string");
    ++i_;
    size_t start = i_;
    while (i_ < t_.size() && t_[i_] != q) {
      if (t_[i_] == '\\') error("escape sequences are not supported");
      ++i_;
    }
    if (i_ >= t_.size()) error("unterminated string");
    std::string s = t_.substr(start, i_ - start);
    ++i_;
    return s;
  }
  bool word(const char* w) {
    size_t n = std::strlen(w);
    if (t_.compare(i_, n, w) == 0) {
      i_ += n;
      return true;
    }
    return false;
  }
  int64_t integer() {
    size_t start = i_;
    uint64_t v = 0;
    constexpr uint64_t kMaxDim = uint64_t(1) << 62;
    while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') {
      uint64_t digit = uint64_t(t_[i_] - '0');
      if (v > (kMaxDim - digit) / 10) error("dimension too large");
      v = v * 10 + digit;
      ++i_;
    }
    if (i_ == start) error("expected a non-negative integer");
    if (peek() == 'L') ++i_;  // Python 2 long suffix
    return int64_t(v);
  }
  HeaderValue value() {
    HeaderValue v;
    char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = HeaderValue::String;
      v.s = string_lit();
    } else if (word("True")) {
      v.kind = HeaderValue::Bool;
      v.b = true;
    } else if (word("False")) {
      v.kind = HeaderValue::Bool;
      v.b = false;
    } else if (c == '(' || c == '[') {
      char close = c == '(' ? ')' : ']';
      ++i_;
      v.kind = HeaderValue::Tuple;
      for (;;) {
        ws();
        if (peek() == close) {
          ++i_;
          break;
        }
        if (v.ints.size() >= kMaxRank) error("more than " + std::to_string(kMaxRank) + " dimensions");
        v.ints.push_back(integer());
        ws();
        if (peek() == ',') {
          ++i_;
        } else if (peek() != close) {
          error(std::string("expected ',' or '") + close + "' in the shape");
        }
      }
    } else {
      error("unsupported value");
    }
    return v;
  }

  const std::string& t_;
  const std::string& what_;
  size_t i_ = 0;
};

uint32_t le_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

std::string zip_error_text(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string s = zip_error_strerror(&e);
  zip_error_fini(&e);
  return s;
}

}  // namespace

const char* npy_descr(DType t) {
  for (const DescrEntry& e : kDescrs)
    if (e.dtype == t) return e.descr;
  fail("dtype ", dtype_name(t), " has no .npy descr");
}

namespace {
struct NpyHeader {
  DType dtype = DType::F32;
  Shape shape;
  size_t data_offset = 0;
};

// Parses and checks an .npy preamble + header held in data[0, size) of a file of `total` bytes:
// the dtype, the shape, the per-tensor limits and that the data fills the rest exactly. Nothing
// of the data's size is allocated.
NpyHeader parse_npy_header(const uint8_t* data, size_t size, size_t total, const std::string& what) {
  OPV_ASSERT(size <= total);
  OPV_CHECK(size >= kNpyPreambleV1, what, ": not an .npy file (", total, " bytes, too short)");
  OPV_CHECK(std::memcmp(data, kNpyMagic, kNpyMagicSize) == 0, what, ": not an .npy file (bad magic)");
  uint8_t major = data[kNpyMagicSize];
  size_t header_len = 0, preamble = 0;
  if (major == kNpyMajorV1) {
    preamble = kNpyPreambleV1;
    header_len = size_t(data[kNpyMagicSize + 2]) | size_t(data[kNpyMagicSize + 3]) << 8;
  } else if (major == kNpyMajorV2 || major == kNpyMajorV3) {
    OPV_CHECK(size >= kNpyPreambleV2, what, ": truncated .npy preamble");
    preamble = kNpyPreambleV2;
    header_len = le_u32(data + kNpyMagicSize + 2);
  } else {
    fail(what, ": unsupported .npy format version ", int(major), ".", int(data[kNpyMagicSize + 1]));
  }
  OPV_CHECK(header_len <= kMaxHeaderLen, what, ": .npy header length ", header_len, " is implausible");
  OPV_CHECK(header_len <= size - preamble, what, ": truncated .npy header (needs ", header_len, " bytes, ",
            size - preamble, " present)");
  std::string header(reinterpret_cast<const char*>(data + preamble), header_len);

  auto dict = DictParser(header, what).parse();
  for (const auto& [k, v] : dict)
    OPV_CHECK(k == "descr" || k == "fortran_order" || k == "shape", what, ": unexpected .npy header key '", k, "'");
  auto get = [&](const char* key, HeaderValue::Kind kind, const char* type) -> const HeaderValue& {
    auto it = dict.find(key);
    OPV_CHECK(it != dict.end(), what, ": .npy header lacks '", key, "'");
    OPV_CHECK(it->second.kind == kind, what, ": .npy header '", key, "' is not a ", type);
    return it->second;
  };
  const std::string& descr = get("descr", HeaderValue::String, "string").s;
  bool fortran = get("fortran_order", HeaderValue::Bool, "boolean").b;
  const std::vector<int64_t>& shape = get("shape", HeaderValue::Tuple, "tuple").ints;

  const DescrEntry* entry = nullptr;
  for (const DescrEntry& e : kDescrs)
    if (descr == e.descr) entry = &e;
  if (!entry) {
    std::string list;
    for (const DescrEntry& e : kDescrs) list += (list.empty() ? "" : " ") + std::string(e.descr);
    fail(what, ": unsupported .npy dtype '", descr, "' (supported: ", list, ")");
  }
  OPV_CHECK(!fortran, what, ": Fortran-order .npy arrays are not supported (save with C order)");

  size_t avail = total - preamble - header_len;
  uint64_t elems = 1;
  const uint64_t itemsize = dtype_size(entry->dtype);
  for (int64_t d : shape) {
    OPV_CHECK(d == 0 || elems <= avail / uint64_t(d), what, ": shape ", shape_str(shape), " needs more data than the ",
              avail, " bytes present");
    elems *= uint64_t(d);
  }
  OPV_CHECK(elems * itemsize == avail, what, ": data size ", avail, " bytes does not match shape ", shape_str(shape),
            " of ", descr, " (", elems * itemsize, " bytes)");
  NpyHeader h;
  h.dtype = entry->dtype;
  h.shape = Shape(shape.begin(), shape.end());
  h.data_offset = preamble + header_len;
  check_tensor_limits(h.dtype, h.shape, what);
  return h;
}
}  // namespace

Tensor parse_npy(const uint8_t* data, size_t size, const std::string& what) {
  NpyHeader h = parse_npy_header(data, size, size, what);
  Tensor t(h.dtype, h.shape);
  if (size > h.data_offset) std::memcpy(t.raw(), data + h.data_offset, size - h.data_offset);
  return t;
}


std::vector<uint8_t> encode_npy(const Tensor& t) {
  std::string header = std::string("{'descr': '") + npy_descr(t.dtype()) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape().size(); ++i) header += (i ? ", " : "") + std::to_string(t.shape()[i]);
  if (t.shape().size() == 1) header += ",";
  header += "), }";
  // Pad with spaces so that preamble + header (ending in '\n') is a multiple of kNpyAlign.
  size_t preamble = kNpyPreambleV1;
  if (header.size() + 1 + preamble > kMaxHeaderV1) preamble = kNpyPreambleV2;
  size_t total = (preamble + header.size() + 1 + kNpyAlign - 1) / kNpyAlign * kNpyAlign;
  header.append(total - preamble - header.size() - 1, ' ');
  header += '\n';

  std::vector<uint8_t> out;
  out.reserve(total + t.nbytes());
  out.insert(out.end(), kNpyMagic, kNpyMagic + kNpyMagicSize);
  const size_t hlen = header.size();
  if (preamble == kNpyPreambleV1) {
    out.push_back(kNpyMajorV1);
    out.push_back(0);
    out.push_back(uint8_t(hlen));
    out.push_back(uint8_t(hlen >> 8));
  } else {
    out.push_back(kNpyMajorV2);
    out.push_back(0);
    for (int i = 0; i < 4; ++i) out.push_back(uint8_t(hlen >> (8 * i)));
  }
  out.insert(out.end(), header.begin(), header.end());
  const uint8_t* p = static_cast<const uint8_t*>(t.raw());
  if (t.nbytes()) out.insert(out.end(), p, p + t.nbytes());
  return out;
}

Tensor read_npy(const std::string& path) {
  std::vector<uint8_t> bytes = read_file_bytes(path, ".npy file", kMaxArrayFileBytes);
  return parse_npy(bytes.data(), bytes.size(), path);
}

void write_npy(const std::string& path, const Tensor& t) {
  write_file_atomic(path, encode_npy(t), ".npy file");
}

NamedArrays read_npz(const std::string& path) {
  // A regular file only (a FIFO or directory must not block or be read), handed to libzip.
  int fd = open_regular_file(path, ".npz file", kMaxInputFileBytes, nullptr);
  int code = 0;
  zip_t* za = zip_fdopen(fd, ZIP_RDONLY, &code);
  if (!za) {
    ::close(fd);
    fail("cannot open .npz '", path, "': ", zip_error_text(code));
  }
  struct Closer {
    zip_t* z;
    ~Closer() { zip_discard(z); }
  } closer{za};
  // An open member, closed on every path (zip_discard does not free open members; a throw
  // between open and close leaked the member and its inflate state, found by fuzz_npy).
  struct Member {
    zip_file_t* f;
    ~Member() {
      if (f) zip_fclose(f);
    }
    int close() { return zip_fclose(std::exchange(f, nullptr)); }
  };

  NamedArrays out;
  std::set<std::string> seen;
  zip_int64_t n = zip_get_num_entries(za, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* raw_name = zip_get_name(za, zip_uint64_t(i), ZIP_FL_ENC_GUESS);
    if (!raw_name) fail(path, ": cannot read the name of member ", i, ": ", zip_strerror(za));
    std::string name = raw_name;
    if (!name.empty() && name.back() == '/') continue;  // directory entry
    std::string what = path + ":" + name;
    // Check the declared size before inflating anything (a small deflated member can expand to
    // gigabytes); the read loop below also stops at the declared size.
    zip_stat_t zs;
    zip_stat_init(&zs);
    if (zip_stat_index(za, zip_uint64_t(i), 0, &zs) != 0) fail(what, ": cannot stat member: ", zip_strerror(za));
    OPV_CHECK(zs.valid & ZIP_STAT_SIZE, what, ": member has no declared size");
    OPV_CHECK(zs.size <= kMaxArrayFileBytes, what, ": member declares ", zs.size,
              " uncompressed bytes, more than the limit of ", kMaxArrayFileBytes);
    OPV_CHECK(zs.size >= kNpyPreambleV1, what, ": not an .npy member (", zs.size, " bytes, too short)");
    {
      // Check the .npy header (dtype, shape, per-tensor limits) before inflating the data.
      Member hf{zip_fopen_index(za, zip_uint64_t(i), 0)};
      if (!hf.f) fail(what, ": cannot open member: ", zip_strerror(za));
      std::vector<uint8_t> head(size_t(std::min<zip_uint64_t>(zs.size, kNpyPreambleV2 + kMaxHeaderLen)));
      zip_int64_t got = zip_fread(hf.f, head.data(), head.size());
      if (got < 0) fail(what, ": cannot read member: ", zip_file_strerror(hf.f));
      hf.close();
      head.resize(size_t(got));
      parse_npy_header(head.data(), head.size(), size_t(zs.size), what);
    }
    Member zf{zip_fopen_index(za, zip_uint64_t(i), 0)};
    if (!zf.f) fail(what, ": cannot open member: ", zip_strerror(za));
    std::vector<uint8_t> bytes;
    for (;;) {
      size_t old = bytes.size();
      // Never more than the declared size (+1 to detect a member longer than declared).
      OPV_CHECK(old <= zs.size, what, ": member is longer than its declared size ", zs.size);
      size_t chunk = size_t(std::min<uint64_t>(kZipReadChunk, zs.size - old + 1));
      bytes.resize(old + chunk);
      zip_int64_t got = zip_fread(zf.f, bytes.data() + old, chunk);
      if (got < 0) fail(what, ": cannot read member: ", zip_file_strerror(zf.f));
      bytes.resize(old + size_t(got));
      if (got == 0) break;
    }
    int rc = zf.close();
    if (rc != 0) fail(what, ": error closing member: ", zip_error_text(rc));
    if (name.size() > std::strlen(kNpzSuffix) &&
        name.compare(name.size() - std::strlen(kNpzSuffix), std::string::npos, kNpzSuffix) == 0)
      name.resize(name.size() - std::strlen(kNpzSuffix));
    OPV_CHECK(seen.insert(name).second, what, ": duplicate array name '", name, "'");
    out.emplace_back(name, parse_npy(bytes.data(), bytes.size(), what));
  }
  return out;
}

void write_npz(const std::string& path, const NamedArrays& arrays) {
  OPV_CHECK(!arrays.empty(), "cannot write '", path, "': no arrays");
  std::set<std::string> names;
  for (const auto& [name, t] : arrays) {
    OPV_CHECK(!name.empty(), "cannot write '", path, "': empty array name");
    OPV_CHECK(names.insert(name).second, "cannot write '", path, "': duplicate array name '", name, "'");
  }
  // The archive is built in memory, then written like every other output (core/file_io.h:
  // a unique O_EXCL|O_NOFOLLOW temporary, checked writes, fsync, rename), so a failure never
  // leaves a partial file and a planted symlink is not followed.
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* mem = zip_source_buffer_create(nullptr, 0, 0, &err);
  if (!mem) fail("cannot write '", path, "': ", zip_error_strerror(&err));
  zip_source_keep(mem);  // survives zip_close, which writes the archive into it
  zip_t* za = zip_open_from_source(mem, ZIP_TRUNCATE, &err);
  if (!za) {
    std::string msg = zip_error_strerror(&err);
    zip_error_fini(&err);
    zip_source_free(mem);
    fail("cannot write '", path, "': ", msg);
  }
  zip_error_fini(&err);
  // libzip reads the data at zip_close; the encodings must live until then.
  std::vector<std::vector<uint8_t>> encoded;
  encoded.reserve(arrays.size());
  auto abort_with = [&](const std::string& msg) {
    zip_discard(za);
    zip_source_free(mem);
    fail("cannot write '", path, "': ", msg);
  };
  for (const auto& [name, t] : arrays) {
    encoded.push_back(encode_npy(t));
    std::vector<uint8_t>& bytes = encoded.back();
    zip_source_t* src = zip_source_buffer(za, bytes.data(), bytes.size(), 0);
    if (!src) abort_with(std::string("member '") + name + "': " + zip_strerror(za));
    zip_int64_t idx = zip_file_add(za, (name + kNpzSuffix).c_str(), src, ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
      zip_source_free(src);
      abort_with(std::string("member '") + name + "': " + zip_strerror(za));
    }
    if (zip_set_file_compression(za, zip_uint64_t(idx), ZIP_CM_STORE, 0) != 0 ||
        zip_file_set_mtime(za, zip_uint64_t(idx), kZipFixedMtime, 0) != 0)
      abort_with(std::string("member '") + name + "': " + zip_strerror(za));
  }
  if (zip_close(za) != 0) abort_with(zip_strerror(za));
  // read the finished archive back out of the memory source
  std::vector<uint8_t> out;
  bool ok = zip_source_open(mem) == 0;
  if (ok) {
    ok = zip_source_seek(mem, 0, SEEK_END) == 0;
    zip_int64_t size = ok ? zip_source_tell(mem) : -1;
    ok = ok && size >= 0 && zip_source_seek(mem, 0, SEEK_SET) == 0;
    if (ok) {
      out.resize(size_t(size));
      ok = zip_source_read(mem, out.data(), zip_uint64_t(size)) == size;
    }
    zip_source_close(mem);
  }
  zip_source_free(mem);
  OPV_CHECK(ok, "cannot write '", path, "': the archive could not be read back from memory");
  write_file_atomic(path, out, ".npz");
}

}  // namespace opv::tools
