// Where ranks live: `rpn` ranks per node, placed contiguously (node n holds ranks
// n*rpn .. n*rpn+rpn-1) or round-robin (rank r on node r % nodes). The schedule's header carries
// it, so the generators, the simulator's topology and the MPI executor read one placement.
//
// rpn == 0 means "not given": flat algorithms ignore it, node-aware ones refuse to run without it.
// rpn need not divide P: there are ceil(P / rpn) nodes; contiguously the last one holds the
// remainder, round-robin the node sizes differ by at most one.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace collkit {

enum class NodeOrder : uint8_t { contiguous, round_robin };
std::string_view to_string(NodeOrder o);
// "contiguous" / "round_robin" (also "round-robin", "rr", "block"); Error(invalid_argument) else.
NodeOrder node_order_from_string(std::string_view s);

struct Placement {
  int64_t rpn = 0;  // ranks per node; 0: not given
  NodeOrder order = NodeOrder::contiguous;

  bool given() const { return rpn > 0; }
  bool operator==(const Placement&) const = default;
  // "16 ranks per node, contiguous", or "no placement".
  std::string describe() const;
};

// A placement applied to P ranks: node and local index of every rank, and back.
class NodeMap {
 public:
  NodeMap(const Placement& p, int64_t P);
  int64_t nodes() const { return nodes_; }
  int64_t node_of(int64_t rank) const;
  int64_t local_of(int64_t rank) const;
  int64_t node_size(int64_t node) const;
  int64_t rank_of(int64_t node, int64_t local) const;
  bool uniform() const;  // every node holds the same number of ranks
  // Throws Error(unsupported) naming `algorithm`, `why` it needs equal nodes (may be empty) and
  // the remedy, unless uniform(): the one refusal of the node-aware algorithms that need it.
  void require_uniform(std::string_view algorithm, std::string_view why = {},
                       std::string_view remedy = "give an rpn that divides P") const;

 private:
  int64_t P_, rpn_, nodes_;
  NodeOrder order_;
};

}  // namespace collkit
