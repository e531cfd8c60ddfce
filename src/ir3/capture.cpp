// Capture loading and saving (format: tools/ir3_capture.py, "opvision-ir3-capture" version 1).
//
// Steps of load(): (1) read and parse capture.json (nlohmann::json); (2) read kernels, buffers,
// inputs/outputs, setup and schedule with typed getters that name the JSON path on error;
// (3) check every cross reference (kernel and buffer indices, arg ranges inside their buffer,
// image sizes inside their range, dims > 0) so that the replay can trust the structure; (4) read
// each kernel's code image and data.bin, size-checked.
#include "ir3/capture.h"

#include <openssl/evp.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "ir3/isa.h"

namespace opv::ir3 {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kFormat = "opvision-ir3-capture";
constexpr uint64_t kMaxJsonBytes = uint64_t(64) << 20;
constexpr uint64_t kMaxImageBytes = uint64_t(4) << 20;      // one kernel's code
constexpr uint64_t kMaxDataBytes = uint64_t(1) << 30;
constexpr uint64_t kMaxBufferBytes = uint64_t(1) << 31;     // one buffer
constexpr uint64_t kMaxTotalBytes = uint64_t(4) << 30;      // all buffers together
constexpr uint32_t kMaxDim = 1u << 16;

// Typed access to one JSON object, naming its path in errors.
struct Obj {
  const json& j;
  std::string path;

