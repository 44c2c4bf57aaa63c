//===- test_cuda_fast.cpp - The CUDA backend's fast paths against the CPU -===//
//
// The CUDA backend's fast paths (collapsed and 32-bit walks, dtype-specialised
// contiguous kernels, two-stage column sums and full reductions, rows held in
// registers, embedding backward by sorted ids, multi-tensor updates; in the
// family files runtime/cuda/cuda_*.cu) at GPT-2-small sizes (8192
// tokens, width 768, a 50257-word vocabulary) and at odd sizes that take the
// tails and fallbacks: misaligned pointers (no vector loads), rows wider than
// a warp's registers, more tensors than one multi-tensor launch holds, grid-
// stride loops that go round more than once. Bit-identical where both
// backends evaluate the same f32 formula in the same order, else the stated
// tolerance. Every test skips with a message when no GPU is usable.
//
//===----------------------------------------------------------------------===//
#include "cuda_test_util.h"

#include <cstdlib>
#include <functional>
#include <thread>

using namespace ampc_test;

namespace {

class CudaFast : public CudaVsCpu {
protected:
  const char *skipped() const override { return "CUDA fast-path comparison"; }
};

// ------------------------------------------------------------ elementwise --

TEST_F(CudaFast, ContiguousElementwiseIsBitIdentical) {
  // add / sub / mul round one f32 operation: bit-identical in every dtype,
  // vectorised (aligned) and scalar (shifted by one element) alike.
  using BFwd = decltype(&ampc_add_fwd);
  BFwd ops[] = {ampc_add_fwd, ampc_sub_fwd, ampc_mul_fwd};
  for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16})
    for (int64_t n : {int64_t(7), int64_t(4099), int64_t(8192) * 768 + 3})
      for (BFwd f : ops)
        for (int shift : {0, 1}) {
          Shape s = {n - shift};
          std::vector<Tensor> ts = {randomTensor({n}, dt, -4, 4),
                                    randomTensor({n}, dt, -4, 4),
                                    Tensor({n}, dt)};
          int eb = static_cast<int>(elemSize(dt)) * shift;
          compare(
              ts, {2},
              [&](ampc_context c, const PtrFn &p) {
                return f(c, shifted(p, 2, eb), dt, s.data(), 1,
                         shifted(p, 0, eb), dt, s.data(), 1, shifted(p, 1, eb),
                         dt, s.data(), 1);
              },
              0,
              "binary n=" + std::to_string(n) + " shift " +
                  std::to_string(shift));
        }
}

TEST_F(CudaFast, UnaryManyGridStrideRounds) {
  // More elements than one grid covers (the grid is capped at 262140 blocks
  // of 256 threads, four elements a thread on the vector path): every
  // element must still be visited exactly once.
  int64_t n = int64_t(262140) * 256 * 4 + 12345;
  std::vector<Tensor> ts = {randomTensor({n}, AMPC_F16, -3, 3),
                            Tensor({n}, AMPC_F16)};
  compare(
      ts, {1},
      [&](ampc_context c, const PtrFn &p) {
        return ampc_relu_fwd(c, A(1, ts[1]), A(0, ts[0]));
      },
      0, "relu over 268M elements");
}

