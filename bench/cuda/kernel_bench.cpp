//===- kernel_bench.cpp - CUDA kernel timings at GPT-2-small sizes --------===//
//
// A plain C++ program (no benchmark framework: the GPU machine has none)
// that times runtime entry points on the CUDA backend at the sizes of a
// GPT-2-small training step: 8192 tokens, width 768, MLP 3072, vocabulary
// 50257, 124M parameters. Each case runs a few warm-up calls, then a timed
// loop closed by ampc_synchronize; the time per call is wall time / calls.
// Writes one JSON object to stdout (or --out FILE).
//
//   kernel_bench [--out FILE] [--dry-run] [--filter SUBSTRING]
//
// --dry-run lists the cases and exits before the first CUDA call.
//
//===----------------------------------------------------------------------===//
#include "ampc/runtime.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

struct Case {
  std::string name;
  double bytes;                     // moved per call (for GB/s), or 0
  double flops;                     // per call (for TFLOP/s), or 0
  std::function<ampc_status()> run; // one call
};

ampc_context ctx = nullptr;
std::vector<void *> allocations;

size_t eltBytes(ampc_dtype dt) {
  return dt == AMPC_F16 || dt == AMPC_BF16 ? 2 : 4;
}

/// `numel` values of `dt` on the device, drawn from N(0, 1) in that dtype
/// (as torch.randn in torch_ref.py): f32 bit patterns read as f16 would be
/// Inf or NaN about 1.6% of the time, and as bf16 span 2^-127 to 2^127.
void *dev(int64_t numel, ampc_dtype dt = AMPC_F32) {
  static uint64_t seed = 1; // a stream of its own for every buffer
  void *p = nullptr;
  size_t bytes = static_cast<size_t>(numel) * eltBytes(dt);
  if (ampc_malloc(ctx, bytes, &p) != AMPC_OK) {
    std::fprintf(stderr, "kernel_bench: ampc_malloc(%zu): %s\n", bytes,
                 ampc_last_error());
    std::exit(1);
  }
  if (dt != AMPC_I32)
    ampc_init_normal(ctx, p, dt, numel, seed++, 0, 0.0, 1.0);
  allocations.push_back(p);
  return p;
}

/// One f32 scalar on the device holding `value` (a loss scale of 1, the
/// cross-entropy backward's incoming gradient).
void *scalar(float value) {
  void *p = dev(1);
  ampc_memcpy(ctx, p, &value, 4, AMPC_MEMCPY_HOST_TO_DEVICE);
  return p;
}

/// Integer ids in [0, range) on the device.
void *ids(int64_t n, int64_t range) {
  std::vector<int32_t> host(n);
  for (int64_t i = 0; i < n; ++i)
    host[i] = static_cast<int32_t>((i * 7919 + 13) % range);
  void *p = dev(n, AMPC_I32);
  ampc_memcpy(ctx, p, host.data(), n * 4, AMPC_MEMCPY_HOST_TO_DEVICE);
  return p;
}

#define S(...)                                                                 \
  std::vector<int64_t> { __VA_ARGS__ }

