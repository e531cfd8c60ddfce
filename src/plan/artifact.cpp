// The .opv artifact: serialisation of plan::Plan into a versioned, checksummed file.
//
// File layout (all integers little-endian, written byte by byte so the host order never leaks):
//   1. Header (kHeaderSize bytes at offset 0): magic "OPVISION", format version, header size,
//      flags, total file size, a section table (kind, offset, size per section), the CRC32 of
//      every byte after the header, and the CRC32 of the header bytes before that field.
//   2. Plan section: a compact positional encoding of Plan (target, meta, arena_bytes, buffers,
//      kernels with attrs and post-ops, calls, inputs, outputs), see write_plan()/read_plan().
//   3. Weights section: Plan::weights verbatim, starting at a kWeightsAlign-aligned file offset.
//   Padding between sections is zero and covered by the payload CRC.
// Reading: every access goes through a bounds-checked cursor that reports the field and the
// absolute byte offset; counts are checked against the bytes that remain before anything is
// allocated; enum values and ids are range-checked; finally plan::validate() runs.
// Invariant: serialize(deserialize(serialize(p))) == serialize(p) byte for byte.
#include "plan/artifact.h"

#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "core/file_io.h"

namespace opv::plan {

namespace {

// ---- Format constants (the magic, kArtifactMagic, is in artifact.h) ----------------------------

enum class SectionKind : uint32_t {
  Plan = 1,
  Weights = 2,
};
constexpr uint32_t kSectionCount = 2;  // plan, weights (in this order)

// Header field offsets.
constexpr size_t kOffMagic = 0;
constexpr size_t kOffVersion = kOffMagic + kArtifactMagicSize;  // u32
constexpr size_t kOffHeaderSize = kOffVersion + 4;         // u32
constexpr size_t kOffFlags = kOffHeaderSize + 4;           // u32
constexpr size_t kOffSectionCount = kOffFlags + 4;         // u32
constexpr size_t kOffTotalSize = kOffSectionCount + 4;     // u64
constexpr size_t kOffSections = kOffTotalSize + 8;         // kSectionCount entries
constexpr size_t kSectionEntrySize = 4 + 4 + 8 + 8;        // kind u32, reserved u32, offset u64, size u64
constexpr size_t kOffPayloadCrc = kOffSections + kSectionCount * kSectionEntrySize;  // u32
constexpr size_t kOffHeaderCrc = kOffPayloadCrc + 4;       // u32: CRC32 of bytes [0, kOffHeaderCrc)
constexpr size_t kHeaderSize = kOffHeaderCrc + 4;

constexpr uint32_t kKnownFlags = 0;       // no flags defined in version 1
constexpr size_t kPlanAlign = 8;          // plan section starts 8-byte aligned
constexpr size_t kWeightsAlign = size_t(kAlign);  // weights section 64-byte aligned in the file

// Attribute value tags (AttrValue variant alternatives).
enum class AttrTag : uint8_t {
  Int = 1,
  Float = 2,
  String = 3,
  Ints = 4,
  Floats = 5,
};

// Minimum encoded sizes, used to bound counts before allocating.
constexpr size_t kMinStringBytes = 4;                        // u32 length
constexpr size_t kMinAttrBytes = kMinStringBytes + 1;        // key + tag
constexpr size_t kMinBufferBytes = kMinStringBytes + 3 + 4 + 8 + 8;
constexpr size_t kPostOpBytes = 2 + 4 + 4 + 4 + 1;
constexpr size_t kMinKernelBytes = kMinStringBytes + 2 + 4 + 4 + 3 * kMinStringBytes;
constexpr size_t kMinCallBytes = 4 + 4 + 4 + 6 * 8 + kMinStringBytes;

constexpr uint8_t kBoolFalse = 0, kBoolTrue = 1;

// Plausibility bounds for sizes read from a file, far above any real model, so that later
// arithmetic on them (numel, offset + bytes) cannot overflow int64.
constexpr int64_t kMaxSizeBytes = int64_t(1) << 48;

uint32_t crc32_of(const uint8_t* data, size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; feed large buffers in chunks.
  constexpr size_t kChunk = size_t(1) << 30;
  while (size > 0) {
    size_t n = size < kChunk ? size : kChunk;
    crc = crc32(crc, data, uInt(n));
    data += n;
    size -= n;
  }
  return uint32_t(crc);
}

// ---- Writer -----------------------------------------------------------------------------------

class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v) { le(v, 2); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void i32(int32_t v) { u32(uint32_t(v)); }
  void i64(int64_t v) { u64(uint64_t(v)); }
  void f32(float v) {
    uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    u32(b);
  }
  void f64(double v) {
    uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    u64(b);
  }
  void count(size_t n, const char* what) {
    OPV_CHECK(n <= std::numeric_limits<uint32_t>::max(), "artifact: too many ", what, " (", n, ")");
    u32(uint32_t(n));
  }
  void str(const std::string& s) {
    count(s.size(), "string bytes");
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void bytes(const uint8_t* p, size_t n) { out_.insert(out_.end(), p, p + n); }
  void pad_to(size_t align) {
    while (out_.size() % align) out_.push_back(0);
  }
  size_t size() const { return out_.size(); }

 private:
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(uint8_t(v >> (8 * i)));
  }
  std::vector<uint8_t>& out_;
};

void put_u32_at(std::vector<uint8_t>& buf, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) buf[off + i] = uint8_t(v >> (8 * i));
}
void put_u64_at(std::vector<uint8_t>& buf, size_t off, uint64_t v) {
  for (int i = 0; i < 8; ++i) buf[off + i] = uint8_t(v >> (8 * i));
}
uint32_t get_u32_at(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(p[i]) << (8 * i);
  return v;
}
uint64_t get_u64_at(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

void write_attrs(Writer& w, const Attrs& a) {
  w.count(a.map().size(), "attributes");
  for (const auto& [key, value] : a.map()) {
    w.str(key);
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t>) {
            w.u8(uint8_t(AttrTag::Int));
            w.i64(v);
          } else if constexpr (std::is_same_v<T, double>) {
            w.u8(uint8_t(AttrTag::Float));
            w.f64(v);
          } else if constexpr (std::is_same_v<T, std::string>) {
            w.u8(uint8_t(AttrTag::String));
            w.str(v);
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            w.u8(uint8_t(AttrTag::Ints));
            w.count(v.size(), "attribute values");
            for (int64_t x : v) w.i64(x);
          } else {
            static_assert(std::is_same_v<T, std::vector<double>>);
            w.u8(uint8_t(AttrTag::Floats));
            w.count(v.size(), "attribute values");
            for (double x : v) w.f64(x);
          }
        },
        value);
  }
}

