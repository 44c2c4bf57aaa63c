// Calls the functions of code from `ampc --emit=cpp` (GRAPH, GRAPH_HEADER as
// for cpp_main.cpp) with NULL arguments and prints each status and the text
// of ampc_last_error(): none may crash.
#include GRAPH_HEADER
#include <cstdio>
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define FN(x) CAT(GRAPH, x)
static void show(const char *what, ampc_status st) {
  std::printf("%s: %s (%s)\n", what, ampc_status_string(st), ampc_last_error());
  std::fflush(stdout);
}
int main() {
  ampc_context ctx;
  ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx);
  FN(state) *s = nullptr;
  show("create(NULL ctx)", FN(create)(nullptr, 0, &s));
  show("create(NULL out)", FN(create)(ctx, 0, nullptr));
  // A failed create leaves *state NULL (it was left as it was).
  s = reinterpret_cast<FN(state) *>(0x1);
  FN(create)(nullptr, 0, &s);
  std::printf("state after a failed create: %p\n", static_cast<void *>(s));
  std::fflush(stdout);
  show("step(NULL)", FN(step)(nullptr, nullptr));
#ifdef AMPC_NULLS_ACCUMULATE
  show("micro_step(NULL)", FN(micro_step)(nullptr, nullptr));
  show("update(NULL)", FN(update)(nullptr));
#endif
  const char *m;
  show("check(NULL)", FN(check)(nullptr, &m));
  int32_t k;
  show("skipped(NULL)", FN(skipped)(nullptr, &k));
  FN(overflow_site) site;
  show("overflow(NULL)", FN(overflow)(nullptr, &site));
  std::printf("input_bytes(-1) = %lld\n", (long long)FN(input_bytes)(-1));
  std::printf("output(NULL, 0) = %p\n", FN(output)(nullptr, 0));
  std::fflush(stdout);
  show("save(NULL state)", FN(save)(nullptr, "x.ckpt"));
  show("load(NULL state)", FN(load)(nullptr, "x.ckpt"));
  std::printf("create: %s\n", ampc_status_string(FN(create)(ctx, 0, &s)));
  show("step(s, NULL)", FN(step)(s, nullptr));
  show("check(s, NULL)", FN(check)(s, nullptr));
  show("save(s, NULL)", FN(save)(s, nullptr));
  show("load(s, NULL)", FN(load)(s, nullptr));
  std::printf("steps(NULL) = %lld, steps(s) = %lld\n",
              (long long)FN(steps)(nullptr), (long long)FN(steps)(s));
  std::fflush(stdout);
  show("set_data_position(NULL)", FN(set_data_position)(nullptr, 1, 0));
  show("set_data_position(s, 0, 0)", FN(set_data_position)(s, 0, 0));
  FN(destroy)(nullptr);
  FN(destroy)(s);
  ampc_context_destroy(ctx);
  std::printf("done\n");
  return 0;
}
