// Simulator checks under AddressSanitizer + UBSan: the closed form of [Ruefenacht 2017] Eq. 1, a
// schedule and its generator simulate alike, every model with noise, skew, topology and recording,
// and random hostile schedules end in a result or a collkit::Error, never anything else.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "check.hpp"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"
#include "collkit/sim/engine.hpp"

using namespace collkit;
using namespace collkit::sim;

TEST(sim_rd_postal_eq1) {
  for (int64_t P : {2, 4, 64, 1024}) {
    SimOptions o;
    o.model.set("alpha", 1000).set("beta", 0.5).set("gamma", 0.25);
    SimResult r = simulate(Algorithm("allreduce:rd").bind(P, 4, 8), o);
    double lg = std::log2(static_cast<double>(P));
    CHECK(std::abs(r.makespans[0] - lg * (1000 + 32 * 0.5 + 32 * 0.25)) < 1e-6);
  }
}

// A cost model is one file: this one, declared and registered here as core/src/sim/models/ do,
// is listed and simulated by name like the others (a constant c per message, postal rules).
namespace {
class ConstantModel final : public CostModel {
 public:
  explicit ConstantModel(const ModelParams& p) : c_(p.get("c")) {}
  Rules rules() const override { return Rules::port; }
  bool done_on_arrival() const override { return true; }
  PortSend port_send(double s, double, double extra, double delay, const Detour&) const override {
    const double a = s + c_ + extra + delay;
    return {a, a, a};
  }

 private:
  double c_;
};
const ModelRegistrar test_model{{
    .name = "test_constant",
    .aliases = {"test-constant"},
    .doc = "c per message",
    .order = 100,
    .rules = Rules::port,
    .params = {{"c", "ns", "time per message", 7}},
    .make = [](const ModelParams& p) -> std::unique_ptr<CostModel> {
      return std::make_unique<ConstantModel>(p);
    },
}};
}  // namespace

TEST(sim_a_model_is_one_file) {
  CHECK(models().back()->name == "test_constant");
  CHECK(&find_model("test-constant") == models().back());
  SimOptions o;
  o.model.model = "test_constant";
  CHECK(simulate(Algorithm("allreduce:rd").bind(8, 1, 8), o).makespans[0] == 3 * 7);
  o.model.set("c", 10);
  CHECK(simulate(Algorithm("allreduce:rd").bind(8, 1, 8), o).makespans[0] == 3 * 10);
  bool threw = false;
  try {
    o.model.set("no_such_parameter", 1);
  } catch (const Error& e) {
    threw = e.kind() == ErrorKind::invalid_argument;
  }
  CHECK(threw);
}

// Options that switch on every feature the engine has (noise, skew, a fat tree, rendezvous,
// trials, recording): two paths to one result must agree under all of them.
static SimOptions every_feature(std::string_view model, int trials, bool record) {
  SimOptions o;
  o.model.model = model;
  o.model.set("G", 0.1).set("S", 64);
  o.noise = {DistKind::lognormal, 20, 0.5, {}};
  o.skew = {DistKind::uniform, 0, 300, {}};
  o.topology.kind = TopoKind::fattree;
  o.topology.k = 4;
  o.topology.hop = 50;
  o.topology.ranks_per_node = 2;
  o.trials = trials;
  o.record = record;
  return o;
}

TEST(sim_schedule_and_generator_agree_in_every_model) {
  CHECK(models().size() >= 5);
  for (const ModelInfo* m : models()) {
    const SimOptions o = every_feature(m->name, 3, true);
    Bound b = Algorithm("allreduce:rd").bind(100, 16, 8);
    SimResult a = simulate(b, o), s = simulate(b.generate(), o);
    CHECK(a.makespans == s.makespans);
    CHECK(a.finish == s.finish);
    CHECK(a.op_end.size() == static_cast<size_t>(a.ops) && !a.critical_path.empty());
  }
}

