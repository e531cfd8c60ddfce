/* ONNX tensor reading: TensorProto -> opv::Tensor.
 *
 * 1. Map the ONNX element type to a DType (f32, f16, f64, i64, i32, i8, u8, bool).
 * 2. Take the bytes from raw_data, from the typed field the ONNX spec assigns to that type
 *    (float_data, int32_data for f16/i8/u8/bool/i32, int64_data, double_data), or from an
 *    external file (location/offset/length relative to the model's folder).
 * 3. Check that the byte/element count matches the dims; every mismatch is an opv::Error
 *    naming the tensor.
 * Invariant: the returned tensor has exactly numel(dims) elements of the mapped dtype.
 */
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/file_io.h"

#include "core/half.h"
#include "import/importer.h"

namespace opv::onnx_import {

using TP = onnx::TensorProto;

std::optional<DType> dtype_from_onnx(int32_t t) {
  switch (t) {
    case TP::FLOAT: return DType::F32;
    case TP::FLOAT16: return DType::F16;
    case TP::DOUBLE: return DType::F64;
    case TP::INT64: return DType::I64;
    case TP::INT32: return DType::I32;
    case TP::INT8: return DType::I8;
    case TP::UINT8: return DType::U8;
    case TP::BOOL: return DType::Bool;
    default: return std::nullopt;
  }
}

const char* onnx_type_name(int32_t t) {
  if (TP::DataType_IsValid(t)) {
    static thread_local std::string s;
    s = TP::DataType_Name(TP::DataType(t));
    return s.c_str();
  }
  return "<invalid type>";
}

namespace {

// Resolves an external-data location against the model's folder and checks that the file stays
// inside it: relative, no '..' component, and (after resolving symlinks) still under the folder.
std::filesystem::path confined_external_path(const TP& t, const std::string& base_dir, const std::string& location) {
  namespace fs = std::filesystem;
  fs::path loc(location);
  OPV_CHECK(!loc.is_absolute() && !loc.has_root_name() && !loc.has_root_directory(), "initializer '", t.name(),
            "': external data location '", location, "' is an absolute path; it must be relative to the model's folder");
  for (const fs::path& part : loc)
    OPV_CHECK(part != "..", "initializer '", t.name(), "': external data location '", location,
              "' contains '..'; it must stay inside the model's folder");
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::absolute(base_dir.empty() ? fs::path(".") : fs::path(base_dir)), ec);
  OPV_CHECK(!ec, "initializer '", t.name(), "': cannot resolve the model's folder '", base_dir, "': ", ec.message());
  fs::path file = fs::weakly_canonical(base / loc, ec);
  OPV_CHECK(!ec, "initializer '", t.name(), "': cannot resolve external data location '", location, "': ",
            ec.message());
  // Component-wise prefix test ("/m/ab" is not inside "/m/a").
  auto b = base.begin(), f = file.begin();
  for (; b != base.end(); ++b, ++f) {
    if (b->empty() && std::next(b) == base.end()) break;  // trailing separator
    OPV_CHECK(f != file.end() && *f == *b, "initializer '", t.name(), "': external data location '", location,
              "' resolves to '", file.string(), "', outside the model's folder '", base.string(), "'");
  }
  OPV_CHECK(f != file.end(), "initializer '", t.name(), "': external data location '", location,
            "' names the model's folder itself");
  return file;
}

Tensor read_external(const TP& t, const std::string& base_dir, DType dt, const Shape& shape, int64_t want) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    try {
      size_t used = 0;
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value(), &used);
      else if (kv.key() == "length") length = std::stoll(kv.value(), &used);
      if ((kv.key() == "offset" || kv.key() == "length") && used != kv.value().size())
        throw std::invalid_argument(kv.key());
    } catch (const std::exception&) {
      fail("initializer '", t.name(), "': external_data '", kv.key(), "' = '", kv.value(), "' is not a number");
    }
  }
  OPV_CHECK(!location.empty(), "initializer '", t.name(), "': external data has no 'location'");
  const std::filesystem::path p = confined_external_path(t, base_dir, location);
  uint64_t usize = 0;
  int fd = -1;
  try {
    fd = open_regular_file(p.string(), "external data file", kMaxInputFileBytes, &usize);
  } catch (const Error& e) {
    fail("initializer '", t.name(), "': ", e.what());
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const int64_t size = int64_t(usize);
  if (length < 0) length = want;
  OPV_CHECK(offset >= 0 && offset <= size && length <= size - offset, "initializer '", t.name(),
            "': external data range offset ", offset, " length ", length, " is outside '", p.string(), "' (",
            size, " bytes)");
  OPV_CHECK(length == want, "initializer '", t.name(), "': external data length ", length, " but ",
            dtype_name(dt), shape_str(shape), " needs ", want, " bytes");
  Tensor out(dt, shape);
  auto* dst = reinterpret_cast<uint8_t*>(out.raw());
  int64_t got = 0;
  while (got < want) {
    ssize_t r = ::pread(fd, dst + got, size_t(want - got), off_t(offset + got));
    if (r < 0 && errno == EINTR) continue;
    OPV_CHECK(r > 0, "initializer '", t.name(), "': reading external data from '", p.string(), "' failed: ",
              r < 0 ? std::strerror(errno) : "unexpected end of file");
    got += r;
  }
  return out;
}

}  // namespace

