// The registry of algorithms. Every algorithm file registers itself with a static Registrar,
// declaring its parameters, restrictions, cost and reference; the CLI's list, the docs' table
// and the test matrix are all read from here, so there is no second list.
#pragma once
#include <any>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collkit/name.hpp"
#include "collkit/schedule.hpp"

namespace collkit {

enum class ParamType : uint8_t {
  integer,    // 4, -1
  size,       // bytes with units: 8KiB
  word,       // a free token: auto, a8
  list,       // all positional arguments, as words: rm(a8,a4)
  algorithm,  // an algorithm name of the collectives in ParamSpec::collectives: reduce:binomial
};

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::integer;
  std::string default_value;  // empty: required
  int64_t min = INT64_MIN;    // integer / size
  int64_t max = INT64_MAX;
  std::string doc;
  // The values the test matrix and tuning sweep, as written in names (the default if empty).
  std::vector<std::string> grid = {};
  // Word parameters: a check of the value when the name is parsed (throws Error with what is
  // wrong), so a bad value is refused with a caret before any P is known.
  std::function<void(std::string_view)> check = {};
  // Algorithm parameters: the collectives the named algorithm may be of.
  std::vector<Collective> collectives = {};
};

// The segment-size parameter that pipelined and segmented algorithms share: `seg`, in bytes,
// 0 meaning the whole message in one piece.
inline ParamSpec segment_param(std::string default_value,
                               std::string doc =
                                   "segment size in bytes, rounded down to whole elements, "
                                   "at least one element (bcast, alltoall: bytes of the type "
                                   "signature); 0: the whole message in one piece") {
  // Swept: whole messages, a tiny segment (16 B: smaller than many elements) and 1 KiB.
  return ParamSpec{
      "seg",          ParamType::size,    std::move(default_value), 0, int64_t{1} << 40,
      std::move(doc), {"0", "16", "1KiB"}};
}

// The radix `k` of k-nomial trees (bcast, reduce, barrier and the rooted collectives' trees).
inline ParamSpec radix_param(std::string default_value,
                             std::string doc = "radix: a node has up to k - 1 children per level") {
  return ParamSpec{"k", ParamType::integer, std::move(default_value), 2,
                   64,  std::move(doc),     {"2", "3", "5"}};
}

class Algorithm;

// Parameter values after parsing and checking against the specs.
class ParamValues {
 public:
  int64_t integer(const std::string& name) const;  // integer and size parameters
  const std::string& word(const std::string& name) const;
  const std::vector<std::string>& list(const std::string& name) const;
  const Algorithm& algorithm(const std::string& name) const;
  bool has(const std::string& name) const { return values_.count(name) != 0; }

  struct Value {
    int64_t i = 0;
    std::string s;
    std::vector<std::string> l;
    std::shared_ptr<const Algorithm> a;  // algorithm parameters
  };
  std::map<std::string, Value> values_;
};

struct Restrictions {
  bool commutative_op = false;  // needs a commutative reduction op
  // Needs an op whose result does not depend on how its operands are grouped or ordered
  // (CallShape::exact: integer sum and product, integer min and max, the logical and bitwise
  // ops): the ranks combine different groupings, equal only for such an op.
  bool exact_op = false;
  bool power_of_two = false;  // P must be a power of two
  int64_t min_P = 1;
  int64_t max_P = 0;             // 0: no bound (alltoall:two_proc: 2)
  bool needs_placement = false;  // node-aware: the placement of ranks on nodes must be given
  // Irregular collectives: a rank's program reads counts MPI gives only to other ranks (a
  // gatherv tree's subtree sizes, a Bruck alltoallv's forwarded blocks). Without it, rank r reads
  // only what its MPI call has: the recvcounts of allgatherv / reduce_scatter (all of them),
  // gatherv's and scatterv's counts[r] off the root, alltoallv's row r and column r. An MPI
  // caller with it gathers the vector first, or declines.
  bool all_counts = false;
};

// The time of one call in Hockney's model with a reduction term, as coefficients:
//   t = alpha * (s per message) + beta * (s per byte sent) + gamma * (s per byte reduced),
// counted along the critical path. Linear in the three, so any alpha/beta/gamma evaluate it.
struct Cost {
  double alpha = 0;  // messages
  double beta = 0;   // bytes sent
  double gamma = 0;  // bytes reduced
  Cost operator+(const Cost& o) const { return {alpha + o.alpha, beta + o.beta, gamma + o.gamma}; }
  Cost operator*(double k) const { return {k * alpha, k * beta, k * gamma}; }
};

