#include "compose.hpp"

#include <algorithm>

#include "collkit/error.hpp"

namespace collkit::phases {

void SubAlgorithm::prepare(int64_t size, int64_t root, const std::string& role) {
  if (bound_.count({size, root})) return;
  try {
    bound_.emplace(std::pair(size, root), algo_->bind(size, count_, elem_size_, root));
  } catch (const Error& e) {
    fail(e.kind(),
         role + " " + algo_->canonical() + " on " + std::to_string(size) + " ranks: " + e.what());
  }
}

const Bound& SubAlgorithm::bound(int64_t size, int64_t root) const {
  return bound_.at({size, root});
}

std::vector<OpId> join(RankBuilder& b, const std::vector<OpId>& ops) {
  if (ops.size() <= 1) return ops;
  return {b.compute(0, ops)};
}

namespace detail {

std::vector<OpId> splice(RankBuilder& b, const RankProgram& sub, const std::vector<int64_t>& peers,
                         const BufferMap& map, const std::vector<OpId>& entry, uint16_t stage_base,
                         uint16_t* next_stage) {
  const size_t n = sub.ops.size();
  uint16_t max_stage = 0;
  for (uint16_t s : sub.stage) max_stage = std::max(max_stage, s);
  if (next_stage) *next_stage = static_cast<uint16_t>(stage_base + (n ? max_stage + 1 : 0));
  if (n == 0) return entry;

  // The sub-program's buffers in the caller's: in, out, then one new scratch per scratch.
  std::vector<Region> where{map.in, map.out};
  for (int64_t elems : sub.scratch) where.push_back(Region{b.scratch(elems), 0, elems});
  auto at = [&](BufId buf, int64_t off, int64_t len) {
    const Region& w = where.at(buf);
    return Region{w.buf, w.off + off, len};
  };

  const uint16_t saved = b.stage();
  b.set_stage(stage_base);
  const std::vector<OpId> start = entry.size() > 2 ? join(b, entry) : entry;
  std::vector<OpId> id(n);
  std::vector<char> waited_on(n, 0);
  std::vector<OpId> deps;
  for (size_t i = 0; i < n; ++i) {
    const Op& op = sub.ops[i];
    deps.clear();
    for (uint32_t k = sub.dep_begin[i]; k < sub.dep_begin[i + 1]; ++k) {
      deps.push_back(id[sub.deps[k]]);
      waited_on[sub.deps[k]] = 1;
    }
    if (deps.empty()) deps = start;
    b.set_stage(static_cast<uint16_t>(stage_base + sub.stage[i]));
    switch (op.kind) {
      case OpKind::send:
        id[i] = b.send(peers[i], at(op.buf, op.off, op.len), deps);
        break;
      case OpKind::recv:
        id[i] = b.recv(peers[i], at(op.buf, op.off, op.len), deps);
        break;
      case OpKind::reduce:
        id[i] = b.reduce(at(op.buf, op.off, op.len), at(op.src, op.src_off, op.len), op.side, deps);
        break;
      case OpKind::copy:
        id[i] = b.copy(at(op.buf, op.off, op.len), at(op.src, op.src_off, op.len), deps);
        break;
      case OpKind::compute:
        id[i] = b.compute(op.len, deps);
        break;
      case OpKind::sleep:
        id[i] = b.sleep(op.len, deps);
        break;
    }
  }
  b.set_stage(saved);
  std::vector<OpId> exits;
  for (size_t i = 0; i < n; ++i)
    if (!waited_on[i]) exits.push_back(id[i]);
  return exits;
}

}  // namespace detail
}  // namespace collkit::phases