TEST_F(CudaFast, CollapsedAndBroadcastWalks) {
  // [64, 128, 768] + [64, 1, 768] (bias-like broadcast after collapse) and
  // + [768]; their backward sums the broadcast operand (column sums).
  for (ampc_dtype dt : {AMPC_F32, AMPC_F16}) {
    std::vector<Tensor> ts = {randomTensor({64, 128, 768}, dt),
                              randomTensor({64, 1, 768}, dt),
                              randomTensor({768}, AMPC_F32),
                              Tensor({64, 128, 768}, AMPC_F32),
                              Tensor({64, 128, 768}, dt),
                              randomTensor({64, 128, 768}, AMPC_F32),
                              Tensor({64, 128, 768}, AMPC_F32),
                              Tensor({64, 1, 768}, AMPC_F32),
                              Tensor({768}, AMPC_F32)};
    compare(
        ts, {3, 4},
        [&](ampc_context c, const PtrFn &p) {
          AMPC_TRY(ampc_add_fwd(c, A(3, ts[3]), A(0, ts[0]), A(1, ts[1])));
          return ampc_mul_fwd(c, A(4, ts[4]), A(0, ts[0]), A(2, ts[2]));
        },
        0, "broadcast forward");
    compare(
        ts, {6, 7},
        [&](ampc_context c, const PtrFn &p) {
          return ampc_add_bwd(c, A(6, ts[6]), A(7, ts[7]), A(5, ts[5]),
                              A(0, ts[0]), A(1, ts[1]));
        },
        1e-5, "broadcast backward [64, 1, 768]");
    compare(
        ts, {6, 8},
        [&](ampc_context c, const PtrFn &p) {
          return ampc_add_bwd(c, A(6, ts[6]), A(8, ts[8]), A(5, ts[5]),
                              A(3, ts[3]), A(2, ts[2]));
        },
        1e-5, "broadcast backward [768] (8192 rows)");
  }
  // A transpose (no collapse possible) and casts (contiguous conversion).
  int64_t perm[3] = {0, 2, 1};
  std::vector<Tensor> tr = {randomTensor({12, 1025, 64}, AMPC_F32),
                            Tensor({12, 64, 1025}, AMPC_BF16),
                            Tensor({12, 1025, 64}, AMPC_F16),
                            Tensor({12, 1025, 64}, AMPC_F32)};
  compare(
      tr, {1, 2, 3},
      [&](ampc_context c, const PtrFn &p) {
        AMPC_TRY(ampc_transpose_fwd(c, A(1, tr[1]), A(0, tr[0]), perm, 3));
        AMPC_TRY(ampc_cast_fwd(c, A(2, tr[2]), A(0, tr[0])));
        return ampc_cast_fwd(c, A(3, tr[3]), A(2, tr[2]));
      },
      0, "transpose and casts");
}

// ------------------------------------------------------------- reductions --

TEST_F(CudaFast, ColumnAndFullReductions) {
  int64_t d0[1] = {0};
  for (Shape s : {Shape{8192, 768}, Shape{100003, 3}, Shape{65, 1}}) {
    std::vector<Tensor> ts = {randomTensor(s, AMPC_F16), Tensor({s[1]}, AMPC_F32),
                              Tensor({s[1]}, AMPC_F32)};
    compare(
        ts, {1, 2},
        [&](ampc_context c, const PtrFn &p) {
          AMPC_TRY(ampc_sum_fwd(c, A(1, ts[1]), A(0, ts[0]), d0, 1, 0));
          return ampc_mean_fwd(c, A(2, ts[2]), A(0, ts[0]), d0, 1, 0);
        },
        1e-4, "column sums " + std::to_string(s[0]) + "x" +
                  std::to_string(s[1]));
  }
  int64_t all[1] = {0};
  for (int64_t n : {int64_t(8191), int64_t(1) << 20, (int64_t(1) << 24) + 7}) {
    std::vector<Tensor> ts = {randomTensor({n}, AMPC_F32),
                              Tensor(Shape{}, AMPC_F32),
                              Tensor(Shape{}, AMPC_F32)};
    ts[0].set(n / 3, 7.5); // the max, away from the ends
    compare(
        ts, {1, 2},
        [&](ampc_context c, const PtrFn &p) {
          AMPC_TRY(ampc_sum_fwd(c, A(1, ts[1]), A(0, ts[0]), all, 1, 0));
          return ampc_max_fwd(c, A(2, ts[2]), A(0, ts[0]), all, 1, 0);
        },
        1e-4, "full reduction n=" + std::to_string(n));
  }
  // NaN propagates through the two-stage max.
  std::vector<Tensor> nanT = {randomTensor({1 << 20}, AMPC_F32),
                              Tensor(Shape{}, AMPC_F32)};
  nanT[0].set(777777, NAN);
  compare(
      nanT, {1},
      [&](ampc_context c, const PtrFn &p) {
        return ampc_max_fwd(c, A(1, nanT[1]), A(0, nanT[0]), all, 1, 0);
      },
      0, "max with NaN");
}

