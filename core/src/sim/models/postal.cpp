// The postal model ([Ruefenacht 2017] Eq. 1): alpha + n beta per message. A rank's send port
// carries one message at a time and stays busy, the send not complete, until the message has
// arrived ("one message in flight per rank"); receiving costs nothing.
#include "collkit/sim/model.hpp"

namespace collkit::sim {
namespace {

class Postal final : public CostModel {
 public:
  explicit Postal(const ModelParams& p) : alpha_(on_grid(p.get("alpha"))), beta_(p.get("beta")) {}
  Rules rules() const override { return Rules::port; }
  bool done_on_arrival() const override { return true; }
  // s, extra, delay and the detour are on the picosecond grid (model.hpp's on_grid).
  PortSend port_send(double s, double n, double extra, double delay,
                     const Detour& detour) const override {
    const double wire = on_grid(n * beta_);
    const double arrival = on_grid(s + alpha_ + extra + wire + delay + detour(alpha_ + wire));
    return {arrival, arrival, arrival};
  }

 private:
  double alpha_, beta_;
};

const ModelRegistrar reg{{
    .name = "postal",
    .aliases = {},
    .doc = "alpha + n beta per message, one message in flight per rank",
    .order = 0,
    .rules = Rules::port,
    .params = {{"alpha", "ns", "postal latency per message", 500},
               {"beta", "ns/B", "time per byte on the wire", 0}},
    .make = [](const ModelParams& p) -> std::unique_ptr<CostModel> {
      return std::make_unique<Postal>(p);
    },
}};

}  // namespace
}  // namespace collkit::sim
