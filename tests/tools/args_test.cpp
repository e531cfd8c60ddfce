// Tests of the CLI argument parser (src/tools/args.cpp).
#include <gtest/gtest.h>

#include "tools/args.h"

namespace opv::tools {
namespace {

ArgParser make_parser() {
  ArgParser p("opvision run", "Runs a model.", "MODEL [options]");
  p.positional("MODEL", "the model")
      .positional("EXTRA", "an optional second argument", false)
      .option("--threads", "N", "CPU threads", "0")
      .option("--output", "OUT.npz", "where outputs go", "", "-o")
      .option("--input", "NAME=FILE", "one input", "", "", true)
      .option("--widths", "LIST", "stage widths", "64,128")
      .flag("--json", "JSON output")
      .epilog("Example: opvision run m.onnx");
  return p;
}

std::string usage_error(const std::vector<std::string>& args) {
  try {
    make_parser().parse(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Args, ParsesOptionsFlagsAndPositionals) {
  Args a = make_parser().parse({"m.onnx", "--threads", "4", "-o", "out.npz", "--json", "--input", "img=a.npy",
                                "--input=big_img=b.npy", "second"});
  EXPECT_FALSE(a.help);
  ASSERT_EQ(a.positionals, (std::vector<std::string>{"m.onnx", "second"}));
  EXPECT_EQ(a.get_int("--threads", 0), 4);
  EXPECT_EQ(a.get("--output"), "out.npz");
  EXPECT_TRUE(a.has("--json"));
  EXPECT_EQ(a.all("--input"), (std::vector<std::string>{"img=a.npy", "big_img=b.npy"}));
  EXPECT_FALSE(a.has("--widths"));
  EXPECT_EQ(a.get_ints("--widths", {1, 2}), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(a.get("--missing", "dflt"), "dflt");
}

TEST(Args, ValuesAndSeparator) {
  Args a = make_parser().parse({"--widths=8,16,-32", "--threads=-1", "--", "-weird-name.onnx"});
  EXPECT_EQ(a.get_ints("--widths", {}), (std::vector<int64_t>{8, 16, -32}));
  EXPECT_EQ(a.get_int("--threads", 0), -1);
  EXPECT_EQ(a.positionals, (std::vector<std::string>{"-weird-name.onnx"}));
  // A value may itself start with '-' when it follows its option.
  Args b = make_parser().parse({"m", "-o", "-"});
  EXPECT_EQ(b.get("--output"), "-");
}

TEST(Args, HelpShortCircuits) {
  EXPECT_TRUE(make_parser().parse({"--help"}).help);
  EXPECT_TRUE(make_parser().parse({"--bogus", "-h"}).help);  // help wins over other mistakes
  EXPECT_FALSE(make_parser().parse({"--", "--help"}).help);  // after "--" it is a positional
  std::string h = make_parser().help();
  for (const char* s : {"usage: opvision run MODEL [options]", "Runs a model.", "MODEL", "EXTRA", "(optional)",
                        "--threads N", "-o, --output OUT.npz", "(default: 64,128)", "(repeatable)", "--json",
                        "--help", "Example: opvision run m.onnx"})
    EXPECT_NE(h.find(s), std::string::npos) << "help lacks '" << s << "':\n" << h;
}

TEST(Args, ErrorsNameTheProblem) {
  struct Case {
    std::vector<std::string> args;
    const char* expect;
  };
  const Case cases[] = {
      {{}, "missing argument MODEL"},
      {{"m", "--bogus"}, "unknown option '--bogus'"},
      {{"m", "-x"}, "unknown option '-x'"},
      {{"m", "--threads"}, "option --threads needs a value (N)"},
      {{"m", "--threads", "1", "--threads", "2"}, "--threads given more than once"},
      {{"m", "--json=1"}, "--json takes no value"},
      {{"m", "e", "f"}, "unexpected argument 'f'"},
  };
  for (const Case& c : cases) {
    std::string err = usage_error(c.args);
    EXPECT_NE(err.find(c.expect), std::string::npos) << "expected '" << c.expect << "', got '" << err << "'";
    EXPECT_NE(err.find("opvision run --help"), std::string::npos) << err;
  }
}

TEST(Args, MalformedNumbersAreUsageErrors) {
  ArgParser p = make_parser();
  EXPECT_THROW(p.parse({"m", "--threads", "four"}).get_int("--threads", 0), UsageError);
  EXPECT_THROW(p.parse({"m", "--threads", "4x"}).get_int("--threads", 0), UsageError);
  EXPECT_THROW(p.parse({"m", "--threads", ""}).get_int("--threads", 0), UsageError);
  EXPECT_THROW(p.parse({"m", "--threads", "99999999999999999999"}).get_int("--threads", 0), UsageError);
  EXPECT_DOUBLE_EQ(p.parse({"m", "--threads", "1.5"}).get_double("--threads", 0), 1.5);
  EXPECT_THROW(p.parse({"m", "--threads", "1.5x"}).get_double("--threads", 0), UsageError);
  EXPECT_THROW(p.parse({"m", "--widths", "1,,2"}).get_ints("--widths", {}), UsageError);
  EXPECT_THROW(p.parse({"m", "--widths", "1,2,"}).get_ints("--widths", {}), UsageError);
  EXPECT_THROW(p.parse({"m", "--widths", ""}).get_ints("--widths", {}), UsageError);
  EXPECT_THROW(p.parse({"m", "--widths", "a,b"}).get_ints("--widths", {}), UsageError);
  try {
    p.parse({"m", "--threads", "four"}).get_int("--threads", 0);
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--threads"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("four"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace opv::tools