  const json& at(const char* k) const {
    OPV_CHECK(j.is_object(), "capture: ", path, " is not an object");
    auto it = j.find(k);
    OPV_CHECK(it != j.end(), "capture: ", path, " has no '", k, "'");
    return *it;
  }
  bool has(const char* k) const { return j.is_object() && j.contains(k) && !j.at(k).is_null(); }
  int64_t i64(const char* k, int64_t lo, int64_t hi) const {
    const json& v = at(k);
    OPV_CHECK(v.is_number_integer(), "capture: ", path, ".", k, " is not an integer");
    int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : v.get<int64_t>();
    OPV_CHECK(x >= lo && x <= hi, "capture: ", path, ".", k, " = ", x, " is outside [", lo, ", ", hi, "]");
    return x;
  }
  uint64_t u64(const char* k, uint64_t hi) const { return static_cast<uint64_t>(i64(k, 0, static_cast<int64_t>(hi))); }
  std::string str(const char* k) const {
    const json& v = at(k);
    OPV_CHECK(v.is_string(), "capture: ", path, ".", k, " is not a string");
    return v.get<std::string>();
  }
  Obj sub(const char* k) const { return Obj{at(k), path + "." + k}; }
  std::vector<Obj> list(const char* k) const {
    const json& v = at(k);
    OPV_CHECK(v.is_array(), "capture: ", path, ".", k, " is not a list");
    std::vector<Obj> out;
    for (size_t i = 0; i < v.size(); ++i) out.push_back(Obj{v[i], path + "." + k + "[" + std::to_string(i) + "]"});
    return out;
  }
};

std::array<uint32_t, 3> dims3(const Obj& o, const char* k) {
  const json& v = o.at(k);
  OPV_CHECK(v.is_array() && v.size() == 3, "capture: ", o.path, ".", k, " is not a list of 3 integers");
  std::array<uint32_t, 3> d{};
  for (int i = 0; i < 3; ++i) {
    OPV_CHECK(v[i].is_number_integer() && v[i].get<int64_t>() >= 1 && v[i].get<int64_t>() <= kMaxDim, "capture: ", o.path,
              ".", k, "[", i, "] must be an integer in [1, ", kMaxDim, "]");
    d[i] = v[i].get<uint32_t>();
  }
  return d;
}

CaptureLaunch read_launch(const Obj& o, const Capture& c) {
  CaptureLaunch l;
  l.kernel = static_cast<int>(o.i64("kernel", 0, static_cast<int64_t>(c.kernels.size()) - 1));
  l.global_size = dims3(o, "global_size");
  l.local_size = dims3(o, "local_size");
  OPV_CHECK(uint64_t(l.local_size[0]) * l.local_size[1] * l.local_size[2] <= 1024, "capture: ", o.path,
            ".local_size has more than 1024 invocations");
  const CaptureKernel& k = c.kernels[l.kernel];
  int images = 0;
  for (const Obj& a : o.list("args")) {
    CaptureArg arg;
    std::string kind = a.str("kind");
    if (kind == "value") {
      arg.kind = CaptureArg::Kind::Value;
      arg.dtype = a.str("dtype");
      arg.value = a.i64("value", INT32_MIN, UINT32_MAX);
      l.args.push_back(arg);
      continue;
    }
    OPV_CHECK(kind == "buffer" || kind == "image", "capture: ", a.path, ".kind '", kind, "' is not buffer, image or value");
    arg.kind = kind == "image" ? CaptureArg::Kind::Image : CaptureArg::Kind::Buffer;
    arg.buffer = static_cast<int>(a.i64("buffer", 0, static_cast<int64_t>(c.buffer_bytes.size()) - 1));
    arg.offset = a.u64("offset", kMaxBufferBytes);
    arg.bytes = a.u64("bytes", kMaxBufferBytes);
    OPV_CHECK(arg.offset + arg.bytes <= c.buffer_bytes[arg.buffer], "capture: ", a.path, " [", arg.offset, ", +",
              arg.bytes, ") lies outside buffer ", arg.buffer, " (", c.buffer_bytes[arg.buffer], " bytes)");
    arg.dtype = a.str("dtype");
    std::string acc = a.str("access");
    arg.reads = acc.find('r') != std::string::npos;
    arg.writes = acc.find('w') != std::string::npos;
    if (arg.kind == CaptureArg::Kind::Image) {
      arg.height = static_cast<int>(a.i64("height", 1, 16384));
      arg.width = static_cast<int>(a.i64("width", 1, 16384));
      int eb = capture_dtype_bytes(arg.dtype);
      OPV_CHECK(eb == 2 || eb == 4, "capture: ", a.path, " image dtype '", arg.dtype, "' is not half or float");
      OPV_CHECK(uint64_t(arg.height) * arg.width * 4 * eb <= arg.bytes, "capture: ", a.path, " image ", arg.height, "x",
                arg.width, " does not fit its ", arg.bytes, " bytes");
      ++images;
    }
    l.args.push_back(arg);
  }
  OPV_CHECK(images == k.num_tex + k.num_ibo || (k.num_tex == 0 && images == k.num_ibo), "capture: ", o.path, " binds ",
            images, " images but kernel ", k.name, " has ", k.num_tex, " textures and ", k.num_ibo, " IBOs");
  for (int t : k.tex_to_image)
    OPV_CHECK(t >= 0 && k.num_ibo + t < images, "capture: kernel ", k.name, " tex_to_image entry ", t, " names no image");
  return l;
}

CaptureTensor read_tensor(const Obj& o, const Capture& c) {
  CaptureTensor t;
  t.name = o.str("name");
  t.dtype = o.str("dtype");
  t.buffer = static_cast<int>(o.i64("buffer", 0, static_cast<int64_t>(c.buffer_bytes.size()) - 1));
  t.offset = o.u64("offset", kMaxBufferBytes);
  const json& s = o.at("shape");
  OPV_CHECK(s.is_array() && s.size() <= 8, "capture: ", o.path, ".shape is not a list of at most 8 dims");
  for (const json& d : s) {
    OPV_CHECK(d.is_number_integer() && d.get<int64_t>() >= 1 && d.get<int64_t>() <= (int64_t(1) << 31), "capture: ",
              o.path, ".shape has a bad dim");
    t.shape.push_back(d.get<int64_t>());
  }
  OPV_CHECK(t.dtype == "uint8" || t.dtype == "float32" || t.dtype == "float16", "capture: ", o.path, ".dtype '", t.dtype,
            "' is not uint8, float16 or float32");
  uint64_t n = 1;
  for (int64_t d : t.shape) {
    OPV_CHECK(n <= kMaxBufferBytes / uint64_t(d), "capture: ", o.path, ".shape is too large");
    n *= uint64_t(d);
  }
  OPV_CHECK(n <= kMaxBufferBytes / 4 && t.offset + t.bytes() <= c.buffer_bytes[t.buffer], "capture: ", o.path,
            " does not fit buffer ", t.buffer);
  return t;
}

}  // namespace

