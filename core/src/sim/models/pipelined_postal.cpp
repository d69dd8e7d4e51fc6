// The pipelined postal model ([Ruefenacht 2017] Eq. 3): the send port is busy alpha_r + n beta
// per message (the part of a send that cannot overlap), the send completes then, and the message
// arrives alpha_p later while the port already pushes the next one: b sends issued together
// arrive at alpha_p + k (alpha_r + n beta), k = 1..b.
#include "collkit/sim/model.hpp"

namespace collkit::sim {
namespace {

class PipelinedPostal final : public CostModel {
 public:
  explicit PipelinedPostal(const ModelParams& p)
      : alpha_p_(on_grid(p.get("alpha_p"))),
        alpha_r_(on_grid(p.get("alpha_r"))),
        beta_(p.get("beta")) {}
  Rules rules() const override { return Rules::port; }
  bool done_on_arrival() const override { return false; }
  // s, extra, delay and the detour are on the picosecond grid (model.hpp's on_grid).
  PortSend port_send(double s, double n, double extra, double delay,
                     const Detour& detour) const override {
    const double push = on_grid(alpha_r_ + on_grid(n * beta_));
    const double pushed = on_grid(s + push + delay + detour(push));
    return {pushed, on_grid(pushed + alpha_p_ + extra), pushed};
  }

 private:
  double alpha_p_, alpha_r_, beta_;
};

const ModelRegistrar reg{{
    .name = "pipelined_postal",
    .aliases = {"pipelined-postal"},
    .doc = "alpha_p + b (alpha_r + n beta) for b sends issued together",
    .order = 1,
    .rules = Rules::port,
    .params = {{"beta", "ns/B", "time per byte on the wire", 0},
               {"alpha_p", "ns", "overlappable latency of a send (pipelined postal)", 500},
               {"alpha_r", "ns", "non-overlappable time of each send (pipelined postal)", 100}},
    .make = [](const ModelParams& p) -> std::unique_ptr<CostModel> {
      return std::make_unique<PipelinedPostal>(p);
    },
}};

}  // namespace
}  // namespace collkit::sim
