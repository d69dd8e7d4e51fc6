// The recursive-doubling prefix of scan:recursive_doubling and exscan:recursive_doubling
// (prefix.cpp): the two differ only in whether a rank's own input is part of its result, so
// the exchange is written once.
//
// Every phase writes ops of one rank into a RankBuilder; no phase keeps state between ranks,
// so one rank's program is generated alone.
#pragma once
#include <cstdint>

#include "collkit/schedule.hpp"

namespace collkit::phases {

// partial = in; for mask = 1, 2, 4, ...: exchange partial with r ^ mask (if it exists); the
// higher of the two puts the lower's partial in front of its partial and of its out, the lower
// appends the higher's partial to its own. partial always covers a contiguous range of ranks,
// so every operand stays in rank order (any op). `inclusive` (scan): out starts as a copy of in;
// else (exscan) the first partial a rank gets is copied into out, and rank 0 never writes out.
// Stage 0 copies in aside (before out is written: in-place safe), the exchanges are stages 1..
void prefix_doubling(RankBuilder& b, int64_t n, bool inclusive);

}  // namespace collkit::phases
