// Network cost models of the simulator behind one interface: a model declares its name and its
// parameters (named as in its paper, with units and defaults) and returns the times of a message;
// the engine (engine.cpp) decides when an op may start and calls the model for how long it takes.
// Every time is in nanoseconds, every size in bytes. One file per model, core/src/sim/models/,
// each ending with a ModelRegistrar (as an algorithm ends with its Registrar):
//
//   postal            alpha + n beta per message; a rank's send port carries one message at a
//                     time, busy until the message has arrived ([Ruefenacht 2017] Eq. 1).
//   pipelined_postal  alpha_p + b (alpha_r + n beta) for b sends issued together: the send port is
//                     busy alpha_r + n beta per message, after which the message still needs
//                     alpha_p to arrive, overlapping the next sends ([Ruefenacht 2017] Eq. 3).
//   logp / loggp /    L, o, g, G, O, S as in LogGOPSim (Hoefler, Schneider, Lumsdaine, HPDC 2010):
//   loggops           sender CPU o + (n-1) O, send gap g + (n-1) G, first byte arrives o + L after
//                     the send starts, receiver CPU o + max((n-1) O, (n-1) G), receive gap
//                     g + (n-1) G; messages above S bytes use the rendezvous protocol (the send
//                     completes only once the receive has matched). logp: G = O = 0, S = inf;
//                     loggp: O = 0, S = inf.
// Local ops, in every model: reduce costs reduce_base + gamma n, copy costs copy_beta n, compute
// and sleep their own duration; they run one at a time on the rank's CPU. Congestion (links
// shared by messages) belongs to the topology (topology.hpp's `link`), under any model.
//
// The clock ticks in whole picoseconds (on_grid): every duration is rounded to one and every time
// is a sum of them, so times that are equal in exact arithmetic are equal here, however they were
// summed and whatever the parameters' scale, and ties are ordered alike (parameters scaled by 10
// give 10 times the makespan, not another order of ties).
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace collkit::sim {

// ns rounded to a whole picosecond, as one double per ps count, so that a sum of such times,
// rounded again, is exact while times are below 2^37 ns
// (137 s of simulated time, where a double's step is 0.03 ps; beyond, ties may depend on
// rounding again). Models round each duration they compute and each time they return; the
// engine rounds what it adds.
[[gnu::always_inline]] inline double on_grid(double ns) {
  const double ps = ns * 1e3;
  // Adding 2^52 rounds to a whole number without a libm call (no SSE4.1 round instruction).
  const double whole = ps >= 0 && ps < 0x1p52 ? (ps + 0x1p52) - 0x1p52 : std::nearbyint(ps);
  // A product, not a quotient (a division on every event's path cost ~8 % of a run): one ps
  // count still always gives the same double. + 0.0: never -0.0 (the event queue's keys).
  return whole * 1e-3 + 0.0;
}

// A parameter of a model: its name, unit ("ns", "ns/B" a time per byte, "B" a size), meaning and
// default. Models that share a parameter (L, o, g of the LogP family) declare it alike.
struct ParamInfo {
  std::string_view name;
  std::string_view unit;
  std::string_view doc;
  double default_value;
};

// The parameters of local ops, the same in every model.
std::span<const ParamInfo> local_params();

// A model and the values of its parameters, by name; a parameter not set takes its default.
struct ModelParams {
  std::string model = "postal";
  std::vector<std::pair<std::string, double>> values;

  // Sets parameter `name` (any model's or a local one; one the model does not use is ignored).
  // Throws Error(invalid_argument) for a name no model declares.
  ModelParams& set(std::string_view name, double value);
  // Its value, or the default of the model's declaration; throws for a parameter of neither
  // the model nor the local ones.
  double get(std::string_view name) const;
};

// What the engine's rules ask of a model.
// - port: a send takes its rank's send port (NIC) when ready; the model says how long the port is
//   busy, when the message arrives and when the send completes; receives cost nothing (postal,
//   pipelined postal).
// - loggops: LogGOPSim's rules: a send and a message's processing at its receiver each take the
//   rank's CPU for an overhead and its NIC for a gap; the model says how long (LogP family).
enum class Rules : uint8_t { port, loggops };

// The noise trace's delay met by the rank's CPU or port busy for `len` ns from the op's start
// (0 without a trace): a model calls it over the time its send occupies them.
struct Detour {
  const void* ctx;
  double (*fn)(const void*, double len);
  double operator()(double len) const { return fn(ctx, len); }
};

// A send under the port rules that takes its port at s.
struct PortSend {
  double port_free;  // when the port takes the next message
  double arrival;    // when the message reaches its receiver
  double pushed;     // when the send completes, if not on arrival (done_on_arrival)
};

// A message under the LogGOPS rules, its sender or its receiver starting at `now`.
struct SendTimes {
  double cpu_end;     // the sender's CPU is free again (the eager send completes)
  double gap_end;     // the sender's NIC may start the next message
  double first_byte;  // the message is at its receiver (before the topology's latency)
  double overhead;    // of the CPU time, what a noise trace's detours apply to (enters the wire)
};
struct RecvTimes {
  double cpu_end;   // the receiver's CPU is free again: the message is processed
  double gap_end;   // the receiver's NIC may take the next message
  double overhead;  // of the CPU time, what a noise trace's detours apply to
};

// A model with its parameters' values: what the engine calls. A model implements the methods of
// its rules (the others are never called).
class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual Rules rules() const = 0;

  // Port rules: a message of n bytes whose send takes its port at s; `extra` is the topology's
  // added latency, `delay` the op's noise draw.
  virtual PortSend port_send(double s, double n, double extra, double delay,
                             const Detour& detour) const;
  // Port rules: true when the send completes on arrival and holds its port until then (postal);
  // false when it completes once pushed (pipelined postal).
  virtual bool done_on_arrival() const;

  // LogGOPS rules.
  virtual SendTimes send(double now, double n) const;
  virtual RecvTimes recv(double now, double n) const;
  // Messages of more bytes than this are rendezvous (the send completes when its receive
  // matches); infinity: none. A number, not a test per message: the engine reads it once.
  virtual double rendezvous_above() const;
};

