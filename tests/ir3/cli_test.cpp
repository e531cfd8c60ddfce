// The `opvision ir3` command line: dis/asm/sim/check/info on files, --help, and error exits.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "ir3/cli.h"
#include "ir3/container.h"
#include "ir3/isa.h"

using namespace opv::ir3;

namespace {
int run(std::vector<std::string> args, std::string* out = nullptr) {
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  testing::internal::CaptureStdout();
  int rc = cli_main(static_cast<int>(argv.size()), argv.data());
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
  for (const char* c : {"dis", "asm", "sim", "check", "info"}) {
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
