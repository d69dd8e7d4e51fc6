// The shared Bruck exchange (see bruck.hpp) and the counts and model of collkit/bruck.hpp.
#include "bruck.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "collkit/bruck.hpp"
#include "collkit/error.hpp"

namespace collkit {

// ---- counts ------------------------------------------------------------------------------

int bruck_rounds(int64_t P, int64_t r) {
  int w = 0;
  // pw < P <= 2^31 and r <= 2^31, so pw * r stays below 2^62.
  for (int64_t pw = 1; pw < P; pw *= r) ++w;
  return w;
}

int64_t bruck_step_blocks(int64_t P, int64_t r, int x, int64_t z) {
  int64_t rx = 1;  // r^x, saturating at P: a digit at or above r^x >= P is 0 for every i < P
  for (int k = 0; k < x && rx < P; ++k) rx *= r;
  if (rx >= P) return z == 0 ? P : 0;
  const int64_t period = rx * r;  // r^(x+1), below 2^62
  const int64_t full = (P / period) * rx, rest = P % period;
  return full + std::clamp<int64_t>(rest - z * rx, 0, rx);
}

std::vector<BruckStep> bruck_steps(int64_t P, int64_t r) {
  std::vector<BruckStep> steps;
  int64_t rx = 1;
  for (int x = 0; rx < P; ++x, rx *= r)
    for (int64_t z = 1; z < r && z * rx < P; ++z)
      steps.push_back({x, z, z * rx, bruck_step_blocks(P, r, x, z)});
  return steps;
}

namespace {

// numC and the total of numD in O(w), for the model's search over r.
void bruck_totals(int64_t P, int64_t r, int64_t* num_c, int64_t* total_d) {
  *num_c = 0;
  *total_d = 0;
  int64_t rx = 1;
  for (int x = 0; rx < P; ++x, rx *= r) {
    *num_c += std::min(r - 1, (P - 1) / rx);  // z * rx < P  <=>  z <= (P-1) / rx
    *total_d += P - bruck_step_blocks(P, r, x, 0);
  }
}

}  // namespace

double BruckModel::seconds(int64_t P, int64_t r, int64_t block_bytes) const {
  int64_t c, d;
  bruck_totals(P, r, &c, &d);
  return static_cast<double>(c) * alpha_s +
         static_cast<double>(d) * static_cast<double>(block_bytes) * beta_s_per_byte;
}

int64_t BruckModel::best_radix(int64_t P, int64_t block_bytes) const {
  if (P <= 2) return 2;
  // Every r up to 4096, then a geometric grid, then P itself: the search stays O(log P) per
  // candidate for P up to 2^31 while still seeing the r = P end (spread-out after rotation).
  int64_t best = 2;
  double best_t = std::numeric_limits<double>::infinity();
  auto consider = [&](int64_t r) {
    double t = seconds(P, r, block_bytes);
    if (t < best_t) best_t = t, best = r;
  };
  for (int64_t r = 2; r <= std::min<int64_t>(P, 4096); ++r) consider(r);
  for (int64_t r = 4096; r < P; r += r / 16) consider(r);
  consider(P);
  return best;
}

int64_t parse_bruck_radix(std::string_view algorithm, std::string_view text) {
  if (text == "auto") return 0;
  int64_t v = 0;
  bool ok = !text.empty() && text.size() <= 10;
  for (char c : text) {
    if (c < '0' || c > '9') {
      ok = false;
      break;
    }
    v = v * 10 + (c - '0');
  }
  if (!ok || v < 2 || v > kMaxBruckRadix)
    fail(ErrorKind::name, std::string(algorithm) + ": r = '" + std::string(text) +
                              "' must be 'auto' or an integer in [2, 2^31]");
  return v;
}

// ---- hazards -----------------------------------------------------------------------------

BlockHazards::BlockHazards(int64_t blocks)
    : writer_(static_cast<size_t>(blocks), kNoOp), reader_(static_cast<size_t>(blocks), kNoOp) {}

void BlockHazards::deps_to_read(int64_t a, int64_t b, std::vector<OpId>& deps) const {
  for (int64_t i = a; i < b; ++i) {
    OpId w = writer_[i];
    if (w != kNoOp && (deps.empty() || deps.back() != w)) deps.push_back(w);
  }
}

void BlockHazards::deps_to_write(int64_t a, int64_t b, std::vector<OpId>& deps) const {
  // The reader since the last write waited for that write, so it alone stands for both.
  for (int64_t i = a; i < b; ++i) {
    OpId d = reader_[i] != kNoOp ? reader_[i] : writer_[i];
    if (d != kNoOp && (deps.empty() || deps.back() != d)) deps.push_back(d);
  }
}

void BlockHazards::note_read(int64_t a, int64_t b, OpId op) {
  for (int64_t i = a; i < b; ++i) {
    // One reader per write is all the Bruck phases need; a second would need a reader list.
    if (reader_[i] != kNoOp) throw std::logic_error("BlockHazards: block read twice");
    reader_[i] = op;
  }
}

void BlockHazards::note_write(int64_t a, int64_t b, OpId op) {
  for (int64_t i = a; i < b; ++i) writer_[i] = op, reader_[i] = kNoOp;
}

void DepDedup::operator()(std::vector<OpId>& deps) {
  if (++epoch_ == 0) std::fill(stamp_.begin(), stamp_.end(), 0), epoch_ = 1;
  size_t kept = 0;
  for (OpId d : deps) {
    if (d >= stamp_.size()) stamp_.resize(std::max<size_t>(d + 1, 2 * stamp_.size()), 0);
    if (stamp_[d] == epoch_) continue;
    stamp_[d] = epoch_;
    deps[kept++] = d;
  }
  deps.resize(kept);
}

// ---- the exchange ------------------------------------------------------------------------

void bruck_exchange(RankBuilder& b, int64_t n, int64_t r, const BruckWork& w, BlockHazards& work) {
  const int64_t P = b.P(), rank = b.rank();
  const std::vector<BruckStep> steps = bruck_steps(P, r);
  if (steps.empty()) return;

  // The steps of one round are in flight together, so the pack and receive buffers hold a whole
  // round; the next round reuses them once the ops that used each block are done.
  int64_t round_max = 0, round_sum = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    round_sum = (i > 0 && steps[i].x == steps[i - 1].x ? round_sum : 0) + steps[i].blocks;
    round_max = std::max(round_max, round_sum);
  }
  // The pack buffer only if some step is not one contiguous run (none is when r >= P).
  const BufId rbuf = b.scratch(round_max * n);
  BufId sbuf = kIn;
  BlockHazards packed(round_max), received(round_max);

