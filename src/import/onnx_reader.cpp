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
#include <cstring>
#include <filesystem>
#include <fstream>

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

void read_external(const TP& t, const std::string& base_dir, Tensor& out) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (const std::exception&) {
      fail("initializer '", t.name(), "': external_data '", kv.key(), "' = '", kv.value(), "' is not a number");
    }
  }
  OPV_CHECK(!location.empty(), "initializer '", t.name(), "': external data has no 'location'");
  namespace fs = std::filesystem;
  fs::path p = fs::path(base_dir.empty() ? "." : base_dir) / location;
  std::ifstream f(p, std::ios::binary);
  OPV_CHECK(f.good(), "initializer '", t.name(), "': cannot open external data file '", p.string(), "'");
  f.seekg(0, std::ios::end);
  int64_t size = int64_t(f.tellg());
  int64_t want = int64_t(out.nbytes());
  if (length < 0) length = want;
  OPV_CHECK(offset >= 0 && offset <= size && length <= size - offset, "initializer '", t.name(),
            "': external data range offset ", offset, " length ", length, " is outside '", p.string(), "' (",
            size, " bytes)");
  OPV_CHECK(length == want, "initializer '", t.name(), "': external data length ", length, " but ",
            dtype_name(out.dtype()), shape_str(out.shape()), " needs ", want, " bytes");
  f.seekg(offset);
  f.read(reinterpret_cast<char*>(out.raw()), std::streamsize(want));
  OPV_CHECK(f.good(), "initializer '", t.name(), "': reading external data from '", p.string(), "' failed");
}

template <typename Field>
void check_count(const TP& t, const Field& field, int64_t n, const char* fname) {
  OPV_CHECK(int64_t(field.size()) == n, "initializer '", t.name(), "': ", fname, " has ", field.size(),
            " values, dims need ", n);
}

}  // namespace

Tensor tensor_from_proto(const TP& t, const std::string& base_dir) {
  auto dt = dtype_from_onnx(t.data_type());
  OPV_CHECK(dt, "initializer '", t.name(), "': element type ", onnx_type_name(t.data_type()), " is not supported");
  Shape shape;
  for (int64_t d : t.dims()) {
    OPV_CHECK(d >= 0, "initializer '", t.name(), "': negative dim ", d);
    shape.push_back(d);
  }
  Tensor out(*dt, shape);
  const int64_t n = out.numel();
  if (t.data_location() == TP::EXTERNAL) {
    read_external(t, base_dir, out);
    return out;
  }
  if (t.has_raw_data()) {
    OPV_CHECK(t.raw_data().size() == out.nbytes(), "initializer '", t.name(), "': raw_data has ",
              t.raw_data().size(), " bytes, ", dtype_name(*dt), shape_str(shape), " needs ", out.nbytes());
    if (n) std::memcpy(out.raw(), t.raw_data().data(), out.nbytes());
    return out;
  }
  switch (*dt) {
    case DType::F32:
      check_count(t, t.float_data(), n, "float_data");
      for (int64_t i = 0; i < n; ++i) out.data<float>()[i] = t.float_data(int(i));
      break;
    case DType::F64:
      check_count(t, t.double_data(), n, "double_data");
      for (int64_t i = 0; i < n; ++i) out.data<double>()[i] = t.double_data(int(i));
      break;
    case DType::I64:
      check_count(t, t.int64_data(), n, "int64_data");
      for (int64_t i = 0; i < n; ++i) out.data<int64_t>()[i] = t.int64_data(int(i));
      break;
    case DType::I32:
      check_count(t, t.int32_data(), n, "int32_data");
      for (int64_t i = 0; i < n; ++i) out.data<int32_t>()[i] = t.int32_data(int(i));
      break;
    case DType::F16:
      // The spec stores fp16 as its 16 bit pattern in int32_data.
      check_count(t, t.int32_data(), n, "int32_data");
      for (int64_t i = 0; i < n; ++i) out.data<uint16_t>()[i] = uint16_t(t.int32_data(int(i)));
      break;
    case DType::I8:
      check_count(t, t.int32_data(), n, "int32_data");
      for (int64_t i = 0; i < n; ++i) out.data<int8_t>()[i] = int8_t(t.int32_data(int(i)));
      break;
    case DType::U8:
      check_count(t, t.int32_data(), n, "int32_data");
      for (int64_t i = 0; i < n; ++i) out.data<uint8_t>()[i] = uint8_t(t.int32_data(int(i)));
      break;
    case DType::Bool:
      check_count(t, t.int32_data(), n, "int32_data");
      for (int64_t i = 0; i < n; ++i) out.data<uint8_t>()[i] = t.int32_data(int(i)) != 0;
      break;
  }
  return out;
}

}  // namespace opv::onnx_import
