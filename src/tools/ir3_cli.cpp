// Command line for the IR3 toolkit.
//
// Steps: (1) pick the subcommand (dis, asm, sim, check, info), each with --help; (2) load the
// input: assembler text, a raw shader image (8 bytes per instruction, little-endian) or a
// Qualcomm OpenCL program binary (detected by its header); (3) run and print. Errors are
// reported as one line `opvision: error: ...` on stderr with exit code 2, like every opvision
// subcommand; hazards found by `check` give exit code 1 (a check that ran and failed).
#include "tools/ir3_cli.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "ir3/container.h"
#include "ir3/isa.h"
#include "ir3/capture.h"
#include "ir3/legalize.h"
#include "ir3/optimize.h"
#include "ir3/sim.h"

namespace opv::tools {

using namespace opv::ir3;

namespace {

const char* kUsage =
    "usage: opvision ir3 <command> [options]\n"
    "commands:\n"
    "  dis FILE     disassemble a raw shader image or a Qualcomm program binary\n"
    "  asm FILE     assemble Mesa-syntax text into a raw shader image\n"
    "  sim FILE     run a compute shader on the functional simulator\n"
    "  check FILE   report missing (ss)/(sy) and short delays; --fix inserts them\n"
    "  info FILE    show a Qualcomm program binary's header, descriptor and arguments\n"
    "  opt IN -o OUT  rewrite real code with the binary passes (rpt, hoist, legalize), validated\n"
    "               on the simulator; IN: a capture directory, a raw image, text or program binary\n"
    "  replay DIR   run a captured model kernel by kernel on the simulated a630\n"
    "Each command takes --help. FILE may be text (.s), a raw image or a program binary.\n";

// Shader images and program binaries are small; anything larger is not one.
constexpr uint64_t kMaxIr3FileBytes = uint64_t(256) << 20;
// Flag ranges for `sim` (checked while parsing, before the simulator sees them).
constexpr uint64_t kMaxConstDword = 4095;              // const file: 1024 vec4 = 4096 dwords
constexpr uint64_t kMaxGroupIdReg = 48 * 4 - 3;        // regid R..R+2 within r0.x..r47.w
constexpr uint64_t kMaxSimBufBytes = uint64_t(1) << 30;  // per --buf allocation
constexpr uint64_t kMaxSimDim = uint64_t(1) << 16;     // --local / --groups per dimension

// Regular files only, size-checked before reading (core/file_io.h).
std::vector<uint8_t> read_file(const std::string& path) { return read_file_bytes(path, "input", kMaxIr3FileBytes); }

// Checked, atomic write (temp file + fsync + rename; devices such as /dev/full written in place).
void write_file(const std::string& path, const std::vector<uint8_t>& b) { write_file_atomic(path, b, "output"); }

// An unsigned decimal flag value in [lo, hi]; errors name the flag and the range
// instead of leaking std::stoul's "stoul".
uint64_t flag_uint(const char* flag, const std::string& text, uint64_t lo, uint64_t hi) {
  errno = 0;
  char* end = nullptr;
  unsigned long long v = text.empty() || text[0] == '-' || text[0] == '+' ? 0 : std::strtoull(text.c_str(), &end, 10);
  if (end == nullptr || end == text.c_str() || *end != '\0' || errno != 0 || v < lo || v > hi)
    fail("option ", flag, ": '", text, "' is not an integer in [", lo, ", ", hi, "]");
  return v;
}

// A decimal percentage in [0, hi] ("0.5", "3"); errors name the flag and the range.
double flag_percent(const char* flag, const std::string& text, double hi) {
  errno = 0;
  char* end = nullptr;
  double v = text.empty() ? -1.0 : std::strtod(text.c_str(), &end);
  if (end == nullptr || end == text.c_str() || *end != '\0' || errno != 0 || !(v >= 0.0 && v <= hi))
    fail("option ", flag, ": '", text, "' is not a percentage in [0, ", hi, "]");
  return v;
}

bool is_text(const std::vector<uint8_t>& b) {
  if (b.empty()) return true;
  for (uint8_t c : b)
    if (c == 0 || (c < 32 && c != '\n' && c != '\r' && c != '\t')) return false;
  return true;
}

struct Input {
  std::vector<uint64_t> code;
  bool is_program = false;
  qcom::Program program;
};

Input load(const std::string& path, int gen) {
  Input in;
  std::vector<uint8_t> b = read_file(path);
  if (is_text(b)) {
    in.code = assemble(std::string(b.begin(), b.end()), gen);
  } else if (qcom::looks_like_program(b)) {
    in.program = qcom::read(b);
    in.code = in.program.code;
    in.is_program = true;
  } else {
    in.code = words_from_bytes(b);
  }
  return in;
}

struct Args {
  std::vector<std::string> pos;
  std::vector<std::pair<std::string, std::string>> opts;
  bool help = false;
  bool flag(const std::string& n) const {
    for (const auto& o : opts)
      if (o.first == n) return true;
    return false;
  }
  std::string get(const std::string& n, const std::string& d = "") const {
    for (const auto& o : opts)
      if (o.first == n) return o.second;
    return d;
  }
  std::vector<std::string> all(const std::string& n) const {
    std::vector<std::string> v;
    for (const auto& o : opts)
      if (o.first == n) v.push_back(o.second);
    return v;
  }
};

Args parse_args(int argc, char** argv, int from, const std::vector<std::string>& with_value) {
  Args a;
  for (int i = from; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--help" || s == "-h") {
      a.help = true;
    } else if (s.rfind("--", 0) == 0 || s == "-o") {
      bool wv = false;
      for (const std::string& w : with_value) wv |= w == s;
      if (wv) {
        OPV_CHECK(i + 1 < argc, "option ", s, " needs a value");
        a.opts.push_back({s, argv[++i]});
      } else {
        a.opts.push_back({s, ""});
      }
    } else {
      a.pos.push_back(s);
    }
  }
  return a;
}

int gen_of(const Args& a) { return int(flag_uint("--gen", a.get("--gen", "600"), 0, 100000)); }

int cmd_dis(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, {"--gen"});
  if (a.help || a.pos.size() != 1) {
    std::printf(
        "usage: opvision ir3 dis FILE [--gen 600] [--addr] [--hex]\n"
        "  Disassembles FILE: a raw shader image (little-endian 64-bit words) or a Qualcomm\n"
        "  OpenCL program binary (its image is found through the header). --addr prefixes\n"
        "  instruction indices, --hex appends each word. Undecodable words print as raw 0x....\n");
    return a.help ? 0 : 2;
  }
  int gen = gen_of(a);
  Input in = load(a.pos[0], gen);
  if (in.is_program) std::printf("; %s", qcom::describe(in.program).c_str());
  for (size_t i = 0; i < in.code.size(); ++i) {
    if (a.flag("--addr")) std::printf("%4zu: ", i);
    std::string t = disasm(in.code[i], gen);
    if (a.flag("--hex")) std::printf("%-60s ; %016llx\n", t.c_str(), static_cast<unsigned long long>(in.code[i]));
    else std::printf("%s\n", t.c_str());
  }
  return 0;
}

