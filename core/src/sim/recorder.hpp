// The engine's outputs: what a trial leaves in SimResult (makespan, per-rank finish, counts) and,
// with SimOptions::record, the timeline of trial 0: each op's start and end, each message's
// send, receive, departure and arrival, and what held each op up (its cause), from which the
// critical path is read. Ops are numbered globally, rank by rank, in op order.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "collkit/sim/critical_path.hpp"
#include "collkit/sim/engine.hpp"
#include "programs.hpp"

namespace collkit::sim::detail {

class Recorder {
 public:
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  bool on = false;                      // recording this trial
  std::vector<uint64_t> rank_op_begin;  // P + 1: the first global op of each rank
  std::vector<double> op_start, op_end;
  std::vector<uint64_t> cause;  // the op whose completion let it start, or that held it up
  std::vector<uint64_t> cpu_owner, port_owner;  // per rank: the op last on its CPU, send port

  uint64_t gidx(uint32_t r, uint32_t i) const { return rank_op_begin[r] + i; }

  // Numbering: every rank's op count, in rank order, before the first trial.
  void number(size_t rank_ops) { rank_op_begin.push_back(rank_op_begin.back() + rank_ops); }
  void start_numbering() { rank_op_begin.assign(1, 0); }

  void begin_trial(bool record, int64_t P) {
    on = record;
    if (!on) return;
    const size_t n = rank_op_begin.back();
    op_start.assign(n, kNaN);
    op_end.assign(n, kNaN);
    cause.assign(n, kNone);
    msg_of_send_.assign(n, kNone);
    cpu_owner.assign(static_cast<size_t>(P), kNone);
    port_owner.assign(static_cast<size_t>(P), kNone);
    msg_send_.clear();
    msg_recv_.clear();
    msg_depart_.clear();
    msg_arrive_.clear();
  }

  // Send k (global) departs: a message.
  void message(uint64_t k, double depart) {
    msg_of_send_[k] = msg_send_.size();
    msg_send_.push_back(k);
    msg_recv_.push_back(kNone);
    msg_depart_.push_back(depart);
    msg_arrive_.push_back(kNaN);
  }
  // The message of send k arrives (or is processed) at t; is received by op j.
  void arrived(uint64_t k, double t) { msg_arrive_[msg_of_send_[k]] = t; }
  void arrived_if_unset(uint64_t k, double t) {
    double& a = msg_arrive_[msg_of_send_[k]];
    if (std::isnan(a)) a = t;
  }
  void received(uint64_t k, uint64_t j) { msg_recv_[msg_of_send_[k]] = j; }

  // The recorded trial's timeline into the result.
  void take(SimResult& res) {
    res.rank_op_begin.assign(rank_op_begin.begin(), rank_op_begin.end());
    res.critical_path = critical_path(op_end, cause);
    res.op_start = std::move(op_start);
    res.op_end = std::move(op_end);
    res.msg_send = std::move(msg_send_);
    res.msg_recv = std::move(msg_recv_);
    res.msg_depart = std::move(msg_depart_);
    res.msg_arrive = std::move(msg_arrive_);
  }
  size_t memory_bytes() const { return rank_op_begin.capacity() * sizeof(uint64_t); }

 private:
  std::vector<uint64_t> msg_of_send_, msg_send_, msg_recv_;
  std::vector<double> msg_depart_, msg_arrive_;
};

}  // namespace collkit::sim::detail
