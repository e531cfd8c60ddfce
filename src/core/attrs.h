// Node/kernel attributes: a small ordered map of typed values, serialisable into the artifact.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace opv {

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

class Attrs {
 public:
  bool has(const std::string& k) const { return map_.count(k) != 0; }
  void set(const std::string& k, AttrValue v) { map_[k] = std::move(v); }
  void erase(const std::string& k) { map_.erase(k); }

  // Typed getters with defaults; a present value of the wrong type throws opv::Error.
  int64_t i(const std::string& k, int64_t dflt = 0) const;
  double f(const std::string& k, double dflt = 0.0) const;  // accepts an int value too
  std::string s(const std::string& k, const std::string& dflt = "") const;
  std::vector<int64_t> ints(const std::string& k, const std::vector<int64_t>& dflt = {}) const;
  std::vector<double> floats(const std::string& k, const std::vector<double>& dflt = {}) const;

  const std::map<std::string, AttrValue>& map() const { return map_; }
  bool operator==(const Attrs& o) const { return map_ == o.map_; }
  std::string str() const;  // "group=1 strides=[2,2]"

 private:
  std::map<std::string, AttrValue> map_;
};

}  // namespace opv
