//===- test_cuda.cpp - The CUDA backend against the CPU backend
//-------------===//
//
// Every test runs the same calls on both backends (inputs uploaded to the
// GPU) and compares outputs: bit-identical where both backends evaluate the
// same f32 formula in the same order (casts, init, scale update, optimizer
// steps), within a tolerance where summation order or libm differ. Skipped
// with a message when no GPU is usable.
//
//===----------------------------------------------------------------------===//
#include "cuda_test_util.h"

using namespace ampc_test;

namespace {

class Cuda : public CudaVsCpu {
protected:
  const char *skipped() const override { return "CUDA-vs-CPU comparison"; }
};

TEST_F(Cuda, CastsAreBitIdentical) {
  for (ampc_dtype low : {AMPC_F16, AMPC_BF16}) {
    std::vector<Tensor> ts = {Tensor({65536}, low), Tensor({65536}, AMPC_F32),
                              Tensor({65536}, low)};
    for (uint32_t h = 0; h < 65536; ++h)
      reinterpret_cast<uint16_t *>(ts[0].data())[h] = static_cast<uint16_t>(h);
    compare(
        ts, {1, 2},
        [&](ampc_context c, const PtrFn &p) {
          AMPC_TRY(ampc_cast_fwd(c, A(1, ts[1]), A(0, ts[0])));
          return ampc_cast_fwd(c, A(2, ts[2]), A(1, ts[1]));
        },
        0, "cast");
  }
  std::vector<Tensor> ts = {randomTensor({4096}, AMPC_F32, -70000, 70000),
                            Tensor({4096}, AMPC_F16),
                            Tensor({4096}, AMPC_BF16)};
  compare(
      ts, {1, 2},
      [&](ampc_context c, const PtrFn &p) {
        AMPC_TRY(ampc_cast_fwd(c, A(1, ts[1]), A(0, ts[0])));
        return ampc_cast_fwd(c, A(2, ts[2]), A(0, ts[0]));
      },
      0, "cast f32 -> 16");
  // Every upper half of an f32 with low halves that make f16's and bf16's
  // rounding cases (ties at bit 12 and at bit 15, just below and above
  // them), through every exponent: subnormal results, overflow to inf,
  // NaNs with payloads. The GPU converts non-NaNs with its own instruction.
  const uint32_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x3000,
                           0x7fff, 0x8000, 0x8001, 0xf000, 0xffff};
  const int64_t n = 65536 * 11;
  std::vector<Tensor> sw = {Tensor({n}, AMPC_F32), Tensor({n}, AMPC_F16),
                            Tensor({n}, AMPC_BF16)};
  for (uint32_t hi = 0, i = 0; hi < 65536; ++hi)
    for (uint32_t lo : lows)
      reinterpret_cast<uint32_t *>(sw[0].data())[i++] = hi << 16 | lo;
  compare(
      sw, {1, 2},
      [&](ampc_context c, const PtrFn &p) {
        AMPC_TRY(ampc_cast_fwd(c, A(1, sw[1]), A(0, sw[0])));
        return ampc_cast_fwd(c, A(2, sw[2]), A(0, sw[0]));
      },
      0, "cast f32 sweep -> 16");
}

TEST_F(Cuda, RandomInit) {
  std::vector<Tensor> ts = {Tensor({100003}, AMPC_F32),
                            Tensor({100003}, AMPC_F32)};
  compare(
      ts, {0},
      [&](ampc_context c, const PtrFn &p) {
        return ampc_init_uniform(c, p(0), AMPC_F32, 100003, 99, 3, -2, 2);
      },
      0, "uniform");
  compare(
      ts, {1},
      [&](ampc_context c, const PtrFn &p) {
        return ampc_init_normal(c, p(1), AMPC_F32, 100003, 99, 3, 0, 1);
      },
      1e-6, "normal");
}

