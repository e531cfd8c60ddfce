// Fuzz targets (see targets.h and FUZZING.md). Every harness bounds the work one input may cause
// (tensor limits, plan cost, instruction counts, simulator steps) so that a slow input means a
// real hang in the code under test, not a large but legitimate job.
#include "targets.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_set>

#include "backend/backend.h"
#include "backend/qcom/pm4.h"
#ifdef OPV_HAVE_CUDASIM
#include "backend/cuda/sim/ptx.h"
#if OPV_HAVE_CUDA
#include "backend/cuda/sass.h"
#include "target/cuda/cuda_abi.h"
#endif
#endif
#include "compiler/compile.h"
#include "core/error.h"
#include "import/onnx_import.h"
#include "ir/passes/passes.h"
#include "ir3/capture.h"
#include "ir3/container.h"
#include "ir3/isa.h"
#include "ir3/legalize.h"
#include "ir3/sim.h"
#include "plan/artifact.h"
#include "tools/npy.h"
#include "tools/plan_stats.h"

#ifndef OPV_SOURCE_DIR
#define OPV_SOURCE_DIR "."
#endif

namespace opv::fuzz {

namespace {

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz: invariant broken: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// A scratch folder of this process (removed at exit), for the targets whose API reads files.
const std::string& scratch_dir() {
  static const std::string dir = [] {
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string tmpl = std::string(base) + "/opv-fuzz-XXXXXX";
    if (!mkdtemp(tmpl.data())) {
      std::perror("fuzz: mkdtemp");
      std::abort();
    }
    static struct Cleanup {
      std::string d;
      ~Cleanup() {
        std::error_code ec;
        std::filesystem::remove_all(d, ec);
      }
    } cleanup{tmpl};
    return tmpl;
  }();
  return dir;
}

void write_plain(const std::string& path, const uint8_t* data, size_t size) {
  // Plain stdio on purpose: the checked atomic writer fsyncs, far too slow per execution.
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(("fuzz: write " + path).c_str());
    std::abort();
  }
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// ---- .opv artifact layout (must match src/plan/artifact.cpp) ---------------------------------
constexpr size_t kOffTotal = 24, kOffSec0 = 32, kSecEntry = 24, kOffPayloadCrc = 80, kOffHeaderCrc = 84;
constexpr size_t kHeader = 88, kWeightsAlign = 64;

uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint32_t crc(const uint8_t* p, size_t n) { return uint32_t(crc32(crc32(0L, Z_NULL, 0), p, uInt(n))); }

}  // namespace

std::vector<uint8_t> fix_artifact(const uint8_t* data, size_t size) {
  std::vector<uint8_t> in(data, data + size);
  if (size < kHeader) return in;
  // The header's sizes say where the plan and weights were before mutation; bytes inserted or
  // removed are attributed to the plan section (the weights are the tail of the file).
  uint64_t total = get_u64(data + kOffTotal);
  uint64_t plan_off = get_u64(data + kOffSec0 + 8), plan_size = get_u64(data + kOffSec0 + 16);
  uint64_t w_off = get_u64(data + kOffSec0 + kSecEntry + 8), w_size = get_u64(data + kOffSec0 + kSecEntry + 16);
  auto in_range = [&](uint64_t off, int64_t len) {
    return off >= kHeader && off <= size && len >= 0 && uint64_t(len) <= size - off;
  };
  bool ok = total < (uint64_t(1) << 40) && plan_size < (uint64_t(1) << 40) && w_off < (uint64_t(1) << 40) &&
            w_size < (uint64_t(1) << 40);
  int64_t delta = ok ? int64_t(size) - int64_t(total) : 0;
  int64_t plan_len = ok ? int64_t(plan_size) + delta : -1;
  int64_t w_at = ok ? int64_t(w_off) + delta : -1;
  std::vector<uint8_t> out;
  if (ok && in_range(plan_off, plan_len) && w_at >= 0 && in_range(uint64_t(w_at), int64_t(w_size))) {
    out.assign(data, data + kHeader);
    out.insert(out.end(), data + plan_off, data + plan_off + plan_len);
    while (out.size() % kWeightsAlign) out.push_back(0);
    size_t new_w = out.size();
    out.insert(out.end(), data + w_at, data + w_at + w_size);
    put_u64(out.data() + kOffSec0 + 8, kHeader);
    put_u64(out.data() + kOffSec0 + 16, uint64_t(plan_len));
    put_u64(out.data() + kOffSec0 + kSecEntry + 8, new_w);
    put_u64(out.data() + kOffSec0 + kSecEntry + 16, w_size);
  } else {
    out = std::move(in);
  }
  put_u64(out.data() + kOffTotal, out.size());
  put_u32(out.data() + kOffPayloadCrc, crc(out.data() + kHeader, out.size() - kHeader));
  put_u32(out.data() + kOffHeaderCrc, crc(out.data(), kOffHeaderCrc));
  return out;
}

// ---- ONNX import + lowering --------------------------------------------------------------------

int fuzz_onnx(const uint8_t* data, size_t size) {
  if (size > (1u << 20)) return 0;
  ImportOptions opts;
  // Small limits keep constant folding of one input to milliseconds; the limits' own checks are
  // what is under test here.
  opts.limits.max_tensor_elems = int64_t(1) << 16;
  opts.limits.max_tensor_bytes = int64_t(1) << 20;
  try {
    ir::Graph g = import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size),
                                    scratch_dir() + "/no-such-model-dir", opts);
    ir::run_graph_passes(g);
    for (const char* target : {"reference", "cpu"}) {
      CompileOptions co;
      co.target = target;
      try {
        plan::Plan p = lower(g, co);
        std::vector<uint8_t> a = plan::serialize(p);
        plan::Plan q = plan::deserialize(a.data(), a.size());
        if (plan::serialize(q) != a) broken(std::string("serialize(deserialize(a)) != a for a lowered ") + target + " plan");
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
  }
  return 0;
}

// ---- .opv artifact: load, validate, run --------------------------------------------------------

int fuzz_opv(const uint8_t* data, size_t size) {
  if (size > (4u << 20)) return 0;
  // The input as given (header checks), then with the header and CRCs made consistent.
  try {
    plan::deserialize(data, size);
  } catch (const Error&) {
  }
  std::vector<uint8_t> a = fix_artifact(data, size);
  plan::Plan p;
  try {
    p = plan::deserialize(a.data(), a.size());
  } catch (const Error&) {
    return 0;
  }
  std::vector<uint8_t> s1 = plan::serialize(p);
  plan::Plan q = plan::deserialize(s1.data(), s1.size());
  if (plan::serialize(q) != s1) broken("serialize(deserialize(serialize(p))) != serialize(p)");

  // Run only plans of bounded cost; validate() bounds sizes, not the work of a whole plan. A plan
  // whose cost cannot be read (an attribute of the wrong type: `opvision inspect` reports the same
  // error) is not run.
  tools::PlanStats st;
  try {
    st = tools::plan_stats(p);
  } catch (const Error&) {
    return 0;
  }
  // The inputs the run below makes are dense tensors of the input buffers' shapes, which the
  // plan's own byte counts (the peak above) need not bound: an image-layout buffer may declare
  // fewer bytes than its shape holds (the OpenCL backend sizes images itself).
  int64_t input_bytes = 0;
  for (int b : p.inputs) input_bytes += plan::storage_bytes(p.buffers[b].dtype, p.buffers[b].shape, plan::Layout::Linear);
  if (st.peak_bytes > (int64_t(64) << 20) || st.flops.total() > 20'000'000 || st.bytes_moved > (int64_t(256) << 20) ||
      p.calls.size() > 512 || input_bytes > (int64_t(64) << 20))
    return 0;
  uint64_t seed = crc(data, size);
  std::vector<Tensor> ins;
  for (int b : p.inputs) {
    Tensor t(p.buffers[b].dtype, p.buffers[b].shape);
    auto bytes = t.bytes();
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(splitmix(seed));
    ins.push_back(std::move(t));
  }
  for (const char* be : {"reference", "cpu"}) {
    try {
      backend::Options o;
      o.threads = 1;
      auto b = backend::create(be, o);
      b->load(p);
      std::vector<const Tensor*> in_ptrs;
      for (const Tensor& t : ins) in_ptrs.push_back(&t);
      std::vector<Tensor> outs;
      for (int ob : p.outputs) outs.emplace_back(p.buffers[ob].dtype, p.buffers[ob].shape);
      std::vector<Tensor*> out_ptrs;
      for (Tensor& t : outs) out_ptrs.push_back(&t);
      b->run(in_ptrs, out_ptrs);
    } catch (const Error&) {
    }
  }
  return 0;
}

// ---- .npy / .npz -------------------------------------------------------------------------------

namespace {
void check_npy_round_trip(const Tensor& t, const std::string& what) {
  std::vector<uint8_t> enc = tools::encode_npy(t);
  Tensor u = tools::parse_npy(enc.data(), enc.size(), what + " (re-encoded)");
  if (u.dtype() != t.dtype() || u.shape() != t.shape() || u.nbytes() != t.nbytes() ||
      (t.nbytes() && std::memcmp(u.raw(), t.raw(), t.nbytes()) != 0))
    broken("parse_npy(encode_npy(t)) != t for " + what);
}
}  // namespace

int fuzz_npy(const uint8_t* data, size_t size) {
  if (size > (4u << 20)) return 0;
  try {
    if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
      std::string path = scratch_dir() + "/in.npz";
      write_plain(path, data, size);
      tools::NamedArrays arrays = tools::read_npz(path);
      for (const auto& [name, t] : arrays) check_npy_round_trip(t, "npz member " + name);
    } else {
      Tensor t = tools::parse_npy(data, size, "fuzz.npy");
      check_npy_round_trip(t, "npy");
    }
  } catch (const Error&) {
  }
  return 0;
}

