// Drives code from `ampc --emit=cpp`: GRAPH is the graph's name, the
// arguments are the inputs as .npy files (in graph order), then the step
// count. Prints one loss per step as `ampc run --log` does (%.9g).
// With AMPC_MAIN_CHECKS defined (test/Jobs/Inputs/checks_main.cpp) it asks
// GRAPH_check after each step for a failed device-side check (then prints
// it and exits 3), and after a skipped step GRAPH_overflow for the op that
// overflowed, and prints the step, skipped flag and overflow instead.
// With AMPC_MAIN_PRIMITIVES set it prints on stderr the context's GEMM and
// convolution primitives (ampc_context_primitives) after creation and
// those each step made; with AMPC_MAIN_TIMES set, the wall time of the
// creation and of each step.
#include GRAPH_HEADER

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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

#ifdef AMPC_MAIN_CHECKS
static std::string str(const char *s) {
  return s ? "\"" + std::string(s) + "\"" : "null";
}

/// After step k: -1 to go on, else the exit code (3: a failed check).
static int reportChecks(FN(state) * state, int k) {
  const char *message = nullptr;
  if (!check(FN(check)(state, &message), "check"))
    return 1;
  if (message) {
    std::printf("step %d: %s\n", k, message);
    return 3;
  }
  int32_t skipped = 0;
  if (!check(FN(skipped)(state, &skipped), "skipped"))
    return 1;
  std::string line = "{\"step\": " + std::to_string(k) +
                     ", \"skipped\": " + (skipped ? "true" : "false");
  if (skipped) {
    FN(overflow_site) site;
    if (!check(FN(overflow)(state, &site), "overflow"))
      return 1;
    if (site.op)
      line += ", \"overflow\": {\"op\": " + str(site.op) +
              ", \"name\": " + str(site.name) + ", \"loc\": " + str(site.loc) +
              ", \"pass\": " + str(site.pass) + "}";
  }
  std::printf("%s}\n", line.c_str());
  return -1;
}
#endif

int main(int argc, char **argv) {
  int32_t n = FN(num_inputs)();
  if (argc != n + 2) {
    std::fprintf(stderr, "usage: %s INPUT.npy... STEPS\n", argv[0]);
    return 2;
  }
  ampc_context ctx;
  if (!check(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx), "context"))
    return 1;
  bool primitives = std::getenv("AMPC_MAIN_PRIMITIVES") != nullptr;
  bool times = std::getenv("AMPC_MAIN_TIMES") != nullptr;
  int64_t made = 0;
  auto t0 = std::chrono::steady_clock::now();
  // Prints what `what` made and took since t0 (the flags above).
  auto report = [&](const std::string &what) {
    if (times)
      std::fprintf(stderr, "%s: %.1f ms\n", what.c_str(),
                   std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - t0)
                       .count());
    int64_t now = 0;
    if (primitives && check(ampc_context_primitives(ctx, &now), "primitives"))
      std::fprintf(stderr, "primitives made by %s: %lld\n", what.c_str(),
                   static_cast<long long>(now - made));
    made = now;
  };
  FN(state) *state = nullptr;
  if (!check(FN(create)(ctx, 0, &state), "create"))
    return 1;
  report("create");
  std::vector<void *> inputs(n);
  for (int32_t i = 0; i < n; ++i) {
    FILE *f = std::fopen(argv[1 + i], "rb");
    if (!f)
      return 1;
    std::string data;
    char chunk[4096];
    size_t got;
    while ((got = std::fread(chunk, 1, sizeof(chunk), f)) > 0)
      data.append(chunk, got);
    std::fclose(f);
    size_t header = 10 + (static_cast<unsigned char>(data[8]) |
                          (static_cast<unsigned char>(data[9]) << 8));
    int64_t bytes = FN(input_bytes)(i);
    if (static_cast<int64_t>(data.size() - header) != bytes)
      return 1;
    if (!check(ampc_malloc(ctx, bytes, &inputs[i]), "malloc") ||
        !check(ampc_memcpy(ctx, inputs[i], data.data() + header, bytes,
                           AMPC_MEMCPY_HOST_TO_DEVICE),
               "memcpy"))
      return 1;
  }
  // AMPC_MAIN_LOAD=CKPT starts from a checkpoint (e.g. one `ampc run
  // --save` wrote); the printed steps count on from the steps it holds
  // (AMPC_MAIN_FIRST=K numbers them from K instead).
  if (const char *ckpt = std::getenv("AMPC_MAIN_LOAD"))
    if (!check(FN(load)(state, ckpt), "load"))
      return 1;
  [[maybe_unused]] int first = std::getenv("AMPC_MAIN_FIRST")
                  ? std::atoi(std::getenv("AMPC_MAIN_FIRST"))
                  : static_cast<int>(FN(steps)(state)) + 1;
  int steps = std::atoi(argv[n + 1]);
  for (int k = 1; k <= steps; ++k) {
    t0 = std::chrono::steady_clock::now();
    if (!check(FN(step)(state, inputs.data()), "step") ||
        ((primitives || times) && !check(ampc_synchronize(ctx), "synchronize")))
      return 1;
    report("step " + std::to_string(k));
    float loss;
    if (!check(ampc_memcpy(ctx, &loss, FN(output)(state, 0), sizeof(loss),
                           AMPC_MEMCPY_DEVICE_TO_HOST),
               "read"))
      return 1;
#ifdef AMPC_MAIN_CHECKS
    (void)loss;
    int code = reportChecks(state, k);
    if (code >= 0)
      return code;
#else
    std::printf("{\"step\": %d, \"loss\": %.9g}\n", k + first - 1, loss);
#endif
  }
  // AMPC_MAIN_SAVE=CKPT writes a checkpoint after the last step.
  if (const char *ckpt = std::getenv("AMPC_MAIN_SAVE"))
    if (!check(FN(save)(state, ckpt), "save"))
      return 1;
  for (void *p : inputs)
    ampc_free(ctx, p);
  FN(destroy)(state);
  ampc_context_destroy(ctx);
  return 0;
}
