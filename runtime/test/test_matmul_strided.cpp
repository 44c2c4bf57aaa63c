//===- test_matmul_strided.cpp - GEMMs on strided views -------------------===//
//
// ampc_matmul_strided (transposes folded into GEMMs): attention's per-head
// products read from and written to [B, T, H, D] tensors through an outer
// batch and a strided inner batch, against an f64 reference and, on the CPU
// backend, bit for bit against the copy-then-matmul form they replace; and
// the argument checks.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

using namespace ampc_test;

namespace {

class MatmulStrided : public CpuTest {};

constexpr int64_t B = 2, T = 12, H = 3, D = 5;

/// s[b, h, t, u] = sum_d q[b, t, h, d] * k[b, u, h, d].
Vec scoresRef(const Tensor &q, const Tensor &k) {
  Vec s(B * H * T * T);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t u = 0; u < T; ++u) {
          double acc = 0;
          for (int64_t d = 0; d < D; ++d)
            acc += q.get(((b * T + t) * H + h) * D + d) *
                   k.get(((b * T + u) * H + h) * D + d);
          s[((b * H + h) * T + t) * T + u] = acc;
        }
  return s;
}

/// q @ k^T per (batch, head) with q and k stored [B, T, H, D].
ampc_status scores(ampc_context ctx, Tensor &s, Tensor &q, Tensor &k) {
  return ampc_matmul_strided(ctx, T(s), T(q), T(k), /*outer*/ B,
                             T * H * D, T * H * D, H * T * T, /*batch*/ H,
                             /*m*/ T, /*n*/ T, /*k*/ D, 0, 1, /*lda*/ H * D,
                             /*ldb*/ H * D, /*ldy*/ T, D, D, T * T);
}

TEST_F(MatmulStrided, HeadSplitAgainstReference) {
  for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16}) {
    SCOPED_TRACE(dt);
    Tensor q = randomTensor({B, T, H, D}, dt), k = randomTensor({B, T, H, D}, dt);
    Tensor s({B, H, T, T}, AMPC_F32);
    ASSERT_OK(scores(ctx, s, q, k));
    expectClose(s.values(), scoresRef(q, k), 1e-5, 1e-5, "scores");
  }
}

TEST_F(MatmulStrided, HeadMergeOutput) {
  // y[b, t, h, d] = sum_u p[b, h, t, u] * v[b, u, h, d]: written straight
  // into the merged layout (rows H * D apart, heads D apart).
  Tensor p = randomTensor({B, H, T, T}, AMPC_F32),
         v = randomTensor({B, T, H, D}, AMPC_F32);
  Tensor y({B, T, H, D}, AMPC_F32);
  ASSERT_OK(ampc_matmul_strided(ctx, T(y), T(p), T(v), B, H * T * T,
                                T * H * D, T * H * D, H, T, D, T, 0, 0, T,
                                H * D, H * D, T * T, D, D));
  Vec want(B * T * H * D);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int64_t u = 0; u < T; ++u)
            acc += p.get(((b * H + h) * T + t) * T + u) *
                   v.get(((b * T + u) * H + h) * D + d);
          want[((b * T + t) * H + h) * D + d] = acc;
        }
  expectClose(y.values(), want, 1e-5, 1e-5, "merged");
}

TEST_F(MatmulStrided, SameBitsAsCopiesThenMatmul) {
  // What the lowering did before the fold: transpose copies, then matmul.
  // On OpenBLAS (ctest runtime_gemm_openblas runs this with
  // AMPC_CPU_GEMM=openblas) the strided form packs into the same panels, so
  // the bits are the same; oneDNN may pick another implementation for a
  // strided operand, so there the results agree to rounding.
  Tensor q = randomTensor({B, T, H, D}, AMPC_F32),
         k = randomTensor({B, T, H, D}, AMPC_F32);
  Tensor qt({B, H, T, D}, AMPC_F32), kt({B, H, D, T}, AMPC_F32);
  const int64_t pq[4] = {0, 2, 1, 3}, pk[4] = {0, 2, 3, 1};
  ASSERT_OK(ampc_transpose_fwd(ctx, T(qt), T(q), pq, 4));
  ASSERT_OK(ampc_transpose_fwd(ctx, T(kt), T(k), pk, 4));
  Tensor want({B, H, T, T}, AMPC_F32), got({B, H, T, T}, AMPC_F32);
  ASSERT_OK(ampc_matmul_fwd(ctx, T(want), T(qt), T(kt)));
  ASSERT_OK(scores(ctx, got, q, k));
  char engine[256];
  ASSERT_OK(ampc_context_engine(ctx, engine, sizeof engine));
  if (std::string(engine).rfind("openblas", 0) == 0)
    EXPECT_EQ(got.bytes, want.bytes);
  else
    expectClose(got.values(), want.values(), 1e-6, 1e-6, "strided");
}

TEST_F(MatmulStrided, ArgumentChecks) {
  Tensor q({B, T, H, D}, AMPC_F32), k({B, T, H, D}, AMPC_F32);
  Tensor s({B, H, T, T}, AMPC_F32);
  // One head too many: the last matrix of q ends past its tensor.
  EXPECT_EQ(ampc_matmul_strided(ctx, T(s), T(q), T(k), B, T * H * D,
                                T * H * D, H * T * T, H + 1, T, T, D, 0, 1,
                                H * D, H * D, T, D, D, T * T / 2),
            AMPC_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(ampc_last_error()).find("the matrices of a reach"),
            std::string::npos)
      << ampc_last_error();
  // y too small for the batch stride.
  EXPECT_EQ(ampc_matmul_strided(ctx, T(s), T(q), T(k), B, T * H * D,
                                T * H * D, H * T * T, H, T, T, D, 0, 1, H * D,
                                H * D, T, D, D, T * T + 1),
            AMPC_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(ampc_last_error()).find("the matrices of y reach"),
            std::string::npos)
      << ampc_last_error();
  // lda below the row length.
  EXPECT_EQ(ampc_matmul_strided(ctx, T(s), T(q), T(k), B, T * H * D,
                                T * H * D, H * T * T, H, T, T, D, 0, 1, D - 1,
                                H * D, T, D, D, T * T),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ampc_last_error()).find("leading dimension too small"),
            std::string::npos)
      << ampc_last_error();
  EXPECT_EQ(ampc_matmul_strided(ctx, T(s), T(q), T(k), -1, 0, 0, 0, H, T, T,
                                D, 0, 1, H * D, H * D, T, D, D, T * T),
            AMPC_ERROR_INVALID_ARGUMENT);
  // Integer tensors are not GEMM operands.
  Tensor ids({B, T, H, D}, AMPC_I32);
  EXPECT_EQ(scores(ctx, s, ids, k), AMPC_ERROR_UNSUPPORTED_DTYPE);
}

} // namespace
