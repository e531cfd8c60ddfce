// The `opvision ir3` command line: dis/asm/sim/check/info on files, --help, and error exits.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tools/ir3_cli.h"
#include "ir3/container.h"
#include "ir3/isa.h"

using namespace opv::ir3;

namespace {
int run(std::vector<std::string> args, std::string* out = nullptr) {
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  testing::internal::CaptureStdout();
  int rc = opv::tools::ir3_cli_main(static_cast<int>(argv.size()), argv.data());
  std::string o = testing::internal::GetCapturedStdout();
  if (out) *out = o;
  return rc;
}
std::string tmp(const std::string& name, const std::string& content) {
  std::string p = testing::TempDir() + "/ir3_cli_" + name;
  std::ofstream(p, std::ios::binary) << content;
  return p;
}
}  // namespace

TEST(Ir3Cli, HelpForEveryCommand) {
  std::string o;
  for (const char* c : {"dis", "asm", "sim", "check", "info", "opt"}) {
    EXPECT_EQ(run({"ir3", c, "--help"}, &o), 0) << c;
    EXPECT_NE(o.find(std::string("opvision ir3 ") + c), std::string::npos) << o;
  }
  EXPECT_EQ(run({"ir3", "--help"}, &o), 0);
  EXPECT_NE(run({"ir3", "bogus"}, &o), 0);
}

TEST(Ir3Cli, AsmThenDisRoundTrips) {
  std::string src = tmp("a.s", "loop:\n(rpt1)sel.b32 r1.x, (r)c13.z, r0.z, (r)c20.z\nbr p0.x, #loop\nend\n");
  std::string bin = testing::TempDir() + "/ir3_cli_a.bin";
  std::string o;
  ASSERT_EQ(run({"ir3", "asm", src, "-o", bin}, &o), 0) << o;
  ASSERT_EQ(run({"ir3", "dis", bin}, &o), 0);
  EXPECT_EQ(o, "(rpt1)sel.b32 r1.x, (r)c13.z, r0.z, (r)c20.z\nbr p0.x, #-1\nend\n");
  // a program binary is recognised by its header
  std::ifstream in(bin, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  qcom::Program p = qcom::make(words_from_bytes(bytes), "k", {qcom::ArgType::Buffer}, 2, 0);
  std::string pb = testing::TempDir() + "/ir3_cli_p.bin";
  std::ofstream(pb, std::ios::binary).write(reinterpret_cast<const char*>(p.blob.data()), p.blob.size());
  ASSERT_EQ(run({"ir3", "dis", pb}, &o), 0);
  EXPECT_NE(o.find("kernel k"), std::string::npos);
  EXPECT_NE(o.find("br p0.x, #-1"), std::string::npos);
  ASSERT_EQ(run({"ir3", "info", pb}, &o), 0);
  EXPECT_NE(o.find("registers: full 2"), std::string::npos) << o;
}

TEST(Ir3Cli, SimAndCheck) {
  std::string src = tmp("s.s",
                        "shl.b r1.x, r0.x, 2\n(rpt2)nop\nadd.u r2.x, c0.x, r1.x\nmov.u32u32 r2.y, c0.y\n"
                        "(rpt5)nop\nstg.u32 g[r2.x], r0.x, 1\nend\n");
  std::string o;
  ASSERT_EQ(run({"ir3", "sim", src, "--local", "8", "--buf", "0:32", "--dump", "0:u32"}, &o), 0) << o;
  EXPECT_NE(o.find("0          1          2          3          4          5          6          7"), std::string::npos) << o;
  EXPECT_EQ(run({"ir3", "check", src}, &o), 0) << o;
  std::string bad = tmp("b.s", "rcp r0.y, r0.x\nadd.f r1.x, r0.y, r0.y\nend\n");
  EXPECT_EQ(run({"ir3", "check", bad}, &o), 1);
  EXPECT_NE(o.find("missing (ss) on r0.y"), std::string::npos) << o;
  EXPECT_EQ(run({"ir3", "check", bad, "--fix"}, &o), 0);
  EXPECT_NE(o.find("(ss)add.f r1.x, r0.y, r0.y"), std::string::npos) << o;
  EXPECT_EQ(run({"ir3", "dis", testing::TempDir() + "/does_not_exist"}, &o), 2);
}

namespace {
// Runs the CLI and returns its stderr (error messages go there).
std::string run_err(std::vector<std::string> args, int* rc) {
  testing::internal::CaptureStderr();
  *rc = run(std::move(args));
  return testing::internal::GetCapturedStderr();
}
}  // namespace

// Issue 13: out-of-range sim flags are refused while parsing, before the simulator allocates
// or indexes with them, with a message naming the flag (no bare "stoi"/"stoul").
TEST(Ir3Cli, SimFlagsAreRangeChecked) {
  std::string src = tmp("r.s", "nop\nend\n");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--group-id-reg", "100000"}, "option --group-id-reg: '100000' is not an integer in [0, 189]"},
      {{"--group-id-reg", "-1"}, "option --group-id-reg: '-1'"},
      {{"--buf", "4294967295:64"}, "option --buf: '4294967295' is not an integer in [0, 4094]"},
      {{"--buf", "0:99999999999"}, "option --buf: '99999999999'"},
      {{"--const", "4000000000=1"}, "option --const: '4000000000' is not an integer in [0, 4095]"},
      {{"--const", "3=zz"}, "option --const: 'zz' is not a 32-bit integer"},
      {{"--local", "x"}, "option --local: 'x'"},
      {{"--groups", "0"}, "option --groups: '0'"},
      {{"--gen", "six"}, "option --gen: 'six'"},
      {{"--buf", "0:64", "--dump", "abc"}, "option --dump: 'abc'"},
  };
  for (const auto& [flags, want] : cases) {
    std::vector<std::string> args = {"ir3", "sim", src};
    args.insert(args.end(), flags.begin(), flags.end());
    int rc = 0;
    std::string err = run_err(args, &rc);
    EXPECT_EQ(rc, 2) << flags[0];
    EXPECT_NE(err.find(want), std::string::npos) << err;
    EXPECT_EQ(err.find("sto"), std::string::npos) << err;
  }
  int rc = 0;
  std::string err = run_err({"ir3", "sim", src, "--group-id-reg", "189", "--buf", "4094:64", "--const", "4095=7"}, &rc);
  EXPECT_EQ(rc, 0) << err;
}

