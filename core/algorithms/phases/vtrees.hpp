// Gatherv and scatterv down a tree (trees.hpp) relative to the root: a subtree's blocks, packed
// in relative rank order, travel as one message; the root reads and writes its blocks at their
// displacements (straight from / into the user's buffer where a subtree's blocks lie there in
// order, through scratch where they do not).
#pragma once
#include "collkit/registry.hpp"
#include "trees.hpp"

namespace collkit::phases {

// Every rank's in[0:counts[r]] into the root's out at its displacements.
void gatherv_to_root(const GenArgs& a, RankBuilder& b, const Tree& t);
// Block q of the root's in (at its displacement) into rank q's out[0:counts[q]].
void scatterv_from_root(const GenArgs& a, RankBuilder& b, const Tree& t);

}  // namespace collkit::phases
