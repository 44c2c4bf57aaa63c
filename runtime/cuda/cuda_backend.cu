//===- cuda_backend.cu - The CUDA backend
//-----------------------------------===//
//
// Stream-ordered kernels over the shared scalar formulas of src/. One thread
// per element for elementwise work, one warp per row for softmax, norms and
// cross-entropy, fixed-order tree reductions (no float atomics) so results
// are deterministic run to run. Dtypes are dispatched inside the kernels by
// the (warp-uniform) dtype switch of loadF32/storeF32 rather than templates,
// which keeps this one translation unit quick to compile. Convolutions use
// im2col + cuBLASLt like the CPU backend (one code path for both backends;
// cuDNN would add a dependency and could not be measured here).
//
//===----------------------------------------------------------------------===//
#include "../src/norm_dropout_ops.h"
#include "../src/philox.h"
#include "bf16_split.h"
#include "cuda_device.cuh"
#include "cuda_exact.h"
#include "cuda_snapshot.h"

#include <cub/device/device_radix_sort.cuh>

#include <math.h>
#include <string.h>

namespace ampc {
namespace cuda {
namespace {

__device__ __forceinline__ void
walkOffsets(const Walk &w, int64_t i, int64_t &o0, int64_t &o1, int64_t &o2) {
  o0 = o1 = o2 = 0;
  for (int d = w.rank - 1; d >= 0; --d) {
    int64_t idx = i % w.shape[d];
    i /= w.shape[d];
    o0 += idx * w.stride[0][d];
    o1 += idx * w.stride[1][d];
    o2 += idx * w.stride[2][d];
  }
}

// ------------------------------------------------------------ elementwise --

__global__ void copyKernel(Buf dst, Buf src, Walk w, float scale, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t o0, o1, o2;
    walkOffsets(w, i, o0, o1, o2);
    if (scale == 1.0f)
      convertElement(dst.data, dst.dtype, o0, src.data, src.dtype, o1);
    else
      storeF32(dst.data, dst.dtype, o0,
               scale * loadF32(src.data, src.dtype, o1));
  }
}

// Gradient accumulation (docs/optimizer.md): the first micro-batch (*micro == 0)
// writes, the others add in f32.
__global__ void gradAccumulateKernel(float *acc, const void *g,
                                     ampc_dtype gd, int64_t n,
                                     const int32_t *micro) {
  bool first = *micro == 0;
  GRID_STRIDE(i, n) {
    float v = loadF32(g, gd, i);
    acc[i] = first ? v : acc[i] + v;
  }
}

__global__ void advanceMicroKernel(int32_t *micro, int64_t k) {
  *micro = static_cast<int32_t>((*micro + 1) % k);
}

__global__ void fillKernel(Buf y, int64_t n, float v, int64_t iv) {
  GRID_STRIDE(i, n) {
    if (isFloatDtype(y.dtype))
      storeF32(y.data, y.dtype, i, v);
    else if (y.dtype == AMPC_I64)
      static_cast<int64_t *>(y.data)[i] = iv;
    else if (y.dtype == AMPC_I32)
      static_cast<int32_t *>(y.data)[i] = static_cast<int32_t>(iv);
    else
      static_cast<uint8_t *>(y.data)[i] = iv != 0;
  }
}

__global__ void unaryKernel(UnaryOp op, UnaryAttrs a, Buf y, Buf x,
                            int64_t n) {
  GRID_STRIDE(i, n) {
    storeF32(y.data, y.dtype, i,
             unaryForward(op, loadF32(x.data, x.dtype, i), a));
  }
}

__global__ void unaryBwdKernel(UnaryOp op, UnaryAttrs a, Buf dx, Buf dy, Buf x,
                               int64_t n) {
  GRID_STRIDE(i, n) {
    storeF32(dx.data, dx.dtype, i,
             unaryBackward(op, loadF32(x.data, x.dtype, i),
                           loadF32(dy.data, dy.dtype, i), a));
  }
}

__global__ void binaryKernel(BinaryOp op, Buf y, Buf a, Buf b, Walk w,
                             int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t o0, o1, o2;
    walkOffsets(w, i, o0, o1, o2);
    storeF32(y.data, y.dtype, o0,
             binaryForward(op, loadF32(a.data, a.dtype, o1),
                           loadF32(b.data, b.dtype, o2)));
  }
}

__global__ void binaryBwdKernel(BinaryOp op, int which, Buf g, Buf dy, Buf a,
                                Buf b, Walk w, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t o0, o1, o2;
    walkOffsets(w, i, o0, o1, o2);
    storeF32(g.data, g.dtype, o0,
             binaryBackward(op, which, loadF32(a.data, a.dtype, o1),
                            loadF32(b.data, b.dtype, o2),
                            loadF32(dy.data, dy.dtype, o0)));
  }
}

/// One thread per output element of argmax.
__global__ void argmaxKernel(Buf y, Buf x, int64_t outer, int64_t dim,
                             int64_t inner) {
  GRID_STRIDE(k, outer * inner) {
    int64_t o = k / inner, i = k % inner;
    int64_t base = o * dim * inner + i;
    float best = loadF32(x.data, x.dtype, base);
    int32_t at = 0;
    for (int64_t d = 1; d < dim; ++d) {
      float v = loadF32(x.data, x.dtype, base + d * inner);
      if (argmaxTakes(v, best)) {
        best = v;
        at = static_cast<int32_t>(d);
      }
    }
    static_cast<int32_t *>(y.data)[k] = at;
  }
}

// ------------------------------------------------------------- reductions --

/// One warp per output element; lanes stride over the reduced elements.
__global__ void reduceKernel(ReduceOp op, Buf y, Buf x, Walk outer, Walk inner,
                             int64_t nOut, int64_t nIn) {
  WARP_LOOP(o, nOut) {
    int64_t yo, xo, unused;
    walkOffsets(outer, o, yo, xo, unused);
    float acc = op == ReduceOp::Max ? -INFINITY : 0.0f;
    bool nan = false;
    for (int64_t j = lane; j < nIn; j += 32) {
      int64_t a, xi, b;
      walkOffsets(inner, j, a, xi, b);
      float v = loadF32(x.data, x.dtype, xo + xi);
      if (op == ReduceOp::Max) {
        nan |= v != v;
        acc = fmaxf(acc, v);
      } else {
        acc += v;
      }
    }
    if (op == ReduceOp::Max) {
      acc = warpMax(acc);
      nan = __any_sync(0xffffffffu, nan);
      if (nan)
        acc = NAN;
    } else {
      acc = warpSum(acc);
      if (op == ReduceOp::Mean)
        acc /= static_cast<float>(nIn);
    }
    if (lane == 0)
      storeF32(y.data, y.dtype, yo, acc);
  }
}

__global__ void reduceMaxBwdKernel(Buf dx, Buf dy, Buf x, Buf y, Walk outer,
                                   Walk inner, int64_t nOut, int64_t nIn) {
  WARP_LOOP(o, nOut) {
    int64_t yo, xo, unused;
    walkOffsets(outer, o, yo, xo, unused);
    float m = loadF32(y.data, y.dtype, yo), g = loadF32(dy.data, dy.dtype, yo);
    float ties = 0;
    for (int64_t j = lane; j < nIn; j += 32) {
      int64_t a, xi, b;
      walkOffsets(inner, j, a, xi, b);
      ties += loadF32(x.data, x.dtype, xo + xi) == m;
    }
    ties = warpSum(ties);
    float share = ties > 0 ? g / ties : 0.0f;
    for (int64_t j = lane; j < nIn; j += 32) {
      int64_t a, xi, b;
      walkOffsets(inner, j, a, xi, b);
      bool hit = loadF32(x.data, x.dtype, xo + xi) == m;
      storeF32(dx.data, dx.dtype, xo + xi, hit ? share : 0.0f);
    }
  }
}

// ---------------------------------------------------------- normalisation --

/// One warp per (outer, inner) row of `dim` elements, `inner` apart.
__global__ void softmaxKernel(bool log, Buf y, Buf x, int64_t outer,
                              int64_t dim, int64_t inner) {
  WARP_LOOP(r, outer * inner) {
    int64_t base = (r / inner) * dim * inner + r % inner;
    float m = -INFINITY;
    for (int64_t j = lane; j < dim; j += 32)
      m = fmaxf(m, loadF32(x.data, x.dtype, base + j * inner));
    m = warpMax(m);
    float s = 0;
    for (int64_t j = lane; j < dim; j += 32)
      s += expf(loadF32(x.data, x.dtype, base + j * inner) - m);
    s = warpSum(s);
    float lse = logf(s), inv = 1.0f / s;
    for (int64_t j = lane; j < dim; j += 32) {
      float v = loadF32(x.data, x.dtype, base + j * inner) - m;
      storeF32(y.data, y.dtype, base + j * inner,
               log ? v - lse : expf(v) * inv);
    }
  }
}