TEST_F(Cuda, ElementwiseOps) {
  Shape s = {3, 5, 7};
  using UFwd = decltype(&ampc_exp_fwd);
  using UBwd = decltype(&ampc_exp_bwd);
  std::pair<UFwd, UBwd> unary[] = {
      {ampc_neg_fwd, ampc_neg_bwd},         {ampc_abs_fwd, ampc_abs_bwd},
      {ampc_exp_fwd, ampc_exp_bwd},         {ampc_log_fwd, ampc_log_bwd},
      {ampc_sqrt_fwd, ampc_sqrt_bwd},       {ampc_rsqrt_fwd, ampc_rsqrt_bwd},
      {ampc_relu_fwd, ampc_relu_bwd},       {ampc_silu_fwd, ampc_silu_bwd},
      {ampc_sigmoid_fwd, ampc_sigmoid_bwd}, {ampc_tanh_fwd, ampc_tanh_bwd}};
  for (auto &u : unary)
    for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16}) {
      std::vector<Tensor> ts = {randomTensor(s, dt, 0.1, 2), Tensor(s, dt),
                                randomTensor(s, AMPC_F32), Tensor(s, AMPC_F32)};
      compare(
          ts, {1, 3},
          [&](ampc_context c, const PtrFn &p) {
            AMPC_TRY(u.first(c, A(1, ts[1]), A(0, ts[0])));
            return u.second(c, A(3, ts[3]), A(2, ts[2]), A(0, ts[0]));
          },
          dt == AMPC_F32 ? 1e-5 : dtypeEps(dt), "unary");
    }
  for (ampc_gelu_approximate g : {AMPC_GELU_NONE, AMPC_GELU_TANH}) {
    std::vector<Tensor> ts = {randomTensor(s, AMPC_F32, -3, 3),
                              Tensor(s, AMPC_F32), randomTensor(s, AMPC_F32),
                              Tensor(s, AMPC_F32)};
    compare(
        ts, {1, 3},
        [&](ampc_context c, const PtrFn &p) {
          AMPC_TRY(ampc_gelu_fwd(c, A(1, ts[1]), A(0, ts[0]), g));
          return ampc_gelu_bwd(c, A(3, ts[3]), A(2, ts[2]), A(0, ts[0]), g);
        },
        1e-5, "gelu");
  }
  using BFwd = decltype(&ampc_add_fwd);
  using BBwd = decltype(&ampc_add_bwd);
  std::pair<BFwd, BBwd> binary[] = {{ampc_add_fwd, ampc_add_bwd},
                                    {ampc_sub_fwd, ampc_sub_bwd},
                                    {ampc_mul_fwd, ampc_mul_bwd},
                                    {ampc_div_fwd, ampc_div_bwd},
                                    {ampc_maximum_fwd, ampc_maximum_bwd},
                                    {ampc_minimum_fwd, ampc_minimum_bwd},
                                    {ampc_pow_fwd, ampc_pow_bwd}};
  for (auto &b : binary) {
    std::vector<Tensor> ts = {randomTensor({3, 1, 7}, AMPC_F16, 0.5, 2),
                              randomTensor({5, 1}, AMPC_F32, 0.5, 2),
                              Tensor(s, AMPC_F32),
                              randomTensor(s, AMPC_F32),
                              Tensor({3, 1, 7}, AMPC_F32),
                              Tensor({5, 1}, AMPC_F32)};
    compare(
        ts, {2, 4, 5},
        [&](ampc_context c, const PtrFn &p) {
          AMPC_TRY(b.first(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1])));
          return b.second(c, A(4, ts[4]), A(5, ts[5]), A(3, ts[3]), A(0, ts[0]),
                          A(1, ts[1]));
        },
        1e-5, "binary");
  }
}

} // namespace
namespace {

TEST_F(Cuda, ReductionsSoftmaxNorms) {
  Shape s = {4, 6, 33};
  int64_t dims[2] = {0, 2};
  using RFwd = decltype(&ampc_sum_fwd);
  using RBwd = decltype(&ampc_sum_bwd);
  std::pair<RFwd, RBwd> reds[] = {{ampc_sum_fwd, ampc_sum_bwd},
                                  {ampc_mean_fwd, ampc_mean_bwd},
                                  {ampc_max_fwd, ampc_max_bwd}};
  for (auto &r : reds) {
    std::vector<Tensor> ts = {randomTensor(s, AMPC_F16), Tensor({6}, AMPC_F32),
                              randomTensor({6}, AMPC_F32), Tensor(s, AMPC_F32)};
    compare(
        ts, {1, 3},
        [&](ampc_context c, const PtrFn &p) {
          AMPC_TRY(r.first(c, A(1, ts[1]), A(0, ts[0]), dims, 2, 0));
          return r.second(c, A(3, ts[3]), A(2, ts[2]), A(0, ts[0]), A(1, ts[1]),
                          dims, 2, 0);
        },
        1e-4, "reduction");
  }
  for (int dim : {-1, 1})
    for (bool log : {false, true}) {
      std::vector<Tensor> ts = {randomTensor(s, AMPC_BF16, -4, 4),
                                Tensor(s, AMPC_F32), randomTensor(s, AMPC_F32),
                                Tensor(s, AMPC_F32)};
      compare(
          ts, {1, 3},
          [&](ampc_context c, const PtrFn &p) {
            if (log) {
              AMPC_TRY(ampc_log_softmax_fwd(c, A(1, ts[1]), A(0, ts[0]), dim));
              return ampc_log_softmax_bwd(c, A(3, ts[3]), A(2, ts[2]),
                                          A(1, ts[1]), dim);
            }
            AMPC_TRY(ampc_softmax_fwd(c, A(1, ts[1]), A(0, ts[0]), dim));
            return ampc_softmax_bwd(c, A(3, ts[3]), A(2, ts[2]), A(1, ts[1]),
                                    dim);
          },
          1e-5, "softmax");
    }
  for (bool rms : {false, true}) {
    std::vector<Tensor> ts = {
        randomTensor(s, AMPC_F16, -2, 2), randomTensor({33}, AMPC_F32),
        randomTensor({33}, AMPC_F32),     Tensor(s, AMPC_F16),
        randomTensor(s, AMPC_F32),        Tensor(s, AMPC_F32),
        Tensor({33}, AMPC_F32),           Tensor({33}, AMPC_F32)};
    compare(
        ts, {3, 5, 6, 7},
        [&](ampc_context c, const PtrFn &p) {
          if (rms) {
            AMPC_TRY(ampc_rms_norm_fwd(c, A(3, ts[3]), A(0, ts[0]), A(1, ts[1]),
                                       1e-6));
            return ampc_rms_norm_bwd(c, A(5, ts[5]), A(6, ts[6]), A(4, ts[4]),
                                     A(0, ts[0]), A(1, ts[1]), 1e-6);
          }
          AMPC_TRY(ampc_layer_norm_fwd(c, A(3, ts[3]), A(0, ts[0]), A(1, ts[1]),
                                       A(2, ts[2]), 1e-5));
          return ampc_layer_norm_bwd(c, A(5, ts[5]), A(6, ts[6]), A(7, ts[7]),
                                     A(4, ts[4]), A(0, ts[0]), A(1, ts[1]),
                                     1e-5);
        },
        2e-3, "norm");
  }
}

TEST_F(Cuda, GemmMatmulLinearConv) {
  for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16})
    for (ampc_epilogue epi : {AMPC_EPILOGUE_NONE, AMPC_EPILOGUE_RELU,
                              AMPC_EPILOGUE_GELU, AMPC_EPILOGUE_GELU_TANH})
      for (ampc_dtype out : {dt, AMPC_F32}) {
        std::vector<Tensor> ts = {
            randomTensor({3, 64, 48}, dt), randomTensor({80, 48}, dt),
            randomTensor({80}, AMPC_F32), Tensor({3, 64, 80}, out)};
        compare(
            ts, {3},
            [&](ampc_context c, const PtrFn &p) {
              return ampc_linear_fwd(c, A(3, ts[3]), A(0, ts[0]), A(1, ts[1]),
                                     A(2, ts[2]), epi);
            },
            out == AMPC_F32 ? 1e-4 : dtypeEps(out), "linear epilogue");
      }
  std::vector<Tensor> mm = {randomTensor({2, 1, 16, 24}, AMPC_F16),
                            randomTensor({3, 24, 8}, AMPC_F16),
                            Tensor({2, 3, 16, 8}, AMPC_F32),
                            randomTensor({2, 3, 16, 8}, AMPC_F32),
                            Tensor({2, 1, 16, 24}, AMPC_F32),
                            Tensor({3, 24, 8}, AMPC_F32)};
  compare(
      mm, {2, 4, 5},
      [&](ampc_context c, const PtrFn &p) {
        AMPC_TRY(ampc_matmul_fwd(c, A(2, mm[2]), A(0, mm[0]), A(1, mm[1])));
        return ampc_matmul_bwd(c, A(4, mm[4]), A(5, mm[5]), A(3, mm[3]),
                               A(0, mm[0]), A(1, mm[1]));
      },
      1e-4, "matmul");
  std::vector<Tensor> cv = {randomTensor({2, 4, 9, 9}, AMPC_F16),
                            randomTensor({6, 2, 3, 3}, AMPC_F16),
                            randomTensor({6}, AMPC_F32),
                            Tensor({2, 6, 5, 9}, AMPC_F16),
                            randomTensor({2, 6, 5, 9}, AMPC_F32),
                            Tensor({2, 4, 9, 9}, AMPC_F32),
                            Tensor({6, 2, 3, 3}, AMPC_F32),
                            Tensor({6}, AMPC_F32)};
  compare(
      cv, {3, 5, 6, 7},
      [&](ampc_context c, const PtrFn &p) {
        AMPC_TRY(ampc_conv2d_fwd(c, A(3, cv[3]), A(0, cv[0]), A(1, cv[1]),
                                 A(2, cv[2]), 2, 1, 1, 1, 1, 1, 2));
        return ampc_conv2d_bwd(c, A(5, cv[5]), A(6, cv[6]), A(7, cv[7]),
                               A(4, cv[4]), A(0, cv[0]), A(1, cv[1]), 2, 1, 1,
                               1, 1, 1, 2);
      },
      2e-3, "conv2d");
}

