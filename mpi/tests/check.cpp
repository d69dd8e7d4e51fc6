// collkit_check: collkit's allreduce against the MPI's own, on random data. Run under mpiexec
// with any number of ranks; rank 0 prints one FAIL line per failing case and a SUMMARY line, and
// the exit status is 1 when anything failed.
//
// Cases: communicators (world, a dup, a split in halves, the world with ranks reversed) x
// datatypes (int, float, double, double complex, a vector type with gaps, a 2x2 matrix type) x
// ops (SUM, MAX, PROD, BAND; user-defined sum / max on the vector type; a user-defined
// non-commutative op on the matrix type) x counts x IN_PLACE or not.
// Integers must equal native; floating point must be bitwise identical across ranks and within
// a tolerance of native; the gaps of the vector type must be left untouched; the non-commutative
// op must equal the rank-ordered product. The MPI's reference algorithm is whatever its
// environment forces (MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM, OMPI_MCA_coll_tuned_*).
// Also checks the C API's errors (wrong collective, unknown algorithm, bad count) and the
// native paths of reduce / bcast / alltoall / barrier.
//
//   collkit_check [--algos rd] [--counts 0,1,2,7,13,1009,65537] [--quick] [--errors]
#include <mpi.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../src/bench_common.hpp"
#include "collkit.h"

using collkit::mpi::Args;
using collkit::mpi::split;

