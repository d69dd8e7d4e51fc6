// collkit's settings from the environment, read and reported one way (env.hpp).
#include "env.hpp"

#include <mpi.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

namespace collkit::mpi {
namespace {

bool world_rank_zero() {
  int init = 0, fin = 0, rank = 0;
  PMPI_Initialized(&init);
  PMPI_Finalized(&fin);
  if (init && !fin) PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank == 0;
}

// Digits only, with at most one leading '-': what strtoll would also take in other forms (spaces,
// '+', "0x") is refused, so a value means one thing.
bool plain_integer(const char* v) {
  const char* p = v + (*v == '-' ? 1 : 0);
  if (*p == '\0') return false;
  for (; *p != '\0'; ++p)
    if (*p < '0' || *p > '9') return false;
  return true;
}

bool plain_decimal(const char* v) {
  const char* p = v;
  bool digits = false, dot = false;
  for (; *p != '\0'; ++p) {
    if (*p >= '0' && *p <= '9') {
      digits = true;
    } else if (*p == '.' && !dot) {
      dot = true;
    } else {
      return false;
    }
  }
  return digits;
}

}  // namespace

void env_report(const char* name, const char* message) {
  static std::mutex m;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> g(m);
  if (!said.insert(name).second || !world_rank_zero()) return;
  const char* v = std::getenv(name);
  std::fprintf(stderr, "collkit: %s=%s %s\n", name, v != nullptr ? v : "", message);
}

int64_t env_int(const char* name, int64_t fallback, int64_t lo, int64_t hi, const char* unit) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  errno = 0;
  char* end = nullptr;
  const long long x = plain_integer(v) ? std::strtoll(v, &end, 10) : 0;
  if (plain_integer(v) && errno == 0 && x >= lo && x <= hi) return x;
  const std::string message = "is not " + std::string(unit) + " from " + std::to_string(lo) +
                              " to " + std::to_string(hi) + ": " + std::to_string(fallback) +
                              " is used";
  env_report(name, message.c_str());
  return fallback;
}

double env_number(const char* name, double fallback, double lo, double hi, const char* unit) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  const double x = plain_decimal(v) ? std::strtod(v, nullptr) : std::nan("");
  if (std::isfinite(x) && x >= lo && x <= hi) return x;
  char message[160];
  std::snprintf(message, sizeof message, "is not %s from %g to %g: %g is used", unit, lo, hi,
                fallback);
  env_report(name, message);
  return fallback;
}

bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  if (v[0] == '0' && v[1] == '\0') return false;
  if (v[0] == '1' && v[1] == '\0') return true;
  env_report(name, fallback ? "is not 0 or 1: 1 is used" : "is not 0 or 1: 0 is used");
  return fallback;
}

}  // namespace collkit::mpi
