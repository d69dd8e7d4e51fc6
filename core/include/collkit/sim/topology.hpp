// Topology: an extra latency per pair of ranks, added to each message's wire latency (postal
// alpha, pipelined postal alpha_p, LogGOPS L). Ranks are packed ranks_per_node to a node;
// messages within a node pay `intra`, messages between nodes pay hops * hop (+ global links).
// Computed from the description on the fly: no P x P table.
//
//   fattree(k)        k nodes per leaf switch, k children per switch above: two nodes whose lowest
//                     common switch is at level l are 2 l hops apart.
//   dragonfly(p, a)   p nodes per router, a routers per group, all-to-all links inside a group and
//                     one global link between groups: same router 2 hops, same group 3 hops,
//                     other group 4 hops + one global link.
//   torus(d1 x d2 x ..)  nodes on a torus (row-major), hops = sum over dimensions of the
//                     wrap-around distance.
//
// Congestion (link > 0): messages share links. Every node has an injection and an ejection link,
// and a message between nodes follows a fixed route (fat tree: up to the lowest common switch
// and down; dragonfly: node-router, router-router in the group, the global link between groups,
// router-router, router-node; torus: dimension order, the shorter way round). A link carries
// one message at a time and is busy n * link ns for n bytes; a message enters each link of its
// route once the link is free (cut-through: its head goes on at once), so it arrives later by
// the longest wait. Without `link` no message waits for another (latency only).
#pragma once
#include <cstdint>
#include <vector>

#include "collkit/schedule.hpp"

namespace collkit::sim {

enum class TopoKind : uint8_t { none, fattree, dragonfly, torus };

struct Topology {
  TopoKind kind = TopoKind::none;
  // 0: the schedule's placement says (1 if it gives none). Where both are given they must agree:
  // the schedule's --rpn and the topology's node size are one thing (see placed()).
  int64_t ranks_per_node = 1;
  NodeOrder order = NodeOrder::contiguous;  // from the schedule's placement
  int64_t P = 0;                            // set by placed(): round-robin needs it
  double intra = 0;                         // ns for a message within a node
  double hop = 0;                           // ns per switch hop between nodes
  double global = 0;                        // dragonfly: ns per global link
  int64_t k = 2;                            // fattree radix
  int64_t p = 1;                            // dragonfly nodes per router
  int64_t a = 1;                            // dragonfly routers per group
  std::vector<int64_t> dims;                // torus
  double link = 0;                          // ns per byte on each link; 0: links are never shared

  // The links of the route from rank src to rank dst (none within a node), as opaque ids.
  void route(int64_t src, int64_t dst, std::vector<uint64_t>& links) const;

  // Extra latency of a message from rank src to rank dst (ns).
  double extra_latency(int64_t src, int64_t dst) const;
  int64_t hops(int64_t src_node, int64_t dst_node) const;
  int64_t node_of(int64_t rank) const;
};

// The topology a schedule runs on: its node size and rank order taken from the schedule's
// placement. Throws Error(invalid_argument) when the topology names another node size.
Topology placed(const Topology& t, const ScheduleHeader& h);

// Throws Error(invalid_argument) for a description that cannot hold P ranks or has bad numbers.
void validate(const Topology& t, int64_t P);

}  // namespace collkit::sim
