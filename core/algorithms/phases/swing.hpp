// The Swing torus (allreduce:swing, allreduce:swing_lat; swing.cpp): the ranks row-major on a
// torus of `dims`, each dimension folded onto a virtual size, and the step sequence of the
// swing peers on the folded torus.
//
// Fold: dimension by dimension (t = 0, 1, ...), the ranks still active fold dimension t as
// Pof2Fold folds P ranks: of the first 2 rem_t coordinates (rem_t = d_t - v_t), the pair (2u,
// 2u+1) combines into virtual coordinate u, kept by the odd one; coordinate c >= 2 rem_t is
// virtual coordinate c - rem_t. The virtual size v_t is 2^floor(lg d_t) (the fold onto powers of
// two; with dims = P, one ring, it is the MPICH fold), or, `direct`, d_t itself when it is even
// or 1, d_t - 1 when it is odd (one pair folds). A pair differs in one coordinate by one: the
// fold's messages are one hop. The unfold is the fold in reverse (the last dimension first),
// each kept rank sending the result to the partner that folded into it.
//
// Steps: dimension t takes ceil(lg v_t) steps (lg v_t for a power of two). Step s changes one
// coordinate: dimension t(s) taken in turn, skipping the dimensions whose steps are done, at
// that dimension's own step j; virtual rank x moves it by +rho(j) if its coordinate is even,
// -rho(j) if odd, mod v_t, rho(j) = sum_{i <= j} (-2)^i = 1, -1, 3, -5, 11, ... (the paper's pi).
// The sequence t(s), j(s) is the same for every rank, as in the authors' library. On an even
// size the peers pair up (rho is odd, so the parity flips both ways); ceil(lg v) steps reach
// every coordinate from every coordinate (checked when the torus is built).
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "collkit/registry.hpp"
#include "collkit/schedule.hpp"
#include "fold.hpp"

namespace collkit::phases {

struct SwingTorus {
  std::vector<int64_t> dims, stride;    // the ranks' torus, row-major
  std::vector<Pof2Fold> fold;           // per dimension: its coordinates onto its virtual size
  std::vector<int64_t> vdims, vstride;  // the virtual torus: the sizes v_t, row-major
  std::vector<int64_t> dim_of, shift;   // per step: the dimension, rho of its own step
  int64_t V = 1;                        // virtual ranks

  int64_t steps() const { return static_cast<int64_t>(dim_of.size()); }
  int64_t peer(int64_t v, int64_t s) const;  // virtual rank v's peer at step s
  int64_t vrank(int64_t rank) const;         // -1 for a rank folded away
  int64_t real(int64_t v) const;             // the rank that stands for virtual rank v
  // The dimension in which `rank` folds away (it sends its vector to its partner there and
  // takes no part in later dimensions); D (the number of dimensions) if it stays active.
  size_t folded_at(int64_t rank) const;
  int64_t coord(int64_t rank, size_t t) const { return rank / stride[t] % dims[t]; }
  // The rank differing from `rank` in dimension t only, at the partner coordinate of the fold.
  int64_t partner(int64_t rank, size_t t) const;
  bool folds() const { return V != dims_product; }

  int64_t dims_product = 1;
};

// What the cost models read: the virtual ranks V, the swing steps L and the dimensions that
// fold (f), from the `dims` parameter's text and P. The fold costs f (alpha + n beta + n gamma),
// the unfold f (alpha + n beta), along the critical path.
struct SwingShape {
  int64_t V = 1;
  int64_t steps = 0;
  int64_t folded = 0;
};
SwingShape swing_shape(std::string_view dims, int64_t P, std::string_view who, bool direct = false);

// The call's torus (its `dims` parameter, refused unless it holds P ranks) and steps; `direct`:
// the virtual sizes are the even ones, not powers of two (see above).
SwingTorus swing_torus(const GenArgs& a, bool direct = false);

// The fold on one rank: the vector `vec` (written by `ready`) folded dimension by dimension.
// Returns the last op that wrote `vec` (a rank folded away: its fold send).
OpId swing_fold(RankBuilder& b, const SwingTorus& g, Region vec, OpId ready);
// The unfold on one rank: the result in `vec` (written by `ready`) handed back dimension by
// dimension in reverse; a rank folded away receives it into `vec` (after its fold send `sent`).
void swing_unfold(RankBuilder& b, const SwingTorus& g, Region vec, OpId ready);

}  // namespace collkit::phases