// ---- IR3: decode, print, parse, hazards, legalize, simulate ------------------------------------
// Byte 0 picks the mode: bit 7 = the rest is assembler text (else raw little-endian words),
// bits 0-2 the generation (a6xx for 0-3), bits 3-5 the simulated work-group size. Programs are
// capped at 32 instructions: the table-driven decoder and assembler cost ~1-5 ms per instruction
// under ASan+coverage, and short programs reach every encoding as well as long ones.

int fuzz_ir3(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  ++data, --size;
  static const int kGens[8] = {600, 600, 600, 600, 400, 500, 700, 800};
  const int gen = kGens[mode & 7];
  std::vector<uint64_t> words;
  try {
    if (mode & 0x80) {
      if (size > 2048) return 0;
      words = ir3::assemble(std::string(reinterpret_cast<const char*>(data), size), gen);
    } else {
      size_t n = std::min<size_t>(size / 8, 32);
      words = ir3::words_from_bytes(std::vector<uint8_t>(data, data + n * 8));
    }
  } catch (const Error&) {
    return 0;
  }
  if (words.size() > 32) return 0;
  // Every word decodes and prints; a valid one prints text that assembles to a word printing
  // the same text. The round trip is a pure function of (word, generation), and mutated inputs
  // repeat most of their words, so each pair is checked once per process (the assembler is the
  // slow part of this target).
  static std::unordered_set<uint64_t> checked[8];
  for (uint64_t w : words) {
    ir3::Instr in = ir3::decode(w, gen);
    std::string text = ir3::print(in);
    if (!in.valid()) continue;
    std::unordered_set<uint64_t>& seen = checked[mode & 7];
    if (seen.size() > (1u << 20)) seen.clear();
    if (!seen.insert(w).second) continue;
    std::string again;
    try {
      again = ir3::print(ir3::decode(ir3::encode(ir3::parse(text, gen)), gen));
    } catch (const Error& e) {
      broken("ir3 gen " + std::to_string(gen) + ": printed text of a valid word does not assemble: '" + text +
             "': " + e.what());
    }
    if (again != text) broken("ir3 gen " + std::to_string(gen) + ": '" + text + "' re-assembles to '" + again + "'");
  }
  (void)ir3::disassemble(words, gen, true);
  if (gen != ir3::kGenA6xx) return 0;
  try {
    (void)ir3::check_hazards(words, gen);
    std::vector<uint64_t> fixed = words;
    ir3::legalize(fixed, gen);
    auto left = ir3::check_hazards(fixed, gen);
    if (!left.empty()) broken("legalize() left a hazard: " + ir3::to_string(left[0]));
  } catch (const Error&) {
  }
  try {
    ir3::Simulator sim(words, gen);
    uint64_t buf = sim.alloc(4096);
    sim.consts.assign(256, 0);
    sim.set_const_u64(0, buf);
    sim.set_const_u64(4, buf + 2048);
    ir3::SimConfig cfg;
    cfg.local_size = {uint32_t(1 + ((mode >> 3) & 7)), 1, 1};
    cfg.num_groups = {2, 1, 1};
    cfg.wave_size = 4;
    cfg.local_mem_bytes = 1024;
    cfg.private_mem_bytes = 64;
    cfg.max_steps = 4096;
    sim.run(cfg);
  } catch (const Error&) {
  }
  return 0;
}

