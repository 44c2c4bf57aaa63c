//===- api_matmul_add.cpp - The GEMM-plus-add family ----------*- C++ -*-===//
//
// Entry points of addmm, baddbmm, addbmm, addmv and addr (PyTorch's fp16
// autocast list; the ops of TGMatmulOps.td). Each is one GEMM (the backend's
// strided-batched GEMM: sgemm on the CPU, cuBLASLt on CUDA) whose C operand
// first holds `beta * c`, accumulated with beta 1 in f32. With an f64
// operand the product is an f64 GEMM (dgemm on the CPU) into f64 scratch,
// then alpha * product + beta * c in f64 with alpha and beta exact (dgemm
// on the CPU, cuBLASLt in f64 on CUDA).
//
//===----------------------------------------------------------------------===//
#include "composed.h"

using namespace ampc;

namespace {

enum class AddGemmKind { Addmm, Baddbmm, Addbmm, Addmv, Addr };

Buf offsetElems(Buf b, int64_t elems) {
  return Buf{static_cast<char *>(b.data) + elems * dtypeSize(b.dtype), b.dtype};
}

Shape makeShape(std::initializer_list<int64_t> dims) {
  Shape s;
  s.rank = 0;
  for (int64_t d : dims)
    s.d[s.rank++] = d;
  return s;
}

ampc_status rankError(const char *fn, const char *what, const Shape &s,
                      int rank) {
  return setError(AMPC_ERROR_SHAPE_MISMATCH, "%s: %s must be %d-D, got %s", fn,
                  what, rank, s.str().c_str());
}

ampc_status addGemm(const char *fn, AddGemmKind kind, ampc_context ctx,
                    const TensorArg &y, const TensorArg &c, const TensorArg &a,
                    const TensorArg &b, double beta, double alpha) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ys, cs, as, bs;
  AMPC_TRY(parseTensor(fn, y, kFloatDtype, true, ys));
  AMPC_TRY(parseTensor(fn, c, kFloatDtype, true, cs));
  AMPC_TRY(parseTensor(fn, a, kFloatDtype, true, as));
  AMPC_TRY(parseTensor(fn, b, kFloatDtype, true, bs));
  // The GEMM of the product: batch, m, n, k, and the layouts of a and b.
  int64_t batch = 1, m = 0, n = 0, k = 0, lda = 0, ldb = 0;
  bool sumBatch = false;
  Shape want;
  switch (kind) {
  case AddGemmKind::Addmm:
    if (as.rank != 2 || bs.rank != 2)
      return rankError(fn, as.rank != 2 ? "a" : "b", as.rank != 2 ? as : bs, 2);
    m = as.d[0], k = as.d[1], n = bs.d[1];
    if (bs.d[0] != k)
      return setError(AMPC_ERROR_SHAPE_MISMATCH,
                      "%s: inner dims differ: %s @ %s", fn, as.str().c_str(),
                      bs.str().c_str());
    want = makeShape({m, n});
    lda = k, ldb = n;
    break;
  case AddGemmKind::Baddbmm:
  case AddGemmKind::Addbmm:
    if (as.rank != 3 || bs.rank != 3)
      return rankError(fn, as.rank != 3 ? "a" : "b", as.rank != 3 ? as : bs, 3);
    batch = as.d[0], m = as.d[1], k = as.d[2], n = bs.d[2];
    if (bs.d[0] != batch || bs.d[1] != k)
      return setError(AMPC_ERROR_SHAPE_MISMATCH,
                      "%s: batched product %s @ %s does not fit", fn,
                      as.str().c_str(), bs.str().c_str());
    sumBatch = kind == AddGemmKind::Addbmm;
    want = sumBatch ? makeShape({m, n}) : makeShape({batch, m, n});
    lda = k, ldb = n;
    break;
  case AddGemmKind::Addmv:
    if (as.rank != 2 || bs.rank != 1)
      return as.rank != 2 ? rankError(fn, "a", as, 2)
                          : rankError(fn, "v", bs, 1);
    m = as.d[0], k = as.d[1], n = 1;
    if (bs.d[0] != k)
      return setError(AMPC_ERROR_SHAPE_MISMATCH,
                      "%s: inner dims differ: %s @ %s", fn, as.str().c_str(),
                      bs.str().c_str());
    want = makeShape({m});
    lda = k, ldb = 1;
    break;
  case AddGemmKind::Addr:
    if (as.rank != 1 || bs.rank != 1)
      return rankError(fn, as.rank != 1 ? "u" : "v", as.rank != 1 ? as : bs, 1);
    m = as.d[0], n = bs.d[0], k = 1;
    want = makeShape({m, n});
    lda = 1, ldb = n;
    break;
  }
  if (ys != want)
    return shapeError(fn, "y", ys, want);
  // c broadcasts to y's shape (right-aligned, size-1 dims stretched).
  bool fits = cs.rank <= ys.rank;
  for (int i = 0; fits && i < cs.rank; ++i) {
    int64_t cd = cs.d[i], yd = ys.d[ys.rank - cs.rank + i];
    fits = cd == yd || cd == 1;
  }
  if (!fits)
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: c %s does not broadcast to the result %s", fn,
                    cs.str().c_str(), ys.str().c_str());
  int64_t numel = ys.numel();
  if (numel == 0)
    return AMPC_OK;
  Backend &be = *ctx->backend;
  bool wide = y.dtype == AMPC_F64 || c.dtype == AMPC_F64 ||
              a.dtype == AMPC_F64 || b.dtype == AMPC_F64;
  // The accumulator (f32, f64 when wide): y itself when y has its type.
  ampc_dtype accType = wide ? AMPC_F64 : AMPC_F32;
  Temp accTemp(be);
  Buf acc{y.data ? const_cast<void *>(y.data) : nullptr, accType};
  if (y.dtype != accType) {
    AMPC_TRY(accTemp.alloc(numel * dtypeSize(accType)));
    acc = Buf{accTemp.get(), accType};
  }
  if (beta != 0.0 && !wide)
    AMPC_TRY(broadcastTo(be, acc, ys, c.buf(), cs, static_cast<float>(beta)));
  else // PyTorch does not read c when beta is 0 (NaN in it stays out); f64
       // adds beta * c after the product.
    AMPC_TRY(be.fill(acc, numel, 0.0));
  if (k > 0 && batch > 0) {
    GemmDesc d;
    d.c = acc;
    d.a = a.buf();
    d.b = b.buf();
    d.batch = sumBatch ? 1 : batch;
    d.m = m;
    d.n = n;
    d.k = k;
    d.transA = d.transB = false;
    d.lda = lda;
    d.ldb = ldb;
    d.ldc = n;
    d.strideA = batch > 1 ? m * k : 0;
    d.strideB = batch > 1 ? k * n : 0;
    d.strideC = sumBatch ? 0 : m * n;
    d.alpha = wide ? 1.0f : static_cast<float>(alpha); // f64: scaled below
    d.beta = 1.0f;
    if (!sumBatch) {
      AMPC_TRY(be.gemm(d));
    } else {
      // addbmm: every batch entry accumulates into the same C.
      d.strideA = d.strideB = 0;
      for (int64_t i = 0; i < batch; ++i) {
        d.a = offsetElems(a.buf(), i * m * k);
        d.b = offsetElems(b.buf(), i * k * n);
        AMPC_TRY(be.gemm(d));
      }
    }
  }
  if (wide) {
    // y = alpha * product + beta * c in f64, alpha and beta as given.
    Kit kit(be);
    kit.scratch = AMPC_F64;
    Shape one; // a scalar, broadcast
    Buf s;
    if (alpha != 1.0) {
      AMPC_TRY(kit.scalar(alpha, s));
      AMPC_TRY(kit.bin(BinaryOp::Mul, acc, ys, acc, ys, s, one));
    }
    if (beta != 0.0) {
      Buf cb;
      AMPC_TRY(kit.f32(numel, cb));
      AMPC_TRY(broadcastTo(be, cb, ys, c.buf(), cs, 1.0f));
      if (beta != 1.0) {
        AMPC_TRY(kit.scalar(beta, s));
        AMPC_TRY(kit.bin(BinaryOp::Mul, cb, ys, cb, ys, s, one));
      }
      AMPC_TRY(kit.bin(BinaryOp::Add, acc, ys, acc, ys, cb, ys));
    }
  }
  if (acc.data != y.data)
    return sumToShape(be, y.buf(), ys, acc, ys); // the one rounding
  return AMPC_OK;
}

} // namespace

