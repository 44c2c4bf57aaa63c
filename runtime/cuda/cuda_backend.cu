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
#include "../src/philox.h"
#include "cuda_internal.h"

#include <math.h>

namespace ampc {
namespace cuda {
namespace {

constexpr int kThreads = 256;

int blocksFor(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 65535 * 4 ? (b > 0 ? b : 1) : 65535 * 4);
}

#define GRID_STRIDE(i, n)                                                      \
  for (int64_t i =                                                             \
           blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;        \
       i < (n); i += static_cast<int64_t>(gridDim.x) * blockDim.x)

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

__device__ __forceinline__ float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ double warpSumD(double v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ bool deviceFlag(Buf f) {
  if (!f.data)
    return false;
  return f.dtype == AMPC_I32 ? *static_cast<const int32_t *>(f.data) != 0
                             : *static_cast<const float *>(f.data) != 0.0f;
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

__global__ void randomKernel(Buf y, int64_t n, uint64_t seed, uint64_t offset,
                             bool normal, double p0, double p1) {
  GRID_STRIDE(i, n) {
    double v = normal ? philoxNormal(seed, offset, i, p0, p1)
                      : philoxUniform(seed, offset, i, p0, p1);
    storeF32(y.data, y.dtype, i, static_cast<float>(v));
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
  int lane = threadIdx.x & 31;
  int64_t warp =
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t o = warp; o < nOut; o += warps) {
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
  int lane = threadIdx.x & 31;
  int64_t warp =
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t o = warp; o < nOut; o += warps) {
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
  int lane = threadIdx.x & 31;
  int64_t warp =
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t r = warp; r < outer * inner; r += warps) {
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
  int lane = threadIdx.x & 31;
  int64_t warp =
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t r = warp; r < outer * inner; r += warps) {
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
  int lane = threadIdx.x & 31;
  int64_t warp =
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t r = warp; r < rows; r += warps) {
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
  int lane = threadIdx.x & 31;
  int64_t warp =
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t r = warp; r < rows; r += warps) {
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

/// dw, db: one thread per column, rows summed in order.
__global__ void normBwdParamKernel(Buf dw, Buf db, Buf dy, Buf x, int64_t rows,
                                   int64_t cols, const float *mean,
                                   const float *rstd) {
  GRID_STRIDE(j, cols) {
    float sw = 0, sb = 0;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t i = r * cols + j;
      float g = loadF32(dy.data, dy.dtype, i);
      sw += g * (loadF32(x.data, x.dtype, i) - mean[r]) * rstd[r];
      sb += g;
    }
    if (dw.data)
      storeF32(dw.data, dw.dtype, j, sw);
    if (db.data)
      storeF32(db.data, db.dtype, j, sb);
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

__global__ void embeddingKernel(Buf y, Buf table, Buf ids, int64_t n,
                                int64_t vocab, int64_t dim) {
  GRID_STRIDE(i, n * dim) {
    int64_t id = loadIndex(ids.data, ids.dtype, i / dim);
    bool ok = id >= 0 && id < vocab;
    storeF32(y.data, y.dtype, i,
             ok ? loadF32(table.data, table.dtype, id * dim + i % dim) : 0.0f);
  }
}

/// One thread per column walks the ids in order: deterministic scatter-add.
__global__ void embeddingBwdKernel(float *acc, Buf dy, Buf ids, int64_t n,
                                   int64_t vocab, int64_t dim) {
  GRID_STRIDE(j, dim) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t id = loadIndex(ids.data, ids.dtype, i);
      if (id >= 0 && id < vocab)
        acc[id * dim + j] += loadF32(dy.data, dy.dtype, i * dim + j);
    }
  }
}

/// Per-row loss (lse - logit[label]) and validity, one warp per row.
__global__ void crossEntropyRowsKernel(Buf logits, Buf labels, int64_t rows,
                                       int64_t classes, float *rowLoss,
                                       float *rowValid, float *rowLse) {
  int lane = threadIdx.x & 31;
  int64_t warp =
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t r = warp; r < rows; r += warps) {
    int64_t base = r * classes;
    float m = -INFINITY;
    for (int64_t c = lane; c < classes; c += 32)
      m = fmaxf(m, loadF32(logits.data, logits.dtype, base + c));
    m = warpMax(m);
    float s = 0;
    for (int64_t c = lane; c < classes; c += 32)
      s += expf(loadF32(logits.data, logits.dtype, base + c) - m);
    s = warpSum(s);
    if (lane == 0) {
      int64_t label = loadIndex(labels.data, labels.dtype, r);
      float lse = m + logf(s);
      bool ignored = label == -100;
      bool inRange = label >= 0 && label < classes;
      rowLse[r] = lse;
      rowValid[r] = ignored ? 0.0f : 1.0f;
      rowLoss[r] = ignored ? 0.0f
                   : inRange
                       ? lse - loadF32(logits.data, logits.dtype, base + label)
                       : NAN;
    }
  }
}

/// out[0] = sum(a[0..n)), out[1] = sum(b[0..n)) in one block, fixed order.
__global__ void sumTwoKernel(const float *a, const float *b, int64_t n,
                             double *out) {
  __shared__ double sa[32], sb[32];
  double x = 0, y = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    x += a[i];
    if (b)
      y += b[i];
  }
  x = warpSumD(x);
  y = warpSumD(y);
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (lane == 0) {
    sa[w] = x;
    sb[w] = y;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double tx = 0, ty = 0;
    for (int i = 0; i < (blockDim.x >> 5); ++i) {
      tx += sa[i];
      ty += sb[i];
    }
    out[0] = tx;
    out[1] = ty;
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
  int64_t hw = g.oh * g.ow;
  GRID_STRIDE(i, g.channels * g.kh * g.kw * hw) {
    int64_t row = i / hw, pix = i % hw;
    int64_t c = row / (g.kh * g.kw), ky = (row / g.kw) % g.kh, kx = row % g.kw;
    int64_t iy = (pix / g.ow) * g.sh - g.ph + ky * g.dh;
    int64_t ix = (pix % g.ow) * g.sw - g.pw + kx * g.dw;
    if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w)
      storeF32(col.data, col.dtype, i, 0.0f);
    else
      convertElement(col.data, col.dtype, i, x.data, x.dtype,
                     (c * g.h + iy) * g.w + ix);
  }
}

/// One thread per image element gathers its column entries.
__global__ void col2imKernel(float *dx, const float *col, ConvGeom g) {
  int64_t hw = g.oh * g.ow;
  GRID_STRIDE(i, g.channels * g.h * g.w) {
    int64_t c = i / (g.h * g.w), iy = (i / g.w) % g.h, ix = i % g.w;
    float acc = 0;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      int64_t ty = iy + g.ph - ky * g.dh;
      if (ty < 0 || ty % g.sh || ty / g.sh >= g.oh)
        continue;
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        int64_t tx = ix + g.pw - kx * g.dw;
        if (tx < 0 || tx % g.sw || tx / g.sw >= g.ow)
          continue;
        acc += col[((c * g.kh + ky) * g.kw + kx) * hw + (ty / g.sh) * g.ow +
                   tx / g.sw];
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

// -------------------------------------------------------------------- AMP --

__global__ void unscaleKernel(float *foundInf, Buf g, int64_t n,
                              const float *scale) {
  float inv = scale ? 1.0f / *scale : 1.0f;
  bool bad = false;
  GRID_STRIDE(i, n) {
    float v = loadF32(g.data, g.dtype, i);
    bad |= !isFinite(v);
    if (inv != 1.0f)
      storeF32(g.data, g.dtype, i, v * inv);
  }
  if (bad)
    *foundInf = 1.0f; // every writer stores the same value
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

constexpr int kNormBlocks = 256;

/// partials[blockIdx] = sum of squares of this block's share (f64).
__global__ void sumSquaresKernel(Buf g, int64_t n, double *partials,
                                 Buf foundInf) {
  __shared__ double warpSums[kThreads / 32];
  if (deviceFlag(foundInf))
    return;
  double s = 0;
  GRID_STRIDE(i, n) {
    double v = loadF32(g.data, g.dtype, i);
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

__global__ void clipCoefKernel(const double *partials, int64_t count,
                               float maxNorm, float *coef, float *totalNorm,
                               Buf foundInf) {
  if (deviceFlag(foundInf))
    return;
  double s = 0;
  for (int64_t i = 0; i < count; ++i)
    s += partials[i];
  float total = static_cast<float>(sqrt(s));
  *coef = clipCoefficient(total, maxNorm);
  if (totalNorm)
    *totalNorm = total;
}

__global__ void scaleByKernel(Buf g, int64_t n, const float *coef,
                              Buf foundInf) {
  if (deviceFlag(foundInf))
    return;
  float c = *coef;
  GRID_STRIDE(i, n) {
    storeF32(g.data, g.dtype, i, loadF32(g.data, g.dtype, i) * c);
  }
}

__global__ void sgdKernel(Buf p, Buf g, float *buf, int64_t n, SgdScalars s,
                          Buf foundInf) {
  if (deviceFlag(foundInf))
    return;
  GRID_STRIDE(i, n) {
    float pv = loadF32(p.data, p.dtype, i);
    sgdElement(pv, loadF32(g.data, g.dtype, i), buf ? buf + i : nullptr, s);
    storeF32(p.data, p.dtype, i, pv);
  }
}

__global__ void adamwStepKernel(int32_t *step, double lr, double beta1,
                                double beta2, double eps, double weightDecay,
                                AdamwScalars *out, Buf foundInf) {
  if (deviceFlag(foundInf))
    return;
  *step += 1;
  *out = adamwScalars(lr, beta1, beta2, eps, weightDecay, *step);
}

__global__ void adamwKernel(Buf p, Buf g, float *m, float *v, int64_t n,
                            const AdamwScalars *s, Buf foundInf) {
  if (deviceFlag(foundInf))
    return;
  AdamwScalars sc = *s;
  GRID_STRIDE(i, n) {
    float pv = loadF32(p.data, p.dtype, i);
    adamwElement(pv, loadF32(g.data, g.dtype, i), m[i], v[i], sc);
    storeF32(p.data, p.dtype, i, pv);
  }
}

// ---------------------------------------------------------------- backend --

#define LAUNCH_CHECK(what)                                                     \
  do {                                                                         \
    cudaError_t launchErr_ = cudaGetLastError();                               \
    if (launchErr_ != cudaSuccess)                                             \
      return cudaFail(launchErr_, what);                                       \
  } while (0)

#define CUDA_TRY(call)                                                         \
  do {                                                                         \
    cudaError_t cudaErr_ = (call);                                             \
    if (cudaErr_ != cudaSuccess)                                               \
      return cudaFail(cudaErr_, #call);                                        \
  } while (0)

int warpBlocks(int64_t rows) { return blocksFor(rows * 32); }

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(int device) : device(device) {}
  ~CudaBackend() override {
    if (stream_) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
  }

  ampc_status init() {
    CUDA_TRY(cudaSetDevice(device));
    CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    return lt.init(stream_);
  }

  ampc_backend kind() const override { return AMPC_BACKEND_CUDA; }
  void *stream() override { return stream_; }

  ampc_status alloc(size_t bytes, void **ptr) override {
    cudaError_t err = cudaMalloc(ptr, bytes);
    if (err == cudaErrorMemoryAllocation)
      return setError(AMPC_ERROR_OUT_OF_MEMORY,
                      "cuda backend: cannot allocate %zu bytes", bytes);
    return err == cudaSuccess ? AMPC_OK : cudaFail(err, "cudaMalloc");
  }
  ampc_status release(void *ptr) override {
    // Work queued on the stream may still use the memory.
    CUDA_TRY(cudaStreamSynchronize(stream_));
    CUDA_TRY(cudaFree(ptr));
    return AMPC_OK;
  }
  ampc_status copyBytes(void *dst, const void *src, size_t bytes,
                        ampc_memcpy_kind kind) override {
    static const cudaMemcpyKind kinds[] = {
        cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
        cudaMemcpyDeviceToDevice, cudaMemcpyHostToHost};
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, kinds[kind], stream_));
    if (kind == AMPC_MEMCPY_DEVICE_TO_HOST || kind == AMPC_MEMCPY_HOST_TO_HOST)
      CUDA_TRY(cudaStreamSynchronize(stream_));
    return AMPC_OK;
  }
  ampc_status setBytes(void *ptr, int value, size_t bytes) override {
    CUDA_TRY(cudaMemsetAsync(ptr, value, bytes, stream_));
    return AMPC_OK;
  }
  ampc_status synchronize() override {
    CUDA_TRY(cudaStreamSynchronize(stream_));
    return AMPC_OK;
  }
  ampc_status tempAlloc(size_t bytes, void **ptr) override {
    cudaError_t err = cudaMallocAsync(ptr, bytes, stream_);
    if (err == cudaErrorMemoryAllocation)
      return setError(AMPC_ERROR_OUT_OF_MEMORY,
                      "cuda backend: cannot allocate %zu scratch bytes", bytes);
    return err == cudaSuccess ? AMPC_OK : cudaFail(err, "cudaMallocAsync");
  }
  void tempFree(void *ptr) override { cudaFreeAsync(ptr, stream_); }

  ampc_status copy(Buf dst, Buf src, const Walk &w, float scale) override {
    int64_t n = w.numel();
    copyKernel<<<blocksFor(n), kThreads, 0, stream_>>>(dst, src, w, scale, n);
    LAUNCH_CHECK("copy kernel");
    return AMPC_OK;
  }
  ampc_status fill(Buf y, int64_t n, double value) override {
    fillKernel<<<blocksFor(n), kThreads, 0, stream_>>>(
        y, n, static_cast<float>(value), static_cast<int64_t>(value));
    LAUNCH_CHECK("fill kernel");
    return AMPC_OK;
  }
  ampc_status random(Buf y, int64_t n, uint64_t seed, uint64_t offset,
                     bool normal, double p0, double p1) override {
    randomKernel<<<blocksFor(n), kThreads, 0, stream_>>>(y, n, seed, offset,
                                                         normal, p0, p1);
    LAUNCH_CHECK("random kernel");
    return AMPC_OK;
  }
  ampc_status unary(UnaryOp op, const UnaryAttrs &attrs, Buf y, Buf x,
                    int64_t n) override {
    unaryKernel<<<blocksFor(n), kThreads, 0, stream_>>>(op, attrs, y, x, n);
    LAUNCH_CHECK("unary kernel");
    return AMPC_OK;
  }
  ampc_status unaryBwd(UnaryOp op, const UnaryAttrs &attrs, Buf dx, Buf dy,
                       Buf x, int64_t n) override {
    unaryBwdKernel<<<blocksFor(n), kThreads, 0, stream_>>>(op, attrs, dx, dy, x,
                                                           n);
    LAUNCH_CHECK("unary backward kernel");
    return AMPC_OK;
  }
  ampc_status binary(BinaryOp op, Buf y, Buf a, Buf b, const Walk &w) override {
    int64_t n = w.numel();
    binaryKernel<<<blocksFor(n), kThreads, 0, stream_>>>(op, y, a, b, w, n);
    LAUNCH_CHECK("binary kernel");
    return AMPC_OK;
  }
  ampc_status binaryBwd(BinaryOp op, int which, Buf g, Buf dy, Buf a, Buf b,
                        const Walk &w) override {
    int64_t n = w.numel();
    binaryBwdKernel<<<blocksFor(n), kThreads, 0, stream_>>>(op, which, g, dy, a,
                                                            b, w, n);
    LAUNCH_CHECK("binary backward kernel");
    return AMPC_OK;
  }
  ampc_status reduce(ReduceOp op, Buf y, Buf x, const Walk &outer,
                     const Walk &inner) override {
    int64_t nOut = outer.numel(), nIn = inner.numel();
    reduceKernel<<<warpBlocks(nOut), kThreads, 0, stream_>>>(op, y, x, outer,
                                                             inner, nOut, nIn);
    LAUNCH_CHECK("reduce kernel");
    return AMPC_OK;
  }
  ampc_status reduceMaxBwd(Buf dx, Buf dy, Buf x, Buf y, const Walk &outer,
                           const Walk &inner) override {
    int64_t nOut = outer.numel(), nIn = inner.numel();
    reduceMaxBwdKernel<<<warpBlocks(nOut), kThreads, 0, stream_>>>(
        dx, dy, x, y, outer, inner, nOut, nIn);
    LAUNCH_CHECK("max backward kernel");
    return AMPC_OK;
  }
  ampc_status argmax(Buf y, Buf x, int64_t outer, int64_t dim,
                     int64_t inner) override {
    int64_t n = outer * inner;
    argmaxKernel<<<blocksFor(n), kThreads, 0, stream_>>>(y, x, outer, dim,
                                                         inner);
    LAUNCH_CHECK("argmax kernel");
    return AMPC_OK;
  }
  ampc_status softmax(bool log, Buf y, Buf x, int64_t outer, int64_t dim,
                      int64_t inner) override {
    softmaxKernel<<<warpBlocks(outer * inner), kThreads, 0, stream_>>>(
        log, y, x, outer, dim, inner);
    LAUNCH_CHECK("softmax kernel");
    return AMPC_OK;
  }
  ampc_status softmaxBwd(bool log, Buf dx, Buf dy, Buf y, int64_t outer,
                         int64_t dim, int64_t inner) override {
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
    Temp t(*this);
    AMPC_TRY(stats(rms, x, rows, cols, eps, t));
    normKernel<<<blocksFor(rows * cols), kThreads, 0, stream_>>>(
        y, x, w, b, rows, cols, t.f32(), t.f32() + rows);
    LAUNCH_CHECK("norm kernel");
    return AMPC_OK;
  }
  ampc_status normBwd(bool rms, Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
                      int64_t rows, int64_t cols, float eps) override {
    Temp t(*this);
    AMPC_TRY(stats(rms, x, rows, cols, eps, t));
    if (dx.data) {
      normBwdDxKernel<<<warpBlocks(rows), kThreads, 0, stream_>>>(
          rms, dx, dy, x, w, rows, cols, t.f32(), t.f32() + rows);
      LAUNCH_CHECK("norm backward kernel");
    }
    if (dw.data || db.data) {
      normBwdParamKernel<<<blocksFor(cols), kThreads, 0, stream_>>>(
          dw, db, dy, x, rows, cols, t.f32(), t.f32() + rows);
      LAUNCH_CHECK("norm parameter backward kernel");
    }
    return AMPC_OK;
  }
  ampc_status pool(Buf y, Buf x, const PoolGeom &g) override {
    poolKernel<<<blocksFor(g.planes * g.oh * g.ow), kThreads, 0, stream_>>>(
        y, x, g);
    LAUNCH_CHECK("pool kernel");
    return AMPC_OK;
  }
  ampc_status poolBwd(Buf dx, Buf dy, Buf x, const PoolGeom &g) override {
    poolBwdKernel<<<blocksFor(g.planes * g.h * g.w), kThreads, 0, stream_>>>(
        dx, dy, x, g);
    LAUNCH_CHECK("pool backward kernel");
    return AMPC_OK;
  }
  ampc_status embedding(Buf y, Buf table, Buf ids, int64_t n, int64_t vocab,
                        int64_t dim) override {
    embeddingKernel<<<blocksFor(n * dim), kThreads, 0, stream_>>>(
        y, table, ids, n, vocab, dim);
    LAUNCH_CHECK("embedding kernel");
    return AMPC_OK;
  }
  ampc_status embeddingBwd(Buf dtable, Buf dy, Buf ids, int64_t n,
                           int64_t vocab, int64_t dim) override {
    Temp acc(*this);
    AMPC_TRY(acc.alloc(vocab * dim * sizeof(float)));
    CUDA_TRY(
        cudaMemsetAsync(acc.get(), 0, vocab * dim * sizeof(float), stream_));
    embeddingBwdKernel<<<blocksFor(dim, 64), 64, 0, stream_>>>(
        acc.f32(), dy, ids, n, vocab, dim);
    LAUNCH_CHECK("embedding backward kernel");
    Walk w;
    w.rank = 1;
    w.shape[0] = vocab * dim;
    w.stride[0][0] = w.stride[1][0] = 1;
    return copy(dtable, Buf{acc.get(), AMPC_F32}, w, 1.0f);
  }
  ampc_status crossEntropyRows(Buf logits, Buf labels, int64_t rows,
                               int64_t classes, Temp &t) {
    AMPC_TRY(t.alloc(2 * sizeof(double) + 3 * rows * sizeof(float)));
    double *sums = static_cast<double *>(t.get());
    float *rowLoss = reinterpret_cast<float *>(sums + 2);
    crossEntropyRowsKernel<<<warpBlocks(rows), kThreads, 0, stream_>>>(
        logits, labels, rows, classes, rowLoss, rowLoss + rows,
        rowLoss + 2 * rows);
    LAUNCH_CHECK("cross-entropy kernel");
    sumTwoKernel<<<1, kThreads, 0, stream_>>>(rowLoss, rowLoss + rows, rows,
                                              sums);
    LAUNCH_CHECK("cross-entropy sum kernel");
    return AMPC_OK;
  }
  ampc_status crossEntropy(Buf loss, Buf logits, Buf labels, int64_t rows,
                           int64_t classes) override {
    Temp t(*this);
    AMPC_TRY(crossEntropyRows(logits, labels, rows, classes, t));
    crossEntropyFinishKernel<<<1, 1, 0, stream_>>>(
        loss, static_cast<double *>(t.get()));
    LAUNCH_CHECK("cross-entropy finish kernel");
    return AMPC_OK;
  }
  ampc_status crossEntropyBwd(Buf dlogits, Buf dloss, Buf logits, Buf labels,
                              int64_t rows, int64_t classes) override {
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
    Temp t(*this);
    AMPC_TRY(t.alloc(2 * sizeof(double) + n * sizeof(float)));
    double *sums = static_cast<double *>(t.get());
    float *sq = reinterpret_cast<float *>(sums + 2);
    squaredDiffKernel<<<blocksFor(n), kThreads, 0, stream_>>>(a, b, n, sq);
    LAUNCH_CHECK("mse kernel");
    sumTwoKernel<<<1, kThreads, 0, stream_>>>(sq, nullptr, n, sums);
    LAUNCH_CHECK("mse sum kernel");
    mseFinishKernel<<<1, 1, 0, stream_>>>(loss, sums, n);
    LAUNCH_CHECK("mse finish kernel");
    return AMPC_OK;
  }
  ampc_status mseBwd(Buf da, Buf db, Buf dloss, Buf a, Buf b,
                     int64_t n) override {
    mseBwdKernel<<<blocksFor(n), kThreads, 0, stream_>>>(da, db, dloss, a, b,
                                                         n);
    LAUNCH_CHECK("mse backward kernel");
    return AMPC_OK;
  }

  /// Copies `count` elements of b into a new f32 buffer.
  ampc_status widen(Buf b, int64_t count, Temp &t, Buf &out) {
    AMPC_TRY(t.alloc(count * sizeof(float)));
    Walk w;
    w.rank = 1;
    w.shape[0] = count;
    w.stride[0][0] = w.stride[1][0] = 1;
    out = Buf{t.get(), AMPC_F32};
    return copy(out, b, w, 1.0f);
  }

  ampc_status gemm(const GemmDesc &d) override {
    auto extent = [&](int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
      return (d.batch - 1) * stride + (rows - 1) * ld + cols;
    };
    GemmDesc g = d;
    Temp ta(*this), tb(*this), tbias(*this), tacc(*this);
    // Mixed input dtypes: cuBLASLt wants one type for A and B.
    if (d.a.dtype != d.b.dtype && d.k > 0) {
      if (d.a.dtype != AMPC_F32)
        AMPC_TRY(widen(d.a,
                       extent(d.transA ? d.k : d.m, d.transA ? d.m : d.k, d.lda,
                              d.strideA),
                       ta, g.a));
      if (d.b.dtype != AMPC_F32)
        AMPC_TRY(widen(d.b,
                       extent(d.transB ? d.n : d.k, d.transB ? d.k : d.n, d.ldb,
                              d.strideB),
                       tb, g.b));
    }
    bool direct = d.k > 0 && LtGemm::supports(g.a.dtype, d.c.dtype) &&
                  d.epilogue != AMPC_EPILOGUE_GELU;
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
      return lt.run(g);
    }
    // Fallback: f32 accumulator, then bias + activation + one rounding.
    int64_t total = d.batch * d.m * d.n;
    AMPC_TRY(tacc.alloc(total * sizeof(float)));
    loadCKernel<<<blocksFor(total), kThreads, 0, stream_>>>(
        tacc.f32(), d.c, d.batch, d.m, d.n, d.ldc, d.strideC, d.beta);
    LAUNCH_CHECK("gemm load kernel");
    if (d.k > 0) {
      GemmDesc f = g;
      f.c = Buf{tacc.get(), AMPC_F32};
      f.ldc = d.n;
      f.strideC = d.m * d.n;
      f.beta = d.beta == 0.0f ? 0.0f : 1.0f; // beta already applied
      f.bias = Buf{nullptr, AMPC_F32};
      f.epilogue = AMPC_EPILOGUE_NONE;
      AMPC_TRY(lt.run(f));
    }
    epilogueStoreKernel<<<blocksFor(total), kThreads, 0, stream_>>>(
        d.c, tacc.f32(), d.bias, d.batch, d.m, d.n, d.ldc, d.strideC,
        d.epilogue);
    LAUNCH_CHECK("gemm epilogue kernel");
    return AMPC_OK;
  }

  ampc_status im2col(Buf col, Buf x, const ConvGeom &g) override {
    im2colKernel<<<blocksFor(g.channels * g.kh * g.kw * g.oh * g.ow), kThreads,
                   0, stream_>>>(col, x, g);
    LAUNCH_CHECK("im2col kernel");
    return AMPC_OK;
  }
  ampc_status col2im(float *dx, const float *col, const ConvGeom &g) override {
    col2imKernel<<<blocksFor(g.channels * g.h * g.w), kThreads, 0, stream_>>>(
        dx, col, g);
    LAUNCH_CHECK("col2im kernel");
    return AMPC_OK;
  }

  ampc_status checkFiniteUnscale(Buf foundInf, const TensorList &g,
                                 const float *scale) override {
    Temp flag(*this);
    AMPC_TRY(flag.alloc(sizeof(float)));
    CUDA_TRY(cudaMemsetAsync(flag.get(), 0, sizeof(float), stream_));
    for (int32_t t = 0; t < g.count; ++t) {
      if (g.numels[t] == 0)
        continue;
      unscaleKernel<<<blocksFor(g.numels[t]), kThreads, 0, stream_>>>(
          flag.f32(), Buf{g.data[t], g.dtypes[t]}, g.numels[t], scale);
      LAUNCH_CHECK("unscale kernel");
    }
    storeFlagKernel<<<1, 1, 0, stream_>>>(foundInf, flag.f32());
    LAUNCH_CHECK("found_inf kernel");
    return AMPC_OK;
  }
  ampc_status updateScale(float *scale, int32_t *growthTracker,
                          int32_t *hysteresisLeft, Buf foundInf,
                          float growthFactor, float backoffFactor,
                          int32_t growthInterval, int32_t hysteresis,
                          float minScale, float maxScale) override {
    updateScaleKernel<<<1, 1, 0, stream_>>>(
        scale, growthTracker, hysteresisLeft, foundInf, growthFactor,
        backoffFactor, growthInterval, hysteresis, minScale, maxScale);
    LAUNCH_CHECK("scale update kernel");
    return AMPC_OK;
  }
  ampc_status clipGradNorm(float *totalNorm, const TensorList &g, float maxNorm,
                           Buf foundInf) override {
    Temp t(*this);
    int64_t slots = static_cast<int64_t>(g.count) * kNormBlocks;
    AMPC_TRY(t.alloc(slots * sizeof(double) + sizeof(double)));
    double *partials = static_cast<double *>(t.get());
    CUDA_TRY(cudaMemsetAsync(partials, 0, slots * sizeof(double), stream_));
    for (int32_t i = 0; i < g.count; ++i) {
      if (g.numels[i] == 0)
        continue;
      int blocks = blocksFor(g.numels[i]);
      blocks = blocks < kNormBlocks ? blocks : kNormBlocks;
      sumSquaresKernel<<<blocks, kThreads, 0, stream_>>>(
          Buf{g.data[i], g.dtypes[i]}, g.numels[i],
          partials + static_cast<int64_t>(i) * kNormBlocks, foundInf);
      LAUNCH_CHECK("norm kernel");
    }
    float *coef = reinterpret_cast<float *>(partials + slots);
    clipCoefKernel<<<1, 1, 0, stream_>>>(partials, slots, maxNorm, coef,
                                         totalNorm, foundInf);
    LAUNCH_CHECK("clip coefficient kernel");
    for (int32_t i = 0; i < g.count; ++i) {
      if (g.numels[i] == 0)
        continue;
      scaleByKernel<<<blocksFor(g.numels[i]), kThreads, 0, stream_>>>(
          Buf{g.data[i], g.dtypes[i]}, g.numels[i], coef, foundInf);
      LAUNCH_CHECK("clip kernel");
    }
    return AMPC_OK;
  }
  ampc_status sgd(const TensorList &params, const TensorList &grads,
                  void *const *bufs, const SgdScalars &s,
                  Buf foundInf) override {
    for (int32_t t = 0; t < params.count; ++t) {
      if (params.numels[t] == 0)
        continue;
      float *buf = s.hasMomentum ? static_cast<float *>(bufs[t]) : nullptr;
      sgdKernel<<<blocksFor(params.numels[t]), kThreads, 0, stream_>>>(
          Buf{params.data[t], params.dtypes[t]},
          Buf{grads.data[t], grads.dtypes[t]}, buf, params.numels[t], s,
          foundInf);
      LAUNCH_CHECK("sgd kernel");
    }
    return AMPC_OK;
  }
  ampc_status adamw(const TensorList &params, const TensorList &grads,
                    void *const *expAvgs, void *const *expAvgSqs, int32_t *step,
                    double lr, double beta1, double beta2, double eps,
                    double weightDecay, Buf foundInf) override {
    Temp t(*this);
    AMPC_TRY(t.alloc(sizeof(AdamwScalars)));
    AdamwScalars *s = static_cast<AdamwScalars *>(t.get());
    adamwStepKernel<<<1, 1, 0, stream_>>>(step, lr, beta1, beta2, eps,
                                          weightDecay, s, foundInf);
    LAUNCH_CHECK("adamw step kernel");
    for (int32_t i = 0; i < params.count; ++i) {
      if (params.numels[i] == 0)
        continue;
      adamwKernel<<<blocksFor(params.numels[i]), kThreads, 0, stream_>>>(
          Buf{params.data[i], params.dtypes[i]},
          Buf{grads.data[i], grads.dtypes[i]}, static_cast<float *>(expAvgs[i]),
          static_cast<float *>(expAvgSqs[i]), params.numels[i], s, foundInf);
      LAUNCH_CHECK("adamw kernel");
    }
    return AMPC_OK;
  }

private:
  int device;
  cudaStream_t stream_ = nullptr;
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
