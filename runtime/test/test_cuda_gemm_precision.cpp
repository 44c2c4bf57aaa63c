//===- test_cuda_gemm_precision.cpp - Mixed-dtype GEMMs, exact GELU, fma -===//
//
// The precision of the CUDA GEMMs and their epilogues (docs/cuda.md):
//  - mixed-dtype GEMMs on bf16 tensor cores over exact bf16 parts (the
//    split itself is checked here on the CPU, exhaustively for f16 and
//    bf16, so its exactness does not depend on a GPU);
//  - exact-erf GELU epilogues into f32 (in place) and into f16 (one rounding);
//  - beta 0 never reads C (C full of NaN must not show);
//  - fused multiply-add kept for kernels compared with a tolerance while
//    cuda_exact.cu stays bit-identical (covered by the optimizer tests of
//    test_cuda.cpp / test_cuda_fast.cpp; here AdamW over odd sizes again
//    after many fma-compiled kernels ran on the same stream).
// The CUDA tests skip with a message when no GPU is usable.
//
//===----------------------------------------------------------------------===//
#include "cuda/bf16_split.h"
#include "cuda_test_util.h"

#include <cmath>
#include <cstring>

using namespace ampc_test;

namespace {

// --------------------------------------------------- the split, on the CPU --

float sumParts(const uint16_t *p, int n) {
  // Smallest part first, as the GEMMs accumulate; exact either way.
  float s = 0;
  for (int k = n - 1; k >= 0; --k)
    s += ampc::bf16ToF32(p[k]);
  return s;
}

TEST(Bf16Split, EveryF16AndBf16ValueSplitsExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    for (ampc_dtype dt : {AMPC_F16, AMPC_BF16}) {
      uint16_t bits = static_cast<uint16_t>(h);
      float v = dt == AMPC_F16 ? ampc::f16ToF32(bits) : ampc::bf16ToF32(bits);
      uint16_t p[3];
      int n = ampc::bf16Parts(dt);
      ampc::bf16Split(v, n, p);
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(ampc::bf16ToF32(p[0]))) << h;
        continue;
      }
      ASSERT_EQ(sumParts(p, n), v) << "dtype " << dt << " bits " << h;
      if (dt == AMPC_BF16)
        EXPECT_EQ(p[0], bits);
    }
  }
}

TEST(Bf16Split, F32SplitsExactlyIntoThreeParts) {
  std::mt19937 gen(7);
  int checked = 0;
  auto check = [&](float v) {
    uint16_t p[3];
    ampc::bf16Split(v, 3, p);
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(ampc::bf16ToF32(p[0])));
      return;
    }
    if (std::isinf(v)) {
      EXPECT_EQ(ampc::bf16ToF32(p[0]), v);
      EXPECT_EQ(p[1], 0);
      EXPECT_EQ(p[2], 0);
      return;
    }
    ASSERT_EQ(sumParts(p, 3), v) << std::hexfloat << v;
    // Each part at most 2^-7 of the one before (truncation).
    for (int k = 1; k < 3; ++k)
      EXPECT_LE(std::fabs(ampc::bf16ToF32(p[k])),
                std::ldexp(std::fabs(ampc::bf16ToF32(p[k - 1])), -7));
    ++checked;
  };
  for (int i = 0; i < 1000000; ++i) {
    uint32_t bits = gen();
    float v;
    std::memcpy(&v, &bits, 4);
    // The exactness claim holds for |v| >= 2^-102 (bf16_split.h).
    if (std::fabs(v) < std::ldexp(1.0f, -102) && v != 0)
      continue;
    check(v);
  }
  for (float v : {0.0f, -0.0f, 1.0f, -1.0f, 3.4028235e38f, -3.4028235e38f,
                  1.17549435e-38f * 16777216.0f, 0.1f, 1.0f / 3, INFINITY,
                  -INFINITY, NAN, 65504.0f, 6.1035156e-05f})
    check(v);
  EXPECT_GT(checked, 850000); // random bits: about 10% are below 2^-102, NaN or inf
}

// -------------------------------------------------------------- on the GPU --

class CudaGemmPrecision : public CudaVsCpu {
protected:
  const char *skipped() const override { return "CUDA fix comparison"; }
};

// The CPU widens both operands exactly and runs one sgemm; the GPU sums a
// few bf16 GEMMs in f32. Summation order differs: 1e-5 relative to the
// largest output (f32 outputs), the output dtype's eps otherwise.
constexpr double kMixedTol = 1e-5;

