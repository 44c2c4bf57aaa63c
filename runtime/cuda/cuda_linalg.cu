//===- cuda_linalg.cu - GEMMs on CUDA ------------------------------------===//
//
// The GEMM entry point: cuBLASLt (cuda_gemm.cpp) where it takes the dtypes
// and epilogue directly; mixed input dtypes as bf16 tensor-core GEMMs over
// exact bf16 parts (bf16_split.h); otherwise an f32 accumulator, then bias,
// activation and one rounding to C in an epilogue kernel.
//
//===----------------------------------------------------------------------===//
#include "bf16_split.h"
#include "cuda_backend.h"
#include "cuda_walk.cuh"

namespace ampc {
namespace cuda {
namespace {

/// C[b, i, j] (C's dtype, ldc, strideC) = epilogue(acc[b, i, j] + bias[j]).
__global__ void epilogueStoreKernel(Buf c, const float *acc, Buf bias,
                                    int64_t batch, int64_t m, int64_t n,
                                    int64_t ldc, int64_t strideC,
                                    ampc_epilogue epi) {
  GRID_STRIDE(i, batch * m * n) {
    int64_t b = i / (m * n), r = (i / n) % m, j = i % n;
    float v = acc[i];
    if (bias.data)
      v += loadF32(bias.data, bias.dtype, j);
    if (epi == AMPC_EPILOGUE_RELU)
      v = unaryForward(UnaryOp::Relu, v);
    else if (epi == AMPC_EPILOGUE_GELU)
      v = unaryForward(UnaryOp::Gelu, v);
    else if (epi == AMPC_EPILOGUE_GELU_TANH)
      v = unaryForward(UnaryOp::GeluTanh, v);
    storeF32(c.data, c.dtype, b * strideC + r * ldc + j, v);
  }
}

/// acc[b, i, j] = beta * C[b, i, j] (or 0).
__global__ void loadCKernel(float *acc, Buf c, int64_t batch, int64_t m,
                            int64_t n, int64_t ldc, int64_t strideC,
                            float beta) {
  GRID_STRIDE(i, batch * m * n) {
    int64_t b = i / (m * n), r = (i / n) % m, j = i % n;
    acc[i] = beta == 0.0f
                 ? 0.0f
                 : beta * loadF32(c.data, c.dtype, b * strideC + r * ldc + j);
  }
}

/// parts[k * partStride + i] = bf16 part k of x[i] (bf16_split.h), for the
/// first n elements of x (an operand's whole extent, ld gaps included).
__global__ void bf16SplitKernel(Buf x, int64_t n, int nparts,
                                int64_t partStride, uint16_t *parts) {
  GRID_STRIDE(i, n) {
    uint16_t p[3];
    bf16Split(loadF32(x.data, x.dtype, i), nparts, p);
    for (int k = 0; k < nparts; ++k)
      parts[k * partStride + i] = p[k];
  }
}

__global__ void geluWalkKernel(Buf c, Walk w, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t o0, o1, o2;
    walkOffsets(w, i, o0, o1, o2);
    float *p = static_cast<float *>(c.data) + o0;
    *p = unaryForward(UnaryOp::Gelu, *p);
  }
}

} // namespace

/// Mixed input dtypes (cuBLASLt wants one type for A and B): bf16 tensor
/// cores over exact bf16 parts of each operand (bf16_split.h). With a, b
/// split into pa, pb parts, the products of parts i, j with i + j <= 2 are
/// accumulated in f32, smallest first, then bias, activation and one
/// rounding to C. f16 x bf16 keeps every product (exact inputs); with an
/// f32 operand the dropped products are below 2^-23 of |a||b|, under one
/// f32 rounding of the sum.
ampc_status CudaBackend::gemmSplit(const GemmDesc &d) {
  auto extent = [&](int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
    return (d.batch - 1) * stride + (rows - 1) * ld + cols;
  };
  int64_t na = extent(d.transA ? d.k : d.m, d.transA ? d.m : d.k, d.lda,
                      d.strideA),
          nb = extent(d.transB ? d.n : d.k, d.transB ? d.k : d.n, d.ldb,
                      d.strideB);
  int pa = bf16Parts(d.a.dtype), pb = bf16Parts(d.b.dtype);
  // Parts 256 bytes apart at least (pointer alignment for cuBLASLt).
  int64_t sa = (na + 127) & ~int64_t(127), sb = (nb + 127) & ~int64_t(127);
  Temp parts(*this), tacc(*this);
  AMPC_TRY(parts.alloc((pa * sa + pb * sb) * sizeof(uint16_t)));
  uint16_t *ap = static_cast<uint16_t *>(parts.get()), *bp = ap + pa * sa;
  bf16SplitKernel<<<blocksFor(na), kThreads, 0, stream_>>>(d.a, na, pa, sa,
                                                          ap);
  LAUNCH_CHECK("gemm split kernel");
  bf16SplitKernel<<<blocksFor(nb), kThreads, 0, stream_>>>(d.b, nb, pb, sb,
                                                          bp);
  LAUNCH_CHECK("gemm split kernel");
  int64_t total = d.batch * d.m * d.n;
  AMPC_TRY(tacc.alloc(total * sizeof(float)));
  bool first = true;
  if (d.beta != 0.0f) {
    loadCKernel<<<blocksFor(total), kThreads, 0, stream_>>>(
        tacc.f32(), d.c, d.batch, d.m, d.n, d.ldc, d.strideC, d.beta);
    LAUNCH_CHECK("gemm load kernel");
    first = false;
  }
  for (int level = 2; level >= 0; --level)
    for (int i = 0; i < pa; ++i) {
      int j = level - i;
      if (j < 0 || j >= pb)
        continue;
      GemmDesc f = d;
      f.a = Buf{ap + i * sa, AMPC_BF16};
      f.b = Buf{bp + j * sb, AMPC_BF16};
      f.c = Buf{tacc.get(), AMPC_F32};
      f.ldc = d.n;
      f.strideC = d.m * d.n;
      f.beta = first ? 0.0f : 1.0f;
      f.bias = Buf{nullptr, AMPC_F32};
      f.epilogue = AMPC_EPILOGUE_NONE;
      AMPC_TRY(lt.run(f, nullptr));
      first = false;
    }
  epilogueStoreKernel<<<blocksFor(total), kThreads, 0, stream_>>>(
      d.c, tacc.f32(), d.bias, d.batch, d.m, d.n, d.ldc, d.strideC,
      d.epilogue);
  LAUNCH_CHECK("gemm epilogue kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::gemm(const GemmDesc &d) {
  ENTER();
  // An f64 operand: an f64 GEMM (cuda_wide.cu).
  ampc_status st;
  if (gemmWide(d, st))
    return st;
  if (d.a.dtype != d.b.dtype && d.k > 0 && d.m > 0 && d.n > 0)
    return gemmSplit(d);
  GemmDesc g = d;
  Temp tbias(*this), tacc(*this);
  // Exact-erf GELU has no cuBLASLt epilogue: with an f32 C (one rounding
  // either way) the GEMM writes C with its bias and GELU runs in place.
  bool geluAfter = d.epilogue == AMPC_EPILOGUE_GELU && d.c.dtype == AMPC_F32;
  bool direct = d.k > 0 && LtGemm::supports(g.a.dtype, d.c.dtype) &&
                (d.epilogue != AMPC_EPILOGUE_GELU || geluAfter);
  if (direct) {
    if (d.bias.data && d.bias.dtype != d.c.dtype) {
      Buf nb;
      AMPC_TRY(tbias.alloc(d.n * sizeof(float)));
      Walk w;
      w.rank = 1;
      w.shape[0] = d.n;
      w.stride[0][0] = w.stride[1][0] = 1;
      nb = Buf{tbias.get(), d.c.dtype};
      AMPC_TRY(copy(nb, d.bias, w, 1.0f));
      g.bias = nb;
    }
    if (geluAfter)
      g.epilogue = AMPC_EPILOGUE_NONE;
    bool noAlgo = false;
    ampc_status st = lt.run(g, &noAlgo);
    if (st == AMPC_OK && geluAfter)
      return geluInPlace(d);
    if (st == AMPC_OK || !noAlgo)
      return st;
    // No algorithm for this layout / epilogue: the f32 path below.
  }
  // Fallback: f32 accumulator, then bias + activation + one rounding.
  int64_t total = d.batch * d.m * d.n;
  AMPC_TRY(tacc.alloc(total * sizeof(float)));
  // With beta 0 and k > 0 the GEMM writes every accumulator element.
  if (d.beta != 0.0f || d.k == 0) {
    loadCKernel<<<blocksFor(total), kThreads, 0, stream_>>>(
        tacc.f32(), d.c, d.batch, d.m, d.n, d.ldc, d.strideC, d.beta);
    LAUNCH_CHECK("gemm load kernel");
  }
  if (d.k > 0) {
    GemmDesc f = g;
    f.c = Buf{tacc.get(), AMPC_F32};
    f.ldc = d.n;
    f.strideC = d.m * d.n;
    f.beta = d.beta == 0.0f ? 0.0f : 1.0f; // beta already applied
    f.bias = Buf{nullptr, AMPC_F32};
    f.epilogue = AMPC_EPILOGUE_NONE;
    AMPC_TRY(lt.run(f, nullptr));
  }
  epilogueStoreKernel<<<blocksFor(total), kThreads, 0, stream_>>>(
      d.c, tacc.f32(), d.bias, d.batch, d.m, d.n, d.ldc, d.strideC,
      d.epilogue);
  LAUNCH_CHECK("gemm epilogue kernel");
  return AMPC_OK;
}

/// C = gelu(C) over the GEMM's [batch, m, n] block of an f32 C.
ampc_status CudaBackend::geluInPlace(const GemmDesc &d) {
  if (d.ldc == d.n && (d.batch == 1 || d.strideC == d.m * d.n)) {
    int64_t total = d.batch * d.m * d.n;
    if (!launchContig<0>(static_cast<int>(UnaryOp::Gelu), UnaryAttrs{}, d.c,
                         d.c, d.c, total))
      return setError(AMPC_ERROR_DEVICE, "cuda backend: gelu epilogue");
    LAUNCH_CHECK("gelu epilogue kernel");
    return AMPC_OK;
  }
  Walk w;
  w.rank = 3;
  w.shape[0] = d.batch, w.shape[1] = d.m, w.shape[2] = d.n;
  w.stride[0][0] = w.stride[1][0] = d.strideC;
  w.stride[0][1] = w.stride[1][1] = d.ldc;
  w.stride[0][2] = w.stride[1][2] = 1;
  int64_t n = w.numel();
  // binary's walk with b = a: y = gelu(a) through a unary-on-walk copy.
  geluWalkKernel<<<blocksFor(n), kThreads, 0, stream_>>>(d.c, w, n);
  LAUNCH_CHECK("gelu epilogue kernel");
  return AMPC_OK;
}

} // namespace cuda
} // namespace ampc
