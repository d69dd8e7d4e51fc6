// The simulator: one entry point taking a Schedule or an Algorithm (pulled rank by rank), the
// model, noise, skew and topology as plain values, and returning numpy arrays. The typed API
// and the parsing of units live in collkit/simulate.py.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "arrays.hpp"
#include "bindings.hpp"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"
#include "collkit/sim/engine.hpp"

namespace nb = nanobind;

namespace collkit::py {
namespace {

using namespace collkit::sim;

double get(const nb::dict& d, const char* key, double fallback) {
  return d.contains(key) ? nb::cast<double>(d[key]) : fallback;
}

Distribution distribution(const std::string& kind, double a, double b,
                          std::vector<double> samples) {
  Distribution d;
  if (kind == "none")
    d.kind = DistKind::none;
  else if (kind == "constant")
    d.kind = DistKind::constant;
  else if (kind == "uniform")
    d.kind = DistKind::uniform;
  else if (kind == "exponential")
    d.kind = DistKind::exponential;
  else if (kind == "lognormal")
    d.kind = DistKind::lognormal;
  else if (kind == "samples")
    d.kind = DistKind::samples;
  else
    fail(ErrorKind::invalid_argument, "unknown distribution '" + kind + "'");
  d.a = a;
  d.b = b;
  d.samples = std::move(samples);
  return d;
}

Topology topology(const nb::dict& t) {
  Topology topo;
  std::string kind = t.contains("kind") ? nb::cast<std::string>(t["kind"]) : "none";
  if (kind == "none")
    topo.kind = TopoKind::none;
  else if (kind == "fattree")
    topo.kind = TopoKind::fattree;
  else if (kind == "dragonfly")
    topo.kind = TopoKind::dragonfly;
  else if (kind == "torus")
    topo.kind = TopoKind::torus;
  else
    fail(ErrorKind::invalid_argument, "unknown topology '" + kind + "'");
  topo.ranks_per_node = t.contains("ranks_per_node") ? nb::cast<int64_t>(t["ranks_per_node"]) : 1;
  topo.intra = get(t, "intra", 0);
  topo.hop = get(t, "hop", 0);
  topo.global = get(t, "global", 0);
  topo.k = t.contains("k") ? nb::cast<int64_t>(t["k"]) : 2;
  topo.p = t.contains("p") ? nb::cast<int64_t>(t["p"]) : 1;
  topo.a = t.contains("a") ? nb::cast<int64_t>(t["a"]) : 1;
  if (t.contains("dims")) topo.dims = nb::cast<std::vector<int64_t>>(t["dims"]);
  return topo;
}

ModelParams model(const std::string& name, const nb::dict& p) {
  ModelParams m;
  m.kind = model_from_string(name);
  m.alpha = get(p, "alpha", m.alpha);
  m.beta = get(p, "beta", m.beta);
  m.alpha_p = get(p, "alpha_p", m.alpha_p);
  m.alpha_r = get(p, "alpha_r", m.alpha_r);
  m.L = get(p, "L", m.L);
  m.o = get(p, "o", m.o);
  m.g = get(p, "g", m.g);
  m.G = get(p, "G", m.G);
  m.O = get(p, "O", m.O);
  m.S = get(p, "S", m.S);
  m.gamma = get(p, "gamma", m.gamma);
  m.reduce_base = get(p, "reduce_base", m.reduce_base);
  m.copy_beta = get(p, "copy_beta", m.copy_beta);
  return normalized(m);
}

nb::dict result_dict(SimResult&& r) {
  nb::dict d;
  d["P"] = r.P;
  d["messages"] = r.messages;
  d["bytes"] = r.bytes;
  d["ops"] = r.ops;
  d["events"] = r.events;
  d["load_seconds"] = r.load_seconds;
  d["run_seconds"] = r.run_seconds;
  d["load_cpu_seconds"] = r.load_cpu_seconds;
  d["run_cpu_seconds"] = r.run_cpu_seconds;
  d["memory_bytes"] = r.memory_bytes;
  d["finish"] = to_numpy(std::move(r.finish));
  d["makespans"] = to_numpy(std::move(r.makespans));
  if (!r.op_start.empty() || !r.rank_op_begin.empty()) {
    d["rank_op_begin"] = to_numpy(std::move(r.rank_op_begin));
    d["op_start"] = to_numpy(std::move(r.op_start));
    d["op_end"] = to_numpy(std::move(r.op_end));
    d["critical_path"] = to_numpy(std::move(r.critical_path));
    d["msg_send"] = to_numpy(std::move(r.msg_send));
    d["msg_recv"] = to_numpy(std::move(r.msg_recv));
    d["msg_depart"] = to_numpy(std::move(r.msg_depart));
    d["msg_arrive"] = to_numpy(std::move(r.msg_arrive));
  }
  return d;
}

}  // namespace

void bind_sim(nb::module_& m) {
  m.def(
      "simulate",
      [](nb::object source, int64_t P, int64_t count, int32_t elem_size, int64_t root,
         const std::string& model_name, const nb::dict& params, const std::string& noise_kind,
         double noise_a, double noise_b, std::vector<double> noise_samples,
         const std::string& skew_kind, double skew_a, double skew_b,
         std::vector<double> skew_samples, const nb::dict& topo, int64_t trials, uint64_t seed,
         bool record) {
        SimOptions o;
        o.model = model(model_name, params);
        o.noise = distribution(noise_kind, noise_a, noise_b, std::move(noise_samples));
        o.skew = distribution(skew_kind, skew_a, skew_b, std::move(skew_samples));
        o.topology = topology(topo);
        o.trials = trials;
        o.seed = seed;
        o.record = record;
        if (nb::isinstance<Schedule>(source)) {
          const Schedule& s = nb::cast<const Schedule&>(source);
          SimResult r;
          {
            nb::gil_scoped_release release;
            r = simulate(s, o);
          }
          return result_dict(std::move(r));
        }
        const Algorithm& a = nb::cast<const Algorithm&>(source);
        Bound b = a.bind(P, count, elem_size, root);
        SimResult r;
        {
          nb::gil_scoped_release release;
          r = simulate(b, o);
        }
        return result_dict(std::move(r));
      },
      nb::arg("source"), nb::arg("P"), nb::arg("count"), nb::arg("elem_size"), nb::arg("root"),
      nb::arg("model"), nb::arg("params"), nb::arg("noise_kind"), nb::arg("noise_a"),
      nb::arg("noise_b"), nb::arg("noise_samples"), nb::arg("skew_kind"), nb::arg("skew_a"),
      nb::arg("skew_b"), nb::arg("skew_samples"), nb::arg("topology"), nb::arg("trials"),
      nb::arg("seed"), nb::arg("record"),
      "Simulate a Schedule, or an Algorithm bound to (P, count, elem_size, root). Times in ns.");
}

}  // namespace collkit::py
