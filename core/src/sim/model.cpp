// The models' registry and parameter values (model.hpp); the models themselves are in models/.
#include "collkit/sim/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

const ModelInfo& find_model_in(const std::vector<const ModelInfo*>& ms, std::string_view name) {
  return **std::find_if(ms.begin(), ms.end(), [&](const ModelInfo* m) { return m->name == name; });
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

namespace {

// The file as a path from the repository (core/...), not the build machine's absolute path.
std::string_view short_file(std::string_view f) {
  const size_t at = f.rfind("/core/");
  return at == std::string_view::npos ? f : f.substr(at + 1);
}

std::string where(const ModelInfo& m) {
  return "model " + std::string(m.name) + " (" +
         std::string(m.file.empty() ? std::string_view("?") : m.file) + ")";
}

bool same_default(double a, double b) {
  return a == b || (std::isinf(a) && std::isinf(b) && (a > 0) == (b > 0));
}

std::string describe(const ParamInfo& p) {
  char v[32];
  std::snprintf(v, sizeof v, "%g", p.default_value);
  return std::string(p.unit) + ", default " + v;
}

const ModelTable& table() {
  static const ModelTable t = [] {
    std::vector<const ModelInfo*> v;
    for (const ModelInfo& m : registry()) v.push_back(&m);
    return check_models(v);
  }();
  return t;
}

}  // namespace

ModelRegistrar::ModelRegistrar(ModelInfo info, std::source_location loc) {
  if (info.file.empty()) info.file = short_file(loc.file_name());
  registry().push_back(std::move(info));
}

ModelTable check_models(std::span<const ModelInfo* const> registered) {
  ModelTable t;
  std::vector<const ModelInfo*> sorted(registered.begin(), registered.end());
  // By order, then name: the link order of the model files decides nothing.
  std::stable_sort(sorted.begin(), sorted.end(), [](const ModelInfo* a, const ModelInfo* b) {
    return a->order != b->order ? a->order < b->order : a->name < b->name;
  });
  auto owner_of_name = [&](std::string_view n) -> const ModelInfo* {
    for (const ModelInfo* u : t.models)
      if (u->name == n || std::find(u->aliases.begin(), u->aliases.end(), n) != u->aliases.end())
        return u;
    return nullptr;
  };
  auto find_use = [&](std::string_view n) {
    return std::find_if(t.params.begin(), t.params.end(),
                        [&](const ParamUse& u) { return u.info.name == n; });
  };
  for (const ModelInfo* m : sorted) {
    std::string refusal;
    std::vector<std::string> notes;
    std::vector<std::string_view> names{m->name};
    names.insert(names.end(), m->aliases.begin(), m->aliases.end());
    for (std::string_view n : names)
      if (const ModelInfo* u = owner_of_name(n); u != nullptr && refusal.empty())
        refusal = "its name or alias '" + std::string(n) + "' is " + where(*u) + "'s";
    for (size_t i = 0; i < m->params.size() && refusal.empty(); ++i) {
      const ParamInfo& p = m->params[i];
      for (size_t j = 0; j < i; ++j)
        if (m->params[j].name == p.name)
          refusal = "it declares parameter " + std::string(p.name) + " twice";
      for (const ParamInfo& l : local_params())
        if (l.name == p.name)
          refusal =
              "it declares " + std::string(p.name) + ", a local op's parameter of every model";
      auto it = find_use(p.name);
      if (!refusal.empty() || it == t.params.end()) continue;
      const ModelInfo& first = find_model_in(t.models, it->models.front());
      if (it->info.unit != p.unit || !same_default(it->info.default_value, p.default_value))
        refusal = "it declares parameter " + std::string(p.name) + " (" + describe(p) +
                  ") unlike " + where(first) + " (" + describe(it->info) + ")";
      else if (it->info.doc != p.doc)
        notes.push_back(where(*m) + " declares parameter " + std::string(p.name) + " as '" +
                        std::string(p.doc) + "', unlike " + where(first) + " ('" +
                        std::string(it->info.doc) + "'): the parameter keeps the first text");
    }
    if (!refusal.empty()) {
      std::string line = where(*m) + " is not registered: " + refusal;
      t.problems.push_back(line);
      t.refused.emplace_back(m, std::move(line));
      continue;
    }
    t.problems.insert(t.problems.end(), notes.begin(), notes.end());
    t.models.push_back(m);
    for (const ParamInfo& p : m->params) {
      auto it = find_use(p.name);
      if (it == t.params.end())
        t.params.push_back({p, {m->name}, false});
      else
        it->models.push_back(m->name);
    }
  }
  for (const ParamInfo& p : local_params()) {
    ParamUse u{p, {}, true};
    for (const ModelInfo* m : t.models) u.models.push_back(m->name);
    t.params.push_back(std::move(u));
  }
  return t;
}

std::span<const ModelInfo* const> models() {
  return table().models;
}

const std::vector<ParamUse>& all_params() {
  return table().params;
}

std::span<const std::string> model_problems() {
  return table().problems;
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
  for (const auto& [m, why] : table().refused)
    if (m->name == name ||
        std::find(m->aliases.begin(), m->aliases.end(), name) != m->aliases.end())
      fail(ErrorKind::invalid_argument, why);
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
