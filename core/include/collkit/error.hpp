// Errors the core raises. Every bad input ends here with a message a user can act on;
// the Python layer maps each kind to its own exception class.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace collkit {

enum class ErrorKind : uint8_t {
  invalid_argument,  // a P, count, rank or parameter that cannot be used
  name,              // a malformed or unknown algorithm name
  format,            // a schedule text (or other file) that does not parse
  unsupported,       // a valid request that this algorithm cannot serve (e.g. needs P = 2^k)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void fail(ErrorKind kind, const std::string& message) {
  throw Error(kind, message);
}

}  // namespace collkit
