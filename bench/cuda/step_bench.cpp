//===- step_bench.cpp - Times a training step emitted by ampc --emit=cpp ---===//
//
// Built against one emitted graph: -DGRAPH=name '-DGRAPH_HEADER="file.h"'.
// With --vocab the inputs are (token ids, next-token targets, additive
// causal mask) as bench/cuda/gpt2_gen.py declares them; without, every
// input is zero bytes (a smoke run of any example: ids and labels 0). Runs --warmup steps, then --steps
// timed steps in a loop that reads each step's loss one step late (one
// ampc_read_async after a step, waited for after the next is queued), as
// `ampc run` does, and counts host synchronisations inside the steps
// (ampc_host_syncs before and after each step call). Prints one JSON object.
//
//   step_bench --label L [--vocab V] [--backend cpu|cuda] [--warmup 3]
//              [--steps 10] [--out FILE] [--write-inputs DIR] [--dry-run]
//
// --dry-run prints what it would do and exits before creating a context.
// --write-inputs writes the LM inputs as DIR/{tokens,targets,mask}.npy, so
// `ampc run --input ...` can run the same steps (test/StepReads).
//
//===----------------------------------------------------------------------===//
#include GRAPH_HEADER

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define FN(x) CAT(GRAPH, x)
#define STR2(x) #x
#define STR(x) STR2(x)

namespace {

bool check(ampc_status st, const char *what) {
  if (st == AMPC_OK)
    return true;
  std::fprintf(stderr, "step_bench: %s: %s (%s)\n", what,
               ampc_status_string(st), ampc_last_error());
  return false;
}

} // namespace

