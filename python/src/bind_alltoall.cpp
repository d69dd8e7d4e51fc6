// The radix-r Bruck counts and model (collkit/bruck.hpp), for collkit.analysis.bruck.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <tuple>
#include <vector>

#include "bindings.hpp"
#include "collkit/bruck.hpp"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"

namespace nb = nanobind;

namespace collkit::py {
namespace {

void check(int64_t P, int64_t r) {
  if (P < 1 || P > kMaxP)
    fail(ErrorKind::invalid_argument, "P = " + std::to_string(P) + " must be in [1, 2^31]");
  if (r < 2 || r > kMaxBruckRadix)
    fail(ErrorKind::invalid_argument, "r = " + std::to_string(r) + " must be in [2, 2^31]");
}

BruckModel model(double alpha, double beta) {
  if (!(alpha >= 0) || !(beta >= 0))
    fail(ErrorKind::invalid_argument, "alpha and beta must be >= 0");
  return BruckModel{alpha, beta};
}

}  // namespace

void bind_alltoall(nb::module_& m) {
  m.def(
      "bruck_rounds",
      [](int64_t P, int64_t r) {
        check(P, r);
        return bruck_rounds(P, r);
      },
      nb::arg("P"), nb::arg("r"));
  m.def(
      "bruck_steps",
      [](int64_t P, int64_t r) {
        check(P, r);
        std::vector<std::tuple<int, int64_t, int64_t, int64_t>> out;
        for (const BruckStep& s : bruck_steps(P, r)) out.emplace_back(s.x, s.z, s.dist, s.blocks);
        return out;
      },
      nb::arg("P"), nb::arg("r"));
  m.def(
      "bruck_counts",
      [](int64_t P, int64_t r) {
        check(P, r);
        int64_t c = 0, d = 0;
        for (const BruckStep& s : bruck_steps(P, r)) ++c, d += s.blocks;
        return std::make_tuple(c, d);
      },
      nb::arg("P"), nb::arg("r"));
  const BruckModel defaults;
  m.attr("bruck_default_alpha_s") = defaults.alpha_s;
  m.attr("bruck_default_beta_s_per_byte") = defaults.beta_s_per_byte;
  m.def(
      "bruck_model_seconds",
      [](int64_t P, int64_t r, int64_t block_bytes, double alpha, double beta) {
        check(P, r);
        if (block_bytes < 0) fail(ErrorKind::invalid_argument, "block bytes must be >= 0");
        return model(alpha, beta).seconds(P, r, block_bytes);
      },
      nb::arg("P"), nb::arg("r"), nb::arg("block_bytes"), nb::arg("alpha"), nb::arg("beta"));
  m.def(
      "bruck_best_radix",
      [](int64_t P, int64_t block_bytes, double alpha, double beta) {
        check(P, 2);
        if (block_bytes < 0) fail(ErrorKind::invalid_argument, "block bytes must be >= 0");
        return model(alpha, beta).best_radix(P, block_bytes);
      },
      nb::arg("P"), nb::arg("block_bytes"), nb::arg("alpha"), nb::arg("beta"));
}

}  // namespace collkit::py
