// The verifier's state and passes, one file per pass:
//   structure.cpp      every op well formed; no dependency cycles (a topological order)
//   hazards.cpp        conflicting accesses to a region are ordered by dependencies
//   matching.cpp       sends matched with receives, in order, per ordered pair of ranks
//   execution.cpp      symbolic execution: values, uninitialized reads, deadlocks
//   postcondition.cpp  every rank ends with what the collective's spec says
// Each pass stops the run if it finds problems that make the next one meaningless. verifier.cpp
// runs them and holds the IR helpers they share (op and region text, global op ids).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collkit/schedule.hpp"
#include "collkit/verify.hpp"
#include "expr.hpp"

namespace collkit::verify_detail {

constexpr uint32_t kNone = UINT32_MAX;

std::string region_text(BufId b, int64_t off, int64_t len);
std::string op_text(const Op& op);
std::string ordinal(uint64_t k);  // 0 -> "1st"

class Verifier {
 public:
  // `shared`: an expression table to intern into (to compare two schedules' trees); else own.
  Verifier(const Schedule& s, const VerifyOptions& o, ExprTable* shared = nullptr);
  VerifyResult run();

  // After run(): the final value of out[i] on rank r.
  Val out_value(int64_t r, int64_t i) const {
    return mem_[static_cast<size_t>(r)][0][static_cast<size_t>(out_base(r) + i)];
  }

  // Whether rank r runs with MPI_IN_PLACE: its `out` is the one buffer of in_place_schedule,
  // in_place_elems long, the collective's out[i] at out_base(r) + i.
  bool aliased(int64_t r) const { return opts_.in_place && applies_to(c_.in_place, h_.root, r); }
  int64_t out_elems(int64_t r) const {
    return aliased(r) ? in_place_elems(h_, r) : h_.out_elems(r);
  }
  int64_t out_base(int64_t r) const { return aliased(r) ? in_place_out_at(h_, r) : 0; }

 private:
  // ---- Shared helpers (verifier.cpp). ----
  void add(DiagKind k, int64_t rank, int64_t op, std::string msg);
  std::string where(int64_t r, size_t i, const RankView& v) const;
  std::string where_g(uint32_t g) const;
  // Global op id of op i of rank r, and back.
  uint32_t gid(int64_t r, size_t i) const {
    return static_cast<uint32_t>(s_.rank_op_begin()[static_cast<size_t>(r)] + i);
  }
  int64_t rank_of(uint32_t g) const;
  uint32_t local(uint32_t g, int64_t r) const {
    return g - static_cast<uint32_t>(s_.rank_op_begin()[static_cast<size_t>(r)]);
  }

  // ---- structure.cpp ----
  bool check_structure();
  void check_op(int64_t r, const RankView& v, size_t i);
  bool check_cycles();
  void report_cycle(int64_t r, const RankView& v, const std::vector<uint32_t>& indeg);

  // ---- hazards.cpp ----
  struct Access {
    BufId buf;
    int64_t lo, hi;  // [lo, hi)
    uint32_t op;
    bool write;
  };
  bool check_hazards();
  bool ordered(const RankView& v, int64_t r, uint32_t p, uint32_t q);
  void ancestors(const RankView& v, int64_t r);
  bool reaches(const RankView& v, int64_t r, uint32_t p, uint32_t q);
  void hazard(int64_t r, const RankView& v, const Access& x, const Access& a);

  // ---- matching.cpp ----
  bool match_messages();
  size_t count_kind(int64_t r, int64_t peer, OpKind kind) const;

  // ---- execution.cpp ----
  bool execute();
  void init_memory();
  void start(uint32_t g);
  void complete(uint32_t g);
  void release(uint32_t g) {
    if (--pending_[g] == 0) ready_.push_back(g);
  }
  void undef(int64_t r, uint32_t g, const std::string& what);
  void learn(uint32_t g, int64_t r, uint32_t from);
  void report_stuck();
  Val read(int64_t r, BufId b, int64_t i) const;
  Val& cell(int64_t r, BufId b, int64_t i) {
    return mem_[static_cast<size_t>(r)][b - 1][static_cast<size_t>(i)];
  }

  // ---- postcondition.cpp ----
  void check_postcondition();
  void check_synchronized();
  bool check_reduced(int64_t r, int64_t i, const Expected& want, Val v);
  void check_consistency(int64_t r, int64_t r0, int64_t k, Val v, Val v0);
  void check_order(int64_t r, int64_t i, Val v);
  void check_copied(int64_t r, int64_t i, const Expected& want, Val v);
  void fail_both() { res_.consistent_commutative = res_.consistent_noncommutative = false; }

  const Schedule& s_;
  const ScheduleHeader& h_;
  const CollectiveSpec& c_;
  VerifyOptions opts_;
  VerifyResult res_;
  // structure
  std::vector<uint32_t> topo_;          // per global op: position in its rank's topological order
  int64_t rank_in_ = 0, rank_out_ = 0;  // the buffer sizes of the rank being checked
  // hazards
  std::vector<uint32_t> stack_, stamp_;
  uint32_t epoch_ = 0;
  std::vector<uint64_t> anc_;  // ancestor bitsets of rank anc_rank_'s ops
  size_t anc_words_ = 0;
  int64_t anc_rank_ = -1;
  // matching
  std::vector<uint32_t> match_, next_in_channel_;
  std::vector<uint8_t> has_channel_pred_;
  bool messages_ok_ = true;
  // execution
  ExprTable* shared_ = nullptr;
  std::unique_ptr<ExprTable> own_expr_;
  ExprTable* expr_ = nullptr;
  std::vector<std::vector<std::vector<Val>>> mem_;  // [rank][buf - 1][elem], buf >= out
  Successors succ_;                                 // over global op ids
  std::vector<uint32_t> pending_, ready_;
  std::vector<uint8_t> state_;  // per global op: 0 waiting, 1 started, 2 complete
  std::vector<int64_t> op_rank_;
  std::vector<Val> payload_;  // message values, captured when a send starts
  std::vector<uint64_t> payload_off_;
  std::vector<uint8_t> reported_undef_;
  std::vector<uint64_t> knowledge_;  // barrier: per op, P bits
  size_t kwords_ = 0;
  // postcondition
  size_t listed_ = 0;
  std::vector<uint64_t> hash_prefix_;  // [q]: sum of rank_hash over ranks 0..q-1
};

// Input elements per rank in the expression table: the largest input of any rank.
int64_t leaf_stride(const ScheduleHeader& h);

// The schedule an executor runs under MPI_IN_PLACE (see verifier.cpp).
Schedule in_place_schedule(const Schedule& s);

}  // namespace collkit::verify_detail
