// Prints this rank's local rank (ampc_comm_local_rank), the choice of the
// CUDA device of a data-parallel rank. On one machine it equals the rank.
#include "ampc/runtime.h"

#include <cstdio>

int main() {
  ampc_comm comm;
  if (ampc_comm_create_mpi(&comm) != AMPC_OK) {
    std::fprintf(stderr, "create: %s\n", ampc_last_error());
    return 1;
  }
  int32_t rank = -1, local = -1;
  ampc_comm_rank(comm, &rank);
  if (ampc_comm_local_rank(comm, &local) != AMPC_OK) {
    std::fprintf(stderr, "local rank: %s\n", ampc_last_error());
    return 1;
  }
  std::printf("rank %d local %d\n", int(rank), int(local));
  return ampc_comm_destroy(comm) == AMPC_OK ? 0 : 1;
}