// What a cost model reads: P, the bytes per rank (alltoall: per block) and the parameters.
struct CostArgs {
  int64_t P = 1;
  double bytes = 0;
  const ParamValues* params = nullptr;
  Placement placement = {};  // node-aware algorithms: not given means one node of P ranks
};

// Everything a generator needs besides the rank.
struct GenArgs {
  ScheduleHeader header;
  const ParamValues* params = nullptr;
  const std::any* prepared = nullptr;  // what AlgorithmSpec::prepare returned
};

struct AlgorithmSpec {
  Collective collective = Collective::allreduce;
  std::string name;       // the part after "collective:"
  std::string summary;    // one line
  std::string phases;     // how it works, a few lines
  std::string cost;       // in alpha / beta / gamma, e.g. "lg P (alpha + n beta + n gamma)"
  std::string reference;  // seed or paper
  // The same algorithm among the MPIs' own, as row names (mpich:ring, ompi:ring, impi:ring):
  // a tuning file for an MPI chooses its equivalent of collkit's winner. Checked at
  // registration (each an `impl:algo`); that the MPI has it is python/collkit/mpi/'s test.
  std::vector<std::string> mpi_equivalents = {};
  std::vector<ParamSpec> params;
  Restrictions restrictions;
  // Optional: check the arguments as a whole and precompute what every rank needs (e.g. a
  // parsed stage list). Throws Error for an impossible combination.
  std::function<std::any(const GenArgs&)> prepare;
  // Writes one rank's program. Pure: depends only on its arguments.
  std::function<void(const GenArgs&, RankBuilder&)> generate;
  // Optional: the closed-form cost (the formula `cost` states), for limits and analysis.
  std::function<Cost(const CostArgs&)> model = {};
  // Optional: whether, with these parameters and this placement, it needs a commutative op
  // although restrictions.commutative_op is false (a composition whose parts or whose node
  // groups do not keep rank order).
  std::function<bool(const ParamValues&, const Placement&)> needs_commutative = {};
  // Optional: a key for the rank's program up to a relabelling of its peers mod P (each op's
  // peer taken as (peer - rank) mod P): two ranks with the same key >= 0 must run that same
  // program; -1 claims nothing. The simulator generates one rank per key and lets the others
  // share its program without generating them (tests/core checks each claim rank by rank).
  std::function<int64_t(const GenArgs&, int64_t rank)> program_class = {};
};

class Registrar {
 public:
  explicit Registrar(AlgorithmSpec spec);
};

// All registered algorithms, sorted by collective then name.
std::vector<const AlgorithmSpec*> all_algorithms();
const AlgorithmSpec* find_algorithm(Collective c, std::string_view name);  // nullptr if none
// The names of the algorithm's parameter grid: every combination of its parameters' grid values,
// parameters without a grid at their default ("alltoall:bruck(r=2)", "alltoall:bruck(r=3)", ...).
// Empty if a parameter without a default has no grid (the name needs a value to exist).
std::vector<std::string> parameter_grid(const AlgorithmSpec& spec);

class Bound;

// The count vector and displacements of an irregular call (ScheduleHeader::counts, in_displs,
// out_displs); all empty for a regular one.
struct CountVectors {
  std::vector<int64_t> counts, in_displs, out_displs;
  bool empty() const { return counts.empty() && in_displs.empty() && out_displs.empty(); }
};

// One call as every rank of a communicator sees it alike (MPI makes these equal on all ranks):
// what "can this algorithm run this call?" depends on, and nothing else.
struct CallShape {
  int64_t P = 1;
  int64_t count = 0;      // the IR's elements per block
  int64_t elem_size = 8;  // bytes of one element (the copies: 1, counts are bytes)
  int64_t root = 0;
  bool commutative = true;   // the reduction op commutes (always true for the copies)
  Placement placement = {};  // the ranks' nodes: node-aware algorithms only
  // An irregular call's vectors (not owned; null: regular). Read by the full check only: they
  // are O(P), where the limits are constant time.
  const CountVectors* vectors = nullptr;
  // The op gives the same bits however its operands are grouped and ordered (a predefined op
  // that is exact on its type: integer sum, product, min, max; logical and bitwise ops), so
  // ranks combining different groupings agree. False unless the caller knows the op and type.
  bool exact = false;
};

