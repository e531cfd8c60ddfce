// Capture replay on the simulator (see replay.h for the binding rules and their sources).
#include "ir3/replay.h"

#include <cstring>

#include "core/error.h"

namespace opv::ir3 {

namespace {

constexpr int kWaveSize = 64;       // THREAD64, as tinygrad launches a630 compute
constexpr int kNoReg = 252;         // Mesa's regid_t "none"
constexpr size_t kConstDwords = 4096;  // 1024 vec4

SimImage image_of(const CaptureArg& a) {
  SimImage im;
  int eb = capture_dtype_bytes(a.dtype);
  im.format = eb == 2 ? SimImage::Format::RGBA16F : SimImage::Format::RGBA32F;
  im.width = a.width;
  im.height = a.height;
  im.pitch = static_cast<uint32_t>(a.width) * 4u * static_cast<uint32_t>(eb);
  return im;
}

}  // namespace

Replayer::Replayer(const Capture& capture, ReplayOptions opts, std::vector<std::vector<uint64_t>> code)
    : cap_(capture), opts_(std::move(opts)), code_(std::move(code)), sim_({}) {
  if (code_.empty())
    for (const CaptureKernel& k : cap_.kernels) code_.push_back(k.code);
  OPV_CHECK(code_.size() == cap_.kernels.size(), "ir3 replay: ", code_.size(), " code images for ", cap_.kernels.size(), " kernels");
  for (uint64_t n : cap_.buffer_bytes) addr_.push_back(sim_.alloc(n ? n : 1));
  if (opts_.skip_setup) return;
  for (const CaptureStep& s : cap_.setup) {
    if (s.is_launch) {
      launch(s.launch);
      continue;
    }
    const CaptureCopy& c = s.copy;
    std::vector<uint8_t> bytes = setup_copy_bytes(
        cap_, c, opts_.initializer,
        [&](int b, uint64_t off, void* dst, uint64_t n) { sim_.read(addr_[static_cast<size_t>(b)] + off, dst, n); }, "ir3 replay");
    sim_.write(addr_[c.buffer] + c.offset, bytes.data(), c.bytes);
  }
}

SimStats Replayer::launch(const CaptureLaunch& l) {
  const CaptureKernel& k = cap_.kernels[l.kernel];
  sim_.set_program(code_[l.kernel]);
  sim_.consts.assign(std::max<size_t>(kConstDwords, k.constlen_vec4 * 4u), 0);
  sim_.images.clear();
  sim_.ibos.clear();
  auto put = [&](uint32_t byte, uint64_t v, int bytes) {
    OPV_CHECK(byte % 4 == 0 || bytes < 4, "ir3 replay: kernel ", k.name, ": misaligned const at byte ", byte);
    OPV_CHECK(byte / 4 + (bytes + 3) / 4 <= sim_.consts.size(), "ir3 replay: kernel ", k.name, ": const byte ", byte,
              " is outside the const file");
    auto* p = reinterpret_cast<uint8_t*>(sim_.consts.data()) + byte;
    std::memcpy(p, &v, static_cast<size_t>(bytes));
  };
  uint32_t nbuf = 0;
  std::vector<const CaptureArg*> images;
  for (const CaptureArg& a : l.args) {
    if (a.kind == CaptureArg::Kind::Buffer) put(k.args_const_byte + 8 * nbuf++, addr_[a.buffer] + a.offset, 8);
    else if (a.kind == CaptureArg::Kind::Image) images.push_back(&a);
  }
  uint32_t off = nbuf * 8;
  for (const CaptureArg& a : l.args) {
    if (a.kind != CaptureArg::Kind::Value) continue;
    int eb = capture_dtype_bytes(a.dtype);
    OPV_CHECK(eb >= 1 && eb <= 8, "ir3 replay: value of dtype '", a.dtype, "'");
    off = (off + eb - 1) / eb * eb;
    put(k.args_const_byte + off, static_cast<uint64_t>(a.value), eb);
    off += eb;
  }
  for (size_t i = 0; i < k.immediates.size(); ++i) put(k.immediates_const_byte + 4 * static_cast<uint32_t>(i), k.immediates[i], 4);
  if (k.local_size_const_byte)
    for (int d = 0; d < 3; ++d) put(*k.local_size_const_byte + 4 * d, l.local_size[d], 4);
  for (int i = 0; i < k.num_ibo; ++i) {
    const CaptureArg& a = *images.at(i);
    SimBuffer b;
    b.address = addr_[a.buffer] + a.offset;
    b.size = a.bytes;
    b.is_image = true;
    b.image = image_of(a);
    sim_.ibos.push_back(b);
  }
  for (int t = 0; t < k.num_tex; ++t) {
    const CaptureArg& a = *images.at(static_cast<size_t>(k.num_ibo + k.tex_to_image[t]));
    SimImage im = image_of(a);
    im.address = addr_[a.buffer] + a.offset;
    sim_.images.push_back(im);
  }
  SimConfig cfg;
  cfg.local_size = l.local_size;
  cfg.num_groups = l.global_size;
  cfg.wave_size = kWaveSize;
  cfg.local_mem_bytes = std::max<uint32_t>(k.shared_bytes, 16);
  cfg.private_mem_bytes = std::max<uint32_t>(k.pvtmem_bytes, 16);
  cfg.local_id_reg = k.local_invocation_id_regid == kNoReg ? -1 : k.local_invocation_id_regid;
  cfg.group_id_reg = k.work_group_id_regid == kNoReg ? -1 : k.work_group_id_regid;
  cfg.max_steps = opts_.max_steps;
  cfg.merged_regs = k.mergedregs;
  if (l.kernel == opts_.trace_kernel) cfg.trace_group = opts_.trace_group, cfg.trace_lane = opts_.trace_lane;
  SimStats s;
  try {
    s = sim_.run(cfg);
  } catch (const Error& e) {
    fail("ir3 replay: kernel ", l.kernel, " (", k.name, "): ", e.what());
  }
  ++stats_.launches;
  stats_.instructions += s.instructions;
  stats_.fiber_instructions += s.fiber_instructions;
  stats_.mad_f32 += s.mad_f32;
  stats_.mad_f32_packed += s.mad_f32_packed;
  stats_.waves += s.waves;
  return s;
}

std::vector<std::vector<uint8_t>> Replayer::run(const std::map<std::string, std::vector<uint8_t>>& inputs) {
  for (const CaptureTensor& t : cap_.inputs) {
    auto it = inputs.find(t.name);
    OPV_CHECK(it != inputs.end(), "ir3 replay: input '", t.name, "' is missing");
    OPV_CHECK(it->second.size() == t.bytes(), "ir3 replay: input '", t.name, "' has ", it->second.size(), " bytes, expected ",
              t.bytes());
    sim_.write(addr_[t.buffer] + t.offset, it->second.data(), t.bytes());
  }
  for (const auto& [name, bytes] : inputs) {
    bool known = false;
    for (const CaptureTensor& t : cap_.inputs) known |= t.name == name;
    OPV_CHECK(known, "ir3 replay: the capture has no input '", name, "'");
  }
  for (size_t i = 0; i < cap_.schedule.size(); ++i) {
    launch(cap_.schedule[i]);
    if (opts_.progress) opts_.progress(i + 1, cap_.schedule.size(), cap_.kernels[cap_.schedule[i].kernel].name);
  }
  std::vector<std::vector<uint8_t>> outs;
  for (const CaptureTensor& t : cap_.outputs) {
    std::vector<uint8_t> b(t.bytes());
    sim_.read(addr_[t.buffer] + t.offset, b.data(), b.size());
    outs.push_back(std::move(b));
  }
  return outs;
}

}  // namespace opv::ir3