std::vector<uint8_t> setup_copy_bytes(const Capture& cap, const CaptureCopy& c,
                                      const std::function<std::vector<uint8_t>(const std::string&)>& initializer,
                                      const std::function<void(int, uint64_t, void*, uint64_t)>& read_buffer,
                                      const char* who) {
  std::vector<uint8_t> bytes;
  if (!c.initializer.empty()) {
    OPV_CHECK(bool(initializer), who, ": the setup copies ONNX initializer '", c.initializer, "' but no model was given");
    bytes = initializer(c.initializer);
    OPV_CHECK(bytes.size() == c.bytes, who, ": initializer '", c.initializer, "' has ", bytes.size(),
              " bytes, the capture copies ", c.bytes);
    OPV_CHECK(c.sha256.empty() || sha256_hex(bytes.data(), bytes.size()) == c.sha256, who, ": initializer '",
              c.initializer, "' differs from the one the capture was made with (sha256): wrong model?");
  } else if (c.data_offset) {
    bytes.assign(cap.data.begin() + static_cast<ptrdiff_t>(*c.data_offset),
                 cap.data.begin() + static_cast<ptrdiff_t>(*c.data_offset + c.bytes));
  } else {
    bytes.resize(c.bytes);
    read_buffer(c.src_buffer, c.src_offset, bytes.data(), c.bytes);
  }
  return bytes;
}

std::string sha256_hex(const void* data, size_t n) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  OPV_CHECK(EVP_Digest(data, n, md, &len, EVP_sha256(), nullptr) == 1, "sha256: OpenSSL EVP_Digest failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) out += hex[md[i] >> 4], out += hex[md[i] & 15];
  return out;
}

int capture_dtype_bytes(const std::string& d) {
  if (d == "half" || d == "float16" || d == "short" || d == "unsigned short") return 2;
  if (d == "float" || d == "float32" || d == "int" || d == "unsigned int") return 4;
  if (d == "char" || d == "unsigned char" || d == "uint8" || d == "bool") return 1;
  if (d == "long" || d == "unsigned long" || d == "double") return 8;
  return 0;
}

uint64_t CaptureTensor::bytes() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n * static_cast<uint64_t>(capture_dtype_bytes(dtype));
}

