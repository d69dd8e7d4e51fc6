// Parsing and checking the recursive multiplying schedule language (see collkit/rm/stages.hpp,
// public: the bindings read it too).
#include <bit>
#include <cctype>
#include <optional>

#include "collkit/error.hpp"
#include "collkit/name.hpp"
#include "collkit/registry.hpp"
#include "collkit/rm/stages.hpp"

namespace collkit::rm {
namespace {

constexpr const char* kForms = "aB, cTmB, eTmB, mRgGaB or nRgGaB (e.g. a8, c6m2, m1g2a3)";

// Reads an unsigned decimal at t[i..]; nullopt if there is none or it exceeds kMaxP.
std::optional<int64_t> read_int(std::string_view t, size_t& i) {
  size_t start = i;
  int64_t v = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) {
    if (i - start >= 10) return std::nullopt;
    v = v * 10 + (t[i] - '0');
    ++i;
  }
  if (i == start || v > kMaxP) return std::nullopt;
  return v;
}

bool expect(std::string_view t, size_t& i, char c) {
  if (i < t.size() && t[i] == c) {
    ++i;
    return true;
  }
  return false;
}

// nullopt and a reason for a malformed token.
std::optional<Stage> try_parse(std::string_view t, std::string* why) {
  *why = "stage '" + std::string(t) + "' is not " + kForms;
  if (t.empty()) {
    *why = std::string("empty stage: each stage is ") + kForms;
    return std::nullopt;
  }
  size_t i = 1;
  Stage s;
  std::optional<int64_t> x, y, z;
  switch (t[0]) {
    case 'a':
      s.kind = StageKind::factor;
      if (!(x = read_int(t, i))) return std::nullopt;
      s.base = *x;
      break;
    case 'c':
    case 'e':
      s.kind = t[0] == 'c' ? StageKind::collapse : StageKind::expand;
      if (!(x = read_int(t, i)) || !expect(t, i, 'm') || !(y = read_int(t, i))) return std::nullopt;
      s.threshold = *x;
      s.base = *y;
      break;
    case 'm':
    case 'n':
      s.kind = t[0] == 'm' ? StageKind::merge : StageKind::invmerge;
      if (!(x = read_int(t, i)) || !expect(t, i, 'g') || !(y = read_int(t, i)) ||
          !expect(t, i, 'a') || !(z = read_int(t, i)))
        return std::nullopt;
      s.remainder = *x;
      s.groups = *y;
      s.base = *z;
      break;
    default:
      return std::nullopt;
  }
  if (i != t.size()) return std::nullopt;
  return s;
}

}  // namespace

Stage parse_stage(std::string_view token) {
  std::string why;
  auto s = try_parse(token, &why);
  if (!s) fail(ErrorKind::name, why);
  return *s;
}

std::string to_string(const Stage& s) {
  auto n = [](int64_t v) { return std::to_string(v); };
  switch (s.kind) {
    case StageKind::factor:
      return "a" + n(s.base);
    case StageKind::collapse:
      return "c" + n(s.threshold) + "m" + n(s.base);
    case StageKind::expand:
      return "e" + n(s.threshold) + "m" + n(s.base);
    case StageKind::merge:
      return "m" + n(s.remainder) + "g" + n(s.groups) + "a" + n(s.base);
    case StageKind::invmerge:
      return "n" + n(s.remainder) + "g" + n(s.groups) + "a" + n(s.base);
  }
  return "?";
}

std::string to_string(const std::vector<Stage>& stages) {
  std::string out;
  for (size_t i = 0; i < stages.size(); ++i) out += (i ? "," : "") + to_string(stages[i]);
  return out;
}

