#include "core/attrs.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace opv {

namespace {
template <typename T>
const T* get(const std::map<std::string, AttrValue>& m, const std::string& k, const char* want) {
  auto it = m.find(k);
  if (it == m.end()) return nullptr;
  const T* v = std::get_if<T>(&it->second);
  OPV_CHECK(v != nullptr, "attribute '", k, "' is not of type ", want);
  return v;
}
}  // namespace

int64_t Attrs::i(const std::string& k, int64_t dflt) const {
  const int64_t* v = get<int64_t>(map_, k, "int");
  return v ? *v : dflt;
}

double Attrs::f(const std::string& k, double dflt) const {
  auto it = map_.find(k);
  if (it == map_.end()) return dflt;
  if (const int64_t* iv = std::get_if<int64_t>(&it->second)) return double(*iv);
  const double* v = get<double>(map_, k, "float");
  return *v;
}

std::string Attrs::s(const std::string& k, const std::string& dflt) const {
  const std::string* v = get<std::string>(map_, k, "string");
  return v ? *v : dflt;
}

std::vector<int64_t> Attrs::ints(const std::string& k, const std::vector<int64_t>& dflt) const {
  const auto* v = get<std::vector<int64_t>>(map_, k, "ints");
  return v ? *v : dflt;
}

std::vector<double> Attrs::floats(const std::string& k, const std::vector<double>& dflt) const {
  const auto* v = get<std::vector<double>>(map_, k, "floats");
  return v ? *v : dflt;
}

std::string Attrs::str() const {
  std::ostringstream os;
  bool first = true;
  for (const auto& [k, v] : map_) {
    if (!first) os << " ";
    first = false;
    os << k << "=";
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>> || std::is_same_v<T, std::vector<double>>) {
            os << "[";
            for (size_t i = 0; i < x.size(); ++i) os << (i ? "," : "") << x[i];
            os << "]";
          } else if constexpr (std::is_same_v<T, std::string>) {
            // Binary values (the cuda target's cubins) as their size, not their bytes.
            const bool text = std::all_of(x.begin(), x.end(), [](char c) {
              const auto u = static_cast<unsigned char>(c);
              return u >= 0x20 && u != 0x7f;
            });
            if (text)
              os << x;
            else
              os << "<" << x.size() << " bytes>";
          } else {
            os << x;
          }
        },
        v);
  }
  return os.str();
}

}  // namespace opv