Capture Capture::load(const std::string& dir) {
  Capture c;
  c.dir = dir;
  fs::path root(dir);
  std::string jpath = (root / "capture.json").string();
  std::string text = read_file_string(jpath, "capture", kMaxJsonBytes);
  json j = json::parse(text, nullptr, false);
  OPV_CHECK(!j.is_discarded(), "capture: ", jpath, " is not valid JSON");
  Obj top{j, "capture.json"};
  OPV_CHECK(top.str("format") == kFormat, "capture: ", jpath, " is not an opvision IR3 capture (format '", top.str("format"), "')");
  OPV_CHECK(top.i64("version", 0, 1000) == 1, "capture: ", jpath, " has version ", top.i64("version", 0, 1000),
            "; this build reads version 1");
  c.gpu = top.str("gpu");
  OPV_CHECK(c.gpu == "a630", "capture: gpu '", c.gpu, "' is not a630");
  Obj model = top.sub("model");
  c.model_file = model.str("file");
  c.model_sha256 = model.str("sha256");

  for (const Obj& k : top.list("kernels")) {
    CaptureKernel kk;
    kk.name = k.str("name");
    kk.image_file = k.str("image");
    OPV_CHECK(kk.image_file.find("..") == std::string::npos && !kk.image_file.empty() && kk.image_file[0] != '/',
              "capture: ", k.path, ".image '", kk.image_file, "' must be a path inside the capture");
    kk.sha256 = k.has("sha256") ? k.str("sha256") : "";
    kk.max_reg = static_cast<int>(k.i64("max_reg", -1, 63));
    kk.max_half_reg = static_cast<int>(k.i64("max_half_reg", -1, 63));
    kk.branchstack = static_cast<int>(k.i64("branchstack", 0, 64));
    if (k.has("mergedregs")) {
      OPV_CHECK(k.at("mergedregs").is_boolean(), "capture: ", k.path, ".mergedregs is not a boolean");
      kk.mergedregs = k.at("mergedregs").get<bool>();
    }
    kk.pvtmem_bytes = static_cast<uint32_t>(k.u64("pvtmem_bytes", 1u << 20));
    kk.shared_bytes = static_cast<uint32_t>(k.u64("shared_bytes", 32768));
    kk.constlen_vec4 = static_cast<uint32_t>(k.u64("constlen_vec4", 1024));
    kk.work_group_id_regid = static_cast<int>(k.i64("work_group_id_regid", 0, 255));
    kk.local_invocation_id_regid = static_cast<int>(k.i64("local_invocation_id_regid", 0, 255));
    if (k.has("local_size_const_byte")) kk.local_size_const_byte = static_cast<uint32_t>(k.u64("local_size_const_byte", 16383 - 12));
    kk.args_const_byte = static_cast<uint32_t>(k.u64("args_const_byte", 16383));
    kk.immediates_const_byte = static_cast<uint32_t>(k.u64("immediates_const_byte", 16383));
    const json& imm = k.at("immediates");
    OPV_CHECK(imm.is_array() && imm.size() <= 4096, "capture: ", k.path, ".immediates is not a list of at most 4096");
    for (const json& v : imm) {
      OPV_CHECK(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0), "capture: ", k.path,
                ".immediates has a non-integer");
      kk.immediates.push_back(static_cast<uint32_t>(v.get<uint64_t>()));
    }
    OPV_CHECK(kk.immediates_const_byte / 4 + kk.immediates.size() <= 4096, "capture: ", k.path, " immediates overflow the const file");
    kk.num_tex = static_cast<int>(k.i64("num_tex", 0, 128));
    kk.num_ibo = static_cast<int>(k.i64("num_ibo", 0, 128));
    const json& t2i = k.at("tex_to_image");
    OPV_CHECK(t2i.is_array() && static_cast<int>(t2i.size()) == kk.num_tex, "capture: ", k.path,
              ".tex_to_image must have num_tex entries");
    for (const json& v : t2i) {
      OPV_CHECK(v.is_number_integer(), "capture: ", k.path, ".tex_to_image has a non-integer");
      kk.tex_to_image.push_back(v.get<int>());
    }
    std::vector<uint8_t> image = read_file_bytes((root / kk.image_file).string(), "kernel image", kMaxImageBytes);
    OPV_CHECK(kk.sha256.empty() || sha256_hex(image.data(), image.size()) == kk.sha256, "capture: kernel ", kk.name,
              ": ", kk.image_file, " does not match its sha256 (changed or corrupt)");
    kk.code = words_from_bytes(image);
    OPV_CHECK(!kk.code.empty(), "capture: kernel ", kk.name, " has an empty code image");
    c.kernels.push_back(std::move(kk));
  }

  uint64_t total = 0;
  for (const Obj& b : top.list("buffers")) {
    uint64_t n = b.u64("bytes", kMaxBufferBytes);
    total += n;
    OPV_CHECK(total <= kMaxTotalBytes, "capture: buffers total more than ", kMaxTotalBytes, " bytes");
    c.buffer_bytes.push_back(n);
  }
  c.data = fs::exists(root / "data.bin") ? read_file_bytes((root / "data.bin").string(), "capture data", kMaxDataBytes)
                                          : std::vector<uint8_t>{};
  for (const Obj& t : top.list("inputs")) c.inputs.push_back(read_tensor(t, c));
  for (const Obj& t : top.list("outputs")) c.outputs.push_back(read_tensor(t, c));
  OPV_CHECK(!c.outputs.empty(), "capture: no outputs");

  for (const Obj& s : top.list("setup")) {
    CaptureStep st;
    std::string op = s.str("op");
    if (op == "launch") {
      st.is_launch = true;
      st.launch = read_launch(s, c);
    } else {
      OPV_CHECK(op == "copy", "capture: ", s.path, ".op '", op, "' is not copy or launch");
      CaptureCopy& cp = st.copy;
      cp.buffer = static_cast<int>(s.i64("buffer", 0, static_cast<int64_t>(c.buffer_bytes.size()) - 1));
      cp.offset = s.u64("offset", kMaxBufferBytes);
      cp.bytes = s.u64("bytes", kMaxBufferBytes);
      OPV_CHECK(cp.offset + cp.bytes <= c.buffer_bytes[cp.buffer], "capture: ", s.path, " writes outside its buffer");
      cp.sha256 = s.has("sha256") ? s.str("sha256") : "";
      if (s.has("initializer")) {
        cp.initializer = s.str("initializer");
      } else if (s.has("data_offset")) {
        cp.data_offset = s.u64("data_offset", kMaxDataBytes);
        OPV_CHECK(*cp.data_offset + cp.bytes <= c.data.size(), "capture: ", s.path, " reads past the end of data.bin");
      } else {
        cp.src_buffer = static_cast<int>(s.i64("src_buffer", 0, static_cast<int64_t>(c.buffer_bytes.size()) - 1));
        cp.src_offset = s.u64("src_offset", kMaxBufferBytes);
        OPV_CHECK(cp.src_offset + cp.bytes <= c.buffer_bytes[cp.src_buffer], "capture: ", s.path, " reads outside its source buffer");
      }
    }
    c.setup.push_back(std::move(st));
  }
  for (const Obj& s : top.list("schedule")) c.schedule.push_back(read_launch(s, c));
  OPV_CHECK(!c.schedule.empty(), "capture: the schedule has no launches");
  return c;
}