// ---- Qualcomm program binary --------------------------------------------------------------------

int fuzz_container(const uint8_t* data, size_t size) {
  if (size > (1u << 20)) return 0;
  std::vector<uint8_t> blob(data, data + size);
  (void)ir3::qcom::looks_like_program(blob);
  ir3::qcom::Program p;
  try {
    p = ir3::qcom::read(blob);
  } catch (const Error&) {
    return 0;
  }
  (void)ir3::qcom::describe(p);
  (void)p.max_threads(), (void)p.shared_size_field(), (void)p.branchstack_hw();
  (void)p.texture_count(), (void)p.ibo_count();
  // What read() accepts, write() writes back and read() accepts again with the same fields.
  std::vector<uint8_t> w;
  try {
    w = ir3::qcom::write(p);
  } catch (const Error&) {
    return 0;
  }
  ir3::qcom::Program q;
  try {
    q = ir3::qcom::read(w);
  } catch (const Error& e) {
    broken(std::string("qcom::read(write(read(blob))) fails: ") + e.what());
  }
  if (q.code != p.code || q.name != p.name || q.full_regs != p.full_regs || q.half_regs != p.half_regs ||
      q.args.size() != p.args.size() || q.consts.size() != p.consts.size())
    broken("qcom::read(write(p)) differs from p");
  if (ir3::qcom::write(q) != w) broken("qcom::write(read(write(p))) != write(p)");
  return 0;
}