int main(int argc, char **argv) {
  std::string label = "?", out, backendName = "cuda", inputsDir;
  int warmup = 3, steps = 10;
  long vocab = 0;
  bool dry = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "step_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--label")
      label = next();
    else if (a == "--vocab")
      vocab = std::atol(next());
    else if (a == "--backend")
      backendName = next();
    else if (a == "--warmup")
      warmup = std::atoi(next());
    else if (a == "--steps")
      steps = std::atoi(next());
    else if (a == "--out")
      out = next();
    else if (a == "--dry-run")
      dry = true;
    else if (a == "--write-inputs")
      inputsDir = next();
    else {
      std::fprintf(stderr,
                   "usage: step_bench --label L --vocab V [--backend cpu|cuda] "
                   "[--warmup N] [--steps N] [--out FILE] [--dry-run]\n");
      return 2;
    }
  }
  int32_t nIn = FN(num_inputs)();
  bool lm = vocab > 0;
  if ((lm && nIn != 3) || steps < 1 || warmup < 0) {
    std::fprintf(stderr, "step_bench: --vocab needs a graph with inputs "
                         "(tokens, targets, mask); --steps >= 1\n");
    return 2;
  }
  int64_t tokens = lm ? FN(input_bytes)(0) / 4 : 0;
  int64_t seq = lm ? static_cast<int64_t>(std::llround(std::sqrt(
                         static_cast<double>(FN(input_bytes)(2) / 4))))
                   : 0;
  if (dry) {
    std::printf("dry-run: would time %s (graph %s, %d inputs, %lld tokens, "
                "vocabulary %ld) on %s: %d warm-up + %d timed steps\n",
                label.c_str(), STR(GRAPH), nIn, (long long)tokens, vocab,
                backendName.c_str(), warmup, steps);
    return 0;
  }
  ampc_backend backend =
      backendName == "cpu" ? AMPC_BACKEND_CPU : AMPC_BACKEND_CUDA;
  ampc_context ctx = nullptr;
  if (!check(ampc_context_create(backend, 0, &ctx), "context"))
    return 1;
  FN(state) *state = nullptr;
  if (!check(FN(create)(ctx, 0, &state), "create"))
    return 1;

  // Inputs: a fixed pseudo-random token stream, targets = the next token.
  std::vector<int32_t> ids(lm ? tokens + 1 : 0);
  uint64_t r = 88172645463325252ull;
  for (auto &t : ids) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    t = static_cast<int32_t>(r % static_cast<uint64_t>(vocab));
  }
  std::vector<float> mask(seq * seq);
  for (int64_t q = 0; q < seq; ++q)
    for (int64_t k = 0; k < seq; ++k)
      mask[q * seq + k] = k <= q ? 0.0f : -10000.0f;
  if (lm && !inputsDir.empty()) {
    // .npy v1.0: magic, version, header length, a dict padded to 64 bytes.
    auto npy = [&](const char *name, const char *descr, const std::string &shape,
                   const void *data, size_t bytes) {
      std::string dict = std::string("{'descr': '") + descr +
                         "', 'fortran_order': False, 'shape': (" + shape +
                         "), }";
      while ((10 + dict.size() + 1) % 64)
        dict += ' ';
      dict += '\n';
      std::string path = inputsDir + "/" + name + ".npy";
      FILE *f = std::fopen(path.c_str(), "wb");
      uint16_t len = static_cast<uint16_t>(dict.size());
      bool ok = f && std::fwrite("\x93NUMPY\x01\x00", 1, 8, f) == 8 &&
                std::fwrite(&len, 2, 1, f) == 1 &&
                std::fwrite(dict.data(), 1, dict.size(), f) == dict.size() &&
                std::fwrite(data, 1, bytes, f) == bytes;
      if (f)
        ok &= std::fclose(f) == 0;
      return ok;
    };
    std::string b = std::to_string(tokens / seq), t = std::to_string(seq);
    if (!npy("tokens", "<i4", b + ", " + t, ids.data(), tokens * 4) ||
        !npy("targets", "<i4", std::to_string(tokens) + ",", ids.data() + 1,
             tokens * 4) ||
        !npy("mask", "<f4", t + ", " + t, mask.data(), seq * seq * 4)) {
      std::fprintf(stderr, "step_bench: cannot write inputs to %s\n",
                   inputsDir.c_str());
      return 1;
    }
  }
  std::vector<void *> inputs(nIn);
  for (int32_t i = 0; i < nIn; ++i) {
    int64_t n = FN(input_bytes)(i);
    std::vector<char> zeros(lm ? 0 : n, 0);
    const void *host = !lm           ? zeros.data()
                       : i == 0      ? static_cast<const void *>(ids.data())
                       : i == 1      ? static_cast<const void *>(ids.data() + 1)
                                     : static_cast<const void *>(mask.data());
    if (!check(ampc_malloc(ctx, n, &inputs[i]), "malloc") ||
        !check(ampc_memcpy(ctx, inputs[i], host, n, AMPC_MEMCPY_HOST_TO_DEVICE),
               "upload"))
      return 1;
  }

  void *pinned[2] = {};
  for (void *&p : pinned)
    if (!check(ampc_host_alloc(ctx, 4, &p), "host_alloc"))
      return 1;
  std::vector<double> losses;
  uint64_t syncsInSteps = 0, pendingTicket = 0;
  int pendingSlot = -1;
  auto run = [&](int n, bool timed) -> bool {
    for (int k = 0; k < n; ++k) {
      uint64_t before = 0, after = 0;
      ampc_host_syncs(ctx, &before);
      if (!check(FN(step)(state, inputs.data()), "step"))
        return false;
      ampc_host_syncs(ctx, &after);
      syncsInSteps += after - before;
      if (!timed)
        continue;
      // Queue this step's loss, then take the previous one.
      int slot = static_cast<int>(losses.size() + (pendingSlot >= 0)) & 1;
      const void *src[1] = {FN(output)(state, 0)};
      size_t bytes[1] = {4};
      uint64_t ticket = 0;
      if (!check(ampc_read_async(ctx, pinned[slot], src, bytes, 1, &ticket),
                 "read_async"))
        return false;
      if (pendingSlot >= 0) {
        if (!check(ampc_read_wait(ctx, pendingTicket), "read_wait"))
          return false;
        float v;
        std::memcpy(&v, pinned[pendingSlot], 4);
        losses.push_back(v);
      }
      pendingSlot = slot;
      pendingTicket = ticket;
    }
    return true;
  };
  auto t0 = std::chrono::steady_clock::now();
  if (!run(warmup, false) || !check(ampc_synchronize(ctx), "synchronize"))
    return 1;
  auto t1 = std::chrono::steady_clock::now();
  if (!run(steps, true) || !check(ampc_synchronize(ctx), "synchronize"))
    return 1;
  auto t2 = std::chrono::steady_clock::now();
  if (pendingSlot >= 0) {
    if (!check(ampc_read_wait(ctx, pendingTicket), "read_wait"))
      return 1;
    float v;
    std::memcpy(&v, pinned[pendingSlot], 4);
    losses.push_back(v);
  }
  double warmS = std::chrono::duration<double>(t1 - t0).count();
  double secs = std::chrono::duration<double>(t2 - t1).count();
  double ms = 1e3 * secs / steps;
  std::string json = "{\"label\": \"" + label + "\", \"graph\": \"" +
                     STR(GRAPH) + "\", \"backend\": \"" + backendName +
                     "\", \"tokens\": " + std::to_string(tokens) +
                     ", \"warmup_steps\": " + std::to_string(warmup) +
                     ", \"warmup_seconds\": " + std::to_string(warmS) +
                     ", \"steps\": " + std::to_string(steps) +
                     ", \"ms_per_step\": " + std::to_string(ms) +
                     ", \"tokens_per_second\": " +
                     std::to_string(tokens / (ms / 1e3)) +
                     ", \"host_syncs_inside_steps\": " +
                     std::to_string(syncsInSteps) + ", \"losses\": [";
  for (size_t i = 0; i < losses.size(); ++i) {
    char b[32];
    std::snprintf(b, sizeof(b), "%s%.9g", i ? ", " : "", losses[i]);
    json += b;
  }
  json += "]}";
  if (out.empty()) {
    std::printf("%s\n", json.c_str());
  } else {
    FILE *f = std::fopen(out.c_str(), "w");
    if (!f || std::fprintf(f, "%s\n", json.c_str()) < 0 || std::fclose(f))
      return 1;
  }
  std::fprintf(stderr, "step_bench %s: %.2f ms/step, %lld host syncs inside "
               "steps, loss %.5g -> %.5g\n",
               label.c_str(), ms, (long long)syncsInSteps,
               losses.empty() ? NAN : losses.front(),
               losses.empty() ? NAN : losses.back());
  for (void *p : pinned)
    ampc_host_free(ctx, p);
  for (void *p : inputs)
    ampc_free(ctx, p);
  FN(destroy)(state);
  ampc_context_destroy(ctx);
  return syncsInSteps == 0 ? 0 : 3;
}