void write_ids(Writer& w, const std::vector<int>& ids, const char* what) {
  w.count(ids.size(), what);
  for (int id : ids) w.i32(id);
}

void write_plan(Writer& w, const Plan& p) {
  w.str(p.target);
  write_attrs(w, p.meta);
  w.i64(p.arena_bytes);

  w.count(p.buffers.size(), "buffers");
  for (const Buffer& b : p.buffers) {
    w.str(b.name);
    w.u8(uint8_t(b.dtype));
    w.u8(uint8_t(b.layout));
    w.u8(uint8_t(b.kind));
    w.count(b.shape.size(), "dimensions");
    for (int64_t d : b.shape) w.i64(d);
    w.i64(b.offset);
    w.i64(b.bytes);
  }

  w.count(p.kernels.size(), "kernels");
  for (const Kernel& k : p.kernels) {
    w.str(k.name);
    w.u16(uint16_t(k.op));
    write_attrs(w, k.attrs);
    w.count(k.post_ops.size(), "post-ops");
    for (const PostOp& po : k.post_ops) {
      w.u16(uint16_t(po.op));
      w.f32(po.alpha);
      w.f32(po.beta);
      w.i32(po.input);
      w.u8(po.swapped ? kBoolTrue : kBoolFalse);
    }
    w.str(k.source);
    w.str(k.entry);
    w.str(k.options);
  }

  w.count(p.calls.size(), "calls");
  for (const Call& c : p.calls) {
    w.i32(c.kernel);
    write_ids(w, c.inputs, "call inputs");
    write_ids(w, c.outputs, "call outputs");
    for (int64_t g : c.global) w.i64(g);
    for (int64_t l : c.local) w.i64(l);
    w.str(c.label);
  }

  write_ids(w, p.inputs, "plan inputs");
  write_ids(w, p.outputs, "plan outputs");
}

// ---- Reader -----------------------------------------------------------------------------------

