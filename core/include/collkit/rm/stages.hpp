// The schedule language of recursive multiplying ([Ruefenacht 2017] §4.2): a list of stages that
// says how P ranks reduce. One parser, used by the generator (allreduce:rm) and, through the
// bindings, by the Python enumeration and models.
//
//   aB       factor stage: every active rank exchanges with the B-1 other ranks of its group
//            (one face of the hypercuboid) and combines the B values in group order.
//   cTmB     collapse: ranks below the threshold T (T divisible by B) form T/B groups of B
//            consecutive ranks; each sends to its group's last rank, which stands for the group.
//   eTmB     expand: the inverse of cTmB; the group's last rank sends the result back.
//   mRgGaB   merge: a factor stage aB on the N-R internal ranks (ranks R..N-1), G groups of B;
//            each of the R remainder ranks (0..R-1) sends its value to every rank of group r mod G.
//   nRgGaB   inverse merge: the last factor stage aB, G groups (G = (N-R)/B); besides the
//            exchange, every rank of group r mod G sends its pre-exchange value to remainder r,
//            which combines the B values in group order.
//
// A schedule is one of three shapes (the seed's factored, split and merged schedules):
//   factored  aB1,...,aBs                    with B1·...·Bs = P
//   split     cTmB, aB1,...,aBs, eTmB         with B1·...·Bs = P - T + T/B  (s may be 0)
//   merged    mRgGaB1, aB2,..., nRgG'aBs      with B1·...·Bs = P - R, s >= 2, G = (P-R)/B1,
//                                            G' = (P-R)/Bs
// The empty list means the MPICH recursive doubling schedule (c2rm2, a2,...,a2, e2rm2).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace collkit::rm {

enum class StageKind : uint8_t { factor, collapse, expand, merge, invmerge };

struct Stage {
  StageKind kind = StageKind::factor;
  int64_t base = 0;       // B: group size of this stage
  int64_t threshold = 0;  // T: collapse / expand
  int64_t remainder = 0;  // R: merge / inverse merge
  int64_t groups = 0;     // G: merge / inverse merge
  bool operator==(const Stage&) const = default;
};

enum class Shape : uint8_t { factored, split, merged };

// A stage list checked against P, with what every rank's generator needs.
struct Plan {
  int64_t P = 1;
  Shape shape = Shape::factored;
  std::vector<Stage> stages;
  int64_t inner = 1;  // ranks of the hypercuboid: P, P - T + T/B (split) or P - R (merged)
  // Per stage: the product of the factor bases before it (the seed's stage_mask); 0 for c / e.
  std::vector<int64_t> mask;
  // The collapse of a split schedule, the remainder of a merged one (0 otherwise).
  int64_t threshold = 0, collapse_base = 0, remainder = 0;

  // Active virtual rank of real rank x on the hypercuboid; -1 for collapsed-away and remainder
  // ranks. A split schedule's collapsed group is represented by its last rank.
  int64_t virtual_rank(int64_t x) const {
    if (shape == Shape::split) {
      const int64_t T = threshold, B = collapse_base;
      if (x < T) return x % B == B - 1 ? x / B : -1;
      return x - T / B * (B - 1);
    }
    if (shape == Shape::merged) return x < remainder ? -1 : x - remainder;
    return x;
  }
  int64_t real_rank(int64_t w) const {
    if (shape == Shape::split) {
      const int64_t T = threshold, B = collapse_base;
      return w < T / B ? w * B + B - 1 : w + T / B * (B - 1);
    }
    if (shape == Shape::merged) return w + remainder;
    return w;
  }
  // The first of the real ranks virtual rank w stands for (its collapsed group's first), for
  // w in [0, inner]; first_rank(inner) = P. Virtual ranks keep the real ranks' order.
  int64_t first_rank(int64_t w) const {
    if (w >= inner) return P;
    if (shape == Shape::split && w < threshold / collapse_base) return w * collapse_base;
    return real_rank(w);
  }
};

// One stage, "a8" / "c6m2" / "m1g2a3". Throws Error(name) for anything else.
Stage parse_stage(std::string_view token);
std::string to_string(const Stage& s);
std::string to_string(const std::vector<Stage>& s);  // "a8,a4"

// Parse and check a stage list against P. Throws Error(name) for a malformed stage and
// Error(invalid_argument) with the list and a caret under the culprit for an impossible schedule.
Plan make_plan(const std::vector<std::string>& tokens, int64_t P);

// MPICH's recursive doubling as a stage list: a2^k for P = 2^k, else c(2r)m2, a2^k, e(2r)m2.
std::vector<Stage> recursive_doubling_stages(int64_t P);

}  // namespace collkit::rm
