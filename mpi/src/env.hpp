// collkit's settings from the environment (COLLKIT_SHM, COLLKIT_SPIN_US, ...), read one way: a
// value that does not parse, or lies outside its range, is never silently taken or ignored. It is
// reported once per process, on MPI_COMM_WORLD's rank 0, with the value used instead (the
// default), as COLLKIT_SETUP_US always was. Numbers are ASCII decimal integers (no sign but a
// leading '-', no spaces, no exponent); a flag is 0 or 1.
#pragma once
#include <cstdint>

namespace collkit::mpi {

// The variable's integer in [lo, hi]; `fallback` when unset or empty, or (reported) when invalid.
int64_t env_int(const char* name, int64_t fallback, int64_t lo, int64_t hi, const char* unit);
// The variable's number >= lo and <= hi (a decimal, e.g. 12.5); as env_int otherwise.
double env_number(const char* name, double fallback, double lo, double hi, const char* unit);
// 0 or 1; `fallback` when unset or empty, or (reported) when anything else.
bool env_flag(const char* name, bool fallback);
// Says `message` about `name` once per process on world rank 0 ("collkit: NAME=...: message").
void env_report(const char* name, const char* message);

}  // namespace collkit::mpi
