// reduce_scatter_block:recexch: its summary, phases in brief, cost and reference are said once,
// in its Registrar at the end of this file (`collkit algorithms reduce_scatter_block:recexch`
// prints them).
// Phases:       MPICH's MPIR_TSP_Ireduce_scatter_block_sched_intra_recexch (phases/recexch.hpp),
//               n elements per block, P blocks:
//               1. a rank past pofk = k^m sends all P blocks to the last rank of its run of k,
//                  which receives and reduces them in one after another (a scratch `res` holds
//                  its running result, a copy of its input);
//               2. distance halving: for phase i = m-1 .. 0 and each of its k - 1 peers in
//                  turn, send the peer's group of k^i step-2 ranks' blocks (the ranks folded
//                  into them included), receive the own group's, reduce them in;
//               3. out = res block r; each rank that folded others in sends them their block.
// Restrictions: a commutative op (MPICH asserts it).
#include "../phases/recexch.hpp"

#include <algorithm>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate(const GenArgs& a, RankBuilder& b) {
  const int64_t n = a.header.count, P = a.header.P, r = b.rank();
  const phases::Recexch g(P, a.params->integer("k"), r);
  const auto last_stage = static_cast<uint16_t>(g.nphases + 1);
  b.set_stage(0);
  if (!g.in_step2()) {
    const OpId s = b.send(g.sendto, {kIn, 0, P * n});
    b.set_stage(last_stage);
    b.recv(g.sendto, {kOut, 0, n}, {s});
    return;
  }
  const BufId res = b.scratch(P * n), tmp = P > 1 ? b.scratch(P * n) : res;
  OpId ready = b.copy({res, 0, P * n}, {kIn, 0, P * n});
  for (const int64_t q : g.recvfrom) {
    const OpId v = b.recv(q, {tmp, 0, P * n}, {ready});
    ready = b.reduce({res, 0, P * n}, {tmp, 0, P * n}, Side::src_first, {v, ready});
  }
  const auto blocks = [&](BufId buf, int64_t whose, int64_t phase) {
    const auto [first, count] = g.range(whose, phase);
    return Region{buf, first * n, count * n};
  };
  for (int64_t phase = g.nphases; phase-- > 0;) {
    b.set_stage(static_cast<uint16_t>(g.nphases - phase));
    const Region mine = blocks(res, r, phase);
    for (const int64_t dst : g.nbrs(phase)) {
      const OpId s = b.send(dst, blocks(res, dst, phase), {ready});
      const OpId v = b.recv(dst, {tmp, 0, mine.len}, {ready});
      ready = b.reduce(mine, {tmp, 0, mine.len}, Side::src_first, {s, v});
    }
  }
  b.set_stage(last_stage);
  b.copy({kOut, 0, n}, {res, r * n, n}, {ready});
  for (const int64_t q : g.recvfrom) b.send(q, {res, q * n, n}, {ready});
}

// One port, n bytes per block: phase i sends and reduces k - 1 groups of k^i blocks; the fold
// receives up to k - 1 times all P blocks and sends back one each.
Cost cost(const CostArgs& a) {
  if (a.P <= 1) return {};
  const phases::Recexch g(a.P, a.params->integer("k"), 0);
  const int64_t low = g.origrank(0);  // step-2 rank 0's groups hold the most folded ranks
  const auto w = static_cast<double>(g.k - 1), f = static_cast<double>(std::min(g.k - 1, g.rem));
  const auto P = static_cast<double>(a.P);
  Cost c{2 * f, f * (P + 1) * a.bytes, f * P * a.bytes};
  for (int64_t i = 0; i < g.nphases; ++i) {
    const auto blocks = static_cast<double>(g.range(low, i).second);
    c = c + Cost{w, w * blocks * a.bytes, w * blocks * a.bytes};
  }
  return c;
}

const Registrar reg{{
    .collective = Collective::reduce_scatter_block,
    .name = "recexch",
    .summary = "MPICH's recursive exchange reduce-scatter: distance halving over the recexch "
               "groups, k - 1 peers a phase, commutative ops",
    .phases = "fold the ranks past pofk = k^floor(log_k P) into the last of each run of k; "
              "phases from the highest base-k digit down: to each of the k - 1 peers its "
              "group's blocks, reduce the own group's from each; out = the own block; send the "
              "folded ranks theirs",
    .cost = "P = k^m: m (k - 1) alpha + (P - 1) n (beta + gamma) (n: bytes per block); "
            "otherwise + f (2 alpha + (P + 1) n beta + P n gamma), f = min(k - 1, P - k^m), and "
            "the lowest group's folded blocks at every phase (an upper bound)",
    .reference = "MPICH MPIR_TSP_Ireduce_scatter_block_sched_intra_recexch (src/mpi/coll/"
                 "ireduce_scatter_block/ireduce_scatter_block_tsp_recexch.c: MPICH has it "
                 "non-blocking only); Sack and Gropp, PPoPP 2012 (distance halving)",
    .mpi_equivalents = {},
    .params = {phases::recexch_k_param()},
    .restrictions = {.commutative_op = true},
    .prepare = {},
    .generate = generate,
    .model = cost,
}};

}  // namespace
}  // namespace collkit
