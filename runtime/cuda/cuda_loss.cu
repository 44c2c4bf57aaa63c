//===- cuda_loss.cu - Losses on CUDA -------------------------------------===//
//
// The loss family: cross-entropy (online row statistics in one read of the
// logits) and MSE. Their sums are CudaBackend::sumTwo's (cuda_reduction.cu):
// f64 in a fixed order, no float atomics.
//
//===----------------------------------------------------------------------===//
#include "cuda_backend.h"

#include <math.h>

namespace ampc {
namespace cuda {
namespace {

__global__ void crossEntropyFinishKernel(Buf loss, const double *sums) {
  storeF32(loss.data, loss.dtype, 0, static_cast<float>(sums[0] / sums[1]));
}

/// One block per row (grid-stride over rows), its threads along the
/// classes: no division per element. The dtypes of the logits and their
/// gradient are template values (loadAs/storeAs); the per-element formula
/// is the one the CPU evaluates.
template <int LD, int DD>
__global__ void crossEntropyBwdKernel(Buf dlogits, Buf dloss, Buf logits,
                                      Buf labels, int64_t rows, int64_t classes,
                                      const float *rowLse, const double *sums) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t label = loadIndex(labels.data, labels.dtype, r);
    float scale =
        loadF32(dloss.data, dloss.dtype, 0) / static_cast<float>(sums[1]);
    float lse = rowLse[r];
    int64_t base = r * classes;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      float v = 0;
      if (label != -100) {
        float p = expf(loadAs<LD>(logits, base + c) - lse);
        v = (p - (c == label ? 1.0f : 0.0f)) * scale;
      }
      storeAs<DD>(dlogits, base + c, v);
    }
  }
}

__global__ void squaredDiffKernel(Buf a, Buf b, int64_t n, float *out) {
  GRID_STRIDE(i, n) {
    float d = loadF32(a.data, a.dtype, i) - loadF32(b.data, b.dtype, i);
    out[i] = d * d;
  }
}

__global__ void mseFinishKernel(Buf loss, const double *sums, int64_t n) {
  storeF32(loss.data, loss.dtype, 0,
           static_cast<float>(sums[0] / static_cast<double>(n)));
}

__global__ void mseBwdKernel(Buf da, Buf db, Buf dloss, Buf a, Buf b,
                             int64_t n) {
  GRID_STRIDE(i, n) {
    float norm = 2.0f / static_cast<float>(n);
    float v = norm *
              (loadF32(a.data, a.dtype, i) - loadF32(b.data, b.dtype, i)) *
              loadF32(dloss.data, dloss.dtype, 0);
    if (da.data)
      storeF32(da.data, da.dtype, i, v);
    if (db.data)
      storeF32(db.data, db.dtype, i, -v);
  }
}

/// Cross-entropy row statistics in one read of the logits (online max and
/// rescaled sum per lane, merged across the warp); LD, the logits' dtype.
template <int LD>
__global__ void crossEntropyOnlineKernel(Buf logits, Buf labels, int64_t rows,
                                         int64_t classes, float *rowLoss,
                                         float *rowValid, float *rowLse,
                                         uint32_t *checkWord, int32_t site) {
  WARP_LOOP(r, rows) {
    int64_t base = r * classes;
    float m = -INFINITY, s = 0;
    for (int64_t c = lane; c < classes; c += 32) {
      float v = loadAs<LD>(logits, base + c);
      if (v > m) {
        s = s * expf(m - v) + 1.0f;
        m = v;
      } else {
        s += expf(v - m);
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      float om = __shfl_xor_sync(0xffffffffu, m, o);
      float os = __shfl_xor_sync(0xffffffffu, s, o);
      float nm = fmaxf(m, om);
      float a = m == -INFINITY ? 0.0f : s * expf(m - nm);
      float b = om == -INFINITY ? 0.0f : os * expf(om - nm);
      m = nm;
      s = a + b;
    }
    if (lane == 0) {
      int64_t label = loadIndex(labels.data, labels.dtype, r);
      float lse = m + logf(s);
      bool ignored = label == -100;
      bool inRange = label >= 0 && label < classes;
      rowLse[r] = lse;
      rowValid[r] = ignored ? 0.0f : 1.0f;
      // A label outside the classes: the check word names the op.
      if (!ignored && !inRange && site >= 0)
        atomicMin(reinterpret_cast<unsigned int *>(checkWord),
                  static_cast<unsigned int>(site));
      rowLoss[r] = ignored ? 0.0f
                   : inRange
                       ? lse - loadF32(logits.data, logits.dtype, base + label)
                       : NAN;
    }
  }
}

} // namespace

