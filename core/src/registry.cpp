#include "collkit/registry.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <memory>

#include "collkit/error.hpp"

namespace collkit {

namespace {

// Function-local static: registration runs during static initialisation of other objects.
std::vector<std::unique_ptr<AlgorithmSpec>>& registry() {
  static std::vector<std::unique_ptr<AlgorithmSpec>> r;
  return r;
}

int64_t parse_integer(const std::string& v, bool* ok) {
  *ok = false;
  if (v.empty() || v.size() > 19) return 0;
  size_t i = (v[0] == '-' || v[0] == '+') ? 1 : 0;
  if (i == v.size()) return 0;
  int64_t x = 0;
  for (; i < v.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(v[i]))) return 0;
    x = x * 10 + (v[i] - '0');
  }
  *ok = true;
  return v[0] == '-' ? -x : x;
}

std::string param_value_text(const ParamSpec& p, const ParamValues::Value& v) {
  switch (p.type) {
    case ParamType::integer:
      return std::to_string(v.i);
    case ParamType::size:
      return format_size(v.i);
    case ParamType::word:
      return v.s;
    case ParamType::list: {
      std::string s;
      for (size_t i = 0; i < v.l.size(); ++i) s += (i ? "," : "") + v.l[i];
      return s;
    }
    case ParamType::algorithm:
      return v.a ? v.a->canonical() : std::string();
  }
  return {};
}

// An algorithm parameter's value: a nested name of one of the allowed collectives.
ParamValues::Value algorithm_value(const ParamSpec& p, const ParsedName* nested,
                                   const std::string& value, std::string_view top, size_t pos) {
  std::string allowed;
  for (Collective c : p.collectives)
    allowed += (allowed.empty() ? "" : " or ") + std::string(to_string(c));
  if (!nested)
    fail_at(ErrorKind::name, top, pos,
            "parameter '" + p.name + "' takes a " + allowed + " algorithm name, such as " +
                std::string(to_string(p.collectives.front())) + ":..., not '" + value + "'");
  if (std::find(p.collectives.begin(), p.collectives.end(), nested->collective) ==
      p.collectives.end())
    fail_at(ErrorKind::name, top, pos,
            "parameter '" + p.name + "' takes a " + allowed + " algorithm, not a " +
                std::string(to_string(nested->collective)) + " one");
  ParamValues::Value v;
  v.a = std::make_shared<const Algorithm>(*nested, top);
  return v;
}

// Parse one value of a scalar parameter; `text`/`pos` locate it for the caret.
ParamValues::Value parse_value(const ParamSpec& p, const std::string& value, std::string_view text,
                               size_t pos) {
  ParamValues::Value v;
  switch (p.type) {
    case ParamType::integer: {
      bool ok;
      v.i = parse_integer(value, &ok);
      if (!ok)
        fail_at(ErrorKind::name, text, pos,
                "parameter '" + p.name + "' takes an integer, not '" + value + "'");
      break;
    }
    case ParamType::size:
      try {
        v.i = parse_size(value);
      } catch (const Error& e) {
        fail_at(ErrorKind::name, text, pos,
                "parameter '" + p.name + "' takes a size such as 8KiB, not '" + value + "'");
      }
      break;
    case ParamType::word:
      v.s = value;
      if (p.check) {
        try {
          p.check(value);
        } catch (const Error& e) {
          fail_at(ErrorKind::name, text, pos, e.what());
        }
      }
      break;
    case ParamType::list:
      v.l = {value};
      break;
    case ParamType::algorithm: {
      ParsedName pn = parse_name(value);  // a default: the registrar's own text
      v = algorithm_value(p, &pn, value, value, 0);
      break;
    }
  }
  if ((p.type == ParamType::integer || p.type == ParamType::size) && (v.i < p.min || v.i > p.max))
    fail_at(ErrorKind::name, text, pos,
            "parameter '" + p.name + "' = " + value + " is out of range [" +
                (p.min == INT64_MIN ? std::string("-inf") : std::to_string(p.min)) + ", " +
                (p.max == INT64_MAX ? std::string("inf") : std::to_string(p.max)) + "]");
  return v;
}

}  // namespace

int64_t ParamValues::integer(const std::string& name) const {
  return values_.at(name).i;
}
const std::string& ParamValues::word(const std::string& name) const {
  return values_.at(name).s;
}
const std::vector<std::string>& ParamValues::list(const std::string& name) const {
  return values_.at(name).l;
}
const Algorithm& ParamValues::algorithm(const std::string& name) const {
  return *values_.at(name).a;
}