TEST(sim_hostile_schedules_end_in_a_result_or_an_error) {
  std::mt19937_64 rng(42);
  int results = 0, errors = 0;
  for (int t = 0; t < 2000; ++t) {
    ScheduleHeader h;
    h.P = 1 + static_cast<int64_t>(rng() % 5);
    h.count = 4;
    Schedule s(h);
    RankProgram p;
    for (int64_t r = 0; r < h.P; ++r) {
      p.clear(r);
      RankBuilder b(p, h.P);
      int n = static_cast<int>(rng() % 7);
      for (int i = 0; i < n; ++i) {
        OpId d = static_cast<OpId>(rng() % (i + 2));  // sometimes itself or the next op
        std::vector<OpId> dv;  // Deps is a view: the ids must outlive the call
        if (rng() % 3) dv.push_back(d);
        const Deps deps(dv);
        int64_t peer = static_cast<int64_t>(rng() % (h.P + 1)) - (rng() % 4 == 0);
        int64_t len = static_cast<int64_t>(rng() % 5) - 1;
        switch (rng() % 6) {
          case 0:
            b.send(peer, {kOut, 0, len}, deps);
            break;
          case 1:
            b.recv(peer, {kOut, 0, len}, deps);
            break;
          case 2:
            b.reduce({kOut, 0, len}, {kIn, 0, len}, Side::src_first, deps);
            break;
          case 3:
            b.copy({kOut, 0, len}, {kIn, 0, len}, deps);
            break;
          case 4:
            b.compute(len, deps);
            break;
          default:
            b.sleep(len, deps);
            break;
        }
      }
      for (Op& op : p.ops)  // several CPUs and NICs now and then (peer -1 is a wildcard recv)
        if (rng() % 3 == 0) {
          op.cpu = static_cast<uint8_t>(rng() % (kMaxCpu + 1));
          op.nic = static_cast<uint8_t>(rng() % (kMaxNic + 1));
        }
      s.append_rank(p.view());
    }
    SimOptions o;
    o.model.model = models()[rng() % models().size()]->name;
    o.model.set("S", 2);
    o.noise = {DistKind::exponential, 5, 0, {}};
    if (rng() % 4 == 0) o.noise = {DistKind::trace, 0, double(rng() % 2), {0, 7, 30, 3, 50, 1}};
    o.record = rng() % 2;
    try {
      SimResult r = simulate(s, o);
      CHECK(r.finish.size() == static_cast<size_t>(h.P));
      ++results;
    } catch (const Error&) {
      ++errors;
    }
  }
  CHECK(results > 50 && errors > 50);  // both paths were taken
}

// A noise trace replayed in time: detours (0, 7) and (30, 3), period 50 (the last start).
TEST(sim_noise_trace_detours_by_hand) {
  NoiseTrace t({DistKind::trace, 0, 0, {0, 7, 30, 3, 50, 1}});
  CHECK(t.period() == 50);
  CHECK(t.detour(0, 10, 10) == 0);                // [10, 20): nothing under way, nothing starts
  CHECK(t.detour(0, 2, 10) == 5);                 // the rest of (0, 7)
  CHECK(t.detour(0, 25, 10) == 3);                // (30, 3) starts inside
  CHECK(t.detour(0, 29, 30) == 3 + 7);            // (30, 3), then (0, 7) of the next period at 50
  CHECK(t.detour(20, 10, 10) == 3);               // the offset moves the rank to [30, 40)
  CHECK(t.detour(0, 1000, 1) == 7);               // 1000 = 20 periods: at the start of (0, 7)
  CHECK(t.detour(0, 0, 500) == 7 + 10 * 10 - 7);  // ten periods of 10 ns; the first carried
}

TEST(sim_bad_parameters_are_errors) {
  SimOptions o;
  o.model.set("alpha", -1);
  bool threw = false;
  try {
    simulate(Algorithm("allreduce:rd").bind(4, 1), o);
  } catch (const Error& e) {
    threw = e.kind() == ErrorKind::invalid_argument;
  }
  CHECK(threw);
}

TEST(sim_ranks_share_programs_and_release_them) {
  SimOptions o;
  o.model.model = "loggops";
  // Every rank of recursive doubling runs one program up to peer ^ rank.
  SimResult rd = simulate(Algorithm("allreduce:rd").bind(4096, 1, 8), o);
  CHECK(rd.programs == 1);
  CHECK(rd.peak_ranks_held == 4096);  // all start at once
  // A ring is one program up to peer - rank mod P.
  SimResult ring = simulate(Algorithm("allreduce:ring").bind(1000, 1000, 8), o);
  CHECK(ring.programs <= 4);
  // A binomial tree has a kind of rank per subtree size; ranks finish and are released as the
  // broadcast goes down the tree.
  SimResult bc = simulate(Algorithm("bcast:binomial").bind(1024, 1, 8), o);
  CHECK(bc.programs <= 12);
  // The same numbers from a whole Schedule (not shared across different P, nothing cached).
  SimResult bs = simulate(Algorithm("bcast:binomial").bind(1024, 1, 8).generate(), o);
  CHECK(bs.makespans == bc.makespans && bs.programs == bc.programs);
}

namespace {
// Rank r's program with each peer taken as (peer - r) mod P: what a program_class claims equal.
bool same_up_to_relabelling(const RankView& a, const RankView& b, int64_t P) {
  if (a.size() != b.size() || !std::ranges::equal(a.dep_begin, b.dep_begin) ||
      !std::ranges::equal(a.deps, b.deps) || !std::ranges::equal(a.scratch, b.scratch))
    return false;
  const auto rel = [P](const Op& o, int64_t r) {
    return o.kind == OpKind::send || o.kind == OpKind::recv ? (o.peer - r + P) % P : int64_t{-1};
  };
  for (size_t i = 0; i < a.size(); ++i) {
    const Op &x = a.ops[i], &y = b.ops[i];
    if (x.kind != y.kind || x.len != y.len || x.off != y.off || x.src_off != y.src_off ||
        x.buf != y.buf || x.src != y.src || x.side != y.side || x.cpu != y.cpu || x.nic != y.nic ||
        rel(x, a.rank) != rel(y, b.rank))
      return false;
  }
  return true;
}
}  // namespace

