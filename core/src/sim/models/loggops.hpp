// LogP, LogGP and LogGOPS as LogGOPSim computes them (Hoefler, Schneider, Lumsdaine, "LogGOPSim -
// Simulating Large-Scale Applications in the LogGOPS Model", 2010), for a message of n bytes:
// sender CPU o + (n-1) O, send gap g + (n-1) G, first byte at the receiver o + L after the send
// starts, receiver CPU o + max((n-1) O, (n-1) G) (G is charged at the receiver), receive gap
// g + (n-1) G; messages above S bytes are rendezvous. (n-1) is 0 for an empty message (the
// model as published; LogGOPSim's unsigned arithmetic makes it -1). One class, three models:
// logp has G = O = 0 and S = inf, loggp O = 0 and S = inf.
//
// The class is here, not in loggops.cpp, so that the engine calls its times directly (no virtual
// call per message; engine.cpp).
#pragma once
#include <algorithm>

#include "collkit/sim/model.hpp"

namespace collkit::sim::detail {

class LogGOPS final : public CostModel {
 public:
  // Times on the picosecond grid (model.hpp's on_grid): L, o, g rounded once, the per-byte
  // terms per message.
  LogGOPS(double L, double o, double g, double G, double O, double S)
      : L_(on_grid(L)), o_(on_grid(o)), g_(on_grid(g)), G_(G), O_(O), S_(S) {}
  Rules rules() const override { return Rules::loggops; }
  SendTimes send(double now, double n) const override {
    return {on_grid(now + o_ + on_grid(b1(n) * O_)), gap_end(now, n), on_grid(now + o_ + L_), o_};
  }
  RecvTimes recv(double now, double n) const override {
    return {on_grid(now + o_ + on_grid(std::max(b1(n) * O_, b1(n) * G_))), gap_end(now, n), o_};
  }
  double rendezvous_above() const override { return S_; }

 private:
  static double b1(double n) { return std::max(n - 1.0, 0.0); }  // (n - 1), 0 for n = 0
  double gap_end(double now, double n) const { return on_grid(now + g_ + on_grid(b1(n) * G_)); }
  double L_, o_, g_, G_, O_, S_;
};

}  // namespace collkit::sim::detail