TEST_F(Cuda, PoolingShapeOpsEmbeddingLosses) {
  for (bool isMax : {true, false}) {
    std::vector<Tensor> ts = {
        randomTensor({2, 3, 8, 7}, AMPC_F32), Tensor({2, 3, 4, 4}, AMPC_F32),
        randomTensor({2, 3, 4, 4}, AMPC_F32), Tensor({2, 3, 8, 7}, AMPC_F32)};
    compare(
        ts, {1, 3},
        [&](ampc_context c, const PtrFn &p) {
          auto f = isMax ? ampc_max_pool2d_fwd : ampc_avg_pool2d_fwd;
          auto b = isMax ? ampc_max_pool2d_bwd : ampc_avg_pool2d_bwd;
          AMPC_TRY(f(c, A(1, ts[1]), A(0, ts[0]), 3, 2, 2, 2, 1, 1));
          return b(c, A(3, ts[3]), A(2, ts[2]), A(0, ts[0]), 3, 2, 2, 2, 1, 1);
        },
        1e-6, "pool");
  }
  int64_t perm[3] = {2, 0, 1};
  std::vector<Tensor> sh = {
      randomTensor({3, 4, 5}, AMPC_F32), Tensor({5, 3, 4}, AMPC_BF16),
      Tensor({3, 2, 5}, AMPC_F32), Tensor({3, 6, 5}, AMPC_F32),
      Tensor({3, 4, 5}, AMPC_F32)};
  compare(
      sh, {1, 2, 3, 4},
      [&](ampc_context c, const PtrFn &p) {
        AMPC_TRY(ampc_transpose_fwd(c, A(1, sh[1]), A(0, sh[0]), perm, 3));
        AMPC_TRY(ampc_slice_fwd(c, A(2, sh[2]), A(0, sh[0]), 1, 1, 3));
        const void *xs[2] = {p(0), p(2)};
        ampc_dtype dts[2] = {AMPC_F32, AMPC_F32};
        const int64_t *shapes[2] = {sh[0].dims(), sh[2].dims()};
        AMPC_TRY(ampc_concat_fwd(c, A(3, sh[3]), xs, dts, shapes, 2, 1));
        return ampc_slice_bwd(c, A(4, sh[4]), A(2, sh[2]), 1, 1, 3);
      },
      0, "shape ops");
  Tensor ids({64}, AMPC_I32), labels({64}, AMPC_I64);
  for (int i = 0; i < 64; ++i) {
    ids.set(i, (i * 7) % 13);
    labels.set(i, i % 5 == 4 ? -100 : (i * 3) % 10);
  }
  std::vector<Tensor> em = {
      randomTensor({13, 24}, AMPC_F32), ids, Tensor({64, 24}, AMPC_F16),
      randomTensor({64, 24}, AMPC_F32), Tensor({13, 24}, AMPC_F32)};
  compare(
      em, {2, 4},
      [&](ampc_context c, const PtrFn &p) {
        AMPC_TRY(ampc_embedding_fwd(c, A(2, em[2]), A(0, em[0]), A(1, em[1]), -1));
        return ampc_embedding_bwd(c, A(4, em[4]), A(3, em[3]), A(1, em[1]));
      },
      1e-5, "embedding");
  Tensor one(Shape{}, AMPC_F32);
  one.set(0, 1.5);
  std::vector<Tensor> ce = {randomTensor({64, 10}, AMPC_F16, -3, 3),
                            labels,
                            Tensor(Shape{}, AMPC_F32),
                            one,
                            Tensor({64, 10}, AMPC_F32),
                            randomTensor({64, 10}, AMPC_F32),
                            Tensor(Shape{}, AMPC_F32),
                            Tensor({64, 10}, AMPC_F32)};
  compare(
      ce, {2, 4, 6, 7},
      [&](ampc_context c, const PtrFn &p) {
        AMPC_TRY(
            ampc_cross_entropy_fwd(c, A(2, ce[2]), A(0, ce[0]), A(1, ce[1]), -1));
        AMPC_TRY(ampc_cross_entropy_bwd(c, A(4, ce[4]), A(3, ce[3]),
                                        A(0, ce[0]), A(1, ce[1])));
        AMPC_TRY(ampc_mse_loss_fwd(c, A(6, ce[6]), A(5, ce[5]), A(4, ce[4])));
        return ampc_mse_loss_bwd(c, A(7, ce[7]), nullptr, AMPC_F32, nullptr, 0,
                                 A(3, ce[3]), A(5, ce[5]), A(4, ce[4]));
      },
      1e-5, "losses");
}

