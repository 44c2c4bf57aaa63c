//===- cuda_exact.cu - Kernels compiled without fused multiply-add ---------===//
//
// See cuda_exact.h: random initialisation, the scale update and the
// multi-tensor unscale / clip / SGD / AdamW kernels, which evaluate the
// CPU's formulas of src/scalar_ops.h and src/philox.h and must round every
// operation as the CPU does. This file alone is built with --fmad=false.
//
//===----------------------------------------------------------------------===//
#include "../src/low_update.h"
#include "../src/philox.h"
#include "cuda_device.cuh"
#include "cuda_exact.h"

#include <math.h>

namespace ampc {
namespace cuda {
namespace {

__global__ void randomKernel(Buf y, int64_t n, uint64_t seed, uint64_t offset,
                             bool normal, double p0, double p1) {
  GRID_STRIDE(i, n) {
    double v = normal ? philoxNormal(seed, offset, i, p0, p1)
                      : philoxUniform(seed, offset, i, p0, p1);
    // f64 keeps the double (as the CPU); the rest round it once.
    if (y.dtype == AMPC_F64)
      storeF64(y.data, y.dtype, i, v);
    else
      storeF32(y.data, y.dtype, i, static_cast<float>(v));
  }
}


__global__ void storeFlagKernel(Buf out, const float *flag) {
  storeF32(out.data, out.dtype, 0, *flag != 0.0f ? 1.0f : 0.0f);
}

__global__ void updateScaleKernel(float *scale, int32_t *growthTracker,
                                  int32_t *hysteresisLeft, Buf foundInf,
                                  float growthFactor, float backoffFactor,
                                  int32_t growthInterval, int32_t hysteresis,
                                  float minScale, float maxScale) {
  updateScaleState(*scale, *growthTracker, *hysteresisLeft,
                   deviceFlag(foundInf), growthFactor, backoffFactor,
                   growthInterval, hysteresis, minScale, maxScale);
}

__global__ void adamwStepKernel(int32_t *step, double lr, double beta1,
                                double beta2, double eps, double weightDecay,
                                AdamwScalars *out, Buf foundInf,
                                const float *lrScale) {
  if (deviceFlag(foundInf))
    return;
  if (lrScale)
    lr = lr * static_cast<double>(*lrScale);
  *step += 1;
  *out = adamwScalars(lr, beta1, beta2, eps, weightDecay, *step);
}

__global__ void lrScheduleKernel(float *factor, int32_t *step, LrSchedule s,
                                 Buf foundInf) {
  *factor = static_cast<float>(lrScheduleFactor(s, *step));
  if (!deviceFlag(foundInf))
    *step += 1;
}

__device__ __forceinline__ int mtTensor(const MtChunk &c, int32_t b) {
  int lo = 0, hi = c.count - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (c.blockStart[mid] <= b)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

#define MT_BEGIN(c)                                                            \
  int t_ = mtTensor(c, blockIdx.x);                                            \
  int64_t begin_ =                                                             \
      static_cast<int64_t>(blockIdx.x - (c).blockStart[t_]) * kMtPerBlock;     \
  int64_t end_ = begin_ + kMtPerBlock < (c).numel[t_] ? begin_ + kMtPerBlock   \
                                                      : (c).numel[t_];         \
  Buf p_{(c).data[t_], static_cast<ampc_dtype>((c).dtype[t_])};                \
  for (int64_t i = begin_ + threadIdx.x; i < end_; i += blockDim.x)

__global__ void mtUnscaleKernel(MtChunk c, float *foundInf,
                                const float *scale) {
  float inv = scale ? 1.0f / *scale : 1.0f;
  bool bad = false;
  MT_BEGIN(c) {
    float v = loadF32(p_.data, p_.dtype, i);
    bad |= !isFinite(v);
    if (inv != 1.0f)
      storeF32(p_.data, p_.dtype, i, v * inv);
  }
  if (bad)
    *foundInf = 1.0f; // every writer stores the same value
}

/// One f64 partial sum of squares per block (slot = global block index).
__global__ void mtSumSquaresKernel(MtChunk c, double *partials,
                                   Buf foundInf) {
  __shared__ double warpSums[kThreads / 32];
  if (deviceFlag(foundInf))
    return;
  double s = 0;
  MT_BEGIN(c) {
    double v = loadF32(p_.data, p_.dtype, i);
    s += v * v;
  }
  s = warpSumD(s);
  if ((threadIdx.x & 31) == 0)
    warpSums[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0;
    for (int w = 0; w < kThreads / 32; ++w)
      t += warpSums[w];
    partials[blockIdx.x] = t;
  }
}

/// The clip coefficient from all partials: one block, fixed tree order.
__global__ void clipCoefTreeKernel(const double *partials, int64_t count,
                                   float maxNorm, float *coef,
                                   float *totalNorm, Buf foundInf) {
  __shared__ double sh[kThreads / 32];
  if (deviceFlag(foundInf))
    return;
  double s = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    s += partials[i];
  s = warpSumD(s);
  if ((threadIdx.x & 31) == 0)
    sh[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0;
    for (int w = 0; w < kThreads / 32; ++w)
      t += sh[w];
    float total = static_cast<float>(sqrt(t));
    *coef = clipCoefficient(total, maxNorm);
    if (totalNorm)
      *totalNorm = total;
  }
}

__global__ void mtScaleKernel(MtChunk c, const float *coef, Buf foundInf) {
  if (deviceFlag(foundInf))
    return;
  float k = *coef;
  MT_BEGIN(c) {
    storeF32(p_.data, p_.dtype, i, loadF32(p_.data, p_.dtype, i) * k);
  }
}

__global__ void mtSgdKernel(MtChunk c, SgdScalars s, Buf foundInf) {
  if (deviceFlag(foundInf))
    return;
  if (s.lrScale)
    s.lr = s.lr * *s.lrScale;
  MT_BEGIN(c) {
    float pv = loadF32(p_.data, p_.dtype, i);
    float *buf = c.aux1[t_] ? static_cast<float *>(c.aux1[t_]) + i : nullptr;
    sgdElement(pv,
               loadF32(c.aux0[t_], static_cast<ampc_dtype>(c.auxDtype[t_]), i),
               buf, s);
    storeF32(p_.data, p_.dtype, i, pv);
    if (c.model[t_])
      storeF32(c.model[t_], static_cast<ampc_dtype>(c.modelDtype[t_]), i, pv);
  }
}

__global__ void mtAdamwKernel(MtChunk c, const AdamwScalars *s,
                              Buf foundInf) {
  if (deviceFlag(foundInf))
    return;
  AdamwScalars sc = *s;
  MT_BEGIN(c) {
    float pv = loadF32(p_.data, p_.dtype, i);
    adamwElement(
        pv, loadF32(c.aux0[t_], static_cast<ampc_dtype>(c.auxDtype[t_]), i),
        static_cast<float *>(c.aux1[t_])[i],
        static_cast<float *>(c.aux2[t_])[i], sc);
    storeF32(p_.data, p_.dtype, i, pv);
    if (c.model[t_])
      storeF32(c.model[t_], static_cast<ampc_dtype>(c.modelDtype[t_]), i, pv);
  }
}

/// The key of tensor t_ of a chunk under MtLow.
__device__ LowKey lowKey(const MtChunk &c, int t, const MtLow &low) {
  LowKey k;
  k.mode = low.mode;
  k.seed = low.seed;
  k.counter = low.counter ? static_cast<uint32_t>(*low.counter) : 0u;
  k.param = low.paramBase + c.index[t];
  return k;
}

__global__ void mtSgdLowKernel(MtChunk c, SgdScalars s, Buf foundInf,
                               MtLow low) {
  if (deviceFlag(foundInf))
    return;
  if (s.lrScale)
    s.lr = s.lr * *s.lrScale;
  MT_BEGIN(c) {
    LowKey key = lowKey(c, t_, low);
    ampc_dtype sd = static_cast<ampc_dtype>(c.stateDtype[t_]);
    float pv = loadF32(p_.data, p_.dtype, i);
    float m = c.aux1[t_] ? loadF32(c.aux1[t_], sd, i) : 0.0f;
    sgdElement(pv,
               loadF32(c.aux0[t_], static_cast<ampc_dtype>(c.auxDtype[t_]), i),
               c.aux1[t_] ? &m : nullptr, s);
    bool low16 = p_.dtype != AMPC_F32;
    writeParamElement(p_.data, p_.dtype, low16 ? c.model[t_] : nullptr, i, pv,
                      key);
    if (c.aux1[t_])
      writeStateElement(c.aux1[t_], sd, i, m, kLowStreamState1, key);
    if (!low16 && c.model[t_])
      storeF32(c.model[t_], static_cast<ampc_dtype>(c.modelDtype[t_]), i, pv);
  }
}

__global__ void mtAdamwLowKernel(MtChunk c, const AdamwScalars *s,
                                 Buf foundInf, MtLow low) {
  if (deviceFlag(foundInf))
    return;
  AdamwScalars sc = *s;
  MT_BEGIN(c) {
    LowKey key = lowKey(c, t_, low);
    ampc_dtype sd = static_cast<ampc_dtype>(c.stateDtype[t_]);
    float pv = loadF32(p_.data, p_.dtype, i);
    float m = loadF32(c.aux1[t_], sd, i), v = loadF32(c.aux2[t_], sd, i);
    adamwElement(
        pv, loadF32(c.aux0[t_], static_cast<ampc_dtype>(c.auxDtype[t_]), i),
        m, v, sc);
    bool low16 = p_.dtype != AMPC_F32;
    writeParamElement(p_.data, p_.dtype, low16 ? c.model[t_] : nullptr, i, pv,
                      key);
    writeStateElement(c.aux1[t_], sd, i, m, kLowStreamState1, key);
    writeStateElement(c.aux2[t_], sd, i, v, kLowStreamState2, key);
    if (!low16 && c.model[t_])
      storeF32(c.model[t_], static_cast<ampc_dtype>(c.modelDtype[t_]), i, pv);
  }
}

__global__ void countUpdateKernel(int32_t *counter, Buf foundInf) {
  if (!deviceFlag(foundInf))
    *counter += 1;
}

} // namespace

cudaError_t launchRandom(cudaStream_t s, Buf y, int64_t n, uint64_t seed,
                         uint64_t offset, bool normal, double p0, double p1) {
  randomKernel<<<blocksFor(n), kThreads, 0, s>>>(y, n, seed, offset, normal,
                                                 p0, p1);
  return cudaGetLastError();
}
cudaError_t launchStoreFlag(cudaStream_t s, Buf out, const float *flag) {
  storeFlagKernel<<<1, 1, 0, s>>>(out, flag);
  return cudaGetLastError();
}
cudaError_t launchUpdateScale(cudaStream_t s, float *scale,
                              int32_t *growthTracker, int32_t *hysteresisLeft,
                              Buf foundInf, float growthFactor,
                              float backoffFactor, int32_t growthInterval,
                              int32_t hysteresis, float minScale,
                              float maxScale) {
  updateScaleKernel<<<1, 1, 0, s>>>(scale, growthTracker, hysteresisLeft,
                                    foundInf, growthFactor, backoffFactor,
                                    growthInterval, hysteresis, minScale,
                                    maxScale);
  return cudaGetLastError();
}
cudaError_t launchAdamwStep(cudaStream_t s, int32_t *step, double lr,
                            double beta1, double beta2, double eps,
                            double weightDecay, AdamwScalars *out,
                            Buf foundInf, const float *lrScale) {
  adamwStepKernel<<<1, 1, 0, s>>>(step, lr, beta1, beta2, eps, weightDecay,
                                  out, foundInf, lrScale);
  return cudaGetLastError();
}
cudaError_t launchLrSchedule(cudaStream_t s, float *factor, int32_t *step,
                             const LrSchedule &sched, Buf foundInf) {
  lrScheduleKernel<<<1, 1, 0, s>>>(factor, step, sched, foundInf);
  return cudaGetLastError();
}
cudaError_t launchUnscale(cudaStream_t s, const MtChunk &c, int32_t blocks,
                          float *flag, const float *scale) {
  mtUnscaleKernel<<<blocks, kThreads, 0, s>>>(c, flag, scale);
  return cudaGetLastError();
}
cudaError_t launchSumSquares(cudaStream_t s, const MtChunk &c, int32_t blocks,
                             double *partials, Buf foundInf) {
  mtSumSquaresKernel<<<blocks, kThreads, 0, s>>>(c, partials, foundInf);
  return cudaGetLastError();
}
cudaError_t launchClipCoef(cudaStream_t s, const double *partials,
                           int64_t count, float maxNorm, float *coef,
                           float *totalNorm, Buf foundInf) {
  clipCoefTreeKernel<<<1, kThreads, 0, s>>>(partials, count, maxNorm, coef,
                                            totalNorm, foundInf);
  return cudaGetLastError();
}
cudaError_t launchScale(cudaStream_t s, const MtChunk &c, int32_t blocks,
                        const float *coef, Buf foundInf) {
  mtScaleKernel<<<blocks, kThreads, 0, s>>>(c, coef, foundInf);
  return cudaGetLastError();
}
cudaError_t launchSgd(cudaStream_t s, const MtChunk &c, int32_t blocks,
                      const SgdScalars &sc, Buf foundInf) {
  mtSgdKernel<<<blocks, kThreads, 0, s>>>(c, sc, foundInf);
  return cudaGetLastError();
}
cudaError_t launchAdamw(cudaStream_t s, const MtChunk &c, int32_t blocks,
                        const AdamwScalars *sc, Buf foundInf) {
  mtAdamwKernel<<<blocks, kThreads, 0, s>>>(c, sc, foundInf);
  return cudaGetLastError();
}

cudaError_t launchSgdLow(cudaStream_t s, const MtChunk &c, int32_t blocks,
                         const SgdScalars &sc, Buf foundInf, const MtLow &low) {
  mtSgdLowKernel<<<blocks, kThreads, 0, s>>>(c, sc, foundInf, low);
  return cudaGetLastError();
}
cudaError_t launchAdamwLow(cudaStream_t s, const MtChunk &c, int32_t blocks,
                           const AdamwScalars *sc, Buf foundInf,
                           const MtLow &low) {
  mtAdamwLowKernel<<<blocks, kThreads, 0, s>>>(c, sc, foundInf, low);
  return cudaGetLastError();
}
cudaError_t launchCountUpdate(cudaStream_t s, int32_t *counter,
                              Buf foundInf) {
  countUpdateKernel<<<1, 1, 0, s>>>(counter, foundInf);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace ampc
