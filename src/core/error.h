// Errors. Every boundary (import, load, run, CLI) reports bad input as opv::Error with a
// message that names what is wrong; OPV_ASSERT marks internal invariants (bugs), which also
// throw (never abort) so that a runtime caller can recover.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace opv {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// A caller's tensor does not match what the model declares (an input's or output's name, dtype or
// shape). A subclass so that a binding can tell the caller's mistake from a failure of the model
// or backend (the Python package raises opvision.InvalidArgument for it).
class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& msg) : Error(msg) {}
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

// Throws opv::Error built from the streamed arguments.
template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  throw Error(detail::concat(args...));
}

// Throws opv::InvalidArgument built from the streamed arguments.
template <typename... Args>
[[noreturn]] void fail_argument(const Args&... args) {
  throw InvalidArgument(detail::concat(args...));
}

}  // namespace opv

#define OPV_CHECK(cond, ...)                    \
  do {                                          \
    if (!(cond)) ::opv::fail(__VA_ARGS__);      \
  } while (0)

#define OPV_ASSERT(cond)                                                              \
  do {                                                                                \
    if (!(cond))                                                                      \
      ::opv::fail("internal error: assertion `", #cond, "` failed at ", __FILE__, ":", \
                  __LINE__);                                                          \
  } while (0)
