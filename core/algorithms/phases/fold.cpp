// The MPICH fold of P ranks onto a power of two, and its unfold (see fold.hpp).
#include "fold.hpp"

#include <bit>

namespace collkit::phases {

Pof2Fold::Pof2Fold(int64_t P_, int64_t keep_)
    : P(P_),
      pof2(int64_t{1} << (std::bit_width(static_cast<uint64_t>(P_)) - 1)),
      rem(P_ - pof2),
      keep(keep_) {}

Pof2Fold Pof2Fold::onto(int64_t P, int64_t V) {
  Pof2Fold f(P);
  f.pof2 = V;
  f.rem = P - V;
  return f;
}

int Pof2Fold::lg() const {
  return static_cast<int>(std::bit_width(static_cast<uint64_t>(pof2))) - 1;
}

int64_t Pof2Fold::real(int64_t v) const {
  if (v >= rem) return v + rem;
  return keep >= 0 && keep / 2 == v && keep < 2 * rem ? keep : 2 * v + 1;
}

int64_t Pof2Fold::vrank(int64_t rank) const {
  if (rank >= 2 * rem) return rank - rem;
  return real(rank / 2) == rank ? rank / 2 : -1;
}

OpId fold_away(RankBuilder& b, const Pof2Fold& f, Region vec, OpId vec_ready) {
  return b.send(f.partner(b.rank()), vec, {vec_ready});
}

OpId fold_in(RankBuilder& b, const Pof2Fold& f, Region vec, OpId vec_ready, Region tmp) {
  const int64_t partner = f.partner(b.rank());
  OpId r = b.recv(partner, tmp);
  // The lower rank's vector goes on the left: (a_2v (+) a_2v+1), the pairs of Rabenseifner 1997's
  // tree.
  return b.reduce(vec, tmp, partner < b.rank() ? Side::src_first : Side::dst_first, {vec_ready, r});
}

OpId unfold(RankBuilder& b, const Pof2Fold& f, Region vec, Deps ready, OpId sent) {
  const int64_t partner = f.partner(b.rank());
  if (partner < 0) return kNoOp;
  if (f.vrank(b.rank()) < 0) return b.recv(partner, vec, {sent});
  return b.send(partner, vec, ready);
}

}  // namespace collkit::phases