  struct Piece {
    int64_t at, len, pack;  // blocks [at, at + len) of the work buffer; offset in the message
  };
  std::vector<Piece> pieces;
  std::vector<OpId> deps;
  DepDedup unique_deps;
  auto add_piece = [&](int64_t at, int64_t len, int64_t pack) {
    if (!pieces.empty() && pieces.back().at + pieces.back().len == at)
      pieces.back().len += len;
    else
      pieces.push_back({at, len, pack});
  };

  int64_t off = 0;  // where this step's blocks start in sbuf / rbuf
  int x = -1;
  for (const BruckStep& s : steps) {
    if (s.x != x) {
      x = s.x;
      off = 0;
      b.set_stage(static_cast<uint16_t>(1 + x));
    }
    // The blocks with digit x = z: runs of r^x relative indices, one every r^(x+1).
    const int64_t rx = s.dist / s.z, period = rx * r;
    pieces.clear();
    for (int64_t start = s.dist, pack = 0; start < P; start += period) {
      const int64_t len = std::min(start + rx, P) - start;
      const int64_t at = (start + w.shift) % P;
      if (at + len <= P) {
        add_piece(at, len, pack);
      } else {  // the run wraps around the end of the work buffer
        add_piece(at, P - at, pack);
        add_piece(0, len - (P - at), pack + (P - at));
      }
      pack += len;
    }
    const int64_t to = ((rank + w.direction * s.dist) % P + P) % P;
    const int64_t from = ((rank - w.direction * s.dist) % P + P) % P;

    // Send: straight from the work buffer when the blocks are one run, else pack first.
    OpId send;
    if (pieces.size() == 1) {
      const Piece& p = pieces[0];
      deps.clear();
      work.deps_to_read(p.at, p.at + p.len, deps);
      unique_deps(deps);
      send = b.send(to, {w.buf, p.at * n, p.len * n}, deps);
      work.note_read(p.at, p.at + p.len, send);
    } else {
      if (sbuf == kIn) sbuf = b.scratch(round_max * n);
      for (const Piece& p : pieces) {
        deps.clear();
        packed.deps_to_write(off + p.pack, off + p.pack + p.len, deps);
        work.deps_to_read(p.at, p.at + p.len, deps);
        unique_deps(deps);
        OpId c = b.copy({sbuf, (off + p.pack) * n, p.len * n}, {w.buf, p.at * n, p.len * n}, deps);
        work.note_read(p.at, p.at + p.len, c);
        packed.note_write(off + p.pack, off + p.pack + p.len, c);
      }
      deps.clear();
      packed.deps_to_read(off, off + s.blocks, deps);
      unique_deps(deps);
      send = b.send(to, {sbuf, off * n, s.blocks * n}, deps);
      packed.note_read(off, off + s.blocks, send);
    }

    // Receive the same relative blocks from the other side, then unpack them into the places
    // just sent from (which is why the receive cannot land in the work buffer directly: it would
    // have to wait for the send, and every rank waiting so is a cycle).
    deps.clear();
    received.deps_to_write(off, off + s.blocks, deps);
    unique_deps(deps);
    const OpId recv = b.recv(from, {rbuf, off * n, s.blocks * n}, deps);
    received.note_write(off, off + s.blocks, recv);
    for (const Piece& p : pieces) {
      deps.clear();
      received.deps_to_read(off + p.pack, off + p.pack + p.len, deps);
      work.deps_to_write(p.at, p.at + p.len, deps);
      unique_deps(deps);
      OpId c = b.copy({w.buf, p.at * n, p.len * n}, {rbuf, (off + p.pack) * n, p.len * n}, deps);
      received.note_read(off + p.pack, off + p.pack + p.len, c);
      work.note_write(p.at, p.at + p.len, c);
    }
    off += s.blocks;
  }
}

}  // namespace collkit

namespace collkit {

ParamSpec bruck_radix_param() {
  return {.name = "r",
          .type = ParamType::word,
          .default_value = "2",
          .min = INT64_MIN,
          .max = INT64_MAX,
          .doc =
              "radix: an integer >= 2 (r >= P acts as r = P: one round of P-1 steps), or "
              "'auto': the r with the least alpha-beta model time numC alpha + numD N beta "
              "for this P and block size N",
          .grid = {"2", "3", "4", "auto"},
          .check = [](std::string_view r) { parse_bruck_radix("alltoall:bruck", r); }};
}

std::any bruck_prepare(const GenArgs& a) {
  int64_t r = parse_bruck_radix(a.header.algorithm, a.params->word("r"));
  if (r == 0) r = BruckModel{}.best_radix(a.header.P, a.header.count * a.header.elem_size);
  return BruckPrepared{r};
}

int64_t bruck_radix(const GenArgs& a) {
  return std::any_cast<const BruckPrepared&>(*a.prepared).r;
}

}  // namespace collkit
