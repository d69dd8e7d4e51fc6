// Recursive multiplying's schedule language, for the Python enumeration and models.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "collkit/rm/stages.hpp"

namespace nb = nanobind;

namespace collkit::py {
namespace {

const char* kind_name(rm::StageKind k) {
  switch (k) {
    case rm::StageKind::factor:
      return "factor";
    case rm::StageKind::collapse:
      return "collapse";
    case rm::StageKind::expand:
      return "expand";
    case rm::StageKind::merge:
      return "merge";
    case rm::StageKind::invmerge:
      return "invmerge";
  }
  return "?";
}

const char* shape_name(rm::Shape s) {
  switch (s) {
    case rm::Shape::factored:
      return "factored";
    case rm::Shape::split:
      return "split";
    case rm::Shape::merged:
      return "merged";
  }
  return "?";
}

}  // namespace

void bind_rm(nb::module_& m) {
  m.def(
      "rm_plan",
      [](const std::vector<std::string>& stages, int64_t P) {
        rm::Plan p = rm::make_plan(stages, P);
        nb::dict d;
        d["P"] = p.P;
        d["shape"] = shape_name(p.shape);
        d["inner"] = p.inner;
        d["threshold"] = p.threshold;
        d["collapse_base"] = p.collapse_base;
        d["remainder"] = p.remainder;
        nb::list l;
        for (size_t i = 0; i < p.stages.size(); ++i) {
          const rm::Stage& s = p.stages[i];
          nb::dict sd;
          sd["text"] = rm::to_string(s);
          sd["kind"] = kind_name(s.kind);
          sd["base"] = s.base;
          sd["threshold"] = s.threshold;
          sd["remainder"] = s.remainder;
          sd["groups"] = s.groups;
          sd["mask"] = p.mask[i];
          l.append(sd);
        }
        d["stages"] = l;
        d["text"] = rm::to_string(p.stages);
        return d;
      },
      nb::arg("stages"), nb::arg("P"),
      "Parse and check a recursive multiplying stage list against P.");
  m.def(
      "rm_recursive_doubling",
      [](int64_t P) { return rm::to_string(rm::recursive_doubling_stages(P)); }, nb::arg("P"),
      "MPICH's recursive doubling as a stage list.");
}

}  // namespace collkit::py
