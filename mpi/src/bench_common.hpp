// Small pieces the MPI programs (bench driver, multicast benchmark, correctness check) share:
// argument parsing and summary statistics.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace collkit::mpi {

// "--key value" pairs; flags are "--key" followed by another "--" or nothing.
class Args {
 public:
  Args(int argc, char** argv) : argv_(argv + 1, argv + argc) {}
  std::string get(const std::string& key, const std::string& def) const {
    for (size_t i = 0; i + 1 < argv_.size(); ++i)
      if (argv_[i] == "--" + key) return argv_[i + 1];
    return def;
  }
  long long num(const std::string& key, long long def) const {
    const std::string v = get(key, "");
    if (v.empty()) return def;
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (*end != '\0') {
      std::fprintf(stderr, "error: --%s '%s' is not an integer\n", key.c_str(), v.c_str());
      std::exit(2);
    }
    return x;
  }
  bool flag(const std::string& key) const {
    return std::find(argv_.begin(), argv_.end(), "--" + key) != argv_.end();
  }

 private:
  std::vector<std::string> argv_;
};

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t e = s.find(sep, at);
    if (e == std::string::npos) e = s.size();
    if (e > at) out.push_back(s.substr(at, e - at));
    at = e + 1;
  }
  return out;
}

struct Stats {
  double min = 0, q1 = 0, median = 0, q3 = 0, mean = 0, p99 = 0, max = 0;
};

// Quantile by linear interpolation between order statistics (numpy's default).
inline double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return NAN;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

inline Stats summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.q1 = quantile(v, 0.25);
  s.median = quantile(v, 0.5);
  s.q3 = quantile(v, 0.75);
  s.p99 = quantile(v, 0.99);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    o += c;
  }
  return o;
}

}  // namespace collkit::mpi
