// Shared by the drivers of test/Distributed that call the runtime under
// mpirun: the check that ends a rank on a failed call (with the runtime's
// message), the job's communicator, the check of a float result, and the
// f16 / bf16 conversions of the small integers the drivers exchange.
#ifndef AMPC_TEST_DISTRIBUTED_MPI_CHECK_H
#define AMPC_TEST_DISTRIBUTED_MPI_CHECK_H

#include "ampc/runtime.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

/// Ends the rank with exit code 1 when `st` is not AMPC_OK.
inline void check(ampc_status st, const char *what) {
  if (st != AMPC_OK) {
    std::fprintf(stderr, "%s: %s (%s)\n", what, ampc_status_string(st),
                 ampc_last_error());
    std::exit(1);
  }
}

/// The job's MPI communicator, this rank and the world size.
inline void openMpiComm(ampc_comm &comm, int32_t &rank, int32_t &size) {
  check(ampc_comm_create_mpi(&comm), "ampc_comm_create_mpi");
  check(ampc_comm_rank(comm, &rank), "rank");
  check(ampc_comm_size(comm, &size), "size");
}

/// The check of one float against its closed form: a mismatch is printed
/// and counted in `failures`.
inline auto floatChecker(const int32_t &rank, int &failures) {
  return [&rank, &failures](const char *what, float got, float want, int i) {
    if (got != want) {
      std::fprintf(stderr, "rank %d: %s[%d] = %g, expected %g\n", rank, what,
                   i, got, want);
      ++failures;
    }
  };
}

inline uint16_t toF16(float f) { // exact for the small integers used here
  if (f == 0)
    return 0;
  int e;
  float m = std::frexp(std::fabs(f), &e); // f = m * 2^e, m in [0.5, 1)
  uint16_t bits = uint16_t((e + 14) << 10) | uint16_t((m * 2 - 1) * 1024);
  return f < 0 ? bits | 0x8000 : bits;
}
inline float fromF16(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v =
      e ? std::ldexp(float(m | 0x400), e - 25) : std::ldexp(float(m), -24);
  return h & 0x8000 ? -v : v;
}
inline uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t(u >> 16);
}
inline float fromBf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

#endif // AMPC_TEST_DISTRIBUTED_MPI_CHECK_H
