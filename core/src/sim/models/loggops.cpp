// LogP, LogGP and LogGOPS as LogGOPSim computes them (Hoefler, Schneider, Lumsdaine, "LogGOPSim -
// Simulating Large-Scale Applications in the LogGOPS Model", 2010), for a message of n bytes:
// sender CPU o + (n-1) O, send gap g + (n-1) G, first byte at the receiver o + L after the send
// starts, receiver CPU o + max((n-1) O, (n-1) G) (G is charged at the receiver), receive gap
// g + (n-1) G; messages above S bytes are rendezvous. (n-1) is 0 for an empty message (the
// model as published; LogGOPSim's unsigned arithmetic makes it -1). One class, three models:
// logp has G = O = 0 and S = inf, loggp O = 0 and S = inf.
#include <algorithm>
#include <limits>

#include "collkit/sim/model.hpp"

namespace collkit::sim {
namespace {

class LogGOPS final : public CostModel {
 public:
  LogGOPS(double L, double o, double g, double G, double O, double S)
      : L_(L), o_(o), g_(g), G_(G), O_(O), S_(S) {}
  Rules rules() const override { return Rules::loggops; }
  SendTimes send(double now, double n) const override {
    return {now + o_ + b1(n) * O_, gap_end(now, n), now + o_ + L_, o_};
  }
  RecvTimes recv(double now, double n) const override {
    return {now + o_ + std::max(b1(n) * O_, b1(n) * G_), gap_end(now, n), o_};
  }
  double rendezvous_above() const override { return S_; }

 private:
  static double b1(double n) { return std::max(n - 1.0, 0.0); }  // (n - 1), 0 for n = 0
  double gap_end(double now, double n) const { return now + g_ + b1(n) * G_; }
  double L_, o_, g_, G_, O_, S_;
};

constexpr double kInf = std::numeric_limits<double>::infinity();
const ParamInfo kL{"L", "ns", "wire latency", 500};
const ParamInfo ko{"o", "ns", "CPU overhead per message, at sender and receiver", 100};
const ParamInfo kg{"g", "ns", "gap between consecutive messages of a NIC", 100};
const ParamInfo kG{"G", "ns/B", "gap per byte", 0};
const ParamInfo kO{"O", "ns/B", "CPU overhead per byte", 0};
const ParamInfo kS{"S", "B", "rendezvous threshold in bytes (messages above S)", kInf};

const ModelRegistrar logp{{
    .name = "logp",
    .aliases = {},
    .doc = "o + L + o per message, a gap g between messages",
    .order = 2,
    .rules = Rules::loggops,
    .params = {kL, ko, kg},
    .make = [](const ModelParams& p) -> std::unique_ptr<CostModel> {
      return std::make_unique<LogGOPS>(p.get("L"), p.get("o"), p.get("g"), 0, 0, kInf);
    },
}};

const ModelRegistrar loggp{{
    .name = "loggp",
    .aliases = {},
    .doc = "LogP with a gap per byte G",
    .order = 3,
    .rules = Rules::loggops,
    .params = {kL, ko, kg, kG},
    .make = [](const ModelParams& p) -> std::unique_ptr<CostModel> {
      return std::make_unique<LogGOPS>(p.get("L"), p.get("o"), p.get("g"), p.get("G"), 0, kInf);
    },
}};

const ModelRegistrar loggops{{
    .name = "loggops",
    .aliases = {},
    .doc = "LogGP with a CPU overhead per byte O and rendezvous above S bytes",
    .order = 4,
    .rules = Rules::loggops,
    .params = {kL, ko, kg, kG, kO, kS},
    .make = [](const ModelParams& p) -> std::unique_ptr<CostModel> {
      return std::make_unique<LogGOPS>(p.get("L"), p.get("o"), p.get("g"), p.get("G"), p.get("O"),
                                       p.get("S"));
    },
}};

}  // namespace
}  // namespace collkit::sim