// A registered model: its name, aliases the CLI also accepts, meaning, rules, parameters (in the
// order users see them; the local ones apart), how to make it from values, and the file that
// registered it (filled by ModelRegistrar, for the registry's errors).
struct ModelInfo {
  std::string_view name;
  std::vector<std::string_view> aliases;
  std::string_view doc;
  int order;  // where it is listed among the models
  Rules rules;
  std::vector<ParamInfo> params;
  std::unique_ptr<CostModel> (*make)(const ModelParams&);
  std::string_view file = {};
};

// One per model file: `static const ModelRegistrar reg{{...}};`.
class ModelRegistrar {
 public:
  explicit ModelRegistrar(ModelInfo info,
                          std::source_location where = std::source_location::current());
};

// Every parameter once (the models' in model order, then the local ones), with the models that
// use each (every model for a local parameter).
struct ParamUse {
  ParamInfo info;
  std::vector<std::string_view> models;
  bool local;
};

// What the registry makes of the registered models, checked (check_models). A parameter name
// means one thing: models that share it must declare it with one unit and one default, or a
// value set for one would mean something else to the other. A model that declares a shared
// parameter in another unit or with another default, declares a local parameter, a parameter
// twice, or a name or alias another model has, is refused: it is left out of `models` and a
// `problems` line names it, its file and the model it clashes with (find_model on its name
// gives that line as the error). Models that differ only in a parameter's doc text are both
// kept and the parameter keeps the first model's (by order) text: one description per name,
// and a `problems` line all the same. Nothing here throws: a bad model file costs its own
// model, never the rest of the registry or the import of the library; the unit tests (C++ and
// Python) fail while `problems` is not empty.
struct ModelTable {
  std::vector<const ModelInfo*> models;  // the usable ones, by order (then name)
  std::vector<ParamUse> params;
  std::vector<std::string> problems;
  std::vector<std::pair<const ModelInfo*, std::string>> refused;  // with its problem line
};
ModelTable check_models(std::span<const ModelInfo* const> registered);

// Every usable registered model, by `order` (check_models).
std::span<const ModelInfo* const> models();
// By name or alias; throws Error(invalid_argument) naming the known ones otherwise (or, for a
// refused model, why it was refused).
const ModelInfo& find_model(std::string_view name);
const std::vector<ParamUse>& all_params();
// The registry's problems (check_models): empty unless a model file is wrong.
std::span<const std::string> model_problems();

// The model with its values, checked: every time finite and >= 0 (S may be infinite).
std::unique_ptr<CostModel> make_model(const ModelParams& p);

// The local ops' costs (every model): what a reduce, a copy costs per op and per byte.
struct LocalCosts {
  double gamma = 0;        // ns per byte reduced
  double reduce_base = 0;  // ns per reduce op, whatever its size
  double copy_beta = 0;    // ns per byte copied
};
LocalCosts local_costs(const ModelParams& p);

}  // namespace collkit::sim
