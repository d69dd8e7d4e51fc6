// A minimal test harness for the C++ unit tests (no dependency to install): TEST(name) { ... }
// registers a test; CHECK(cond) records a failure with file and line and carries on.
#pragma once
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace collkit::test {

struct Case {
  const char* name;
  std::function<void()> fn;
};
inline std::vector<Case>& cases() {
  static std::vector<Case> c;
  return c;
}
inline int& failures() {
  static int f = 0;
  return f;
}
struct Register {
  Register(const char* n, std::function<void()> f) { cases().push_back({n, std::move(f)}); }
};

}  // namespace collkit::test

#define COLLKIT_CAT2(a, b) a##b
#define COLLKIT_CAT(a, b) COLLKIT_CAT2(a, b)
#define TEST(name)                                                             \
  static void name();                                                          \
  static const ::collkit::test::Register COLLKIT_CAT(reg_, name){#name, name}; \
  static void name()
#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++::collkit::test::failures();                                                \
    }                                                                               \
  } while (0)
