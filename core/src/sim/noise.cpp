#include "collkit/sim/noise.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "collkit/error.hpp"

namespace collkit::sim {

namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

[[noreturn]] void bad(const char* what, const std::string& msg) {
  fail(ErrorKind::invalid_argument, std::string(what) + ": " + msg);
}
bool ok_time(double v) {
  return std::isfinite(v) && v >= 0;
}
}  // namespace

Rng::Rng(uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform01() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

void validate(const Distribution& d, const char* what) {
  switch (d.kind) {
    case DistKind::none:
      return;
    case DistKind::constant:
    case DistKind::exponential:
      if (!ok_time(d.a)) bad(what, "the value must be a finite time >= 0");
      return;
    case DistKind::uniform:
      if (!ok_time(d.a) || !ok_time(d.b) || d.b < d.a)
        bad(what, "uniform(lo, hi) needs 0 <= lo <= hi, both finite");
      return;
    case DistKind::lognormal:
      if (!ok_time(d.a) || d.a == 0) bad(what, "lognormal median must be a finite time > 0");
      if (!std::isfinite(d.b) || d.b < 0 || d.b > 10)
        bad(what, "lognormal sigma must be in [0, 10]");
      return;
    case DistKind::samples:
      if (d.samples.empty()) bad(what, "no samples");
      for (double v : d.samples)
        if (!ok_time(v)) bad(what, "samples must be finite times >= 0");
      return;
    case DistKind::trace: {
      if (d.samples.size() < 4 || d.samples.size() % 2 != 0)
        bad(what, "a noise trace needs at least two detours (start, duration)");
      for (double v : d.samples)
        if (!ok_time(v)) bad(what, "a noise trace holds finite times >= 0");
      for (size_t i = 2; i < d.samples.size(); i += 2)
        if (d.samples[i] < d.samples[i - 2]) bad(what, "a noise trace's starts must not decrease");
      if (!(d.samples[d.samples.size() - 2] > 0))
        bad(what, "a noise trace must span some time (its last start is its period)");
      return;
    }
  }
  bad(what, "unknown distribution");
}

double sample(const Distribution& d, Rng& rng) {
  switch (d.kind) {
    case DistKind::none:
      return 0;
    case DistKind::constant:
      return d.a;
    case DistKind::uniform:
      return d.a + (d.b - d.a) * rng.uniform01();
    case DistKind::exponential:
      return -d.a * std::log1p(-rng.uniform01());
    case DistKind::lognormal: {
      // Box-Muller; 1 - u keeps the logarithm finite.
      double u1 = 1.0 - rng.uniform01(), u2 = rng.uniform01();
      double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      return d.a * std::exp(d.b * z);
    }
    case DistKind::samples:
      return d.samples[rng.next() % d.samples.size()];
    case DistKind::trace:
      return 0;  // replayed in time by NoiseTrace, not drawn per op
  }
  return 0;
}

NoiseTrace::NoiseTrace(const Distribution& d) {
  const size_t n = d.samples.size() / 2;
  period_ = d.samples[2 * (n - 1)];
  // The last line starts where the trace repeats (LogGOPSim's trace length): one period holds
  // the detours before it. A detour at 0 stands in for the carry into the first one.
  start_.push_back(0);
  dur_.push_back(0);
  for (size_t i = 0; i + 1 < n; ++i) {
    start_.push_back(d.samples[2 * i]);
    dur_.push_back(d.samples[2 * i + 1]);
  }
  cum_.assign(1, 0);
  for (double v : dur_) cum_.push_back(cum_.back() + v);
  total_ = cum_.back();
}

double NoiseTrace::sum_before(double y, bool inclusive) const {
  const double periods = std::floor(y / period_);
  const double x = y - periods * period_;
  const auto it = inclusive ? std::upper_bound(start_.begin(), start_.end(), x)
                            : std::lower_bound(start_.begin(), start_.end(), x);
  return periods * total_ + cum_[static_cast<size_t>(it - start_.begin())];
}

double NoiseTrace::detour(double offset, double start, double len) const {
  const double x = std::fmod(start + offset, period_);
  // The detour under way at x (the last to start at or before it), if it reaches past x.
  const size_t p =
      static_cast<size_t>(std::upper_bound(start_.begin(), start_.end(), x) - start_.begin()) - 1;
  const double carry = std::max(0.0, start_[p] + dur_[p] - x);
  return carry + std::max(0.0, sum_before(x + len, false) - sum_before(x, true));
}

}  // namespace collkit::sim