int cmd_asm(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, {"--gen", "-o"});
  if (a.help || a.pos.size() != 1) {
    std::printf(
        "usage: opvision ir3 asm FILE [-o OUT.bin] [--gen 600] [--hex]\n"
        "  Assembles Mesa-syntax text (one instruction per line, ';' or '//' comments, 'label:'\n"
        "  and '#label' branch targets) into a raw shader image. Without -o, prints hex words.\n");
    return a.help ? 0 : 2;
  }
  std::vector<uint8_t> b = read_file(a.pos[0]);
  std::vector<uint64_t> code = assemble(std::string(b.begin(), b.end()), gen_of(a));
  if (a.flag("-o")) {
    write_file(a.get("-o"), bytes_from_words(code));
    std::printf("wrote %zu instructions (%zu bytes) to %s\n", code.size(), code.size() * 8, a.get("-o").c_str());
  } else {
    for (uint64_t w : code) std::printf("%016llx\n", static_cast<unsigned long long>(w));
  }
  return 0;
}

std::array<uint32_t, 3> dims(const char* flag, const std::string& s) {
  std::array<uint32_t, 3> d{1, 1, 1};
  std::stringstream ss(s);
  std::string part;
  int i = 0;
  while (std::getline(ss, part, ',')) {
    OPV_CHECK(i < 3, "option ", flag, ": '", s, "' has more than 3 dimensions");
    d[i++] = static_cast<uint32_t>(flag_uint(flag, part, 1, kMaxSimDim));
  }
  return d;
}

