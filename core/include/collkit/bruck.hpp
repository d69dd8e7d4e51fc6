// The radix-r Bruck all-to-all, counted: its steps, the blocks each step sends (numC / numD of
// [Fan 2022]) and the choice of r by the alpha-beta model. Shared by alltoall:bruck,
// alltoall:bruck_modified and the Python bindings, so that the counts and the schedules come from
// one definition of the step sequence.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace collkit {

// One communication step of the Bruck exchange: round x (radix-r digit x), digit value z,
// distance z * r^x. It moves every block whose relative index has digit x equal to z.
struct BruckStep {
  int x = 0;
  int64_t z = 0;
  int64_t dist = 0;    // z * r^x
  int64_t blocks = 0;  // numD of this step
};

// w = ceil(log_r P), computed in integers (no floating-point log: ceil(log(8)/log(2)) may be 4).
int bruck_rounds(int64_t P, int64_t r);
// The steps in the order the schedules perform them: x = 0 .. w-1, z = 1 .. r-1, skipping the
// steps of the last round whose distance z * r^x reaches P (they would move nothing).
std::vector<BruckStep> bruck_steps(int64_t P, int64_t r);
// Blocks i in [0, P) whose radix-r digit x equals z (counted, not enumerated).
int64_t bruck_step_blocks(int64_t P, int64_t r, int x, int64_t z);

// The alpha-beta model of one Bruck all-to-all:
//   T(r) = numC(r) alpha + numD_total(r) N beta
// with N the bytes per block. Units: seconds and seconds per byte.
struct BruckModel {
  double alpha_s = 2e-6;           // start-up per message (s)
  double beta_s_per_byte = 2e-10;  // transfer per byte (s/B), 5 GB/s
  double seconds(int64_t P, int64_t r, int64_t block_bytes) const;
  // The r in [2, max(2, P)] with the least modelled time (the smallest such r on ties).
  int64_t best_radix(int64_t P, int64_t block_bytes) const;
};

// Parse the `r` parameter of the Bruck algorithms: "auto" (returns 0) or an integer >= 2.
// Throws Error(name) naming the algorithm otherwise.
int64_t parse_bruck_radix(std::string_view algorithm, std::string_view text);
// Largest radix accepted: any r >= P behaves as r = P (one round of P-1 steps).
constexpr int64_t kMaxBruckRadix = int64_t{1} << 31;

}  // namespace collkit
