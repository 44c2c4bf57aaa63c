//===- cuda_conv_pool.cu - Pooling and convolution kernels on CUDA -------===//
//
// Max and average pooling (one thread per output; the backward gathers, one
// thread per input element, from the windows covering it) and the im2col /
// col2im of convolutions, whose GEMMs run through cuda_linalg.cu.
//
//===----------------------------------------------------------------------===//
#include "cuda_backend.h"

#include <math.h>

namespace ampc {
namespace cuda {
namespace {

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

// ------------------------------------------------------------- convolution --

__global__ void im2colKernel(Buf col, Buf x, ConvGeom g) {
  GRID_STRIDE(i, g.rows() * g.columns()) {
    int64_t src = g.imageElementOf(i);
    if (src < 0)
      storeF32(col.data, col.dtype, i, 0.0f);
    else
      convertElement(col.data, col.dtype, i, x.data, x.dtype, src);
  }
}

/// One thread per image element gathers its column entries.
__global__ void col2imKernel(float *dx, const float *col, ConvGeom g) {
  GRID_STRIDE(i, g.imageSize()) {
    float acc = 0;
    g.forEachColumnOf(i, [&](int64_t k) { acc += col[k]; });
    dx[i] += acc;
  }
}

} // namespace

ampc_status CudaBackend::pool(Buf y, Buf x, const PoolGeom &g) {
  ENTER();
  ampc_status st;
  if (poolWide(y, x, g, st))
    return st;
  poolKernel<<<blocksFor(g.planes * g.oh * g.ow), kThreads, 0, stream_>>>(
      y, x, g);
  LAUNCH_CHECK("pool kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::poolBwd(Buf dx, Buf dy, Buf x, const PoolGeom &g) {
  ENTER();
  ampc_status st;
  if (poolBwdWide(dx, dy, x, g, st))
    return st;
  poolBwdKernel<<<blocksFor(g.planes * g.h * g.w), kThreads, 0, stream_>>>(
      dx, dy, x, g);
  LAUNCH_CHECK("pool backward kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::im2col(Buf col, Buf x, const ConvGeom &g) {
  ENTER();
  AMPC_TRY(refuseWide("im2col (convolution)", {col, x}));
  im2colKernel<<<blocksFor(g.rows() * g.columns()), kThreads,
                 0, stream_>>>(col, x, g);
  LAUNCH_CHECK("im2col kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::col2im(float *dx, const float *col,
                                const ConvGeom &g) {
  ENTER();
  col2imKernel<<<blocksFor(g.imageSize()), kThreads, 0, stream_>>>(
      dx, col, g);
  LAUNCH_CHECK("col2im kernel");
  return AMPC_OK;
}

} // namespace cuda
} // namespace ampc