int cmd_sim(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, {"--gen", "--local", "--groups", "--buf", "--const", "--dump", "--group-id-reg"});
  if (a.help || a.pos.size() != 1) {
    std::printf(
        "usage: opvision ir3 sim FILE [--local X,Y,Z] [--groups X,Y,Z] [--buf C:BYTES[:INIT]]...\n"
        "                        [--const D=VALUE]... [--dump C:f32|u32|hex[:COUNT]]...\n"
        "  Runs FILE (text, raw image or program binary) on the functional simulator.\n"
        "  --buf allocates a zero-filled (or INIT-file-filled) global buffer and stores its 64-bit\n"
        "  address in const dwords C, C+1 (dword index: c2.x = 8). --const sets one const dword.\n"
        "  --dump prints the buffer whose address is at const dword C after the run.\n"
        "  Local ids arrive in r0.x-z; --group-id-reg R puts the work-group id in regid R..R+2.\n");
    return a.help ? 0 : 2;
  }
  SimConfig cfg;
  if (a.flag("--local")) cfg.local_size = dims("--local", a.get("--local"));
  if (a.flag("--groups")) cfg.num_groups = dims("--groups", a.get("--groups"));
  if (a.flag("--group-id-reg"))
    cfg.group_id_reg = int(flag_uint("--group-id-reg", a.get("--group-id-reg"), 0, kMaxGroupIdReg));
  int gen = gen_of(a);
  Input in = load(a.pos[0], gen);
  Simulator sim(in.code, gen);
  sim.consts.assign(1024, 0);
  struct Buf {
    uint32_t c;
    uint64_t addr, size;
  };
  std::vector<Buf> bufs;
  for (const std::string& s : a.all("--buf")) {
    size_t c1 = s.find(':');
    OPV_CHECK(c1 != std::string::npos, "--buf wants C:BYTES[:INIT], got `", s, "`");
    // The address takes const dwords C and C+1.
    uint32_t c = static_cast<uint32_t>(flag_uint("--buf", s.substr(0, c1), 0, kMaxConstDword - 1));
    size_t c2 = s.find(':', c1 + 1);
    uint64_t size = flag_uint("--buf", s.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1), 0,
                              kMaxSimBufBytes);
    uint64_t addr = sim.alloc(size);
    if (c2 != std::string::npos) {
      std::vector<uint8_t> init = read_file(s.substr(c2 + 1));
      sim.write(addr, init.data(), std::min<uint64_t>(init.size(), size));
    }
    sim.set_const_u64(static_cast<int>(c), addr);
    bufs.push_back({c, addr, size});
  }
  for (const std::string& s : a.all("--const")) {
    size_t eq = s.find('=');
    OPV_CHECK(eq != std::string::npos, "--const wants D=VALUE, got `", s, "`");
    size_t d = size_t(flag_uint("--const", s.substr(0, eq), 0, kMaxConstDword));
    if (sim.consts.size() <= d) sim.consts.resize(d + 1);
    std::string v = s.substr(eq + 1);
    char* end = nullptr;
    errno = 0;
    if (v.find('.') != std::string::npos || v.find('e') != std::string::npos) {
      float f = std::strtof(v.c_str(), &end);
      OPV_CHECK(!v.empty() && *end == '\0' && errno == 0, "option --const: '", v, "' is not a float");
      std::memcpy(&sim.consts[d], &f, 4);
    } else {
      long long x = std::strtoll(v.c_str(), &end, 0);
      OPV_CHECK(!v.empty() && *end == '\0' && errno == 0 && x >= INT32_MIN && x <= int64_t(UINT32_MAX),
                "option --const: '", v, "' is not a 32-bit integer");
      sim.consts[d] = static_cast<uint32_t>(x);
    }
  }
  SimStats st = sim.run(cfg);
  std::printf("ran %llu waves, %llu instructions issued (%llu per-fiber), %llu barriers\n",
              static_cast<unsigned long long>(st.waves), static_cast<unsigned long long>(st.instructions),
              static_cast<unsigned long long>(st.fiber_instructions), static_cast<unsigned long long>(st.barriers));
  for (const std::string& s : a.all("--dump")) {
    std::stringstream ss(s);
    std::string cs, fmt = "hex", count;
    std::getline(ss, cs, ':');
    std::getline(ss, fmt, ':');
    std::getline(ss, count, ':');
    uint32_t c = static_cast<uint32_t>(flag_uint("--dump", cs, 0, kMaxConstDword));
    const Buf* b = nullptr;
    for (const Buf& x : bufs)
      if (x.c == c) b = &x;
    OPV_CHECK(b, "--dump ", c, ": no --buf at const dword ", c);
    size_t n = count.empty() ? b->size / 4 : size_t(flag_uint("--dump", count, 0, kMaxSimBufBytes / 4));
    auto v = sim.read_vec<uint32_t>(b->addr, std::min<size_t>(n, b->size / 4));
    std::printf("buffer c[%u]:", c);
    for (size_t i = 0; i < v.size(); ++i) {
      if (i % 8 == 0) std::printf("\n  %5zu:", i);
      if (fmt == "f32") {
        float f;
        std::memcpy(&f, &v[i], 4);
        std::printf(" %12g", static_cast<double>(f));
      } else if (fmt == "u32") {
        std::printf(" %10u", v[i]);
      } else {
        std::printf(" %08x", v[i]);
      }
    }
    std::printf("\n");
  }
  return 0;
}

