// Reads tuning tables with the interposition library's parser and prints, per file, "ok N" (N
// rules, then one line per rule) or "error: MESSAGE". The tests build it under ASan/UBSan and
// feed it hostile files. No MPI.
//   pmpi_table_check FILE...
#include <cstdio>

#include "../src/pmpi_table.hpp"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const collkit::pmpi::Table t = collkit::pmpi::load_table(argv[i]);
    if (!t.error.empty()) {
      std::printf("error: %s\n", t.error.c_str());
      continue;
    }
    std::printf("ok %zu\n", t.rules.size());
    for (const auto& r : t.rules)
      std::printf("%s %lld %lld %lld %lld %s\n", collkit::pmpi::kCollectives[r.collective],
                  static_cast<long long>(r.p_lo), static_cast<long long>(r.p_hi),
                  static_cast<long long>(r.bytes_lo), static_cast<long long>(r.bytes_hi),
                  r.algorithm.c_str());
  }
  return 0;
}
