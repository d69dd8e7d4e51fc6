// The verifier: verify(schedule, commutative) -> dict with the verdict and diagnostics.
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "collkit/verify.hpp"

namespace nb = nanobind;

namespace collkit::py {

void bind_verify(nb::module_& m) {
  m.def(
      "verify",
      [](const Schedule& s, bool commutative, size_t max_diagnostics, bool in_place, bool exact) {
        VerifyOptions o;
        o.commutative = commutative;
        o.exact = exact;
        o.max_diagnostics = max_diagnostics;
        o.in_place = in_place;
        VerifyResult r;
        {
          nb::gil_scoped_release unlock;
          r = verify(s, o);
        }
        nb::dict d;
        d["ok"] = r.ok;
        d["total_problems"] = r.total_problems;
        d["consistent_commutative"] = r.consistent_commutative;
        d["consistent_noncommutative"] = r.consistent_noncommutative;
        d["ops"] = r.ops;
        d["messages"] = r.messages;
        d["bytes"] = r.bytes;
        nb::list diags;
        for (const auto& x : r.diagnostics) {
          nb::dict dd;
          dd["kind"] = std::string(to_string(x.kind));
          dd["rank"] = x.rank;
          dd["op"] = x.op;
          dd["message"] = x.message;
          diags.append(dd);
        }
        d["diagnostics"] = diags;
        return d;
      },
      nb::arg("schedule"), nb::arg("commutative") = true, nb::arg("max_diagnostics") = 20,
      nb::arg("in_place") = false, nb::arg("exact") = false);
  m.def(
      "compare_trees",
      [](const Schedule& a, const Schedule& b) {
        TreeComparison c;
        {
          nb::gil_scoped_release unlock;
          c = compare_trees(a, b);
        }
        nb::dict d;
        d["same_exact"] = c.same_exact;
        d["same_commutative"] = c.same_commutative;
        d["difference"] = c.difference;
        return d;
      },
      nb::arg("a"), nb::arg("b"));
}

}  // namespace collkit::py