TEST_F(Cuda, LossScalingAndOptimizersAreBitIdentical) {
  Tensor scale(Shape{}, AMPC_F32), flag(Shape{}, AMPC_F32),
      tracker(Shape{}, AMPC_I32), hyst(Shape{}, AMPC_I32),
      step(Shape{}, AMPC_I32);
  scale.set(0, 1024);
  hyst.set(0, 2);
  std::vector<Tensor> ts = {randomTensor({1000}, AMPC_F32, -1e3, 1e3),
                            randomTensor({777}, AMPC_F16, -1e3, 1e3),
                            randomTensor({1000}, AMPC_F32),
                            randomTensor({777}, AMPC_F32),
                            Tensor({1000}, AMPC_F32),
                            Tensor({777}, AMPC_F32),
                            Tensor({1000}, AMPC_F32),
                            Tensor({777}, AMPC_F32),
                            scale,
                            flag,
                            tracker,
                            hyst,
                            step,
                            Tensor(Shape{}, AMPC_F32)};
  for (bool inject : {false, true}) {
    if (inject)
      ts[1].set(5, INFINITY);
    compare(
        ts, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
        [&](ampc_context c, const PtrFn &p) {
          void *grads[2] = {p(0), p(1)}, *params[2] = {p(2), p(3)};
          void *m[2] = {p(4), p(5)}, *v[2] = {p(6), p(7)};
          ampc_dtype gdt[2] = {AMPC_F32, AMPC_F16},
                     pdt[2] = {AMPC_F32, AMPC_F32};
          int64_t n[2] = {1000, 777};
          for (int it = 0; it < 3; ++it) {
            AMPC_TRY(ampc_check_finite_unscale(c, p(9), AMPC_F32, grads, gdt, n,
                                               2, p(8)));
            AMPC_TRY(ampc_adamw_update(c, params, pdt, grads, gdt, m, v, p(12),
                                       n, 2, 1e-3, 0.9, 0.999, 1e-8, 0.01, 0.0,
                                       p(9), AMPC_F32, nullptr));
            AMPC_TRY(ampc_sgd_update(c, params, pdt, grads, gdt, m, n, 2, 0.1,
                                     0.9, 1e-4, 1, 0.0, p(9), AMPC_F32, nullptr));
            AMPC_TRY(ampc_update_scale(c, p(8), p(10), p(11), p(9), AMPC_F32,
                                       2.0, 0.5, 2, 2, 1.0, 0));
          }
          return AMPC_OK;
        },
        0, inject ? "amp step with inf" : "amp step");
  }
  ts[1].set(5, 0.5);
  compare(
      ts, {0, 1, 13},
      [&](ampc_context c, const PtrFn &p) {
        void *grads[2] = {p(0), p(1)};
        ampc_dtype gdt[2] = {AMPC_F32, AMPC_F16};
        int64_t n[2] = {1000, 777};
        return ampc_clip_grad_norm(c, p(13), grads, gdt, n, 2, 10.0, nullptr,
                                   AMPC_F32);
      },
      1e-6, "clip");
}

