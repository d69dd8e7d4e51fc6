// The name grammar, the registry and generation.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "collkit/collective.hpp"
#include "collkit/error.hpp"
#include "collkit/name.hpp"
#include "collkit/registry.hpp"

namespace nb = nanobind;

namespace collkit::py {
namespace {

// Python text to UTF-8; a string that cannot be encoded (a lone surrogate) is bad input, not a
// TypeError from the binding layer.
std::string utf8(nb::handle text, ErrorKind kind, const char* what) {
  if (!PyUnicode_Check(text.ptr()))
    fail(kind,
         std::string(what) + " must be a str, not " +
             nb::borrow<nb::str>(
                 nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(text.ptr()))).attr("__name__"))
                 .c_str());
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(text.ptr(), &n);
  if (!s) {
    PyErr_Clear();
    fail(kind, std::string(what) + " is not valid Unicode text (it holds a lone surrogate)");
  }
  return std::string(s, static_cast<size_t>(n));
}

const char* type_name(ParamType t) {
  switch (t) {
    case ParamType::integer:
      return "integer";
    case ParamType::size:
      return "size";
    case ParamType::word:
      return "word";
    case ParamType::list:
      return "list";
    case ParamType::algorithm:
      return "algorithm";
  }
  return "?";
}

// The placement arguments every generating call takes: rpn 0 is "not given".
Placement placement_arg(int64_t rpn, const std::string& order) {
  return Placement{rpn, node_order_from_string(order)};
}

nb::dict spec_dict(const AlgorithmSpec& s) {
  nb::dict d;
  d["collective"] = std::string(to_string(s.collective));
  d["name"] = std::string(to_string(s.collective)) + ":" + s.name;
  d["summary"] = s.summary;
  d["phases"] = s.phases;
  d["cost"] = s.cost;
  d["reference"] = s.reference;
  nb::list equivalents;
  for (const auto& e : s.mpi_equivalents) equivalents.append(e);
  d["mpi_equivalents"] = equivalents;
  nb::list params;
  for (const auto& p : s.params) {
    nb::dict pd;
    pd["name"] = p.name;
    pd["type"] = type_name(p.type);
    pd["default"] = p.default_value;
    pd["min"] = p.min == INT64_MIN ? nb::object(nb::none()) : nb::int_(p.min);
    pd["max"] = p.max == INT64_MAX ? nb::object(nb::none()) : nb::int_(p.max);
    pd["doc"] = p.doc;
    nb::list colls;
    for (Collective c : p.collectives) colls.append(std::string(to_string(c)));
    pd["collectives"] = colls;
    nb::list grid;
    for (const auto& v : p.grid) grid.append(v);
    pd["grid"] = grid;
    params.append(pd);
  }
  d["params"] = params;
  nb::dict r;
  r["commutative_op"] = s.restrictions.commutative_op;
  r["exact_op"] = s.restrictions.exact_op;
  r["power_of_two"] = s.restrictions.power_of_two;
  r["min_P"] = s.restrictions.min_P;
  r["max_P"] = s.restrictions.max_P;
  r["needs_placement"] = s.restrictions.needs_placement;
  r["all_counts"] = s.restrictions.all_counts;
  d["restrictions"] = r;
  d["has_model"] = static_cast<bool>(s.model);
  nb::list grid;
  for (const auto& name : parameter_grid(s)) grid.append(name);
  d["grid"] = grid;
  return d;
}

// Parsed parameter values: integers (integer and size parameters), words, lists of words.
nb::dict params_dict(const Algorithm& a) {
  nb::dict d;
  for (const ParamSpec& p : a.spec().params) {
    if (!a.params().has(p.name)) continue;
    if (p.type == ParamType::integer || p.type == ParamType::size)
      d[p.name.c_str()] = a.params().integer(p.name);
    else if (p.type == ParamType::word)
      d[p.name.c_str()] = a.params().word(p.name);
    else if (p.type == ParamType::algorithm)
      d[p.name.c_str()] = a.params().algorithm(p.name).canonical();
    else
      d[p.name.c_str()] = a.params().list(p.name);
  }
  return d;
}