extern "C" {

#define AMPC_ADD_GEMM_ENTRY(NAME, KIND)                                        \
  ampc_status ampc_##NAME##_fwd(                                               \
      ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,   \
      int32_t y_rank, const void *c, ampc_dtype c_dtype,                       \
      const int64_t *c_shape, int32_t c_rank, const void *a,                   \
      ampc_dtype a_dtype, const int64_t *a_shape, int32_t a_rank,              \
      const void *b, ampc_dtype b_dtype, const int64_t *b_shape,               \
      int32_t b_rank, double beta, double alpha) {                             \
    const char *fn = "ampc_" #NAME "_fwd";                                     \
    return guard(fn, [&] {                                                     \
      return addGemm(fn, AddGemmKind::KIND, ctx, AMPC_TENSOR(y),               \
                     AMPC_TENSOR(c), AMPC_TENSOR(a), AMPC_TENSOR(b), beta,     \
                     alpha);                                                   \
    });                                                                        \
  }
AMPC_ADD_GEMM_ENTRY(addmm, Addmm)
AMPC_ADD_GEMM_ENTRY(baddbmm, Baddbmm)
AMPC_ADD_GEMM_ENTRY(addbmm, Addbmm)
AMPC_ADD_GEMM_ENTRY(addmv, Addmv)
AMPC_ADD_GEMM_ENTRY(addr, Addr)
#undef AMPC_ADD_GEMM_ENTRY

} // extern "C"