// ---- IR3 capture.json ---------------------------------------------------------------------------

int fuzz_capture(const uint8_t* data, size_t size) {
  if (size > (1u << 20)) return 0;
  static const std::string dir = [] {
    // The committed capture's kernel images and data.bin beside the fuzzed capture.json, so that
    // mutations that keep the kernel list reach the later checks.
    namespace fs = std::filesystem;
    std::string d = scratch_dir() + "/capture";
    fs::path src = fs::path(OPV_SOURCE_DIR) / "tests/data/ir3/small_fp16";
    fs::create_directories(d);
    std::error_code ec;
    fs::copy(src / "kernels", fs::path(d) / "kernels", fs::copy_options::recursive, ec);
    fs::copy_file(src / "data.bin", fs::path(d) / "data.bin", ec);
    return d;
  }();
  write_plain(dir + "/capture.json", data, size);
  try {
    ir3::Capture c = ir3::Capture::load(dir);
    (void)c;
  } catch (const Error&) {
  }
  return 0;
}

// ---- PM4 command stream (a6xx CP) ------------------------------------------------------------
// Byte 0 bit 0: allow register writes to addresses the tables do not name; the rest: dwords.

int fuzz_pm4(const uint8_t* data, size_t size) {
  if (size < 1 || size > (1u << 20)) return 0;
  const bool allow_unknown = data[0] & 1;
  std::vector<uint32_t> dw((size - 1) / 4);
  if (!dw.empty()) std::memcpy(dw.data(), data + 1, dw.size() * 4);
  std::vector<qcom::Packet> packets;
  try {
    packets = qcom::decode(dw.data(), dw.size(), allow_unknown);
  } catch (const Error&) {
    return 0;
  }
  (void)qcom::format(packets);
  // What decodes re-encodes to the same dwords.
  qcom::StreamWriter w;
  try {
    for (const qcom::Packet& p : packets) {
      if (p.type7)
        w.pkt(p.opcode, p.payload);
      else
        w.regs(p.reg, p.payload);
    }
  } catch (const Error& e) {
    broken(std::string("a decoded PM4 packet does not re-encode: ") + e.what());
  }
  if (w.dwords() != dw) broken("PM4 stream does not re-encode to the same dwords");
  return 0;
}