// Bounds-checked little-endian cursor over [begin, end) of a file image. Offsets in messages are
// absolute file offsets. `ctx_` names the item being read ("buffer 3") for messages.
class Reader {
 public:
  Reader(const uint8_t* data, size_t begin, size_t end) : data_(data), pos_(begin), end_(end) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return end_ - pos_; }
  void set_context(std::string ctx) { ctx_ = std::move(ctx); }

  [[noreturn]] void error(size_t at, const std::string& msg) const {
    fail("artifact: ", msg, ctx_.empty() ? "" : " in ", ctx_, " at byte ", at);
  }

  const uint8_t* take(size_t n, const char* what) {
    if (n > remaining())
      error(pos_, detail::concat("truncated reading ", what, " (needs ", n, " bytes, ", remaining(),
                                 " left in the section)"));
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  uint64_t le(int n, const char* what) {
    const uint8_t* p = take(size_t(n), what);
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
    return v;
  }
  uint8_t u8(const char* what) { return uint8_t(le(1, what)); }
  uint16_t u16(const char* what) { return uint16_t(le(2, what)); }
  uint32_t u32(const char* what) { return uint32_t(le(4, what)); }
  int32_t i32(const char* what) { return int32_t(uint32_t(le(4, what))); }
  int64_t i64(const char* what) { return int64_t(le(8, what)); }
  float f32(const char* what) {
    uint32_t b = u32(what);
    float v;
    std::memcpy(&v, &b, sizeof v);
    return v;
  }
  double f64(const char* what) {
    uint64_t b = le(8, what);
    double v;
    std::memcpy(&v, &b, sizeof v);
    return v;
  }
  // A count of items that each take at least `min_item_bytes`; rejects counts that cannot fit in
  // the remaining bytes, so a corrupted count never causes a huge allocation.
  size_t count(const char* what, size_t min_item_bytes) {
    size_t at = pos_;
    uint32_t n = u32(what);
    if (min_item_bytes > 0 && uint64_t(n) * min_item_bytes > remaining())
      error(at, detail::concat("count of ", what, " (", n, ") exceeds the remaining ", remaining(), " bytes"));
    return n;
  }
  std::string str(const char* what) {
    size_t n = count(what, 1);
    const uint8_t* p = take(n, what);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  bool boolean(const char* what) {
    size_t at = pos_;
    uint8_t v = u8(what);
    if (v != kBoolFalse && v != kBoolTrue) error(at, detail::concat("invalid boolean ", int(v), " for ", what));
    return v == kBoolTrue;
  }

 private:
  const uint8_t* data_;
  size_t pos_;
  size_t end_;
  std::string ctx_;
};

Attrs read_attrs(Reader& r, const char* what) {
  Attrs a;
  size_t n = r.count(what, kMinAttrBytes);
  for (size_t i = 0; i < n; ++i) {
    size_t key_at = r.pos();
    std::string key = r.str("attribute name");
    // Keys are written in increasing order (std::map); requiring it keeps the encoding canonical.
    if (!a.map().empty() && !(a.map().rbegin()->first < key))
      r.error(key_at, "attribute '" + key + "' is out of order or duplicated");
    size_t tag_at = r.pos();
    uint8_t tag = r.u8("attribute type");
    switch (AttrTag(tag)) {
      case AttrTag::Int: a.set(key, r.i64("int attribute")); break;
      case AttrTag::Float: a.set(key, r.f64("float attribute")); break;
      case AttrTag::String: a.set(key, r.str("string attribute")); break;
      case AttrTag::Ints: {
        size_t m = r.count("ints attribute length", 8);
        std::vector<int64_t> v(m);
        for (auto& x : v) x = r.i64("ints attribute value");
        a.set(key, std::move(v));
        break;
      }
      case AttrTag::Floats: {
        size_t m = r.count("floats attribute length", 8);
        std::vector<double> v(m);
        for (auto& x : v) x = r.f64("floats attribute value");
        a.set(key, std::move(v));
        break;
      }
      default: r.error(tag_at, detail::concat("invalid type tag ", int(tag), " of attribute '", key, "'"));
    }
  }
  return a;
}

// Reads a buffer id: -1 allowed only when `allow_absent`.
int read_buffer_id(Reader& r, size_t nbuffers, bool allow_absent, const char* what) {
  size_t at = r.pos();
  int32_t id = r.i32(what);
  if (id == -1 && allow_absent) return -1;
  if (id < 0 || size_t(id) >= nbuffers)
    r.error(at, detail::concat(what, " ", id, " out of range (", nbuffers, " buffers)"));
  return id;
}

std::vector<int> read_buffer_ids(Reader& r, size_t nbuffers, bool allow_absent, const char* count_what,
                                 const char* id_what) {
  size_t n = r.count(count_what, 4);
  std::vector<int> ids(n);
  for (auto& id : ids) id = read_buffer_id(r, nbuffers, allow_absent, id_what);
  return ids;
}

template <typename F>
auto checked_enum(Reader& r, size_t at, F&& convert) -> decltype(convert()) {
  try {
    return convert();
  } catch (const Error& e) {
    r.error(at, e.what());
  }
}

void read_plan(Reader& r, Plan& p) {
  r.set_context("plan header");
  p.target = r.str("target");
  p.meta = read_attrs(r, "meta attributes");
  p.arena_bytes = r.i64("arena_bytes");
  if (p.arena_bytes < 0 || p.arena_bytes > kMaxSizeBytes)
    r.error(r.pos() - 8, detail::concat("implausible arena_bytes ", p.arena_bytes));

  size_t nbuf = r.count("buffer count", kMinBufferBytes);
  p.buffers.resize(nbuf);
  for (size_t i = 0; i < nbuf; ++i) {
    Buffer& b = p.buffers[i];
    r.set_context("buffer " + std::to_string(i));
    b.name = r.str("name");
    size_t at = r.pos();
    uint8_t dt = r.u8("dtype");
    b.dtype = checked_enum(r, at, [&] { return dtype_from_u8(dt); });
    at = r.pos();
    uint8_t lay = r.u8("layout");
    b.layout = checked_enum(r, at, [&] { return layout_from_u8(lay); });
    at = r.pos();
    uint8_t kind = r.u8("kind");
    if (kind < uint8_t(BufferKind::Input) || kind > uint8_t(BufferKind::Constant))
      r.error(at, detail::concat("invalid buffer kind ", int(kind)));
    b.kind = BufferKind(kind);
    size_t rank = r.count("rank", 8);
    b.shape.resize(rank);
    int64_t elems = 1;
    for (size_t d = 0; d < rank; ++d) {
      at = r.pos();
      b.shape[d] = r.i64("dimension");
      if (b.shape[d] < 0) r.error(at, detail::concat("negative dimension ", b.shape[d]));
      if (__builtin_mul_overflow(elems, b.shape[d], &elems) || elems > kMaxSizeBytes)
        r.error(at, detail::concat("implausible dimension ", b.shape[d], " (element count overflows)"));
    }
    at = r.pos();
    b.offset = r.i64("offset");
    if (b.offset < -1 || b.offset > kMaxSizeBytes) r.error(at, detail::concat("implausible offset ", b.offset));
    at = r.pos();
    b.bytes = r.i64("bytes");
    if (b.bytes < 0 || b.bytes > kMaxSizeBytes) r.error(at, detail::concat("implausible byte size ", b.bytes));
  }

  size_t nker = r.count("kernel count", kMinKernelBytes);
  p.kernels.resize(nker);
  for (size_t i = 0; i < nker; ++i) {
    Kernel& k = p.kernels[i];
    r.set_context("kernel " + std::to_string(i));
    k.name = r.str("name");
    size_t at = r.pos();
    uint16_t op = r.u16("op");
    k.op = checked_enum(r, at, [&] { return op_from_u16(op); });
    k.attrs = read_attrs(r, "attribute count");
    size_t npost = r.count("post-op count", kPostOpBytes);
    k.post_ops.resize(npost);
    for (PostOp& po : k.post_ops) {
      at = r.pos();
      uint16_t pop = r.u16("post-op kind");
      po.op = checked_enum(r, at, [&] { return op_from_u16(pop); });
      po.alpha = r.f32("post-op alpha");
      po.beta = r.f32("post-op beta");
      at = r.pos();
      po.input = r.i32("post-op input");
      if (po.input < -1) r.error(at, detail::concat("invalid post-op input index ", po.input));
      po.swapped = r.boolean("post-op swapped flag");
    }
    k.source = r.str("source");
    k.entry = r.str("entry");
    k.options = r.str("options");
  }

  size_t ncall = r.count("call count", kMinCallBytes);
  p.calls.resize(ncall);
  for (size_t i = 0; i < ncall; ++i) {
    Call& c = p.calls[i];
    r.set_context("call " + std::to_string(i));
    size_t at = r.pos();
    c.kernel = r.i32("kernel id");
    if (c.kernel < 0 || size_t(c.kernel) >= nker)
      r.error(at, detail::concat("kernel id ", c.kernel, " out of range (", nker, " kernels)"));
    c.inputs = read_buffer_ids(r, nbuf, true, "input count", "input buffer id");
    c.outputs = read_buffer_ids(r, nbuf, false, "output count", "output buffer id");
    for (auto& g : c.global) {
      at = r.pos();
      g = r.i64("global size");
      if (g < 0 || g > kMaxSizeBytes) r.error(at, detail::concat("implausible global size ", g));
    }
    for (auto& l : c.local) {
      at = r.pos();
      l = r.i64("local size");
      if (l < 0 || l > kMaxSizeBytes) r.error(at, detail::concat("implausible local size ", l));
    }
    c.label = r.str("label");
  }

  r.set_context("plan inputs");
  p.inputs = read_buffer_ids(r, nbuf, false, "input count", "input buffer id");
  r.set_context("plan outputs");
  p.outputs = read_buffer_ids(r, nbuf, false, "output count", "output buffer id");
  r.set_context("plan section");
  if (r.remaining() != 0) r.error(r.pos(), detail::concat(r.remaining(), " unexpected trailing bytes"));
}

}  // namespace

