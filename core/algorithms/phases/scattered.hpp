// MPICH's scattered all-to-all exchange (scattered.cpp), written once for the regular and the
// irregular all-to-all: alltoall:scattered, alltoallv:scattered and alltoallv:linear (its one
// round) differ only in the blocks' layout and in whether an empty block is a message.
//
// Every phase writes ops of one rank into a RankBuilder; no phase keeps state between ranks,
// so one rank's program is generated alone.
#pragma once
#include <cstdint>

#include "collkit/collective.hpp"
#include "collkit/schedule.hpp"

namespace collkit::phases {

// Distances i = 0 .. P-1 in rounds of `bound` (0 or >= P: one round of all P), round j at
// stage j: each round posts its receives, from rank + i, then its sends, to rank - i, straight
// between the user's buffers at the blocks' places (BlockLayout of `h`), and waits for all of
// them before the next round (MPICH's waitall per round: a zero-time compute joins them).
// Distance 0, the own block, is a local copy in the first round. `skip_empty`: an empty block
// is no message (the irregular collectives; the regular one posts zero-length messages).
void scattered_exchange(RankBuilder& b, const ScheduleHeader& h, int64_t bound, bool skip_empty);

}  // namespace collkit::phases
