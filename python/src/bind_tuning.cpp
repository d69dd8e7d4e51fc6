// The tuning table's one reader (collkit/tuning.hpp), for `collkit run` and `collkit tune`: the
// interposition library reads tables with the same code, so both give the same verdict.
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "collkit/collective.hpp"
#include "collkit/tuning.hpp"

namespace nb = nanobind;

namespace collkit::py {

void bind_tuning(nb::module_& m) {
  m.def(
      "read_tuning_table",
      [](nb::bytes text) {
        const tuning::Table t = [&] {
          const std::string_view s(text.c_str(), text.size());
          nb::gil_scoped_release unlock;
          return tuning::parse_table(s);
        }();
        nb::list rules;
        for (const tuning::Rule& r : t.rules) {
          nb::dict d;
          d["collective"] = std::string(to_string(r.collective));
          d["P"] = nb::make_tuple(r.p_lo, r.p_hi);
          d["bytes"] = nb::make_tuple(r.bytes_lo, r.bytes_hi);
          if (r.nodes_lo > 0)
            d["nodes"] = nb::make_tuple(r.nodes_lo, r.nodes_hi);
          else
            d["nodes"] = nb::none();
          if (r.ppn_lo > 0)
            d["ppn"] = nb::make_tuple(r.ppn_lo, r.ppn_hi);
          else
            d["ppn"] = nb::none();
          d["algorithm"] = r.algorithm;
          d["canonical"] = r.canonical;
          d["source"] = r.source;
          d["median_us"] = r.median_us;
          d["native_median_us"] = r.native_median_us;
          d["speedup"] = r.speedup;
          d["p_value"] = r.p_value;
          d["ci95"] = nb::make_tuple(r.ci95_lo, r.ci95_hi);
          nb::dict speedups;
          for (const auto& [k, v] : r.speedups) speedups[k.c_str()] = v;
          d["speedups"] = speedups;
          d["note"] = r.note;
          rules.append(d);
        }
        nb::dict out;
        out["mpi"] = t.mpi;
        out["machine"] = t.machine;
        out["date"] = t.date;
        out["block"] = t.block;
        out["rules"] = rules;
        return out;
      },
      nb::arg("text"),
      "Parses and checks a tuning table (UTF-8 JSON bytes); InvalidArgumentError says what is "
      "wrong and where. The same reader as the interposition library's.");
  nb::list keys;
  for (const char* k : tuning::kRuleKeys) keys.append(k);
  m.attr("TUNING_RULE_KEYS") = keys;
  m.attr("TUNING_MAX_BYTES") = tuning::kMaxTableBytes;
  m.attr("TUNING_MAX_BLOCK") = tuning::kMaxBlock;
}

}  // namespace collkit::py