TEST_F(CudaGemmPrecision, MixedDtypeLinearAtGPT2AndOddSizes) {
  struct Case {
    int64_t m, k, n;
    ampc_dtype x, w, y;
    ampc_epilogue epi;
  } cases[] = {
      {8192, 768, 3072, AMPC_F16, AMPC_F32, AMPC_F32, AMPC_EPILOGUE_NONE},
      {2048, 768, 3072, AMPC_BF16, AMPC_F32, AMPC_F32, AMPC_EPILOGUE_GELU},
      {2048, 768, 768, AMPC_F32, AMPC_F16, AMPC_F16, AMPC_EPILOGUE_NONE},
      {1024, 768, 2304, AMPC_F16, AMPC_BF16, AMPC_F32, AMPC_EPILOGUE_RELU},
      {37, 1001, 129, AMPC_F16, AMPC_F32, AMPC_F32, AMPC_EPILOGUE_GELU_TANH},
      {1, 7, 3, AMPC_BF16, AMPC_F32, AMPC_BF16, AMPC_EPILOGUE_NONE},
  };
  for (const Case &c : cases) {
    std::vector<Tensor> ts = {randomTensor({c.m, c.k}, c.x),
                              randomTensor({c.n, c.k}, c.w),
                              randomTensor({c.n}, AMPC_F32),
                              Tensor({c.m, c.n}, c.y)};
    int64_t bs[1] = {c.n};
    compare(
        ts, {3},
        [&](ampc_context ctx, const PtrFn &p) {
          return ampc_linear_fwd(ctx, A(3, ts[3]), A(0, ts[0]), A(1, ts[1]),
                                 p(2), AMPC_F32, bs, 1, c.epi);
        },
        c.y == AMPC_F32 ? kMixedTol : dtypeEps(c.y),
        "mixed linear " + std::to_string(c.m) + "x" + std::to_string(c.k) +
            "x" + std::to_string(c.n));
  }
}

TEST_F(CudaGemmPrecision, MixedDtypeLinearBackwardAndBatches) {
  // linear backward with an f32 dy and f16 x / w (dw = dy^T x is mixed).
  std::vector<Tensor> bw = {randomTensor({2048, 3072}, AMPC_F32),
                            randomTensor({2048, 768}, AMPC_F16),
                            randomTensor({3072, 768}, AMPC_F16),
                            Tensor({2048, 768}, AMPC_F32),
                            Tensor({3072, 768}, AMPC_F32),
                            Tensor({3072}, AMPC_F32)};
  compare(
      bw, {3, 4, 5},
      [&](ampc_context c, const PtrFn &p) {
        return ampc_linear_bwd(c, A(3, bw[3]), A(4, bw[4]), A(5, bw[5]),
                               A(0, bw[0]), A(1, bw[1]), A(2, bw[2]));
      },
      1e-4, "mixed linear backward 2048x768x3072");
  // Strided-batched and broadcast-batch mixed products.
  std::vector<Tensor> mm = {randomTensor({4, 12, 256, 64}, AMPC_F16),
                            randomTensor({4, 12, 64, 256}, AMPC_F32),
                            Tensor({4, 12, 256, 256}, AMPC_F32),
                            randomTensor({1, 12, 64, 63}, AMPC_BF16),
                            Tensor({4, 12, 256, 63}, AMPC_F32)};
  compare(
      mm, {2, 4},
      [&](ampc_context c, const PtrFn &p) {
        AMPC_TRY(ampc_matmul_fwd(c, A(2, mm[2]), A(0, mm[0]), A(1, mm[1])));
        return ampc_matmul_fwd(c, A(4, mm[4]), A(0, mm[0]), A(3, mm[3]));
      },
      kMixedTol, "mixed batched matmul");
  // Inputs that are exact in bf16 (small integers): every part product is
  // exact and the sums are integers below 2^24, so GPU and CPU agree bit
  // for bit.
  std::vector<Tensor> ex = {Tensor({513, 300}, AMPC_F16),
                            Tensor({300, 257}, AMPC_F32),
                            Tensor({513, 257}, AMPC_F32)};
  for (int64_t i = 0; i < ex[0].size(); ++i)
    ex[0].set(i, static_cast<double>(i % 17) - 8);
  for (int64_t i = 0; i < ex[1].size(); ++i)
    ex[1].set(i, static_cast<double>((i * 7) % 23) - 11 + 0.5);
  compare(
      ex, {2},
      [&](ampc_context c, const PtrFn &p) {
        return ampc_matmul_fwd(c, A(2, ex[2]), A(0, ex[0]), A(1, ex[1]));
      },
      0, "mixed matmul on exact integers");
}

