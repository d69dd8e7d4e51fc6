#include <cstdio>
#include <exception>

#include "check.hpp"

int main() {
  int passed = 0, failed = 0;
  for (const auto& c : collkit::test::cases()) {
    int before = collkit::test::failures();
    try {
      c.fn();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: unexpected exception: %s\n", c.name, e.what());
      ++collkit::test::failures();
    }
    bool ok = collkit::test::failures() == before;
    std::printf("%-40s %s\n", c.name, ok ? "ok" : "FAILED");
    (ok ? passed : failed)++;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