// ---------------------------------------------------------- normalisation --

TEST_F(CudaFast, LayerNormGPT2SizesAndWideRows) {
  // 8192 x 768 (fused forward, two-stage weight/bias gradients), 1000 x 37
  // and 3 x 1500 (wider than the registers: the three-pass path).
  for (Shape s : {Shape{8192, 768}, Shape{1000, 37}, Shape{3, 1500}})
    for (bool rms : {false, true}) {
      int64_t c = s[1];
      std::vector<Tensor> ts = {
          randomTensor(s, AMPC_BF16, -2, 2), randomTensor({c}, AMPC_F32),
          randomTensor({c}, AMPC_F32),       Tensor(s, AMPC_F32),
          randomTensor(s, AMPC_BF16),        Tensor(s, AMPC_F32),
          Tensor({c}, AMPC_F32),             Tensor({c}, AMPC_F32)};
      std::string what = std::string(rms ? "rms" : "layer") + " norm " +
                         std::to_string(s[0]) + "x" + std::to_string(c);
      compare(
          ts, {3, 5, 6, 7},
          [&](ampc_context cx, const PtrFn &p) {
            if (rms) {
              AMPC_TRY(ampc_rms_norm_fwd(cx, A(3, ts[3]), A(0, ts[0]),
                                         A(1, ts[1]), 1e-6));
              return ampc_rms_norm_bwd(cx, A(5, ts[5]), A(6, ts[6]),
                                       A(4, ts[4]), A(0, ts[0]), A(1, ts[1]),
                                       1e-6);
            }
            AMPC_TRY(ampc_layer_norm_fwd(cx, A(3, ts[3]), A(0, ts[0]),
                                         A(1, ts[1]), A(2, ts[2]), 1e-5));
            return ampc_layer_norm_bwd(cx, A(5, ts[5]), A(6, ts[6]),
                                       A(7, ts[7]), A(4, ts[4]), A(0, ts[0]),
                                       A(1, ts[1]), 1e-5);
          },
          1e-4, what);
    }
}

/// Runs `op` on the GPU over copies of `ts`; returns output `o`'s bytes.
static Tensor onDevice(ampc_context g, const std::vector<Tensor> &ts, int o,
                       const std::function<ampc_status(const PtrFn &)> &op) {
  std::vector<void *> dev(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    EXPECT_OK(ampc_malloc(g, ts[i].bytes.size(), &dev[i]));
    EXPECT_OK(ampc_memcpy(g, dev[i], ts[i].bytes.data(), ts[i].bytes.size(),
                          AMPC_MEMCPY_HOST_TO_DEVICE));
  }
  EXPECT_OK(op([&](int i) { return dev[i]; }));
  Tensor got = ts[o];
  EXPECT_OK(ampc_memcpy(g, got.bytes.data(), dev[o], got.bytes.size(),
                        AMPC_MEMCPY_DEVICE_TO_HOST));
  for (void *ptr : dev)
    ampc_free(g, ptr);
  return got;
}

/// t's [rows, cols] values as a [cols, rows] tensor.
static Tensor transposed(const Tensor &t) {
  int64_t rows = t.shape[0], cols = t.shape[1];
  Tensor r({cols, rows}, t.dtype);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      r.set(j * rows + i, t.get(i * cols + j));
  return r;
}