void Capture::save(const std::string& dir, const std::string& original_json_dir) const {
  fs::path src(original_json_dir), dst(dir);
  std::string text = read_file_string((src / "capture.json").string(), "capture", kMaxJsonBytes);
  json j = json::parse(text, nullptr, false);
  OPV_CHECK(!j.is_discarded() && j.contains("kernels") && j["kernels"].size() == kernels.size(),
            "capture: ", (src / "capture.json").string(), " does not match the loaded capture");
  std::error_code ec;
  fs::create_directories(dst / "kernels", ec);
  OPV_CHECK(!ec, "cannot create '", (dst / "kernels").string(), "': ", ec.message());
  for (size_t i = 0; i < kernels.size(); ++i) {
    const CaptureKernel& k = kernels[i];
    json& jk = j["kernels"][i];
    jk["image"] = k.image_file;
    std::vector<uint8_t> image = bytes_from_words(k.code);
    jk["sha256"] = sha256_hex(image.data(), image.size());
    jk["max_reg"] = k.max_reg;
    jk["max_half_reg"] = k.max_half_reg;
    jk["instructions"] = k.code.size();
    write_file_atomic((dst / k.image_file).string(), image, "kernel image");
  }
  write_file_atomic((dst / "data.bin").string(), data, "capture data");
  write_file_atomic((dst / "capture.json").string(), j.dump(1), "capture");
}

}  // namespace opv::ir3