const char* blocks_name(Blocks b) {
  return b == Blocks::none ? "none" : b == Blocks::one ? "one" : "P";
}
const char* ranks_name(Ranks r) {
  return r == Ranks::none ? "none" : r == Ranks::every_rank ? "every_rank" : "root";
}
const char* index_name(SourceIndex i) {
  return i == SourceIndex::same        ? "same"
         : i == SourceIndex::own_block ? "own_block"
                                       : "within_block";
}

nb::dict shape_dict(const BufferShape& s) {
  nb::dict d;
  d["at_root"] = blocks_name(s.at_root);
  d["elsewhere"] = blocks_name(s.elsewhere);
  return d;
}

// A CollectiveSpec as plain data: Python lists, validates and documents collectives from it.
// The vectors of an irregular call, as the generating calls take them (empty: regular).
CountVectors vectors(std::vector<int64_t> counts, std::vector<int64_t> in_displs,
                     std::vector<int64_t> out_displs) {
  return CountVectors{std::move(counts), std::move(in_displs), std::move(out_displs)};
}

nb::dict collective_dict(const CollectiveSpec& c) {
  nb::dict d;
  d["name"] = std::string(c.name);
  d["mpi"] = std::string(c.mpi);
  d["summary"] = std::string(c.summary);
  d["rooted"] = c.rooted;
  d["reduction"] = c.reduction();
  d["in"] = shape_dict(c.in);
  d["out"] = shape_dict(c.out);
  d["root_input_in_out"] = c.root_input_in_out;
  d["in_place"] = ranks_name(c.in_place);
  d["in_place_at"] = index_name(c.in_place_at);
  d["in_place_out_at"] = index_name(c.in_place_out_at);
  nb::dict post;
  using K = Postcondition::Kind;
  post["kind"] = c.post.kind == K::reduced  ? "reduced"
                 : c.post.kind == K::copied ? "copied"
                                            : "synchronized";
  post["source"] = c.post.source == Source::all           ? "all"
                   : c.post.source == Source::root        ? "root"
                   : c.post.source == Source::block_owner ? "block_owner"
                   : c.post.source == Source::prefix      ? "prefix"
                                                          : "exclusive_prefix";
  post["index"] = index_name(c.post.index);
  post["ranks"] = ranks_name(c.post.ranks);
  d["postcondition"] = post;
  d["counts"] = c.counts == Counts::none       ? "none"
                : c.counts == Counts::per_rank ? "per_rank"
                                               : "per_pair";
  d["in_displs"] = c.in_displs();
  d["out_displs"] = c.out_displs();
  return d;
}

}  // namespace

