// The engine's model costs: the times of model.hpp's formulas, one place for each model family.
// The engine decides when an op may start (its rules, engine.cpp); these say how long it takes.
// Noise and a trace's detours are added by the engine after the model's time, in that order.
#pragma once
#include <algorithm>

#include "collkit/schedule.hpp"
#include "collkit/sim/model.hpp"

namespace collkit::sim::detail {

// What a program op of `len` elements of `esize` bytes costs, as the engine stores it: a
// message's size in bytes (send, recv), a local op's time on its CPU in ns (reduce, copy; compute
// and sleep are their own length), in every model.
inline double op_amount(const ModelParams& m, OpKind kind, double len, double esize) {
  switch (kind) {
    case OpKind::send:
    case OpKind::recv:
      return len * esize;
    case OpKind::reduce:
      return m.reduce_base + m.gamma * len * esize;
    case OpKind::copy:
      return m.copy_beta * len * esize;
    default:
      return len;
  }
}

// Postal and pipelined postal ([Ruefenacht 2017] Eq. 1 and 3): a send of n bytes that takes its
// port at s, `extra` the topology's added latency, `delay` its noise; `detour(len)` the noise
// trace's delay met over len ns of the port's time from s.
struct PostalSend {
  double port_free;  // when the port takes the next message
  double arrival;    // when the message reaches its receiver
  double pushed;     // pipelined postal: when the send completes (postal: on arrival)
};
template <class Detour>
PostalSend postal_send(const ModelParams& m, double s, double n, double extra, double delay,
                       Detour&& detour) {
  if (m.kind == ModelKind::postal) {  // one message in flight: the port is busy until it arrives
    const double arrival = s + m.alpha + extra + n * m.beta + delay + detour(m.alpha + n * m.beta);
    return {arrival, arrival, arrival};
  }
  const double pushed = s + m.alpha_r + n * m.beta + delay + detour(m.alpha_r + n * m.beta);
  return {pushed, pushed + m.alpha_p + extra, pushed};
}

// LogP / LogGP / LogGOPS (Hoefler, Schneider, Lumsdaine, HPDC 2010), for a message of n bytes
// whose sender (or receiver) starts at `now`. G is charged at the receiver: the first byte
// arrives o + L after the send starts.
struct LogGOPS {
  const ModelParams& m;
  static double b1(double n) { return std::max(n - 1.0, 0.0); }  // (n - 1), 0 for n = 0
  double send_cpu_end(double now, double n) const { return now + m.o + b1(n) * m.O; }
  double gap_end(double now, double n) const { return now + m.g + b1(n) * m.G; }  // either side
  double first_byte(double now) const { return now + m.o + m.L; }
  double recv_cpu_end(double now, double n) const {
    return now + m.o + std::max(b1(n) * m.O, b1(n) * m.G);
  }
  bool rendezvous(double n) const { return n > m.S; }
};

}  // namespace collkit::sim::detail
