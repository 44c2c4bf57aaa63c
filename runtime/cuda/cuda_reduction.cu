//===- cuda_reduction.cu - Reductions on CUDA ----------------------------===//
//
// The reduction family: sum / mean / max over walks (one warp per output; a
// two-stage full reduction; two-stage column sums, which also give the
// norms' parameter gradients), argmax, softmax and log-softmax (fused
// single-read rows when a row fits in registers), and the f64 sums of two
// arrays the losses end with (cuda_loss.cu). Every sum has a fixed order: no
// float atomics.
//
//===----------------------------------------------------------------------===//
#include "cuda_backend.h"
#include "cuda_walk.cuh"

#include <math.h>

namespace ampc {
namespace cuda {
namespace {

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

// ------------------------------------------------------------ column sums --

constexpr int kColTile = 32; // columns per block (one warp wide)
constexpr int kColRows = 8;  // warps per block, each on its own rows

/// How many row chunks a column sum uses: enough blocks to fill the GPU, at
/// least 32 rows per chunk.
inline int64_t colChunks(int64_t rows, int64_t cols) {
  int64_t tiles = (cols + kColTile - 1) / kColTile;
  int64_t want = (1024 + tiles - 1) / tiles; // about 1k blocks in all
  int64_t byRows = (rows + 31) / 32;
  int64_t c = want < byRows ? want : byRows;
  return c < 1 ? 1 : (c > 4096 ? 4096 : c);
}

/// Stage 1 of a column sum over `rows` rows `rowStride` apart: block
/// (tile, chunk) sums its chunk's rows for 32 columns in a fixed order.
/// Mode 0: s0 = sum x. Mode 1 (norm parameter gradients, x is dy, x2 the
/// norm input): s0 = sum dy * xhat, s1 = sum dy.
template <int Mode>
__global__ void colPartialKernel(Buf x, Buf x2, int64_t rows, int64_t cols,
                                 int64_t rowStride, int64_t rowsPerChunk,
                                 const float *mean, const float *rstd,
                                 float *part0, float *part1) {
  __shared__ float sh0[kColRows][kColTile], sh1[kColRows][kColTile];
  int tx = threadIdx.x, ty = threadIdx.y;
  int64_t j = static_cast<int64_t>(blockIdx.x) * kColTile + tx;
  int64_t chunk = blockIdx.y;
  int64_t r0 = chunk * rowsPerChunk;
  int64_t r1 = r0 + rowsPerChunk < rows ? r0 + rowsPerChunk : rows;
  float s0 = 0, s1 = 0;
  if (j < cols)
    for (int64_t r = r0 + ty; r < r1; r += kColRows) {
      float v = loadF32(x.data, x.dtype, r * rowStride + j);
      if (Mode == 0) {
        s0 += v;
      } else {
        s0 += v * (loadF32(x2.data, x2.dtype, r * rowStride + j) - mean[r]) *
              rstd[r];
        s1 += v;
      }
    }
  sh0[ty][tx] = s0;
  sh1[ty][tx] = s1;
  __syncthreads();
  if (ty == 0 && j < cols) {
    float t0 = 0, t1 = 0;
    for (int k = 0; k < kColRows; ++k) {
      t0 += sh0[k][tx];
      t1 += sh1[k][tx];
    }
    part0[chunk * cols + j] = t0;
    if (Mode == 1)
      part1[chunk * cols + j] = t1;
  }
}

/// Stage 2: one thread per column adds the chunks in order.
__global__ void colFinishKernel(Buf y0, Buf y1, const float *part0,
                                const float *part1, int64_t chunks,
                                int64_t cols, float div0) {
  GRID_STRIDE(j, cols) {
    float t0 = 0, t1 = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      t0 += part0[c * cols + j];
      if (part1)
        t1 += part1[c * cols + j];
    }
    if (y0.data)
      storeF32(y0.data, y0.dtype, j, div0 != 1.0f ? t0 / div0 : t0);
    if (y1.data)
      storeF32(y1.data, y1.dtype, j, t1);
  }
}

// --------------------------------------------------------- full reduction --

constexpr int kFullBlocks = 512;

/// Stage 1 of a full reduction of contiguous x: one partial per block.
__global__ void fullPartialKernel(bool isMax, Buf x, int64_t n, float *part) {
  __shared__ float sh[kThreads / 32];
  __shared__ int shNan[kThreads / 32];
  float acc = isMax ? -INFINITY : 0.0f;
  bool nan = false;
  GRID_STRIDE(i, n) {
    float v = loadF32(x.data, x.dtype, i);
    if (isMax) {
      nan |= v != v;
      acc = fmaxf(acc, v);
    } else {
      acc += v;
    }
  }
  acc = isMax ? warpMax(acc) : warpSum(acc);
  nan = __any_sync(0xffffffffu, nan);
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (lane == 0) {
    sh[w] = acc;
    shNan[w] = nan;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = isMax ? -INFINITY : 0.0f;
    bool anyNan = false;
    for (int k = 0; k < kThreads / 32; ++k) {
      t = isMax ? fmaxf(t, sh[k]) : t + sh[k];
      anyNan |= shNan[k] != 0;
    }
    part[blockIdx.x] = isMax && anyNan ? NAN : t;
  }
}

/// Stage 2: one block combines the partials in a fixed tree order.
__global__ void fullFinishKernel(bool isMax, bool isMean, Buf y,
                                 const float *part, int64_t count, int64_t n) {
  __shared__ float sh[kThreads / 32];
  __shared__ int shNan[kThreads / 32];
  float acc = isMax ? -INFINITY : 0.0f;
  bool nan = false;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    float v = part[i];
    if (isMax) {
      nan |= v != v;
      acc = fmaxf(acc, v);
    } else {
      acc += v;
    }
  }
  acc = isMax ? warpMax(acc) : warpSum(acc);
  nan = __any_sync(0xffffffffu, nan);
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (lane == 0) {
    sh[w] = acc;
    shNan[w] = nan;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = isMax ? -INFINITY : 0.0f;
    bool anyNan = false;
    for (int k = 0; k < kThreads / 32; ++k) {
      t = isMax ? fmaxf(t, sh[k]) : t + sh[k];
      anyNan |= shNan[k] != 0;
    }
    if (isMax && anyNan)
      t = NAN;
    if (isMean)
      t /= static_cast<float>(n);
    storeF32(y.data, y.dtype, 0, t);
  }
}

// ----------------------------------------------------------------- softmax --

/// One warp per (outer, inner) row of `dim` elements, `inner` apart.
template <int XD, int YD>
__global__ void softmaxKernel(bool log, Buf y, Buf x, int64_t outer,
                              int64_t dim, int64_t inner) {
  WARP_LOOP(r, outer * inner) {
    int64_t base = (r / inner) * dim * inner + r % inner;
    float m = -INFINITY;
    for (int64_t j = lane; j < dim; j += 32)
      m = fmaxf(m, loadAs<XD>(x, base + j * inner));
    m = warpMax(m);
    float s = 0;
    for (int64_t j = lane; j < dim; j += 32)
      s += expf(loadAs<XD>(x, base + j * inner) - m);
    s = warpSum(s);
    float lse = logf(s), inv = 1.0f / s;
    for (int64_t j = lane; j < dim; j += 32) {
      float v = loadAs<XD>(x, base + j * inner) - m;
      storeAs<YD>(y, base + j * inner, log ? v - lse : expf(v) * inv);
    }
  }
}

template <int DXD, int DYD, int YD>
__global__ void softmaxBwdKernel(bool log, Buf dx, Buf dy, Buf y, int64_t outer,
                                 int64_t dim, int64_t inner) {
  WARP_LOOP(r, outer * inner) {
    int64_t base = (r / inner) * dim * inner + r % inner;
    float dot = 0;
    for (int64_t j = lane; j < dim; j += 32) {
      float g = loadAs<DYD>(dy, base + j * inner);
      dot += log ? g : g * loadAs<YD>(y, base + j * inner);
    }
    dot = warpSum(dot);
    for (int64_t j = lane; j < dim; j += 32) {
      int64_t i = base + j * inner;
      float g = loadAs<DYD>(dy, i), yv = loadAs<YD>(y, i);
      storeAs<DXD>(dx, i, log ? g - expf(yv) * dot : yv * (g - dot));
    }
  }
}

/// Softmax over contiguous rows (inner 1), one warp per row, x read once.
template <int XD, int YD>
__global__ void softmaxFusedKernel(bool log, Buf y, Buf x, int64_t rows,
                                   int64_t dim) {
  WARP_LOOP(r, rows) {
    int64_t base = r * dim;
    float v[kRowRegs];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < kRowRegs; ++k) {
      int64_t j = lane + 32 * k;
      v[k] = j < dim ? loadAs<XD>(x, base + j) : -INFINITY;
      m = fmaxf(m, v[k]);
    }
    m = warpMax(m);
    float s = 0;
#pragma unroll
    for (int k = 0; k < kRowRegs; ++k) {
      int64_t j = lane + 32 * k;
      if (j < dim)
        s += expf(v[k] - m);
    }
    s = warpSum(s);
    float lse = logf(s), inv = 1.0f / s;
#pragma unroll
    for (int k = 0; k < kRowRegs; ++k) {
      int64_t j = lane + 32 * k;
      if (j < dim) {
        float d = v[k] - m;
        storeAs<YD>(y, base + j, log ? d - lse : expf(d) * inv);
      }
    }
  }
}

