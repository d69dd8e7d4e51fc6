// Noise: per-op delays and per-rank arrival skew drawn from a seeded distribution.
// Every value is in nanoseconds and never negative.
#pragma once
#include <cstdint>
#include <vector>

namespace collkit::sim {

enum class DistKind : uint8_t {
  none,         // always 0
  constant,     // always a
  uniform,      // uniform in [a, b]
  exponential,  // mean a
  lognormal,    // exp(N(ln a, b^2)): median a, shape sigma b
  samples,      // uniform choice among `samples` (e.g. measured detours read from a file)
};

struct Distribution {
  DistKind kind = DistKind::none;
  double a = 0, b = 0;
  std::vector<double> samples;
};

// Throws Error(invalid_argument) for parameters that could yield a negative, infinite or
// undefined value.
void validate(const Distribution& d, const char* what);

// xoshiro256** seeded through splitmix64: fast, small, and the same stream on every machine.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  double uniform01();  // [0, 1)

 private:
  uint64_t s_[4];
};

double sample(const Distribution& d, Rng& rng);

}  // namespace collkit::sim
