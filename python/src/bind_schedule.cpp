// Schedule and RankProgram: header fields, per-op numpy arrays, and construction from arrays
// (what JSON import and hand-edited schedules go through).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "arrays.hpp"
#include "bindings.hpp"
#include "collkit/error.hpp"
#include "collkit/schedule.hpp"
#include "collkit/text.hpp"

namespace nb = nanobind;

namespace collkit::py {
namespace {

// Per-op fields of a set of rank views, as a dict of numpy arrays.
nb::dict op_arrays(const std::vector<RankView>& ranks) {
  size_t n = 0, nd = 0;
  for (const auto& r : ranks) n += r.size(), nd += r.deps.size();
  std::vector<int64_t> rank(n), off(n), src_off(n), len(n), dep_begin(n + 1);
  std::vector<int32_t> peer(n);
  std::vector<uint8_t> kind(n), buf(n), src(n), side(n), cpu(n), nic(n);
  std::vector<uint16_t> stage(n);
  std::vector<uint32_t> deps;
  deps.reserve(nd);
  size_t i = 0;
  for (const auto& r : ranks) {
    for (size_t j = 0; j < r.size(); ++j, ++i) {
      const Op& op = r.ops[j];
      rank[i] = r.rank;
      kind[i] = static_cast<uint8_t>(op.kind);
      peer[i] = op.peer;
      buf[i] = op.buf;
      off[i] = op.off;
      src[i] = op.src;
      src_off[i] = op.src_off;
      len[i] = op.len;
      side[i] = static_cast<uint8_t>(op.side);
      cpu[i] = op.cpu;
      nic[i] = op.nic;
      stage[i] = r.stage[j];
      dep_begin[i] = static_cast<int64_t>(deps.size());
      for (OpId d : r.deps_of(j)) deps.push_back(d);
    }
  }
  dep_begin[n] = static_cast<int64_t>(deps.size());
  nb::dict d;
  d["rank"] = to_numpy(std::move(rank));
  d["kind"] = to_numpy(std::move(kind));
  d["peer"] = to_numpy(std::move(peer));
  d["buf"] = to_numpy(std::move(buf));
  d["off"] = to_numpy(std::move(off));
  d["src"] = to_numpy(std::move(src));
  d["src_off"] = to_numpy(std::move(src_off));
  d["len"] = to_numpy(std::move(len));
  d["side"] = to_numpy(std::move(side));
  d["cpu"] = to_numpy(std::move(cpu));
  d["nic"] = to_numpy(std::move(nic));
  d["stage"] = to_numpy(std::move(stage));
  d["dep_begin"] = to_numpy(std::move(dep_begin));
  d["deps"] = to_numpy(std::move(deps));
  return d;
}

template <typename T>
In1<T> field(const nb::dict& d, const char* name, size_t n) {
  if (!d.contains(name)) fail(ErrorKind::format, std::string("missing array '") + name + "'");
  In1<T> a;
  try {
    a = nb::cast<In1<T>>(d[name]);
  } catch (const nb::cast_error&) {
    fail(ErrorKind::format, std::string("array '") + name + "' has the wrong dtype or shape");
  }
  if (n != SIZE_MAX && a.shape(0) != n)
    fail(ErrorKind::format, std::string("array '") + name + "' has " + std::to_string(a.shape(0)) +
                                " entries, expected " + std::to_string(n));
  return a;
}

// Build a Schedule from the arrays that op_arrays writes plus `scratch_begin` / `scratch`.
Schedule from_arrays(const ScheduleHeader& h, const nb::dict& d) {
  if (h.P < 1) fail(ErrorKind::invalid_argument, "P must be >= 1");
  auto rank = field<int64_t>(d, "rank", SIZE_MAX);
  size_t n = rank.shape(0);
  auto kind = field<uint8_t>(d, "kind", n);
  auto peer = field<int32_t>(d, "peer", n);
  auto buf = field<uint8_t>(d, "buf", n);
  auto off = field<int64_t>(d, "off", n);
  auto src = field<uint8_t>(d, "src", n);
  auto src_off = field<int64_t>(d, "src_off", n);
  auto len = field<int64_t>(d, "len", n);
  auto side = field<uint8_t>(d, "side", n);
  auto stage = field<uint16_t>(d, "stage", n);
  // cpu and nic are optional (0 when absent): files written before they existed still read.
  const bool units = d.contains("cpu") || d.contains("nic");
  In1<uint8_t> cpu, nic;
  if (units) {
    cpu = field<uint8_t>(d, "cpu", n);
    nic = field<uint8_t>(d, "nic", n);
  }
  auto dep_begin = field<int64_t>(d, "dep_begin", n + 1);
  auto deps = field<uint32_t>(d, "deps", SIZE_MAX);
  auto scratch_begin = field<int64_t>(d, "scratch_begin", static_cast<size_t>(h.P) + 1);
  auto scratch = field<int64_t>(d, "scratch", SIZE_MAX);
  check_buffer_limits(h);  // the readers' one buffer limit (buffer_fits), here too
  Schedule s(h);
  RankProgram p;
  size_t i = 0;
  for (int64_t r = 0; r < h.P; ++r) {
    p.clear(r);
    int64_t sb = scratch_begin(r), se = scratch_begin(r + 1);
    if (sb < 0 || se < sb || se > static_cast<int64_t>(scratch.shape(0)))
      fail(ErrorKind::format, "scratch_begin is not a valid index array");
    for (int64_t k = sb; k < se; ++k) p.scratch.push_back(scratch(k));
    for (; i < n && rank(i) == r; ++i) {
      if (kind(i) > static_cast<uint8_t>(OpKind::sleep) || side(i) > 1)
        fail(ErrorKind::format, "op " + std::to_string(i) + " has an unknown kind or side");
      Op op;
      op.kind = static_cast<OpKind>(kind(i));
      op.peer = peer(i);
      op.buf = buf(i);
      op.off = off(i);
      op.src = src(i);
      op.src_off = src_off(i);
      op.len = len(i);
      op.side = static_cast<Side>(side(i));
      if (units) {
        if (cpu(i) > kMaxCpu || nic(i) > kMaxNic)
          fail(ErrorKind::format, "op " + std::to_string(i) + " has cpu " + std::to_string(cpu(i)) +
                                      " or nic " + std::to_string(nic(i)) +
                                      " above collkit's limit (" + std::to_string(kMaxCpu) + ", " +
                                      std::to_string(kMaxNic) + ")");
        op.cpu = cpu(i);
        op.nic = nic(i);
      }
      int64_t db = dep_begin(i), de = dep_begin(i + 1);
      if (db < 0 || de < db || de > static_cast<int64_t>(deps.shape(0)))
        fail(ErrorKind::format, "dep_begin is not a valid index array");
      std::vector<OpId> dv(deps.data() + db, deps.data() + de);
      p.append(op, dv, stage(i));
    }
    check_buffer_limits(h, p.view());
    s.append_rank(p.view());
  }
  if (i != n) fail(ErrorKind::format, "the rank array must be sorted and hold ranks in [0, P)");
  return s;
}

ScheduleHeader make_header(const std::string& collective, int64_t P, int64_t count,
                           int32_t elem_size, int64_t root, const std::string& algorithm,
                           int64_t rpn, const std::string& order) {
  ScheduleHeader h;
  if (rpn < 0) fail(ErrorKind::format, "placement: ranks per node is negative");
  h.placement = Placement{rpn, node_order_from_string(order)};
  h.collective = collective_from_string(collective);
  h.P = P;
  h.count = count;
  h.elem_size = elem_size;
  h.root = root;
  h.algorithm = algorithm;
  return h;
}

}  // namespace

void bind_schedule(nb::module_& m) {
  nb::class_<RankProgram>(m, "RankProgram")
      .def_ro("rank", &RankProgram::rank)
      .def("__len__", [](const RankProgram& p) { return p.ops.size(); })
      .def_prop_ro("scratch", [](const RankProgram& p) { return p.scratch; })
      .def("deps",
           [](const RankProgram& p, size_t i) {
             if (i >= p.ops.size()) fail(ErrorKind::invalid_argument, "op index out of range");
             auto d = p.view().deps_of(i);
             return std::vector<OpId>(d.begin(), d.end());
           })
      .def("arrays", [](const RankProgram& p) { return op_arrays({p.view()}); });

  nb::class_<Schedule>(m, "Schedule")
      .def_prop_ro("collective",
                   [](const Schedule& s) { return std::string(to_string(s.header.collective)); })
      .def_prop_ro("algorithm", [](const Schedule& s) { return s.header.algorithm; })
      .def_prop_ro("P", [](const Schedule& s) { return s.header.P; })
      .def_prop_ro("count", [](const Schedule& s) { return s.header.count; })
      .def_prop_ro("elem_size", [](const Schedule& s) { return s.header.elem_size; })
      .def_prop_ro("root", [](const Schedule& s) { return s.header.root; })
      .def_prop_ro("counts", [](const Schedule& s) { return s.header.counts; })
      .def_prop_ro("in_displs", [](const Schedule& s) { return s.header.in_displs; })
      .def_prop_ro("out_displs", [](const Schedule& s) { return s.header.out_displs; })
      .def("in_elems", [](const Schedule& s, int64_t r) { return s.header.in_elems(r); })
      .def("out_elems", [](const Schedule& s, int64_t r) { return s.header.out_elems(r); })
      .def_prop_ro("rpn", [](const Schedule& s) { return s.header.placement.rpn; })
      .def_prop_ro(
          "order",
          [](const Schedule& s) { return std::string(to_string(s.header.placement.order)); })
      .def_prop_ro("total_ops", &Schedule::total_ops)
      .def_prop_ro("memory_bytes", &Schedule::memory_bytes)
      .def("rank",
           [](const Schedule& s, int64_t r) {
             RankView v = s.rank(r);
             RankProgram p;
             p.clear(r);
             for (size_t i = 0; i < v.size(); ++i) p.append(v.ops[i], v.deps_of(i), v.stage[i]);
             p.scratch.assign(v.scratch.begin(), v.scratch.end());
             return p;
           })
      .def("arrays",
           [](const Schedule& s) {
             std::vector<RankView> views;
             std::vector<int64_t> scratch_begin{0}, scratch;
             for (int64_t r = 0; r < s.num_ranks(); ++r) {
               views.push_back(s.rank(r));
               scratch.insert(scratch.end(), views.back().scratch.begin(),
                              views.back().scratch.end());
               scratch_begin.push_back(static_cast<int64_t>(scratch.size()));
             }
             nb::dict d = op_arrays(views);
             d["scratch_begin"] = to_numpy(std::move(scratch_begin));
             d["scratch"] = to_numpy(std::move(scratch));
             return d;
           })
      .def(
          "__eq__",
          [](const Schedule& a, nb::handle b) -> nb::object {
            if (!nb::isinstance<Schedule>(b)) return nb::borrow(Py_NotImplemented);
            return nb::bool_(a == nb::cast<const Schedule&>(b));
          },
          nb::sig("def __eq__(self, other: object, /) -> bool"))
      .def_static(
          "from_arrays",
          [](const std::string& collective, int64_t P, int64_t count, int32_t elem_size,
             int64_t root, const std::string& algorithm, const nb::dict& arrays, int64_t rpn,
             const std::string& order, std::vector<int64_t> counts, std::vector<int64_t> in_displs,
             std::vector<int64_t> out_displs) {
            ScheduleHeader h =
                make_header(collective, P, count, elem_size, root, algorithm, rpn, order);
            h.counts = std::move(counts);
            h.in_displs = std::move(in_displs);
            h.out_displs = std::move(out_displs);
            try {
              check_counts(h);
            } catch (const Error& e) {
              fail(ErrorKind::format, e.what());
            }
            return from_arrays(h, arrays);
          },
          nb::arg("collective"), nb::arg("P"), nb::arg("count"), nb::arg("elem_size"),
          nb::arg("root"), nb::arg("algorithm"), nb::arg("arrays"), nb::arg("rpn") = 0,
          nb::arg("order") = "contiguous", nb::arg("counts") = std::vector<int64_t>{},
          nb::arg("in_displs") = std::vector<int64_t>{},
          nb::arg("out_displs") = std::vector<int64_t>{});
}

}  // namespace collkit::py
