#include "collkit/sim/topology.hpp"

#include <cmath>
#include <string>

#include "collkit/error.hpp"

namespace collkit::sim {

int64_t Topology::hops(int64_t s, int64_t d) const {
  if (s == d) return 0;
  switch (kind) {
    case TopoKind::none:
      return 0;
    case TopoKind::fattree: {
      int64_t level = 1;
      for (s /= k, d /= k; s != d; s /= k, d /= k) ++level;
      return 2 * level;
    }
    case TopoKind::dragonfly: {
      int64_t rs = s / p, rd = d / p;
      if (rs == rd) return 2;
      return rs / a == rd / a ? 3 : 4;
    }
    case TopoKind::torus: {
      int64_t h = 0;
      for (size_t i = dims.size(); i-- > 0;) {
        int64_t n = dims[i], cs = s % n, cd = d % n;
        int64_t dist = cs > cd ? cs - cd : cd - cs;
        h += dist < n - dist ? dist : n - dist;
        s /= n;
        d /= n;
      }
      return h;
    }
  }
  return 0;
}

double Topology::extra_latency(int64_t src, int64_t dst) const {
  int64_t ns = src / ranks_per_node, nd = dst / ranks_per_node;
  if (ns == nd) return intra;
  double t = static_cast<double>(hops(ns, nd)) * hop;
  if (kind == TopoKind::dragonfly && (ns / p) / a != (nd / p) / a) t += global;
  return t;
}

void validate(const Topology& t, int64_t P) {
  auto bad = [](const std::string& m) { fail(ErrorKind::invalid_argument, "topology: " + m); };
  auto ok_time = [](double v) { return std::isfinite(v) && v >= 0; };
  if (t.ranks_per_node < 1) bad("ranks per node must be >= 1");
  if (!ok_time(t.intra) || !ok_time(t.hop) || !ok_time(t.global))
    bad("latencies must be finite times >= 0");
  int64_t nodes = (P + t.ranks_per_node - 1) / t.ranks_per_node;
  switch (t.kind) {
    case TopoKind::none:
      return;
    case TopoKind::fattree:
      if (t.k < 2) bad("fattree radix k must be >= 2");
      return;
    case TopoKind::dragonfly:
      if (t.p < 1 || t.a < 1) bad("dragonfly needs p >= 1 nodes per router and a >= 1 routers");
      return;
    case TopoKind::torus: {
      if (t.dims.empty() || t.dims.size() > 8) bad("torus needs 1 to 8 dimensions");
      int64_t n = 1;
      for (int64_t d : t.dims) {
        if (d < 1 || d > (int64_t{1} << 31)) bad("torus dimensions must be in [1, 2^31]");
        n = n > (int64_t{1} << 40) ? n : n * d;
      }
      if (n < nodes)
        bad("torus of " + std::to_string(n) + " nodes cannot hold " + std::to_string(nodes) +
            " nodes (P = " + std::to_string(P) + ")");
      return;
    }
  }
}

}  // namespace collkit::sim
