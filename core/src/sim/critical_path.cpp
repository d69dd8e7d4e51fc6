#include "collkit/sim/critical_path.hpp"

#include <algorithm>
#include <cmath>

namespace collkit::sim {

std::vector<uint64_t> critical_path(std::span<const double> op_end,
                                    std::span<const uint64_t> cause) {
  std::vector<uint64_t> path;
  uint64_t last = UINT64_MAX;
  for (uint64_t k = 0; k < op_end.size(); ++k)  // the latest; ties: the last; NaN: no op there
    if (!std::isnan(op_end[k]) && (last == UINT64_MAX || op_end[k] >= op_end[last])) last = k;
  // Causes always finish no later than the op they hold up, so the walk ends; the bound is a
  // guard against a cycle all the same.
  for (uint64_t k = last; k != UINT64_MAX && path.size() <= op_end.size(); k = cause[k])
    path.push_back(k);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace collkit::sim
