// Drives code from `ampc --emit=cpp` with gradient accumulation: GRAPH is
// the graph's name; the arguments are one dataset .npy per input (N rows of
// the input's shape, in graph order), the number of updates and the mode:
// "split" calls GRAPH_micro_step K times then GRAPH_update, "auto" calls
// GRAPH_step K times (it updates after the K-th). Update u takes the
// batches uK .. uK + K - 1 in file order (`ampc run --data --shuffle=false`)
// and prints one line with the mean of their losses, as `ampc run --log`.
#include GRAPH_HEADER

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

int main(int argc, char **argv) {
  int32_t n = FN(num_inputs)();
  if (argc != n + 3) {
    std::fprintf(stderr, "usage: %s DATA.npy... UPDATES split|auto\n", argv[0]);
    return 2;
  }
  bool split = std::strcmp(argv[n + 2], "split") == 0;
  int32_t k = FN(accumulate)();
  ampc_context ctx;
  if (!check(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx), "context"))
    return 1;
  FN(state) *state = nullptr;
  if (!check(FN(create)(ctx, 0, &state), "create"))
    return 1;
  // The CPU backend's device memory is host memory: a batch is a pointer
  // into the dataset.
  std::vector<std::string> data(n);
  std::vector<size_t> header(n);
  for (int32_t i = 0; i < n; ++i) {
    FILE *f = std::fopen(argv[1 + i], "rb");
    if (!f)
      return 1;
    char chunk[4096];
    size_t got;
    while ((got = std::fread(chunk, 1, sizeof(chunk), f)) > 0)
      data[i].append(chunk, got);
    std::fclose(f);
    header[i] = 10 + (static_cast<unsigned char>(data[i][8]) |
                      (static_cast<unsigned char>(data[i][9]) << 8));
  }
  int updates = std::atoi(argv[n + 1]);
  std::vector<const void *> inputs(n);
  for (int u = 0; u < updates; ++u) {
    double sum = 0.0;
    for (int32_t j = 0; j < k; ++j) {
      int64_t batch = static_cast<int64_t>(u) * k + j;
      for (int32_t i = 0; i < n; ++i) {
        size_t at = header[i] + batch * FN(input_bytes)(i);
        if (at + FN(input_bytes)(i) > data[i].size())
          return 1;
        inputs[i] = data[i].data() + at;
      }
      if (!check(split ? FN(micro_step)(state, inputs.data())
                       : FN(step)(state, inputs.data()),
                 "step"))
        return 1;
      float loss;
      if (!check(ampc_memcpy(ctx, &loss, FN(output)(state, 0), sizeof(loss),
                             AMPC_MEMCPY_DEVICE_TO_HOST),
                 "read"))
        return 1;
      sum += loss;
    }
    if (split && !check(FN(update)(state), "update"))
      return 1;
    int32_t skipped = 0;
    if (!check(FN(skipped)(state, &skipped), "skipped"))
      return 1;
    std::printf("{\"step\": %d, \"loss\": %.9g, \"skipped\": %s}\n", u + 1,
                sum / k, skipped ? "true" : "false");
  }
  FN(destroy)(state);
  ampc_context_destroy(ctx);
  return 0;
}
