#include "layout.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <vector>

#include "env.hpp"

namespace collkit::mpi {

namespace {

struct Decoded {
  bool dense = false;                      // see TypeInfo::dense
  MPI_Datatype basic = MPI_DATATYPE_NULL;  // see TypeInfo::basic
};

// Reads a datatype's constructor tree. Dense: predefined types, and dups, contiguous runs and
// resized copies of dense types; every other constructor is taken as not dense (a conservative
// answer only costs a pack). Basic: the one predefined type all leaves share, if they do.
Decoded decode(MPI_Datatype t, int depth = 0) {
  Decoded d;
  int ni = 0, na = 0, nd = 0, combiner = 0;
  if (MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return d;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  MPI_Count size = 0;
  if (MPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS ||
      MPI_Type_get_true_extent(t, &tlb, &textent) != MPI_SUCCESS ||
      MPI_Type_size_x(t, &size) != MPI_SUCCESS)
    return d;
  if (combiner == MPI_COMBINER_NAMED) {
    d.dense = size == textent;  // MPI_DOUBLE_INT: 12 bytes of data in 16
    d.basic = t;
    return d;
  }
  if (depth > 16) return d;
  std::vector<int> ints(static_cast<size_t>(ni));
  std::vector<MPI_Aint> addrs(static_cast<size_t>(na));
  std::vector<MPI_Datatype> types(static_cast<size_t>(nd));
  if (MPI_Type_get_contents(t, ni, na, nd, ints.data(), addrs.data(), types.data()) != MPI_SUCCESS)
    return d;
  bool first = true, same_basic = true, child_dense = false;
  for (MPI_Datatype old : types) {
    const Decoded c = decode(old, depth + 1);
    if (first) {
      d.basic = c.basic;
      child_dense = c.dense;
    } else if (c.basic != d.basic) {
      same_basic = false;
    }
    first = false;
    if (combiner == MPI_COMBINER_CONTIGUOUS && c.dense && ni > 0 && ints[0] > 1) {
      MPI_Aint olb = 0, oextent = 0;
      MPI_Count osize = 0;
      MPI_Type_get_extent(old, &olb, &oextent);
      MPI_Type_size_x(old, &osize);
      child_dense = oextent == osize;
    }
    // get_contents hands out new handles for derived types, which must be freed.
    int oni = 0, ona = 0, ond = 0, ocomb = 0;
    MPI_Type_get_envelope(old, &oni, &ona, &ond, &ocomb);
    if (ocomb != MPI_COMBINER_NAMED) MPI_Type_free(&old);
  }
  if (!same_basic) d.basic = MPI_DATATYPE_NULL;
  d.dense = size == textent && child_dense &&
            (combiner == MPI_COMBINER_DUP || combiner == MPI_COMBINER_CONTIGUOUS ||
             combiner == MPI_COMBINER_RESIZED);
  return d;
}

}  // namespace

int TypeInfo::get(MPI_Datatype t, TypeInfo& out) {
  // Predefined types are never freed: the last one this thread saw is remembered.
  thread_local TypeInfo last;
  if (t == last.type && t != MPI_DATATYPE_NULL) {
    out = last;
    return MPI_SUCCESS;
  }
  out.type = t;
  int rc = MPI_Type_get_extent(t, &out.lb, &out.extent);
  if (rc == MPI_SUCCESS) rc = MPI_Type_get_true_extent(t, &out.true_lb, &out.true_extent);
  if (rc == MPI_SUCCESS) rc = MPI_Type_size_x(t, &out.size);
  if (rc != MPI_SUCCESS) return rc;
  const Decoded d = decode(t);
  out.dense = d.dense;
  out.basic = d.basic;
  if (d.basic == t) last = out;
  return rc;
}

TypeInfo TypeInfo::bytes() {
  TypeInfo t;
  t.type = MPI_BYTE;
  t.extent = t.true_extent = 1;
  t.size = 1;
  t.dense = true;
  t.basic = MPI_BYTE;
  return t;
}

int64_t max_chunk_elems() {
  static const int64_t chunk = [] {
    return env_int("COLLKIT_MAX_CHUNK", INT_MAX, 1, INT_MAX, "a number of elements");
  }();
  return chunk;
}

size_t span_bytes(const TypeInfo& t, int64_t n) {
  if (n <= 0) return 0;
  const int64_t step = t.extent < 0 ? -int64_t{t.extent} : int64_t{t.extent};
  return static_cast<size_t>((n - 1) * step + t.true_extent);
}

bool named_type(MPI_Datatype t) {
  // PMPI_: also right inside the interposition library.
  int ints = 0, addresses = 0, types = 0, combiner = 0;
  return t != MPI_DATATYPE_NULL &&
         PMPI_Type_get_envelope(t, &ints, &addresses, &types, &combiner) == MPI_SUCCESS &&
         combiner == MPI_COMBINER_NAMED;
}

namespace {

// Elements per MPI_Pack / MPI_Unpack call: their bytes must fit an int.
int64_t pack_chunk(const TypeInfo& t) {
  const int64_t by_bytes = t.size > 0 ? INT_MAX / t.size : INT_MAX;
  return std::max<int64_t>(1, std::min(max_chunk_elems(), by_bytes));
}

}  // namespace

namespace {

// Runs f(buf, count, type) on n elements of t at `buf`, in pieces whose bytes fit an int. MPICH's
// MPI_Pack / MPI_Unpack / MPI_Reduce_local refuse a null buffer, which MPI_BOTTOM is: such a
// piece is described instead as one element of a type that holds the piece at displacement
// -1 from address 1.
template <class F>
int in_pieces(const void* buf, int64_t n, const TypeInfo& t, F&& f) {
  const int64_t chunk = pack_chunk(t);
  for (int64_t done = 0; done < n; done += chunk) {
    const int c = static_cast<int>(std::min(chunk, n - done));
    if (c * t.size > INT_MAX) return MPI_ERR_COUNT;  // one element past 2 GiB
    std::byte* at = element(buf, done, t);
    int rc = MPI_SUCCESS;
    if (at != nullptr) {
      rc = f(at, c, t.type, done);
    } else {
      MPI_Datatype shifted;
      const MPI_Aint disp = -1;
      rc = MPI_Type_create_hindexed(1, &c, &disp, t.type, &shifted);
      if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&shifted);
      if (rc != MPI_SUCCESS) return rc;
      rc = f(offset(nullptr, 1), 1, shifted, done);
      MPI_Type_free(&shifted);
    }
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

}  // namespace

int pack(const void* buf, int64_t n, const TypeInfo& t, std::byte* packed) {
  return in_pieces(buf, n, t, [&](void* at, int c, MPI_Datatype type, int64_t done) {
    int pos = 0;
    const int bytes = static_cast<int>(std::min<int64_t>(INT_MAX, (n - done) * t.size));
    return MPI_Pack(at, c, type, packed + done * t.size, bytes, &pos, MPI_COMM_SELF);
  });
}

int unpack(const std::byte* packed, void* buf, int64_t n, const TypeInfo& t) {
  return in_pieces(buf, n, t, [&](void* at, int c, MPI_Datatype type, int64_t done) {
    int pos = 0;
    const int bytes = static_cast<int>(std::min<int64_t>(INT_MAX, (n - done) * t.size));
    return MPI_Unpack(packed + done * t.size, bytes, &pos, at, c, type, MPI_COMM_SELF);
  });
}

}  // namespace collkit::mpi
