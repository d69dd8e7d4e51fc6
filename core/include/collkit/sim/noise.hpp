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
  trace,        // LogGOPSim's noise trace replayed in time: `samples` = start, duration, start, ...
};

struct Distribution {
  DistKind kind = DistKind::none;
  double a = 0, b = 0;  // trace: b = 1 for LogGOPSim's --noise-cosched (one offset for all ranks)
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

// A noise trace as LogGOPSim's --noise-trace reads it: detours (start, duration) in ns, sorted by
// start; the trace repeats with the period of its last start (the last line marks the period). A
// rank sees it shifted by its own offset in [0, period) (drawn from the run's seed; one for all
// ranks when co-scheduled), and an op busy on a CPU from `start` for `len` ns is lengthened by the
// detours it meets: what is left of the one under way at its start, plus every one that starts
// before it ends.
class NoiseTrace {
 public:
  explicit NoiseTrace(const Distribution& d);  // d.kind == trace, validated
  double period() const { return period_; }
  double detour(double offset, double start, double len) const;

 private:
  double sum_before(double y, bool inclusive) const;  // durations of detours starting < y (<=)
  std::vector<double> start_, dur_, cum_;             // cum_[i]: durations of detours 0..i-1
  double period_ = 0, total_ = 0;
};

}  // namespace collkit::sim
