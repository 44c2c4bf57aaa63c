// Checks the runtime's collectives under mpirun: all-reduce (sum, mean, max)
// of f32, f16, bf16 and i32 buffers, asynchronous with a wait, broadcast and
// barrier. Every rank r contributes values that depend on r, so each result
// is known in closed form; and f64 sync batch norm against a naive f64
// reference of the whole batch. Prints one line per check on rank 0.
// With --cuda, only the f64 sync batch norm, on a CUDA context (device 0,
// which the ranks may share: its collectives run on the host), against the
// same reference and bit for bit against a CPU context's results.
#include "mpi_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {
/// f64 sync batch norm on the attached communicator: rank r holds rows
/// r*B .. r*B+B-1 of a global batch of W*B rows ([W*B, C, L]); its y, dx,
/// dw, db (this rank's own sums) and running statistics against the
/// textbook f64 formulas over the whole batch, within 1e-12 relative.
/// Channel 0 holds 1 + k 2^-30, deviations an f32 cannot hold; eps and
/// momentum are no f32 values. The tensors live in ctx's memory (copied
/// there and back); `out` receives y, dx, dw, db, new_mean, new_var in
/// that order. Returns the number of failures.
int syncBatchNormF64(ampc_context ctx, int32_t rank, int32_t size,
                     std::vector<double> &out) {
  const int64_t B = 2, C = 2, L = 3, M = int64_t(size) * B * L;
  const double e = std::ldexp(1.0, -30), eps = 1e-7, momentum = 0.3;
  auto xv = [&](int64_t s, int64_t ch, int64_t j) { // s: global row
    int64_t k = s * L + j;
    return ch == 0 ? 1.0 + double(k) * e : 0.25 * double(k % 5) - 0.5 * ch;
  };
  auto dyv = [&](int64_t s, int64_t ch, int64_t j) {
    return 0.125 * double(((s * C + ch) * L + j) % 11) - 0.5;
  };
  const double w[2] = {1.5, -0.75}, b[2] = {0.1, 2.0}, rm[2] = {1.0, -0.5},
               rv[2] = {4.0, 0.3};
  std::vector<double> x(B * C * L), dy(B * C * L), y(B * C * L),
      dx(B * C * L);
  double dw[2], db[2], nm[2], nv[2];
  for (int64_t s = 0; s < B; ++s)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t j = 0; j < L; ++j) {
        x[(s * C + ch) * L + j] = xv(rank * B + s, ch, j);
        dy[(s * C + ch) * L + j] = dyv(rank * B + s, ch, j);
      }
  const int64_t xs[3] = {B, C, L}, cs[1] = {C};
  // Each tensor in ctx's memory: [0] x, [1] dy, [2] w, [3] b, [4] rm, [5] rv,
  // [6] y, [7] dx, [8] dw, [9] db, [10] nm, [11] nv.
  double *host[12] = {x.data(), dy.data(), const_cast<double *>(w),
                      const_cast<double *>(b), const_cast<double *>(rm),
                      const_cast<double *>(rv), y.data(), dx.data(), dw, db,
                      nm, nv};
  const size_t count[12] = {size_t(B * C * L), size_t(B * C * L), 2, 2, 2, 2,
                            size_t(B * C * L), size_t(B * C * L), 2, 2, 2, 2};
  void *d[12];
  for (int i = 0; i < 12; ++i) {
    check(ampc_malloc(ctx, count[i] * 8, &d[i]), "ampc_malloc");
    if (i < 6)
      check(ampc_memcpy(ctx, d[i], host[i], count[i] * 8,
                        AMPC_MEMCPY_HOST_TO_DEVICE),
            "upload");
  }
  check(ampc_sync_batch_norm_fwd(ctx, d[6], AMPC_F64, xs, 3, d[0], AMPC_F64,
                                 xs, 3, d[2], AMPC_F64, cs, 1, d[3], AMPC_F64,
                                 cs, 1, d[4], AMPC_F64, cs, 1, d[5], AMPC_F64,
                                 cs, 1, 1, eps),
        "sync bn f64 fwd");
  check(ampc_sync_batch_norm_bwd(ctx, d[7], AMPC_F64, xs, 3, d[8], AMPC_F64,
                                 cs, 1, d[9], AMPC_F64, cs, 1, d[1], AMPC_F64,
                                 xs, 3, d[0], AMPC_F64, xs, 3, d[2], AMPC_F64,
                                 cs, 1, d[4], AMPC_F64, cs, 1, d[5], AMPC_F64,
                                 cs, 1, 1, eps),
        "sync bn f64 bwd");
  check(ampc_sync_batch_norm_update(ctx, d[10], AMPC_F64, cs, 1, d[11],
                                    AMPC_F64, cs, 1, d[0], AMPC_F64, xs, 3,
                                    d[4], AMPC_F64, cs, 1, d[5], AMPC_F64, cs,
                                    1, momentum),
        "sync bn f64 update");
  out.clear();
  for (int i = 6; i < 12; ++i) {
    check(ampc_memcpy(ctx, host[i], d[i], count[i] * 8,
                      AMPC_MEMCPY_DEVICE_TO_HOST),
          "download");
    out.insert(out.end(), host[i], host[i] + count[i]);
  }
  for (void *p : d)
    check(ampc_free(ctx, p), "ampc_free");
  int failures = 0;
  auto expect = [&](const char *what, double got, double want, int64_t i) {
    if (!(std::fabs(got - want) <= 1e-12 * std::max(1.0, std::fabs(want)))) {
      std::fprintf(stderr, "rank %d: %s[%lld] = %.17g, expected %.17g\n",
                   rank, what, (long long)i, got, want);
      ++failures;
    }
  };
  for (int64_t ch = 0; ch < C; ++ch) {
    double mean = 0, var = 0;
    for (int64_t s = 0; s < size * B; ++s)
      for (int64_t j = 0; j < L; ++j)
        mean += xv(s, ch, j);
    mean /= double(M);
    for (int64_t s = 0; s < size * B; ++s)
      for (int64_t j = 0; j < L; ++j)
        var += (xv(s, ch, j) - mean) * (xv(s, ch, j) - mean);
    var /= double(M);
    double invstd = 1.0 / std::sqrt(var + eps);
    double sumDy = 0, sumDyXhat = 0, ownDy = 0, ownDyXhat = 0;
    for (int64_t s = 0; s < size * B; ++s)
      for (int64_t j = 0; j < L; ++j) {
        double g = dyv(s, ch, j), gx = g * (xv(s, ch, j) - mean) * invstd;
        sumDy += g;
        sumDyXhat += gx;
        if (s / B == rank) {
          ownDy += g;
          ownDyXhat += gx;
        }
      }
    for (int64_t s = 0; s < B; ++s)
      for (int64_t j = 0; j < L; ++j) {
        int64_t i = (s * C + ch) * L + j, gs = rank * B + s;
        double xhat = (xv(gs, ch, j) - mean) * invstd;
        expect("f64 y", y[i], xhat * w[ch] + b[ch], i);
        expect("f64 dx", dx[i],
               w[ch] * invstd *
                   (dyv(gs, ch, j) - sumDy / double(M) -
                    xhat * sumDyXhat / double(M)),
               i);
      }
    expect("f64 dw", dw[ch], ownDyXhat, ch);
    expect("f64 db", db[ch], ownDy, ch);
    expect("f64 new_mean", nm[ch], (1 - momentum) * rm[ch] + momentum * mean,
           ch);
    expect("f64 new_var", nv[ch],
           (1 - momentum) * rv[ch] + momentum * var * double(M) / double(M - 1),
           ch);
  }
  return failures;
}

