// A torus of ranks as the torus algorithms take it (allreduce:swing, allreduce:bucket): the
// `dims` parameter ("P" for one ring of P, or sizes such as 8x8), checked to hold P ranks, and
// the row-major strides of its coordinates (rank r's coordinate in dimension t is
// r / stride[t] % dims[t]).
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "collkit/registry.hpp"

namespace collkit::phases {

// The sizes in `text`: empty for "P"; each in [1, 2^31] (a power of two where `pow2`), at most 8.
// A name error naming `who` otherwise.
std::vector<int64_t> parse_torus_dims(std::string_view text, std::string_view who, bool pow2);

struct Torus {
  std::vector<int64_t> dims, stride;
};

// The call's torus: its `dims` parameter (one ring of P for "P"), refused unless it holds P ranks.
Torus torus_of(const GenArgs& a, bool pow2);

}  // namespace collkit::phases
