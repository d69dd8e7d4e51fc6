// allgatherv:bruck: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allgatherv:bruck` prints them).
// Phases:       a scratch buffer holds the blocks in rotated order (own block first, then
//               r + 1, r + 2, ...), packed. 1. copy the own block to its front; 2. ceil(lg P)
//               steps: at step k rank r sends the first min(2^k, P - 2^k) blocks it holds to
//               r - 2^k and receives as many from r + 2^k right after them; 3. copy every other
//               rank's block from scratch to its place in out (the own block straight from in).
// Restrictions: none (any P, any count vector, any displacements)
#include <bit>
#include <vector>

#include "../phases/irregular.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_bruck(const GenArgs& a, RankBuilder& b) {
  const ScheduleHeader& h = a.header;
  const int64_t P = h.P, r = b.rank();
  const BlockLayout out(h, Io::out, r);
  const auto block = [&](int64_t i) { return (r + i) % P; };  // rotated position i
  const std::vector<int64_t> at =
      phases::packed_offsets(P, [&](int64_t i) { return out.len(block(i)); });
  b.set_stage(0);
  const BufId tmp = b.scratch(at.back());
  const OpId own = b.copy({tmp, 0, out.len(r)}, {kIn, 0, out.len(r)});
  std::vector<OpId> got{own};
  uint16_t stage = 1;
  for (int64_t k = 1; k < P; k <<= 1) {
    b.set_stage(stage++);
    const int64_t m = std::min(k, P - k);  // blocks this step
    const int64_t to = (r - k + P) % P, from = (r + k) % P;
    const std::vector<OpId> before = got;
    if (at[static_cast<size_t>(m)] > 0) b.send(to, {tmp, 0, at[static_cast<size_t>(m)]}, before);
    const int64_t lo = at[static_cast<size_t>(k)], hi = at[static_cast<size_t>(k + m)];
    if (hi > lo) got.push_back(b.recv(from, {tmp, lo, hi - lo}));
  }
  b.set_stage(stage);
  // Out in the fewest copies: rotated positions that lie next to each other in out too.
  const auto pieces = phases::pieces(
      1, P, [&](int64_t i) { return at[static_cast<size_t>(i)]; },
      [&](int64_t i) { return out.offset(block(i)); },
      [&](int64_t i) { return out.len(block(i)); });
  for (const phases::Piece& x : pieces) b.copy({kOut, x.b_off, x.len}, {tmp, x.a_off, x.len}, got);
  b.copy({kOut, out.offset(r), out.len(r)}, {kIn, 0, out.len(r)}, {own});
}

Cost cost_bruck(const CostArgs& a) {
  const double lg = static_cast<double>(std::bit_width(static_cast<uint64_t>(a.P - 1)));
  return {lg, static_cast<double>(a.P - 1) * a.bytes, 0};
}

const Registrar reg{{
    .collective = Collective::allgatherv,
    .name = "bruck",
    .summary = "ceil(lg P) steps doubling the rotated blocks held, then one local rotation",
    .phases = "hold the blocks rotated (own first) in scratch; at step k send the first "
              "min(2^k, P - 2^k) to r - 2^k and receive as many from r + 2^k; copy them to out",
    // Cost: (n: bytes of the largest block)
    .cost = "ceil(lg P) alpha + (P - 1) n beta, and a local copy of the whole vector",
    .reference = "MPICH MPIR_Allgatherv_intra_brucks; Bruck, Ho, Kipnis, Upfal, Weathersby, "
                 "IEEE TPDS 8(11) 1997",
    .mpi_equivalents = {"mpich:brucks", "ompi:bruck"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_bruck,
    .model = cost_bruck,
}};

}  // namespace
}  // namespace collkit
