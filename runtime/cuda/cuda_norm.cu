//===- cuda_norm.cu - Norms on CUDA --------------------------------------===//
//
// Layer norm and RMS norm: row statistics in f32 by one warp per row (read
// once from registers when a row fits), then one thread per element; their
// parameter gradients are column sums (cuda_reduction.cu).
//
// Batch norm: the per-channel and per-element formulas are the CPU
// backend's (runtime/src/norm_ops.h). Batch norm runs one block per channel
// for the statistics (each thread sums a stride of the channel's N * H * W
// values in f64, then the block adds the partial sums in a fixed tree order,
// so results do not depend on timing) and one thread per element for y and
// dx.
//
//===----------------------------------------------------------------------===//
#include "../src/norm_ops.h"
#include "cuda_backend.h"

#include <math.h>

namespace ampc {
namespace cuda {
namespace {

// ------------------------------------------------------ layer and RMS norm --

// The row kernels take their dtypes as template values (loadAs/storeAs,
// cuda_device.cuh): the same arithmetic, without a dtype switch per element.

/// Row statistics (mean, rstd) with one warp per row, two passes in f32.
template <int XD>
__global__ void rowStatsKernel(bool rms, Buf x, int64_t rows, int64_t cols,
                               float eps, float *mean, float *rstd) {
  WARP_LOOP(r, rows) {
    float s = 0;
    if (!rms) {
      for (int64_t j = lane; j < cols; j += 32)
        s += loadAs<XD>(x, r * cols + j);
      s = warpSum(s) / static_cast<float>(cols);
    }
    float v = 0;
    for (int64_t j = lane; j < cols; j += 32) {
      float d = loadAs<XD>(x, r * cols + j) - s;
      v += d * d;
    }
    v = warpSum(v) / static_cast<float>(cols);
    if (lane == 0) {
      mean[r] = s;
      rstd[r] = 1.0f / sqrtf(v + eps);
    }
  }
}

__global__ void normKernel(Buf y, Buf x, Buf w, Buf b, int64_t rows,
                           int64_t cols, const float *mean, const float *rstd) {
  GRID_STRIDE(i, rows * cols) {
    int64_t r = i / cols, j = i % cols;
    float v = (loadF32(x.data, x.dtype, i) - mean[r]) * rstd[r];
    if (w.data)
      v *= loadF32(w.data, w.dtype, j);
    if (b.data)
      v += loadF32(b.data, b.dtype, j);
    storeF32(y.data, y.dtype, i, v);
  }
}

template <int DYD, int XD>
__global__ void normBwdDxKernel(bool rms, Buf dx, Buf dy, Buf x, Buf w,
                                int64_t rows, int64_t cols, const float *mean,
                                const float *rstd) {
  WARP_LOOP(r, rows) {
    float mu = mean[r], rs = rstd[r], sg = 0, sgx = 0;
    for (int64_t j = lane; j < cols; j += 32) {
      int64_t i = r * cols + j;
      float g = loadAs<DYD>(dy, i);
      if (w.data)
        g *= loadF32(w.data, w.dtype, j);
      float xh = (loadAs<XD>(x, i) - mu) * rs;
      sg += g;
      sgx += g * xh;
    }
    float meanG = rms ? 0.0f : warpSum(sg) / static_cast<float>(cols);
    float meanGX = warpSum(sgx) / static_cast<float>(cols);
    for (int64_t j = lane; j < cols; j += 32) {
      int64_t i = r * cols + j;
      float g = loadAs<DYD>(dy, i);
      if (w.data)
        g *= loadF32(w.data, w.dtype, j);
      float xh = (loadAs<XD>(x, i) - mu) * rs;
      storeF32(dx.data, dx.dtype, i, rs * (g - meanG - xh * meanGX));
    }
  }
}

/// Layer / RMS norm forward, one warp per row, x read once: the same
/// two-pass f32 statistics as rowStatsKernel, from registers.
/// WD: the dtype of w and b (f32, or kAnyDtype where they differ or are
/// 16-bit).
template <int XD, int YD, int WD>
__global__ void normFusedKernel(bool rms, Buf y, Buf x, Buf w, Buf b,
                                int64_t rows, int64_t cols, float eps) {
  WARP_LOOP(r, rows) {
    float v[kRowRegs];
    float s = 0;
#pragma unroll
    for (int k = 0; k < kRowRegs; ++k) {
      int64_t j = lane + 32 * k;
      v[k] = j < cols ? loadAs<XD>(x, r * cols + j) : 0.0f;
      if (!rms && j < cols)
        s += v[k];
    }
    if (!rms)
      s = warpSum(s) / static_cast<float>(cols);
    float q = 0;
#pragma unroll
    for (int k = 0; k < kRowRegs; ++k) {
      int64_t j = lane + 32 * k;
      if (j < cols) {
        float d = v[k] - s;
        q += d * d;
      }
    }
    q = warpSum(q) / static_cast<float>(cols);
    float rs = 1.0f / sqrtf(q + eps);
#pragma unroll
    for (int k = 0; k < kRowRegs; ++k) {
      int64_t j = lane + 32 * k;
      if (j < cols) {
        float o = (v[k] - s) * rs;
        if (w.data)
          o *= loadAs<WD>(w, j);
        if (b.data)
          o += loadAs<WD>(b, j);
        storeAs<YD>(y, r * cols + j, o);
      }
    }
  }
}

// ------------------------------------------------------------- batch norm --

constexpr int kBnThreads = 256;

/// The sum of every thread's `v` over the block, added in a fixed tree
/// order; every thread gets it.
__device__ double bnBlockSum(double v) {
  __shared__ double part[kBnThreads];
  part[threadIdx.x] = v;
  __syncthreads();
  for (int half = kBnThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  double sum = part[0];
  __syncthreads();
  return sum;
}

/// Value k (of N * inner) of channel `ch`.
__device__ float bnLoad(Buf t, const BnGeom &g, int64_t ch, int64_t k) {
  return loadF32(t.data, t.dtype, g.at(k / g.inner, ch, k % g.inner));
}

/// The batch mean and biased variance of channel `ch` (bnBatchStats: two
/// passes in f64), summed by the whole block.
__device__ void bnBlockBatchStats(Buf x, const BnGeom &g, int64_t ch,
                                  double &mean, double &var) {
  int64_t m = g.perChannel();
  double s = 0.0;
  for (int64_t k = threadIdx.x; k < m; k += kBnThreads)
    s += bnLoad(x, g, ch, k);
  mean = bnBlockSum(s) / static_cast<double>(m);
  double s2 = 0.0;
  for (int64_t k = threadIdx.x; k < m; k += kBnThreads) {
    double d = bnLoad(x, g, ch, k) - mean;
    s2 += d * d;
  }
  var = bnBlockSum(s2) / static_cast<double>(m);
}

/// bnChannelStats with the block's sums.
__device__ void bnBlockChannelStats(Buf x, Buf rm, Buf rv, bool training,
                                    const BnGeom &g, int64_t ch, float eps,
                                    float &mean, float &invstd) {
  bnChannelStatsWith(
      [&](double &mu, double &var) { bnBlockBatchStats(x, g, ch, mu, var); },
      rm, rv, training, ch, eps, mean, invstd);
}

/// One block per channel: stat[3 ch ..] = mean, scale, shift of y.
__global__ void batchNormStatsKernel(float *stat, Buf x, Buf w, Buf b, Buf rm,
                                     Buf rv, bool training, BnGeom g,
                                     float eps) {
  int64_t ch = blockIdx.x;
  float mean, invstd;
  bnBlockChannelStats(x, rm, rv, training, g, ch, eps, mean, invstd);
  if (threadIdx.x == 0) {
    stat[3 * ch] = mean;
    stat[3 * ch + 1] = invstd * loadF32(w.data, w.dtype, ch);
    stat[3 * ch + 2] = loadF32(b.data, b.dtype, ch);
  }
}

__global__ void batchNormApplyKernel(Buf y, Buf x, const float *stat,
                                     BnGeom g) {
  GRID_STRIDE(i, g.n * g.c * g.inner) {
    int64_t ch = (i / g.inner) % g.c;
    storeF32(y.data, y.dtype, i,
             bnNormalised(loadF32(x.data, x.dtype, i), stat[3 * ch],
                          stat[3 * ch + 1], stat[3 * ch + 2]));
  }
}

/// One block per channel: dw, db (where asked) and stat[4 ch ..] = mean,
/// invstd, mean(dy), mean(dy * xhat) for dx (bnBackwardChannel).
__global__ void batchNormBwdStatsKernel(float *stat, Buf dw, Buf db, Buf dy,
                                        Buf x, Buf rm, Buf rv, bool training,
                                        BnGeom g, float eps) {
  int64_t ch = blockIdx.x;
  float mean, invstd;
  bnBlockChannelStats(x, rm, rv, training, g, ch, eps, mean, invstd);
  double sumDy = 0.0, sumDyX = 0.0;
  for (int64_t k = threadIdx.x; k < g.perChannel(); k += kBnThreads) {
    double d = bnLoad(dy, g, ch, k);
    sumDy += d;
    sumDyX += d * ((bnLoad(x, g, ch, k) - mean) * invstd);
  }
  sumDy = bnBlockSum(sumDy);
  sumDyX = bnBlockSum(sumDyX);
  if (threadIdx.x != 0)
    return;
  if (dw.data)
    storeF32(dw.data, dw.dtype, ch, static_cast<float>(sumDyX));
  if (db.data)
    storeF32(db.data, db.dtype, ch, static_cast<float>(sumDy));
  double m = g.perChannel();
  stat[4 * ch] = mean;
  stat[4 * ch + 1] = invstd;
  stat[4 * ch + 2] = static_cast<float>(sumDy / m);
  stat[4 * ch + 3] = static_cast<float>(sumDyX / m);
}

__global__ void batchNormBwdApplyKernel(Buf dx, Buf dy, Buf x, Buf w,
                                        const float *stat, bool training,
                                        BnGeom g) {
  GRID_STRIDE(i, g.n * g.c * g.inner) {
    int64_t ch = (i / g.inner) % g.c;
    const float *s = stat + 4 * ch;
    storeF32(dx.data, dx.dtype, i,
             bnGradInput(loadF32(dy.data, dy.dtype, i),
                         loadF32(x.data, x.dtype, i), s[0], s[1],
                         loadF32(w.data, w.dtype, ch), s[2], s[3], training));
  }
}

/// One block per channel (bnUpdateChannel).
__global__ void batchNormUpdateKernel(Buf newMean, Buf newVar, Buf x, Buf rm,
                                      Buf rv, BnGeom g, float momentum) {
  int64_t ch = blockIdx.x;
  double mean, var;
  bnBlockBatchStats(x, g, ch, mean, var);
  if (threadIdx.x == 0)
    bnUpdateFrom(newMean, newVar, rm, rv, ch, mean, var, g.perChannel(),
                 momentum);
}

} // namespace

ampc_status CudaBackend::stats(bool rms, Buf x, int64_t rows, int64_t cols,
                               float eps, Temp &t) {
  AMPC_TRY(t.alloc(2 * rows * sizeof(float)));
  withRowDtype(x.dtype, [&](auto xd) {
    rowStatsKernel<decltype(xd)::value>
        <<<warpBlocks(rows), kThreads, 0, stream_>>>(rms, x, rows, cols, eps,
                                                     t.f32(), t.f32() + rows);
  });
  LAUNCH_CHECK("row statistics kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::norm(bool rms, Buf y, Buf x, Buf w, Buf b,
                              int64_t rows, int64_t cols, float eps) {
  ENTER();
  ampc_status st;
  if (normWide(rms, y, x, w, b, rows, cols, eps, st))
    return st;
  if (cols <= 32 * kRowRegs) {
    // 19 instantiations: x and y f32, f16 or bf16 with f32 or other
    // parameters, and one reading every dtype at run time.
    bool f32Params = (!w.data || w.dtype == AMPC_F32) &&
                     (!b.data || b.dtype == AMPC_F32);
    withRowDtype(x.dtype, [&](auto xd) {
      withRowDtype(y.dtype, [&](auto yd) {
        constexpr int XD = decltype(xd)::value, YD = decltype(yd)::value;
        if constexpr (XD != kAnyDtype && YD != kAnyDtype) {
          if (f32Params) {
            normFusedKernel<XD, YD, AMPC_F32>
                <<<warpBlocks(rows), kThreads, 0, stream_>>>(rms, y, x, w, b,
                                                             rows, cols, eps);
            return;
          }
          normFusedKernel<XD, YD, kAnyDtype>
              <<<warpBlocks(rows), kThreads, 0, stream_>>>(rms, y, x, w, b,
                                                           rows, cols, eps);
          return;
        }
        normFusedKernel<kAnyDtype, kAnyDtype, kAnyDtype>
            <<<warpBlocks(rows), kThreads, 0, stream_>>>(rms, y, x, w, b, rows,
                                                         cols, eps);
      });
    });
    LAUNCH_CHECK("norm kernel");
    return AMPC_OK;
  }
  Temp t(*this);
  AMPC_TRY(stats(rms, x, rows, cols, eps, t));
  normKernel<<<blocksFor(rows * cols), kThreads, 0, stream_>>>(
      y, x, w, b, rows, cols, t.f32(), t.f32() + rows);
  LAUNCH_CHECK("norm kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::normBwd(bool rms, Buf dx, Buf dw, Buf db, Buf dy,
                                 Buf x, Buf w, int64_t rows, int64_t cols,
                                 float eps) {
  ENTER();
  ampc_status st;
  if (normBwdWide(rms, dx, dw, db, dy, x, w, rows, cols, eps, st))
    return st;
  Temp t(*this);
  AMPC_TRY(stats(rms, x, rows, cols, eps, t));
  if (dx.data) {
    withRowDtype(dy.dtype, [&](auto dyd) {
      withRowDtype(x.dtype, [&](auto xd) {
        normBwdDxKernel<decltype(dyd)::value, decltype(xd)::value>
            <<<warpBlocks(rows), kThreads, 0, stream_>>>(
                rms, dx, dy, x, w, rows, cols, t.f32(), t.f32() + rows);
      });
    });
    LAUNCH_CHECK("norm backward kernel");
  }
  if (dw.data || db.data)
    AMPC_TRY(columnSums(dw, db, dy, x, rows, cols, cols, t.f32(),
                        t.f32() + rows, 1.0f));
  return AMPC_OK;
}

// Batch norm and dropout (docs/language.md, "batch_norm and dropout").
ampc_status CudaBackend::batchNorm(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv,
                                   bool training, int64_t n, int64_t c,
                                   int64_t inner, float eps) {
  ENTER();
  AMPC_TRY(refuseWide("batch norm", {y, x, w, b, rm, rv}));
  BnGeom g{n, c, inner};
  void *stat = nullptr;
  AMPC_TRY(tempAlloc(3 * c * sizeof(float), &stat));
  batchNormStatsKernel<<<c, kBnThreads, 0, stream_>>>(
      static_cast<float *>(stat), x, w, b, rm, rv, training, g, eps);
  ampc_status st = launchStatus("batch_norm statistics kernel");
  if (st == AMPC_OK) {
    batchNormApplyKernel<<<blocksFor(n * c * inner), kThreads, 0, stream_>>>(
        y, x, static_cast<const float *>(stat), g);
    st = launchStatus("batch_norm kernel");
  }
  tempFree(stat);
  return st;
}

ampc_status CudaBackend::batchNormBwd(Buf dx, Buf dw, Buf db, Buf dy, Buf x,
                                      Buf w, Buf rm, Buf rv, bool training,
                                      int64_t n, int64_t c, int64_t inner,
                                      float eps) {
  ENTER();
  AMPC_TRY(refuseWide("batch norm backward", {dx, dw, db, dy, x, w, rm, rv}));
  BnGeom g{n, c, inner};
  void *stat = nullptr;
  AMPC_TRY(tempAlloc(4 * c * sizeof(float), &stat));
  batchNormBwdStatsKernel<<<c, kBnThreads, 0, stream_>>>(
      static_cast<float *>(stat), dw, db, dy, x, rm, rv, training, g, eps);
  ampc_status st = launchStatus("batch_norm backward statistics kernel");
  if (st == AMPC_OK && dx.data) {
    batchNormBwdApplyKernel<<<blocksFor(n * c * inner), kThreads, 0,
                              stream_>>>(dx, dy, x, w,
                                         static_cast<const float *>(stat),
                                         training, g);
    st = launchStatus("batch_norm backward kernel");
  }
  tempFree(stat);
  return st;
}

ampc_status CudaBackend::batchNormUpdate(Buf newMean, Buf newVar, Buf x, Buf rm,
                                         Buf rv, int64_t n, int64_t c,
                                         int64_t inner, float momentum) {
  ENTER();
  AMPC_TRY(refuseWide("batch norm update", {newMean, newVar, x, rm, rv}));
  batchNormUpdateKernel<<<c, kBnThreads, 0, stream_>>>(
      newMean, newVar, x, rm, rv, BnGeom{n, c, inner}, momentum);
  LAUNCH_CHECK("batch_norm update kernel");
  return AMPC_OK;
}

} // namespace cuda
} // namespace ampc