Registrar::Registrar(AlgorithmSpec spec) {
  for (const auto& s : registry())
    if (s->collective == spec.collective && s->name == spec.name)
      throw std::logic_error("algorithm registered twice: " + spec.name);
  for (const auto& e : spec.mpi_equivalents)
    if (parse_row_name(e).kind != RowName::Kind::mpi)
      throw std::logic_error(spec.name + ": MPI equivalent '" + e + "' is not impl:algo");
  registry().push_back(std::make_unique<AlgorithmSpec>(std::move(spec)));
}

std::vector<const AlgorithmSpec*> all_algorithms() {
  std::vector<const AlgorithmSpec*> out;
  for (const auto& s : registry()) out.push_back(s.get());
  std::sort(out.begin(), out.end(), [](const AlgorithmSpec* a, const AlgorithmSpec* b) {
    return std::pair(a->collective, a->name) < std::pair(b->collective, b->name);
  });
  return out;
}

const AlgorithmSpec* find_algorithm(Collective c, std::string_view name) {
  for (const auto& s : registry())
    if (s->collective == c && s->name == name) return s.get();
  return nullptr;
}

Algorithm::Algorithm(std::string_view name) : Algorithm(parse_name(name), name) {}

Algorithm::Algorithm(const ParsedName& pn, std::string_view top) {
  spec_ = find_algorithm(pn.collective, pn.algorithm);
  if (!spec_) {
    std::string known;
    for (const auto* s : all_algorithms())
      if (s->collective == pn.collective) known += (known.empty() ? "" : ", ") + s->name;
    fail_at(ErrorKind::name, top, pn.algo_pos,
            "unknown algorithm '" + pn.algorithm + "' for " +
                std::string(to_string(pn.collective)) +
                " (known: " + (known.empty() ? "none yet" : known) + ")");
  }
  const ParamSpec* list_param = nullptr;
  for (const auto& p : spec_->params)
    if (p.type == ParamType::list) list_param = &p;

  // Positional arguments: all into the list parameter if there is one, else one per parameter
  // in declaration order.
  size_t next_positional = 0;
  for (const auto& a : pn.args) {
    const ParamSpec* p = nullptr;
    if (a.key.empty()) {
      if (list_param) {
        if (a.nested)
          fail_at(ErrorKind::name, top, a.pos,
                  pn.algorithm + " takes words here, not an algorithm name");
        params_.values_[list_param->name].l.push_back(a.value);
        continue;
      }
      if (next_positional >= spec_->params.size())
        fail_at(ErrorKind::name, top, a.pos,
                "too many arguments: " + pn.algorithm + " takes " +
                    std::to_string(spec_->params.size()));
      p = &spec_->params[next_positional++];
    } else {
      for (const auto& q : spec_->params)
        if (q.name == a.key) p = &q;
      if (!p) {
        std::string known;
        for (const auto& q : spec_->params) known += (known.empty() ? "" : ", ") + q.name;
        fail_at(ErrorKind::name, top, a.pos,
                "unknown parameter '" + a.key + "' for " + pn.algorithm +
                    " (parameters: " + (known.empty() ? "none" : known) + ")");
      }
      if (params_.has(p->name))
        fail_at(ErrorKind::name, top, a.pos, "parameter '" + p->name + "' given twice");
    }
    if (p->type == ParamType::list)
      params_.values_[p->name].l.push_back(a.value);
    else if (p->type == ParamType::algorithm)
      params_.values_[p->name] = algorithm_value(*p, a.nested.get(), a.value, top, a.pos);
    else if (a.nested)
      fail_at(ErrorKind::name, top, a.pos,
              "parameter '" + p->name + "' takes a value, not an algorithm name");
    else
      params_.values_[p->name] = parse_value(*p, a.value, top, a.pos);
  }
  // Defaults, and required parameters.
  for (const auto& p : spec_->params) {
    if (params_.has(p.name)) continue;
    if (p.default_value.empty() && p.type != ParamType::list)
      fail_at(ErrorKind::name, top, pn.begin + pn.text.size(),
              "missing parameter '" + p.name + "' of " + pn.algorithm + ": " + p.doc);
    if (p.type == ParamType::list) {
      if (!p.default_value.empty())
        fail(ErrorKind::name, "internal: list defaults are not supported");
      params_.values_[p.name] = {};
    } else {
      params_.values_[p.name] = parse_value(p, p.default_value, p.default_value, 0);
    }
  }
  // Canonical form: keyword arguments that differ from the default, in declaration order;
  // the list parameter positionally.
  canonical_ = std::string(to_string(spec_->collective)) + ":" + spec_->name;
  std::string args;
  for (const auto& p : spec_->params) {
    const auto& v = params_.values_.at(p.name);
    std::string s = param_value_text(p, v);
    if (p.type == ParamType::list) {
      if (!s.empty()) args += (args.empty() ? "" : ",") + s;
      continue;
    }
    std::string d = param_value_text(p, parse_value(p, p.default_value, p.default_value, 0));
    if (s != d) args += (args.empty() ? "" : ",") + p.name + "=" + s;
  }
  if (!args.empty()) canonical_ += "(" + args + ")";
}

