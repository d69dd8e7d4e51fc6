// The models logp, loggp and loggops (the class: loggops.hpp).
#include "loggops.hpp"

#include <limits>

namespace collkit::sim {
namespace {

using detail::LogGOPS;

constexpr double kInf = std::numeric_limits<double>::infinity();
const ParamInfo kL{"L", "ns", "wire latency", 500};
const ParamInfo ko{"o", "ns", "CPU overhead per message, at sender and receiver", 100};
const ParamInfo kg{"g", "ns", "gap between consecutive messages of a NIC", 100};
const ParamInfo kG{"G", "ns/B", "gap per byte", 0};
const ParamInfo kO{"O", "ns/B", "CPU overhead per byte", 0};
const ParamInfo kS{"S", "B", "rendezvous threshold in bytes (messages above S)", kInf};

const ModelRegistrar logp{{
    .name = "logp",
    .aliases = {},
    .doc = "o + L + o per message, a gap g between messages",
    .order = 2,
    .rules = Rules::loggops,
    .params = {kL, ko, kg},
    .make = [](const ModelParams& p) -> std::unique_ptr<CostModel> {
      return std::make_unique<LogGOPS>(p.get("L"), p.get("o"), p.get("g"), 0, 0, kInf);
    },
}};

const ModelRegistrar loggp{{
    .name = "loggp",
    .aliases = {},
    .doc = "LogP with a gap per byte G",
    .order = 3,
    .rules = Rules::loggops,
    .params = {kL, ko, kg, kG},
    .make = [](const ModelParams& p) -> std::unique_ptr<CostModel> {
      return std::make_unique<LogGOPS>(p.get("L"), p.get("o"), p.get("g"), p.get("G"), 0, kInf);
    },
}};

const ModelRegistrar loggops{{
    .name = "loggops",
    .aliases = {},
    .doc = "LogGP with a CPU overhead per byte O and rendezvous above S bytes",
    .order = 4,
    .rules = Rules::loggops,
    .params = {kL, ko, kg, kG, kO, kS},
    .make = [](const ModelParams& p) -> std::unique_ptr<CostModel> {
      return std::make_unique<LogGOPS>(p.get("L"), p.get("o"), p.get("g"), p.get("G"), p.get("O"),
                                       p.get("S"));
    },
}};

}  // namespace
}  // namespace collkit::sim
