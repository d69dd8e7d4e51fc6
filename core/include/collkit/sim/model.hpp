// Network cost models of the simulator, their parameters named as in the papers, declared once.
// Every time is in nanoseconds, every size in bytes; n below is a message's size in bytes.
//
//   postal            alpha + n beta per message; a rank's send port carries one message at a
//                     time, busy until the message has arrived ([Ruefenacht 2017] Eq. 1).
//   pipelined_postal  alpha_p + b (alpha_r + n beta) for b sends issued together: the send port is
//                     busy alpha_r + n beta per message, after which the message still needs
//                     alpha_p to arrive, overlapping the next sends ([Ruefenacht 2017] Eq. 3).
//   logp / loggp /    L, o, g, G, O, S as in LogGOPSim (Hoefler, Schneider, Lumsdaine, HPDC 2010):
//   loggops           sender CPU o + (n-1) O, send gap g + (n-1) G, first byte arrives o + L after
//                     the send starts, receiver CPU o + max((n-1) O, (n-1) G), receive gap
//                     g + (n-1) G; messages above S bytes use the rendezvous protocol (the send
//                     completes only once the receive has matched). logp: G = O = 0, S = inf;
//                     loggp: O = 0, S = inf.
// Local ops, in every model: reduce costs reduce_base + gamma n, copy costs copy_beta n, compute
// and sleep their own duration; they run one at a time on the rank's CPU.
#pragma once
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>

namespace collkit::sim {

enum class ModelKind : uint8_t { postal, pipelined_postal, logp, loggp, loggops };
// Every model, in ModelKind order: what the bindings and the CLI list.
std::span<const ModelKind> model_kinds();
std::string_view to_string(ModelKind k);
// Accepts the names above and "pipelined-postal"; throws Error(invalid_argument) otherwise.
ModelKind model_from_string(std::string_view s);

struct ModelParams {
  ModelKind kind = ModelKind::postal;
  double alpha = 500;    // postal: latency per message (ns)
  double beta = 0;       // postal, pipelined postal: ns per byte
  double alpha_p = 500;  // pipelined postal: overlappable latency (ns)
  double alpha_r = 100;  // pipelined postal: non-overlappable part of each send (ns)
  double L = 500;        // LogGOPS: wire latency (ns)
  double o = 100;        // LogGOPS: CPU overhead per message (ns)
  double g = 100;        // LogGOPS: gap between messages (ns)
  double G = 0;          // LogGP/LogGOPS: gap per byte (ns)
  double O = 0;          // LogGOPS: CPU overhead per byte (ns)
  double S = std::numeric_limits<double>::infinity();  // LogGOPS: rendezvous above S bytes
  double gamma = 0;                                    // ns per byte reduced
  double reduce_base = 0;                              // ns per reduce op, whatever its size
  double copy_beta = 0;                                // ns per byte copied

  bool is_logp_family() const { return kind >= ModelKind::logp; }
};

// The parameters, declared once for every consumer (the Python API and CLI read this table):
// name, unit, meaning, the field, and the models that use it (a bit per ModelKind; local costs
// apply to every model).
struct ParamInfo {
  std::string_view name;
  std::string_view unit;  // "ns", "ns/B" (a time per byte) or "B" (a size)
  std::string_view doc;
  double ModelParams::* field;
  uint8_t models;  // bit (1 << ModelKind)
};
std::span<const ParamInfo> model_params();
constexpr uint8_t model_bit(ModelKind k) {
  return static_cast<uint8_t>(1u << static_cast<unsigned>(k));
}

// Throws Error(invalid_argument) for a negative or non-finite time (S may be infinite) and
// returns the parameters with what the model does not use set to its neutral value
// (logp: G = O = 0, S = inf; loggp: O = 0, S = inf).
ModelParams normalized(const ModelParams& p);

}  // namespace collkit::sim
