// The local ops' costs, the same in every model (the models' message times are in models/, behind
// model.hpp's interface). The engine decides when an op may start (engine.cpp); these say how long
// a local op takes.
#pragma once
#include "collkit/schedule.hpp"
#include "collkit/sim/model.hpp"

namespace collkit::sim::detail {

// What a program op of `len` elements of `esize` bytes costs, as the engine stores it: a
// message's size in bytes (send, recv), a local op's time on its CPU in ns (reduce, copy; compute
// and sleep are their own length), in every model; times on the picosecond grid (on_grid).
inline double op_amount(const LocalCosts& m, OpKind kind, double len, double esize) {
  switch (kind) {
    case OpKind::send:
    case OpKind::recv:
      return len * esize;
    case OpKind::reduce:
      return on_grid(on_grid(m.reduce_base) + on_grid(m.gamma * len * esize));
    case OpKind::copy:
      return on_grid(m.copy_beta * len * esize);
    default:
      return on_grid(len);
  }
}

}  // namespace collkit::sim::detail