int cmd_check(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, {"--gen", "-o"});
  if (a.help || a.pos.size() != 1) {
    std::printf(
        "usage: opvision ir3 check FILE [--fix] [-o OUT] [--gen 600]\n"
        "  Reports every missing (ss)/(sy) and every too-short nop distance (a6xx rules).\n"
        "  --fix inserts the minimum needed and writes the result to OUT (a raw image, or a\n"
        "  program binary when FILE is one; default: print the fixed disassembly).\n"
        "  Exit code 1 when hazards are found and not fixed.\n");
    return a.help ? 0 : 2;
  }
  int gen = gen_of(a);
  Input in = load(a.pos[0], gen);
  auto hs = check_hazards(in.code, gen);
  for (const Hazard& h : hs)
    std::printf("%s\n    %s\n", to_string(h).c_str(), disasm(in.code[h.index], gen).c_str());
  std::printf("%zu hazard(s) in %zu instructions\n", hs.size(), in.code.size());
  if (!a.flag("--fix")) return hs.empty() ? 0 : 1;
  std::vector<uint64_t> code = in.code;
  legalize(code, gen);
  std::printf("fixed: %zu -> %zu instructions\n", in.code.size(), code.size());
  if (a.flag("-o")) {
    if (in.is_program) {
      qcom::Program p = in.program;
      p.code = code;
      write_file(a.get("-o"), qcom::write(p));
    } else {
      write_file(a.get("-o"), bytes_from_words(code));
    }
  } else {
    std::printf("%s", disassemble(code, gen).c_str());
  }
  return 0;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  for (;;) {
    size_t c = s.find(',', b);
    std::string x = s.substr(b, c == std::string::npos ? std::string::npos : c - b);
    if (!x.empty()) out.push_back(x);
    if (c == std::string::npos) break;
    b = c + 1;
  }
  return out;
}

