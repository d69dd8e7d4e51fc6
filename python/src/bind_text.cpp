// Schedule formats: the text form, GOAL, and the field checks JSON import goes through.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "arrays.hpp"
#include "bindings.hpp"
#include "collkit/error.hpp"
#include "collkit/goal.hpp"
#include "collkit/json.hpp"
#include "collkit/registry.hpp"
#include "collkit/text.hpp"

namespace nb = nanobind;

namespace collkit::py {

void bind_text(nb::module_& m) {
  // Streams an algorithm's schedule to a file (or, with an empty path, to `write`, a Python
  // callable such as sys.stdout.write, in pieces of about a megabyte), each rank generated and
  // written in turn: memory of one rank's program whatever P (a whole Schedule in GOAL took
  // ~290 B per op). JSON reads the ranks once per column.
  m.def(
      "write_schedule",
      [](const Algorithm& a, int64_t P, int64_t count, int32_t elem_size, int64_t root,
         const std::string& format, const std::string& path, double reduce_ns_per_byte,
         double copy_ns_per_byte, nb::object write, int64_t rpn, const std::string& order,
         std::vector<int64_t> counts, std::vector<int64_t> in_displs,
         std::vector<int64_t> out_displs) {
        if (format != "text" && format != "goal" && format != "json")
          fail(ErrorKind::invalid_argument, "unknown format '" + format + "'");
        if (path.empty() && write.is_none())
          fail(ErrorKind::invalid_argument, "write_schedule needs a path or a write callable");
        Bound b =
            a.bind(P, count, elem_size, root, Placement{rpn, node_order_from_string(order)},
                   CountVectors{std::move(counts), std::move(in_displs), std::move(out_displs)});
        nb::gil_scoped_release unlock;
        std::FILE* f = nullptr;
        if (!path.empty()) {
          f = std::fopen(path.c_str(), "wb");
          if (f == nullptr)
            fail(ErrorKind::invalid_argument, "cannot write " + path + ": " + std::strerror(errno));
        }
        uint64_t written = 0;
        bool ok = true;
        std::string pending;  // for `write`: pieces gathered to about a megabyte
        auto to_python = [&] {
          nb::gil_scoped_acquire gil;
          write(nb::str(pending.data(), pending.size()));
          pending.clear();
        };
        RankProgram p;
        auto rank = [&](int64_t r) {
          b.generate_rank(r, p);
          return p.view();
        };
        auto sink = [&](std::string_view t) {
          written += t.size();
          if (f != nullptr) {
            ok = ok && std::fwrite(t.data(), 1, t.size(), f) == t.size();
            return;
          }
          pending += t;
          if (pending.size() >= (size_t{1} << 20)) to_python();
        };
        try {
          if (format == "text") {
            write_text(b.header(), rank, sink);
          } else if (format == "json") {
            write_json(b.header(), rank, sink);
          } else {
            GoalOptions o;
            o.reduce_ns_per_byte = reduce_ns_per_byte;
            o.copy_ns_per_byte = copy_ns_per_byte;
            // a file is removed on a refusal half-way; what went to `write` cannot be
            if (f == nullptr) check_goal_calcs(b.header(), rank, o);
            write_goal(b.header(), rank, sink, o);
          }
          if (f == nullptr && !pending.empty()) to_python();
        } catch (...) {
          if (f != nullptr) {  // a refusal half-way (a GOAL calc past 2^63 ns): no half file
            std::fclose(f);
            std::remove(path.c_str());
          }
          throw;
        }
        if (f != nullptr) {
          ok = (std::fclose(f) == 0) && ok;
          if (!ok) fail(ErrorKind::invalid_argument, "cannot write " + path + ": disk full?");
        }
        return written;
      },
      nb::arg("algorithm"), nb::arg("P"), nb::arg("count"), nb::arg("elem_size"), nb::arg("root"),
      nb::arg("format"), nb::arg("path"), nb::arg("reduce_ns_per_byte") = 0.0,
      nb::arg("copy_ns_per_byte") = 0.0, nb::arg("write") = nb::none(), nb::arg("rpn") = 0,
      nb::arg("order") = "contiguous", nb::arg("counts") = std::vector<int64_t>{},
      nb::arg("in_displs") = std::vector<int64_t>{},
      nb::arg("out_displs") = std::vector<int64_t>{});

  m.def(
      "load_json_file",
      [](const std::string& path) {
        nb::gil_scoped_release unlock;
        Schedule s;
        read_json_file(
            path, [&](const ScheduleHeader& h) { s = Schedule(h); },
            [&](const RankView& r) { s.append_rank(r); });
        return s;
      },
      nb::arg("path"), "A JSON schedule file read by the streaming reader (the simulator's).");
  m.def(
      "from_json",
      [](nb::bytes text) {
        const std::string_view t(text.c_str(), text.size());
        nb::gil_scoped_release unlock;
        Schedule s;
        read_json_text(
            t, [&](const ScheduleHeader& h) { s = Schedule(h); },
            [&](const RankView& r) { s.append_rank(r); });
        return s;
      },
      nb::arg("text"), "A JSON schedule from its UTF-8 text (the same reader as load_json_file).");
  m.def("to_json", [](const Schedule& s) {
    nb::gil_scoped_release unlock;
    return to_json(s);
  });
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
         int32_t elem_size, int64_t root, int64_t rpn, const std::string& order,
         std::vector<int64_t> counts, std::vector<int64_t> in_displs,
         std::vector<int64_t> out_displs) {
        ScheduleHeader h;
        h.placement = Placement{rpn, node_order_from_string(order)};
        h.collective = collective_from_string(collective);
        h.algorithm = algorithm;
        h.P = P;
        h.count = count;
        h.elem_size = elem_size;
        h.root = root;
        h.counts = std::move(counts);
        h.in_displs = std::move(in_displs);
        h.out_displs = std::move(out_displs);
        check_counts(h);
        return header_to_text(h);
      },
      nb::arg("collective"), nb::arg("algorithm"), nb::arg("P"), nb::arg("count"),
      nb::arg("elem_size"), nb::arg("root"), nb::arg("rpn") = 0, nb::arg("order") = "contiguous",
      nb::arg("counts") = std::vector<int64_t>{}, nb::arg("in_displs") = std::vector<int64_t>{},
      nb::arg("out_displs") = std::vector<int64_t>{});
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
  m.def("check_fields", [](const Schedule& s) { check_fields(s); });
}

}  // namespace collkit::py
