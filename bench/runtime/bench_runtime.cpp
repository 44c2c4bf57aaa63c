//===- bench_runtime.cpp - Runtime kernel benchmarks
//------------------------===//
//
// CPU: ampc_gemm with f16 inputs against OpenBLAS sgemm on the same shape
// (the ratio is printed at the end), elementwise, softmax, layer norm, the
// SGD update and the overflow check.
// CUDA (skipped without a GPU): cuBLASLt f16 GEMM TFLOP/s at 8192^3 and the
// fused check-finite-and-unscale bandwidth. See README.md.
//
//===----------------------------------------------------------------------===//
#include "ampc/runtime.h"

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

ampc_context cpuContext() {
  static ampc_context ctx = [] {
    ampc_context c = nullptr;
    ampc_context_create(AMPC_BACKEND_CPU, 0, &c);
    return c;
  }();
  return ctx;
}

ampc_context cudaContext() {
  static ampc_context ctx = [] {
    ampc_context c = nullptr;
    int32_t ok = 0;
    if (ampc_backend_available(AMPC_BACKEND_CUDA, &ok) == AMPC_OK && ok)
      ampc_context_create(AMPC_BACKEND_CUDA, 0, &c);
    return c;
  }();
  return ctx;
}

/// A device buffer filled with uniform values.
void *deviceRandom(ampc_context ctx, ampc_dtype dt, int64_t n, uint64_t seed) {
  size_t es = 0;
  ampc_dtype_size(dt, &es);
  void *p = nullptr;
  ampc_malloc(ctx, n * es, &p);
  ampc_init_uniform(ctx, p, dt, n, seed, 0, -1, 1);
  return p;
}

/// Leaves one of the runtime's on/off settings (AMPC_CPU_GEMM_PAD,
/// AMPC_CPU_GEMM_SPLIT) at its default, on, or sets it off.
void setKnob(const char *var, bool on) {
  if (on)
    unsetenv(var);
  else
    setenv(var, "off", 1);
}

/// The label of a benchmark's dtype.
const char *dtypeLabel(ampc_dtype dt) {
  return dt == AMPC_F32 ? "f32" : dt == AMPC_BF16 ? "bf16" : "f16";
}

