// Command-line parsing for the opvision subcommands (see args.h).
#include "tools/args.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace opv::tools {

namespace {
constexpr size_t kHelpColumn = 28;  // where option descriptions start in --help output

[[noreturn]] void bad_value(const std::string& name, const std::string& value, const char* want) {
  throw UsageError("option " + name + ": '" + value + "' is not " + want);
}

int64_t parse_int(const std::string& name, const std::string& s) {
  if (s.empty()) bad_value(name, s, "an integer");
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) bad_value(name, s, "an integer");
  return int64_t(v);
}
}  // namespace

bool Args::has(const std::string& name) const { return values.count(name) != 0; }

std::string Args::get(const std::string& name, const std::string& dflt) const {
  auto it = values.find(name);
  return it == values.end() || it->second.empty() ? dflt : it->second.back();
}

std::vector<std::string> Args::all(const std::string& name) const {
  auto it = values.find(name);
  return it == values.end() ? std::vector<std::string>{} : it->second;
}

int64_t Args::get_int(const std::string& name, int64_t dflt) const {
  return has(name) ? parse_int(name, get(name)) : dflt;
}

int64_t Args::get_int(const std::string& name, int64_t dflt, int64_t lo, int64_t hi) const {
  if (!has(name)) return dflt;
  int64_t v = parse_int(name, get(name));
  if (v < lo || v > hi)
    bad_value(name, get(name), ("an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]").c_str());
  return v;
}

std::vector<int64_t> Args::get_ints(const std::string& name, const std::vector<int64_t>& dflt, int64_t lo,
                                    int64_t hi) const {
  std::vector<int64_t> r = get_ints(name, dflt);
  for (int64_t v : r)
    if (has(name) && (v < lo || v > hi))
      bad_value(name, get(name), ("a list of integers in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]").c_str());
  return r;
}

double Args::get_double(const std::string& name, double dflt) const {
  if (!has(name)) return dflt;
  std::string s = get(name);
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || errno != 0 || end != s.c_str() + s.size()) bad_value(name, s, "a number");
  return v;
}

std::vector<int64_t> Args::get_ints(const std::string& name, const std::vector<int64_t>& dflt) const {
  if (!has(name)) return dflt;
  std::string s = get(name);
  std::vector<int64_t> r;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) r.push_back(parse_int(name, item));
  if (r.empty() || (!s.empty() && s.back() == ',')) bad_value(name, s, "a comma-separated list of integers");
  return r;
}

ArgParser::ArgParser(std::string command, std::string summary, std::string usage)
    : command_(std::move(command)), summary_(std::move(summary)), usage_(std::move(usage)) {}

ArgParser& ArgParser::option(const std::string& name, const std::string& metavar, const std::string& help,
                             const std::string& dflt, const std::string& alias, bool repeatable) {
  opts_.push_back({name, alias, metavar, help, dflt, true, repeatable});
  return *this;
}

ArgParser& ArgParser::flag(const std::string& name, const std::string& help, const std::string& alias) {
  opts_.push_back({name, alias, "", help, "", false, false});
  return *this;
}

ArgParser& ArgParser::positional(const std::string& name, const std::string& help, bool required) {
  OPV_ASSERT(!required || pos_.empty() || pos_.back().required);
  pos_.push_back({name, help, required});
  return *this;
}

ArgParser& ArgParser::epilog(const std::string& text) {
  epilog_ = text;
  return *this;
}

const ArgParser::Opt* ArgParser::find(const std::string& name) const {
  for (const Opt& o : opts_)
    if (o.name == name || (!o.alias.empty() && o.alias == name)) return &o;
  return nullptr;
}

void ArgParser::usage_error(const std::string& msg) const {
  throw UsageError(command_ + ": " + msg + " (see '" + command_ + " --help')");
}

Args ArgParser::parse(int argc, char** argv) const {
  std::vector<std::string> v;
  for (int i = 1; i < argc; ++i) v.emplace_back(argv[i]);
  return parse(v);
}

Args ArgParser::parse(const std::vector<std::string>& args) const {
  Args a;
  for (const std::string& s : args) {
    if (s == "--") break;
    if (s == "--help" || s == "-h") {
      a.help = true;
      return a;
    }
  }
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& s = args[i];
    if (!options_done && s == "--") {
      options_done = true;
      continue;
    }
    if (options_done || s.size() < 2 || s[0] != '-') {
      a.positionals.push_back(s);
      continue;
    }
    std::string name = s, value;
    bool inline_value = false;
    size_t eq = s.find('=');
    if (s.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = s.substr(0, eq);
      value = s.substr(eq + 1);
      inline_value = true;
    }
    const Opt* o = find(name);
    if (!o) usage_error("unknown option '" + name + "'");
    if (!o->repeatable && a.has(o->name)) usage_error("option " + o->name + " given more than once");
    if (o->takes_value) {
      if (!inline_value) {
        if (i + 1 >= args.size()) usage_error("option " + o->name + " needs a value (" + o->metavar + ")");
        value = args[++i];
      }
      a.values[o->name].push_back(value);
    } else {
      if (inline_value) usage_error("option " + o->name + " takes no value");
      a.values[o->name];  // present, no value
    }
  }
  size_t required = 0;
  for (const Pos& p : pos_) required += p.required ? 1 : 0;
  if (a.positionals.size() < required) usage_error("missing argument " + pos_[a.positionals.size()].name);
  if (a.positionals.size() > pos_.size())
    usage_error("unexpected argument '" + a.positionals[pos_.size()] + "'");
  return a;
}

std::string ArgParser::help() const {
  std::ostringstream os;
  os << "usage: " << command_ << (usage_.empty() ? "" : " ") << usage_ << "\n\n" << summary_ << "\n";
  auto row = [&](const std::string& left, const std::string& text) {
    std::string l = "  " + left;
    os << l;
    if (l.size() + 2 > kHelpColumn) os << "\n" << std::string(kHelpColumn, ' ');
    else os << std::string(kHelpColumn - l.size(), ' ');
    os << text << "\n";
  };
  if (!pos_.empty()) {
    os << "\narguments:\n";
    for (const Pos& p : pos_) row(p.name, p.help + (p.required ? "" : " (optional)"));
  }
  os << "\noptions:\n";
  for (const Opt& o : opts_) {
    std::string left = (o.alias.empty() ? "" : o.alias + ", ") + o.name + (o.takes_value ? " " + o.metavar : "");
    std::string text = o.help;
    if (!o.dflt.empty()) text += " (default: " + o.dflt + ")";
    if (o.repeatable) text += " (repeatable)";
    row(left, text);
  }
  row("-h, --help", "show this help and exit");
  if (!epilog_.empty()) os << "\n" << epilog_ << (epilog_.back() == '\n' ? "" : "\n");
  return os.str();
}

}  // namespace opv::tools