void print_stats_row(const char* tag, const std::string& name, const passes::Stats& s) {
  std::printf("  %-6s %-44.44s %6d instr %5d/%-5d mad.f32 in rpt (%d serial)  max_reg %2d/%-2d %2d waves  %7lld cycles (%lld nop, %lld stall)  %8lld with loops\n",
              tag, name.c_str(), s.instructions, s.mad_f32_packed, s.mad_f32, s.mad_f32_serial, s.max_reg, s.max_half_reg, s.waves,
              static_cast<long long>(s.cycles()), static_cast<long long>(s.nop_cycles), static_cast<long long>(s.stall_cycles),
              static_cast<long long>(s.loop_cycles));
}

std::string json_stats(const passes::Stats& s) {
  char b[512];
  std::snprintf(b, sizeof b,
                "{\"instructions\":%d,\"nop_instructions\":%d,\"mad_f32\":%d,\"mad_f32_packed\":%d,\"mad_f32_serial\":%d,\"rpt_groups\":%d,"
                "\"max_reg\":%d,\"max_half_reg\":%d,\"waves\":%d,\"cycles\":%lld,\"issue_cycles\":%lld,\"nop_cycles\":%lld,\"stall_cycles\":%lld,"
                "\"loop_cycles\":%lld,\"counted_loops\":%d}",
                s.instructions, s.nop_instructions, s.mad_f32, s.mad_f32_packed, s.mad_f32_serial, s.rpt_groups, s.max_reg, s.max_half_reg,
                s.waves, static_cast<long long>(s.cycles()), static_cast<long long>(s.issue_cycles), static_cast<long long>(s.nop_cycles),
                static_cast<long long>(s.stall_cycles), static_cast<long long>(s.loop_cycles), s.counted_loops);
  return b;
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 32) o += ' ';
    else o += c;
  }
  return o + "\"";
}