TEST_F(CudaFast, SoftmaxBackwardRowsInEveryDtype) {
  // The softmax kernels are instantiated per dtype (the fused rows for f32,
  // f16 and bf16). The backward of contiguous rows up to 1024 wide runs
  // from registers: against the CPU, and bit for bit against the unfused
  // kernel on the transposed problem (the same rows, `inner` apart), which
  // evaluates the same f32 formula in the same order.
  const ampc_dtype fl[] = {AMPC_F32, AMPC_F16, AMPC_BF16};
  const int64_t rows = 40;
  for (int64_t cols : {int64_t(1024), int64_t(100), int64_t(7)})
    for (ampc_dtype dxd : fl)
      for (ampc_dtype dyd : fl)
        for (ampc_dtype yd : fl)
          for (bool log : {false, true}) {
            std::string what = "cols " + std::to_string(cols) + " dx " +
                               std::to_string(dxd) + " dy " +
                               std::to_string(dyd) + " y " +
                               std::to_string(yd) + (log ? " log" : "");
            auto bwd = log ? ampc_log_softmax_bwd : ampc_softmax_bwd;
            std::vector<Tensor> ts = {
                Tensor({rows, cols}, dxd), randomTensor({rows, cols}, dyd, -2, 2),
                log ? randomTensor({rows, cols}, yd, -6, 0)
                    : randomTensor({rows, cols}, yd, 0, 1)};
            double tol = dxd == AMPC_F32 ? 1e-5 : dxd == AMPC_F16 ? 2e-3 : 1.6e-2;
            compare(
                ts, {0},
                [&](ampc_context c, const PtrFn &p) {
                  return bwd(c, A(0, ts[0]), A(1, ts[1]), A(2, ts[2]), -1);
                },
                tol, what);
            Tensor fused = onDevice(gpu, ts, 0, [&](const PtrFn &p) {
              return bwd(gpu, A(0, ts[0]), A(1, ts[1]), A(2, ts[2]), -1);
            });
            std::vector<Tensor> tt = {transposed(ts[0]), transposed(ts[1]),
                                      transposed(ts[2])};
            Tensor unfused = onDevice(gpu, tt, 0, [&](const PtrFn &p) {
              return bwd(gpu, A(0, tt[0]), A(1, tt[1]), A(2, tt[2]), 0);
            });
            EXPECT_TRUE(transposed(unfused).bytes == fused.bytes)
                << what << ": the fused rows differ from the unfused kernel";
            if (HasFailure())
              return;
          }
}

TEST_F(CudaFast, SoftmaxRowsAndCrossEntropy50k) {
  for (Shape s : {Shape{8192, 1024}, Shape{64, 1025}, Shape{4096, 3}})
    for (bool log : {false, true}) {
      std::vector<Tensor> ts = {randomTensor(s, AMPC_F16, -8, 8),
                                Tensor(s, AMPC_F32)};
      compare(
          ts, {1},
          [&](ampc_context c, const PtrFn &p) {
            return log ? ampc_log_softmax_fwd(c, A(1, ts[1]), A(0, ts[0]), -1)
                       : ampc_softmax_fwd(c, A(1, ts[1]), A(0, ts[0]), -1);
          },
          1e-5, "softmax " + std::to_string(s[1]));
    }
  // Cross-entropy with GPT-2's vocabulary (online row statistics, the
  // many-block sum of the row losses), ignored and out-of-range labels.
  int64_t rows = 2048, classes = 50257;
  Tensor labels({rows}, AMPC_I64);
  for (int64_t r = 0; r < rows; ++r)
    labels.set(r, r % 97 == 5 ? -100 : (r * 7919) % classes);
  Tensor one(Shape{}, AMPC_F32);
  one.set(0, 1.0);
  std::vector<Tensor> ce = {randomTensor({rows, classes}, AMPC_F16, -6, 6),
                            labels, Tensor(Shape{}, AMPC_F32), one,
                            Tensor({rows, classes}, AMPC_F32)};
  compare(
      ce, {2, 4},
      [&](ampc_context c, const PtrFn &p) {
        AMPC_TRY(
            ampc_cross_entropy_fwd(c, A(2, ce[2]), A(0, ce[0]), A(1, ce[1]), -1));
        return ampc_cross_entropy_bwd(c, A(4, ce[4]), A(3, ce[3]), A(0, ce[0]),
                                      A(1, ce[1]));
      },
      1e-5, "cross-entropy 2048 x 50257");
  // Many rows: the row-loss sum takes the many-block path.
  int64_t rows2 = 70000, classes2 = 10;
  Tensor labels2({rows2}, AMPC_I32);
  for (int64_t r = 0; r < rows2; ++r)
    labels2.set(r, r % 11 == 3 ? -100 : r % classes2);
  std::vector<Tensor> ce2 = {randomTensor({rows2, classes2}, AMPC_F32, -3, 3),
                             labels2, Tensor(Shape{}, AMPC_F32)};
  compare(
      ce2, {2},
      [&](ampc_context c, const PtrFn &p) {
        return ampc_cross_entropy_fwd(c, A(2, ce2[2]), A(0, ce2[0]),
                                      A(1, ce2[1]), -1);
      },
      1e-6, "cross-entropy 70000 rows");
}