/// The backward over contiguous rows (inner 1), one warp per row, dy and y
/// read once: softmaxBwdKernel's arithmetic in its order, from registers.
template <int DXD, int DYD, int YD>
__global__ void softmaxBwdFusedKernel(bool log, Buf dx, Buf dy, Buf y,
                                      int64_t rows, int64_t dim) {
  WARP_LOOP(r, rows) {
    int64_t base = r * dim;
    float g[kRowRegs], yv[kRowRegs];
    float dot = 0;
#pragma unroll
    for (int k = 0; k < kRowRegs; ++k) {
      int64_t j = lane + 32 * k;
      g[k] = j < dim ? loadAs<DYD>(dy, base + j) : 0.0f;
      yv[k] = j < dim ? loadAs<YD>(y, base + j) : 0.0f;
      if (j < dim)
        dot += log ? g[k] : g[k] * yv[k];
    }
    dot = warpSum(dot);
#pragma unroll
    for (int k = 0; k < kRowRegs; ++k) {
      int64_t j = lane + 32 * k;
      if (j < dim)
        storeAs<DXD>(dx, base + j,
                     log ? g[k] - expf(yv[k]) * dot : yv[k] * (g[k] - dot));
    }
  }
}

// --------------------------------------------------- sums of two arrays --

/// out[0..1] = sums of a and b over n, many blocks then one (fixed order).
__global__ void sumTwoPartialKernel(const float *a, const float *b, int64_t n,
                                    double *part) {
  __shared__ double sa[kThreads / 32], sb[kThreads / 32];
  double x = 0, y = 0;
  GRID_STRIDE(i, n) {
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
    for (int k = 0; k < kThreads / 32; ++k) {
      tx += sa[k];
      ty += sb[k];
    }
    part[2 * blockIdx.x] = tx;
    part[2 * blockIdx.x + 1] = ty;
  }
}

