//===- cuda_norm_dropout.cuh - batch norm and dropout kernels ---*- CUDA -*-===//
//
// Included by cuda_backend.cu. The per-channel and per-element formulas are
// the CPU backend's (runtime/src/norm_dropout_ops.h). Batch norm runs one
// block per channel for the statistics (each thread sums a stride of the
// channel's N * H * W values in f64, then the block adds the partial sums
// in a fixed tree order, so results do not depend on timing) and one thread
// per element for y and dx; dropout runs one thread per element (the same
// counter-based mask bits).
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CUDA_NORM_DROPOUT_CUH
#define AMPC_RUNTIME_CUDA_NORM_DROPOUT_CUH

// Needs ../src/norm_dropout_ops.h, included at the top of cuda_backend.cu
// (outside its namespaces).

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

__global__ void dropoutKernel(Buf y, Buf x, const int32_t *step,
                              uint64_t seed, uint64_t key, float p,
                              int64_t n, DropoutShard shard) {
  uint64_t stream = dropoutStream(key, static_cast<uint32_t>(*step));
  float scale = 1.0f / (1.0f - p);
  GRID_STRIDE(i, n)
  storeF32(y.data, y.dtype, i,
           loadF32(x.data, x.dtype, i) *
               dropoutFactor(seed, stream, shard.global(i), p, scale));
}

__global__ void counterNextKernel(int32_t *next, const int32_t *counter) {
  *next = *counter + 1;
}

#endif // AMPC_RUNTIME_CUDA_NORM_DROPOUT_CUH