ampc_status CudaBackend::crossEntropyRows(Buf logits, Buf labels, int64_t rows,
                                          int64_t classes, Temp &t,
                                          int32_t site) {
  AMPC_TRY(t.alloc(2 * sizeof(double) + 3 * rows * sizeof(float)));
  double *sums = static_cast<double *>(t.get());
  float *rowLoss = reinterpret_cast<float *>(sums + 2);
  withRowDtype(logits.dtype, [&](auto ld) {
    crossEntropyOnlineKernel<decltype(ld)::value>
        <<<warpBlocks(rows), kThreads, 0, stream_>>>(
            logits, labels, rows, classes, rowLoss, rowLoss + rows,
            rowLoss + 2 * rows, checkWords + AMPC_CHECK_INDEX, site);
  });
  LAUNCH_CHECK("cross-entropy kernel");
  return sumTwo(rowLoss, rowLoss + rows, rows, sums);
}

ampc_status CudaBackend::crossEntropy(Buf loss, Buf logits, Buf labels,
                                      int64_t rows, int64_t classes,
                                      int32_t site) {
  ENTER();
  ampc_status st;
  if (crossEntropyWide(loss, logits, labels, rows, classes, site, st))
    return st;
  Temp t(*this);
  AMPC_TRY(crossEntropyRows(logits, labels, rows, classes, t, site));
  crossEntropyFinishKernel<<<1, 1, 0, stream_>>>(
      loss, static_cast<double *>(t.get()));
  LAUNCH_CHECK("cross-entropy finish kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::crossEntropyBwd(Buf dlogits, Buf dloss, Buf logits,
                                         Buf labels, int64_t rows,
                                         int64_t classes) {
  ENTER();
  ampc_status st;
  if (crossEntropyBwdWide(dlogits, dloss, logits, labels, rows, classes, st))
    return st;
  Temp t(*this);
  AMPC_TRY(crossEntropyRows(logits, labels, rows, classes, t));
  double *sums = static_cast<double *>(t.get());
  const float *rowLse = reinterpret_cast<float *>(sums + 2) + 2 * rows;
  int blocks = static_cast<int>(rows < 65535 * 4 ? (rows > 0 ? rows : 1)
                                                : 65535 * 4);
  withRowDtype(logits.dtype, [&](auto ld) {
    withRowDtype(dlogits.dtype, [&](auto dd) {
      crossEntropyBwdKernel<decltype(ld)::value, decltype(dd)::value>
          <<<blocks, kThreads, 0, stream_>>>(dlogits, dloss, logits, labels,
                                             rows, classes, rowLse, sums);
    });
  });
  LAUNCH_CHECK("cross-entropy backward kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::mse(Buf loss, Buf a, Buf b, int64_t n) {
  ENTER();
  ampc_status st;
  if (mseWide(loss, a, b, n, st))
    return st;
  Temp t(*this);
  AMPC_TRY(t.alloc(2 * sizeof(double) + n * sizeof(float)));
  double *sums = static_cast<double *>(t.get());
  float *sq = reinterpret_cast<float *>(sums + 2);
  squaredDiffKernel<<<blocksFor(n), kThreads, 0, stream_>>>(a, b, n, sq);
  LAUNCH_CHECK("mse kernel");
  AMPC_TRY(sumTwo(sq, nullptr, n, sums));
  mseFinishKernel<<<1, 1, 0, stream_>>>(loss, sums, n);
  LAUNCH_CHECK("mse finish kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::mseBwd(Buf da, Buf db, Buf dloss, Buf a, Buf b,
                                int64_t n) {
  ENTER();
  ampc_status st;
  if (mseBwdWide(da, db, dloss, a, b, n, st))
    return st;
  mseBwdKernel<<<blocksFor(n), kThreads, 0, stream_>>>(da, db, dloss, a, b,
                                                       n);
  LAUNCH_CHECK("mse backward kernel");
  return AMPC_OK;
}

} // namespace cuda
} // namespace ampc