TEST_F(Cuda, ArenaAndStream) {
  ampc_arena arena;
  ASSERT_OK(ampc_arena_create(gpu, 1 << 20, &arena));
  void *base = nullptr, *stream = nullptr;
  ASSERT_OK(ampc_arena_base(arena, &base));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % 256, 0u);
  ASSERT_OK(ampc_context_stream(gpu, &stream));
  EXPECT_NE(stream, nullptr);
  ASSERT_OK(ampc_fill(gpu, base, AMPC_F32, 1 << 18, 2.5));
  std::vector<float> host(1 << 18);
  ASSERT_OK(ampc_memcpy(gpu, host.data(), base, host.size() * 4,
                        AMPC_MEMCPY_DEVICE_TO_HOST));
  EXPECT_EQ(host.back(), 2.5f);
  ASSERT_OK(ampc_arena_destroy(arena));
}

TEST_F(Cuda, F64ConvolutionIsRefused) {
  // The CUDA backend has no f64 convolution: an f64 call is
  // AMPC_ERROR_UNSUPPORTED_DTYPE naming the CUDA backend, never a result
  // computed through f32. (Dropout, batch norm and the GEMM-plus-add family
  // compute f64 on CUDA now: test_cuda_wide.cpp, CudaWide.*.)
  void *x = nullptr, *w = nullptr, *y = nullptr;
  ASSERT_OK(ampc_malloc(gpu, 8 * 16, &x));
  ASSERT_OK(ampc_malloc(gpu, 8 * 9, &w));
  ASSERT_OK(ampc_malloc(gpu, 8 * 4, &y));
  int64_t xs[] = {1, 1, 4, 4}, ws[] = {1, 1, 3, 3}, ys[] = {1, 1, 2, 2};
  EXPECT_EQ(ampc_conv2d_fwd(gpu, y, AMPC_F64, ys, 4, x, AMPC_F64, xs, 4, w,
                            AMPC_F64, ws, 4, nullptr, AMPC_F64, nullptr, 0, 1,
                            1, 0, 0, 1, 1, 1),
            AMPC_ERROR_UNSUPPORTED_DTYPE);
  EXPECT_NE(std::strstr(ampc_last_error(), "CUDA"), nullptr)
      << ampc_last_error();
  for (void *p : {x, w, y})
    ampc_free(gpu, p);
}

} // namespace
