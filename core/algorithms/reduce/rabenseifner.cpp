// reduce:rabenseifner: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms reduce:rabenseifner` prints them).
// Algorithm:    Rabenseifner's reduce (reduce:rabenseifner): reduce-scatter by recursive halving,
//               then a binomial gather of the blocks to the root.
// Phases:       1. fold to pof2 = 2^floor(lg P) ranks (MPICH pre-step; in the root's pair the
//                  root stays, in the others the odd rank);
//               2. reduce-scatter by recursive halving over pof2 blocks of floor/ceil size
//                  (phases::reduce_scatter_halving, the phase of reduce_scatter_block:halving and
//                  :noncommutative);
//               3. gather to the root along a binomial tree, the halving's stages in reverse:
//                  messages of n/pof2, 2n/pof2, ..., n/2 elements.
// Restrictions: none: every P, root and count, non-commutative ops. Each element gets the tree
//               of allreduce:rd and reduce:folded_binomial, its small-count partner.
#include "../phases/costs.hpp"
#include "../phases/elimination.hpp"
#include "../phases/halving.hpp"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

// nonpof2=elim / elim21: no fold; 3-2 or 2-1 elimination inside the halving levels, a gather
// to the collector (rank 0 for 3-2) and, if the root is another rank, one more message to it.
void generate_eliminating(const GenArgs& a, RankBuilder& b, phases::Elimination mode) {
  const int64_t n = a.header.count, P = a.header.P, rank = b.rank(), root = a.header.root;
  const int64_t collector = phases::elim_collector(P, mode);
  const Region in{kIn, 0, n}, out{kOut, 0, n};
  b.set_stage(0);
  const phases::ElimPlan plan(P, rank, mode);
  const BufId vec = rank == root && rank == collector ? kOut : b.scratch(n);
  const OpId ready = b.copy(Region{vec, 0, n}, in);
  if (P == 1) return;
  const phases::Pof2Fold fold(P);  // for pof2 (the number of blocks) and lg only
  const phases::Blocks blocks{n, fold.pof2};
  const BufId tmp = b.scratch(n);
  const BufId tmp2 = plan.in_triple() ? b.scratch(n) : tmp;
  const phases::ElimScatter rs =
      phases::reduce_scatter_elim(b, plan, blocks, vec, ready, tmp, tmp2, 1);
  const auto gather_stage = static_cast<uint16_t>(fold.lg() + 1);
  const std::vector<OpId> written = phases::gather_elim(b, plan, P, blocks, vec, rs, gather_stage);
  if (collector == root) return;
  b.set_stage(static_cast<uint16_t>(2 * fold.lg() + 1));
  if (rank == collector) b.send(root, Region{vec, 0, n}, written);
  if (rank == root) b.recv(collector, out);
}

void generate_rabenseifner(const GenArgs& a, RankBuilder& b) {
  const std::string& nonpof2 = a.params->word("nonpof2");
  if (nonpof2 == "elim") return generate_eliminating(a, b, phases::Elimination::three_two);
  if (nonpof2 == "elim21") return generate_eliminating(a, b, phases::Elimination::two_one);
  const int64_t n = a.header.count, rank = b.rank(), root = a.header.root;
  const phases::Pof2Fold fold(a.header.P, root);
  const phases::Blocks blk{n, fold.pof2};
  const Region in{kIn, 0, n};

  // Phase 1: fold. A rank folded away sends its input and is done.
  b.set_stage(0);
  const int64_t vrank = fold.vrank(rank);
  if (vrank < 0) {
    phases::fold_away(b, fold, in, kNoOp);
    return;
  }
  // The vector is reduced in `out` at the root, in scratch elsewhere: MPI's recvbuf is
  // significant only at the root.
  const BufId vec = rank == root ? kOut : b.scratch(n);
  const OpId vec_ready = b.copy(Region{vec, 0, n}, in);
  if (a.header.P == 1) return;

  // Phases 2 and 3, after folding the partner in where there is one.
  const phases::HalvingScratch hs = phases::halving_scratch(b, fold, vrank, blk, vec, vec_ready);
  const phases::ScatterResult rs = phases::reduce_scatter_halving(
      b, fold, vrank, blk, vec, hs.ready, hs.tmp, hs.base, hs.free, 1);
  phases::gather_binomial(b, fold, vrank, fold.vrank(root), blk, vec, rs,
                          static_cast<uint16_t>(fold.lg() + 1));
}

// Root 0 (the elimination's collector for 3-2; elim21 may add one message to the root).
Cost cost_rabenseifner(const CostArgs& a) {
  const std::string& mode = a.params->word("nonpof2");
  return phases::cost::reduce_scatter(a.P, a.bytes, mode) + phases::cost::doubling(a.P, a.bytes);
}

const Registrar reg{{
    .collective = Collective::reduce,
    .name = "rabenseifner",
    .summary = "reduce-scatter by recursive halving + binomial gather to the root; the tree of "
               "reduce:folded_binomial",
    .phases = "fold to pof2 ranks (the root stays); recursive-halving reduce-scatter over pof2 "
              "blocks; binomial gather of the blocks to the root",
    .cost = "2 lg P alpha + 2 (P-1)/P n beta + (P-1)/P n gamma (P = 2^k); otherwise + alpha + n "
            "beta + n gamma for the fold",
    .reference = "Rabenseifner, \"New optimized MPI reduce algorithm\", 1997; Thakur, "
                 "Rabenseifner, Gropp, IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:reduce_scatter_gather", "ompi:rabenseifner", "impi:rabenseifner"},
    .params = {phases::nonpof2_param(
        "P != 2^k: fold (MPICH pre-step, the tree of folded_binomial), elim (3-2 "
        "elimination) or elim21 (2-1), then a gather to rank 0 (elim21: the "
        "collector) and one more message to a root elsewhere")},
    .restrictions = {},
    .prepare = phases::check_nonpof2,
    .generate = generate_rabenseifner,
    .model = cost_rabenseifner,
}};

}  // namespace
}  // namespace collkit
