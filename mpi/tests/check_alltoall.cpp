// collkit_check_alltoall: ck_alltoall (collkit's executor, by name) against MPI_Alltoall on
// random bytes, with a guard byte after the output. Rank 0 prints one line per case and a
// SUMMARY line; the exit status is 1 when anything failed.
//   collkit_check_alltoall "NAME;NAME;..." BYTES,BYTES,...   (bytes per block)
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "collkit.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  std::vector<std::string> names, counts;
  std::stringstream a(argv[1]), c(argv[2]);
  for (std::string s; std::getline(a, s, ';');) names.push_back(s);
  for (std::string s; std::getline(c, s, ',');) counts.push_back(s);
  int failures = 0, cases = 0;
  std::mt19937_64 rng(1234 + rank);
  for (const auto& name : names) {
    for (const auto& cs : counts) {
      const long long n = std::stoll(cs);  // bytes per block
      std::vector<unsigned char> in(n * P), out(n * P + 1, 0xAB), ref(n * P + 1, 0xCD);
      for (auto& x : in) x = static_cast<unsigned char>(rng());
      int rc = ck_alltoall(in.data(), n, MPI_BYTE, out.data(), n, MPI_BYTE, MPI_COMM_WORLD,
                           name.c_str());
      MPI_Alltoall(in.data(), n, MPI_BYTE, ref.data(), n, MPI_BYTE, MPI_COMM_WORLD);
      int ok = rc == MPI_SUCCESS && std::memcmp(out.data(), ref.data(), n * P) == 0 &&
               out[n * P] == 0xAB;  // nothing written past the end
      MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      ++cases;
      if (!ok) ++failures;
      if (rank == 0)
        std::printf("%s P=%d block=%lldB %s\n", name.c_str(), P, n, ok ? "ok" : "FAIL");
    }
  }
  if (rank == 0) std::printf("SUMMARY P=%d cases=%d failures=%d\n", P, cases, failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}
