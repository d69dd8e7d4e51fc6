// The Swing torus: its fold, dimension by dimension, and its step sequence (see swing.hpp).
#include "swing.hpp"

#include <algorithm>
#include <bit>
#include <string>
#include <utility>
#include <vector>

#include "collkit/error.hpp"
#include "torus.hpp"

namespace collkit::phases {

namespace {

// rho(j) = sum_{i <= j} (-2)^i: 1, -1, 3, -5, 11, ...
int64_t rho(int64_t j) {
  int64_t r = 0, term = 1;
  for (int64_t i = 0; i <= j; ++i, term *= -2) r += term;
  return r;
}

// Coordinate c's swing peer on a ring of d at a step of shift r: +r from an even c, -r from an
// odd one.
int64_t swing_move(int64_t c, int64_t r, int64_t d) {
  return ((c + (c % 2 == 0 ? r : -r)) % d + d) % d;
}

// Dimension d's fold onto its virtual size, and that size's steps.
Pof2Fold fold_of(int64_t d, bool direct) {
  return direct ? Pof2Fold::onto(d, d > 1 && d % 2 == 1 ? d - 1 : d) : Pof2Fold(d);
}
int64_t steps_of(int64_t v) {
  return std::bit_width(static_cast<uint64_t>(v - 1));  // ceil(lg v); 0 for v = 1
}

// Whether the steps of a ring of v (even, or a power of two) take every coordinate to every
// other: from c = 0 and c = 1 suffices, a shift by 2 keeping the peers.
bool reaches_all(int64_t v) {
  for (int64_t c = 0; c < std::min<int64_t>(v, 2); ++c) {
    std::vector<char> have(static_cast<size_t>(v), 0);
    have[static_cast<size_t>(c)] = 1;
    int64_t n = 1;
    for (int64_t j = 0; j < steps_of(v); ++j) {
      std::vector<char> next = have;
      const int64_t r = rho(j);
      for (int64_t y = 0; y < v; ++y) {
        if (!have[static_cast<size_t>(y)]) continue;
        const auto q = static_cast<size_t>(swing_move(y, r, v));
        n += next[q] ? 0 : 1;
        next[q] = 1;
      }
      have = std::move(next);
    }
    if (n != v) return false;
  }
  return true;
}

}  // namespace

int64_t SwingTorus::peer(int64_t v, int64_t s) const {
  const auto t = static_cast<size_t>(dim_of[static_cast<size_t>(s)]);
  const int64_t d = vdims[t], c = v / vstride[t] % d;
  return v + (swing_move(c, shift[static_cast<size_t>(s)], d) - c) * vstride[t];
}

int64_t SwingTorus::vrank(int64_t rank) const {
  int64_t v = 0;
  for (size_t t = 0; t < dims.size(); ++t) {
    const int64_t c = fold[t].vrank(coord(rank, t));
    if (c < 0) return -1;
    v += c * vstride[t];
  }
  return v;
}

int64_t SwingTorus::real(int64_t v) const {
  int64_t x = 0;
  for (size_t t = 0; t < dims.size(); ++t) x += fold[t].real(v / vstride[t] % vdims[t]) * stride[t];
  return x;
}

size_t SwingTorus::folded_at(int64_t rank) const {
  for (size_t t = 0; t < dims.size(); ++t)
    if (fold[t].vrank(coord(rank, t)) < 0) return t;
  return dims.size();
}

int64_t SwingTorus::partner(int64_t rank, size_t t) const {
  const int64_t c = coord(rank, t), p = fold[t].partner(c);
  return p < 0 ? -1 : rank + (p - c) * stride[t];
}

SwingShape swing_shape(std::string_view dims, int64_t P, std::string_view who, bool direct) {
  std::vector<int64_t> d = parse_torus_dims(dims, who, false);
  if (d.empty()) d = {P};
  SwingShape out;
  for (const int64_t k : d) {
    const Pof2Fold f = fold_of(k, direct);
    out.V *= f.pof2;
    out.steps += steps_of(f.pof2);
    out.folded += f.rem > 0 ? 1 : 0;
  }
  return out;
}

SwingTorus swing_torus(const GenArgs& a, bool direct) {
  SwingTorus g;
  Torus t = torus_of(a, false);
  g.dims = std::move(t.dims);
  g.stride = std::move(t.stride);
  const size_t D = g.dims.size();
  g.vdims.resize(D);
  g.vstride.assign(D, 1);
  for (size_t i = 0; i < D; ++i) {
    g.fold.push_back(fold_of(g.dims[i], direct));
    g.vdims[i] = g.fold[i].pof2;
    g.dims_product *= g.dims[i];
  }
  for (size_t i = D - 1; i-- > 0;) g.vstride[i] = g.vstride[i + 1] * g.vdims[i + 1];
  g.V = g.vstride[0] * g.vdims[0];
  // As the authors' compute_peers: dimension (s + o) mod D, skipping those whose lg d steps
  // are done, each at its own next step. (The library's own step (s + finished) / D is that
  // count for tori of equal sizes; for unequal ones it repeats a step: 2x16 gets rho(2) twice.)
  std::vector<int64_t> left(D), taken(D, 0);
  int64_t L = 0;
  for (size_t i = 0; i < D; ++i) {
    L += left[i] = steps_of(g.vdims[i]);
    if (direct && !reaches_all(g.vdims[i]))
      fail(ErrorKind::unsupported, a.header.algorithm + ": the swing steps of a ring of " +
                                       std::to_string(g.vdims[i]) + " miss some ranks");
  }
  for (int64_t s = 0; s < L; ++s) {
    size_t i = static_cast<size_t>(s) % D;
    while (taken[i] == left[i]) i = (i + 1) % D;
    g.dim_of.push_back(static_cast<int64_t>(i));
    g.shift.push_back(rho(taken[i]++));
  }
  return g;
}

OpId swing_fold(RankBuilder& b, const SwingTorus& g, Region vec, OpId ready) {
  if (!g.folds()) return ready;
  const int64_t x = b.rank();
  const size_t last = g.folded_at(x);
  Region tmp{kOut, 0, 0};
  bool have_tmp = false;
  OpId tmp_free = kNoOp;
  for (size_t t = 0; t < g.dims.size() && t <= last; ++t) {
    const int64_t q = g.partner(x, t);
    if (q < 0) continue;
    if (t == last) return b.send(q, vec, {ready});
    if (!have_tmp) {
      tmp = Region{b.scratch(vec.len), 0, vec.len};
      have_tmp = true;
    }
    const OpId r = b.recv(q, tmp, {tmp_free});
    // The lower rank's vector on the left, as Pof2Fold's pairs.
    ready = tmp_free = b.reduce(vec, tmp, q < x ? Side::src_first : Side::dst_first, {ready, r});
  }
  return ready;
}

void swing_unfold(RankBuilder& b, const SwingTorus& g, Region vec, OpId ready) {
  if (!g.folds()) return;
  const int64_t x = b.rank();
  const size_t last = g.folded_at(x);
  for (size_t t = std::min(last + 1, g.dims.size()); t-- > 0;) {
    const int64_t q = g.partner(x, t);
    if (q < 0) continue;
    if (t == last)
      ready = b.recv(q, vec, {ready});
    else
      ready = b.send(q, vec, {ready});
  }
}

}  // namespace collkit::phases