TEST_F(CudaGemmPrecision, ExactGeluEpiloguesAndBetaZero) {
  // Exact GELU into f32 (in place after the GEMM) and into f16 / bf16 (f32
  // accumulator, one rounding), odd n so the in-place walk is not one run.
  for (ampc_dtype y : {AMPC_F32, AMPC_F16, AMPC_BF16}) {
    std::vector<Tensor> ts = {randomTensor({513, 768}, AMPC_F16),
                              randomTensor({3071, 768}, AMPC_F16),
                              randomTensor({3071}, AMPC_F16),
                              Tensor({513, 3071}, y)};
    int64_t bs[1] = {3071};
    compare(
        ts, {3},
        [&](ampc_context c, const PtrFn &p) {
          return ampc_linear_fwd(c, A(3, ts[3]), A(0, ts[0]), A(1, ts[1]),
                                 p(2), AMPC_F16, bs, 1, AMPC_EPILOGUE_GELU);
        },
        y == AMPC_F32 ? 1e-5 : dtypeEps(y), "exact gelu epilogue");
  }
  // beta 0: C starts as NaN everywhere and must not leak into the result,
  // on the cuBLASLt path (f16 in, f32 out) and the f32-accumulator path
  // (exact GELU into f16).
  for (ampc_epilogue epi : {AMPC_EPILOGUE_NONE, AMPC_EPILOGUE_GELU})
    for (ampc_dtype y : {AMPC_F32, AMPC_F16}) {
      std::vector<Tensor> ts = {randomTensor({300, 200}, AMPC_F16),
                                randomTensor({100, 200}, AMPC_F16),
                                Tensor({300, 100}, y)};
      for (int64_t i = 0; i < ts[2].size(); ++i)
        ts[2].set(i, NAN);
      compare(
          ts, {2},
          [&](ampc_context c, const PtrFn &p) {
            return ampc_linear_fwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]),
                                   nullptr, AMPC_F32, nullptr, 0, epi);
          },
          y == AMPC_F32 ? 1e-5 : dtypeEps(y), "beta 0 over a NaN C");
    }
}

TEST_F(CudaGemmPrecision, ExactKernelsStayBitIdenticalAfterFmaKernels) {
  // Odd sizes, f16 and bf16 gradients, after fma-compiled work (a GELU
  // forward and a layer norm) on the same stream.
  std::vector<Tensor> ts = {randomTensor({100003}, AMPC_F32, -3, 3),
                            Tensor({100003}, AMPC_F32),
                            randomTensor({4097}, AMPC_F16),
                            randomTensor({4097}, AMPC_F32),
                            randomTensor({513}, AMPC_BF16),
                            randomTensor({513}, AMPC_F32),
                            Tensor({4097}, AMPC_F32),
                            Tensor({4097}, AMPC_F32),
                            Tensor({513}, AMPC_F32),
                            Tensor({513}, AMPC_F32),
                            Tensor(Shape{}, AMPC_I32)};
  auto gelu = [&](ampc_context c, const PtrFn &p) -> ampc_status {
    return ampc_gelu_fwd(c, A(1, ts[1]), A(0, ts[0]),
                         AMPC_GELU_NONE);
  };
  // GELU itself is an fma kernel: within a tolerance of the CPU.
  compare(ts, {1}, gelu, 1e-6, "gelu (fma kernel)");
  compare(
      ts, {3, 5, 6, 7, 8, 9, 10},
      [&](ampc_context c, const PtrFn &p) {
        AMPC_TRY(gelu(c, p));
        void *params[2] = {p(3), p(5)}, *grads[2] = {p(2), p(4)};
        void *m[2] = {p(6), p(8)}, *v[2] = {p(7), p(9)};
        ampc_dtype pdt[2] = {AMPC_F32, AMPC_F32},
                   gdt[2] = {AMPC_F16, AMPC_BF16};
        int64_t n[2] = {4097, 513};
        for (int step = 0; step < 3; ++step)
          AMPC_TRY(ampc_adamw_update(c, params, pdt, grads, gdt, m, v, p(10), n,
                                     2, 1e-3, 0.9, 0.999, 1e-8, 0.01, 0.0,
                                     nullptr, AMPC_F32, nullptr));
        return AMPC_OK;
      },
      0, "adamw (no-fma kernels) after fma kernels");
}

} // namespace
