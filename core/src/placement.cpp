#include "collkit/placement.hpp"

#include <algorithm>

#include "collkit/error.hpp"

namespace collkit {

std::string_view to_string(NodeOrder o) {
  return o == NodeOrder::contiguous ? "contiguous" : "round_robin";
}

NodeOrder node_order_from_string(std::string_view s) {
  if (s == "contiguous" || s == "block") return NodeOrder::contiguous;
  if (s == "round_robin" || s == "round-robin" || s == "rr" || s == "cyclic")
    return NodeOrder::round_robin;
  fail(ErrorKind::invalid_argument,
       "unknown rank order '" + std::string(s) + "' (known: contiguous, round_robin)");
}

std::string Placement::describe() const {
  if (!given()) return "no placement";
  return std::to_string(rpn) + " ranks per node, " + std::string(to_string(order));
}

NodeMap::NodeMap(const Placement& p, int64_t P) : P_(P), rpn_(p.rpn), order_(p.order) {
  if (P < 1) fail(ErrorKind::invalid_argument, "P must be >= 1");
  if (p.rpn < 1)
    fail(ErrorKind::invalid_argument,
         "the placement needs ranks per node >= 1, not " + std::to_string(p.rpn));
  rpn_ = std::min(p.rpn, P);
  nodes_ = (P + rpn_ - 1) / rpn_;
}

int64_t NodeMap::node_of(int64_t r) const {
  return order_ == NodeOrder::contiguous ? r / rpn_ : r % nodes_;
}
int64_t NodeMap::local_of(int64_t r) const {
  return order_ == NodeOrder::contiguous ? r % rpn_ : r / nodes_;
}
int64_t NodeMap::node_size(int64_t n) const {
  if (order_ == NodeOrder::contiguous) return std::min(rpn_, P_ - n * rpn_);
  return P_ / nodes_ + (n < P_ % nodes_ ? 1 : 0);
}
bool NodeMap::uniform() const {
  return order_ == NodeOrder::contiguous ? P_ % rpn_ == 0 : P_ % nodes_ == 0;
}

void NodeMap::require_uniform(std::string_view algorithm, std::string_view why,
                              std::string_view remedy) const {
  if (uniform()) return;
  fail(ErrorKind::unsupported,
       std::string(algorithm) + ": " + (why.empty() ? "" : std::string(why) + ", so ") +
           "every node must hold the same number of ranks (" + Placement{rpn_, order_}.describe() +
           ", P = " + std::to_string(P_) + "); " + std::string(remedy));
}

int64_t NodeMap::rank_of(int64_t n, int64_t l) const {
  return order_ == NodeOrder::contiguous ? n * rpn_ + l : l * nodes_ + n;
}

}  // namespace collkit