std::vector<Case> cases() {
  std::vector<Case> cs;
  const int64_t T = 8192, C = 768, H = 3072, V = 50257;
  // GEMMs.
  const ampc_dtype gemmTypes[] = {AMPC_F16, AMPC_BF16, AMPC_F32};
  for (int k = 0; k < 3; ++k) {
    ampc_dtype dt = gemmTypes[k];
    const char *dn = dt == AMPC_F16 ? "f16" : dt == AMPC_BF16 ? "bf16" : "f32";
    int64_t n = 8192;
    cs.push_back({std::string("gemm_8192^3_") + dn, 0, 2.0 * n * n * n, [=]() {
                    // One closure type for the three dtypes: a set of
                    // buffers (of that dtype) for each.
                    static void *bufs[3][3] = {};
                    void **abc = bufs[k];
                    if (!abc[0])
                      for (int i = 0; i < 3; ++i)
                        abc[i] = dev(n * n, dt);
                    return ampc_gemm(ctx, abc[2], dt, abc[0], dt, abc[1], dt,
                                     nullptr, AMPC_F32, 1, n, n, n, 0, 0, n, n,
                                     n, 0, 0, 0, 1.0f, 0.0f,
                                     AMPC_EPILOGUE_NONE);
                  }});
  }
  cs.push_back({"linear_fwd_mlp_fc_f16_gelu_tanh", 0, 2.0 * T * C * H, [=]() {
                  // All f16, bias included, as F.linear in torch_ref.py.
                  static void *x = dev(T * C, AMPC_F16),
                              *w = dev(H * C, AMPC_F16), *b = dev(H, AMPC_F16),
                              *y = dev(T * H, AMPC_F16);
                  auto xs = S(T, C), ws = S(H, C), bs = S(H), ys = S(T, H);
                  return ampc_linear_fwd(ctx, y, AMPC_F16, ys.data(), 2, x,
                                         AMPC_F16, xs.data(), 2, w, AMPC_F16,
                                         ws.data(), 2, b, AMPC_F16, bs.data(),
                                         1, AMPC_EPILOGUE_GELU_TANH);
                }});
  // Mixed dtypes (f16 activations, f32 weights): bf16 tensor cores over
  // exact parts (docs/cuda.md); PyTorch has no such GEMM (no torch case).
  cs.push_back({"linear_fwd_mlp_fc_f16xf32_mixed", 0, 2.0 * T * C * H, [=]() {
                  static void *x = dev(T * C, AMPC_F16), *w = dev(H * C),
                              *y = dev(T * H);
                  auto xs = S(T, C), ws = S(H, C), ys = S(T, H);
                  return ampc_linear_fwd(ctx, y, AMPC_F32, ys.data(), 2, x,
                                         AMPC_F16, xs.data(), 2, w, AMPC_F32,
                                         ws.data(), 2, nullptr, AMPC_F32,
                                         nullptr, 0, AMPC_EPILOGUE_NONE);
                }});
  cs.push_back(
      {"linear_bwd_mlp_fc_f16", 0, 4.0 * T * C * H, [=]() {
         // dx, dw and db in f16, as dy.mm(w), dy.t().mm(x) and
         // dy.sum(0) write them in torch_ref.py.
         static void *x = dev(T * C, AMPC_F16), *w = dev(H * C, AMPC_F16),
                     *dy = dev(T * H, AMPC_F16), *dx = dev(T * C, AMPC_F16),
                     *dw = dev(H * C, AMPC_F16), *db = dev(H, AMPC_F16);
         auto xs = S(T, C), ws = S(H, C), bs = S(H), ys = S(T, H);
         return ampc_linear_bwd(ctx, dx, AMPC_F16, xs.data(), 2, dw, AMPC_F16,
                                ws.data(), 2, db, AMPC_F16, bs.data(), 1, dy,
                                AMPC_F16, ys.data(), 2, x, AMPC_F16, xs.data(),
                                2, w, AMPC_F16, ws.data(), 2);
       }});
  // Norms, softmax, losses.
  cs.push_back(
      {"layer_norm_fwd_8192x768_f32", 2.0 * T * C * 4, 0, [=]() {
         static void *x = dev(T * C), *y = dev(T * C), *w = dev(C), *b = dev(C);
         auto xs = S(T, C), ws = S(C);
         return ampc_layer_norm_fwd(ctx, y, AMPC_F32, xs.data(), 2, x, AMPC_F32,
                                    xs.data(), 2, w, AMPC_F32, ws.data(), 1, b,
                                    AMPC_F32, ws.data(), 1, 1e-5);
       }});
  cs.push_back({"layer_norm_bwd_8192x768_f32", 3.0 * T * C * 4, 0, [=]() {
                  static void *x = dev(T * C), *dy = dev(T * C),
                              *dx = dev(T * C), *w = dev(C), *dw = dev(C),
                              *db = dev(C);
                  auto xs = S(T, C), ws = S(C);
                  return ampc_layer_norm_bwd(
                      ctx, dx, AMPC_F32, xs.data(), 2, dw, AMPC_F32, ws.data(),
                      1, db, AMPC_F32, ws.data(), 1, dy, AMPC_F32, xs.data(), 2,
                      x, AMPC_F32, xs.data(), 2, w, AMPC_F32, ws.data(), 1,
                      1e-5);
                }});
  cs.push_back(
      {"softmax_fwd_96x1024x1024_f16", 2.0 * 96 * 1024 * 1024 * 2, 0, [=]() {
         static void *x = dev(96 * 1024 * 1024, AMPC_F16),
                     *y = dev(96 * 1024 * 1024, AMPC_F16);
         auto s = S(96, 1024, 1024);
         return ampc_softmax_fwd(ctx, y, AMPC_F16, s.data(), 3, x, AMPC_F16,
                                 s.data(), 3, -1);
       }});
  // The attention softmax as the GPT-2 step runs it under AMP: f32 in and
  // out, and the backward to the f16 scores (dy, y f32).
  cs.push_back(
      {"softmax_fwd_96x1024x1024_f32", 2.0 * 96 * 1024 * 1024 * 4, 0, [=]() {
         static void *x = dev(96 * 1024 * 1024), *y = dev(96 * 1024 * 1024);
         auto s = S(96, 1024, 1024);
         return ampc_softmax_fwd(ctx, y, AMPC_F32, s.data(), 3, x, AMPC_F32,
                                 s.data(), 3, -1);
       }});
  cs.push_back({"softmax_bwd_96x1024x1024_f32_to_f16",
                96.0 * 1024 * 1024 * (4 + 4 + 2), 0, [=]() {
                  static void *y = dev(96 * 1024 * 1024),
                              *dy = dev(96 * 1024 * 1024),
                              *dx = dev(96 * 1024 * 1024, AMPC_F16);
                  auto s = S(96, 1024, 1024);
                  return ampc_softmax_bwd(ctx, dx, AMPC_F16, s.data(), 3, dy,
                                          AMPC_F32, s.data(), 3, y, AMPC_F32,
                                          s.data(), 3, -1);
                }});
  cs.push_back(
      {"cross_entropy_fwd_bwd_8192x50257_f16", 3.0 * T * V * 2, 0, [=]() {
         static void *l = dev(T * V, AMPC_F16), *dl = dev(T * V, AMPC_F16),
                     *lab = ids(T, V), *loss = dev(1), *one = scalar(1.0f);
         auto ls = S(T, V), lbs = S(T);
         ampc_status s = ampc_cross_entropy_fwd(ctx, loss, AMPC_F32, nullptr, 0,
                                                l, AMPC_F16, ls.data(), 2, lab,
                                                AMPC_I32, lbs.data(), 1, -1);
         if (s != AMPC_OK)
           return s;
         return ampc_cross_entropy_bwd(
             ctx, dl, AMPC_F16, ls.data(), 2, one, AMPC_F32, nullptr, 0, l,
             AMPC_F16, ls.data(), 2, lab, AMPC_I32, lbs.data(), 1);
       }});
  cs.push_back({"embedding_bwd_8192_tokens_50257x768_f32",
                1.0 * T * C * 4 + 1.0 * V * C * 4, 0, [=]() {
                  static void *dy = dev(T * C), *tok = ids(T, V),
                              *dt = dev(V * C);
                  auto ds = S(V, C), ys = S(T, C), is = S(T);
                  return ampc_embedding_bwd(ctx, dt, AMPC_F32, ds.data(), 2, dy,
                                            AMPC_F32, ys.data(), 2, tok,
                                            AMPC_I32, is.data(), 1);
                }});
  // Optimizer and AMP over GPT-2-small's 148 parameter tensors (124M).
  auto gpt2Sizes = []() {
    std::vector<int64_t> n = {50257 * 768, 1024 * 768};
    for (int l = 0; l < 12; ++l)
      for (int64_t s : {768, 768, 768 * 2304, 2304, 768 * 768, 768, 768, 768,
                        768 * 3072, 3072, 3072 * 768, 768})
        n.push_back(s);
    n.push_back(768);
    n.push_back(768);
    return n;
  };
  std::vector<int64_t> sizes = gpt2Sizes();
  double total = 0;
  for (int64_t s : sizes)
    total += s;
  cs.push_back({"unscale_124M_f32", 2.0 * total * 4, 0, [=]() {
                  static std::vector<void *> g;
                  static std::vector<ampc_dtype> dts;
                  static void *flag = scalar(0.0f), *scale = scalar(1.0f);
                  if (g.empty())
                    for (int64_t s : sizes) {
                      g.push_back(dev(s));
                      dts.push_back(AMPC_F32);
                    }
                  return ampc_check_finite_unscale(
                      ctx, flag, AMPC_F32, g.data(), dts.data(), sizes.data(),
                      static_cast<int32_t>(sizes.size()), scale);
                }});
  cs.push_back({"adamw_124M_f32", 7.0 * total * 4, 0, [=]() {
                  static std::vector<void *> p, g, m, v;
                  static std::vector<ampc_dtype> dts;
                  static void *step = dev(1, AMPC_I32);
                  if (p.empty()) {
                    ampc_memset(ctx, step, 0, 4);
                    for (int64_t s : sizes) {
                      p.push_back(dev(s));
                      g.push_back(dev(s));
                      // Moments start at 0, as PyTorch's (a normal second
                      // moment would be negative half the time).
                      m.push_back(dev(s));
                      v.push_back(dev(s));
                      ampc_memset(ctx, m.back(), 0, s * 4);
                      ampc_memset(ctx, v.back(), 0, s * 4);
                      dts.push_back(AMPC_F32);
                    }
                  }
                  return ampc_adamw_update(
                      ctx, p.data(), dts.data(), g.data(), dts.data(), m.data(),
                      v.data(), step, sizes.data(),
                      static_cast<int32_t>(sizes.size()), 1e-4, 0.9, 0.999,
                      1e-8, 0.1, 0.0, nullptr, AMPC_F32, nullptr);
                }});
  return cs;
}