// Issue 13: writes are checked (a full device fails with the errno reason) and inputs must be
// regular files (/dev/zero used to be read forever).
TEST(Ir3Cli, WritesAreCheckedAndInputsMustBeRegularFiles) {
  std::string src = tmp("w.s", "nop\nend\n");
  int rc = 0;
  std::string err = run_err({"ir3", "asm", src, "-o", "/dev/full"}, &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
  err = run_err({"ir3", "dis", "/dev/zero"}, &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
  err = run_err({"ir3", "dis", testing::TempDir()}, &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("it is a directory"), std::string::npos) << err;
}

// `ir3 opt` on a Qualcomm program binary: the code is rewritten (packed, legalized) and the
// register footprint in the header follows the rewritten code.
TEST(Ir3Cli, OptRewritesAProgramBinaryAndPatchesItsFootprint) {
  std::vector<uint64_t> code = assemble(R"(
    cov.u32f32 r1.x, r0.x
    mov.f32f32 r2.x, c2.x
    mov.f32f32 r2.y, c2.y
    mov.f32f32 r2.z, c2.z
    mov.f32f32 r2.w, c2.w
    (rpt5)nop
    mad.f32 r2.x, c1.x, r1.x, r2.x
    mad.f32 r2.y, c1.y, r1.x, r2.y
    mad.f32 r2.z, c1.z, r1.x, r2.z
    mad.f32 r2.w, c1.w, r1.x, r2.w
    (rpt5)nop
    stib.b.typed.2d.f32.4.imm r2.x, r0.x, 0
    end
  )");
  qcom::Program p = qcom::make(code, "k", {qcom::ArgType::Ibo}, 9, 0);  // footprint claims r8
  std::vector<uint8_t> blob = qcom::write(p);
  std::string in = tmp("opt_in.bin", std::string(blob.begin(), blob.end()));
  std::string out = testing::TempDir() + "/ir3_cli_opt_out.bin";
  std::string o;
  ASSERT_EQ(run({"ir3", "opt", in, "-o", out, "--report"}, &o), 0) << o;
  EXPECT_NE(o.find("after"), std::string::npos) << o;
  std::ifstream f(out, std::ios::binary);
  std::vector<uint8_t> got((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  qcom::Program q = qcom::read(got);
  EXPECT_EQ(q.full_regs, 3u);  // r0-r2 after the rewrite
  std::string dis = disassemble(q.code);
  EXPECT_NE(dis.find("(rpt3)mad.f32"), std::string::npos) << dis;
  EXPECT_NE(run({"ir3", "opt", in, "-o", out, "--pass", "nope"}, &o), 0);
}