Tensor tensor_from_proto(const TP& t, const std::string& base_dir, const Limits& limits) {
  auto dt = dtype_from_onnx(t.data_type());
  OPV_CHECK(dt, "initializer '", t.name(), "': element type ", onnx_type_name(t.data_type()), " is not supported");
  Shape shape;
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    OPV_CHECK(d >= 0, "initializer '", t.name(), "': negative dim ", d);
    OPV_CHECK(d == 0 || n <= kMaxImportElems / d, "initializer '", t.name(), "': dims are too large");
    n *= d;
    shape.push_back(d);
  }
  check_tensor_limits(*dt, shape, "initializer '" + t.name() + "'", limits);
  const size_t nbytes = size_t(n) * dtype_size(*dt);
  // Check the source holds the data before allocating (a corrupt file must not allocate huge).
  if (t.data_location() == TP::EXTERNAL) return read_external(t, base_dir, *dt, shape, int64_t(nbytes));
  if (t.has_raw_data()) {
    OPV_CHECK(t.raw_data().size() == nbytes, "initializer '", t.name(), "': raw_data has ", t.raw_data().size(),
              " bytes, ", dtype_name(*dt), shape_str(shape), " needs ", nbytes);
    Tensor out(*dt, shape);
    if (n) std::memcpy(out.raw(), t.raw_data().data(), nbytes);
    return out;
  }
  int64_t have = *dt == DType::F32   ? t.float_data_size()
                 : *dt == DType::F64 ? t.double_data_size()
                 : *dt == DType::I64 ? t.int64_data_size()
                                     : t.int32_data_size();
  OPV_CHECK(have == n, "initializer '", t.name(), "': has ", have, " typed values, ", dtype_name(*dt),
            shape_str(shape), " needs ", n);
  Tensor out(*dt, shape);
  switch (*dt) {
    case DType::F32:
      for (int64_t i = 0; i < n; ++i) out.data<float>()[i] = t.float_data(int(i));
      break;
    case DType::F64:
      for (int64_t i = 0; i < n; ++i) out.data<double>()[i] = t.double_data(int(i));
      break;
    case DType::I64:
      for (int64_t i = 0; i < n; ++i) out.data<int64_t>()[i] = t.int64_data(int(i));
      break;
    case DType::I32:
      for (int64_t i = 0; i < n; ++i) out.data<int32_t>()[i] = t.int32_data(int(i));
      break;
    case DType::F16:
      // The spec stores fp16 as its 16 bit pattern in int32_data.
      for (int64_t i = 0; i < n; ++i) out.data<uint16_t>()[i] = uint16_t(t.int32_data(int(i)));
      break;
    case DType::I8:
      for (int64_t i = 0; i < n; ++i) out.data<int8_t>()[i] = int8_t(t.int32_data(int(i)));
      break;
    case DType::U8:
      for (int64_t i = 0; i < n; ++i) out.data<uint8_t>()[i] = uint8_t(t.int32_data(int(i)));
      break;
    case DType::Bool:
      for (int64_t i = 0; i < n; ++i) out.data<uint8_t>()[i] = t.int32_data(int(i)) != 0;
      break;
  }
  return out;
}

}  // namespace opv::onnx_import
