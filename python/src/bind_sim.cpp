// The simulator: one entry point taking a Schedule or an Algorithm (pulled rank by rank) and a
// SimOptions object (model, noise, skew, topology, trials), returning numpy arrays; and the
// model parameter table of sim/model.hpp. The typed API and the parsing of units live in
// collkit/sim/.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "arrays.hpp"
#include "bindings.hpp"
#include "collkit/error.hpp"
#include "collkit/goal.hpp"
#include "collkit/json.hpp"
#include "collkit/registry.hpp"
#include "collkit/sim/engine.hpp"
#include "collkit/text.hpp"

namespace nb = nanobind;

namespace collkit::py {
namespace {

using namespace collkit::sim;

// A registered model by name or alias, parameters by the names the models declare (sim/model.hpp);
// an unknown name or a bad value is an error here, before any run.
ModelParams model(const std::string& name, const nb::dict& params) {
  ModelParams m;
  m.model = std::string(find_model(name).name);
  for (auto [key, value] : params) m.set(nb::cast<std::string>(key), nb::cast<double>(value));
  make_model(m);  // checks the values
  return m;
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
  else if (kind == "trace")
    d.kind = DistKind::trace;
  else
    fail(ErrorKind::invalid_argument, "unknown distribution '" + kind + "'");
  d.a = a;
  d.b = b;
  d.samples = std::move(samples);
  return d;
}

TopoKind topo_kind(const std::string& kind) {
  if (kind == "none") return TopoKind::none;
  if (kind == "fattree") return TopoKind::fattree;
  if (kind == "dragonfly") return TopoKind::dragonfly;
  if (kind == "torus") return TopoKind::torus;
  fail(ErrorKind::invalid_argument, "unknown topology '" + kind + "'");
}

// The options with a poll of Python's signals (every 2^16 events, the GIL taken for it): Ctrl-C
// stops a long simulation at once, as KeyboardInterrupt, instead of when the engine finishes.
SimOptions interruptible(const SimOptions& o) {
  SimOptions out = o;
  out.interrupted = [] {
    nb::gil_scoped_acquire lock;
    return PyErr_CheckSignals() != 0;
  };
  return out;
}

// A numpy array over one of a result's vectors, kept alive by the Python object that holds it.
template <typename T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> view(std::vector<T>& v, nb::handle owner) {
  return nb::ndarray<nb::numpy, T, nb::ndim<1>>(v.data(), {v.size()}, owner);
}

// The result's vectors by their Python names.
template <typename T>
void bind_array(nb::class_<SimResult>& c, const char* name, std::vector<T> SimResult::* field) {
  c.def_prop_ro(name,
                [field](nb::handle self) { return view(nb::cast<SimResult&>(self).*field, self); });
}

}  // namespace

void bind_sim(nb::module_& m) {
  // The one result type: the core's SimResult as it is (times in ns; arrays are numpy views of
  // it). collkit.SimResult holds one with what was simulated (algorithm, model, noise, ...).
  nb::class_<SimResult> result(m, "SimResult");
  result.def_ro("P", &SimResult::P)
      .def_ro("messages", &SimResult::messages)
      .def_ro("bytes_sent", &SimResult::bytes)
      .def_ro("ops", &SimResult::ops)
      .def_ro("events", &SimResult::events)
      .def_ro("load_seconds", &SimResult::load_seconds)
      .def_ro("run_seconds", &SimResult::run_seconds)
      .def_ro("load_cpu_seconds", &SimResult::load_cpu_seconds)
      .def_ro("run_cpu_seconds", &SimResult::run_cpu_seconds)
      .def_ro("memory_bytes", &SimResult::memory_bytes)
      .def_ro("programs", &SimResult::programs)
      .def_ro("programs_read", &SimResult::programs_read)
      .def_ro("peak_ranks_held", &SimResult::peak_ranks_held)
      .def_prop_ro("recorded", [](const SimResult& r) {
        return !r.op_start.empty() || !r.rank_op_begin.empty();
      });
  bind_array(result, "finish", &SimResult::finish);
  bind_array(result, "makespans", &SimResult::makespans);
  bind_array(result, "rank_op_begin", &SimResult::rank_op_begin);
  bind_array(result, "op_start", &SimResult::op_start);
  bind_array(result, "op_end", &SimResult::op_end);
  bind_array(result, "critical_path", &SimResult::critical_path);
  bind_array(result, "msg_send", &SimResult::msg_send);
  bind_array(result, "msg_recv", &SimResult::msg_recv);
  bind_array(result, "msg_depart", &SimResult::msg_depart);
  bind_array(result, "msg_arrive", &SimResult::msg_arrive);

  // The models' parameters, as each model file declares them (sim/model.hpp): name, unit,
  // meaning, default, the models that use each (all of them for a local op's parameter) and
  // whether it is a local op's.
  m.def("model_params", [] {
    nb::list out;
    for (const ParamUse& u : all_params()) {
      nb::dict d;
      d["name"] = std::string(u.info.name);
      d["unit"] = std::string(u.info.unit);
      d["doc"] = std::string(u.info.doc);
      d["default"] = u.info.default_value;
      nb::list models;
      for (std::string_view k : u.models) models.append(std::string(k));
      d["models"] = models;
      d["local"] = u.local;
      out.append(d);
    }
    return out;
  });
  // The registered models, in their order: name, aliases, meaning, own parameters' names, the
  // engine's rules they follow ("port" or "loggops").
  m.def("models", [] {
    nb::list out;
    for (const ModelInfo* mi : models()) {
      nb::dict d;
      d["name"] = std::string(mi->name);
      nb::list aliases, params;
      for (std::string_view a : mi->aliases) aliases.append(std::string(a));
      for (const ParamInfo& p : mi->params) params.append(std::string(p.name));
      d["aliases"] = aliases;
      d["doc"] = std::string(mi->doc);
      d["params"] = params;
      d["rules"] = mi->rules == Rules::port ? "port" : "loggops";
      out.append(d);
    }
    return out;
  });

  // The registry's problems (sim/model.hpp's check_models): empty unless a model file declares a
  // parameter unlike another model, or takes another's name; the tests fail while it is not.
  m.def("model_problems", [] {
    nb::list out;
    for (const std::string& p : model_problems()) out.append(p);
    return out;
  });

  // The options of a run, one object (what collkit.simulate fills from its typed arguments).
  nb::class_<SimOptions>(m, "SimOptions")
      .def(nb::init<>())
      .def(
          "set_model",
          [](SimOptions& o, const std::string& name, const nb::dict& params) {
            o.model = model(name, params);
          },
          nb::arg("name"), nb::arg("params"), "Model by name; params by their names (ns, B).")
      .def(
          "set_noise",
          [](SimOptions& o, const std::string& kind, double a, double b,
             std::vector<double> samples) {
            o.noise = distribution(kind, a, b, std::move(samples));
            validate(o.noise, "noise");
          },
          nb::arg("kind"), nb::arg("a") = 0.0, nb::arg("b") = 0.0,
          nb::arg("samples") = std::vector<double>{})
      .def(
          "set_skew",
          [](SimOptions& o, const std::string& kind, double a, double b,
             std::vector<double> samples) {
            o.skew = distribution(kind, a, b, std::move(samples));
            validate(o.skew, "skew");
          },
          nb::arg("kind"), nb::arg("a") = 0.0, nb::arg("b") = 0.0,
          nb::arg("samples") = std::vector<double>{})
      .def(
          "set_topology",
          [](SimOptions& o, const std::string& kind, int64_t ranks_per_node, double intra,
             double hop, double global, int64_t k, int64_t p, int64_t a, std::vector<int64_t> dims,
             double link) {
            Topology t;
            t.kind = topo_kind(kind);
            t.ranks_per_node = ranks_per_node;
            t.intra = intra;
            t.hop = hop;
            t.global = global;
            t.k = k;
            t.p = p;
            t.a = a;
            t.dims = std::move(dims);
            t.link = link;
            o.topology = std::move(t);
          },
          nb::arg("kind"), nb::arg("ranks_per_node") = 0, nb::arg("intra") = 0.0,
          nb::arg("hop") = 0.0, nb::arg("global_") = 0.0, nb::arg("k") = 2, nb::arg("p") = 1,
          nb::arg("a") = 1, nb::arg("dims") = std::vector<int64_t>{}, nb::arg("link") = 0.0)
      .def_rw("trials", &SimOptions::trials)
      .def_rw("seed", &SimOptions::seed)
      .def_rw("record", &SimOptions::record);

  m.def(
      "simulate",
      [](nb::object source, int64_t P, int64_t count, int32_t elem_size, int64_t root,
         const SimOptions& opts, int64_t rpn, const std::string& order, std::vector<int64_t> counts,
         std::vector<int64_t> in_displs, std::vector<int64_t> out_displs) {
        SimOptions o = interruptible(opts);
        SimResult r;
        try {
          if (nb::isinstance<Schedule>(source)) {
            const Schedule& s = nb::cast<const Schedule&>(source);
            nb::gil_scoped_release release;
            r = simulate(s, o);
          } else {
            const Algorithm& a = nb::cast<const Algorithm&>(source);
            Bound b = a.bind(
                P, count, elem_size, root, Placement{rpn, node_order_from_string(order)},
                CountVectors{std::move(counts), std::move(in_displs), std::move(out_displs)});
            nb::gil_scoped_release release;
            r = simulate(b, o);
          }
        } catch (const SimInterrupted&) {
          throw nb::python_error();  // the KeyboardInterrupt PyErr_CheckSignals raised
        }
        return r;
      },
      nb::arg("source"), nb::arg("P"), nb::arg("count"), nb::arg("elem_size"), nb::arg("root"),
      nb::arg("options"), nb::arg("rpn") = 0, nb::arg("order") = "contiguous",
      nb::arg("counts") = std::vector<int64_t>{}, nb::arg("in_displs") = std::vector<int64_t>{},
      nb::arg("out_displs") = std::vector<int64_t>{},
      "Simulate a Schedule, or an Algorithm bound to (P, count, elem_size, root) and placed "
      "rpn to a node (0: not given). Times in ns.");

  m.def(
      "simulate_file",
      [](const std::string& path, const std::string& format, const SimOptions& opts) {
        SimOptions o = interruptible(opts);
        if (format != "text" && format != "goal" && format != "json")
          fail(ErrorKind::invalid_argument, "streams text, goal or json, not '" + format + "'");
        auto stream = format == "text" ? read_text : read_goal;
        auto read = [&](std::istream& in, const std::function<void(const ScheduleHeader&)>& h,
                        const std::function<void(const RankView&)>& r) {
          if (format == "json")
            read_json_file(path, h, r);
          else
            stream(in, h, r);
        };
        std::ifstream in(path, std::ios::binary);
        if (!in)
          fail(ErrorKind::invalid_argument, "cannot read " + path + ": " + std::strerror(errno));
        ScheduleHeader header;
        SimResult r;
        try {
          nb::gil_scoped_release release;
          r = simulate_stream(
              [&](const auto& on_header, const auto& on_rank) {
                read(
                    in,
                    [&](const ScheduleHeader& h) {
                      header = h;
                      on_header(h);
                    },
                    on_rank);
              },
              o);
        } catch (const SimInterrupted&) {
          throw nb::python_error();
        }
        nb::dict d;
        d["collective"] = std::string(to_string(header.collective));
        d["algorithm"] = header.algorithm;
        d["count"] = header.count;
        d["elem_size"] = header.elem_size;
        d["root"] = header.root;
        d["rpn"] = header.placement.rpn;
        d["order"] = std::string(to_string(header.placement.order));
        d["P"] = header.P;
        return nb::make_tuple(std::move(r), d);
      },
      nb::arg("path"), nb::arg("format"), nb::arg("options"),
      "Simulate a schedule in the text form, GOAL or JSON, parsed from the file as it is read "
      "(rank by rank; a plain GOAL file is held until its end, where its messages are paired)");
}

}  // namespace collkit::py