__global__ void softmaxBwdKernel(bool log, Buf dx, Buf dy, Buf y, int64_t outer,
                                 int64_t dim, int64_t inner) {
  WARP_LOOP(r, outer * inner) {
    int64_t base = (r / inner) * dim * inner + r % inner;
    float dot = 0;
    for (int64_t j = lane; j < dim; j += 32) {
      float g = loadF32(dy.data, dy.dtype, base + j * inner);
      dot += log ? g : g * loadF32(y.data, y.dtype, base + j * inner);
    }
    dot = warpSum(dot);
    for (int64_t j = lane; j < dim; j += 32) {
      int64_t i = base + j * inner;
      float g = loadF32(dy.data, dy.dtype, i), yv = loadF32(y.data, y.dtype, i);
      storeF32(dx.data, dx.dtype, i, log ? g - expf(yv) * dot : yv * (g - dot));
    }
  }
}

/// Row statistics (mean, rstd) with one warp per row, two passes in f32.
__global__ void rowStatsKernel(bool rms, Buf x, int64_t rows, int64_t cols,
                               float eps, float *mean, float *rstd) {
  WARP_LOOP(r, rows) {
    float s = 0;
    if (!rms) {
      for (int64_t j = lane; j < cols; j += 32)
        s += loadF32(x.data, x.dtype, r * cols + j);
      s = warpSum(s) / static_cast<float>(cols);
    }
    float v = 0;
    for (int64_t j = lane; j < cols; j += 32) {
      float d = loadF32(x.data, x.dtype, r * cols + j) - s;
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

__global__ void normBwdDxKernel(bool rms, Buf dx, Buf dy, Buf x, Buf w,
                                int64_t rows, int64_t cols, const float *mean,
                                const float *rstd) {
  WARP_LOOP(r, rows) {
    float mu = mean[r], rs = rstd[r], sg = 0, sgx = 0;
    for (int64_t j = lane; j < cols; j += 32) {
      int64_t i = r * cols + j;
      float g = loadF32(dy.data, dy.dtype, i);
      if (w.data)
        g *= loadF32(w.data, w.dtype, j);
      float xh = (loadF32(x.data, x.dtype, i) - mu) * rs;
      sg += g;
      sgx += g * xh;
    }
    float meanG = rms ? 0.0f : warpSum(sg) / static_cast<float>(cols);
    float meanGX = warpSum(sgx) / static_cast<float>(cols);
    for (int64_t j = lane; j < cols; j += 32) {
      int64_t i = r * cols + j;
      float g = loadF32(dy.data, dy.dtype, i);
      if (w.data)
        g *= loadF32(w.data, w.dtype, j);
      float xh = (loadF32(x.data, x.dtype, i) - mu) * rs;
      storeF32(dx.data, dx.dtype, i, rs * (g - meanG - xh * meanGX));
    }
  }
}

// ---------------------------------------------------------------- pooling --

__device__ int64_t poolArgmax(const PoolGeom &g, Buf x, int64_t plane,
                              int64_t oy, int64_t ox) {
  int64_t best = -1;
  float bv = -INFINITY;
  for (int64_t ky = 0; ky < g.kh; ++ky) {
    int64_t iy = oy * g.sh - g.ph + ky;
    if (iy < 0 || iy >= g.h)
      continue;
    for (int64_t kx = 0; kx < g.kw; ++kx) {
      int64_t ix = ox * g.sw - g.pw + kx;
      if (ix < 0 || ix >= g.w)
        continue;
      float v = loadF32(x.data, x.dtype, plane + iy * g.w + ix);
      if (best < 0 || v > bv || (v != v && bv == bv)) {
        best = iy * g.w + ix;
        bv = v;
      }
    }
  }
  return best;
}

__global__ void poolKernel(Buf y, Buf x, PoolGeom g) {
  GRID_STRIDE(i, g.planes * g.oh * g.ow) {
    int64_t p = i / (g.oh * g.ow), oy = (i / g.ow) % g.oh, ox = i % g.ow;
    int64_t plane = p * g.h * g.w;
    float v;
    if (g.isMax) {
      int64_t a = poolArgmax(g, x, plane, oy, ox);
      v = a < 0 ? -INFINITY : loadF32(x.data, x.dtype, plane + a);
    } else {
      float s = 0;
      for (int64_t ky = 0; ky < g.kh; ++ky)
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          int64_t iy = oy * g.sh - g.ph + ky, ix = ox * g.sw - g.pw + kx;
          if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
            s += loadF32(x.data, x.dtype, plane + iy * g.w + ix);
        }
      v = s / static_cast<float>(g.kh * g.kw);
    }
    storeF32(y.data, y.dtype, i, v);
  }
}

/// One thread per input element gathers from the windows covering it.
__global__ void poolBwdKernel(Buf dx, Buf dy, Buf x, PoolGeom g) {
  GRID_STRIDE(i, g.planes * g.h * g.w) {
    int64_t p = i / (g.h * g.w), iy = (i / g.w) % g.h, ix = i % g.w;
    int64_t plane = p * g.h * g.w, self = iy * g.w + ix;
    float acc = 0;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      int64_t ty = iy + g.ph - ky;
      if (ty < 0 || ty % g.sh)
        continue;
      int64_t oy = ty / g.sh;
      if (oy >= g.oh)
        continue;
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        int64_t tx = ix + g.pw - kx;
        if (tx < 0 || tx % g.sw)
          continue;
        int64_t ox = tx / g.sw;
        if (ox >= g.ow)
          continue;
        float d = loadF32(dy.data, dy.dtype, (p * g.oh + oy) * g.ow + ox);
        if (!g.isMax)
          acc += d / static_cast<float>(g.kh * g.kw);
        else if (poolArgmax(g, x, plane, oy, ox) == self)
          acc += d;
      }
    }
    storeF32(dx.data, dx.dtype, i, acc);
  }
}

// ------------------------------------------------- embedding, losses, conv --

/// Records `site` (>= 0) in a check word: the smallest site wins.
__device__ inline void recordCheck(uint32_t *word, int32_t site) {
  if (site >= 0)
    atomicMin(reinterpret_cast<unsigned int *>(word),
              static_cast<unsigned int>(site));
}

__global__ void checkNonfiniteKernel(Buf x, int64_t n, uint32_t *word,
                                     int32_t site) {
  GRID_STRIDE(i, n) {
    if (!isfinite(loadF32(x.data, x.dtype, i))) {
      recordCheck(word, site);
      return;
    }
  }
}

__global__ void embeddingKernel(Buf y, Buf table, Buf ids, int64_t n,
                                int64_t vocab, int64_t dim, uint32_t *word,
                                int32_t site) {
  GRID_STRIDE(i, n * dim) {
    int64_t id = loadIndex(ids.data, ids.dtype, i / dim);
    bool ok = id >= 0 && id < vocab;
    if (!ok && i % dim == 0)
      recordCheck(word, site);
    storeF32(y.data, y.dtype, i,
             ok ? loadF32(table.data, table.dtype, id * dim + i % dim) : 0.0f);
  }
}

__global__ void crossEntropyFinishKernel(Buf loss, const double *sums) {
  storeF32(loss.data, loss.dtype, 0, static_cast<float>(sums[0] / sums[1]));
}