__global__ void sumTwoFinishKernel(const double *part, int64_t count,
                                   double *out) {
  __shared__ double sa[kThreads / 32], sb[kThreads / 32];
  double x = 0, y = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    x += part[2 * i];
    y += part[2 * i + 1];
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
    for (int k = 0; k < kThreads / 32; ++k) {
      tx += sa[k];
      ty += sb[k];
    }
    out[0] = tx;
    out[1] = ty;
  }
}

} // namespace

ampc_status CudaBackend::reduce(ReduceOp op, Buf y, Buf x, const Walk &outer,
                                const Walk &inner) {
  ENTER();
  ampc_status st;
  if (reduceWide(op, y, x, outer, inner, st))
    return st;
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

ampc_status CudaBackend::reduceMaxBwd(Buf dx, Buf dy, Buf x, Buf y,
                                      const Walk &outer, const Walk &inner) {
  ENTER();
  ampc_status st;
  if (reduceMaxBwdWide(dx, dy, x, y, outer, inner, st))
    return st;
  int64_t nOut = outer.numel(), nIn = inner.numel();
  reduceMaxBwdKernel<<<warpBlocks(nOut), kThreads, 0, stream_>>>(
      dx, dy, x, y, outer, inner, nOut, nIn);
  LAUNCH_CHECK("max backward kernel");
  return AMPC_OK;
}

/// y0 (/ div0), y1 = two-stage column sums (see colPartialKernel).
ampc_status CudaBackend::columnSums(Buf y0, Buf y1, Buf x, Buf x2, int64_t rows,
                                    int64_t cols, int64_t rowStride,
                                    const float *mean, const float *rstd,
                                    float div0) {
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

ampc_status CudaBackend::argmax(Buf y, Buf x, int64_t outer, int64_t dim,
                                int64_t inner) {
  ENTER();
  ampc_status st;
  if (argmaxWide(y, x, outer, dim, inner, st))
    return st;
  int64_t n = outer * inner;
  argmaxKernel<<<blocksFor(n), kThreads, 0, stream_>>>(y, x, outer, dim,
                                                       inner);
  LAUNCH_CHECK("argmax kernel");
  return AMPC_OK;
}

// The fused kernels are instantiated for f32, f16 and bf16 only: with a
// dtype read at run time their unrolled rows take every register there is.
ampc_status CudaBackend::softmax(bool log, Buf y, Buf x, int64_t outer,
                                 int64_t dim, int64_t inner) {
  ENTER();
  ampc_status st;
  if (softmaxWide(log, y, x, outer, dim, inner, st))
    return st;
  bool fused = inner == 1 && dim <= 32 * kRowRegs;
  withRowDtype(x.dtype, [&](auto xd) {
    withRowDtype(y.dtype, [&](auto yd) {
      constexpr int XD = decltype(xd)::value, YD = decltype(yd)::value;
      if constexpr (XD != kAnyDtype && YD != kAnyDtype) {
        if (fused) {
          softmaxFusedKernel<XD, YD>
              <<<warpBlocks(outer), kThreads, 0, stream_>>>(log, y, x, outer,
                                                            dim);
          return;
        }
      }
      softmaxKernel<XD, YD><<<warpBlocks(outer * inner), kThreads, 0,
                              stream_>>>(log, y, x, outer, dim, inner);
    });
  });
  LAUNCH_CHECK("softmax kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::softmaxBwd(bool log, Buf dx, Buf dy, Buf y,
                                    int64_t outer, int64_t dim, int64_t inner) {
  ENTER();
  ampc_status st;
  if (softmaxBwdWide(log, dx, dy, y, outer, dim, inner, st))
    return st;
  bool fused = inner == 1 && dim <= 32 * kRowRegs;
  withRowDtype(dy.dtype, [&](auto dyd) {
    withRowDtype(y.dtype, [&](auto yd) {
      constexpr int DYD = decltype(dyd)::value, YD = decltype(yd)::value;
      bool launched = false;
      if constexpr (DYD != kAnyDtype && YD != kAnyDtype) {
        if (fused)
          withRowDtype(dx.dtype, [&](auto dxd) {
            constexpr int DXD = decltype(dxd)::value;
            if constexpr (DXD != kAnyDtype) {
              softmaxBwdFusedKernel<DXD, DYD, YD>
                  <<<warpBlocks(outer), kThreads, 0, stream_>>>(log, dx, dy, y,
                                                                outer, dim);
              launched = true;
            }
          });
      }
      // The unfused kernel reads dx's dtype at run time (16 instantiations,
      // not 64): one store an element, no register pressure.
      if (!launched)
        softmaxBwdKernel<kAnyDtype, DYD, YD>
            <<<warpBlocks(outer * inner), kThreads, 0, stream_>>>(
                log, dx, dy, y, outer, dim, inner);
    });
  });
  LAUNCH_CHECK("softmax backward kernel");
  return AMPC_OK;
}

/// sums[0..1] = sum a, sum b (f64, fixed order): many blocks, then one.
ampc_status CudaBackend::sumTwo(const float *a, const float *b, int64_t n,
                                double *sums) {
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

} // namespace cuda
} // namespace ampc
