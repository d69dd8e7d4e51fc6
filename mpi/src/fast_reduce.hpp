// Reductions of MPI's built-in ops on built-in types as plain loops the compiler vectorises,
// skipping MPI_Reduce_local's dispatch. These ops are commutative and exact under operand swap
// (IEEE a + b == b + a bitwise), so the operand order of the schedule needs no care here.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cstdint>

namespace collkit::mpi {

namespace detail {

template <class T>
bool reduce_arith(const T* s, T* d, int64_t n, MPI_Op op) {
  if (op == MPI_SUM) {
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(s[i] + d[i]);
  } else if (op == MPI_PROD) {
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(s[i] * d[i]);
  } else if (op == MPI_MAX) {
    for (int64_t i = 0; i < n; ++i) d[i] = std::max(s[i], d[i]);
  } else if (op == MPI_MIN) {
    for (int64_t i = 0; i < n; ++i) d[i] = std::min(s[i], d[i]);
  } else {
    return false;
  }
  return true;
}

template <class T>
bool reduce_int(const T* s, T* d, int64_t n, MPI_Op op) {
  if (reduce_arith(s, d, n, op)) return true;
  if (op == MPI_BAND) {
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(s[i] & d[i]);
  } else if (op == MPI_BOR) {
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(s[i] | d[i]);
  } else if (op == MPI_BXOR) {
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(s[i] ^ d[i]);
  } else {
    return false;
  }
  return true;
}

}  // namespace detail

// Returns false (and touches nothing) when there is no fast path for this (type, op).
inline bool fast_reduce(const void* src, void* dst, int64_t n, MPI_Datatype t, MPI_Op op) {
  using detail::reduce_arith;
  using detail::reduce_int;
  if (t == MPI_DOUBLE)
    return reduce_arith(static_cast<const double*>(src), static_cast<double*>(dst), n, op);
  if (t == MPI_FLOAT)
    return reduce_arith(static_cast<const float*>(src), static_cast<float*>(dst), n, op);
  // Signed overflow is undefined in C++: sum and product of signed types go through unsigned.
  if (t == MPI_INT || t == MPI_INT32_T) {
    if (op == MPI_SUM || op == MPI_PROD)
      return reduce_int(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), n, op);
    return reduce_int(static_cast<const int32_t*>(src), static_cast<int32_t*>(dst), n, op);
  }
  if (t == MPI_LONG_LONG || t == MPI_INT64_T || (t == MPI_LONG && sizeof(long) == 8)) {
    if (op == MPI_SUM || op == MPI_PROD)
      return reduce_int(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), n, op);
    return reduce_int(static_cast<const int64_t*>(src), static_cast<int64_t*>(dst), n, op);
  }
  // Wraps mod 256 as C does: Open MPI 4.1's own vector MPI_SUM on 8-bit types saturates at 255.
  if (t == MPI_UNSIGNED_CHAR || t == MPI_UINT8_T)
    return reduce_int(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), n, op);
  if (t == MPI_UNSIGNED || t == MPI_UINT32_T)
    return reduce_int(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), n, op);
  if (t == MPI_UNSIGNED_LONG_LONG || t == MPI_UINT64_T ||
      (t == MPI_UNSIGNED_LONG && sizeof(unsigned long) == 8))
    return reduce_int(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), n, op);
  return false;
}

}  // namespace collkit::mpi
