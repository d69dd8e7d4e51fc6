// The critical path of a simulated run: from the op that finished last, follow each op's cause
// (the dep or message whose completion let it start, or the op that held the CPU or send port
// it waited for) back to an op that started with nothing holding it.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace collkit::sim {

// Global op indices, first to last. `cause[k]` is UINT64_MAX for an op nothing held up.
std::vector<uint64_t> critical_path(std::span<const double> op_end,
                                    std::span<const uint64_t> cause);

}  // namespace collkit::sim
