// The communication phase shared by alltoall:bruck and alltoall:bruck_modified: the w rounds of
// at most r-1 steps of the radix-r Bruck exchange, on a work buffer of P blocks.
//
// Each step is ONE message, as in Bruck's algorithm: the blocks of the step are packed (copies
// into a scratch buffer) when they are not contiguous in the work buffer, sent as one message,
// received into a scratch buffer and unpacked into the places they came from. A step whose
// blocks form one contiguous run is sent straight from the work buffer (no pack).
//
// Dependencies are exact, tracked per block: an op waits only for the ops that last wrote what
// it reads, and for those that read what it overwrites. So the r-1 steps of one round, which
// move disjoint blocks, are in flight together (as MPICH's radix-k Bruck posts them), and a
// later round starts on the blocks that have already arrived.
#pragma once
#include <any>
#include <cstdint>
#include <vector>

#include "collkit/registry.hpp"
#include "collkit/schedule.hpp"

namespace collkit {

// Who last wrote and last read each block of one buffer, to derive dependencies.
class BlockHazards {
 public:
  explicit BlockHazards(int64_t blocks);
  // Adds to `deps` what an op reading (or writing) blocks [a, b) must wait for.
  void deps_to_read(int64_t a, int64_t b, std::vector<OpId>& deps) const;
  void deps_to_write(int64_t a, int64_t b, std::vector<OpId>& deps) const;
  void note_read(int64_t a, int64_t b, OpId op);
  void note_write(int64_t a, int64_t b, OpId op);

 private:
  // Ops that read a block wait for its writer (deps_to_read), so deps_to_write needs only the
  // reader when there is one.
  std::vector<OpId> writer_, reader_;  // reader_: the one reader since the last write
};

struct BruckWork {
  BufId buf;      // the work buffer, P blocks of `count` elements
  int64_t shift;  // relative block i lives at block (i + shift) mod P of `buf`
  int direction;  // +1: send to rank + dist, receive from rank - dist; -1: the reverse
};

// Appends the exchange to `b`. `work` holds the writers of the initial placement; on return it
// holds the last writers of every block (for the final rotation, if any).
void bruck_exchange(RankBuilder& b, int64_t count, int64_t r, const BruckWork& w,
                    BlockHazards& work);

// Removes repeated dependencies (lists are built from per-block records), keeping the first of
// each in place: lists are built oldest first, so the most recent data dependence stays last,
// where a depth-first search from the op (the verifier's ordering check) looks first.
class DepDedup {
 public:
  void operator()(std::vector<OpId>& deps);

 private:
  std::vector<uint32_t> stamp_;
  uint32_t epoch_ = 0;
};

// ---- the `r` parameter, shared by both Bruck variants -------------------------------------

// What prepare() leaves for every rank: the radix in use (auto already resolved).
struct BruckPrepared {
  int64_t r = 2;
};
ParamSpec bruck_radix_param();
// Parses r, resolves r=auto by the alpha-beta model for this P and block size.
std::any bruck_prepare(const GenArgs& a);
int64_t bruck_radix(const GenArgs& a);

}  // namespace collkit
