// A tiny command-line parser for the opvision subcommands: each subcommand declares its
// positionals, options (with a value) and flags (without); parse() fills an Args or throws
// UsageError naming the unknown/missing/malformed option; --help / -h is always accepted.
// Options take their value as the next argument or after '=' (--threads=4); "--" ends options.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"

namespace opv::tools {

// A command-line mistake: the CLI prints it with a hint to use --help and exits 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& msg) : Error(msg) {}
};

class Args {
 public:
  bool help = false;
  std::vector<std::string> positionals;

  bool has(const std::string& name) const;  // option given or flag set
  // The last value of an option, or `dflt` when absent.
  std::string get(const std::string& name, const std::string& dflt = "") const;
  std::vector<std::string> all(const std::string& name) const;  // every value, in order
  // Typed getters; a malformed value throws UsageError naming the option.
  int64_t get_int(const std::string& name, int64_t dflt) const;
  // Same, and a value outside [lo, hi] throws UsageError naming the option and the range.
  int64_t get_int(const std::string& name, int64_t dflt, int64_t lo, int64_t hi) const;
  double get_double(const std::string& name, double dflt) const;
  std::vector<int64_t> get_ints(const std::string& name, const std::vector<int64_t>& dflt) const;  // "1,2,3"
  std::vector<int64_t> get_ints(const std::string& name, const std::vector<int64_t>& dflt, int64_t lo,
                                int64_t hi) const;  // each value in [lo, hi]

  std::map<std::string, std::vector<std::string>> values;  // by option name ("--threads")
};

class ArgParser {
 public:
  // `command`: "opvision run"; `summary`: one line; `usage`: the synopsis after the command.
  ArgParser(std::string command, std::string summary, std::string usage);

  // name: "--threads"; alias: "-o" or ""; metavar: "N" (shown in help); dflt: shown in help.
  ArgParser& option(const std::string& name, const std::string& metavar, const std::string& help,
                    const std::string& dflt = "", const std::string& alias = "", bool repeatable = false);
  ArgParser& flag(const std::string& name, const std::string& help, const std::string& alias = "");
  // Positionals in order; required ones must come before optional ones.
  ArgParser& positional(const std::string& name, const std::string& help, bool required = true);
  // Free text appended to the help (details, examples).
  ArgParser& epilog(const std::string& text);

  // argv[0] is the subcommand name (skipped). Throws UsageError on bad input; with --help
  // returns Args{help=true} without checking the rest.
  Args parse(int argc, char** argv) const;
  Args parse(const std::vector<std::string>& args) const;  // args without the subcommand name
  std::string help() const;

 private:
  struct Opt {
    std::string name, alias, metavar, help, dflt;
    bool takes_value = true;
    bool repeatable = false;
  };
  struct Pos {
    std::string name, help;
    bool required = true;
  };
  const Opt* find(const std::string& name) const;
  [[noreturn]] void usage_error(const std::string& msg) const;

  std::string command_, summary_, usage_, epilog_;
  std::vector<Opt> opts_;
  std::vector<Pos> pos_;
};

}  // namespace opv::tools