/// --cuda: the f64 sync batch norm on a CUDA context of every rank against
/// the reference and against a CPU context's bits.
int syncBatchNormF64Cuda() {
  int32_t available = 0;
  ampc_backend_available(AMPC_BACKEND_CUDA, &available);
  if (!available) {
    std::fprintf(stderr, "--cuda: no usable CUDA device\n");
    return 1;
  }
  ampc_context cpu, gpu;
  check(ampc_context_create(AMPC_BACKEND_CPU, 0, &cpu), "cpu context");
  check(ampc_context_create(AMPC_BACKEND_CUDA, 0, &gpu), "cuda context");
  ampc_comm comm;
  int32_t rank, size;
  openMpiComm(comm, rank, size);
  check(ampc_context_set_comm(cpu, comm), "set_comm");
  check(ampc_context_set_comm(gpu, comm), "set_comm");
  std::vector<double> onCpu, onGpu;
  int failures = syncBatchNormF64(cpu, rank, size, onCpu);
  failures += syncBatchNormF64(gpu, rank, size, onGpu);
  for (size_t i = 0; i < onCpu.size(); ++i)
    if (std::memcmp(&onCpu[i], &onGpu[i], 8)) {
      std::fprintf(stderr, "rank %d: CUDA output %zu = %.17g, CPU %.17g\n",
                   rank, i, onGpu[i], onCpu[i]);
      ++failures;
    }
  if (rank == 0)
    std::printf("sync batch norm f64 on CUDA, the CPU's bits, on %d ranks\n",
                size);
  check(ampc_context_set_comm(gpu, nullptr), "unset_comm");
  check(ampc_context_set_comm(cpu, nullptr), "unset_comm");
  check(ampc_comm_destroy(comm), "destroy");
  ampc_context_destroy(gpu);
  ampc_context_destroy(cpu);
  if (failures)
    std::fprintf(stderr, "rank %d: %d failures\n", rank, failures);
  return failures ? 1 : 0;
}
} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "--cuda") == 0)
    return syncBatchNormF64Cuda();
  ampc_context ctx;
  check(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx), "context");
  ampc_comm comm;
  int32_t rank, size;
  openMpiComm(comm, rank, size);
  const int n = 1000;
  int failures = 0;
  auto expect = floatChecker(rank, failures);
  // Rank r holds (i % 7) + r: sum = W*(i%7) + W(W-1)/2, max = (i%7) + W-1.
  float tri = size * (size - 1) / 2.0f;
  const ampc_reduce_op ops[] = {AMPC_REDUCE_SUM, AMPC_REDUCE_MEAN,
                                AMPC_REDUCE_MAX};
  const char *opNames[] = {"sum", "mean", "max"};
  for (int o = 0; o < 3; ++o) {
    auto want = [&](int i) {
      float b = float(i % 7);
      return o == 0 ? size * b + tri
             : o == 1 ? (size * b + tri) / size
                      : b + size - 1;
    };
    std::vector<float> f(n);
    std::vector<uint16_t> h(n), bf(n);
    std::vector<int32_t> k(n);
    for (int i = 0; i < n; ++i) {
      float v = float(i % 7 + rank);
      f[i] = v;
      h[i] = toF16(v);
      bf[i] = toBf16(v);
      k[i] = int32_t(v);
    }
    // All four in flight at once, then the waits.
    ampc_request r[4];
    check(ampc_comm_allreduce_async(comm, ctx, f.data(), AMPC_F32, n, ops[o],
                                    &r[0]), "f32");
    check(ampc_comm_allreduce_async(comm, ctx, h.data(), AMPC_F16, n, ops[o],
                                    &r[1]), "f16");
    check(ampc_comm_allreduce_async(comm, ctx, bf.data(), AMPC_BF16, n,
                                    ops[o], &r[2]), "bf16");
    check(ampc_comm_allreduce_async(comm, ctx, k.data(), AMPC_I32, n, ops[o],
                                    &r[3]), "i32");
    for (ampc_request q : r)
      check(ampc_comm_wait(q), "wait");
    for (int i = 0; i < n; ++i) {
      float w = want(i);
      expect("f32", f[i], w, i);
      expect("f16", fromF16(h[i]), fromF16(toF16(w)), i);
      expect("bf16", fromBf16(bf[i]), fromBf16(toBf16(w)), i);
      expect("i32", float(k[i]), float(int32_t(o == 1 ? (size * (i % 7) + int(tri)) / size : w)), i);
    }
    if (rank == 0)
      std::printf("allreduce %s f32 f16 bf16 i32 on %d ranks\n", opNames[o],
                  size);
  }
  std::vector<int64_t> b(64, rank);
  check(ampc_comm_broadcast(comm, ctx, b.data(), 64 * 8, size - 1), "bcast");
  for (int i = 0; i < 64; ++i)
    expect("broadcast", float(b[i]), float(size - 1), i);
  check(ampc_comm_barrier(comm), "barrier");
  // Bad arguments are errors, not crashes.
  ampc_request bad;
  if (ampc_comm_allreduce_async(comm, ctx, b.data(), AMPC_I64, 1,
                                AMPC_REDUCE_SUM, &bad) !=
      AMPC_ERROR_UNSUPPORTED_DTYPE)
    ++failures;
  if (ampc_comm_allreduce_async(comm, ctx, b.data(), AMPC_F32, 1,
                                ampc_reduce_op(7), &bad) !=
      AMPC_ERROR_INVALID_ARGUMENT)
    ++failures;
  if (rank == 0)
    std::printf("broadcast, barrier, bad arguments\n");
  // Sync batch norm with the communicator attached: a shape the one-rank
  // entry point refuses is its status, not a C++ exception out of the C ABI
  // (a negative dim was a std::length_error from the staging of x, an
  // abort), and dy of another shape than x is not read with x's size.
  check(ampc_context_set_comm(ctx, comm), "set_comm");
  float x[16] = {}, w[2] = {1, 1}, bias[2] = {}, rm[2] = {}, rv[2] = {1, 1};
  float dx[16], dw[2], db[2], nm[2], nv[2], dy[2] = {};
  const int64_t neg[2] = {-8, 2}, good[2] = {8, 2}, small[2] = {1, 2},
                c[1] = {2};
  if (ampc_sync_batch_norm_fwd(ctx, x, AMPC_F32, neg, 2, x, AMPC_F32, neg, 2,
                               w, AMPC_F32, c, 1, bias, AMPC_F32, c, 1, rm,
                               AMPC_F32, c, 1, rv, AMPC_F32, c, 1, 1,
                               1e-5) != AMPC_ERROR_SHAPE_MISMATCH)
    ++failures;
  if (ampc_sync_batch_norm_bwd(ctx, dx, AMPC_F32, neg, 2, dw, AMPC_F32, c, 1,
                               db, AMPC_F32, c, 1, x, AMPC_F32, neg, 2, x,
                               AMPC_F32, neg, 2, w, AMPC_F32, c, 1, rm,
                               AMPC_F32, c, 1, rv, AMPC_F32, c, 1, 1,
                               1e-5) != AMPC_ERROR_SHAPE_MISMATCH)
    ++failures;
  if (ampc_sync_batch_norm_bwd(ctx, dx, AMPC_F32, good, 2, dw, AMPC_F32, c, 1,
                               db, AMPC_F32, c, 1, dy, AMPC_F32, small, 2, x,
                               AMPC_F32, good, 2, w, AMPC_F32, c, 1, rm,
                               AMPC_F32, c, 1, rv, AMPC_F32, c, 1, 1,
                               1e-5) != AMPC_ERROR_SHAPE_MISMATCH)
    ++failures;
  if (ampc_sync_batch_norm_update(ctx, nm, AMPC_F32, c, 1, nv, AMPC_F32, c, 1,
                                  x, AMPC_F32, neg, 2, rm, AMPC_F32, c, 1, rv,
                                  AMPC_F32, c, 1,
                                  0.1) != AMPC_ERROR_SHAPE_MISMATCH)
    ++failures;
  if (rank == 0)
    std::printf("sync batch norm, bad shapes\n");
  std::vector<double> results;
  failures += syncBatchNormF64(ctx, rank, size, results);
  if (rank == 0)
    std::printf("sync batch norm f64 on %d ranks\n", size);
  check(ampc_context_set_comm(ctx, nullptr), "unset_comm");
  check(ampc_comm_destroy(comm), "destroy");
  ampc_context_destroy(ctx);
  if (failures)
    std::fprintf(stderr, "rank %d: %d failures\n", rank, failures);
  return failures ? 1 : 0;
}
