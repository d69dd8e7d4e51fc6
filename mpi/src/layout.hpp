// How `count` elements of an MPI datatype lie in a user's buffer, and moving them to and from their
// packed bytes (the type signature's bytes in order).
//
// MPI asks only that the *type signatures* of matching calls agree: a bcast root may pass
// 1 x contiguous(64, MPI_INT) while the others pass 64 x MPI_INT, or a struct described another
// way. So collkit plans bcast and alltoall over those packed bytes, the same on every rank, and
// reads and writes the user's buffer through its own layout: directly where the bytes are dense
// (in signature order, without gaps), through MPI_Pack / MPI_Unpack where they are not.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace collkit::mpi {

// One element of a datatype.
struct TypeInfo {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  MPI_Count size = 0;
  // One element's `size` bytes are [true_lb, true_lb + size) in signature order (no gap, no
  // reordering), so a run of such elements spaced `size` apart is a plain byte array.
  bool dense = false;
  // The one predefined type every basic element is (MPI_DATATYPE_NULL if they differ): MPI's
  // predefined ops apply to a derived type element by element of this type.
  MPI_Datatype basic = MPI_DATATYPE_NULL;
  static int get(MPI_Datatype t, TypeInfo& out);
  // The type of a byte array.
  static TypeInfo bytes();
  // `count` elements are one dense byte array starting at true_lb.
  bool dense_run(int64_t count) const { return dense && (count <= 1 || extent == size); }
};

// Address arithmetic that is defined for MPI_BOTTOM (a null pointer) too: datatypes with absolute
// addresses (MPI_Get_address) describe buffers relative to address 0.
inline std::byte* offset(const void* base, int64_t bytes) {
  return reinterpret_cast<std::byte*>(reinterpret_cast<uintptr_t>(base) +
                                      static_cast<uintptr_t>(bytes));
}

// Element i of a buffer of elements of type t.
inline std::byte* element(const void* base, int64_t i, const TypeInfo& t) {
  return offset(base, i * t.extent);
}

// Bytes that `n` elements of t span in memory (negative extents included), and where element 0
// sits in a block of that size: the lowest byte of any element is at block + 0.
size_t span_bytes(const TypeInfo& t, int64_t n);
inline std::byte* element0_in_block(std::byte* block, const TypeInfo& t, int64_t n) {
  // Element i's bytes start at i * extent + true_lb from element 0; the lowest of them is
  // element 0's (extent >= 0) or element n-1's (extent < 0).
  const int64_t lowest = (t.extent < 0 && n > 0 ? (n - 1) * t.extent : 0) + t.true_lb;
  return offset(block, -lowest);
}

// One of the MPI's own datatypes (never freed), not a derived one, whose handle MPI may hand out
// again for another type once it is freed.
bool named_type(MPI_Datatype t);

// The largest element count of one MPI call; counts past it are split into several calls (and
// messages, both sides splitting the same way). INT_MAX unless COLLKIT_MAX_CHUNK says less, so
// tests can take the large-count paths with small buffers.
int64_t max_chunk_elems();

// n elements of t at buf <-> their n * t.size packed bytes. Counts past INT_MAX are done in
// pieces. Return MPI_SUCCESS or the error of the MPI call that failed.
int pack(const void* buf, int64_t n, const TypeInfo& t, std::byte* packed);
int unpack(const std::byte* packed, void* buf, int64_t n, const TypeInfo& t);

}  // namespace collkit::mpi