// ---- PTX (cudasim, the cuda backend's simulated driver) ------------------------------------------
// The text as a module; where it parses, its first two kernels run as one block (one cluster
// where they ask for clusters) of at most 64 threads, every pointer parameter pointing at one
// 4 KB allocation, under an instruction budget: faults, deadlocks and refusals are SimErrors.

int fuzz_ptx(const uint8_t* data, size_t size) {
#ifdef OPV_HAVE_CUDASIM
  if (size > (1u << 20)) return 0;
  std::unique_ptr<cudasim::Module> m;
  try {
    m = cudasim::parse_module(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const cudasim::SimError&) {
    return 0;
  }
  if (!m || m->kernels.empty()) broken("parse_module returned no kernel without an error");
  cudasim::Memory mem;
  std::vector<uint64_t> buf(512, 0);
  const uint64_t base = reinterpret_cast<uint64_t>(buf.data());
  mem.add(base, buf.size() * sizeof(uint64_t));
  for (const cudasim::GlobalVar& g : m->globals) mem.add(reinterpret_cast<uint64_t>(g.data), g.bytes);
  for (size_t i = 0; i < m->kernels.size() && i < 2; ++i) {
    const cudasim::Kernel& k = m->kernels[i];
    std::vector<uint8_t> params(k.param_bytes, 0);
    for (const cudasim::Param& p : k.params)
      if (p.size == 8 && p.offset + 8 <= params.size()) std::memcpy(params.data() + p.offset, &base, 8);
    cudasim::Dim3 grid, block;
    grid.x = k.cluster[0] ? k.cluster[0] : 1;
    grid.y = k.cluster[1] ? k.cluster[1] : 1;
    grid.z = k.cluster[2] ? k.cluster[2] : 1;
    block.x = std::min<uint32_t>(k.max_threads, 64);
    try {
      cudasim::launch(k, grid, block, params.data(), mem, 200000);
    } catch (const cudasim::SimError&) {
    }
  }
#else
  (void)data;
  (void)size;
#endif
  return 0;
}

// ---- cubin (a cuda plan kernel's stored SASS, backend/cuda/sass.h) ------------------------------
// The bytes as a cubin: cubin_sm's verdict, and problem() / pick() on a kernel that lists it for
// the SM it names must agree with it.

int fuzz_cubin(const uint8_t* data, size_t size) {
#if OPV_HAVE_CUDA
  if (size > (1u << 20)) return 0;
  const std::string image(reinterpret_cast<const char*>(data), size);
  std::string why;
  const int sm = backend::cuda_sass::cubin_sm(image, &why);
  if (sm == 0 && why.empty()) broken("cubin_sm refused an image without saying why");
  plan::Kernel k;
  k.name = "fuzz";
  const int listed = sm ? sm : 90;
  k.attrs.set(plan::cuda::kSassSmsAttr, std::vector<int64_t>{listed});
  k.attrs.set(plan::cuda::sass_attr(listed), image);
  const std::string problem = backend::cuda_sass::problem(k);
  if (sm && !problem.empty()) broken("problem() refuses a cubin cubin_sm accepts: " + problem);
  if (!sm && problem.empty()) broken("problem() accepts an image cubin_sm refuses");
  if (sm && backend::cuda_sass::pick(k, sm / 10, sm % 10) != sm) broken("pick() skips the device's own cubin");
#else
  (void)data;
  (void)size;
#endif
  return 0;
}

const std::vector<Target>& targets() {
  static const std::vector<Target> t = {{"onnx", fuzz_onnx},           {"opv", fuzz_opv},
                                        {"npy", fuzz_npy},             {"ir3", fuzz_ir3},
                                        {"container", fuzz_container}, {"capture", fuzz_capture},
                                        {"pm4", fuzz_pm4},             {"ptx", fuzz_ptx},
                                        {"cubin", fuzz_cubin}};
  return t;
}

}  // namespace opv::fuzz