std::string jsonEscape(const std::string &s) {
  std::string o;
  for (char c : s)
    o += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return o;
}

} // namespace

int main(int argc, char **argv) {
  const char *out = nullptr, *filter = nullptr;
  bool dry = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--dry-run"))
      dry = true;
    else if (!std::strcmp(argv[i], "--out") && i + 1 < argc)
      out = argv[++i];
    else if (!std::strcmp(argv[i], "--filter") && i + 1 < argc)
      filter = argv[++i];
    else {
      std::fprintf(stderr, "usage: kernel_bench [--out FILE] [--dry-run] "
                           "[--filter SUBSTRING]\n");
      return 2;
    }
  }
  std::vector<Case> cs = cases(); // builds closures only: no CUDA call yet
  if (dry) {
    for (const Case &c : cs)
      if (!filter || c.name.find(filter) != std::string::npos)
        std::printf("dry-run: would time %s\n", c.name.c_str());
    std::printf("dry-run: %zu cases, stopping before the first CUDA call\n",
                cs.size());
    return 0;
  }
  if (ampc_context_create(AMPC_BACKEND_CUDA, 0, &ctx) != AMPC_OK) {
    std::fprintf(stderr, "kernel_bench: no CUDA context: %s\n",
                 ampc_last_error());
    return 1;
  }
  std::string json = "{\"cases\": [";
  bool first = true;
  int failures = 0;
  for (const Case &c : cs) {
    if (filter && c.name.find(filter) == std::string::npos)
      continue;
    ampc_status s = AMPC_OK;
    for (int w = 0; w < 3 && s == AMPC_OK; ++w)
      s = c.run();
    if (s == AMPC_OK)
      s = ampc_synchronize(ctx);
    int calls = 0;
    double secs = 0;
    if (s == AMPC_OK) {
      auto t0 = std::chrono::steady_clock::now();
      do {
        s = c.run();
        ++calls;
        if (calls % 5 == 0 || s != AMPC_OK) {
          if (s == AMPC_OK)
            s = ampc_synchronize(ctx);
          secs = std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - t0)
                     .count();
        }
      } while (s == AMPC_OK && (secs < 0.3 || calls % 5) && calls < 2000);
    }
    std::string entry = "{\"name\": \"" + jsonEscape(c.name) + "\"";
    if (s != AMPC_OK) {
      ++failures;
      entry += ", \"error\": \"" + jsonEscape(ampc_last_error()) + "\"}";
      std::fprintf(stderr, "%-44s FAILED: %s\n", c.name.c_str(),
                   ampc_last_error());
    } else {
      double per = secs / calls;
      char buf[256];
      std::snprintf(buf, sizeof(buf), ", \"us_per_call\": %.3f, \"calls\": %d",
                    per * 1e6, calls);
      entry += buf;
      if (c.flops > 0) {
        std::snprintf(buf, sizeof(buf), ", \"tflops\": %.2f",
                      c.flops / per / 1e12);
        entry += buf;
      }
      if (c.bytes > 0) {
        std::snprintf(buf, sizeof(buf), ", \"gbps\": %.1f",
                      c.bytes / per / 1e9);
        entry += buf;
      }
      entry += "}";
      std::fprintf(stderr, "%-44s %10.1f us\n", c.name.c_str(), per * 1e6);
    }
    json += (first ? "" : ", ") + entry;
    first = false;
  }
  json += "]}\n";
  for (void *p : allocations)
    ampc_free(ctx, p);
  ampc_context_destroy(ctx);
  FILE *f = out ? std::fopen(out, "w") : stdout;
  if (!f) {
    std::fprintf(stderr, "kernel_bench: cannot write %s\n", out);
    return 1;
  }
  std::fputs(json.c_str(), f);
  if (out)
    std::fclose(f);
  return failures ? 1 : 0;
}