void bind_registry(nb::module_& m) {
  m.def("parse_name", [](nb::handle text) {
    ParsedName p = parse_name(utf8(text, ErrorKind::name, "an algorithm name"));
    nb::dict d;
    d["collective"] = std::string(to_string(p.collective));
    d["algorithm"] = p.algorithm;
    nb::list args;
    for (const auto& a : p.args) args.append(nb::make_tuple(a.key, a.value));
    d["args"] = args;
    return d;
  });
  m.def("parse_call", [](nb::handle text) {
    ParsedCall c = parse_call(utf8(text, ErrorKind::invalid_argument, "a spec"));
    nb::list args;
    for (const auto& a : c.args) args.append(nb::make_tuple(a.key, a.value));
    return nb::make_tuple(c.kind, args);
  });
  m.def("parse_row_name", [](nb::handle text) {
    RowName r = parse_row_name(utf8(text, ErrorKind::name, "an algorithm name"));
    nb::dict d;
    d["kind"] = r.kind == RowName::Kind::collkit  ? "collkit"
                : r.kind == RowName::Kind::native ? "native"
                                                  : "mpi";
    d["impl"] = r.impl;
    d["algorithm"] = r.algorithm;
    d["collective"] = r.has_collective
                          ? nb::object(nb::str(std::string(to_string(r.parsed.collective)).c_str()))
                          : nb::object(nb::none());
    return d;
  });
  m.def("mpi_impls", [] { return std::string(mpi_impl_names()); });
  m.def("parse_size",
        [](nb::handle t) { return parse_size(utf8(t, ErrorKind::invalid_argument, "a size")); });
  m.def("format_size", &format_size);
  m.def("collectives", [] {
    nb::list l;
    for (const CollectiveSpec& c : all_collectives()) l.append(collective_dict(c));
    return l;
  });
  m.def(
      "buffer_elems",
      [](const std::string& collective, const std::string& buffer, int64_t P, int64_t count,
         int64_t root, int64_t rank) {
        const CollectiveSpec& c = spec_of(collective_from_string(collective));
        if (buffer != "in" && buffer != "out")
          fail(ErrorKind::invalid_argument, "buffer must be 'in' or 'out', not '" + buffer + "'");
        return collkit::buffer_elems(buffer == "in" ? c.in : c.out, P, count, root, rank);
      },
      nb::arg("collective"), nb::arg("buffer"), nb::arg("P"), nb::arg("count"), nb::arg("root"),
      nb::arg("rank"));
  m.def("algorithms", [] {
    nb::list l;
    for (const auto* s : all_algorithms()) l.append(spec_dict(*s));
    return l;
  });

  nb::class_<Algorithm>(m, "Algorithm")
      .def(
          "__init__",
          [](Algorithm* self, nb::handle name) {
            new (self) Algorithm(utf8(name, ErrorKind::name, "an algorithm name"));
          },
          nb::arg("name"))
      .def_prop_ro("canonical", &Algorithm::canonical)
      .def_prop_ro("collective",
                   [](const Algorithm& a) { return std::string(to_string(a.collective())); })
      .def_prop_ro("spec", [](const Algorithm& a) { return spec_dict(a.spec()); })
      .def_prop_ro("params", &params_dict)
      .def(
          "cost",
          [](const Algorithm& a, int64_t P, double bytes, int64_t rpn, const std::string& order) {
            Cost c = a.cost(P, bytes, placement_arg(rpn, order));
            nb::dict d;
            d["alpha"] = c.alpha;
            d["beta"] = c.beta;
            d["gamma"] = c.gamma;
            return d;
          },
          nb::arg("P"), nb::arg("bytes"), nb::arg("rpn") = 0, nb::arg("order") = "contiguous")
      .def(
          "check",
          [](const Algorithm& a, int64_t P, int64_t count, int32_t elem_size, int64_t root,
             int64_t rpn, const std::string& order, const std::vector<int64_t>& counts,
             const std::vector<int64_t>& in_displs, const std::vector<int64_t>& out_displs) {
            (void)a.bind(P, count, elem_size, root, placement_arg(rpn, order),
                         vectors(counts, in_displs, out_displs));
          },
          nb::arg("P"), nb::arg("count"), nb::arg("elem_size") = 8, nb::arg("root") = 0,
          nb::arg("rpn") = 0, nb::arg("order") = "contiguous",
          nb::arg("counts") = std::vector<int64_t>{}, nb::arg("in_displs") = std::vector<int64_t>{},
          nb::arg("out_displs") = std::vector<int64_t>{})
      .def(
          "refusal",
          [](const Algorithm& a, int64_t P, int64_t count, int64_t elem_size, int64_t root,
             bool commutative, int64_t rpn, const std::string& order, bool full,
             const std::vector<int64_t>& counts, const std::vector<int64_t>& in_displs,
             const std::vector<int64_t>& out_displs, bool exact) {
            const CountVectors v = vectors(counts, in_displs, out_displs);
            return a.refusal(CallShape{P, count, elem_size, root, commutative,
                                       placement_arg(rpn, order), v.empty() ? nullptr : &v, exact},
                             full ? CallCheck::full : CallCheck::limits);
          },
          nb::arg("P"), nb::arg("count"), nb::arg("elem_size") = 8, nb::arg("root") = 0,
          nb::arg("commutative") = true, nb::arg("rpn") = 0, nb::arg("order") = "contiguous",
          nb::arg("full") = true, nb::arg("counts") = std::vector<int64_t>{},
          nb::arg("in_displs") = std::vector<int64_t>{},
          nb::arg("out_displs") = std::vector<int64_t>{}, nb::arg("exact") = false,
          "Why the algorithm cannot run this call (\"\" when it can): the registry's one answer, "
          "as the C API, the interposition library and the tuning-table check ask it.")
      .def(
          "needs_commutative",
          [](const Algorithm& a, int64_t rpn, const std::string& order) {
            return a.needs_commutative(placement_arg(rpn, order));
          },
          nb::arg("rpn") = 0, nb::arg("order") = "contiguous")
      .def(
          "generate",
          [](const Algorithm& a, int64_t P, int64_t count, int32_t elem_size, int64_t root,
             int64_t rpn, const std::string& order, const std::vector<int64_t>& counts,
             const std::vector<int64_t>& in_displs, const std::vector<int64_t>& out_displs) {
            Bound b = a.bind(P, count, elem_size, root, placement_arg(rpn, order),
                             vectors(counts, in_displs, out_displs));
            nb::gil_scoped_release unlock;
            return b.generate();
          },
          nb::arg("P"), nb::arg("count"), nb::arg("elem_size") = 8, nb::arg("root") = 0,
          nb::arg("rpn") = 0, nb::arg("order") = "contiguous",
          nb::arg("counts") = std::vector<int64_t>{}, nb::arg("in_displs") = std::vector<int64_t>{},
          nb::arg("out_displs") = std::vector<int64_t>{})
      .def(
          "generate_rank",
          [](const Algorithm& a, int64_t P, int64_t rank, int64_t count, int32_t elem_size,
             int64_t root, int64_t rpn, const std::string& order,
             const std::vector<int64_t>& counts, const std::vector<int64_t>& in_displs,
             const std::vector<int64_t>& out_displs) {
            RankProgram p;
            a.bind(P, count, elem_size, root, placement_arg(rpn, order),
                   vectors(counts, in_displs, out_displs))
                .generate_rank(rank, p);
            return p;
          },
          nb::arg("P"), nb::arg("rank"), nb::arg("count"), nb::arg("elem_size") = 8,
          nb::arg("root") = 0, nb::arg("rpn") = 0, nb::arg("order") = "contiguous",
          nb::arg("counts") = std::vector<int64_t>{}, nb::arg("in_displs") = std::vector<int64_t>{},
          nb::arg("out_displs") = std::vector<int64_t>{})
      .def(
          "count_ops",
          [](const Algorithm& a, int64_t P, int64_t count, int32_t elem_size, int64_t root,
             int64_t rpn, const std::string& order, const std::vector<int64_t>& counts,
             const std::vector<int64_t>& in_displs, const std::vector<int64_t>& out_displs) {
            // Generate every rank's program alone and drop it: streaming, constant memory.
            Bound b = a.bind(P, count, elem_size, root, placement_arg(rpn, order),
                             vectors(counts, in_displs, out_displs));
            nb::gil_scoped_release unlock;
            RankProgram p;
            uint64_t ops = 0;
            for (int64_t r = 0; r < P; ++r) {
              b.generate_rank(r, p);
              ops += p.ops.size();
              if ((r & 4095) == 4095) {  // Ctrl-C: P = 2^31 takes minutes
                nb::gil_scoped_acquire lock;
                if (PyErr_CheckSignals() != 0) throw nb::python_error();
              }
            }
            return ops;
          },
          nb::arg("P"), nb::arg("count"), nb::arg("elem_size") = 8, nb::arg("root") = 0,
          nb::arg("rpn") = 0, nb::arg("order") = "contiguous",
          nb::arg("counts") = std::vector<int64_t>{}, nb::arg("in_displs") = std::vector<int64_t>{},
          nb::arg("out_displs") = std::vector<int64_t>{});
}

}  // namespace collkit::py