void gemmCounters(benchmark::State &state, int64_t n) {
  state.counters["FLOP/s"] = benchmark::Counter(
      2.0 * n * n * n * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_CpuSgemmOpenBLAS(benchmark::State &state) {
  int n = static_cast<int>(state.range(0));
  std::vector<float> a(n * n), b(n * n), c(n * n);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = b[i] = static_cast<float>(i % 7) * 0.1f;
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  gemmCounters(state, n);
}
BENCHMARK(BM_CpuSgemmOpenBLAS)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_CpuGemmF16(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  int64_t n = state.range(0);
  void *a = deviceRandom(ctx, AMPC_F16, n * n, 1);
  void *b = deviceRandom(ctx, AMPC_F16, n * n, 2);
  void *c = nullptr;
  ampc_malloc(ctx, n * n * 4, &c);
  for (auto _ : state)
    ampc_gemm(ctx, c, AMPC_F32, a, AMPC_F16, b, AMPC_F16, nullptr, AMPC_F32, 1,
              n, n, n, 0, 0, n, n, n, 0, 0, 0, 1.0f, 0.0f, AMPC_EPILOGUE_NONE);
  gemmCounters(state, n);
  ampc_free(ctx, a);
  ampc_free(ctx, b);
  ampc_free(ctx, c);
}
BENCHMARK(BM_CpuGemmF16)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// ampc_gemm of square f32 results from operands of one dtype (range(1)):
/// what the CPU's GEMM engine does with f32, bf16 and f16 operands
/// (bench/runtime/gemm_engines.py runs it under each engine setting).
void BM_CpuGemm(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  int64_t n = state.range(0);
  ampc_dtype dt = static_cast<ampc_dtype>(state.range(1));
  void *a = deviceRandom(ctx, dt, n * n, 1);
  void *b = deviceRandom(ctx, dt, n * n, 2);
  void *c = nullptr;
  ampc_malloc(ctx, n * n * 4, &c);
  for (auto _ : state)
    ampc_gemm(ctx, c, AMPC_F32, a, dt, b, dt, nullptr, AMPC_F32, 1, n, n, n, 0,
              0, n, n, n, 0, 0, 0, 1.0f, 0.0f, AMPC_EPILOGUE_NONE);
  gemmCounters(state, n);
  char engine[512];
  ampc_context_engine(ctx, engine, sizeof engine);
  state.SetLabel(engine);
  ampc_free(ctx, a);
  ampc_free(ctx, b);
  ampc_free(ctx, c);
}
BENCHMARK(BM_CpuGemm)
    ->ArgsProduct({{64, 128, 256, 512, 1024},
                   {AMPC_F32, AMPC_BF16, AMPC_F16}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

/// ampc_gemm of the layouts a transformer's training step asks for, f32
/// C = op(A) * op(B) with operands of range(6)'s dtype: m, n, k =
/// range(0..2); range(3) and range(4) transpose A and B (the backward's
/// X^T * dY and dY * W^T); range(5) > 1 makes A's and B's rows that many
/// times longer than the matrix (per-head slices of a [tokens, heads x
/// head_dim] activation, as attention reads them).
void BM_CpuGemmLayout(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  bool ta = state.range(3) != 0, tb = state.range(4) != 0;
  int64_t spread = state.range(5);
  ampc_dtype dt = static_cast<ampc_dtype>(state.range(6));
  int64_t lda = (ta ? m : k) * spread, ldb = (tb ? k : n) * spread;
  void *a = deviceRandom(ctx, dt, (ta ? k : m) * lda, 1);
  void *b = deviceRandom(ctx, dt, (tb ? n : k) * ldb, 2);
  void *c = nullptr;
  ampc_malloc(ctx, m * n * 4, &c);
  for (auto _ : state)
    ampc_gemm(ctx, c, AMPC_F32, a, dt, b, dt, nullptr, AMPC_F32, 1, m, n, k,
              ta, tb, lda, ldb, n, 0, 0, 0, 1.0f, 0.0f, AMPC_EPILOGUE_NONE);
  state.counters["FLOP/s"] = benchmark::Counter(
      2.0 * m * n * k * state.iterations(), benchmark::Counter::kIsRate);
  char engine[512];
  ampc_context_engine(ctx, engine, sizeof engine);
  state.SetLabel(std::string(dtypeLabel(dt)) + " " + engine);
  ampc_free(ctx, a);
  ampc_free(ctx, b);
  ampc_free(ctx, c);
}
BENCHMARK(BM_CpuGemmLayout)
    ->ArgNames({"m", "n", "k", "tA", "tB", "spread", "dt"})
    // A transformer layer's products, forward and backward (tokens 512,
    // width 256, 1024 hidden): X W, dY W^T, X^T dY.
    ->Args({512, 1024, 256, 0, 0, 1, AMPC_BF16})
    ->Args({512, 256, 1024, 0, 1, 1, AMPC_BF16})
    ->Args({256, 1024, 512, 1, 0, 1, AMPC_BF16})
    ->Args({1024, 256, 512, 1, 0, 1, AMPC_BF16})
    // Attention per head (128 tokens, head_dim 64 of a width of 256):
    // Q K^T, P V, and P^T dO.
    ->Args({128, 128, 64, 0, 1, 4, AMPC_BF16})
    ->Args({128, 64, 128, 0, 0, 1, AMPC_BF16})
    ->Args({128, 64, 128, 1, 0, 1, AMPC_BF16})
    ->Args({512, 1024, 256, 0, 0, 1, AMPC_F32})
    ->Args({256, 1024, 512, 1, 0, 1, AMPC_F32})
    ->Args({128, 128, 64, 0, 1, 4, AMPC_F32})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

/// Times C = op(A) B, m x n x k = range(0..2) (A transposed with `ta`; A
/// and B of dtype `dt`, random, rows as long as the matrices; C f32) with
/// the runtime's setting `knob` on (its default) or off; the label names
/// the setting (`onName` / `offName`), the dtype and the implementations
/// the product ran on.
void timeGemmWithKnob(benchmark::State &state, bool ta, ampc_dtype dt,
                      const char *knob, bool on, const char *onName,
                      const char *offName) {
  ampc_context ctx = cpuContext();
  int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  setKnob(knob, on);
  void *a = deviceRandom(ctx, dt, m * k, 1);
  void *b = deviceRandom(ctx, dt, k * n, 2);
  void *c = nullptr;
  ampc_malloc(ctx, m * n * 4, &c);
  ampc_context_take_engines(ctx, nullptr, 0); // the earlier benchmarks'
  for (auto _ : state)
    ampc_gemm(ctx, c, AMPC_F32, a, dt, b, dt, nullptr, AMPC_F32, 1, m, n, k,
              ta, false, ta ? m : k, n, n, 0, 0, 0, 1.0f, 0.0f,
              AMPC_EPILOGUE_NONE);
  unsetenv(knob);
  state.counters["FLOP/s"] = benchmark::Counter(
      2.0 * m * n * k * state.iterations(), benchmark::Counter::kIsRate);
  char engine[512];
  ampc_context_take_engines(ctx, engine, sizeof engine);
  state.SetLabel(std::string(on ? onName : offName) + " " + dtypeLabel(dt) +
                 " " + engine);
  for (void *p : {a, b, c})
    ampc_free(ctx, p);
}

/// f32 C = op(A) * B with f32 operands whose rows are as long as the
/// matrices (m, n, k = range(0..2), range(3) transposes A): with range(4)
/// = 0 under AMPC_CPU_GEMM_PAD=off (operands read where they are), 1 with
/// the default padded copies of operands read along k across rows a
/// multiple of 2 KiB apart (cpu_gemm_tiles.h, conflictingOperands;
/// docs/runtime.md). One
/// thread: the products of a 256-wide layer with a 1024-wide MLP over 1024
/// tokens, forward and backward.
void BM_CpuGemmPadded(benchmark::State &state) {
  bool ta = state.range(3) != 0, pad = state.range(4) != 0;
  timeGemmWithKnob(state, ta, AMPC_F32, "AMPC_CPU_GEMM_PAD", pad, "padded",
                   "as is");
}
BENCHMARK(BM_CpuGemmPadded)
    ->ArgNames({"m", "n", "k", "tA", "pad"})
    ->ArgsProduct({{1024}, {256}, {1024}, {1}, {0, 1}}) // Xᵀ dY, 256 -> 1024
    ->ArgsProduct({{256}, {1024}, {1024}, {1}, {0, 1}}) // Xᵀ dY, 1024 -> 256
    ->ArgsProduct({{1024}, {256}, {1024}, {0}, {0, 1}}) // X W, 1024 -> 256
    ->ArgsProduct({{1024}, {1024}, {256}, {0}, {0, 1}}) // dY W, 1024 -> 256
    ->ArgsProduct({{512}, {512}, {512}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

/// C = Aᵀ B, the weight gradient Xᵀ dY of a narrow layer over many tokens
/// (m x n x k = range(0..2), A of range(4)'s dtype, C f32): its C is one
/// tile, so with range(3) = 0 (AMPC_CPU_GEMM_SPLIT=off) one thread computes
/// it; with 1 (the default) its k is cut into blocks computed as a batch on
/// the pool and summed (cpu_gemm_tiles.h, kSplitParts). Run it with
/// AMPC_NUM_THREADS=1 and 2: the shapes of bench/models' MobileViT
/// (8192 tokens, width 64, qkv 192, MLP 128).
void BM_CpuGemmSplit(benchmark::State &state) {
  bool split = state.range(3) != 0;
  timeGemmWithKnob(state, true, static_cast<ampc_dtype>(state.range(4)),
                   "AMPC_CPU_GEMM_SPLIT", split, "split", "whole");
}
BENCHMARK(BM_CpuGemmSplit)
    ->ArgNames({"m", "n", "k", "split", "dt"})
    ->ArgsProduct({{64}, {192}, {8192}, {0, 1}, {AMPC_F32, AMPC_BF16}})
    ->ArgsProduct({{64}, {64, 128}, {8192}, {0, 1}, {AMPC_F32}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

/// One training step's three passes of a 3x3, padding-1 convolution over a
/// batch of 32 images (channels and size from range(0): the stages of the
/// ResNet in bench/models, 16 x 32^2, 32 x 16^2, 64 x 8^2), x, w and dy of
/// range(1)'s dtype, y, dx and dw f32: the forward, then dx and dw.
/// bench/runtime/conv_engines.py runs it with the convolutions on oneDNN
/// and on the backend's own direct kernels.
void BM_CpuConvStep(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  int64_t c = state.range(0), hw = 512 / c, n = 32;
  ampc_dtype dt = static_cast<ampc_dtype>(state.range(1));
  int64_t xs[4] = {n, c, hw, hw}, ws[4] = {c, c, 3, 3};
  void *x = deviceRandom(ctx, dt, n * c * hw * hw, 1);
  void *w = deviceRandom(ctx, dt, c * c * 9, 2);
  void *dy = deviceRandom(ctx, dt, n * c * hw * hw, 3);
  void *y = nullptr, *dx = nullptr, *dw = nullptr;
  ampc_malloc(ctx, n * c * hw * hw * 4, &y);
  ampc_malloc(ctx, n * c * hw * hw * 4, &dx);
  ampc_malloc(ctx, c * c * 9 * 4, &dw);
  for (auto _ : state) {
    ampc_conv2d_fwd(ctx, y, AMPC_F32, xs, 4, x, dt, xs, 4, w, dt, ws, 4,
                    nullptr, AMPC_F32, nullptr, 0, 1, 1, 1, 1, 1, 1, 1);
    ampc_conv2d_bwd(ctx, dx, AMPC_F32, xs, 4, dw, AMPC_F32, ws, 4, nullptr,
                    AMPC_F32, nullptr, 0, dy, dt, xs, 4, x, dt, xs, 4, w, dt,
                    ws, 4, 1, 1, 1, 1, 1, 1, 1);
  }
  state.counters["FLOP/s"] = benchmark::Counter(
      3.0 * 2.0 * n * c * c * 9 * hw * hw * state.iterations(),
      benchmark::Counter::kIsRate);
  char engine[512];
  ampc_context_engine(ctx, engine, sizeof engine);
  state.SetLabel(engine);
  for (void *p : {x, w, dy, y, dx, dw})
    ampc_free(ctx, p);
}
BENCHMARK(BM_CpuConvStep)
    ->ArgsProduct({{16, 32, 64}, {AMPC_F32, AMPC_BF16}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// relu forward and backward and add, f32 against bf16 (and f16), at an
/// L2-sized and an L3-sized tensor: what a 16-bit elementwise op costs
/// against its f32 form on this processor's units.
void BM_CpuElementwise(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  int64_t n = state.range(0);
  ampc_dtype dt = static_cast<ampc_dtype>(state.range(1));
  int op = static_cast<int>(state.range(2));
  size_t es = 0;
  ampc_dtype_size(dt, &es);
  void *a = deviceRandom(ctx, dt, n, 1), *b = deviceRandom(ctx, dt, n, 2);
  void *y = nullptr;
  ampc_malloc(ctx, n * es, &y);
  int64_t shape[1] = {n};
  int64_t streams = 2;
  for (auto _ : state) {
    if (op == 0)
      ampc_relu_fwd(ctx, y, dt, shape, 1, a, dt, shape, 1);
    else if (op == 1)
      ampc_relu_bwd(ctx, y, dt, shape, 1, b, dt, shape, 1, a, dt, shape, 1);
    else
      ampc_add_fwd(ctx, y, dt, shape, 1, a, dt, shape, 1, b, dt, shape, 1);
  }
  streams = op == 0 ? 2 : 3;
  state.SetBytesProcessed(state.iterations() * streams * n *
                          static_cast<int64_t>(es));
  state.SetLabel(op == 0 ? "relu" : op == 1 ? "relu_bwd" : "add");
  ampc_free(ctx, a);
  ampc_free(ctx, b);
  ampc_free(ctx, y);
}
BENCHMARK(BM_CpuElementwise)
    ->ArgsProduct({{1 << 18, 1 << 21}, {AMPC_F32, AMPC_BF16, AMPC_F16}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// GELU over n elements of range(2)'s dtype: the tanh approximation
// (tanhf's vector code) or exact (erff's), forward or (range(3)) backward.
// On bf16 and f16 runs of 2^15 elements or more the CPU backend looks the
// results up in tables of the op over all 65536 inputs (docs/runtime.md).
void BM_CpuGelu(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  int64_t n = state.range(0);
  auto mode = static_cast<ampc_gelu_approximate>(state.range(1));
  ampc_dtype dt = static_cast<ampc_dtype>(state.range(2));
  bool backward = state.range(3) != 0;
  size_t es = 0;
  ampc_dtype_size(dt, &es);
  void *x = deviceRandom(ctx, dt, n, 1), *dy = deviceRandom(ctx, dt, n, 2);
  void *y = nullptr;
  ampc_malloc(ctx, n * es, &y);
  int64_t shape[1] = {n};
  for (auto _ : state)
    if (backward)
      ampc_gelu_bwd(ctx, y, dt, shape, 1, dy, dt, shape, 1, x, dt, shape, 1,
                    mode);
    else
      ampc_gelu_fwd(ctx, y, dt, shape, 1, x, dt, shape, 1, mode);
  state.SetBytesProcessed(state.iterations() * (backward ? 3 : 2) * n *
                          static_cast<int64_t>(es));
  state.SetLabel(std::string(mode == AMPC_GELU_TANH ? "tanh " : "erf ") +
                 dtypeLabel(dt) + (backward ? " backward" : " forward"));
  ampc_free(ctx, x);
  ampc_free(ctx, dy);
  ampc_free(ctx, y);
}
BENCHMARK(BM_CpuGelu)
    ->ArgsProduct({{1 << 22},
                   {AMPC_GELU_TANH, AMPC_GELU_NONE},
                   {AMPC_F16, AMPC_BF16, AMPC_F32},
                   {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_CpuSoftmax(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  int64_t rows = state.range(0), cols = state.range(1);
  bool backward = state.range(2) != 0;
  void *x = deviceRandom(ctx, AMPC_F32, rows * cols, 1), *y = nullptr;
  void *dy = deviceRandom(ctx, AMPC_F32, rows * cols, 2), *dx = nullptr;
  ampc_malloc(ctx, rows * cols * 4, &y);
  ampc_malloc(ctx, rows * cols * 4, &dx);
  int64_t shape[2] = {rows, cols};
  ampc_softmax_fwd(ctx, y, AMPC_F32, shape, 2, x, AMPC_F32, shape, 2, -1);
  for (auto _ : state)
    if (backward)
      ampc_softmax_bwd(ctx, dx, AMPC_F32, shape, 2, dy, AMPC_F32, shape, 2, y,
                       AMPC_F32, shape, 2, -1);
    else
      ampc_softmax_fwd(ctx, y, AMPC_F32, shape, 2, x, AMPC_F32, shape, 2, -1);
  state.SetBytesProcessed(state.iterations() * (backward ? 3 : 2) * rows *
                          cols * 4);
  state.SetLabel(backward ? "backward" : "forward");
  for (void *p : {x, y, dy, dx})
    ampc_free(ctx, p);
}
// Rows of 1024 and 128, and MobileViT's attention (32 images x 2 heads x 256
// queries, over 256 keys).
BENCHMARK(BM_CpuSoftmax)
    ->ArgsProduct({{4096}, {1024, 128}, {0, 1}})
    ->ArgsProduct({{16384}, {256}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// ampc_cross_entropy_fwd, then ampc_cross_entropy_bwd, over f32 logits
// [1024, classes] (the Llama block's language-model head has 512).
void BM_CpuCrossEntropy(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  const int64_t rows = 1024, classes = state.range(0);
  void *logits = deviceRandom(ctx, AMPC_F32, rows * classes, 1);
  void *dlogits = nullptr, *loss = nullptr, *dloss = nullptr, *labels = nullptr;
  ampc_malloc(ctx, rows * classes * 4, &dlogits);
  ampc_malloc(ctx, 4, &loss);
  ampc_malloc(ctx, 4, &dloss);
  ampc_malloc(ctx, rows * 4, &labels);
  std::vector<int32_t> ids(rows);
  for (int64_t r = 0; r < rows; ++r)
    ids[r] = static_cast<int32_t>(r * 7 % classes);
  float one = 1.0f;
  ampc_memcpy(ctx, labels, ids.data(), rows * 4, AMPC_MEMCPY_HOST_TO_DEVICE);
  ampc_memcpy(ctx, dloss, &one, 4, AMPC_MEMCPY_HOST_TO_DEVICE);
  int64_t shape[2] = {rows, classes}, labelShape[1] = {rows};
  for (auto _ : state) {
    ampc_status fwd = ampc_cross_entropy_fwd(
        ctx, loss, AMPC_F32, nullptr, 0, logits, AMPC_F32, shape, 2, labels,
        AMPC_I32, labelShape, 1, -1);
    ampc_status bwd = ampc_cross_entropy_bwd(
        ctx, dlogits, AMPC_F32, shape, 2, dloss, AMPC_F32, nullptr, 0, logits,
        AMPC_F32, shape, 2, labels, AMPC_I32, labelShape, 1);
    if (fwd != AMPC_OK || bwd != AMPC_OK) {
      state.SkipWithError(ampc_last_error());
      break;
    }
  }
  for (void *p : {logits, dlogits, loss, dloss, labels})
    ampc_free(ctx, p);
}
BENCHMARK(BM_CpuCrossEntropy)
    ->Arg(512)
    ->Arg(8192)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// ampc_sum_fwd over 2^21 elements in one dtype: per channel (L = 0: x
// [32, 64, 32, 32] over dims 0, 2 and 3, a convolution's bias gradient, 64
// outputs of 32 rows of 1024), over the last dim of x [32, 64, 1024 / L,
// L] (rows of L), or over the first dim of x [2048, 1024] (L = -1: column
// sums, a linear layer's bias gradient).
void BM_CpuReduce(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  auto dt = static_cast<ampc_dtype>(state.range(0));
  int64_t len = state.range(1);
  size_t es = 0;
  ampc_dtype_size(dt, &es);
  int64_t n = 32 * 64 * 32 * 32;
  void *x = deviceRandom(ctx, dt, n, 1), *y = nullptr;
  ampc_malloc(ctx, n * 4, &y);
  int64_t chanShape[4] = {32, 64, 32, 32}, chanDims[3] = {0, 2, 3};
  int64_t chanY[1] = {64};
  int64_t rows = len ? 1024 / len : 1;
  int64_t rowShape[4] = {32, 64, rows, len}, lastDim[1] = {3};
  int64_t rowY[3] = {32, 64, rows};
  int64_t colShape[2] = {2048, 1024}, firstDim[1] = {0}, colY[1] = {1024};
  for (auto _ : state) {
    if (len < 0)
      ampc_sum_fwd(ctx, y, AMPC_F32, colY, 1, x, dt, colShape, 2, firstDim, 1,
                   0);
    else if (len)
      ampc_sum_fwd(ctx, y, AMPC_F32, rowY, 3, x, dt, rowShape, 4, lastDim, 1,
                   0);
    else
      ampc_sum_fwd(ctx, y, AMPC_F32, chanY, 1, x, dt, chanShape, 4, chanDims, 3,
                   0);
  }
  state.SetBytesProcessed(state.iterations() * n * static_cast<int64_t>(es));
  state.SetLabel(len < 0 ? "columns" : len ? "last dim" : "per channel");
  ampc_free(ctx, x);
  ampc_free(ctx, y);
}
BENCHMARK(BM_CpuReduce)
    ->ArgsProduct({{AMPC_F32, AMPC_BF16}, {0, 32, 128, -1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// ampc_clip_grad_norm's sum of squares over `count` gradients of `numel`
// elements each in one dtype, below max_norm (so nothing is scaled): 64
// gradients of 2^12 (a small model's many small tensors) or 8 of 2^20.
void BM_CpuClipGradNorm(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  auto dt = static_cast<ampc_dtype>(state.range(0));
  int64_t count = state.range(1), numel = state.range(2);
  size_t es = 0;
  ampc_dtype_size(dt, &es);
  std::vector<void *> grads;
  for (int64_t t = 0; t < count; ++t)
    grads.push_back(deviceRandom(ctx, dt, numel, 10 + t));
  std::vector<ampc_dtype> dts(count, dt);
  std::vector<int64_t> numels(count, numel);
  float norm = 0;
  for (auto _ : state)
    ampc_clip_grad_norm(ctx, &norm, grads.data(), dts.data(), numels.data(),
                        static_cast<int32_t>(count), 1e30, nullptr, AMPC_F32);
  state.SetBytesProcessed(state.iterations() * count * numel *
                          static_cast<int64_t>(es));
  state.SetLabel(dtypeLabel(dt));
  for (void *p : grads)
    ampc_free(ctx, p);
}
BENCHMARK(BM_CpuClipGradNorm)
    ->ArgsProduct({{AMPC_F32, AMPC_BF16}, {64}, {4096}})
    ->ArgsProduct({{AMPC_F32, AMPC_BF16}, {8}, {1 << 20}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// ampc_gemm in f32, 1024 x 3072 x 768 with a bias, without an epilogue
// (0) or with GELU's erf (2) or tanh (3) form: the epilogue's cost is the
// difference. alpha 1/16 keeps the products near a layer's pre-activations
// (standard deviation about 0.6, not 9).
void BM_CpuGemmEpilogue(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  auto epi = static_cast<ampc_epilogue>(state.range(0));
  const int64_t m = 1024, n = 3072, k = 768;
  void *a = deviceRandom(ctx, AMPC_F32, m * k, 1);
  void *b = deviceRandom(ctx, AMPC_F32, k * n, 2);
  void *bias = deviceRandom(ctx, AMPC_F32, n, 3), *c = nullptr;
  ampc_malloc(ctx, m * n * 4, &c);
  for (auto _ : state)
    ampc_gemm(ctx, c, AMPC_F32, a, AMPC_F32, b, AMPC_F32, bias, AMPC_F32, 1, m,
              n, k, 0, 0, k, n, n, 0, 0, 0, 0.0625f, 0.0f, epi);
  state.SetLabel(epi == AMPC_EPILOGUE_NONE   ? "none"
                 : epi == AMPC_EPILOGUE_GELU ? "gelu"
                                             : "gelu tanh");
  for (void *p : {a, b, bias, c})
    ampc_free(ctx, p);
}
BENCHMARK(BM_CpuGemmEpilogue)
    ->Arg(AMPC_EPILOGUE_NONE)
    ->Arg(AMPC_EPILOGUE_GELU)
    ->Arg(AMPC_EPILOGUE_GELU_TANH)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// layer_norm forward and backward (dx, dw, db) over rows x cols in one
// dtype, w and b in f32, as the encoder's post-norm residuals run them.
void BM_CpuLayerNorm(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  int64_t rows = state.range(0), cols = state.range(1);
  auto dt = static_cast<ampc_dtype>(state.range(2));
  size_t es = 0;
  ampc_dtype_size(dt, &es);
  void *x = deviceRandom(ctx, dt, rows * cols, 1);
  void *dy = deviceRandom(ctx, dt, rows * cols, 2);
  void *w = deviceRandom(ctx, AMPC_F32, cols, 3);
  void *b = deviceRandom(ctx, AMPC_F32, cols, 4);
  void *y = nullptr, *dx = nullptr, *dw = nullptr, *db = nullptr;
  ampc_malloc(ctx, rows * cols * es, &y);
  ampc_malloc(ctx, rows * cols * es, &dx);
  ampc_malloc(ctx, cols * 4, &dw);
  ampc_malloc(ctx, cols * 4, &db);
  int64_t shape[2] = {rows, cols}, wshape[1] = {cols};
  for (auto _ : state) {
    ampc_layer_norm_fwd(ctx, y, dt, shape, 2, x, dt, shape, 2, w, AMPC_F32,
                        wshape, 1, b, AMPC_F32, wshape, 1, 1e-5);
    ampc_layer_norm_bwd(ctx, dx, dt, shape, 2, dw, AMPC_F32, wshape, 1, db,
                        AMPC_F32, wshape, 1, dy, dt, shape, 2, x, dt, shape, 2,
                        w, AMPC_F32, wshape, 1, 1e-5);
  }
  state.SetLabel(dtypeLabel(dt));
  for (void *p : {x, dy, w, b, y, dx, dw, db})
    ampc_free(ctx, p);
}
BENCHMARK(BM_CpuLayerNorm)
    ->ArgsProduct({{1024}, {256, 4096}, {AMPC_F32, AMPC_BF16}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// One SGD step with momentum and weight decay over one parameter, param and
// gradient in one dtype (f32: O0/O1; bf16/f16: O3's low params), the
// momentum in f32: what the optimizer costs per element in each.
void BM_CpuSgd(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  int64_t n = state.range(0);
  auto dt = static_cast<ampc_dtype>(state.range(1));
  void *p = deviceRandom(ctx, dt, n, 1), *g = deviceRandom(ctx, dt, n, 2);
  void *m = deviceRandom(ctx, AMPC_F32, n, 3);
  ampc_dtype pdt[1] = {dt}, gdt[1] = {dt};
  int64_t numel[1] = {n};
  for (auto _ : state)
    ampc_sgd_update(ctx, &p, pdt, &g, gdt, &m, numel, 1, 1e-3, 0.9, 1e-4, 0,
                    0.0, nullptr, AMPC_F32, nullptr);
  state.SetLabel(dtypeLabel(dt));
  for (void *b : {p, g, m})
    ampc_free(ctx, b);
}
BENCHMARK(BM_CpuSgd)
    ->ArgsProduct({{1 << 18, 1 << 22}, {AMPC_F32, AMPC_BF16, AMPC_F16}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// One AdamW step over one parameter, as BM_CpuSgd: param and gradient in
// one dtype, both moments in f32.
void BM_CpuAdamw(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  int64_t n = state.range(0);
  auto dt = static_cast<ampc_dtype>(state.range(1));
  void *p = deviceRandom(ctx, dt, n, 1), *g = deviceRandom(ctx, dt, n, 2);
  void *m = deviceRandom(ctx, AMPC_F32, n, 3), *v = nullptr;
  ampc_malloc(ctx, n * sizeof(float), &v);
  ampc_init_uniform(ctx, v, AMPC_F32, n, 4, 0, 0, 1); // a square's average
  void *step = nullptr;
  ampc_malloc(ctx, sizeof(int32_t), &step);
  *static_cast<int32_t *>(step) = 0; // the CPU backend's memory is the host's
  ampc_dtype pdt[1] = {dt}, gdt[1] = {dt};
  int64_t numel[1] = {n};
  for (auto _ : state)
    ampc_adamw_update(ctx, &p, pdt, &g, gdt, &m, &v, step, numel, 1, 1e-3,
                      0.9, 0.999, 1e-8, 0.01, 0.0, nullptr, AMPC_F32, nullptr);
  state.SetLabel(dtypeLabel(dt));
  for (void *b : {p, g, m, v, step})
    ampc_free(ctx, b);
}
BENCHMARK(BM_CpuAdamw)
    ->ArgsProduct({{1 << 18, 1 << 22}, {AMPC_F32, AMPC_BF16}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The overflow check of a step's gradients at O3's static scale of 1: a
// check only, nothing written.
void BM_CpuCheckFinite(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  int64_t n = state.range(0);
  auto dt = static_cast<ampc_dtype>(state.range(1));
  void *g = deviceRandom(ctx, dt, n, 1), *flag = nullptr, *s = nullptr;
  ampc_malloc(ctx, 4, &flag);
  ampc_malloc(ctx, 4, &s);
  ampc_fill(ctx, s, AMPC_F32, 1, 1.0);
  ampc_dtype gdt[1] = {dt};
  int64_t numel[1] = {n};
  for (auto _ : state)
    ampc_check_finite_unscale(ctx, flag, AMPC_F32, &g, gdt, numel, 1, s);
  state.SetLabel(dtypeLabel(dt));
  for (void *b : {g, flag, s})
    ampc_free(ctx, b);
}
BENCHMARK(BM_CpuCheckFinite)
    ->ArgsProduct({{1 << 18}, {AMPC_F32, AMPC_BF16, AMPC_F16}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The check and unscale at a dynamic scale, writing every value: two calls
// per iteration, at scales 2^16 and 2^-16, so the values come back to
// themselves exactly and stay normal.
void BM_CpuUnscale(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  int64_t n = state.range(0);
  auto dt = static_cast<ampc_dtype>(state.range(1));
  void *g = deviceRandom(ctx, dt, n, 1), *flag = nullptr, *up = nullptr,
       *down = nullptr;
  ampc_malloc(ctx, 4, &flag);
  ampc_malloc(ctx, 4, &up);
  ampc_malloc(ctx, 4, &down);
  ampc_fill(ctx, up, AMPC_F32, 1, 65536.0);
  ampc_fill(ctx, down, AMPC_F32, 1, 1.0 / 65536.0);
  ampc_dtype gdt[1] = {dt};
  int64_t numel[1] = {n};
  for (auto _ : state) {
    ampc_check_finite_unscale(ctx, flag, AMPC_F32, &g, gdt, numel, 1, up);
    ampc_check_finite_unscale(ctx, flag, AMPC_F32, &g, gdt, numel, 1, down);
  }
  state.SetLabel(dtypeLabel(dt));
  for (void *b : {g, flag, up, down})
    ampc_free(ctx, b);
}
BENCHMARK(BM_CpuUnscale)
    ->ArgsProduct({{1 << 18}, {AMPC_F32, AMPC_BF16, AMPC_F16}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// A pooled kernel (an f32 add of 2^18 elements, 8 items) after the calling
// thread spent range(0) microseconds either idle (range(1) = 0: no runtime
// call) or running one-item kernels back to back (range(1) = 1: adds of
// 4096 elements): what waking the pool's sleeping workers costs (they
// sleep about 50 us after the last pooled kernel, whatever ran since; see
// bench/README.md, "twelfth run"). Only the pooled add is timed. Run it
// with AMPC_NUM_THREADS=2 (or more).
void BM_CpuPoolAfterGap(benchmark::State &state) {
  ampc_context ctx = cpuContext();
  constexpr int64_t n = 1 << 18, small = 4096;
  void *a = deviceRandom(ctx, AMPC_F32, n, 1);
  void *b = deviceRandom(ctx, AMPC_F32, n, 2);
  void *y = nullptr;
  ampc_malloc(ctx, n * 4, &y);
  int64_t shape[1] = {n}, smallShape[1] = {small};
  auto gap = std::chrono::microseconds(state.range(0));
  bool kernels = state.range(1) != 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < gap)
      if (kernels)
        ampc_add_fwd(ctx, y, AMPC_F32, smallShape, 1, a, AMPC_F32, smallShape,
                     1, b, AMPC_F32, smallShape, 1);
    auto s = std::chrono::steady_clock::now();
    ampc_add_fwd(ctx, y, AMPC_F32, shape, 1, a, AMPC_F32, shape, 1, b,
                 AMPC_F32, shape, 1);
    state.SetIterationTime(std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - s)
                               .count());
  }
  state.SetLabel(kernels ? "one-item kernels" : "idle");
  for (void *p : {a, b, y})
    ampc_free(ctx, p);
}
BENCHMARK(BM_CpuPoolAfterGap)
    ->ArgsProduct({{10, 100, 1000}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_CudaGemmF16(benchmark::State &state) {
  ampc_context ctx = cudaContext();
  if (!ctx) {
    state.SkipWithError("no usable CUDA device");
    return;
  }
  int64_t n = state.range(0);
  void *a = deviceRandom(ctx, AMPC_F16, n * n, 1);
  void *b = deviceRandom(ctx, AMPC_F16, n * n, 2);
  void *c = nullptr;
  ampc_malloc(ctx, n * n * 2, &c);
  auto run = [&] {
    return ampc_gemm(ctx, c, AMPC_F16, a, AMPC_F16, b, AMPC_F16, nullptr,
                     AMPC_F16, 1, n, n, n, 0, 0, n, n, n, 0, 0, 0, 1.0f, 0.0f,
                     AMPC_EPILOGUE_NONE);
  };
  run(); // heuristic + warm-up
  ampc_synchronize(ctx);
  for (auto _ : state) {
    for (int i = 0; i < 10; ++i)
      run();
    ampc_synchronize(ctx);
  }
  state.counters["FLOP/s"] = benchmark::Counter(
      2.0 * n * n * n * 10 * state.iterations(), benchmark::Counter::kIsRate);
  ampc_free(ctx, a);
  ampc_free(ctx, b);
  ampc_free(ctx, c);
}
BENCHMARK(BM_CudaGemmF16)
    ->Arg(8192)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_CudaUnscale(benchmark::State &state) {
  ampc_context ctx = cudaContext();
  if (!ctx) {
    state.SkipWithError("no usable CUDA device");
    return;
  }
  const int count = 64;
  int64_t each = state.range(0) / count;
  std::vector<void *> grads(count);
  std::vector<ampc_dtype> dts(count, AMPC_F32);
  std::vector<int64_t> numels(count, each);
  for (int i = 0; i < count; ++i)
    grads[i] = deviceRandom(ctx, AMPC_F32, each, i);
  void *scale = nullptr, *flag = nullptr;
  ampc_malloc(ctx, 4, &scale);
  ampc_malloc(ctx, 4, &flag);
  ampc_fill(ctx, scale, AMPC_F32, 1, 1.0); // keeps values stable
  for (auto _ : state) {
    ampc_check_finite_unscale(ctx, flag, AMPC_F32, grads.data(), dts.data(),
                              numels.data(), count, scale);
    ampc_synchronize(ctx);
  }
  // scale == 1 skips the store, so only reads count.
  state.SetBytesProcessed(state.iterations() * count * each * 4);
  for (void *g : grads)
    ampc_free(ctx, g);
  ampc_free(ctx, scale);
  ampc_free(ctx, flag);
}
BENCHMARK(BM_CudaUnscale)
    ->Arg(int64_t(1) << 28)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// Console output plus the f16-GEMM / sgemm throughput ratio at the end.
class RatioReporter : public benchmark::ConsoleReporter {
public:
  void ReportRuns(const std::vector<Run> &runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run &r : runs)
      if (!r.error_occurred && r.iterations > 0)
        seconds[r.benchmark_name()] = r.GetAdjustedRealTime();
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    auto f16 = seconds.find("BM_CpuGemmF16/1024/real_time");
    auto ref = seconds.find("BM_CpuSgemmOpenBLAS/1024/real_time");
    if (f16 != seconds.end() && ref != seconds.end())
      std::printf("cpu_gemm_f16_vs_sgemm_ratio_1024 %.3f (target >= 0.8)\n",
                  ref->second / f16->second);
  }

private:
  std::map<std::string, double> seconds;
};

} // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