// ---- Public API -------------------------------------------------------------------------------

bool has_artifact_magic(const void* head, size_t n) {
  return n >= kArtifactMagicSize && std::memcmp(head, kArtifactMagic, kArtifactMagicSize) == 0;
}

std::vector<uint8_t> serialize(const Plan& p) {
  std::vector<uint8_t> out(kHeaderSize, 0);
  Writer w(out);
  w.pad_to(kPlanAlign);
  size_t plan_off = w.size();
  write_plan(w, p);
  size_t plan_size = w.size() - plan_off;
  w.pad_to(kWeightsAlign);
  size_t weights_off = w.size();
  if (!p.weights.empty()) w.bytes(p.weights.data(), p.weights.size());
  size_t weights_size = p.weights.size();

  // Header.
  std::memcpy(out.data() + kOffMagic, kArtifactMagic, kArtifactMagicSize);
  put_u32_at(out, kOffVersion, kArtifactVersion);
  put_u32_at(out, kOffHeaderSize, uint32_t(kHeaderSize));
  put_u32_at(out, kOffFlags, 0);
  put_u32_at(out, kOffSectionCount, kSectionCount);
  put_u64_at(out, kOffTotalSize, out.size());
  const struct {
    SectionKind kind;
    size_t off, size;
  } sections[kSectionCount] = {{SectionKind::Plan, plan_off, plan_size},
                               {SectionKind::Weights, weights_off, weights_size}};
  for (uint32_t i = 0; i < kSectionCount; ++i) {
    size_t e = kOffSections + i * kSectionEntrySize;
    put_u32_at(out, e, uint32_t(sections[i].kind));
    put_u32_at(out, e + 4, 0);
    put_u64_at(out, e + 8, sections[i].off);
    put_u64_at(out, e + 16, sections[i].size);
  }
  put_u32_at(out, kOffPayloadCrc, crc32_of(out.data() + kHeaderSize, out.size() - kHeaderSize));
  put_u32_at(out, kOffHeaderCrc, crc32_of(out.data(), kOffHeaderCrc));
  return out;
}