namespace {

int g_failures = 0, g_cases = 0, g_world_rank = 0;

// 2x2 matrices of uint32 multiplied mod 2^32: associative, not commutative.
void matmul_op(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<uint32_t*>(in);
  auto* b = static_cast<uint32_t*>(inout);
  for (int i = 0; i < *len; ++i, a += 4, b += 4) {
    uint32_t c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                     a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
    std::memcpy(b, c, sizeof c);  // inout = in * inout
  }
}

// Sum and max over the vector type (ints at 0 and 2 of every 3): MPI's predefined ops need not
// accept derived types, so these are user-defined, commutative ops that leave the gaps alone.
void vec_sum_op(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<int*>(in);
  auto* b = static_cast<int*>(inout);
  for (int i = 0; i < *len; ++i, a += 3, b += 3) {
    b[0] = static_cast<int>(static_cast<unsigned>(a[0]) + static_cast<unsigned>(b[0]));
    b[2] = static_cast<int>(static_cast<unsigned>(a[2]) + static_cast<unsigned>(b[2]));
  }
}

void vec_max_op(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<int*>(in);
  auto* b = static_cast<int*>(inout);
  for (int i = 0; i < *len; ++i, a += 3, b += 3) {
    b[0] = a[0] > b[0] ? a[0] : b[0];
    b[2] = a[2] > b[2] ? a[2] : b[2];
  }
}

enum class Kind { integer, real32, real64, complex, vector, matrix };

struct TypeCase {
  const char* name;
  Kind kind;
  MPI_Datatype type;
  int extent;  // bytes per element
  int slots;   // values stored per element
  int stride;  // slot positions (vector: 0 and 2 of 3 ints)
};

struct OpCase {
  const char* name;
  MPI_Op op;
};

void fill_random(const TypeCase& t, const OpCase& o, std::vector<unsigned char>& buf, int64_t count,
                 std::mt19937_64& rng) {
  buf.assign(static_cast<size_t>(count * t.extent), 0xAB);  // 0xAB marks the vector type's gaps
  std::uniform_real_distribution<double> u(-1.0, 1.0), pos(0.5, 1.5);
  const bool prod = o.op == MPI_PROD;
  for (int64_t i = 0; i < count; ++i) {
    unsigned char* e = buf.data() + i * t.extent;
    switch (t.kind) {
      case Kind::integer: {
        int v = o.op == MPI_BAND ? static_cast<int>(rng())
                : prod           ? static_cast<int>(rng() % 5) - 2
                                 : static_cast<int>(rng() % 2001) - 1000;
        std::memcpy(e, &v, 4);
        break;
      }
      case Kind::vector:
        for (int s = 0; s < 2; ++s) {
          int v =
              o.op == MPI_BAND ? static_cast<int>(rng()) : static_cast<int>(rng() % 2001) - 1000;
          std::memcpy(e + 4 * 2 * s, &v, 4);
        }
        break;
      case Kind::real32: {
        float v = static_cast<float>(prod ? pos(rng) : u(rng));
        std::memcpy(e, &v, 4);
        break;
      }
      case Kind::real64: {
        double v = prod ? pos(rng) : u(rng);
        std::memcpy(e, &v, 8);
        break;
      }
      case Kind::complex: {
        std::complex<double> v(pos(rng), pos(rng) - 1.0);
        std::memcpy(e, &v, 16);
        break;
      }
      case Kind::matrix:
        for (int s = 0; s < 4; ++s) {
          uint32_t v = static_cast<uint32_t>(rng());
          std::memcpy(e + 4 * s, &v, 4);
        }
        break;
    }
  }
}

// Compares collkit's result with native's; returns "" or what is wrong.
std::string compare(const TypeCase& t, const std::vector<unsigned char>& got,
                    const std::vector<unsigned char>& want, int64_t count, int P) {
  for (int64_t i = 0; i < count; ++i) {
    const unsigned char* g = got.data() + i * t.extent;
    const unsigned char* w = want.data() + i * t.extent;
    auto where = [&] { return "element " + std::to_string(i); };
    switch (t.kind) {
      case Kind::integer:
      case Kind::matrix:
        if (std::memcmp(g, w, static_cast<size_t>(t.extent)) != 0)
          return where() + " differs from native";
        break;
      case Kind::vector:
        if (std::memcmp(g, w, 4) != 0 || std::memcmp(g + 8, w + 8, 4) != 0)
          return where() + " differs from native";
        if (g[4] != 0xAB || g[5] != 0xAB || g[6] != 0xAB || g[7] != 0xAB)
          return where() + ": a gap of the vector type was overwritten";
        break;
      case Kind::real32: {
        float a, b;
        std::memcpy(&a, g, 4);
        std::memcpy(&b, w, 4);
        if (!(std::fabs(a - b) <= 1e-5f * static_cast<float>(P) * (std::fabs(b) + 1.0f)))
          return where() + ": " + std::to_string(a) + " vs native " + std::to_string(b);
        break;
      }
      case Kind::real64: {
        double a, b;
        std::memcpy(&a, g, 8);
        std::memcpy(&b, w, 8);
        if (!(std::fabs(a - b) <= 1e-13 * P * (std::fabs(b) + 1.0)))
          return where() + ": " + std::to_string(a) + " vs native " + std::to_string(b);
        break;
      }
      case Kind::complex: {
        std::complex<double> a, b;
        std::memcpy(&a, g, 16);
        std::memcpy(&b, w, 16);
        if (!(std::abs(a - b) <= 1e-12 * P * (std::abs(b) + 1.0)))
          return where() + " differs from native beyond tolerance";
        break;
      }
    }
  }
  return "";
}

void fail(const std::string& what) {
  ++g_failures;
  if (g_failures <= 20) std::printf("FAIL %s\n", what.c_str());
}

void check_allreduce(MPI_Comm comm, const char* comm_name, const std::string& algo,
                     const TypeCase& t, const OpCase& o, int64_t count, bool in_place,
                     uint64_t seed) {
  int rank, P;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &P);
  std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(rank));
  std::vector<unsigned char> in, got, want;
  fill_random(t, o, in, count, rng);
  got.assign(in.size(), 0xAB);
  want.assign(in.size(), 0xAB);
  int rc;
  if (in_place) {
    got = in;
    rc = ck_allreduce(MPI_IN_PLACE, got.data(), count, t.type, o.op, comm, algo.c_str());
  } else {
    rc = ck_allreduce(in.data(), got.data(), count, t.type, o.op, comm, algo.c_str());
  }
  MPI_Allreduce(in.data(), want.data(), static_cast<int>(count), t.type, o.op, comm);
  std::string why;
  if (rc != MPI_SUCCESS) why = std::string("error: ") + ck_error_message();
  if (t.kind == Kind::matrix) {
    // The non-commutative op's answer is the rank-ordered product x0 x1 ... x(P-1), computed here
    // from everyone's input: an MPI algorithm that ignores commutativity must not fool the check.
    std::vector<unsigned char> all(in.size() * static_cast<size_t>(P));
    MPI_Allgather(in.data(), static_cast<int>(in.size()), MPI_BYTE, all.data(),
                  static_cast<int>(in.size()), MPI_BYTE, comm);
    std::vector<unsigned char> ref(all.end() - static_cast<std::ptrdiff_t>(in.size()), all.end());
    int n = static_cast<int>(count);
    MPI_Datatype dt = t.type;
    for (int r = P - 2; r >= 0; --r)
      matmul_op(all.data() + in.size() * static_cast<size_t>(r), ref.data(), &n, &dt);
    if (want != ref && rank == 0)
      std::printf(
          "NOTE native MPI_Allreduce is not rank-ordered for a non-commutative op (P=%d "
          "count=%lld)\n",
          P, static_cast<long long>(count));
    want = ref;
  }
  if (why.empty()) why = compare(t, got, want, count, P);
  // Bitwise identical on every rank: rank 0's result against everyone's.
  std::vector<unsigned char> first = got;
  MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_BYTE, 0, comm);
  if (why.empty() && first != got) why = "result differs from rank 0's (not bitwise identical)";
  int bad = !why.empty(), any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
  ++g_cases;
  // Report from the first failing rank of this communicator through world rank 0's output.
  std::string label = std::string(comm_name) + " P=" + std::to_string(P) + " " + algo + " " +
                      t.name + " " + o.name + " count=" + std::to_string(count) +
                      (in_place ? " IN_PLACE" : "");
  if (bad)
    std::fprintf(stderr, "world rank %d: %s: %s\n", g_world_rank, label.c_str(), why.c_str());
  if (any && rank == 0) fail(label + (bad ? ": " + why : ": failed on another rank"));
}

