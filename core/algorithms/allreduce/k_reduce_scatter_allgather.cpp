// allreduce:k_reduce_scatter_allgather: its summary, phases in brief, cost and reference are
// said once, in its Registrar at the end of this file (`collkit algorithms
// allreduce:k_reduce_scatter_allgather` prints them).
// Phases:       MPICH's MPIR_Allreduce_intra_k_reduce_scatter_allgather (phases/recexch.hpp):
//               1. copy in to out; the ranks past pofk = k^m fold into the last rank of their
//                  run of k, which receives and reduces their vectors one after another;
//               2. reduce-scatter over pofk blocks (n / pofk elements each, the last one the
//                  rest), distance doubling: in phase i, with each of the k - 1 peers in turn,
//                  send the blocks of the peer's digit-reversed group of k^(m-1-i) step-2 ranks,
//                  receive the own group's, reduce them in;
//               3. allgather by distance halving (allgather:recexch_halving's phases without its
//                  first swap: the reduce-scatter leaves each rank the digit-reversed block);
//               4. the result to the folded ranks.
// Restrictions: a commutative op (MPICH asserts it: each exchange reduces the peer's part on the
//               left, whatever its rank).
#include <algorithm>

#include "../phases/recexch.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate(const GenArgs& a, RankBuilder& b) {
  const int64_t n = a.header.count, P = a.header.P, r = b.rank();
  const Region out{kOut, 0, n};
  b.set_stage(0);
  OpId ready = b.copy(out, {kIn, 0, n});
  if (P == 1) return;
  const phases::Recexch g(P, a.params->integer("k"), r);
  const auto m = static_cast<uint16_t>(g.nphases),
             fold_out_stage = static_cast<uint16_t>(2 * m + 1);
  if (!g.in_step2()) {
    const OpId s = b.send(g.sendto, out, {ready});
    b.set_stage(fold_out_stage);
    b.recv(g.sendto, out, {s});
    return;
  }
  const BufId tmp = b.scratch(n);
  for (const int64_t q : g.recvfrom) {
    const OpId v = b.recv(q, {tmp, 0, n}, {ready});
    ready = b.reduce(out, {tmp, 0, n}, Side::src_first, {v});
  }
  // Step-2 rank s owns block s: n / pofk elements, the last block the rest.
  const int64_t base = n / g.pofk, extra = n - base * g.pofk;
  const auto blocks = [&](int64_t whose, int64_t level) {
    const auto [first, count] = g.step2_range(whose, level);
    return Region{kOut, first * base, count * base + (first + count == g.pofk ? extra : 0)};
  };
  const int64_t self = g.reverse_digits(r);
  for (int64_t phase = 0; phase < g.nphases; ++phase) {
    b.set_stage(static_cast<uint16_t>(phase + 1));
    const int64_t level = g.nphases - 1 - phase;
    const Region mine = blocks(self, level);
    for (const int64_t nbr : g.nbrs(phase)) {
      const OpId s = b.send(nbr, blocks(g.reverse_digits(nbr), level), {ready});
      const OpId v = b.recv(nbr, {tmp, mine.off, mine.len}, {ready});
      ready = b.reduce(mine, {tmp, mine.off, mine.len}, Side::src_first, {s, v});
    }
  }
  ready = phases::recexch_gather(b, g, true, a.params->integer("single_phase_recv") != 0, blocks,
                                 ready, static_cast<uint16_t>(m + 1));
  b.set_stage(fold_out_stage);
  for (const int64_t q : g.recvfrom) b.send(q, out, {ready});
}

// One port: each half sends (p - 1)/p n in m (k - 1) messages (p = k^m); the fold receives and
// reduces up to k - 1 vectors and sends the result back to them.
Cost cost(const CostArgs& a) {
  if (a.P <= 1) return {};
  const phases::Recexch g(a.P, a.params->integer("k"), 0);
  const auto p = static_cast<double>(g.pofk), w = static_cast<double>(g.nphases * (g.k - 1));
  const auto f = static_cast<double>(std::min(g.k - 1, g.rem));
  const double share = (p - 1) / p * a.bytes;
  return Cost{2 * w, 2 * share, share} + Cost{2 * f, 2 * f * a.bytes, f * a.bytes};
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "k_reduce_scatter_allgather",
    .summary = "MPICH's radix-k reduce-scatter (distance doubling) + allgather (distance "
               "halving) over the recursive exchange groups; commutative ops",
    .phases = "fold the ranks past pofk = k^floor(log_k P) into the last of each run of k; "
              "reduce-scatter over pofk blocks, exchanging with the k - 1 peers of each phase "
              "in turn; allgather by distance halving; send the result to the folded",
    .cost = "2 m (k - 1) alpha + 2 (p - 1)/p n beta + (p - 1)/p n gamma, p = k^m, m = "
            "floor(log_k P); + f (2 alpha + 2 n beta + n gamma), f = min(k - 1, P - p), where "
            "P != p",
    .reference = "MPICH MPIR_Allreduce_intra_k_reduce_scatter_allgather (src/mpi/coll/allreduce/"
                 "allreduce_intra_k_reduce_scatter_allgather.c); Rabenseifner's reduce-scatter + "
                 "allgather (1997) for radix k",
    .mpi_equivalents = {"mpich:k_reduce_scatter_allgather"},
    .params = {phases::recexch_k_param(), phases::single_phase_recv_param()},
    .restrictions = {.commutative_op = true},
    .prepare = {},
    .generate = generate,
    .model = cost,
}};

}  // namespace
}  // namespace collkit
