// Checks the runtime's bucket entry points of the gradient all-reduce under
// mpirun (ampc_grad_allreduce_start / _wait, ampc_divide_by_world): a bucket
// of mixed f32, f16 and bf16 gradients, staged per type or widened to f32,
// summed or averaged, two buckets in flight at once, the division by the
// world size, and what happens with no communicator attached. Rank r's
// values depend on r, so every result is known in closed form. Prints one
// line per check on rank 0.
#include "mpi_check.h"

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  ampc_context ctx;
  check(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx), "context");
  ampc_comm comm;
  int32_t rank, size;
  openMpiComm(comm, rank, size);
  int failures = 0;
  auto expect = floatChecker(rank, failures);
  // The gradients of one bucket: a f32[5], b f16[3], c f32[4], d bf16[2].
  // Element i of rank r: a = (r+1)(i+1), b = 2(r+1), c = (r+1) i, d = 4(r+1).
  std::vector<float> a(5), c(4);
  std::vector<uint16_t> b(3), d(2);
  auto fill = [&] {
    float k = float(rank + 1);
    for (int i = 0; i < 5; ++i)
      a[i] = k * float(i + 1);
    for (int i = 0; i < 3; ++i)
      b[i] = toF16(2 * k);
    for (int i = 0; i < 4; ++i)
      c[i] = k * float(i);
    for (int i = 0; i < 2; ++i)
      d[i] = toBf16(4 * k);
  };
  void *grads[4] = {a.data(), b.data(), c.data(), d.data()};
  ampc_dtype types[4] = {AMPC_F32, AMPC_F16, AMPC_F32, AMPC_BF16};
  int64_t numels[4] = {5, 3, 4, 2};
  // S = sum over ranks of (r + 1).
  float s = float(size) * float(size + 1) / 2;
  auto expectAll = [&](const char *what, float scale) {
    for (int i = 0; i < 5; ++i)
      expect(what, a[i], s * float(i + 1) * scale, i);
    for (int i = 0; i < 3; ++i)
      expect(what, fromF16(b[i]), 2 * s * scale, i);
    for (int i = 0; i < 4; ++i)
      expect(what, c[i], s * float(i) * scale, i);
    for (int i = 0; i < 2; ++i)
      expect(what, fromBf16(d[i]), 4 * s * scale, i);
  };

  // No communicator attached: start and wait leave the values alone.
  fill();
  check(ampc_grad_allreduce_start(ctx, grads, types, numels, 4, 0, 1, 0),
        "start (no comm)");
  check(ampc_grad_allreduce_wait(ctx, grads, types, numels, 4, 0),
        "wait (no comm)");
  expect("no comm", a[1], float(rank + 1) * 2, 1);
  float seed = 6, divided = 0;
  int64_t scalar[1] = {1};
  check(ampc_divide_by_world(ctx, &divided, AMPC_F32, scalar, 1, &seed,
                             AMPC_F32, scalar, 1),
        "divide (no comm)");
  expect("divide by 1", divided, 6, 0);

  check(ampc_context_set_comm(ctx, comm), "attach");
  // Per-type messages (two f32 gradients staged, f16 and bf16 alone), sum.
  fill();
  check(ampc_grad_allreduce_start(ctx, grads, types, numels, 4, 0, 0, 0),
        "start");
  check(ampc_grad_allreduce_wait(ctx, grads, types, numels, 4, 0), "wait");
  expectAll("sum", 1);
  // The same bucket again (its staging buffer reused), as the mean.
  fill();
  check(ampc_grad_allreduce_start(ctx, grads, types, numels, 4, 0, 1, 0),
        "start");
  check(ampc_grad_allreduce_wait(ctx, grads, types, numels, 4, 0), "wait");
  expectAll("mean", 1.0f / float(size));
  if (rank == 0)
    std::printf("bucket sum, mean of f32 f16 bf16 on %d ranks\n", size);

  // Every gradient widened into one f32 message.
  fill();
  check(ampc_grad_allreduce_start(ctx, grads, types, numels, 4, 1, 0, 1),
        "start f32");
  check(ampc_grad_allreduce_wait(ctx, grads, types, numels, 4, 1), "wait f32");
  expectAll("reduce_f32", 1);
  // Two buckets in flight, waited in the other order.
  fill();
  check(ampc_grad_allreduce_start(ctx, grads, types, numels, 2, 2, 0, 0),
        "start 2");
  check(ampc_grad_allreduce_start(ctx, grads + 2, types + 2, numels + 2, 2, 3,
                                  0, 0),
        "start 3");
  check(ampc_grad_allreduce_wait(ctx, grads + 2, types + 2, numels + 2, 2, 3),
        "wait 3");
  check(ampc_grad_allreduce_wait(ctx, grads, types, numels, 2, 2), "wait 2");
  expectAll("two buckets", 1);
  check(ampc_divide_by_world(ctx, &divided, AMPC_F32, scalar, 1, &seed,
                             AMPC_F32, scalar, 1),
        "divide");
  expect("divide by W", divided, 6.0f * (1.0f / float(size)), 0);
  if (rank == 0)
    std::printf("reduce_f32, two buckets in flight, divide by %d\n", size);

  // f64 gradients are summed in f64: element i of rank r is
  // (r + 1) (1 + (i + 1) 2^-40), which f32 cannot hold, with an f32 one in
  // the same bucket; with reduce_f32 the f64 gradient stays f64. The
  // division by W of an f64 seed is x / W in f64.
  {
    const double e = std::ldexp(1.0, -40);
    std::vector<double> g(3);
    std::vector<float> h(2);
    auto fill64 = [&] {
      for (int i = 0; i < 3; ++i)
        g[i] = double(rank + 1) * (1.0 + double(i + 1) * e);
      for (int i = 0; i < 2; ++i)
        h[i] = float(rank + 1);
    };
    void *grads64[2] = {g.data(), h.data()};
    ampc_dtype types64[2] = {AMPC_F64, AMPC_F32};
    int64_t numels64[2] = {3, 2};
    double s64 = double(size) * double(size + 1) / 2;
    auto expect64 = [&](const char *what, double scale) {
      for (int i = 0; i < 3; ++i) {
        double want = s64 * (1.0 + double(i + 1) * e) * scale;
        if (std::fabs(g[i] - want) > 1e-15 * want) {
          std::fprintf(stderr, "rank %d: %s[%d] = %.17g, expected %.17g\n",
                       rank, what, i, g[i], want);
          ++failures;
        }
      }
      for (int i = 0; i < 2; ++i)
        expect(what, h[i], float(s64 * scale), i);
    };
    for (int reduce32 = 0; reduce32 < 2; ++reduce32)
      for (int mean = 0; mean < 2; ++mean) {
        fill64();
        check(ampc_grad_allreduce_start(ctx, grads64, types64, numels64, 2, 7,
                                        mean, reduce32),
              "start f64");
        check(ampc_grad_allreduce_wait(ctx, grads64, types64, numels64, 2, 7),
              "wait f64");
        expect64(mean ? "f64 mean" : "f64 sum", mean ? 1.0 / size : 1.0);
      }
    double seed64 = 1.0, divided64 = 0;
    check(ampc_divide_by_world(ctx, &divided64, AMPC_F64, scalar, 1, &seed64,
                               AMPC_F64, scalar, 1),
          "divide f64");
    if (divided64 != 1.0 / double(size)) {
      std::fprintf(stderr, "rank %d: f64 divide = %.17g\n", rank, divided64);
      ++failures;
    }
    if (rank == 0)
      std::printf("f64 sum, mean, reduce_f32 and divide on %d ranks\n", size);
  }

  // Misuse is an error, not a hang: a wait without a start, a second start.
  ampc_status st = ampc_grad_allreduce_wait(ctx, grads, types, numels, 4, 9);
  if (st == AMPC_OK || !std::strstr(ampc_last_error(), "was not started"))
    ++failures;
  fill();
  check(ampc_grad_allreduce_start(ctx, grads, types, numels, 4, 5, 0, 0),
        "start 5");
  st = ampc_grad_allreduce_start(ctx, grads, types, numels, 4, 5, 0, 0);
  if (st == AMPC_OK || !std::strstr(ampc_last_error(), "already in flight"))
    ++failures;
  check(ampc_grad_allreduce_wait(ctx, grads, types, numels, 4, 5), "wait 5");
  expectAll("after a refused start", 1);
  int64_t bad[1] = {-1};
  if (ampc_grad_allreduce_start(ctx, grads, types, bad, 1, 6, 0, 0) == AMPC_OK)
    ++failures;
  if (rank == 0)
    std::printf("bad arguments\n");

  ampc_context_destroy(ctx); // frees the staging buffers
  ampc_comm_destroy(comm);
  if (failures) {
    std::fprintf(stderr, "rank %d: %d failures\n", rank, failures);
    return 1;
  }
  return 0;
}
