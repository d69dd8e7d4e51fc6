// Pass 1: every op is well formed (peers, buffers, regions inside buffers, dependency indices).
// Pass 2: no rank has a dependency cycle; every op gets its position in a topological order.
#include "verifier.hpp"

namespace collkit::verify_detail {

bool Verifier::check_structure() {
  size_t before = res_.total_problems;
  for (int64_t r = 0; r < h_.P; ++r) {
    RankView v = s_.rank(r);
    // O(P) each for a header with counts: once per rank, not per op.
    rank_in_ = h_.in_elems(r);
    rank_out_ = out_elems(r);
    for (size_t i = 0; i < v.size(); ++i) check_op(r, v, i);
  }
  return res_.total_problems == before;
}

void Verifier::check_op(int64_t r, const RankView& v, size_t i) {
  const Op& op = v.ops[i];
  auto bad = [&](const std::string& why) {
    add(DiagKind::bad_op, r, int64_t(i), where(r, i, v) + ": " + why);
  };
  if (static_cast<uint8_t>(op.kind) > static_cast<uint8_t>(OpKind::sleep)) {
    bad("unknown op kind");
    return;
  }
  auto region_ok = [&](BufId b, int64_t off, const char* what) {
    int64_t size = b == kOut ? rank_out_ : b == kIn ? rank_in_ : v.buffer_elems(h_, b);
    if (op.len < 0) {
      bad("negative length " + std::to_string(op.len));
      return;
    }
    if (size < 0) {
      bad(std::string(what) + " buffer " + buffer_name(b) + " does not exist on this rank");
      return;
    }
    if (off < 0 || op.len < 0 || off > size || op.len > size - off)
      bad(std::string(what) + " region " + region_text(b, off, op.len) + " is outside " +
          buffer_name(b) + ", which has " + std::to_string(size) + " elements");
  };
  switch (op.kind) {
    case OpKind::send:
    case OpKind::recv:
      if (op.kind == OpKind::recv && op.peer == kAnySource)
        bad("is a wildcard receive (from any source): which message it takes depends on timing, "
            "so the verifier, which proves schedules whose messages match in program order, "
            "cannot prove it (the simulator runs it: collkit simulate --file)");
      else if (op.peer < 0 || op.peer >= h_.P)
        bad("peer " + std::to_string(op.peer) + " is not a rank of P = " + std::to_string(h_.P));
      region_ok(op.buf, op.off, op.kind == OpKind::send ? "source" : "destination");
      if (op.kind == OpKind::recv && op.buf == kIn)
        bad("writes the input buffer, which is read-only (MPI's sendbuf is const)");
      break;
    case OpKind::reduce:
    case OpKind::copy:
      region_ok(op.buf, op.off, "destination");
      region_ok(op.src, op.src_off, "source");
      if (op.buf == kIn)
        bad("writes the input buffer, which is read-only (MPI's sendbuf is const)");
      if (op.buf == op.src && op.off < op.src_off + op.len && op.src_off < op.off + op.len &&
          op.len > 0)
        bad("source and destination overlap");
      break;
    case OpKind::compute:
    case OpKind::sleep:
      if (op.len < 0) bad("negative duration");
      break;
  }
  for (OpId d : v.deps_of(i))
    if (d >= v.size() || d == i)
      bad("depends on op " + std::to_string(d) + ", which " +
          (d == i ? std::string("is itself")
                  : "does not exist (the rank has " + std::to_string(v.size()) + " ops)"));
}

bool Verifier::check_cycles() {
  size_t before = res_.total_problems;
  topo_.assign(s_.total_ops(), 0);
  std::vector<uint32_t> indeg, order;
  Successors succ;
  for (int64_t r = 0; r < h_.P; ++r) {
    RankView v = s_.rank(r);
    size_t n = v.size();
    succ.clear();
    succ.append_rank(v);
    indeg.assign(n, 0);
    for (size_t i = 0; i < n; ++i) indeg[i] = static_cast<uint32_t>(v.deps_of(i).size());
    order.clear();
    for (size_t i = 0; i < n; ++i)
      if (indeg[i] == 0) order.push_back(static_cast<uint32_t>(i));
    for (size_t k = 0; k < order.size(); ++k) {
      uint32_t i = order[k];
      topo_[gid(r, i)] = static_cast<uint32_t>(k);
      for (uint32_t j : succ.of(i))
        if (--indeg[j] == 0) order.push_back(j);
    }
    if (order.size() != n) report_cycle(r, v, indeg);
  }
  return res_.total_problems == before;
}

// Walk back along unfinished dependencies until an op repeats: that is a cycle.
void Verifier::report_cycle(int64_t r, const RankView& v, const std::vector<uint32_t>& indeg) {
  const size_t n = v.size();
  uint32_t start = 0;
  while (indeg[start] == 0) ++start;
  std::vector<uint32_t> seen(n, kNone), path;
  uint32_t cur = start;
  while (seen[cur] == kNone) {
    seen[cur] = static_cast<uint32_t>(path.size());
    path.push_back(cur);
    for (OpId d : v.deps_of(cur))
      if (indeg[d] != 0) {
        cur = d;
        break;
      }
  }
  std::string cyc;
  for (size_t k = seen[cur]; k < path.size(); ++k)
    cyc += "op " + std::to_string(path[k]) + " waits on ";
  cyc += "op " + std::to_string(cur);
  add(DiagKind::dep_cycle, r, cur, "rank " + std::to_string(r) + ": dependency cycle: " + cyc);
}

}  // namespace collkit::verify_detail