__global__ void crossEntropyBwdKernel(Buf dlogits, Buf dloss, Buf logits,
                                      Buf labels, int64_t rows, int64_t classes,
                                      const float *rowLse, const double *sums) {
  GRID_STRIDE(i, rows * classes) {
    int64_t r = i / classes, c = i % classes;
    int64_t label = loadIndex(labels.data, labels.dtype, r);
    float v = 0;
    if (label != -100) {
      float scale =
          loadF32(dloss.data, dloss.dtype, 0) / static_cast<float>(sums[1]);
      float p = expf(loadF32(logits.data, logits.dtype, i) - rowLse[r]);
      v = (p - (c == label ? 1.0f : 0.0f)) * scale;
    }
    storeF32(dlogits.data, dlogits.dtype, i, v);
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

__global__ void im2colKernel(Buf col, Buf x, ConvGeom g) {
  int64_t cols = g.columns(), hw = g.oh * g.ow;
  GRID_STRIDE(i, g.rows() * cols) {
    int64_t row = i / cols, pix = i % cols;
    int64_t c = row / (g.kd * g.kh * g.kw), kz = (row / (g.kh * g.kw)) % g.kd;
    int64_t ky = (row / g.kw) % g.kh, kx = row % g.kw;
    int64_t iz = (pix / hw) * g.sd - g.pd + kz * g.dd;
    int64_t iy = ((pix / g.ow) % g.oh) * g.sh - g.ph + ky * g.dh;
    int64_t ix = (pix % g.ow) * g.sw - g.pw + kx * g.dw;
    if (iz < 0 || iz >= g.d || iy < 0 || iy >= g.h || ix < 0 || ix >= g.w)
      storeF32(col.data, col.dtype, i, 0.0f);
    else
      convertElement(col.data, col.dtype, i, x.data, x.dtype,
                     ((c * g.d + iz) * g.h + iy) * g.w + ix);
  }
}

/// One thread per image element gathers its column entries.
__global__ void col2imKernel(float *dx, const float *col, ConvGeom g) {
  int64_t cols = g.columns();
  GRID_STRIDE(i, g.imageSize()) {
    int64_t c = i / (g.d * g.h * g.w), iz = (i / (g.h * g.w)) % g.d;
    int64_t iy = (i / g.w) % g.h, ix = i % g.w;
    float acc = 0;
    for (int64_t kz = 0; kz < g.kd; ++kz) {
      int64_t tz = iz + g.pd - kz * g.dd;
      if (tz < 0 || tz % g.sd || tz / g.sd >= g.od)
        continue;
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        int64_t ty = iy + g.ph - ky * g.dh;
        if (ty < 0 || ty % g.sh || ty / g.sh >= g.oh)
          continue;
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          int64_t tx = ix + g.pw - kx * g.dw;
          if (tx < 0 || tx % g.sw || tx / g.sw >= g.ow)
            continue;
          acc += col[(((c * g.kd + kz) * g.kh + ky) * g.kw + kx) * cols +
                     ((tz / g.sd) * g.oh + ty / g.sh) * g.ow + tx / g.sw];
        }
      }
    }
    dx[i] += acc;
  }
}

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

#include "cuda_fast.cuh"
// batch_norm and dropout (docs/language.md, "batch_norm and dropout").
#include "cuda_norm_dropout.cuh"

// ------------------------------------------------------ asynchronous reads --

/// The pieces of one ampc_read_async, packed in order into `out`.
struct ReadPieces {
  const void *src[Backend::kReadPieces];
  uint32_t bytes[Backend::kReadPieces];
  int count;
};

/// One block: byte i of the packed read comes from the piece covering it.
__global__ void gatherReadKernel(ReadPieces p, uint8_t *out) {
  uint32_t at = 0;
  for (int k = 0; k < p.count; ++k) {
    for (uint32_t i = threadIdx.x; i < p.bytes[k]; i += blockDim.x)
      out[at + i] = static_cast<const uint8_t *>(p.src[k])[i];
    at += p.bytes[k];
  }
}

// ---------------------------------------------------------------- backend --

#define LAUNCH_CHECK(what)                                                     \
  do {                                                                         \
    lastLaunch = what;                                                         \
    cudaError_t launchErr_ = cudaGetLastError();                               \
    if (launchErr_ != cudaSuccess)                                             \
      return cudaFail(launchErr_, what);                                       \
  } while (0)

#define ENTER()                                                                \
  do {                                                                         \
    ampc_status enterStatus_ = enter();                                        \
    if (enterStatus_ != AMPC_OK)                                               \
      return enterStatus_;                                                     \
  } while (0)

