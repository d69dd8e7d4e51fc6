// The models' registry and parameter values (model.hpp); the models themselves are in models/.
#include "collkit/sim/model.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>

#include "collkit/error.hpp"

namespace collkit::sim {

namespace {

// A deque: the models stay where they were registered (models() points into it), and are freed at
// exit with it.
std::deque<ModelInfo>& registry() {
  static std::deque<ModelInfo> r;
  return r;
}

[[noreturn]] void not_these_rules(const char* what) {
  throw std::logic_error(std::string("a cost model was asked for ") + what +
                         ", which its rules do not use");
}

void check_value(const ParamInfo& i, double v) {
  if (i.unit == "B") {
    if (std::isnan(v) || v < 0)
      fail(ErrorKind::invalid_argument,
           "model parameter " + std::string(i.name) + " must be a size >= 0 (or infinite)");
  } else if (!std::isfinite(v) || v < 0) {
    fail(ErrorKind::invalid_argument, "model parameter " + std::string(i.name) +
                                          " must be a finite time >= 0, got " + std::to_string(v));
  }
}

const ParamUse* find_param(std::string_view name) {
  for (const ParamUse& u : all_params())
    if (u.info.name == name) return &u;
  return nullptr;
}

}  // namespace

std::span<const ParamInfo> local_params() {
  static const ParamInfo table[] = {
      {"gamma", "ns/B", "reduction time per byte", 0},
      {"reduce_base", "ns", "time per reduce op, whatever its size", 0},
      {"copy_beta", "ns/B", "copy time per byte", 0},
  };
  return table;
}

PortSend CostModel::port_send(double, double, double, double, const Detour&) const {
  not_these_rules("a port send");
}
bool CostModel::done_on_arrival() const {
  not_these_rules("a port send");
}
SendTimes CostModel::send(double, double) const {
  not_these_rules("LogGOPS send times");
}
RecvTimes CostModel::recv(double, double) const {
  not_these_rules("LogGOPS receive times");
}
double CostModel::rendezvous_above() const {
  not_these_rules("a rendezvous threshold");
}

ModelRegistrar::ModelRegistrar(ModelInfo info) {
  registry().push_back(std::move(info));
}

std::span<const ModelInfo* const> models() {
  static const std::vector<const ModelInfo*> sorted = [] {
    std::vector<const ModelInfo*> v;
    for (const ModelInfo& m : registry()) v.push_back(&m);
    std::stable_sort(v.begin(), v.end(),
                     [](const ModelInfo* a, const ModelInfo* b) { return a->order < b->order; });
    return v;
  }();
  return sorted;
}

const std::vector<ParamUse>& all_params() {
  static const std::vector<ParamUse> table = [] {
    std::vector<ParamUse> out;
    for (const ModelInfo* m : models())
      for (const ParamInfo& p : m->params) {
        auto it = std::find_if(out.begin(), out.end(),
                               [&](const ParamUse& u) { return u.info.name == p.name; });
        if (it == out.end()) {
          out.push_back({p, {m->name}, false});
          continue;
        }
        if (it->info.unit != p.unit || it->info.doc != p.doc ||
            !(it->info.default_value == p.default_value ||
              (std::isinf(it->info.default_value) && std::isinf(p.default_value))))
          throw std::logic_error("model " + std::string(m->name) + " declares parameter " +
                                 std::string(p.name) + " unlike model " +
                                 std::string(it->models.front()));
        it->models.push_back(m->name);
      }
    for (const ParamInfo& p : local_params()) {
      ParamUse u{p, {}, true};
      for (const ModelInfo* m : models()) u.models.push_back(m->name);
      out.push_back(std::move(u));
    }
    return out;
  }();
  return table;
}

const ModelInfo& find_model(std::string_view name) {
  std::string known;
  for (const ModelInfo* m : models()) {
    if (m->name == name ||
        std::find(m->aliases.begin(), m->aliases.end(), name) != m->aliases.end())
      return *m;
    if (!known.empty()) known += ", ";
    known += m->aliases.empty() ? m->name : m->aliases.front();
  }
  fail(ErrorKind::invalid_argument,
       "unknown model '" + std::string(name) + "' (known: " + known + ")");
}

ModelParams& ModelParams::set(std::string_view name, double value) {
  if (find_param(name) == nullptr)
    fail(ErrorKind::invalid_argument, "unknown model parameter '" + std::string(name) + "'");
  for (auto& [k, v] : values)
    if (k == name) {
      v = value;
      return *this;
    }
  values.emplace_back(std::string(name), value);
  return *this;
}

double ModelParams::get(std::string_view name) const {
  const ParamUse* u = find_param(name);
  const ModelInfo& m = find_model(model);
  const bool declared = u != nullptr && (u->local || std::find(u->models.begin(), u->models.end(),
                                                               m.name) != u->models.end());
  if (!declared)
    throw std::logic_error("model " + std::string(m.name) + " has no parameter " +
                           std::string(name));
  for (const auto& [k, v] : values)
    if (k == name) return v;
  return u->info.default_value;
}

std::unique_ptr<CostModel> make_model(const ModelParams& p) {
  const ModelInfo& m = find_model(p.model);
  for (const auto& [k, v] : p.values) {
    const ParamUse* u = find_param(k);
    if (u == nullptr) fail(ErrorKind::invalid_argument, "unknown model parameter '" + k + "'");
    check_value(u->info, v);
  }
  return m.make(p);
}

LocalCosts local_costs(const ModelParams& p) {
  return {p.get("gamma"), p.get("reduce_base"), p.get("copy_beta")};
}

}  // namespace collkit::sim
