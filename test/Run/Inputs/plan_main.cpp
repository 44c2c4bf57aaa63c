// A driver for the code of `ampc --emit=cpp --target=cpu`: creates the
// program, then runs STEPS steps on zero inputs, printing the context's
// GEMM and convolution primitives (ampc_context_primitives) after creation
// and those each step made, and with AMPC_MAIN_TIMES set the wall time of
// the creation and of each step on stderr. Build with -DGRAPH=NAME
// -DGRAPH_HEADER='"NAME.h"'.
#include GRAPH_HEADER

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define FN(x) CAT(GRAPH, x)

static bool check(ampc_status st, const char *what) {
  if (st == AMPC_OK)
    return true;
  std::fprintf(stderr, "%s: %s (%s)\n", what, ampc_status_string(st),
               ampc_last_error());
  return false;
}

static double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t0)
      .count();
}

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s STEPS\n", argv[0]);
    return 2;
  }
  bool times = std::getenv("AMPC_MAIN_TIMES") != nullptr;
  ampc_context ctx;
  if (!check(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx), "context"))
    return 1;
  FN(state) *state = nullptr;
  auto t0 = std::chrono::steady_clock::now();
  if (!check(FN(create)(ctx, 0, &state), "create"))
    return 1;
  if (times)
    std::fprintf(stderr, "create: %.1f ms\n", msSince(t0));
  int64_t made = 0, now = 0;
  if (!check(ampc_context_primitives(ctx, &made), "primitives"))
    return 1;
  std::printf("primitives after create: %lld\n", static_cast<long long>(made));
  int32_t n = FN(num_inputs)();
  std::vector<void *> inputs(n);
  for (int32_t i = 0; i < n; ++i) {
    int64_t bytes = FN(input_bytes)(i);
    if (!check(ampc_malloc(ctx, bytes, &inputs[i]), "malloc") ||
        !check(ampc_memset(ctx, inputs[i], 0, bytes), "memset"))
      return 1;
  }
  int steps = std::atoi(argv[1]);
  for (int k = 1; k <= steps; ++k) {
    t0 = std::chrono::steady_clock::now();
    if (!check(FN(step)(state, inputs.data()), "step") ||
        !check(ampc_synchronize(ctx), "synchronize"))
      return 1;
    if (times)
      std::fprintf(stderr, "step %d: %.1f ms\n", k, msSince(t0));
    if (!check(ampc_context_primitives(ctx, &now), "primitives"))
      return 1;
    std::printf("primitives made by step %d: %lld\n", k,
                static_cast<long long>(now - made));
    made = now;
  }
  for (void *p : inputs)
    ampc_free(ctx, p);
  FN(destroy)(state);
  ampc_context_destroy(ctx);
  return 0;
}
