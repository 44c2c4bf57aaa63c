//===- api_matmul_strided.cpp - GEMMs on strided views of tensors ---------===//
//
// ampc_matmul_strided: the call the compiler makes for a tg.permuted_matmul
// (transposes and permutes folded into the GEMM, docs/codegen.md). The
// backend's strided-batched GEMM runs once per outer batch index; every matrix
// the call touches is checked to lie inside its tensor first.
//
//===----------------------------------------------------------------------===//
#include "common.h"

using namespace ampc;

namespace {
/// The elements one operand's matrices span: the last one's end.
int64_t span(int64_t outer, int64_t outerStride, int64_t batch,
             int64_t stride, int64_t rows, int64_t cols, int64_t ld) {
  return (outer - 1) * outerStride + (batch - 1) * stride + (rows - 1) * ld +
         cols;
}
} // namespace

extern "C" {

ampc_status ampc_matmul_strided(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *a, ampc_dtype a_dtype, const int64_t *a_shape,
    int32_t a_rank, const void *b, ampc_dtype b_dtype, const int64_t *b_shape,
    int32_t b_rank, int64_t outer, int64_t outer_stride_a,
    int64_t outer_stride_b, int64_t outer_stride_y, int64_t batch, int64_t m,
    int64_t n, int64_t k, int32_t trans_a, int32_t trans_b, int64_t lda,
    int64_t ldb, int64_t ldy, int64_t stride_a, int64_t stride_b,
    int64_t stride_y) {
  const char *fn = "ampc_matmul_strided";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape ys, as, bs;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(y), kFloatDtype, true, ys));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(a), kFloatDtype, true, as));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(b), kFloatDtype, true, bs));
    AMPC_TRY(checkGemmLayout(fn, "ldy",
                             {outer, batch, m, n, k, outer_stride_a,
                              outer_stride_b, outer_stride_y, stride_a,
                              stride_b, stride_y},
                             m, n, k, trans_a != 0, trans_b != 0, lda, ldb,
                             ldy));
    if (outer == 0 || batch == 0 || m == 0 || n == 0)
      return AMPC_OK;
    // Each operand's last matrix must end inside its tensor.
    struct Extent {
      const char *name;
      int64_t end, numel;
    } extents[3] = {
        {"y", span(outer, outer_stride_y, batch, stride_y, m, n, ldy),
         ys.numel()},
        {"a",
         k ? span(outer, outer_stride_a, batch, stride_a, trans_a ? k : m,
                  trans_a ? m : k, lda)
           : 0,
         as.numel()},
        {"b",
         k ? span(outer, outer_stride_b, batch, stride_b, trans_b ? n : k,
                  trans_b ? k : n, ldb)
           : 0,
         bs.numel()}};
    for (const Extent &e : extents)
      if (e.end > e.numel)
        return setError(AMPC_ERROR_SHAPE_MISMATCH,
                        "%s: the matrices of %s reach element %lld of %lld",
                        fn, e.name, static_cast<long long>(e.end),
                        static_cast<long long>(e.numel));
    GemmDesc d;
    d.c = Buf{y, y_dtype};
    d.a = Buf{const_cast<void *>(a), a_dtype};
    d.b = Buf{const_cast<void *>(b), b_dtype};
    d.batch = batch;
    d.m = m;
    d.n = n;
    d.k = k;
    d.transA = trans_a != 0;
    d.transB = trans_b != 0;
    d.lda = lda;
    d.ldb = ldb;
    d.ldc = ldy;
    d.strideA = stride_a;
    d.strideB = stride_b;
    d.strideC = stride_y;
    Backend &be = *ctx->backend;
    for (int64_t o = 0; o < outer; ++o) {
      GemmDesc one = d;
      one.c.data = static_cast<char *>(y) + o * outer_stride_y * dtypeSize(y_dtype);
      one.a.data = static_cast<char *>(const_cast<void *>(a)) +
                   o * outer_stride_a * dtypeSize(a_dtype);
      one.b.data = static_cast<char *>(const_cast<void *>(b)) +
                   o * outer_stride_b * dtypeSize(b_dtype);
      AMPC_TRY(be.gemm(one));
    }
    return AMPC_OK;
  });
}

} // extern "C"