// How much of the answer to compute. `limits`: the declared restrictions and limits (P, min_P,
// power of two, commutativity, count and element size, root), in constant time: what a per-call
// decision can afford. `full`: also everything `bind` checks, the algorithm's own `prepare`
// (stage lists that must divide P, node groups, the parts of a composition) and the placement.
enum class CallCheck : uint8_t { limits, full };

// An algorithm name resolved against the registry, its parameters parsed and checked.
class Algorithm {
 public:
  // Throws Error(name) with a caret for a malformed name, unknown algorithm or bad parameter.
  explicit Algorithm(std::string_view name);
  // A parsed name; `top` is the outermost name it sits in, for carets.
  Algorithm(const ParsedName& name, std::string_view top);

  const AlgorithmSpec& spec() const { return *spec_; }
  const ParamValues& params() const { return params_; }
  Collective collective() const { return spec_->collective; }
  // The canonical name: parameters that differ from their defaults, keyword form.
  const std::string& canonical() const { return canonical_; }

  // Checks P, count, elem_size, root against limits and restrictions; prepares the generator.
  // Throws Error(invalid_argument or unsupported).
  // `placement` goes into the header (the simulator's topology reads it); node-aware algorithms
  // need it given.
  // An irregular call gives its vectors (checked by check_counts; with counts, `count` must be
  // their largest entry).
  Bound bind(int64_t P, int64_t count, int32_t elem_size = 8, int64_t root = 0,
             const Placement& placement = {}, const CountVectors& vectors = {}) const;
  // Why this algorithm cannot run `call`, or "" when it can: the registry's one answer, used by
  // the C API, the interposition library and the tuning-table check alike. It reads only the
  // call's shape, so every rank of a communicator gets the same answer before any communication
  // (an MPI caller declines then, and the MPI's own collective runs).
  std::string refusal(const CallShape& call, CallCheck check = CallCheck::full) const;
  // Whether running it on a non-commutative op is wrong with this placement.
  bool needs_commutative(const Placement& placement = {}) const;
  // The closed-form cost for P ranks and `bytes` per rank (alltoall: per block).
  // Throws Error(unsupported) if the algorithm declares none, invalid_argument for P < 1 or
  // negative bytes.
  // Node-aware algorithms read the placement (not given: one node of P ranks).
  Cost cost(int64_t P, double bytes, const Placement& placement = {}) const;

 private:
  // bind's checks short of `prepare`; throws Error.
  void check_limits(int64_t P, int64_t count, int64_t elem_size, int64_t root,
                    const Placement& placement, bool need_placement) const;

  const AlgorithmSpec* spec_;
  ParamValues params_;
  std::string canonical_;
};

// An algorithm bound to one problem: generates any rank's program, or all of them.
class Bound {
 public:
  Bound(const Algorithm& algo, ScheduleHeader header, std::any prepared);
  const ScheduleHeader& header() const { return header_; }
  // One rank's program alone, in time proportional to its ops. `out` is cleared first.
  void generate_rank(int64_t rank, RankProgram& out) const;
  Schedule generate() const;
  // The algorithm's program_class of the rank (see AlgorithmSpec), or -1 where it declares none.
  int64_t program_class(int64_t rank) const;
  bool has_program_class() const { return static_cast<bool>(algo_.spec().program_class); }

 private:
  Algorithm algo_;
  ScheduleHeader header_;
  std::any prepared_;
};

// Largest P, count and elements per buffer accepted: well past any machine, well inside int64.
constexpr int64_t kMaxP = int64_t{1} << 31;
constexpr int64_t kMaxElems = int64_t{1} << 48;
// A buffer, and so any region of one, holds at most kMaxElems elements and fewer than 2^63
// bytes: the one limit of the generators (Algorithm::check_limits) and of the schedule readers,
// so that len * elem_size never wraps (a wrapped size was printed as "bytes sent -2^63").
constexpr bool buffer_fits(int64_t elems, int64_t elem_size) {
  return elems >= 0 && elems <= kMaxElems && (elem_size < 1 || elems <= INT64_MAX / elem_size);
}
// Largest element a generator takes (an MPI datatype may be larger: the call is then declined).
constexpr int64_t kMaxElemSize = int64_t{1} << 20;
// The most segments a segmented algorithm (a `seg` parameter) may cut one rank's message into:
// each is at least one op on every rank but the root, so more would take minutes and gigabytes
// per rank before anything could say so (2^26 ops of one rank: about 3 GiB).
constexpr int64_t kMaxSegments = int64_t{1} << 26;

}  // namespace collkit
