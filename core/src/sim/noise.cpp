#include "collkit/sim/noise.hpp"

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
  }
  return 0;
}

}  // namespace collkit::sim