bool Algorithm::needs_commutative(const Placement& placement) const {
  if (spec_->restrictions.commutative_op) return true;
  return spec_->needs_commutative && spec_->needs_commutative(params_, placement);
}

void Algorithm::check_limits(int64_t P, int64_t count, int64_t elem_size, int64_t root,
                             const Placement& placement, bool need_placement) const {
  // Built only for a message: this runs on every call the MPI side routes.
  const auto who = [this] { return canonical_ + ": "; };
  if (P < 1 || P > kMaxP)
    fail(ErrorKind::invalid_argument,
         who() + "P = " + std::to_string(P) + " must be in [1, " + std::to_string(kMaxP) + "]");
  if (count < 0)
    fail(ErrorKind::invalid_argument, who() + "count = " + std::to_string(count) + " is negative");
  if (elem_size < 1 || elem_size > kMaxElemSize)
    fail(ErrorKind::invalid_argument,
         who() + "element size = " + std::to_string(elem_size) + " bytes must be in [1, 1 MiB]");
  const int64_t elems_per_buffer = std::max<int64_t>(1, max_blocks(spec_of(spec_->collective), P));
  if (count > kMaxElems / elems_per_buffer || count > INT64_MAX / elem_size / elems_per_buffer)
    fail(ErrorKind::invalid_argument, who() + "count = " + std::to_string(count) +
                                          " does not fit: a buffer may hold at most 2^48 "
                                          "elements");
  if (is_rooted(spec_->collective)) {
    if (root < 0 || root >= P)
      fail(ErrorKind::invalid_argument,
           who() + "root = " + std::to_string(root) + " is not a rank of P = " + std::to_string(P));
  } else if (root != 0) {
    fail(ErrorKind::invalid_argument,
         who() + std::string(to_string(spec_->collective)) + " has no root");
  }
  const Restrictions& r = spec_->restrictions;
  if (r.power_of_two && !std::has_single_bit(static_cast<uint64_t>(P)))
    fail(ErrorKind::unsupported, who() + "needs P to be a power of two, not " + std::to_string(P));
  if (P < r.min_P)
    fail(ErrorKind::unsupported,
         who() + "needs P >= " + std::to_string(r.min_P) + ", not " + std::to_string(P));
  if (r.max_P > 0 && P > r.max_P)
    fail(ErrorKind::unsupported,
         who() + "needs P <= " + std::to_string(r.max_P) + ", not " + std::to_string(P));
  if (placement.rpn < 0 || placement.rpn > kMaxP)
    fail(ErrorKind::invalid_argument,
         who() + "ranks per node = " + std::to_string(placement.rpn) + " must be in [1, 2^31]");
  if (need_placement && r.needs_placement && !placement.given())
    fail(ErrorKind::unsupported,
         who() +
             "is node-aware: it needs the placement of ranks on nodes (--rpn N, and "
             "--order contiguous|round_robin)");
  if (params_.has("seg") && P > 1 && elem_size >= 1) {  // estimate before generating
    const int64_t seg_bytes = params_.integer("seg");
    const int64_t seg = seg_bytes <= 0 ? count : std::max<int64_t>(1, seg_bytes / elem_size);
    const int64_t segments = seg <= 0 ? 0 : count / seg + (count % seg != 0);
    if (segments > kMaxSegments)
      fail(ErrorKind::invalid_argument,
           who() + "count " + std::to_string(count) + " in segments of " + std::to_string(seg) +
               " elements is " + std::to_string(segments) +
               " segments, at least as many ops on every rank (more than 2^26: minutes and " +
               "gigabytes per rank); raise seg or lower the count");
  }
}

std::string Algorithm::refusal(const CallShape& call, CallCheck check) const {
  try {
    if (check == CallCheck::full && call.elem_size >= 1 && call.elem_size <= kMaxElemSize)
      (void)bind(call.P, call.count, static_cast<int32_t>(call.elem_size), call.root,
                 call.placement, call.vectors ? *call.vectors : CountVectors{});
    else
      check_limits(call.P, call.count, call.elem_size, call.root, call.placement,
                   check == CallCheck::full);
  } catch (const Error& e) {
    // The generator's own checks may not name the algorithm: the answer always does.
    // One line: a caret diagram under the name belongs to the CLI, not to a decision's reason.
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    return what.starts_with(canonical_) ? what : canonical_ + ": " + what;
  }
  if (!call.exact && spec_->restrictions.exact_op)
    return canonical_ +
           ": needs an op exact under any grouping (integer sum, product, min or max, a logical "
           "or bitwise op)";
  if (!call.commutative && needs_commutative(call.placement))
    return canonical_ + ": needs a commutative op" +
           (spec_->restrictions.commutative_op || !call.placement.given()
                ? std::string()
                : " on " + call.placement.describe());
  return "";
}