// -------------------------------------------------------------- embedding --

TEST_F(CudaFast, EmbeddingBackwardIsBitIdentical) {
  // GPT-2's table (50257 x 768, 8192 tokens) with one very frequent id, and
  // a small case with out-of-range ids that must be skipped.
  struct Case {
    int64_t vocab, dim, n;
    ampc_dtype table;
  };
  for (Case k : {Case{50257, 768, 8192, AMPC_F32}, Case{50257, 768, 8192, AMPC_F16},
                 Case{13, 33, 1000, AMPC_BF16}}) {
    Tensor ids({k.n}, AMPC_I64);
    for (int64_t i = 0; i < k.n; ++i) {
      int64_t id = i % 8 == 0 ? 50 % k.vocab : (i * 104729 + 7) % k.vocab;
      if (k.vocab == 13 && i % 17 == 3)
        id = i % 2 ? -1 : k.vocab; // out of range: contributes nothing
      ids.set(i, id);
    }
    std::vector<Tensor> ts = {randomTensor({k.n, k.dim}, AMPC_F32), ids,
                              Tensor({k.vocab, k.dim}, k.table)};
    compare(
        ts, {2},
        [&](ampc_context c, const PtrFn &p) {
          return ampc_embedding_bwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]));
        },
        0, "embedding backward vocab " + std::to_string(k.vocab));
  }
}

// ------------------------------------------------------------------ GEMMs --

