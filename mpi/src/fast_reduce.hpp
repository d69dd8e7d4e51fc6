// Reductions of MPI's built-in ops on built-in types as plain loops the compiler vectorises,
// skipping MPI_Reduce_local's dispatch. These ops are commutative and exact under operand swap
// (IEEE a + b == b + a bitwise), so the operand order of the schedule needs no care here.
// The (type, op) is resolved to a function once per prepared call (RunArgs::fast), not per
// reduction: the dispatch was a third of an 8-byte reduction's instructions.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cstdint>

namespace collkit::mpi {

// d = a (+) b elementwise on n elements; d may be b (the two-operand reduce, b (+)= a) but
// otherwise overlaps neither.
using ReduceFn = void (*)(const void* a, const void* b, void* d, int64_t n);

namespace detail {

template <class T, class F>
void apply(const void* va, const void* vb, void* vd, int64_t n) {
  const auto* a = static_cast<const T*>(va);
  auto* d = static_cast<T*>(vd);
  if (vb == vd) {  // two operands: the form the compiler vectorises with d aliasing b
    for (int64_t i = 0; i < n; ++i) d[i] = F::f(a[i], d[i]);
    return;
  }
  const auto* b = static_cast<const T*>(vb);
  for (int64_t i = 0; i < n; ++i) d[i] = F::f(a[i], b[i]);
}

struct Sum {
  template <class T>
  static T f(T x, T y) {
    return static_cast<T>(x + y);
  }
};
struct Prod {
  template <class T>
  static T f(T x, T y) {
    return static_cast<T>(x * y);
  }
};
struct Max {
  template <class T>
  static T f(T x, T y) {
    return std::max(x, y);
  }
};
struct Min {
  template <class T>
  static T f(T x, T y) {
    return std::min(x, y);
  }
};
struct Band {
  template <class T>
  static T f(T x, T y) {
    return static_cast<T>(x & y);
  }
};
struct Bor {
  template <class T>
  static T f(T x, T y) {
    return static_cast<T>(x | y);
  }
};
struct Bxor {
  template <class T>
  static T f(T x, T y) {
    return static_cast<T>(x ^ y);
  }
};

template <class T>
ReduceFn arith(MPI_Op op) {
  if (op == MPI_SUM) return apply<T, Sum>;
  if (op == MPI_PROD) return apply<T, Prod>;
  if (op == MPI_MAX) return apply<T, Max>;
  if (op == MPI_MIN) return apply<T, Min>;
  return nullptr;
}

// Signed overflow is undefined in C++: sum and product of signed types go through unsigned
// (U), max and min compare as signed (S).
template <class S, class U>
ReduceFn integer(MPI_Op op) {
  if (op == MPI_SUM || op == MPI_PROD) return arith<U>(op);
  if (ReduceFn f = arith<S>(op)) return f;
  if (op == MPI_BAND) return apply<U, Band>;
  if (op == MPI_BOR) return apply<U, Bor>;
  if (op == MPI_BXOR) return apply<U, Bxor>;
  return nullptr;
}

}  // namespace detail

// The loop for (t, op), or nullptr when there is none (MPI_Reduce_local then).
inline ReduceFn fast_reduce_fn(MPI_Datatype t, MPI_Op op) {
  using detail::arith;
  using detail::integer;
  if (t == MPI_DOUBLE) return arith<double>(op);
  if (t == MPI_FLOAT) return arith<float>(op);
  if (t == MPI_INT || t == MPI_INT32_T) return integer<int32_t, uint32_t>(op);
  if (t == MPI_LONG_LONG || t == MPI_INT64_T || (t == MPI_LONG && sizeof(long) == 8))
    return integer<int64_t, uint64_t>(op);
  // Wraps mod 256 as C does: Open MPI 4.1's own vector MPI_SUM on 8-bit types saturates at 255.
  if (t == MPI_UNSIGNED_CHAR || t == MPI_UINT8_T) return integer<uint8_t, uint8_t>(op);
  if (t == MPI_UNSIGNED || t == MPI_UINT32_T) return integer<uint32_t, uint32_t>(op);
  if (t == MPI_UNSIGNED_LONG_LONG || t == MPI_UINT64_T ||
      (t == MPI_UNSIGNED_LONG && sizeof(unsigned long) == 8))
    return integer<uint64_t, uint64_t>(op);
  return nullptr;
}

// Whether the predefined `op` on elements of the predefined type `basic` gives the same bits
// however its operands are grouped and ordered (CallShape::exact): integer sum and product
// (mod 2^k), min and max, and the logical and bitwise ops on integers; the logical ops on
// MPI_C_BOOL; the bitwise ops on MPI_BYTE. Not floating point (rounding depends on the grouping;
// min and max meet NaN and signed zeros), not MINLOC / MAXLOC, not a user's op.
inline bool exact_op(MPI_Datatype basic, MPI_Op op) {
  const bool logical = op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR;
  const bool bitwise = op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR;
  const bool arith = op == MPI_SUM || op == MPI_PROD || op == MPI_MIN || op == MPI_MAX;
  if (basic == MPI_C_BOOL) return logical;
  if (basic == MPI_BYTE) return bitwise;
  static const MPI_Datatype integers[] = {MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR,
                                          MPI_SHORT,       MPI_UNSIGNED_SHORT,
                                          MPI_INT,         MPI_UNSIGNED,
                                          MPI_LONG,        MPI_UNSIGNED_LONG,
                                          MPI_LONG_LONG,   MPI_UNSIGNED_LONG_LONG,
                                          MPI_INT8_T,      MPI_INT16_T,
                                          MPI_INT32_T,     MPI_INT64_T,
                                          MPI_UINT8_T,     MPI_UINT16_T,
                                          MPI_UINT32_T,    MPI_UINT64_T,
                                          MPI_AINT,        MPI_OFFSET,
                                          MPI_COUNT};
  if (basic == MPI_DATATYPE_NULL) return false;
  for (const MPI_Datatype t : integers)
    if (basic == t) return logical || bitwise || arith;
  return false;
}

// dst = src (+) dst; false (and nothing touched) when there is no loop for (t, op).
inline bool fast_reduce(const void* src, void* dst, int64_t n, MPI_Datatype t, MPI_Op op) {
  const ReduceFn f = fast_reduce_fn(t, op);
  if (f == nullptr) return false;
  f(src, dst, dst, n);
  return true;
}

}  // namespace collkit::mpi