void check_errors(MPI_Comm comm) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  double x = 1, y = 0;
  auto expect_error = [&](const std::string& label, int rc) {
    ++g_cases;
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, s, &len);
    if (rc == MPI_SUCCESS) {
      if (rank == 0) fail(label + ": expected an error, got MPI_SUCCESS");
    } else if (rank == 0) {
      // One line per error: the caret diagram's newlines become " / ".
      auto one_line = [](std::string m) {
        for (size_t at; (at = m.find('\n')) != std::string::npos;) m.replace(at, 1, " / ");
        return m;
      };
      std::printf("ERROR %s: %s | %s\n", label.c_str(), one_line(ck_error_message()).c_str(),
                  one_line(std::string(s, static_cast<size_t>(len))).c_str());
    }
  };
  expect_error("reduce-with-allreduce-name",
               ck_reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, 0, comm, "allreduce:rd"));
  expect_error("bcast-unknown", ck_bcast(&x, 1, MPI_DOUBLE, 0, comm, "bcast:nonexistent"));
  expect_error("alltoall-unknown",
               ck_alltoall(&x, 1, MPI_DOUBLE, &y, 1, MPI_DOUBLE, comm, "alltoall:no_such"));
  expect_error("barrier-unknown", ck_barrier(comm, "barrier:nonexistent"));
  expect_error("allreduce-malformed",
               ck_allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comm, "allreduce:rd("));
  expect_error("allreduce-negative-count",
               ck_allreduce(&x, &y, -1, MPI_DOUBLE, MPI_SUM, comm, "allreduce:rd"));
  expect_error("allreduce-null-name", ck_allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comm, nullptr));
  expect_error("reduce-unknown", ck_reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, 0, comm, "reduce:rd"));

  // The native paths of the other collectives through the C API.
  int P;
  MPI_Comm_size(comm, &P);
  std::vector<int> a(static_cast<size_t>(P) * 3), b(a.size()), c(a.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = rank * 1000 + static_cast<int>(i);
  int rc = ck_alltoall(a.data(), 3, MPI_INT, b.data(), 3, MPI_INT, comm, "native");
  MPI_Alltoall(a.data(), 3, MPI_INT, c.data(), 3, MPI_INT, comm);
  ++g_cases;
  if (rc != MPI_SUCCESS || b != c) fail("alltoall native through the C API");
  int v = rank + 1, sum = 0;
  rc = ck_reduce(&v, &sum, 1, MPI_INT, MPI_SUM, P - 1, comm, "reduce:native");
  ++g_cases;
  if (rc != MPI_SUCCESS || (rank == P - 1 && sum != P * (P + 1) / 2))
    fail("reduce native through the C API");
  int r = rank == 0 ? 42 : 0;
  rc = ck_bcast(&r, 1, MPI_INT, 0, comm, "native");
  ++g_cases;
  if (rc != MPI_SUCCESS || r != 42) fail("bcast native through the C API");
  rc = ck_barrier(comm, "barrier:native");
  ++g_cases;
  if (rc != MPI_SUCCESS) fail("barrier native through the C API");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Args args(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank);
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  const bool quick = args.flag("quick");
  const auto algos = split(args.get("algos", "allreduce:rd"), ',');
  std::vector<int64_t> counts;
  for (const auto& c : split(args.get("counts", "0,1,2,7,13,1009,65537"), ','))
    counts.push_back(std::atoll(c.c_str()));

  MPI_Datatype vec, mat;
  MPI_Type_vector(2, 1, 2, MPI_INT, &vec);  // ints at 0 and 2; the int at 1 is a gap
  MPI_Type_commit(&vec);
  MPI_Type_contiguous(4, MPI_UINT32_T, &mat);
  MPI_Type_commit(&mat);
  MPI_Op noncommutative, vec_sum, vec_max;
  MPI_Op_create(matmul_op, 0, &noncommutative);
  MPI_Op_create(vec_sum_op, 1, &vec_sum);
  MPI_Op_create(vec_max_op, 1, &vec_max);

  const std::vector<TypeCase> types = {
      {"int", Kind::integer, MPI_INT, 4, 1, 1},
      {"float", Kind::real32, MPI_FLOAT, 4, 1, 1},
      {"double", Kind::real64, MPI_DOUBLE, 8, 1, 1},
      {"complex", Kind::complex, MPI_C_DOUBLE_COMPLEX, 16, 2, 1},
      {"vector", Kind::vector, vec, 12, 2, 2},
      {"matrix", Kind::matrix, mat, 16, 4, 1},
  };
  auto ops_for = [&](Kind k) -> std::vector<OpCase> {
    switch (k) {
      case Kind::integer:
        return {{"SUM", MPI_SUM}, {"MAX", MPI_MAX}, {"PROD", MPI_PROD}, {"BAND", MPI_BAND}};
      case Kind::vector:
        return {{"user-sum", vec_sum}, {"user-max", vec_max}};
      case Kind::real32:
      case Kind::real64:
        return {{"SUM", MPI_SUM}, {"MAX", MPI_MAX}, {"PROD", MPI_PROD}};
      case Kind::complex:
        return {{"SUM", MPI_SUM}, {"PROD", MPI_PROD}};
      case Kind::matrix:
        return {{"noncommutative", noncommutative}};
    }
    return {};
  };

  MPI_Comm dup, halves, reversed;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, g_world_rank < (P + 1) / 2, g_world_rank, &halves);
  MPI_Comm_split(MPI_COMM_WORLD, 0, P - g_world_rank, &reversed);
  std::vector<std::pair<const char*, MPI_Comm>> comms = {{"world", MPI_COMM_WORLD}};
  if (!quick) {
    comms.push_back({"dup", dup});
    comms.push_back({"split", halves});
    comms.push_back({"reversed", reversed});
  }

  uint64_t seed = 1;
  for (auto& [cname, comm] : comms)
    for (const auto& algo : algos)
      for (const auto& t : types)
        for (const auto& o : ops_for(t.kind))
          for (int64_t count : counts)
            for (bool in_place : {false, true}) {
              if (quick && in_place && t.kind != Kind::real64) continue;
              // On the other communicators, small counts and in-place on double only: what they
              // add is the rank mapping, which every case exercises alike.
              if (comm != MPI_COMM_WORLD && (count > 13 || (in_place && t.kind != Kind::real64)))
                continue;
              // Large counts for the two common types only: keeps a P = 8 run on 2 cores short.
              if (count > 4096 && t.kind != Kind::real64 && t.kind != Kind::integer) continue;
              check_allreduce(comm, cname, algo, t, o, count, in_place, seed++);
            }
  if (args.flag("errors")) check_errors(MPI_COMM_WORLD);

  int total = 0;
  MPI_Reduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (g_world_rank == 0) std::printf("SUMMARY P=%d cases=%d failures=%d\n", P, g_cases, total);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&halves);
  MPI_Comm_free(&reversed);
  MPI_Op_free(&noncommutative);
  MPI_Op_free(&vec_sum);
  MPI_Op_free(&vec_max);
  MPI_Type_free(&vec);
  MPI_Type_free(&mat);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