namespace {

// Parses and validates an artifact image. When `owned` holds the image (data == owned->data())
// and the weights section is its tail, the weights are moved out of it instead of copied, so a
// loaded model is held in memory once.
Plan parse_artifact(const uint8_t* data, size_t size, std::vector<uint8_t>* owned) {
  if (size < kHeaderSize)
    fail("artifact: truncated header (file has ", size, " bytes, the header needs ", kHeaderSize, ")");
  if (!has_artifact_magic(data + kOffMagic, size - kOffMagic))
    fail("artifact: wrong magic at byte ", kOffMagic, " (not an .opv artifact)");
  uint32_t version = get_u32_at(data + kOffVersion);
  if (version > kArtifactVersion)
    fail("artifact: format version ", version, " at byte ", kOffVersion, " is newer than this build supports (",
         kArtifactVersion, ")");
  if (version != kArtifactVersion)
    fail("artifact: unsupported format version ", version, " at byte ", kOffVersion, " (expected ",
         kArtifactVersion, ")");
  uint32_t header_crc = get_u32_at(data + kOffHeaderCrc);
  if (crc32_of(data, kOffHeaderCrc) != header_crc)
    fail("artifact: header checksum mismatch (CRC32 at byte ", kOffHeaderCrc, ")");
  uint32_t header_size = get_u32_at(data + kOffHeaderSize);
  if (header_size != kHeaderSize)
    fail("artifact: header size ", header_size, " at byte ", kOffHeaderSize, " (expected ", kHeaderSize, ")");
  uint32_t flags = get_u32_at(data + kOffFlags);
  if (flags & ~kKnownFlags) fail("artifact: unknown flags 0x", std::hex, flags, std::dec, " at byte ", kOffFlags);
  uint32_t nsec = get_u32_at(data + kOffSectionCount);
  if (nsec != kSectionCount)
    fail("artifact: section count ", nsec, " at byte ", kOffSectionCount, " (expected ", kSectionCount, ")");
  uint64_t total = get_u64_at(data + kOffTotalSize);
  if (total != size)
    fail("artifact: size mismatch: header at byte ", kOffTotalSize, " says ", total, " bytes, file has ", size,
         size < total ? " (truncated)" : " (trailing data)");
  uint32_t payload_crc = get_u32_at(data + kOffPayloadCrc);
  if (crc32_of(data + kHeaderSize, size - kHeaderSize) != payload_crc)
    fail("artifact: payload checksum mismatch (CRC32 at byte ", kOffPayloadCrc, " over bytes ", kHeaderSize,
         "..", size, ")");

  size_t sec_off[kSectionCount], sec_size[kSectionCount];
  size_t prev_end = kHeaderSize;
  for (uint32_t i = 0; i < kSectionCount; ++i) {
    size_t e = kOffSections + i * kSectionEntrySize;
    uint32_t kind = get_u32_at(data + e);
    uint32_t expected_kind = i == 0 ? uint32_t(SectionKind::Plan) : uint32_t(SectionKind::Weights);
    if (kind != expected_kind)
      fail("artifact: section ", i, " has kind ", kind, " at byte ", e, " (expected ", expected_kind, ")");
    if (get_u32_at(data + e + 4) != 0) fail("artifact: nonzero reserved field at byte ", e + 4);
    uint64_t off = get_u64_at(data + e + 8), sz = get_u64_at(data + e + 16);
    if (off >= prev_end && off <= size)
      for (size_t at = prev_end; at < off; ++at)
        if (data[at] != 0) fail("artifact: nonzero padding byte at byte ", at);
    if (off < prev_end || off > size || sz > size - off)
      fail("artifact: section ", i, " range [", off, ", +", sz, ") at byte ", e + 8, " lies outside the file (",
           size, " bytes) or overlaps the previous section");
    if (kind == uint32_t(SectionKind::Weights) && off % kWeightsAlign != 0)
      fail("artifact: weights section offset ", off, " at byte ", e + 8, " is not ", kWeightsAlign,
           "-byte aligned");
    sec_off[i] = size_t(off);
    sec_size[i] = size_t(sz);
    prev_end = size_t(off + sz);
  }
  if (prev_end != size)
    fail("artifact: ", size - prev_end, " unexpected bytes after the last section at byte ", prev_end);

  Plan p;
  Reader r(data, sec_off[0], sec_off[0] + sec_size[0]);
  read_plan(r, p);
  if (owned && owned->data() == data && sec_off[1] + sec_size[1] == size) {
    owned->erase(owned->begin(), owned->begin() + std::ptrdiff_t(sec_off[1]));
    p.weights = std::move(*owned);
  } else {
    p.weights.assign(data + sec_off[1], data + sec_off[1] + sec_size[1]);
  }
  try {
    validate(p);
  } catch (const Error& e) {
    fail("artifact: invalid plan: ", e.what());
  }
  return p;
}

}  // namespace

Plan deserialize(const uint8_t* data, size_t size) { return parse_artifact(data, size, nullptr); }

void save_artifact(const Plan& p, const std::string& path) {
  std::vector<uint8_t> bytes = serialize(p);
  // Unique temp file beside the target, fsync'ed and renamed into place (core/file_io.h), so a
  // failed write never leaves a half-written artifact under the final name.
  write_file_atomic(path, bytes, "artifact");
}

Plan load_artifact(const std::string& path) {
  std::vector<uint8_t> bytes = read_file_bytes(path, "artifact");
  try {
    return parse_artifact(bytes.data(), bytes.size(), &bytes);
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
}

}  // namespace opv::plan