TEST_F(CudaFast, GemmCacheEpiloguesAndBatches) {
  // The same problem many times (cached descriptors), with the bias at two
  // alignments (both in the cache key), exact GELU into f32 (GEMM, then GELU
  // in place), a linear backward at GPT-2 MLP sizes.
  for (ampc_dtype dt : {AMPC_F16, AMPC_BF16}) {
    std::vector<Tensor> ts = {randomTensor({2048, 768}, dt),
                              randomTensor({3072, 768}, dt),
                              randomTensor({3073}, AMPC_F32),
                              Tensor({2048, 3072}, AMPC_F32),
                              Tensor({2048, 3072}, dt)};
    for (int shift : {0, 4})
      for (ampc_epilogue epi : {AMPC_EPILOGUE_NONE, AMPC_EPILOGUE_GELU}) {
        int64_t bs[1] = {3072};
        compare(
            ts, {3, 4},
            [&](ampc_context c, const PtrFn &p) {
              for (int it = 0; it < 5; ++it)
                AMPC_TRY(ampc_linear_fwd(c, A(3, ts[3]), A(0, ts[0]),
                                         A(1, ts[1]), shifted(p, 2, shift),
                                         AMPC_F32, bs, 1, epi));
              return ampc_linear_fwd(c, A(4, ts[4]), A(0, ts[0]), A(1, ts[1]),
                                     shifted(p, 2, shift), AMPC_F32, bs, 1,
                                     epi);
            },
            dtypeEps(dt), "linear shift " + std::to_string(shift));
      }
    std::vector<Tensor> bw = {randomTensor({2048, 3072}, dt),
                              randomTensor({2048, 768}, dt),
                              randomTensor({3072, 768}, dt),
                              Tensor({2048, 768}, AMPC_F32),
                              Tensor({3072, 768}, AMPC_F32),
                              Tensor({3072}, AMPC_F32)};
    compare(
        bw, {3, 4, 5},
        [&](ampc_context c, const PtrFn &p) {
          return ampc_linear_bwd(c, A(3, bw[3]), A(4, bw[4]), A(5, bw[5]),
                                 A(0, bw[0]), A(1, bw[1]), A(2, bw[2]));
        },
        1e-3, "linear backward 2048x768x3072");
  }
  // Strided-batched attention-like products and a broadcast batch.
  std::vector<Tensor> mm = {randomTensor({4, 12, 256, 64}, AMPC_F16),
                            randomTensor({4, 12, 64, 256}, AMPC_F16),
                            Tensor({4, 12, 256, 256}, AMPC_F32),
                            randomTensor({1, 12, 64, 64}, AMPC_F16),
                            Tensor({4, 12, 256, 64}, AMPC_F32)};
  compare(
      mm, {2, 4},
      [&](ampc_context c, const PtrFn &p) {
        AMPC_TRY(ampc_matmul_fwd(c, A(2, mm[2]), A(0, mm[0]), A(1, mm[1])));
        return ampc_matmul_fwd(c, A(4, mm[4]), A(0, mm[0]), A(3, mm[3]));
      },
      1e-3, "batched matmul");
}

// ---------------------------------------------------- multi-tensor updates --

