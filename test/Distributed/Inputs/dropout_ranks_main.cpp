// Checks ampc_dropout_ranked_fwd under mpirun: with the job's communicator
// attached, rank r's [B, 2, 5] tensor draws exactly the mask that
// ampc_dropout_fwd gives rows j * W + r of one process's [W * B, 2, 5]
// tensor (the rows the ranks' data shards hold); without sample_elems, or
// with no communicator attached, the rank draws ampc_dropout_fwd's mask of
// its own tensor. Prints one line on rank 0.
#include "mpi_check.h"

#include <cstdio>
#include <cstring>
#include <vector>

int main() {
  ampc_context ctx;
  check(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx), "context");
  ampc_comm comm;
  int32_t rank, world;
  openMpiComm(comm, rank, world);
  const int64_t b = 3, sample = 10;
  const int64_t n = b * sample, whole = world * n;
  std::vector<float> x(whole), full(whole), mine(n), local(n), y(n);
  for (int64_t i = 0; i < whole; ++i)
    x[i] = 1.0f + 0.001f * float(i);
  int32_t step = 5;
  const uint64_t seed = 99;
  const double p = 0.35;
  const int64_t fullShape[] = {world * b, 2, 5}, shape[] = {b, 2, 5};
  check(ampc_dropout_fwd(ctx, full.data(), AMPC_F32, fullShape, 3, x.data(),
                         AMPC_F32, fullShape, 3, &step, seed, p, 4),
        "ampc_dropout_fwd (one process)");
  // This rank's rows of the whole batch.
  for (int64_t j = 0; j < b; ++j)
    std::memcpy(&mine[j * sample], &x[(j * world + rank) * sample],
                sample * sizeof(float));
  check(ampc_dropout_fwd(ctx, local.data(), AMPC_F32, shape, 3, mine.data(),
                         AMPC_F32, shape, 3, &step, seed, p, 4),
        "ampc_dropout_fwd (own rows)");
  check(ampc_context_set_comm(ctx, comm), "ampc_context_set_comm");
  int failures = 0, differ = 0;
  check(ampc_dropout_ranked_fwd(ctx, y.data(), AMPC_F32, shape, 3, mine.data(),
                                AMPC_F32, shape, 3, &step, seed, p, 4, sample),
        "ampc_dropout_ranked_fwd");
  for (int64_t j = 0; j < b; ++j)
    for (int64_t q = 0; q < sample; ++q) {
      float want = full[(j * world + rank) * sample + q];
      if (std::memcmp(&y[j * sample + q], &want, 4) != 0) {
        std::fprintf(stderr, "rank %d: element %lld: %g, one process %g\n",
                     rank, (long long)(j * sample + q), y[j * sample + q],
                     want);
        ++failures;
      }
      differ += y[j * sample + q] != local[j * sample + q];
    }
  // The own-index mask is another one (so the check above means something).
  if (world > 1 && differ == 0) {
    std::fprintf(stderr, "rank %d: the ranked mask is the own-index mask\n",
                 rank);
    ++failures;
  }
  // sample_elems 0, or no communicator: the own-index mask, bit for bit.
  check(ampc_dropout_ranked_fwd(ctx, y.data(), AMPC_F32, shape, 3, mine.data(),
                                AMPC_F32, shape, 3, &step, seed, p, 4, 0),
        "ampc_dropout_ranked_fwd (sample_elems 0)");
  failures += std::memcmp(y.data(), local.data(), n * 4) != 0;
  check(ampc_context_set_comm(ctx, nullptr), "detach");
  check(ampc_dropout_ranked_fwd(ctx, y.data(), AMPC_F32, shape, 3, mine.data(),
                                AMPC_F32, shape, 3, &step, seed, p, 4, sample),
        "ampc_dropout_ranked_fwd (no communicator)");
  failures += std::memcmp(y.data(), local.data(), n * 4) != 0;
  int32_t bad = failures ? 1 : 0;
  check(ampc_comm_allreduce(comm, ctx, &bad, AMPC_I32, 1, AMPC_REDUCE_MAX),
        "allreduce");
  if (rank == 0 && !bad)
    std::printf("ranked dropout: the masks of one process on %d ranks\n",
                world);
  check(ampc_comm_destroy(comm), "destroy");
  ampc_context_destroy(ctx);
  return bad ? 1 : 0;
}