Bound Algorithm::bind(int64_t P, int64_t count, int32_t elem_size, int64_t root,
                      const Placement& placement, const CountVectors& vectors) const {
  check_limits(P, count, elem_size, root, placement, true);
  ScheduleHeader h;
  h.collective = spec_->collective;
  h.placement = placement;
  h.algorithm = canonical_;
  h.P = P;
  h.count = count;
  h.elem_size = elem_size;
  h.root = root;
  h.counts = vectors.counts;
  h.in_displs = vectors.in_displs;
  h.out_displs = vectors.out_displs;
  try {
    check_counts(h);
  } catch (const Error& e) {
    fail(e.kind(), canonical_ + ": " + e.what());
  }
  std::any prepared;
  if (spec_->prepare) {
    GenArgs a{h, &params_, nullptr};
    prepared = spec_->prepare(a);
  }
  return Bound(*this, h, std::move(prepared));
}

Cost Algorithm::cost(int64_t P, double bytes, const Placement& placement) const {
  if (!spec_->model) fail(ErrorKind::unsupported, canonical_ + ": no closed-form cost is declared");
  if (P < 1 || P > kMaxP || !(bytes >= 0))
    fail(ErrorKind::invalid_argument,
         canonical_ + ": P = " + std::to_string(P) + " must be in [1, 2^31] and bytes >= 0");
  return spec_->model(CostArgs{P, bytes, &params_, placement});
}

std::vector<std::string> parameter_grid(const AlgorithmSpec& spec) {
  const std::string base = std::string(to_string(spec.collective)) + ":" + spec.name;
  std::vector<std::string> names{""};  // the argument lists so far
  for (const ParamSpec& p : spec.params) {
    if (p.grid.empty()) {
      if (p.default_value.empty()) return {};
      continue;
    }
    std::vector<std::string> next;
    for (const std::string& args : names)
      for (const std::string& v : p.grid)
        next.push_back(args + (args.empty() ? "" : ",") + p.name + "=" + v);
    names = std::move(next);
  }
  for (std::string& args : names) args = args.empty() ? base : base + "(" + args + ")";
  return names;
}

Bound::Bound(const Algorithm& algo, ScheduleHeader header, std::any prepared)
    : algo_(algo), header_(std::move(header)), prepared_(std::move(prepared)) {}

void Bound::generate_rank(int64_t rank, RankProgram& out) const {
  if (rank < 0 || rank >= header_.P)
    fail(ErrorKind::invalid_argument,
         "rank " + std::to_string(rank) + " is not in [0, " + std::to_string(header_.P) + ")");
  out.clear(rank);
  RankBuilder b(out, header_.P);
  GenArgs a{header_, &algo_.params(), &prepared_};
  algo_.spec().generate(a, b);
}

int64_t Bound::program_class(int64_t rank) const {
  if (!algo_.spec().program_class || rank < 0 || rank >= header_.P) return -1;
  GenArgs a{header_, &algo_.params(), &prepared_};
  return algo_.spec().program_class(a, rank);
}

Schedule Bound::generate() const {
  Schedule s(header_);
  RankProgram p;
  // Size the flat arrays once from the largest of a few sampled ranks (algorithms treat ranks
  // near 0, P/2 and P-1 differently); untouched reserve costs address space, not memory.
  const int64_t P = header_.P;
  size_t ops = 0, deps = 0, scratch = 0;
  for (int64_t r : {int64_t{0}, int64_t{1}, P / 2, P / 2 + 1, P - 2, P - 1}) {
    if (r < 0 || r >= P) continue;
    generate_rank(r, p);
    ops = std::max(ops, p.ops.size());
    deps = std::max(deps, p.deps.size());
    scratch = std::max(scratch, p.scratch.size());
  }
  s.reserve(ops * static_cast<size_t>(P) + 64, deps * static_cast<size_t>(P) + 64,
            scratch * static_cast<size_t>(P) + 64);
  for (int64_t r = 0; r < P; ++r) {
    generate_rank(r, p);
    s.append_rank(p.view());
  }
  return s;
}

}  // namespace collkit