std::vector<Stage> recursive_doubling_stages(int64_t P) {
  std::vector<Stage> out;
  if (P <= 1) return out;
  const int64_t pof2 = int64_t{1} << (std::bit_width(static_cast<uint64_t>(P)) - 1);
  const int64_t rem = P - pof2;
  if (rem) out.push_back({StageKind::collapse, 2, 2 * rem, 0, 0});
  for (int64_t m = 1; m < pof2; m <<= 1) out.push_back({StageKind::factor, 2, 0, 0, 0});
  if (rem) out.push_back({StageKind::expand, 2, 2 * rem, 0, 0});
  return out;
}

Plan make_plan(const std::vector<std::string>& tokens_in, int64_t P) {
  std::vector<std::string> tokens = tokens_in;
  if (tokens.empty())
    for (const Stage& s : recursive_doubling_stages(P)) tokens.push_back(to_string(s));

  // The list as the user wrote it, with each token's position, for carets.
  std::string text = "rm(";
  std::vector<size_t> pos;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) text += ",";
    pos.push_back(text.size());
    text += tokens[i];
  }
  text += ")";
  const std::string atP = " (P = " + std::to_string(P) + ")";
  auto bad = [&](size_t i, const std::string& what) {
    fail_at(ErrorKind::invalid_argument, text, i < pos.size() ? pos[i] : text.size() - 1,
            what + atP);
  };

  Plan plan;
  plan.P = P;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string why;
    auto s = try_parse(tokens[i], &why);
    if (!s) fail_at(ErrorKind::name, text, pos[i], why);
    plan.stages.push_back(*s);
  }
  const auto& st = plan.stages;
  const size_t n = st.size();

  // Numbers that no position can fix.
  for (size_t i = 0; i < n; ++i) {
    const Stage& s = st[i];
    const std::string name = "'" + to_string(s) + "'";
    if (s.base < 2) bad(i, "stage " + name + ": the base must be at least 2");
    if (s.kind == StageKind::collapse || s.kind == StageKind::expand) {
      if (s.threshold % s.base != 0)
        bad(i, "stage " + name + ": the threshold " + std::to_string(s.threshold) +
                   " is not divisible by the base " + std::to_string(s.base));
      if (s.threshold < s.base)
        bad(i, "stage " + name + ": the threshold must be at least the base");
      if (s.threshold > P)
        bad(i, "stage " + name + ": the threshold " + std::to_string(s.threshold) +
                   " exceeds the number of ranks");
    }
    if (s.kind == StageKind::merge || s.kind == StageKind::invmerge) {
      if (s.remainder < 1) bad(i, "stage " + name + ": the remainder must be at least 1");
      if (s.remainder >= P)
        bad(i, "stage " + name + ": the remainder " + std::to_string(s.remainder) +
                   " leaves no internal ranks");
      if (s.groups < 1) bad(i, "stage " + name + ": the number of groups must be at least 1");
    }
  }

  // The shape: factored, split (c ... e) or merged (m ... n).
  std::optional<size_t> ci, ei, mi, ni;
  for (size_t i = 0; i < n; ++i) {
    const Stage& s = st[i];
    const std::string name = "'" + to_string(s) + "'";
    switch (s.kind) {
      case StageKind::factor:
        break;
      case StageKind::collapse:
        if (ci) bad(i, "a second collapse " + name + ": only one collapse/expand pair is allowed");
        if (i != 0) bad(i, "the collapse " + name + " must be the first stage");
        ci = i;
        break;
      case StageKind::expand:
        if (!ci) bad(i, "the expand " + name + " has no collapse before it");
        if (ei) bad(i, "a second expand " + name + ": only one collapse/expand pair is allowed");
        if (st[*ci].threshold != s.threshold || st[*ci].base != s.base)
          bad(i, "the expand " + name + " does not undo the collapse '" + to_string(st[*ci]) +
                     "': write e" + std::to_string(st[*ci].threshold) + "m" +
                     std::to_string(st[*ci].base));
        if (i + 1 != n) bad(i, "the expand " + name + " must be the last stage");
        ei = i;
        break;
      case StageKind::merge:
        if (ci)
          bad(i, "the merge " + name +
                     " cannot be combined with a collapse: a schedule is "
                     "split (cTmB...eTmB) or merged (mRgGaB...nRgGaB), not both");
        if (mi) bad(i, "a second merge " + name + ": only one merge/inverse merge pair is allowed");
        if (i != 0) bad(i, "the merge " + name + " must be the first stage");
        mi = i;
        break;
      case StageKind::invmerge:
        if (ci) bad(i, "the inverse merge " + name + " cannot be combined with a collapse");
        if (!mi) bad(i, "the inverse merge " + name + " has no merge before it");
        if (ni) bad(i, "a second inverse merge " + name);
        if (st[*mi].remainder != s.remainder)
          bad(i, "the inverse merge " + name + " returns to " + std::to_string(s.remainder) +
                     " remainder ranks but the merge '" + to_string(st[*mi]) + "' took " +
                     std::to_string(st[*mi].remainder));
        if (i + 1 != n) bad(i, "the inverse merge " + name + " must be the last stage");
        ni = i;
        break;
    }
  }
  if (ci && !ei)
    bad(*ci, "the collapse '" + to_string(st[*ci]) +
                 "' is never expanded: end the schedule with e" +
                 std::to_string(st[*ci].threshold) + "m" + std::to_string(st[*ci].base));
  if (mi && !ni)
    bad(*mi, "the merge '" + to_string(st[*mi]) + "' is never inverted: end the schedule with n" +
                 std::to_string(st[*mi].remainder) + "gGaB");

  // The hypercuboid and its product.
  int64_t inner = P;
  std::string why_inner = "P";
  if (ci) {
    plan.shape = Shape::split;
    plan.threshold = st[*ci].threshold;
    plan.collapse_base = st[*ci].base;
    inner = P - plan.threshold + plan.threshold / plan.collapse_base;
    why_inner =
        "the collapse '" + to_string(st[*ci]) + "' leaves " + std::to_string(inner) + " ranks, but";
  } else if (mi) {
    plan.shape = Shape::merged;
    plan.remainder = st[*mi].remainder;
    inner = P - plan.remainder;
    why_inner = "the merge leaves " + std::to_string(inner) + " internal ranks, but";
  }
  plan.inner = inner;
  int64_t product = 1;
  plan.mask.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Stage& s = st[i];
    if (s.kind == StageKind::collapse || s.kind == StageKind::expand) continue;
    plan.mask[i] = product;
    if (product > inner / s.base || inner % (product * s.base) != 0) {
      std::string msg = ci || mi ? why_inner + " the stages" : "the stages";
      bad(i, msg + " up to '" + to_string(s) + "' multiply to " + std::to_string(product) + "·" +
                 std::to_string(s.base) + ", which does not divide " + std::to_string(inner));
    }
    product *= s.base;
  }
  if (product != inner) {
    std::string msg = ci || mi ? why_inner + " the stages" : "the stages";
    bad(n, msg + " multiply to " + std::to_string(product) + ", not " + std::to_string(inner) +
               (product < inner ? ": add a stage" : ""));
  }
  if (mi) {
    if (*ni - *mi < 1) bad(*mi, "a merged schedule needs at least two stages");
    const Stage& m = st[*mi];
    const Stage& nv = st[*ni];
    if (m.groups != inner / m.base)
      bad(*mi, "the merge '" + to_string(m) + "' has " + std::to_string(inner / m.base) +
                   " groups of " + std::to_string(m.base) + " (" + std::to_string(inner) + "/" +
                   std::to_string(m.base) + "), not " + std::to_string(m.groups));
    if (nv.groups != inner / nv.base)
      bad(*ni, "the inverse merge '" + to_string(nv) + "' has " + std::to_string(inner / nv.base) +
                   " groups of " + std::to_string(nv.base) + " (" + std::to_string(inner) + "/" +
                   std::to_string(nv.base) + "), not " + std::to_string(nv.groups));
  }
  return plan;
}

}  // namespace collkit::rm