TEST_F(CudaFast, MultiTensorUpdatesAreBitIdentical) {
  // 150 tensors (three launches of at most 64), odd sizes, an empty one and
  // one of 5M elements (many blocks of one tensor).
  const int count = 150;
  std::vector<int64_t> n(count);
  for (int t = 0; t < count; ++t)
    n[t] = t == 7 ? 0 : t == 100 ? 5000011 : 1 + (t * 7919) % 40000;
  std::vector<Tensor> ts;
  for (int t = 0; t < count; ++t) {
    ts.push_back(randomTensor({n[t]}, t % 3 ? AMPC_F32 : AMPC_F16, -50, 50));
    ts.push_back(randomTensor({n[t]}, AMPC_F32));
    ts.push_back(Tensor({n[t]}, AMPC_F32));
    ts.push_back(Tensor({n[t]}, AMPC_F32));
  }
  Tensor scale(Shape{}, AMPC_F32), step(Shape{}, AMPC_I32);
  scale.set(0, 64);
  ts.push_back(scale);
  ts.push_back(Tensor(Shape{}, AMPC_F32)); // found_inf
  ts.push_back(step);
  ts.push_back(Tensor(Shape{}, AMPC_F32)); // total norm
  int base = 4 * count;
  std::vector<int> outs;
  for (int i = 0; i < base + 4; ++i)
    outs.push_back(i);
  auto lists = [&](const PtrFn &p, std::vector<void *> &g,
                   std::vector<void *> &w, std::vector<void *> &m,
                   std::vector<void *> &v, std::vector<ampc_dtype> &gdt,
                   std::vector<ampc_dtype> &wdt) {
    for (int t = 0; t < count; ++t) {
      g.push_back(p(4 * t));
      w.push_back(p(4 * t + 1));
      m.push_back(p(4 * t + 2));
      v.push_back(p(4 * t + 3));
      gdt.push_back(ts[4 * t].dtype);
      wdt.push_back(AMPC_F32);
    }
  };
  compare(
      ts, outs,
      [&](ampc_context c, const PtrFn &p) {
        std::vector<void *> g, w, m, v;
        std::vector<ampc_dtype> gdt, wdt;
        lists(p, g, w, m, v, gdt, wdt);
        for (int it = 0; it < 2; ++it) {
          AMPC_TRY(ampc_check_finite_unscale(c, p(base + 1), AMPC_F32,
                                             g.data(), gdt.data(), n.data(),
                                             count, p(base)));
          AMPC_TRY(ampc_adamw_update(c, w.data(), wdt.data(), g.data(),
                                     gdt.data(), m.data(), v.data(),
                                     p(base + 2), n.data(), count, 1e-3, 0.9,
                                     0.999, 1e-8, 0.01, 0.0, p(base + 1),
                                     AMPC_F32, nullptr));
          AMPC_TRY(ampc_sgd_update(c, w.data(), wdt.data(), g.data(),
                                   gdt.data(), m.data(), n.data(), count, 0.1,
                                   0.9, 1e-4, 1, 0.0, p(base + 1), AMPC_F32, nullptr));
        }
        return AMPC_OK;
      },
      0, "unscale + adamw + sgd over 150 tensors");
  // f32 gradients only: a coefficient one f32 ulp apart may move an f16
  // gradient by a whole f16 ulp.
  compare(
      ts, {4, 8, 400, base + 3},
      [&](ampc_context c, const PtrFn &p) {
        std::vector<void *> g, w, m, v;
        std::vector<ampc_dtype> gdt, wdt;
        lists(p, g, w, m, v, gdt, wdt);
        return ampc_clip_grad_norm(c, p(base + 3), g.data(), gdt.data(),
                                   n.data(), count, 100.0, nullptr, AMPC_F32);
      },
      1e-6, "clip over 150 tensors");
}

// ------------------------------------------------------------- robustness --

TEST_F(CudaFast, WithoutMemoryPoolsAndFromAnotherThread) {
  // AMPC_CUDA_NO_POOL takes the fallback used where the device has no
  // stream-ordered memory pools: scratch through cudaMalloc / cudaFree.
  setenv("AMPC_CUDA_NO_POOL", "1", 1);
  ampc_context noPool = nullptr;
  ampc_status st = ampc_context_create(AMPC_BACKEND_CUDA, 0, &noPool);
  unsetenv("AMPC_CUDA_NO_POOL");
  ASSERT_OK(st);
  std::vector<Tensor> ts = {randomTensor({512, 768}, AMPC_F16),
                            randomTensor({768}, AMPC_F32),
                            randomTensor({768}, AMPC_F32),
                            Tensor({512, 768}, AMPC_F32),
                            randomTensor({512, 768}, AMPC_F32),
                            Tensor({512, 768}, AMPC_F32),
                            Tensor({768}, AMPC_F32),
                            Tensor({768}, AMPC_F32)};
  Op norm = [&](ampc_context c, const PtrFn &p) {
    AMPC_TRY(ampc_layer_norm_fwd(c, A(3, ts[3]), A(0, ts[0]), A(1, ts[1]),
                                 A(2, ts[2]), 1e-5));
    return ampc_layer_norm_bwd(c, A(5, ts[5]), A(6, ts[6]), A(7, ts[7]),
                               A(4, ts[4]), A(0, ts[0]), A(1, ts[1]), 1e-5);
  };
  compare(ts, {3, 5, 6, 7}, norm, 1e-4, "norm without pools", noPool);
  ampc_context_destroy(noPool);
  // The same context used from a second thread (the device is made current
  // at every entry point).
  std::thread other([&] { compare(ts, {3, 5, 6, 7}, norm, 1e-4, "thread"); });
  other.join();
}

} // namespace
