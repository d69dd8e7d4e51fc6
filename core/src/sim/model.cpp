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

std::span<const ParamInfo> model_params() {
  constexpr uint8_t postal = model_bit(ModelKind::postal);
  constexpr uint8_t pipe = model_bit(ModelKind::pipelined_postal);
  constexpr uint8_t logp = model_bit(ModelKind::logp), loggp = model_bit(ModelKind::loggp);
  constexpr uint8_t loggops = model_bit(ModelKind::loggops);
  constexpr uint8_t all = postal | pipe | logp | loggp | loggops;
  static const ParamInfo table[] = {
      {"alpha", "ns", "postal latency per message", &ModelParams::alpha, postal},
      {"beta", "ns/B", "time per byte on the wire", &ModelParams::beta, postal | pipe},
      {"alpha_p", "ns", "overlappable latency of a send (pipelined postal)", &ModelParams::alpha_p,
       pipe},
      {"alpha_r", "ns", "non-overlappable time of each send (pipelined postal)",
       &ModelParams::alpha_r, pipe},
      {"L", "ns", "wire latency", &ModelParams::L, logp | loggp | loggops},
      {"o", "ns", "CPU overhead per message, at sender and receiver", &ModelParams::o,
       logp | loggp | loggops},
      {"g", "ns", "gap between consecutive messages of a NIC", &ModelParams::g,
       logp | loggp | loggops},
      {"G", "ns/B", "gap per byte", &ModelParams::G, loggp | loggops},
      {"O", "ns/B", "CPU overhead per byte", &ModelParams::O, loggops},
      {"S", "B", "rendezvous threshold in bytes (messages above S)", &ModelParams::S, loggops},
      {"gamma", "ns/B", "reduction time per byte", &ModelParams::gamma, all},
      {"reduce_base", "ns", "time per reduce op, whatever its size", &ModelParams::reduce_base,
       all},
      {"copy_beta", "ns/B", "copy time per byte", &ModelParams::copy_beta, all},
  };
  return table;
}

std::span<const ModelKind> model_kinds() {
  static constexpr ModelKind kinds[] = {ModelKind::postal, ModelKind::pipelined_postal,
                                        ModelKind::logp, ModelKind::loggp, ModelKind::loggops};
  static_assert(std::size(kinds) == kNames.size());
  return kinds;
}

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
  for (const ParamInfo& i : model_params())
    if (i.unit != "B") check_time(p.*i.field, std::string(i.name).c_str());
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