#define CUDA_TRY(call)                                                         \
  do {                                                                         \
    cudaError_t cudaErr_ = (call);                                             \
    if (cudaErr_ != cudaSuccess)                                               \
      return cudaFail(cudaErr_, #call);                                        \
  } while (0)

size_t eltBytes(ampc_dtype dt) {
  switch (dt) {
  case AMPC_F32:
  case AMPC_I32:
    return 4;
  case AMPC_F16:
  case AMPC_BF16:
    return 2;
  case AMPC_I64:
    return 8;
  case AMPC_BOOL:
    return 1;
  }
  return 4;
}

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(int device) : device(device) {}
  ~CudaBackend() override {
    if (stream_) {
      enter();
      cudaStreamSynchronize(stream_);
      for (cudaEvent_t &e : readEvents)
        if (e)
          cudaEventDestroy(e);
      if (readStage)
        cudaFree(readStage);
      for (UploadSlot &u : uploads) {
        if (u.done)
          cudaEventDestroy(u.done);
        if (u.host)
          cudaFreeHost(u.host);
      }
      cudaStreamDestroy(stream_);
    }
  }

  ampc_status init() {
    CUDA_TRY(cudaSetDevice(device));
    CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    // Stream-ordered scratch needs memory pools; where the device or driver
    // has none, scratch falls back to cudaMalloc / synchronised cudaFree.
    int pools = 0;
    if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported,
                               device) != cudaSuccess)
      pools = 0;
    cudaGetLastError();
    usePool = pools != 0 && !getenv("AMPC_CUDA_NO_POOL");
    if (usePool) {
      cudaMemPool_t pool;
      CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device));
      // Keep freed scratch in the pool across synchronisations instead of
      // returning it to the driver every time (the default threshold is 0).
      uint64_t keep = UINT64_MAX;
      CUDA_TRY(
          cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    }
    // Asynchronous reads: a device staging area and one event per slot,
    // made here so no read allocates (cudaMalloc may wait for the device).
    CUDA_TRY(cudaMalloc(&readStage, kReadBytes));
    for (cudaEvent_t &e : readEvents)
      CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return lt.init(stream_);
  }

  /// Makes this context's device current on the calling thread (every entry
  /// point: contexts on other devices, or other threads, may have changed it).
  ampc_status enter() {
    int cur = -1;
    if (cudaGetDevice(&cur) != cudaSuccess || cur != device)
      CUDA_TRY(cudaSetDevice(device));
    return AMPC_OK;
  }

  /// The error of a call that waits for queued work: a fault of an earlier
  /// kernel surfaces here, so the message names the last launch as well.
  ampc_status asyncFail(cudaError_t err, const char *what) {
    if (err == cudaErrorIllegalAddress || err == cudaErrorLaunchFailure ||
        err == cudaErrorAssert || err == cudaErrorIllegalInstruction ||
        err == cudaErrorMisalignedAddress || err == cudaErrorHardwareStackError)
      return setError(AMPC_ERROR_DEVICE,
                      "cuda backend: %s: a kernel queued earlier failed "
                      "asynchronously (%s; last launched: %s); the CUDA "
                      "context can no longer be used",
                      what, cudaGetErrorString(err), lastLaunch);
    return cudaFail(err, what);
  }

  /// LAUNCH_CHECK as a value, for launches followed by cleanup.
  ampc_status launchStatus(const char *what) {
    lastLaunch = what;
    cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? AMPC_OK : cudaFail(err, what);
  }

  ampc_backend kind() const override { return AMPC_BACKEND_CUDA; }
  void *stream() override { return stream_; }

  ampc_status alloc(size_t bytes, void **ptr) override {
    ENTER();
    cudaError_t err = cudaMalloc(ptr, bytes);
    if (err == cudaErrorMemoryAllocation)
      return setError(AMPC_ERROR_OUT_OF_MEMORY,
                      "cuda backend: cannot allocate %zu bytes", bytes);
    return err == cudaSuccess ? AMPC_OK : cudaFail(err, "cudaMalloc");
  }
  ampc_status release(void *ptr) override {
    ENTER();
    // Work queued on the stream may still use the memory.
    cudaError_t err = cudaStreamSynchronize(stream_);
    if (err != cudaSuccess)
      return asyncFail(err, "cudaStreamSynchronize (before cudaFree)");
    CUDA_TRY(cudaFree(ptr));
    return AMPC_OK;
  }
  ampc_status copyBytes(void *dst, const void *src, size_t bytes,
                        ampc_memcpy_kind kind) override {
    ENTER();
    static const cudaMemcpyKind kinds[] = {
        cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
        cudaMemcpyDeviceToDevice, cudaMemcpyHostToHost};
    if (kind == AMPC_MEMCPY_HOST_TO_DEVICE && bytes <= kUploadMaxBytes &&
        isPageable(src))
      return stagedUpload(dst, src, bytes);
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, kinds[kind], stream_));
    if (kind == AMPC_MEMCPY_DEVICE_TO_HOST || kind == AMPC_MEMCPY_HOST_TO_HOST) {
      cudaError_t err = cudaStreamSynchronize(stream_);
      if (err != cudaSuccess)
        return asyncFail(err, "cudaStreamSynchronize (after a copy)");
    }
    return AMPC_OK;
  }
  /// Whether `p` is ordinary (not page-locked, not device) host memory.
  static bool isPageable(const void *p) {
    cudaPointerAttributes a;
    cudaError_t err = cudaPointerGetAttributes(&a, p);
    if (err != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return a.type == cudaMemoryTypeUnregistered;
  }
  /// A host-to-device copy from pageable memory (a batch an `ampc run` loop
  /// assembled in a std::vector): cudaMemcpyAsync from pageable memory may
  /// wait for the stream, so the host would wait for the previous step.
  /// The bytes go into one of kUploadSlots page-locked buffers instead, and
  /// from there asynchronously; a buffer is reused once the event recorded
  /// after its last copy has passed (with kUploadSlots uploads in between,
  /// normally long ago: a wait is counted as a host synchronisation).
  ampc_status stagedUpload(void *dst, const void *src, size_t bytes) {
    UploadSlot &u = uploads[nextUpload++ % kUploadSlots];
    if (u.busy) {
      cudaError_t q = cudaEventQuery(u.done);
      if (q == cudaErrorNotReady) {
        ++hostSyncs;
        q = cudaEventSynchronize(u.done);
      }
      if (q != cudaSuccess)
        return asyncFail(q, "cudaEventSynchronize (reusing upload staging)");
      u.busy = false;
    }
    if (u.capacity < bytes) {
      if (u.host)
        CUDA_TRY(cudaFreeHost(u.host));
      u.host = nullptr;
      u.capacity = 0;
      CUDA_TRY(cudaMallocHost(&u.host, bytes ? bytes : 1));
      u.capacity = bytes;
    }
    if (!u.done)
      CUDA_TRY(cudaEventCreateWithFlags(&u.done, cudaEventDisableTiming));
    memcpy(u.host, src, bytes);
    CUDA_TRY(cudaMemcpyAsync(dst, u.host, bytes, cudaMemcpyHostToDevice,
                             stream_));
    CUDA_TRY(cudaEventRecord(u.done, stream_));
    u.busy = true;
    return AMPC_OK;
  }
  ampc_status setBytes(void *ptr, int value, size_t bytes) override {
    ENTER();
    CUDA_TRY(cudaMemsetAsync(ptr, value, bytes, stream_));
    return AMPC_OK;
  }
  ampc_status synchronize() override {
    ENTER();
    cudaError_t err = cudaStreamSynchronize(stream_);
    if (err != cudaSuccess)
      return asyncFail(err, "cudaStreamSynchronize");
    return AMPC_OK;
  }
  ampc_status hostAlloc(size_t bytes, void **ptr) override {
    ENTER();
    cudaError_t err = cudaMallocHost(ptr, bytes ? bytes : 1);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return AMPC_ERROR_OUT_OF_MEMORY;
    }
    return err == cudaSuccess ? AMPC_OK : cudaFail(err, "cudaMallocHost");
  }
  ampc_status hostFree(void *ptr) override {
    ENTER();
    // A queued read may still write into it.
    cudaError_t err = cudaStreamSynchronize(stream_);
    if (err != cudaSuccess)
      return asyncFail(err, "cudaStreamSynchronize (before cudaFreeHost)");
    CUDA_TRY(cudaFreeHost(ptr));
    return AMPC_OK;
  }
  /// One transfer: a single piece is copied directly; several are packed on
  /// the device into the staging area first (one tiny kernel), so the host
  /// side is always one cudaMemcpyAsync into page-locked memory and an
  /// event. Nothing here waits.
  ampc_status readAsync(void *dst, const void *const *srcs, const size_t *bytes,
                        int count, uint64_t ticket) override {
    ENTER();
    const void *from = srcs[0];
    size_t total = bytes[0];
    if (count > 1) {
      ReadPieces p{};
      total = 0;
      for (int i = 0; i < count; ++i) {
        p.src[i] = srcs[i];
        p.bytes[i] = static_cast<uint32_t>(bytes[i]);
        total += bytes[i];
      }
      p.count = count;
      gatherReadKernel<<<1, 64, 0, stream_>>>(p,
                                              static_cast<uint8_t *>(readStage));
      LAUNCH_CHECK("read gather kernel");
      from = readStage;
    }
    CUDA_TRY(cudaMemcpyAsync(dst, from, total, cudaMemcpyDeviceToHost, stream_));
    CUDA_TRY(cudaEventRecord(readEvents[ticket % kReadSlots], stream_));
    return AMPC_OK;
  }
  ampc_status readWait(uint64_t ticket) override {
    ENTER();
    cudaError_t err = cudaEventSynchronize(readEvents[ticket % kReadSlots]);
    if (err != cudaSuccess)
      return asyncFail(err, "cudaEventSynchronize (waiting for a read)");
    return AMPC_OK;
  }

  ampc_status tempAlloc(size_t bytes, void **ptr) override {
    ENTER();
    cudaError_t err = usePool ? cudaMallocAsync(ptr, bytes, stream_)
                              : cudaMalloc(ptr, bytes);
    if (err == cudaErrorMemoryAllocation)
      return setError(AMPC_ERROR_OUT_OF_MEMORY,
                      "cuda backend: cannot allocate %zu scratch bytes", bytes);
    return err == cudaSuccess ? AMPC_OK : cudaFail(err, "cudaMallocAsync");
  }
  void tempFree(void *ptr) override {
    if (enter() != AMPC_OK)
      return;
    if (usePool) {
      cudaFreeAsync(ptr, stream_);
    } else {
      ++hostSyncs;
      cudaStreamSynchronize(stream_); // queued work may still use it
      cudaFree(ptr);
    }
  }

  ampc_status copy(Buf dst, Buf src, const Walk &w0, float scale) override {
    ENTER();
    int64_t n = w0.numel();
    if (n == 0)
      return AMPC_OK;
    Walk w = collapseWalk(w0, 2);
    if (walkContiguous(w, 2)) {
      if (dst.dtype == src.dtype && scale == 1.0f) {
        CUDA_TRY(cudaMemcpyAsync(dst.data, src.data, n * eltBytes(dst.dtype),
                                 cudaMemcpyDeviceToDevice, stream_));
        return AMPC_OK;
      }
      if (launchConvert(dst, src, scale, n))
        return AMPC_OK;
    }
    if (walkFits32(w, 2))
      copy32Kernel<<<blocksFor(n), kThreads, 0, stream_>>>(dst, src,
                                                           toWalk32(w), scale,
                                                           n);
    else
      copyKernel<<<blocksFor(n), kThreads, 0, stream_>>>(dst, src, w, scale,
                                                         n);
    LAUNCH_CHECK("copy kernel");
    return AMPC_OK;
  }

  /// Contiguous float-to-float conversion, specialised by the dtype pair;
  /// false (nothing launched) for other pairs.
  bool launchConvert(Buf dst, Buf src, float scale, int64_t n) {
    if (!isFloatDtype(dst.dtype) || !isFloatDtype(src.dtype))
      return false;
#define AMPC_CONV(DD, SD)                                                      \
  if (dst.dtype == DD && src.dtype == SD) {                                    \
    convertContigKernel<DD, SD><<<blocksFor(n), kThreads, 0, stream_>>>(       \
        dst.data, src.data, scale, n);                                         \
    lastLaunch = "convert kernel";                                             \
    return cudaPeekAtLastError() == cudaSuccess;                               \
  }
    AMPC_CONV(AMPC_F32, AMPC_F32)
    AMPC_CONV(AMPC_F32, AMPC_F16)
    AMPC_CONV(AMPC_F32, AMPC_BF16)
    AMPC_CONV(AMPC_F16, AMPC_F32)
    AMPC_CONV(AMPC_F16, AMPC_F16)
    AMPC_CONV(AMPC_F16, AMPC_BF16)
    AMPC_CONV(AMPC_BF16, AMPC_F32)
    AMPC_CONV(AMPC_BF16, AMPC_F16)
    AMPC_CONV(AMPC_BF16, AMPC_BF16)
#undef AMPC_CONV
    return false;
  }

  /// The contiguous single-dtype kernel of `Kind` (see contigKernel); false
  /// when the operands are not all one float dtype.
  template <int Kind>
  bool launchContig(int opCode, const UnaryAttrs &attrs, Buf y, Buf x0, Buf x1,
                    int64_t n) {
    ampc_dtype dt = y.dtype;
    if (!isFloatDtype(dt) || x0.dtype != dt || (Kind != 0 && x1.dtype != dt))
      return false;
    bool vec = dt == AMPC_F32
                   ? aligned16(y.data) && aligned16(x0.data) &&
                         (Kind == 0 || aligned16(x1.data))
                   : aligned8(y.data) && aligned8(x0.data) &&
                         (Kind == 0 || aligned8(x1.data));
    int blocks = blocksFor(vec ? (n + 3) / 4 : n);
    if (dt == AMPC_F32)
      contigKernel<AMPC_F32, Kind><<<blocks, kThreads, 0, stream_>>>(
          opCode, attrs, y.data, x0.data, x1.data, n, vec);
    else if (dt == AMPC_F16)
      contigKernel<AMPC_F16, Kind><<<blocks, kThreads, 0, stream_>>>(
          opCode, attrs, y.data, x0.data, x1.data, n, vec);
    else
      contigKernel<AMPC_BF16, Kind><<<blocks, kThreads, 0, stream_>>>(
          opCode, attrs, y.data, x0.data, x1.data, n, vec);
    lastLaunch = "elementwise kernel";
    return true;
  }
  ampc_status fill(Buf y, int64_t n, double value) override {
    ENTER();
    fillKernel<<<blocksFor(n), kThreads, 0, stream_>>>(
        y, n, static_cast<float>(value), static_cast<int64_t>(value));
    LAUNCH_CHECK("fill kernel");
    return AMPC_OK;
  }
  ampc_status random(Buf y, int64_t n, uint64_t seed, uint64_t offset,
                     bool normal, double p0, double p1) override {
    ENTER();
    lastLaunch = "random kernel";
    CUDA_TRY(launchRandom(stream_, y, n, seed, offset, normal, p0, p1));
    return AMPC_OK;
  }
  ampc_status unary(UnaryOp op, const UnaryAttrs &attrs, Buf y, Buf x,
                    int64_t n) override {
    ENTER();
    if (n == 0)
      return AMPC_OK;
    if (!launchContig<0>(static_cast<int>(op), attrs, y, x, x, n))
      unaryKernel<<<blocksFor(n), kThreads, 0, stream_>>>(op, attrs, y, x, n);
    LAUNCH_CHECK("unary kernel");
    return AMPC_OK;
  }
  ampc_status unaryBwd(UnaryOp op, const UnaryAttrs &attrs, Buf dx, Buf dy,
                       Buf x, int64_t n) override {
    ENTER();
    if (n == 0)
      return AMPC_OK;
    if (!launchContig<1>(static_cast<int>(op), attrs, dx, x, dy, n))
      unaryBwdKernel<<<blocksFor(n), kThreads, 0, stream_>>>(op, attrs, dx, dy,
                                                             x, n);
    LAUNCH_CHECK("unary backward kernel");
    return AMPC_OK;
  }
  ampc_status binary(BinaryOp op, Buf y, Buf a, Buf b,
                     const Walk &w0) override {
    ENTER();
    int64_t n = w0.numel();
    if (n == 0)
      return AMPC_OK;
    Walk w = collapseWalk(w0, 3);
    if (walkContiguous(w, 3) &&
        launchContig<2>(static_cast<int>(op), UnaryAttrs{}, y, a, b, n))
      ;
    else if (walkFits32(w, 3))
      binary32Kernel<<<blocksFor(n), kThreads, 0, stream_>>>(op, y, a, b,
                                                             toWalk32(w), n);
    else
      binaryKernel<<<blocksFor(n), kThreads, 0, stream_>>>(op, y, a, b, w, n);
    LAUNCH_CHECK("binary kernel");
    return AMPC_OK;
  }
  ampc_status binaryBwd(BinaryOp op, int which, Buf g, Buf dy, Buf a, Buf b,
                        const Walk &w0) override {
    ENTER();
    int64_t n = w0.numel();
    if (n == 0)
      return AMPC_OK;
    Walk w = collapseWalk(w0, 3);
    if (walkFits32(w, 3))
      binaryBwd32Kernel<<<blocksFor(n), kThreads, 0, stream_>>>(
          op, which, g, dy, a, b, toWalk32(w), n);
    else
      binaryBwdKernel<<<blocksFor(n), kThreads, 0, stream_>>>(op, which, g, dy,
                                                              a, b, w, n);
    LAUNCH_CHECK("binary backward kernel");
    return AMPC_OK;
  }
  ampc_status reduce(ReduceOp op, Buf y, Buf x, const Walk &outer,
                     const Walk &inner) override {
    ENTER();
    int64_t nOut = outer.numel(), nIn = inner.numel();
    if (nOut == 0)
      return AMPC_OK;
    Walk o = collapseWalk(outer, 2), in = collapseWalk(inner, 2);
    bool innerContig = in.rank == 1 && in.stride[1][0] == 1;
    // A full reduction of contiguous x: many blocks, then one.
    if (nOut == 1 && innerContig && nIn >= 8192) {
      Temp t(*this);
      int blocks = blocksFor(nIn);
      blocks = blocks < kFullBlocks ? blocks : kFullBlocks;
      AMPC_TRY(t.alloc(blocks * sizeof(float)));
      bool isMax = op == ReduceOp::Max;
      fullPartialKernel<<<blocks, kThreads, 0, stream_>>>(isMax, x, nIn,
                                                          t.f32());
      LAUNCH_CHECK("reduction partial kernel");
      fullFinishKernel<<<1, kThreads, 0, stream_>>>(
          isMax, op == ReduceOp::Mean, y, t.f32(), blocks, nIn);
      LAUNCH_CHECK("reduction finish kernel");
      return AMPC_OK;
    }
    // Column sums: x is [rows, cols] (rows `in.stride` apart), the kept
    // columns contiguous in x and y (bias gradients, broadcast backward).
    if (op != ReduceOp::Max && o.rank == 1 && o.stride[0][0] == 1 &&
        o.stride[1][0] == 1 && in.rank == 1 && in.stride[1][0] >= nOut &&
        nIn >= 64)
      return columnSums(y, Buf{nullptr, AMPC_F32}, x, Buf{nullptr, AMPC_F32},
                        nIn, nOut, in.stride[1][0], nullptr, nullptr,
                        op == ReduceOp::Mean ? static_cast<float>(nIn) : 1.0f);
    reduceKernel<<<warpBlocks(nOut), kThreads, 0, stream_>>>(op, y, x, o, in,
                                                             nOut, nIn);
    LAUNCH_CHECK("reduce kernel");
    return AMPC_OK;
  }
  ampc_status reduceMaxBwd(Buf dx, Buf dy, Buf x, Buf y, const Walk &outer,
                           const Walk &inner) override {
    ENTER();
    int64_t nOut = outer.numel(), nIn = inner.numel();
    reduceMaxBwdKernel<<<warpBlocks(nOut), kThreads, 0, stream_>>>(
        dx, dy, x, y, outer, inner, nOut, nIn);
    LAUNCH_CHECK("max backward kernel");
    return AMPC_OK;
  }
  /// y0 (/ div0), y1 = two-stage column sums (see colPartialKernel).
  ampc_status columnSums(Buf y0, Buf y1, Buf x, Buf x2, int64_t rows,
                         int64_t cols, int64_t rowStride, const float *mean,
                         const float *rstd, float div0) {
    int64_t chunks = colChunks(rows, cols);
    int64_t perChunk = (rows + chunks - 1) / chunks;
    chunks = (rows + perChunk - 1) / perChunk;
    bool two = mean != nullptr;
    Temp t(*this);
    AMPC_TRY(t.alloc((two ? 2 : 1) * chunks * cols * sizeof(float)));
    float *p0 = t.f32(), *p1 = two ? p0 + chunks * cols : nullptr;
    dim3 grid(static_cast<unsigned>((cols + kColTile - 1) / kColTile),
              static_cast<unsigned>(chunks));
    dim3 block(kColTile, kColRows);
    if (two)
      colPartialKernel<1><<<grid, block, 0, stream_>>>(
          x, x2, rows, cols, rowStride, perChunk, mean, rstd, p0, p1);
    else
      colPartialKernel<0><<<grid, block, 0, stream_>>>(
          x, x2, rows, cols, rowStride, perChunk, mean, rstd, p0, p1);
    LAUNCH_CHECK("column sum kernel");
    colFinishKernel<<<blocksFor(cols), kThreads, 0, stream_>>>(
        y0, y1, p0, p1, chunks, cols, div0);
    LAUNCH_CHECK("column sum finish kernel");
    return AMPC_OK;
  }

  ampc_status argmax(Buf y, Buf x, int64_t outer, int64_t dim,
                     int64_t inner) override {
    ENTER();
    int64_t n = outer * inner;
    argmaxKernel<<<blocksFor(n), kThreads, 0, stream_>>>(y, x, outer, dim,
                                                         inner);
    LAUNCH_CHECK("argmax kernel");
    return AMPC_OK;
  }
  ampc_status softmax(bool log, Buf y, Buf x, int64_t outer, int64_t dim,
                      int64_t inner) override {
    ENTER();
    if (inner == 1 && dim <= 32 * kRowRegs) {
      softmaxFusedKernel<<<warpBlocks(outer), kThreads, 0, stream_>>>(
          log, y, x, outer, dim);
      LAUNCH_CHECK("softmax kernel");
      return AMPC_OK;
    }
    softmaxKernel<<<warpBlocks(outer * inner), kThreads, 0, stream_>>>(
        log, y, x, outer, dim, inner);
    LAUNCH_CHECK("softmax kernel");
    return AMPC_OK;
  }
  ampc_status softmaxBwd(bool log, Buf dx, Buf dy, Buf y, int64_t outer,
                         int64_t dim, int64_t inner) override {
    ENTER();
    softmaxBwdKernel<<<warpBlocks(outer * inner), kThreads, 0, stream_>>>(
        log, dx, dy, y, outer, dim, inner);
    LAUNCH_CHECK("softmax backward kernel");
    return AMPC_OK;
  }

  ampc_status stats(bool rms, Buf x, int64_t rows, int64_t cols, float eps,
                    Temp &t) {
    AMPC_TRY(t.alloc(2 * rows * sizeof(float)));
    rowStatsKernel<<<warpBlocks(rows), kThreads, 0, stream_>>>(
        rms, x, rows, cols, eps, t.f32(), t.f32() + rows);
    LAUNCH_CHECK("row statistics kernel");
    return AMPC_OK;
  }
  ampc_status norm(bool rms, Buf y, Buf x, Buf w, Buf b, int64_t rows,
                   int64_t cols, float eps) override {
    ENTER();
    if (cols <= 32 * kRowRegs) {
      normFusedKernel<<<warpBlocks(rows), kThreads, 0, stream_>>>(
          rms, y, x, w, b, rows, cols, eps);
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
  ampc_status normBwd(bool rms, Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
                      int64_t rows, int64_t cols, float eps) override {
    ENTER();
    Temp t(*this);
    AMPC_TRY(stats(rms, x, rows, cols, eps, t));
    if (dx.data) {
      normBwdDxKernel<<<warpBlocks(rows), kThreads, 0, stream_>>>(
          rms, dx, dy, x, w, rows, cols, t.f32(), t.f32() + rows);
      LAUNCH_CHECK("norm backward kernel");
    }
    if (dw.data || db.data)
      AMPC_TRY(columnSums(dw, db, dy, x, rows, cols, cols, t.f32(),
                          t.f32() + rows, 1.0f));
    return AMPC_OK;
  }
  ampc_status pool(Buf y, Buf x, const PoolGeom &g) override {
    ENTER();
    poolKernel<<<blocksFor(g.planes * g.oh * g.ow), kThreads, 0, stream_>>>(
        y, x, g);
    LAUNCH_CHECK("pool kernel");
    return AMPC_OK;
  }
  ampc_status poolBwd(Buf dx, Buf dy, Buf x, const PoolGeom &g) override {
    ENTER();
    poolBwdKernel<<<blocksFor(g.planes * g.h * g.w), kThreads, 0, stream_>>>(
        dx, dy, x, g);
    LAUNCH_CHECK("pool backward kernel");
    return AMPC_OK;
  }
  ampc_status checkNonfinite(Buf x, int64_t n, int32_t site) override {
    ENTER();
    checkNonfiniteKernel<<<blocksFor(n), kThreads, 0, stream_>>>(
        x, n, checkWords + AMPC_CHECK_NONFINITE, site);
    LAUNCH_CHECK("non-finite check kernel");
    return AMPC_OK;
  }
  ampc_status embedding(Buf y, Buf table, Buf ids, int64_t n, int64_t vocab,
                        int64_t dim, int32_t site) override {
    ENTER();
    embeddingKernel<<<blocksFor(n * dim), kThreads, 0, stream_>>>(
        y, table, ids, n, vocab, dim, checkWords + AMPC_CHECK_INDEX, site);
    LAUNCH_CHECK("embedding kernel");
    return AMPC_OK;
  }
  ampc_status embeddingBwd(Buf dtable, Buf dy, Buf ids, int64_t n,
                           int64_t vocab, int64_t dim) override {
    ENTER();
    // Rows no id touches are zero (all-zero bits in every float dtype).
    CUDA_TRY(cudaMemsetAsync(dtable.data, 0, vocab * dim * eltBytes(dtable.dtype),
                             stream_));
    if (n == 0 || dim == 0)
      return AMPC_OK;
    if (n >= (int64_t(1) << 31))
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "cuda backend: embedding backward over %lld ids (at "
                      "most 2^31 - 1)",
                      static_cast<long long>(n));
    // Sort (id, position) pairs by id: stable, so each run of one id keeps
    // token order and its sum rounds exactly as the CPU backend's does.
    int endBit = 1;
    while (endBit < 63 && (int64_t(1) << endBit) <= vocab)
      ++endBit;
    size_t sortBytes = 0;
    CUDA_TRY(cub::DeviceRadixSort::SortPairs(
        nullptr, sortBytes, static_cast<const int64_t *>(nullptr),
        static_cast<int64_t *>(nullptr), static_cast<const int32_t *>(nullptr),
        static_cast<int32_t *>(nullptr), static_cast<int>(n), 0, endBit,
        stream_));
    size_t pairBytes = n * (2 * sizeof(int64_t) + 2 * sizeof(int32_t));
    pairBytes = (pairBytes + 255) & ~static_cast<size_t>(255);
    Temp t(*this);
    AMPC_TRY(t.alloc(pairBytes + sortBytes + 256));
    int64_t *keys = static_cast<int64_t *>(t.get());
    int64_t *sortedKeys = keys + n;
    int32_t *vals = reinterpret_cast<int32_t *>(sortedKeys + n);
    int32_t *sortedVals = vals + n;
    uintptr_t after = reinterpret_cast<uintptr_t>(t.get()) + pairBytes;
    void *sortTemp = reinterpret_cast<void *>((after + 255) &
                                              ~static_cast<uintptr_t>(255));
    embeddingKeysKernel<<<blocksFor(n), kThreads, 0, stream_>>>(ids, n, vocab,
                                                                keys, vals);
    LAUNCH_CHECK("embedding backward key kernel");
    CUDA_TRY(cub::DeviceRadixSort::SortPairs(
        sortTemp, sortBytes, keys, sortedKeys, vals, sortedVals,
        static_cast<int>(n), 0, endBit, stream_));
    lastLaunch = "embedding backward sort";
    embeddingSegmentsKernel<<<warpBlocks(n), kThreads, 0, stream_>>>(
        dtable, dy, sortedKeys, sortedVals, n, vocab, dim);
    LAUNCH_CHECK("embedding backward kernel");
    return AMPC_OK;
  }
  ampc_status crossEntropyRows(Buf logits, Buf labels, int64_t rows,
                               int64_t classes, Temp &t, int32_t site = -1) {
    AMPC_TRY(t.alloc(2 * sizeof(double) + 3 * rows * sizeof(float)));
    double *sums = static_cast<double *>(t.get());
    float *rowLoss = reinterpret_cast<float *>(sums + 2);
    crossEntropyOnlineKernel<<<warpBlocks(rows), kThreads, 0, stream_>>>(
        logits, labels, rows, classes, rowLoss, rowLoss + rows,
        rowLoss + 2 * rows, checkWords + AMPC_CHECK_INDEX, site);
    LAUNCH_CHECK("cross-entropy kernel");
    return sumTwo(rowLoss, rowLoss + rows, rows, sums);
  }
  /// sums[0..1] = sum a, sum b (f64, fixed order): many blocks, then one.
  ampc_status sumTwo(const float *a, const float *b, int64_t n, double *sums) {
    if (n < 65536) {
      sumTwoPartialKernel<<<1, kThreads, 0, stream_>>>(a, b, n, sums);
      LAUNCH_CHECK("sum kernel");
      return AMPC_OK;
    }
    int blocks = blocksFor(n);
    blocks = blocks < kFullBlocks ? blocks : kFullBlocks;
    Temp t(*this);
    AMPC_TRY(t.alloc(2 * blocks * sizeof(double)));
    sumTwoPartialKernel<<<blocks, kThreads, 0, stream_>>>(
        a, b, n, static_cast<double *>(t.get()));
    LAUNCH_CHECK("sum partial kernel");
    sumTwoFinishKernel<<<1, kThreads, 0, stream_>>>(
        static_cast<double *>(t.get()), blocks, sums);
    LAUNCH_CHECK("sum finish kernel");
    return AMPC_OK;
  }
  ampc_status crossEntropy(Buf loss, Buf logits, Buf labels, int64_t rows,
                           int64_t classes, int32_t site) override {
    ENTER();
    Temp t(*this);
    AMPC_TRY(crossEntropyRows(logits, labels, rows, classes, t, site));
    crossEntropyFinishKernel<<<1, 1, 0, stream_>>>(
        loss, static_cast<double *>(t.get()));
    LAUNCH_CHECK("cross-entropy finish kernel");
    return AMPC_OK;
  }
  ampc_status crossEntropyBwd(Buf dlogits, Buf dloss, Buf logits, Buf labels,
                              int64_t rows, int64_t classes) override {
    ENTER();
    Temp t(*this);
    AMPC_TRY(crossEntropyRows(logits, labels, rows, classes, t));
    double *sums = static_cast<double *>(t.get());
    const float *rowLse = reinterpret_cast<float *>(sums + 2) + 2 * rows;
    crossEntropyBwdKernel<<<blocksFor(rows * classes), kThreads, 0, stream_>>>(
        dlogits, dloss, logits, labels, rows, classes, rowLse, sums);
    LAUNCH_CHECK("cross-entropy backward kernel");
    return AMPC_OK;
  }
  ampc_status mse(Buf loss, Buf a, Buf b, int64_t n) override {
    ENTER();
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
  ampc_status mseBwd(Buf da, Buf db, Buf dloss, Buf a, Buf b,
                     int64_t n) override {
    ENTER();
    mseBwdKernel<<<blocksFor(n), kThreads, 0, stream_>>>(da, db, dloss, a, b,
                                                         n);
    LAUNCH_CHECK("mse backward kernel");
    return AMPC_OK;
  }

  /// Mixed input dtypes (cuBLASLt wants one type for A and B): bf16 tensor
  /// cores over exact bf16 parts of each operand (bf16_split.h). With a, b
  /// split into pa, pb parts, the products of parts i, j with i + j <= 2 are
  /// accumulated in f32, smallest first, then bias, activation and one
  /// rounding to C. f16 x bf16 keeps every product (exact inputs); with an
  /// f32 operand the dropped products are below 2^-23 of |a||b|, under one
  /// f32 rounding of the sum.
  ampc_status gemmSplit(const GemmDesc &d) {
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

  ampc_status gemm(const GemmDesc &d) override {
    ENTER();
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
  ampc_status geluInPlace(const GemmDesc &d) {
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

  ampc_status im2col(Buf col, Buf x, const ConvGeom &g) override {
    ENTER();
    im2colKernel<<<blocksFor(g.rows() * g.columns()), kThreads,
                   0, stream_>>>(col, x, g);
    LAUNCH_CHECK("im2col kernel");
    return AMPC_OK;
  }
  ampc_status col2im(float *dx, const float *col, const ConvGeom &g) override {
    ENTER();
    col2imKernel<<<blocksFor(g.imageSize()), kThreads, 0, stream_>>>(
        dx, col, g);
    LAUNCH_CHECK("col2im kernel");
    return AMPC_OK;
  }

  /// Splits a tensor list into launches of at most kMtMax tensors; `fill`
  /// adds each tensor's extra pointers, `launch` runs one chunk on `blocks`
  /// blocks with `firstBlock` the number of blocks of earlier chunks.
  template <typename Fill, typename Launch>
  ampc_status forChunks(const TensorList &g, Fill fill, Launch launch) {
    MtChunk c{};
    int64_t firstBlock = 0;
    auto flush = [&]() -> ampc_status {
      if (c.count == 0)
        return AMPC_OK;
      int32_t blocks = c.blockStart[c.count];
      AMPC_TRY(launch(c, blocks, firstBlock));
      firstBlock += blocks;
      c.count = 0;
      return AMPC_OK;
    };
    for (int32_t t = 0; t < g.count; ++t) {
      if (g.numels[t] == 0)
        continue;
      int64_t blocks = (g.numels[t] + kMtPerBlock - 1) / kMtPerBlock;
      if (c.count == kMtMax || c.blockStart[c.count] + blocks > (1 << 30))
        AMPC_TRY(flush());
      int k = c.count;
      c.data[k] = g.data[t];
      c.dtype[k] = static_cast<int8_t>(g.dtypes[t]);
      c.numel[k] = g.numels[t];
      c.aux0[k] = c.aux1[k] = c.aux2[k] = c.model[k] = nullptr;
      c.auxDtype[k] = 0;
      fill(c, k, t);
      c.blockStart[k + 1] = c.blockStart[k] + static_cast<int32_t>(blocks);
      c.count = k + 1;
    }
    return flush();
  }
  static int64_t mtBlocks(const TensorList &g) {
    int64_t b = 0;
    for (int32_t t = 0; t < g.count; ++t)
      b += (g.numels[t] + kMtPerBlock - 1) / kMtPerBlock;
    return b;
  }

  ampc_status checkFiniteUnscale(Buf foundInf, const TensorList &g,
                                 const float *scale) override {
    ENTER();
    Temp flag(*this);
    AMPC_TRY(flag.alloc(sizeof(float)));
    CUDA_TRY(cudaMemsetAsync(flag.get(), 0, sizeof(float), stream_));
    AMPC_TRY(forChunks(
        g, [](MtChunk &, int, int32_t) {},
        [&](const MtChunk &c, int32_t blocks, int64_t) -> ampc_status {
          lastLaunch = "unscale kernel";
          CUDA_TRY(launchUnscale(stream_, c, blocks, flag.f32(), scale));
          return AMPC_OK;
        }));
    lastLaunch = "found_inf kernel";
    CUDA_TRY(launchStoreFlag(stream_, foundInf, flag.f32()));
    return AMPC_OK;
  }
  ampc_status updateScale(float *scale, int32_t *growthTracker,
                          int32_t *hysteresisLeft, Buf foundInf,
                          float growthFactor, float backoffFactor,
                          int32_t growthInterval, int32_t hysteresis,
                          float minScale, float maxScale) override {
    ENTER();
    lastLaunch = "scale update kernel";
    CUDA_TRY(launchUpdateScale(stream_, scale, growthTracker, hysteresisLeft,
                               foundInf, growthFactor, backoffFactor,
                               growthInterval, hysteresis, minScale, maxScale));
    return AMPC_OK;
  }
  ampc_status clipGradNorm(float *totalNorm, const TensorList &g, float maxNorm,
                           Buf foundInf) override {
    ENTER();
    Temp t(*this);
    int64_t slots = mtBlocks(g);
    AMPC_TRY(t.alloc((slots + 1) * sizeof(double) + sizeof(double)));
    double *partials = static_cast<double *>(t.get());
    if (slots == 0)
      CUDA_TRY(cudaMemsetAsync(partials, 0, sizeof(double), stream_));
    AMPC_TRY(forChunks(
        g, [](MtChunk &, int, int32_t) {},
        [&](const MtChunk &c, int32_t blocks, int64_t first) -> ampc_status {
          lastLaunch = "norm kernel";
          CUDA_TRY(launchSumSquares(stream_, c, blocks, partials + first,
                                    foundInf));
          return AMPC_OK;
        }));
    float *coef = reinterpret_cast<float *>(partials + slots + 1);
    lastLaunch = "clip coefficient kernel";
    CUDA_TRY(launchClipCoef(stream_, partials, slots > 0 ? slots : 1, maxNorm,
                            coef, totalNorm, foundInf));
    return forChunks(
        g, [](MtChunk &, int, int32_t) {},
        [&](const MtChunk &c, int32_t blocks, int64_t) -> ampc_status {
          lastLaunch = "clip kernel";
          CUDA_TRY(launchScale(stream_, c, blocks, coef, foundInf));
          return AMPC_OK;
        });
  }
  ampc_status sgd(const TensorList &params, const TensorList &grads,
                  void *const *bufs, const SgdScalars &s, Buf foundInf,
                  const ModelCopies &models, const LowUpdate &low) override {
    ENTER();
    if (low.special(params.count)) {
      if (low.counter) {
        lastLaunch = "sgd counter kernel";
        CUDA_TRY(launchCountUpdate(stream_, low.counter, foundInf));
      }
      MtLow ml{low.mode, low.seed, low.paramBase, low.counter};
      return forChunks(
          params,
          [&](MtChunk &c, int k, int32_t t) {
            c.aux0[k] = grads.data[t];
            c.auxDtype[k] = static_cast<int8_t>(grads.dtypes[t]);
            c.aux1[k] = s.hasMomentum ? bufs[t] : nullptr;
            c.stateDtype[k] = static_cast<int8_t>(low.stateDtype(t));
            c.index[k] = t;
            bool low16 = params.dtypes[t] != AMPC_F32;
            c.model[k] = low16 ? low.comp(t) : models.at(t);
            c.modelDtype[k] = static_cast<int8_t>(
                !low16 && models.at(t) ? models.dtypes[t] : params.dtypes[t]);
          },
          [&](const MtChunk &c, int32_t blocks, int64_t) -> ampc_status {
            lastLaunch = "sgd kernel";
            CUDA_TRY(launchSgdLow(stream_, c, blocks, s, foundInf, ml));
            return AMPC_OK;
          });
    }
    return forChunks(
        params,
        [&](MtChunk &c, int k, int32_t t) {
          c.aux0[k] = grads.data[t];
          c.auxDtype[k] = static_cast<int8_t>(grads.dtypes[t]);
          c.aux1[k] = s.hasMomentum ? bufs[t] : nullptr;
          c.model[k] = models.at(t);
          c.modelDtype[k] =
              static_cast<int8_t>(models.at(t) ? models.dtypes[t] : AMPC_F32);
        },
        [&](const MtChunk &c, int32_t blocks, int64_t) -> ampc_status {
          lastLaunch = "sgd kernel";
          CUDA_TRY(launchSgd(stream_, c, blocks, s, foundInf));
          return AMPC_OK;
        });
  }
  ampc_status adamw(const TensorList &params, const TensorList &grads,
                    void *const *expAvgs, void *const *expAvgSqs, int32_t *step,
                    double lr, double beta1, double beta2, double eps,
                    double weightDecay, Buf foundInf,
                    const float *lrScale,
                    const ModelCopies &models,
                    const LowUpdate &low) override {
    ENTER();
    Temp t(*this);
    AMPC_TRY(t.alloc(sizeof(AdamwScalars)));
    AdamwScalars *sc = static_cast<AdamwScalars *>(t.get());
    lastLaunch = "adamw step kernel";
    CUDA_TRY(launchAdamwStep(stream_, step, lr, beta1, beta2, eps, weightDecay,
                             sc, foundInf, lrScale));
    if (low.special(params.count)) {
      // The key's counter is the step count after this update's increment.
      MtLow ml{low.mode, low.seed, low.paramBase, step};
      return forChunks(
          params,
          [&](MtChunk &c, int k, int32_t tt) {
            c.aux0[k] = grads.data[tt];
            c.auxDtype[k] = static_cast<int8_t>(grads.dtypes[tt]);
            c.aux1[k] = expAvgs[tt];
            c.aux2[k] = expAvgSqs[tt];
            c.stateDtype[k] = static_cast<int8_t>(low.stateDtype(tt));
            c.index[k] = tt;
            bool low16 = params.dtypes[tt] != AMPC_F32;
            c.model[k] = low16 ? low.comp(tt) : models.at(tt);
            c.modelDtype[k] = static_cast<int8_t>(
                !low16 && models.at(tt) ? models.dtypes[tt]
                                        : params.dtypes[tt]);
          },
          [&](const MtChunk &c, int32_t blocks, int64_t) -> ampc_status {
            lastLaunch = "adamw kernel";
            CUDA_TRY(launchAdamwLow(stream_, c, blocks, sc, foundInf, ml));
            return AMPC_OK;
          });
    }
    return forChunks(
        params,
        [&](MtChunk &c, int k, int32_t t) {
          c.aux0[k] = grads.data[t];
          c.auxDtype[k] = static_cast<int8_t>(grads.dtypes[t]);
          c.aux1[k] = expAvgs[t];
          c.aux2[k] = expAvgSqs[t];
          c.model[k] = models.at(t);
          c.modelDtype[k] =
              static_cast<int8_t>(models.at(t) ? models.dtypes[t] : AMPC_F32);
        },
        [&](const MtChunk &c, int32_t blocks, int64_t) -> ampc_status {
          lastLaunch = "adamw kernel";
          CUDA_TRY(launchAdamw(stream_, c, blocks, sc, foundInf));
          return AMPC_OK;
        });
  }

  // Gradient accumulation (docs/optimizer.md): one launch per tensor, then the
  // index advances (kernels of one stream run in order).
  ampc_status gradAccumulate(const TensorList &accs, const TensorList &grads,
                             int32_t *micro, int64_t k) override {
    ENTER();
    for (int32_t t = 0; t < accs.count; ++t) {
      int64_t n = accs.numels[t];
      if (n == 0)
        continue;
      gradAccumulateKernel<<<blocksFor(n), kThreads, 0, stream_>>>(
          static_cast<float *>(accs.data[t]), grads.data[t], grads.dtypes[t],
          n, micro);
      LAUNCH_CHECK("grad_accumulate kernel");
    }
    advanceMicroKernel<<<1, 1, 0, stream_>>>(micro, k);
    LAUNCH_CHECK("grad_accumulate index kernel");
    return AMPC_OK;
  }

  ampc_status lrSchedule(float *factor, int32_t *step, const LrSchedule &s,
                         Buf foundInf) override {
    ENTER();
    lastLaunch = "lr schedule kernel";
    CUDA_TRY(launchLrSchedule(stream_, factor, step, s, foundInf));
    return AMPC_OK;
  }

  // Batch norm and dropout (docs/language.md, "batch_norm and dropout";
  // kernels in cuda_norm_dropout.cuh).
  ampc_status batchNorm(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv,
                        bool training, int64_t n, int64_t c, int64_t inner,
                        float eps) override {
    ENTER();
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
  ampc_status batchNormBwd(Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
                           Buf rm, Buf rv, bool training, int64_t n,
                           int64_t c, int64_t inner, float eps) override {
    ENTER();
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
  ampc_status batchNormUpdate(Buf newMean, Buf newVar, Buf x, Buf rm, Buf rv,
                              int64_t n, int64_t c, int64_t inner,
                              float momentum) override {
    ENTER();
    batchNormUpdateKernel<<<c, kBnThreads, 0, stream_>>>(
        newMean, newVar, x, rm, rv, BnGeom{n, c, inner}, momentum);
    LAUNCH_CHECK("batch_norm update kernel");
    return AMPC_OK;
  }
  ampc_status dropout(Buf y, Buf x, const int32_t *step, uint64_t seed,
                      uint64_t key, float p, int64_t numel,
                      DropoutShard shard) override {
    ENTER();
    dropoutKernel<<<blocksFor(numel), kThreads, 0, stream_>>>(
        y, x, step, seed, key, p, numel, shard);
    LAUNCH_CHECK("dropout kernel");
    return AMPC_OK;
  }
  ampc_status counterNext(int32_t *next, const int32_t *counter) override {
    ENTER();
    counterNextKernel<<<1, 1, 0, stream_>>>(next, counter);
    LAUNCH_CHECK("counter kernel");
    return AMPC_OK;
  }
  // ampc_copy_if_flag (cuda_snapshot.cu): one launch per 64 ranges.
  ampc_status copyIfFlag(const float *flag, int count, void *const *dsts,
                         const void *const *srcs,
                         const int64_t *bytes) override {
    ENTER();
    for (int i = 0; i < count;) {
      cuda::CopyChunk c{};
      for (; i < count && c.count < cuda::CopyChunk::kMaxRanges; ++i) {
        if (bytes[i] <= 0)
          continue;
        c.dst[c.count] = dsts[i];
        c.src[c.count] = srcs[i];
        c.bytes[c.count] = bytes[i];
        ++c.count;
      }
      if (c.count == 0)
        continue;
      cudaError_t err = cuda::launchCopyIfFlag(stream_, flag, c);
      lastLaunch = "predicated copy kernel";
      if (err != cudaSuccess)
        return cudaFail(err, "predicated copy kernel");
    }
    return AMPC_OK;
  }

private:
  int device;
  cudaStream_t stream_ = nullptr;
  bool usePool = true;
  const char *lastLaunch = "none";
  /// Page-locked staging of pageable uploads (stagedUpload); larger copies
  /// go directly.
  static constexpr int kUploadSlots = 4;
  static constexpr size_t kUploadMaxBytes = size_t(256) << 20;
  struct UploadSlot {
    void *host = nullptr;
    size_t capacity = 0;
    cudaEvent_t done = nullptr;
    bool busy = false;
  };
  UploadSlot uploads[kUploadSlots];
  uint64_t nextUpload = 0;
  void *readStage = nullptr;
  cudaEvent_t readEvents[kReadSlots] = {};
  LtGemm lt;
};

} // namespace
} // namespace cuda

bool cudaPluginAvailable() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

Backend *cudaPluginCreate(int device, ampc_status *status) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    *status = setError(
        AMPC_ERROR_NO_DEVICE, "cuda backend: no usable CUDA device (%s)",
        err != cudaSuccess ? cudaGetErrorString(err) : "no devices found");
    cudaGetLastError(); // clear the sticky-free error state
    return nullptr;
  }
  if (device < 0 || device >= count) {
    *status = setError(AMPC_ERROR_NO_DEVICE,
                       "cuda backend: device %d requested, %d present", device,
                       count);
    return nullptr;
  }
  auto *be = new cuda::CudaBackend(device);
  *status = be->init();
  if (*status != AMPC_OK) {
    delete be;
    return nullptr;
  }
  return be;
}

} // namespace ampc
