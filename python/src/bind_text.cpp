// Schedule formats: the text form, GOAL, and the field checks JSON import goes through.
#include <nanobind/stl/string.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "arrays.hpp"
#include "bindings.hpp"
#include "collkit/error.hpp"
#include "collkit/goal.hpp"
#include "collkit/registry.hpp"
#include "collkit/text.hpp"

namespace nb = nanobind;

namespace collkit::py {

void bind_text(nb::module_& m) {
  // Streams an algorithm's schedule to a file, each rank generated and written in turn: memory
  // of one rank's program whatever P (a whole Schedule in GOAL took ~290 B per op).
  m.def(
      "write_schedule",
      [](const Algorithm& a, int64_t P, int64_t count, int32_t elem_size, int64_t root,
         const std::string& format, const std::string& path, double reduce_ns_per_byte,
         double copy_ns_per_byte, int64_t rpn, const std::string& order) {
        if (format != "text" && format != "goal")
          fail(ErrorKind::invalid_argument, "streaming writes text or goal, not '" + format + "'");
        Bound b = a.bind(P, count, elem_size, root, Placement{rpn, node_order_from_string(order)});
        nb::gil_scoped_release unlock;
        std::FILE* f = std::fopen(path.c_str(), "wb");
        if (f == nullptr)
          fail(ErrorKind::invalid_argument, "cannot write " + path + ": " + std::strerror(errno));
        uint64_t written = 0;
        bool ok = true;
        RankProgram p;
        auto rank = [&](int64_t r) {
          b.generate_rank(r, p);
          return p.view();
        };
        auto sink = [&](std::string_view t) {
          ok = ok && std::fwrite(t.data(), 1, t.size(), f) == t.size();
          written += t.size();
        };
        if (format == "text") {
          write_text(b.header(), rank, sink);
        } else {
          GoalOptions o;
          o.reduce_ns_per_byte = reduce_ns_per_byte;
          o.copy_ns_per_byte = copy_ns_per_byte;
          write_goal(b.header(), rank, sink, o);
        }
        ok = (std::fclose(f) == 0) && ok;
        if (!ok) fail(ErrorKind::invalid_argument, "cannot write " + path + ": disk full?");
        return written;
      },
      nb::arg("algorithm"), nb::arg("P"), nb::arg("count"), nb::arg("elem_size"), nb::arg("root"),
      nb::arg("format"), nb::arg("path"), nb::arg("reduce_ns_per_byte") = 0.0,
      nb::arg("copy_ns_per_byte") = 0.0, nb::arg("rpn") = 0, nb::arg("order") = "contiguous");

  m.def("to_text", [](const Schedule& s) {
    nb::gil_scoped_release unlock;
    return to_text(s);
  });
  // Parsers take UTF-8 bytes: the Python side encodes, so any str (even one with lone
  // surrogates) ends in a collkit error, never in a binding TypeError.
  m.def("from_text", [](const nb::bytes& t) {
    std::string_view v(t.c_str(), t.size());
    nb::gil_scoped_release unlock;
    return from_text(v);
  });
  m.def("header_to_text", [](const Schedule& s) { return header_to_text(s.header); });
  m.def(
      "header_text",
      [](const std::string& collective, const std::string& algorithm, int64_t P, int64_t count,
         int32_t elem_size, int64_t root, int64_t rpn, const std::string& order) {
        ScheduleHeader h;
        h.placement = Placement{rpn, node_order_from_string(order)};
        h.collective = collective_from_string(collective);
        h.algorithm = algorithm;
        h.P = P;
        h.count = count;
        h.elem_size = elem_size;
        h.root = root;
        return header_to_text(h);
      },
      nb::arg("collective"), nb::arg("algorithm"), nb::arg("P"), nb::arg("count"),
      nb::arg("elem_size"), nb::arg("root"), nb::arg("rpn") = 0, nb::arg("order") = "contiguous");
  m.def("rank_to_text",
        [](const Schedule& s, int64_t rank) { return rank_to_text(s.header, s.rank(rank)); });
  m.def("rank_program_to_text",
        [](const RankProgram& p) { return rank_to_text(ScheduleHeader{}, p.view()); });
  m.def(
      "to_goal",
      [](const Schedule& s, double reduce_ns_per_byte, double copy_ns_per_byte) {
        GoalOptions o;
        o.reduce_ns_per_byte = reduce_ns_per_byte;
        o.copy_ns_per_byte = copy_ns_per_byte;
        nb::gil_scoped_release unlock;
        return to_goal(s, o);
      },
      nb::arg("schedule"), nb::arg("reduce_ns_per_byte") = 0.0, nb::arg("copy_ns_per_byte") = 0.0);
  m.def("from_goal", [](const nb::bytes& t) {
    std::string_view v(t.c_str(), t.size());
    nb::gil_scoped_release unlock;
    return from_goal(v);
  });
  // A JSON array of integers, "[1,2,3]": json.dumps of a list of millions of ints is the
  // slow part of writing a large schedule as JSON.
  m.def("json_int_array", [](const In1<int64_t>& a) {
    std::string out;
    out.reserve(a.shape(0) * 4 + 2);
    out.push_back('[');
    char buf[24];
    for (size_t i = 0; i < a.shape(0); ++i) {
      if (i) out.push_back(',');
      auto r = std::to_chars(buf, buf + sizeof buf, a(i));
      out.append(buf, r.ptr);
    }
    out.push_back(']');
    return out;
  });
  m.def("check_fields", [](const Schedule& s) { check_fields(s); });
}

}  // namespace collkit::py