int cmd_opt(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, {"--gen", "-o", "--pass", "--validate", "--seed", "--kernels", "--pack-tolerance"});
  if (a.help || a.pos.size() != 1) {
    std::printf(
        "usage: opvision ir3 opt IN -o OUT [--pass fold,cp,coalesce,reassoc,dce,accum,relocate,\n"
        "                        rpt,rename,guards,hoist,tidy,legalize] [--validate N] [--seed S]\n"
        "                        [--kernels LIST] [--pack-tolerance PCT] [--report] [--json]\n"
        "  Rewrites real a630 code with the binary passes, in the order given (default: all):\n"
        "    fold      (captures only) integer arithmetic whose value the kernel's launch grid decides\n"
        "              (evaluated for every fiber, and per iteration in counted loops) becomes a move:\n"
        "              a constant, a copy of a register holding the same values, or the other\n"
        "              source of an identity (signs of indices that are never negative, 16-bit\n"
        "              multiply-high parts that are zero); the code is then valid for that grid\n"
        "    cp        ALU sources read the register that already holds the same constant or copy;\n"
        "              texture/memory operands of known constants (isam.s2en index pairs) an older\n"
        "              register group holding the same constants\n"
        "    coalesce  compute a texture coordinate into a dead register whose pair half already\n"
        "              holds the constant its y needs (the fresh pair's move loses its reader)\n"
        "    reassoc   an address sum (X + K') + Y computed from a register that already holds\n"
        "              X + Y + K as one add of K' - K (the add of X + K' loses its reader)\n"
        "    dce       remove ALU instructions whose results nothing reads\n"
        "    accum     one register per accumulator across its loop (the moves between its\n"
        "              registers removed), accumulators updated side by side in consecutive\n"
        "              registers; the footprint may grow by up to 4 registers\n"
        "    relocate  swap scalar-only registers so accumulators and their operands form runs\n"
        "    rpt       pack runs of same-opcode instructions into (rptN) with (r) sources\n"
        "    rename    give a value whose register other code just used a free register of its own\n"
        "              (no footprint growth), so hoist can interleave independent chains; and a\n"
        "              texture load whose destination block a texel's consumer or a texture\n"
        "              source still holds a block of its own (the footprint may grow by up to 8\n"
        "              registers), so the loads of a loop trip issue together under one wait\n"
        "    guards    merge guarded blocks that test the same unchanged predicate (one branch and\n"
        "              one jump fewer each; the code between moves after them when independent)\n"
        "    hoist     list-schedule straight-line code and guarded loads (br over a then-block) as\n"
        "              units: loads and their addresses early, ALU under them; moves address\n"
        "              set-up dead on the other path out of then-blocks and predicated stores\n"
        "    tidy      cp and dce again on the scheduled code (set-up moves that hoist took out of\n"
        "              guarded blocks are now known on every path), then hoist again\n"
        "    legalize  drop all delay nops and (ss)/(sy), re-insert what the hazard checker needs\n"
        "  IN is a capture directory (tools/ir3_capture.py; OUT is written as a capture that\n"
        "  'ir3 replay' runs), or one program: assembler text, a raw image or a Qualcomm program\n"
        "  binary (OUT keeps the input's form; the binary's register footprint is patched).\n"
        "  Captures: each kernel's rewrite is kept only if the simulator gives bit-identical results\n"
        "  on N random input sets of its launch (--validate, default 3) and the hazard checker is\n"
        "  clean; otherwise the kernel keeps its code and the report says which pass failed, why.\n"
        "  When rpt runs before hoist, each kernel also tries rpt after hoist and no rpt, and each\n"
        "  order also without rename, and each of those without accum; it keeps the validated\n"
        "  result with the fewest cycles with loops (then static cycles), or its own code if none\n"
        "  is faster; of results within PCT %% of the fastest with loops (--pack-tolerance,\n"
        "  default %g) the one with the most mad.f32 in rpt groups goes first (a group is one\n"
        "  instruction to fetch, not N+1, and the single-wave cost model sees neither fetch nor\n"
        "  the waits other waves hide).\n"
        "  --kernels LIST (captures): rewrite only these kernels, by index (0-based, as in the\n"
        "  capture) or name, comma-separated; the others keep their code.\n"
        "  Single programs: only the hazard check applies (no launch to validate against).\n"
        "  End a pass list with legalize: the other passes move instructions without fixing delays,\n"
        "  so without it the hazard check refuses their output.\n"
        "  --report prints per-kernel and total instructions, mad.f32 in rpt groups ('serial': single\n"
        "  mad.f32 that feed or depend on every other mad.f32 of their straight-line block, which no\n"
        "  bit-exact reordering can pack), max_reg, the waves an a630 SP holds at that footprint\n"
        "  (Mesa's occupancy formula; the total shows the fewest), the static issue cycles of the\n"
        "  documented cost model (src/ir3/passes/passes.h), and the same with each counted loop's\n"
        "  body once per trip ('with loops'); --json the same as JSON on stdout.\n", OptOptions{}.pack_tolerance_permille / 10.0);
    return a.help ? 0 : 2;
  }
  OPV_CHECK(a.flag("-o"), "missing -o OUT");
  std::vector<std::string> names = a.flag("--pass") ? split_list(a.get("--pass")) : passes::pass_names();
  for (const std::string& n : names) {
    bool known = false;
    for (const std::string& k : passes::pass_names()) known |= k == n;
    OPV_CHECK(known, "option --pass: unknown pass '", n, "' (passes: fold, cp, coalesce, reassoc, dce, accum, relocate, rpt, rename, guards, hoist, tidy, legalize)");
  }
  int gen = gen_of(a);
  bool report = a.flag("--report"), json = a.flag("--json");
  const std::string& in_path = a.pos[0];
  std::error_code ec;
  if (std::filesystem::is_directory(in_path, ec)) {
    Capture cap = Capture::load(in_path);
    OptOptions o;
    o.passes = names;
    o.validate_sets = int(flag_uint("--validate", a.get("--validate", "3"), 0, 100));
    o.seed = flag_uint("--seed", a.get("--seed", "1"), 0, UINT32_MAX);
    if (a.flag("--pack-tolerance"))
      o.pack_tolerance_permille =
          static_cast<int>(std::lround(10.0 * flag_percent("--pack-tolerance", a.get("--pack-tolerance"), 100.0)));
    if (a.flag("--kernels")) {
      o.only.assign(cap.kernels.size(), false);
      for (const std::string& want : split_list(a.get("--kernels"))) {
        bool found = false;
        for (size_t k = 0; k < cap.kernels.size(); ++k)
          if (cap.kernels[k].name == want || std::to_string(k) == want) o.only[k] = found = true;
        OPV_CHECK(found, "option --kernels: no kernel '", want, "' in ", in_path, " (", cap.kernels.size(),
                  " kernels: give an index 0..", cap.kernels.size() - 1, " or a name)");
      }
    }
    if (!json)
      o.progress = [](size_t i, size_t n, const std::string& k) {
        std::fprintf(stderr, "\r[ir3 opt] kernel %zu/%zu %-48.48s", i + 1, n, k.c_str());
        if (i + 1 == n) std::fprintf(stderr, "\n");
      };
    std::vector<KernelOpt> r = optimize_capture(cap, o);
    cap.save(a.get("-o"), in_path);
    passes::Stats tb, ta;  // per inference: each kernel weighted by its launches
    size_t validated = 0, changed = 0, per_inf = 0;
    auto add = [](passes::Stats& t, const passes::Stats& s, int w) {
      t.instructions += s.instructions * w;
      t.nop_instructions += s.nop_instructions * w;
      t.mad_f32 += s.mad_f32 * w;
      t.mad_f32_packed += s.mad_f32_packed * w;
      t.mad_f32_serial += s.mad_f32_serial * w;
      t.rpt_groups += s.rpt_groups * w;
      t.max_reg = std::max(t.max_reg, s.max_reg);
      t.max_half_reg = std::max(t.max_half_reg, s.max_half_reg);
      t.waves = t.waves == 0 ? s.waves : std::min(t.waves, s.waves);  // the fewest of any kernel
      t.issue_cycles += s.issue_cycles * w;
      t.nop_cycles += s.nop_cycles * w;
      t.stall_cycles += s.stall_cycles * w;
      t.loop_cycles += s.loop_cycles * w;
      t.counted_loops += s.counted_loops * w;
    };
    for (const KernelOpt& k : r) {
      if (k.launches_per_inference == 0) continue;
      ++per_inf;
      validated += k.validated && k.failed_pass.empty();
      changed += k.changed;
      add(tb, k.before, k.launches_per_inference);
      add(ta, k.after, k.launches_per_inference);
    }
    if (json) {
      std::printf("{\"kernels\":[");
      for (size_t i = 0; i < r.size(); ++i)
        std::printf("%s{\"name\":%s,\"launches_per_inference\":%d,\"changed\":%s,\"validated\":%s,\"failed_pass\":%s,"
                    "\"reason\":%s,\"note\":%s,\"before\":%s,\"after\":%s}",
                    i ? "," : "", json_str(r[i].name).c_str(), r[i].launches_per_inference, r[i].changed ? "true" : "false",
                    r[i].validated ? "true" : "false", json_str(r[i].failed_pass).c_str(), json_str(r[i].reason).c_str(),
                    json_str(r[i].note).c_str(), json_stats(r[i].before).c_str(), json_stats(r[i].after).c_str());
      std::printf("],\"per_inference\":{\"kernels\":%zu,\"validated\":%zu,\"changed\":%zu,\"before\":%s,\"after\":%s}}\n",
                  per_inf, validated, changed, json_stats(tb).c_str(), json_stats(ta).c_str());
      return 0;
    }
    if (report) {
      std::printf("per kernel (before / after; 'after' is the code kept):\n");
      for (const KernelOpt& k : r) {
        print_stats_row("before", k.name, k.before);
        print_stats_row("after", k.name, k.after);
        std::printf("         %s%s%s%s%s%s\n", k.failed_pass.empty() ? (k.changed ? "rewritten, validated" : "unchanged") : "kept original: ",
                    k.failed_pass.c_str(), k.failed_pass.empty() ? "" : ": ", k.reason.c_str(), k.note.empty() ? "" : "; ",
                    k.note.c_str());
      }
      std::printf("per inference (kernels weighted by their launches):\n");
      print_stats_row("before", "total", tb);
      print_stats_row("after", "total", ta);
    }
    size_t failed = 0;
    for (const KernelOpt& k : r) failed += !k.failed_pass.empty();
    std::printf("ir3 opt: %zu kernels (%zu run per inference): %zu rewritten%s, %zu kept their original code "
                "(a pass failed validation); per inference %lld -> %lld cycles (%lld -> %lld with loops), mad.f32 in rpt %d/%d -> %d/%d\n",
                r.size(), per_inf, static_cast<size_t>(std::count_if(r.begin(), r.end(), [](const KernelOpt& k) { return k.changed; })),
                o.validate_sets > 0 ? " and validated" : " (not validated: --validate 0)", failed, static_cast<long long>(tb.cycles()), static_cast<long long>(ta.cycles()),
                static_cast<long long>(tb.loop_cycles), static_cast<long long>(ta.loop_cycles), tb.mad_f32_packed, tb.mad_f32,
                ta.mad_f32_packed, ta.mad_f32);
    return 0;
  }
  OPV_CHECK(!a.flag("--kernels"), "option --kernels selects kernels of a capture directory; ", in_path,
            " is a single program");
  Input in = load(in_path, gen);
  std::vector<uint64_t> code = run_passes(in.code, names, gen);
  auto hs = check_hazards(code, gen);
  OPV_CHECK(hs.empty(), "the rewritten program has a hazard: ", to_string(hs.front()));
  passes::Stats before = passes::stats(in.code, gen), after = passes::stats(code, gen);
  if (report || json) {
    if (json) {
      std::printf("{\"before\":%s,\"after\":%s}\n", json_stats(before).c_str(), json_stats(after).c_str());
    } else {
      print_stats_row("before", a.pos[0], before);
      print_stats_row("after", a.pos[0], after);
    }
  }
  if (in.is_program) {
    qcom::Program p = in.program;
    p.code = code;
    p.full_regs = static_cast<uint32_t>(std::max(0, after.max_reg + 1));
    p.half_regs = static_cast<uint32_t>(std::max(0, after.max_half_reg + 1));
    write_file(a.get("-o"), qcom::write(p));
  } else if (is_text(read_file(in_path))) {
    write_file(a.get("-o"), [&] {
      std::string t = disassemble(code, gen);
      return std::vector<uint8_t>(t.begin(), t.end());
    }());
  } else {
    write_file(a.get("-o"), bytes_from_words(code));
  }
  return 0;
}

int cmd_info(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, {});
  if (a.help || a.pos.size() != 1) {
    std::printf("usage: opvision ir3 info FILE\n  Prints a Qualcomm OpenCL program binary's fields.\n");
    return a.help ? 0 : 2;
  }
  std::printf("%s", qcom::describe(qcom::read(read_file(a.pos[0]))).c_str());
  return 0;
}

}  // namespace

int ir3_cli_main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    std::printf("%s", kUsage);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  try {
    if (cmd == "dis") return cmd_dis(argc, argv);
    if (cmd == "asm") return cmd_asm(argc, argv);
    if (cmd == "sim") return cmd_sim(argc, argv);
    if (cmd == "check") return cmd_check(argc, argv);
    if (cmd == "info") return cmd_info(argc, argv);
    if (cmd == "opt") return cmd_opt(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opvision: error: ir3 %s: %s\n", cmd.c_str(), e.what());
    return 2;
  }
  std::fprintf(stderr, "opvision: error: unknown ir3 command `%s`\n%s", cmd.c_str(), kUsage);
  return 2;
}

}  // namespace opv::tools
