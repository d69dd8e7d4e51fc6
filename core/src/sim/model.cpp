#include "collkit/sim/model.hpp"

#include <array>
#include <cmath>

#include "collkit/error.hpp"

namespace collkit::sim {

namespace {
constexpr std::array<std::string_view, 5> kNames = {"postal", "pipelined_postal", "logp", "loggp",
                                                    "loggops"};

void check_time(double v, const char* name) {
  if (!std::isfinite(v) || v < 0)
    fail(ErrorKind::invalid_argument, std::string("model parameter ") + name +
                                          " must be a finite time >= 0, got " + std::to_string(v));
}
}  // namespace

std::string_view to_string(ModelKind k) {
  return kNames[static_cast<size_t>(k)];
}

ModelKind model_from_string(std::string_view s) {
  if (s == "pipelined-postal") return ModelKind::pipelined_postal;
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == s) return static_cast<ModelKind>(i);
  fail(ErrorKind::invalid_argument,
       "unknown model '" + std::string(s) +
           "' (known: postal, pipelined-postal, logp, loggp, loggops)");
}

ModelParams normalized(const ModelParams& in) {
  ModelParams p = in;
  check_time(p.alpha, "alpha");
  check_time(p.beta, "beta");
  check_time(p.alpha_p, "alpha_p");
  check_time(p.alpha_r, "alpha_r");
  check_time(p.L, "L");
  check_time(p.o, "o");
  check_time(p.g, "g");
  check_time(p.G, "G");
  check_time(p.O, "O");
  check_time(p.gamma, "gamma");
  check_time(p.reduce_base, "reduce_base");
  check_time(p.copy_beta, "copy_beta");
  if (std::isnan(p.S) || p.S < 0)
    fail(ErrorKind::invalid_argument, "model parameter S must be a size >= 0 (or infinite)");
  if (p.kind == ModelKind::logp) p.G = 0;
  if (p.kind == ModelKind::logp || p.kind == ModelKind::loggp) {
    p.O = 0;
    p.S = std::numeric_limits<double>::infinity();
  }
  return p;
}

}  // namespace collkit::sim
