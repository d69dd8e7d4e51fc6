#include "torus.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "collkit/error.hpp"

namespace collkit::phases {

std::vector<int64_t> parse_torus_dims(std::string_view text, std::string_view who, bool pow2) {
  std::vector<int64_t> out;
  if (text == "P") return out;
  size_t i = 0;
  while (i <= text.size()) {
    const size_t j = std::min(text.find('x', i), text.size());
    const std::string_view tok = text.substr(i, j - i);
    int64_t v = 0;
    bool ok = !tok.empty() && tok.size() <= 10;
    for (const char c : tok) {
      ok = ok && c >= '0' && c <= '9';
      if (ok) v = v * 10 + (c - '0');
    }
    if (!ok || v < 1 || v > (int64_t{1} << 31) ||
        (pow2 && !std::has_single_bit(static_cast<uint64_t>(v))))
      fail(ErrorKind::name,
           std::string(who) + ": dims = '" + std::string(text) +
               (pow2 ? "' must be P or sizes of a torus, each a power of two, as 8x8"
                     : "' must be P or the sizes of a torus, each in [1, 2^31], "
                       "as 8x8"));
    out.push_back(v);
    if (out.size() > 8)
      fail(ErrorKind::name,
           std::string(who) + ": dims = '" + std::string(text) + "' has more than 8 dimensions");
    i = j + 1;
  }
  return out;
}

Torus torus_of(const GenArgs& a, bool pow2) {
  const int64_t P = a.header.P;
  Torus g;
  g.dims = parse_torus_dims(a.params->word("dims"), a.header.algorithm, pow2);
  if (g.dims.empty()) g.dims = {P};
  int64_t prod = 1;
  for (const int64_t d : g.dims) {
    if (prod > P / d) {
      prod = -1;  // more than P, and no overflow
      break;
    }
    prod *= d;
  }
  if (prod != P)
    fail(ErrorKind::unsupported, a.header.algorithm + ": dims = '" + a.params->word("dims") +
                                     "' hold " + (prod < 0 ? "more than P" : std::to_string(prod)) +
                                     " ranks, not P = " + std::to_string(P));
  const size_t D = g.dims.size();
  g.stride.assign(D, 1);
  for (size_t i = D - 1; i-- > 0;) g.stride[i] = g.stride[i + 1] * g.dims[i + 1];
  return g;
}

}  // namespace collkit::phases
