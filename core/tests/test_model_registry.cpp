// The cost models' registry: the real models register without a problem (a model file that
// declares a shared parameter unlike another fails here, at test time, not at import), and
// check_models refuses a clashing model, keeps one description of a parameter whose doc text
// differs, and names the file of the model at fault.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "check.hpp"
#include "collkit/error.hpp"
#include "collkit/sim/model.hpp"

using namespace collkit;
using namespace collkit::sim;

namespace {

ModelInfo fake(std::string_view name, int order, std::vector<ParamInfo> params,
               std::vector<std::string_view> aliases = {}) {
  return {.name = name,
          .aliases = std::move(aliases),
          .doc = "a test model",
          .order = order,
          .rules = Rules::port,
          .params = std::move(params),
          .make = nullptr,
          .file = name == "b" ? "core/tests/b.cpp" : "core/tests/other.cpp"};
}

bool has(const std::string& line, std::string_view what) {
  return line.find(what) != std::string::npos;
}

const ParamUse* use(const ModelTable& t, std::string_view name) {
  for (const ParamUse& u : t.params)
    if (u.info.name == name) return &u;
  return nullptr;
}

}  // namespace

TEST(model_registry_has_no_problems) {
  for (const std::string& p : model_problems()) std::fprintf(stderr, "  %s\n", p.c_str());
  CHECK(model_problems().empty());
  CHECK(models().size() >= 5);
  // Every model is found by its name and its aliases, and gives each parameter it declares.
  for (const ModelInfo* m : models()) {
    CHECK(&find_model(m->name) == m);
    for (std::string_view a : m->aliases) CHECK(&find_model(a) == m);
    CHECK(has(std::string(m->file), "core/"));
    ModelParams p;
    p.model = std::string(m->name);
    for (const ParamInfo& i : m->params) CHECK(p.get(i.name) == i.default_value);
  }
}

TEST(model_registry_refuses_a_clash_and_keeps_one_description) {
  const ParamInfo alpha{"alpha", "ns", "latency", 500};
  const ModelInfo a = fake("a", 1, {alpha});
  // Only the doc differs: kept, with a's text, and a problem line.
  const ModelInfo b = fake("b", 2, {{"alpha", "ns", "latency, said otherwise", 500}});
  // Another unit, another default: its values would mean something else. Refused.
  const ModelInfo c = fake("c", 3, {{"alpha", "ns/B", "latency", 500}});
  const ModelInfo d = fake("d", 4, {{"alpha", "ns", "latency", 7}});
  // A local op's parameter, a parameter twice, a name or alias taken.
  const ModelInfo e = fake("e", 5, {{"gamma", "ns/B", "reduction time per byte", 0}});
  const ModelInfo f = fake("f", 6, {{"x", "ns", "x", 1}, {"x", "ns", "x", 1}});
  const ModelInfo g = fake("g", 7, {}, {"a"});
  const ModelInfo h = fake("a", 8, {});
  // Registered in any order: the table is by order.
  const std::vector<const ModelInfo*> in{&h, &g, &f, &e, &d, &c, &b, &a};
  const ModelTable t = check_models(in);
  CHECK(t.models.size() == 2);
  CHECK(t.models.size() == 2 && t.models[0] == &a && t.models[1] == &b);
  const ParamUse* u = use(t, "alpha");
  CHECK(u != nullptr && u->info.doc == "latency" && u->models.size() == 2);
  CHECK(t.refused.size() == 6);
  CHECK(t.problems.size() == 7);
  for (const auto& [m, why] : t.refused) {
    CHECK(has(why, "model " + std::string(m->name) + " ("));
    CHECK(has(why, "core/tests/other.cpp"));
  }
  CHECK(std::any_of(t.problems.begin(), t.problems.end(), [](const std::string& p) {
    return has(p, "model b (core/tests/b.cpp)") && has(p, "keeps the first text");
  }));
  // The local parameters stay every usable model's.
  const ParamUse* gamma = use(t, "gamma");
  CHECK(gamma != nullptr && gamma->local && gamma->models.size() == 2);
}

TEST(model_registry_unknown_model_is_an_error) {
  bool threw = false;
  try {
    find_model("no-such-model");
  } catch (const Error& e) {
    threw = e.kind() == ErrorKind::invalid_argument && has(e.what(), "known: postal");
  }
  CHECK(threw);
}
