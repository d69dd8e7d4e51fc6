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

int64_t Topology::node_of(int64_t rank) const {
  if (order == NodeOrder::contiguous || P < 1) return rank / ranks_per_node;
  return rank % ((P + ranks_per_node - 1) / ranks_per_node);
}

Topology placed(const Topology& t, const ScheduleHeader& h) {
  Topology out = t;
  out.P = h.P;
  const Placement& pl = h.placement;
  if (pl.given()) {
    if (t.ranks_per_node > 0 && t.ranks_per_node != pl.rpn)
      fail(ErrorKind::invalid_argument,
           "the topology's rpn=" + std::to_string(t.ranks_per_node) +
               " disagrees with the schedule's placement (" + pl.describe() +
               "): they are one node size; give it once (--rpn), or give the same number");
    out.ranks_per_node = pl.rpn;
    out.order = pl.order;
  } else if (t.ranks_per_node == 0) {
    out.ranks_per_node = 1;
  }
  return out;
}

double Topology::extra_latency(int64_t src, int64_t dst) const {
  int64_t ns = node_of(src), nd = node_of(dst);
  if (ns == nd) return intra;
  double t = static_cast<double>(hops(ns, nd)) * hop;
  if (kind == TopoKind::dragonfly && (ns / p) / a != (nd / p) / a) t += global;
  return t;
}

namespace {
// A link id: what it is (4 bits), a level or dimension and direction (8 bits), an index.
uint64_t link_id(uint64_t type, uint64_t sub, int64_t index) {
  return type << 60 | (sub & 0xff) << 52 |
         (static_cast<uint64_t>(index) & ((uint64_t{1} << 52) - 1));
}
enum : uint64_t {
  kInject = 1,
  kEject,
  kUp,
  kDown,
  kRouterUp,
  kRouterDown,
  kLocal,
  kGlobal,
  kTorus
};
}  // namespace

void Topology::route(int64_t src, int64_t dst, std::vector<uint64_t>& links) const {
  links.clear();
  int64_t a = node_of(src), b = node_of(dst);
  if (a == b) return;
  links.push_back(link_id(kInject, 0, a));
  switch (kind) {
    case TopoKind::none:
      break;
    case TopoKind::fattree: {
      std::vector<uint64_t> down;
      int level = 0;
      for (int64_t x = a, y = b; x != y; x /= k, y /= k, ++level) {
        links.push_back(link_id(kUp, static_cast<uint64_t>(level), x));
        down.push_back(link_id(kDown, static_cast<uint64_t>(level), y));
      }
      links.insert(links.end(), down.rbegin(), down.rend());
      break;
    }
    case TopoKind::dragonfly: {
      const int64_t ra = a / p, rb = b / p;
      links.push_back(link_id(kRouterUp, 0, a));
      if (ra != rb) {
        const int64_t ga = ra / this->a, gb = rb / this->a;
        if (ga == gb) {
          links.push_back(link_id(kLocal, 0, ra * this->a + rb % this->a));
        } else {
          // Through the routers that hold the global link: router (gb mod a) of group ga, router
          // (ga mod a) of group gb.
          const int64_t ea = ga * this->a + gb % this->a, eb = gb * this->a + ga % this->a;
          if (ea != ra) links.push_back(link_id(kLocal, 0, ra * this->a + ea % this->a));
          links.push_back(link_id(kGlobal, 0, ga * (int64_t{1} << 24) + gb));
          if (eb != rb) links.push_back(link_id(kLocal, 0, eb * this->a + rb % this->a));
        }
      }
      links.push_back(link_id(kRouterDown, 0, b));
      break;
    }
    case TopoKind::torus: {
      // Row-major coordinates; dimension order from the first, the shorter way round.
      std::vector<int64_t> ca(dims.size()), cb(dims.size());
      for (size_t i = dims.size(), x = 0; i-- > 0; ++x) {
        (void)x;
        ca[i] = a % dims[i];
        cb[i] = b % dims[i];
        a /= dims[i];
        b /= dims[i];
      }
      int64_t node = node_of(src);
      int64_t stride = 1;
      std::vector<int64_t> strides(dims.size());
      for (size_t i = dims.size(); i-- > 0;) {
        strides[i] = stride;
        stride *= dims[i];
      }
      for (size_t i = 0; i < dims.size(); ++i) {
        const int64_t n = dims[i];
        int64_t fwd = ((cb[i] - ca[i]) % n + n) % n;
        const bool up = fwd <= n - fwd;
        int64_t steps = up ? fwd : n - fwd;
        for (int64_t c = ca[i]; steps-- > 0;) {
          links.push_back(link_id(kTorus, i * 2 + (up ? 1 : 0), node));
          const int64_t next = up ? (c + 1) % n : (c - 1 + n) % n;
          node += (next - c) * strides[i];
          c = next;
        }
      }
      break;
    }
  }
  links.push_back(link_id(kEject, 0, node_of(dst)));
}

void validate(const Topology& t, int64_t P) {
  auto bad = [](const std::string& m) { fail(ErrorKind::invalid_argument, "topology: " + m); };
  auto ok_time = [](double v) { return std::isfinite(v) && v >= 0; };
  if (t.ranks_per_node < 1) bad("ranks per node must be >= 1");
  if (!ok_time(t.intra) || !ok_time(t.hop) || !ok_time(t.global) || !ok_time(t.link))
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