// Every algorithm that declares program classes (the simulator then generates one rank per
// class), over its parameter grid, P 1..40 and a few larger, several roots and counts (segmented
// and not): ranks of one class run one program up to relabelling mod P, rank by rank.
TEST(sim_program_classes_hold_rank_by_rank) {
  int declared = 0;
  for (const AlgorithmSpec* spec : all_algorithms()) {
    if (!spec->program_class) continue;
    ++declared;
    std::vector<std::string> names = parameter_grid(*spec);
    const std::string base = std::string(to_string(spec->collective)) + ":" + spec->name;
    names.push_back(base);  // the grid sweeps seg over 0, 16 B and 1 KiB
    for (const std::string& name : names) {
      const Algorithm algo(name);
      std::vector<int64_t> Ps;
      for (int64_t P = 1; P <= 40; ++P) Ps.push_back(P);
      for (int64_t P : {63, 64, 65, 100, 127, 128, 243, 256, 1000}) Ps.push_back(P);
      for (int64_t P : Ps)
        for (int64_t root : {int64_t{0}, int64_t{1}, P / 2, P - 1}) {
          if (root >= P) continue;
          for (int64_t count : {0, 1, 5, 9}) {
            const Bound b = algo.bind(P, count, 4, root);
            std::unordered_map<int64_t, RankProgram> first;
            RankProgram p;
            for (int64_t r = 0; r < P; ++r) {
              const int64_t c = b.program_class(r);
              CHECK(c >= -1);
              if (c < 0) continue;
              b.generate_rank(r, p);
              auto [it, fresh] = first.try_emplace(c, p);
              if (!fresh && !same_up_to_relabelling(it->second.view(), p.view(), P)) {
                std::fprintf(stderr, "%s P=%lld root=%lld count=%lld: rank %lld is not rank %lld\n",
                             name.c_str(), static_cast<long long>(P), static_cast<long long>(root),
                             static_cast<long long>(count), static_cast<long long>(r),
                             static_cast<long long>(it->second.rank));
                CHECK(false);
                return;
              }
            }
          }
        }
    }
  }
  CHECK(declared >= 3);  // bcast:binomial, knomial, pipeline
}

// A binomial bcast generates one rank per class: a few at any P (was every rank), with the
// results of the whole Schedule (every rank read) in every model, noise, skew and topology.
TEST(sim_binomial_generates_one_rank_per_class) {
  for (int64_t P : {int64_t{1} << 10, int64_t{1} << 16}) {
    SimOptions o;
    o.model.model = "loggops";
    const SimResult r = simulate(Algorithm("bcast:binomial").bind(P, 1, 8), o);
    CHECK(r.programs_read <= 2 * static_cast<int64_t>(std::bit_width(static_cast<uint64_t>(P))));
    CHECK(r.programs <= r.programs_read);
  }
  for (const ModelInfo* m : models())
    for (const char* name : {"bcast:binomial", "bcast:knomial(k=3)", "bcast:pipeline(seg=8)"})
      for (int64_t P : {37, 64, 100})
        for (bool rec : {false, true}) {
          const SimOptions o = every_feature(m->name, 2, rec);
          const Bound b = Algorithm(name).bind(P, 24, 8, P / 3);
          const SimResult a = simulate(b, o), s = simulate(b.generate(), o);
          CHECK(a.programs_read < P && s.programs_read == P);
          CHECK(a.programs == s.programs && a.ops == s.ops && a.events == s.events);
          CHECK(a.makespans == s.makespans && a.finish == s.finish);
          CHECK(a.op_start == s.op_start && a.op_end == s.op_end);
          CHECK(a.msg_depart == s.msg_depart && a.msg_arrive == s.msg_arrive);
          CHECK(a.critical_path == s.critical_path);
        }
}

TEST(sim_congestion_waits_only_for_shared_links) {
  SimOptions o;
  o.model.set("alpha", 100);
  o.topology.kind = TopoKind::torus;
  o.topology.dims = {64};
  o.topology.hop = 10;
  SimResult free = simulate(Algorithm("allreduce:rd").bind(64, 128, 8), o);
  o.topology.link = 0.5;
  SimResult shared = simulate(Algorithm("allreduce:rd").bind(64, 128, 8), o);
  // Recursive doubling on a ring of nodes: exchanges at distance 2^k share links.
  CHECK(shared.makespans[0] > free.makespans[0]);
  o.topology.dims = {1 << 20};
  CHECK(simulate(Algorithm("allreduce:rd").bind(2, 128, 8), o).makespans[0] ==
        100 + 10 + 1024 * 0.0);  // one link each way, nothing shared
}
