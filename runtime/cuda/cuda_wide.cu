//===- cuda_wide.cu - f64 and exact-integer kernels on CUDA --------------===//
//
// The CUDA counterpart of the CPU's cpu_wide.cpp: the tensors the f32 paths
// of the other family files do not compute. f64 tensors are computed in f64
// through the shared scalar formulas of src/ instantiated for double
// (loadF64 / storeF64); integer tensors exactly in int64 with two's-
// complement wrap-around (loadInt / storeInt, src/int_ops.h). Each entry
// takes the call exactly where cpu_wide.cpp does (same predicates), so the
// two backends compute the same dtypes the same way; it returns false,
// launching nothing, for operands of the f32-computing types.
//
// Compiled with --fmad=false (as cuda_exact.cu): the CPU backend rounds
// every multiply and add separately (-ffp-contract=off), so elementwise
// results that use only IEEE operations (+ - * / sqrt) are bit-identical
// to the CPU's; transcendental functions (exp, log, tanh, erf) are CUDA's
// libdevice ones, which may differ from glibc's in the last bit. Row work
// (softmax, norms, argmax, cumsum, the max backward) runs one thread per
// row in the CPU's order; reductions, the MSE sum and the GEMM sum in
// another order (a tree per output; cuBLASLt dgemm), so they agree with
// the CPU to rounding.
//
//===----------------------------------------------------------------------===//
#include "../src/as_written.h"
#include "../src/dropout_ops.h"
#include "../src/int_ops.h"
#include "../src/select_ops.h"
#include "../src/wide_ops.h"
#include "cuda_backend.h"
#include "cuda_exact.h"
#include "cuda_walk.cuh"

#include <math.h>

#include <utility>
#include <vector>

namespace ampc {
namespace cuda {
namespace {

bool isF64(Buf b) { return b.data && b.dtype == AMPC_F64; }

bool anyF64(std::initializer_list<Buf> bufs) {
  for (const Buf &b : bufs)
    if (isF64(b))
      return true;
  return false;
}

bool isIntOrBool(Buf b) { return isIntOrBoolDtype(b.dtype); }

/// Grid size for a grid-stride loop over n items, at least one block.
int gridFor(int64_t n) { return blocksFor(n); }

/// Blocks for one block per output (block-stride over the outputs).
int blocksPerOutput(int64_t nOut) {
  return static_cast<int>(nOut < 65535 * 4 ? (nOut > 0 ? nOut : 1)
                                           : 65535 * 4);
}

// ------------------------------------------------------------ elementwise --

__global__ void fillWideKernel(Buf y, int64_t n, double v) {
  GRID_STRIDE(i, n) { storeF64(y.data, y.dtype, i, v); }
}

__global__ void copyScaleF64Kernel(Buf dst, Buf src, Walk w, double scale,
                                   int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t o0, o1, o2;
    walkOffsets(w, i, o0, o1, o2);
    storeF64(dst.data, dst.dtype, o0, scale * loadF64(src.data, src.dtype, o1));
  }
}

__global__ void unaryF64Kernel(UnaryOp op, UnaryAttrs a, Buf y, Buf x,
                               int64_t n) {
  GRID_STRIDE(i, n) {
    storeF64(y.data, y.dtype, i,
             unaryForward(op, loadF64(x.data, x.dtype, i), a));
  }
}

__global__ void unaryIntKernel(bool neg, Buf y, Buf x, int64_t n) {
  GRID_STRIDE(i, n) {
    storeInt(y.data, y.dtype, i, intNegAbs(neg, loadInt(x.data, x.dtype, i)));
  }
}

__global__ void unaryBwdF64Kernel(UnaryOp op, UnaryAttrs a, Buf dx, Buf dy,
                                  Buf x, int64_t n) {
  GRID_STRIDE(i, n) {
    storeF64(dx.data, dx.dtype, i,
             unaryBackward(op, loadF64(x.data, x.dtype, i),
                           loadF64(dy.data, dy.dtype, i), a));
  }
}

__global__ void binaryF64Kernel(BinaryOp op, Buf y, Buf a, Buf b, Walk w,
                                int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t o0, o1, o2;
    walkOffsets(w, i, o0, o1, o2);
    storeF64(y.data, y.dtype, o0,
             binaryForward(op, loadF64(a.data, a.dtype, o1),
                           loadF64(b.data, b.dtype, o2)));
  }
}

__global__ void binaryIntKernel(BinaryOp op, Buf y, Buf a, Buf b, Walk w,
                                int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t o0, o1, o2;
    walkOffsets(w, i, o0, o1, o2);
    int64_t r = 0;
    intBinary(op, loadInt(a.data, a.dtype, o1), loadInt(b.data, b.dtype, o2),
              r);
    storeInt(y.data, y.dtype, o0, r);
  }
}

__global__ void binaryBwdF64Kernel(BinaryOp op, int which, Buf g, Buf dy,
                                   Buf a, Buf b, Walk w, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t o0, o1, o2;
    walkOffsets(w, i, o0, o1, o2);
    storeF64(g.data, g.dtype, o0,
             binaryBackward(op, which, loadF64(a.data, a.dtype, o1),
                            loadF64(b.data, b.dtype, o2),
                            loadF64(dy.data, dy.dtype, o0)));
  }
}

__global__ void nonfiniteF64Kernel(Buf x, int64_t n, uint32_t *word,
                                   int32_t site) {
  GRID_STRIDE(i, n) {
    double v = loadF64(x.data, x.dtype, i);
    if (!(v - v == 0.0))
      recordCheck(word, site);
  }
}

__global__ void embeddingF64Kernel(Buf y, Buf table, Buf ids, int64_t n,
                                   int64_t vocab, int64_t dim, uint32_t *word,
                                   int32_t site) {
  GRID_STRIDE(i, n * dim) {
    int64_t id = loadIndex(ids.data, ids.dtype, i / dim);
    bool ok = id >= 0 && id < vocab;
    if (!ok && i % dim == 0)
      recordCheck(word, site);
    storeF64(y.data, y.dtype, i,
             ok ? loadF64(table.data, table.dtype, id * dim + i % dim) : 0.0);
  }
}

// ------------------------------------------------------------- reductions --

/// The CPU's running maximum: NaN wins (the first one seen), else the
/// larger.
__device__ __forceinline__ double maxStep(double acc, double v) {
  if (v != v || acc != acc)
    return v != v ? v : acc;
  return v > acc ? v : acc;
}

/// One block per output (block-stride over them): each thread sums or
/// maximises a strided share of the inner elements, then a fixed tree in
/// shared memory (deterministic run to run). Int: int64 sums wrapping as
/// uint64 (exact in any order) and maxima.
template <bool Int>
__global__ void reduceWideKernel(ReduceOp op, Buf y, Buf x, Walk outer,
                                 Walk inner, int64_t nOut, int64_t nIn) {
  __shared__ double sd[kThreads];
  __shared__ int64_t si[kThreads];
  bool isMax = op == ReduceOp::Max;
  int t = threadIdx.x;
  for (int64_t o = blockIdx.x; o < nOut; o += gridDim.x) {
    int64_t yo, xo, unused;
    walkOffsets(outer, o, yo, xo, unused);
    double acc = isMax ? -INFINITY : 0.0;
    int64_t iacc = isMax ? INT64_MIN : 0;
    for (int64_t k = t; k < nIn; k += blockDim.x) {
      int64_t a, xi, c;
      walkOffsets(inner, k, a, xi, c);
      if (Int) {
        int64_t v = loadInt(x.data, x.dtype, xo + xi);
        iacc = isMax ? (v > iacc ? v : iacc)
                     : static_cast<int64_t>(static_cast<uint64_t>(iacc) +
                                            static_cast<uint64_t>(v));
      } else {
        double v = loadF64(x.data, x.dtype, xo + xi);
        acc = isMax ? maxStep(acc, v) : acc + v;
      }
    }
    sd[t] = acc;
    si[t] = iacc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (t < s) {
        if (Int)
          si[t] = isMax ? (si[t + s] > si[t] ? si[t + s] : si[t])
                        : static_cast<int64_t>(static_cast<uint64_t>(si[t]) +
                                               static_cast<uint64_t>(si[t + s]));
        else
          sd[t] = isMax ? maxStep(sd[t], sd[t + s]) : sd[t] + sd[t + s];
      }
      __syncthreads();
    }
    if (t == 0) {
      if (Int)
        storeInt(y.data, y.dtype, yo, nIn == 0 ? 0 : si[0]);
      else
        storeF64(y.data, y.dtype, yo,
                 op == ReduceOp::Mean ? sd[0] / static_cast<double>(nIn)
                                      : sd[0]);
    }
    __syncthreads(); // sd and si are reused by the next output
  }
}

/// amax backward in f64, one thread per output in the CPU's order: dy to
/// the maxima, split evenly between ties.
__global__ void reduceMaxBwdF64Kernel(Buf dx, Buf dy, Buf x, Buf y, Walk outer,
                                      Walk inner, int64_t nOut, int64_t nIn) {
  GRID_STRIDE(o, nOut) {
    int64_t yo, xo, u0, u1, xi;
    walkOffsets(outer, o, yo, xo, u0);
    double m = loadF64(y.data, y.dtype, yo), g = loadF64(dy.data, dy.dtype, yo);
    int64_t ties = 0;
    for (int64_t k = 0; k < nIn; ++k) {
      walkOffsets(inner, k, u0, xi, u1);
      ties += loadF64(x.data, x.dtype, xo + xi) == m;
    }
    double share = ties ? g / static_cast<double>(ties) : 0.0;
    for (int64_t k = 0; k < nIn; ++k) {
      walkOffsets(inner, k, u0, xi, u1);
      bool hit = loadF64(x.data, x.dtype, xo + xi) == m;
      storeF64(dx.data, dx.dtype, xo + xi, hit ? share : 0.0);
    }
  }
}

/// argmax of f64 or integer rows, one thread per (outer, inner) in order.
__global__ void argmaxWideKernel(bool ints, Buf y, Buf x, int64_t outer,
                                 int64_t dim, int64_t inner) {
  GRID_STRIDE(t, outer * inner) {
    int64_t at = wideArgmaxRow(ints, x, (t / inner) * dim * inner + t % inner,
                               dim, inner);
    storeInt(y.data, y.dtype, t, at);
  }
}

/// cumsum, one thread per (outer, inner): f64 in order, or integers into
/// i64 wrapping.
__global__ void cumsumWideKernel(bool f64, Buf y, Buf x, int64_t outer,
                                 int64_t len, int64_t inner, bool reverse) {
  GRID_STRIDE(t, outer * inner) {
    wideCumsumRow(f64, y, x, t / inner, t % inner, len, inner, reverse);
  }
}

__global__ void softmaxF64Kernel(bool log, Buf y, Buf x, int64_t outer,
                                 int64_t dim, int64_t inner) {
  GRID_STRIDE(t, outer * inner) {
    wideSoftmaxRow(log, y, x, (t / inner) * dim * inner + t % inner, dim,
                   inner);
  }
}

__global__ void softmaxBwdF64Kernel(bool log, Buf dx, Buf dy, Buf y,
                                    int64_t outer, int64_t dim,
                                    int64_t inner) {
  GRID_STRIDE(t, outer * inner) {
    wideSoftmaxBwdRow(log, dx, dy, y, (t / inner) * dim * inner + t % inner,
                      dim, inner);
  }
}

// ------------------------------------------------------------------ norms --

__global__ void normF64Kernel(bool rms, Buf y, Buf x, Buf w, Buf b,
                              int64_t rows, int64_t cols, double eps) {
  GRID_STRIDE(r, rows) {
    double mean, rstd;
    wideRowStats(rms, x, r, cols, eps, mean, rstd);
    wideNormRow(y, x, w, b, r, cols, mean, rstd);
  }
}

/// stats[2 r], stats[2 r + 1] = row r's mean and rstd.
__global__ void rowStatsF64Kernel(bool rms, Buf x, int64_t rows, int64_t cols,
                                  double eps, double *stats) {
  GRID_STRIDE(r, rows) {
    wideRowStats(rms, x, r, cols, eps, stats[2 * r], stats[2 * r + 1]);
  }
}

/// dx of a row: rstd (g - mean(g) - xhat mean(g xhat)), g = dy w.
__global__ void normBwdDxF64Kernel(bool rms, Buf dx, Buf dy, Buf x, Buf w,
                                   int64_t rows, int64_t cols,
                                   const double *stats) {
  GRID_STRIDE(r, rows) {
    wideNormBwdDxRow(rms, dx, dy, x, w, r, cols, stats[2 * r],
                     stats[2 * r + 1]);
  }
}

/// dw[j] = sum over rows of dy xhat, db[j] = sum of dy, rows in order.
__global__ void normBwdColsF64Kernel(Buf dw, Buf db, Buf dy, Buf x,
                                     int64_t rows, int64_t cols,
                                     const double *stats) {
  GRID_STRIDE(j, cols) {
    double dwAcc = 0.0, dbAcc = 0.0;
    for (int64_t r = 0; r < rows; ++r)
      wideNormBwdColStep(dy, x, r, cols, j, stats[2 * r], stats[2 * r + 1],
                         dwAcc, dbAcc);
    if (dw.data)
      storeF64(dw.data, dw.dtype, j, dwAcc);
    if (db.data)
      storeF64(db.data, db.dtype, j, dbAcc);
  }
}

// ------------------------------------------------------------- batch norm --

/// One thread per channel, the CPU's loops.
__global__ void batchNormF64Kernel(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv,
                                   bool training, int64_t n, int64_t c,
                                   int64_t inner, double eps) {
  GRID_STRIDE(ch, c) {
    wideBnForwardChannel(y, x, w, b, rm, rv, training, n, c, inner, ch, eps);
  }
}

__global__ void batchNormBwdF64Kernel(Buf dx, Buf dw, Buf db, Buf dy, Buf x,
                                      Buf w, Buf rm, Buf rv, bool training,
                                      int64_t n, int64_t c, int64_t inner,
                                      double eps) {
  GRID_STRIDE(ch, c) {
    wideBnBackwardChannel(dx, dw, db, dy, x, w, rm, rv, training, n, c, inner,
                          ch, eps);
  }
}

/// PyTorch's running-statistics update in f64 (unbiased batch variance).
__global__ void batchNormUpdateF64Kernel(Buf newMean, Buf newVar, Buf x, Buf rm,
                                         Buf rv, int64_t n, int64_t c,
                                         int64_t inner, double momentum) {
  GRID_STRIDE(ch, c) {
    wideBnUpdateChannel(newMean, newVar, x, rm, rv, n, c, inner, ch, momentum);
  }
}

// ---------------------------------------------------------------- dropout --

/// dropout in f64 (the CPU's cpuwide::dropout): element i kept where the
/// uniform of its draw (index shard.global(i)) is >= the f32 threshold
/// pMask, as in the f32 kernel, and multiplied by 1 / (1 - p) in f64 (x * 0
/// where dropped: NaN stays NaN).
__global__ void dropoutF64Kernel(Buf y, Buf x, const int32_t *step,
                                 uint64_t seed, uint64_t key, float pMask,
                                 double scale, int64_t n, DropoutShard shard) {
  uint64_t stream = dropoutStream(key, static_cast<uint32_t>(*step));
  GRID_STRIDE(i, n) {
    int64_t gi = shard.global(i);
    wideDropoutAt(y, x, i, dropoutDraws(seed, stream, gi), gi, pMask, scale);
  }
}

// ---------------------------------------------------------------- pooling --

__global__ void poolF64Kernel(Buf y, Buf x, PoolGeom g) {
  GRID_STRIDE(i, g.planes * g.oh * g.ow) {
    int64_t p = i / (g.oh * g.ow), oy = (i / g.ow) % g.oh, ox = i % g.ow;
    storeF64(y.data, y.dtype, i, widePoolOut(g, x, p, oy, ox));
  }
}

/// One thread per input element gathers from the windows covering it, in
/// the CPU's order (outputs in raster order: ky and kx descending).
__global__ void poolBwdF64Kernel(Buf dx, Buf dy, Buf x, PoolGeom g) {
  GRID_STRIDE(i, g.planes * g.h * g.w) {
    int64_t p = i / (g.h * g.w), iy = (i / g.w) % g.h, ix = i % g.w;
    int64_t self = iy * g.w + ix;
    double div = static_cast<double>(g.kh * g.kw), acc = 0.0, best;
    for (int64_t ky = g.kh - 1; ky >= 0; --ky) {
      int64_t ty = iy + g.ph - ky;
      if (ty < 0 || ty % g.sh)
        continue;
      int64_t oy = ty / g.sh;
      if (oy >= g.oh)
        continue;
      for (int64_t kx = g.kw - 1; kx >= 0; --kx) {
        int64_t tx = ix + g.pw - kx;
        if (tx < 0 || tx % g.sw)
          continue;
        int64_t ox = tx / g.sw;
        if (ox >= g.ow)
          continue;
        double d = loadF64(dy.data, dy.dtype, (p * g.oh + oy) * g.ow + ox);
        if (!g.isMax)
          acc += d / div;
        else if (widePoolArgmax(g, x, p, oy, ox, best) == self)
          acc += d;
      }
    }
    storeF64(dx.data, dx.dtype, i, acc);
  }
}

// ------------------------------------------------------------------- loss --

/// sd[0] = the block's shares s (one a thread, sd kThreads doubles of shared
/// memory) added by a fixed tree (deterministic run to run); every thread
/// of the block calls it.
__device__ void blockTreeSum(double *sd, double s) {
  int t = threadIdx.x;
  sd[t] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (t < k)
      sd[t] += sd[t + k];
    __syncthreads();
  }
}

/// loss[0] = mean of (a - b)^2 in f64 (one block: strided shares, then a
/// fixed tree).
__global__ void mseF64Kernel(Buf loss, Buf a, Buf b, int64_t n) {
  __shared__ double sd[kThreads];
  int t = threadIdx.x;
  double s = 0.0;
  for (int64_t i = t; i < n; i += blockDim.x) {
    double d = loadF64(a.data, a.dtype, i) - loadF64(b.data, b.dtype, i);
    s += d * d;
  }
  blockTreeSum(sd, s);
  if (t == 0)
    storeF64(loss.data, loss.dtype, 0, sd[0] / static_cast<double>(n));
}

__global__ void mseBwdF64Kernel(Buf da, Buf db, Buf dloss, Buf a, Buf b,
                                int64_t n, double norm) {
  double g = loadF64(dloss.data, dloss.dtype, 0);
  GRID_STRIDE(i, n) { wideMseBwdAt(da, db, a, b, i, norm, g); }
}

/// terms[r] = lse(row r) - logits[r, label] (0 for a label outside
/// [0, classes)), one thread per row.
__global__ void crossEntropyTermsF64Kernel(Buf logits, Buf labels,
                                           int64_t rows, int64_t classes,
                                           double *terms) {
  GRID_STRIDE(r, rows) {
    int64_t label = loadIndex(labels.data, labels.dtype, r);
    terms[r] =
        label < 0 || label >= classes
            ? 0.0
            : wideRowLse(logits, r * classes, classes) -
                  loadF64(logits.data, logits.dtype, r * classes + label);
  }
}

/// loss = the terms of the rows whose label is not -100, added in row
/// order, over their count; a label outside [0, classes) makes it NaN and
/// records `site` (one thread, as the CPU's loop).
__global__ void crossEntropyFinishF64Kernel(Buf loss, Buf labels, int64_t rows,
                                            int64_t classes,
                                            const double *terms,
                                            uint32_t *word, int32_t site) {
  bool badLabel;
  double mean = crossEntropyMeanOfTerms(labels, rows, classes, terms, badLabel);
  if (badLabel)
    recordCheck(word, site);
  storeF64(loss.data, loss.dtype, 0, mean);
}

/// *scale = dloss / (rows whose label is not -100), in f64.
__global__ void crossEntropyScaleF64Kernel(Buf dloss, Buf labels, int64_t rows,
                                           double *scale) {
  int64_t valid = crossEntropyValidRows(labels, rows);
  *scale = loadF64(dloss.data, dloss.dtype, 0) / static_cast<double>(valid);
}

/// One row of dlogits = (softmax(row) - onehot(label)) * scale (zeros for
/// label -100), one thread per row (wideCrossEntropyBwdRow, as the CPU).
__global__ void crossEntropyBwdF64Kernel(Buf dlogits, Buf logits, Buf labels,
                                         int64_t rows, int64_t classes,
                                         const double *scale) {
  GRID_STRIDE(r, rows) {
    wideCrossEntropyBwdRow(dlogits, logits, r * classes, classes,
                           loadIndex(labels.data, labels.dtype, r), *scale);
  }
}

// -------------------------------------------------------------- optimizers --

/// torch.optim.SGD on one f64 parameter (the CPU's cpuwide::sgd): its
/// momentum buffer f64 too, the hyperparameters as given; nothing when
/// found_inf is set.
__global__ void sgdF64Kernel(Buf param, Buf grad, double *buf, SgdScalars s,
                             Buf foundInf, int64_t n) {
  if (deviceFlag(foundInf))
    return;
  double lr = wideSgdLr(s);
  GRID_STRIDE(i, n) { wideSgdAt(param, grad, buf, s, lr, i); }
}

/// GradScaler's unscale of one f64 gradient (the CPU's cpuwide::unscale):
/// a non-finite element sets *flag; each element times the f32 inverse
/// scale, in f64.
__global__ void unscaleF64Kernel(double *g, int64_t n, float *flag,
                                 const float *scale) {
  float inv = scale ? 1.0f / *scale : 1.0f;
  bool bad = false;
  GRID_STRIDE(i, n) { bad |= wideUnscaleAt(g, i, inv); }
  if (bad)
    *flag = 1.0f; // every writer stores the same value
}

/// *partial = the sum of squares of one f64 gradient (one block: strided
/// shares, then a fixed tree); nothing when found_inf is set.
__global__ void sumSquaresF64Kernel(const double *g, int64_t n,
                                    double *partial, Buf foundInf) {
  __shared__ double sd[kThreads];
  if (deviceFlag(foundInf))
    return;
  int t = threadIdx.x;
  double s = 0.0;
  for (int64_t i = t; i < n; i += blockDim.x)
    s += g[i] * g[i];
  blockTreeSum(sd, s);
  if (t == 0)
    *partial = sd[0];
}

/// With f64 gradients, the clip coefficient in f64 (the CPU's: max_norm as
/// written over the f64 norm + 1e-6, at most 1) into *coef64, and its f32
/// rounding into *coef for the other gradients (replacing the f32
/// coefficient). The partials are summed in order.
__global__ void clipCoefF64Kernel(const double *partials, int64_t count,
                                  double maxNorm, float *coef, double *coef64,
                                  Buf foundInf) {
  if (deviceFlag(foundInf))
    return;
  double sq = 0.0;
  for (int64_t i = 0; i < count; ++i)
    sq += partials[i];
  double c = maxNorm / (sqrt(sq) + 1e-6);
  double k = c < 1.0 ? c : 1.0;
  *coef64 = k;
  *coef = static_cast<float>(k);
}

__global__ void scaleF64Kernel(double *g, int64_t n, const double *coef64,
                               Buf foundInf) {
  if (deviceFlag(foundInf))
    return;
  double k = *coef64;
  GRID_STRIDE(i, n) { g[i] *= k; }
}

struct AdamwF64Args {
  double lr, beta1, beta2, eps, weightDecay;
  const float *lrScale;
  const int32_t *step; // the count after this update (device)
};

/// torch.optim.AdamW on one f64 parameter (the CPU's cpuwide::adamw),
/// after the step kernel advanced the count; nothing when found_inf is set.
__global__ void adamwF64Kernel(Buf param, Buf grad, double *m, double *v,
                               int64_t n, AdamwF64Args a, Buf foundInf) {
  if (deviceFlag(foundInf))
    return;
  WideAdamwStep k = wideAdamwStep(a.lr, a.lrScale, a.beta1, a.beta2, a.eps,
                                  a.weightDecay, static_cast<double>(*a.step));
  GRID_STRIDE(i, n) { wideAdamwAt(param, grad, m, v, i, k); }
}

// ------------------------------------------------------------------- GEMM --

/// dst[i] = src[i] as f64 (an operand of another dtype, widened exactly).
__global__ void widenKernel(double *dst, Buf src, int64_t n) {
  GRID_STRIDE(i, n) { dst[i] = loadF64(src.data, src.dtype, i); }
}

/// C = beta C (0 when beta is 0) over [batch, m, n]: a GEMM with k = 0.
__global__ void gemmScaleCKernel(double *c, int64_t batch, int64_t m,
                                 int64_t n, int64_t ldc, int64_t strideC,
                                 double beta) {
  GRID_STRIDE(i, batch * m * n) {
    int64_t b = i / (m * n), r = (i / n) % m, j = i % n;
    double *p = c + b * strideC + r * ldc + j;
    *p = beta == 0.0 ? 0.0 : beta * *p;
  }
}

/// The plain f64 GEMM (where cuBLASLt has no algorithm): one thread per
/// element of C, the dot product in k order.
__global__ void gemmNaiveF64Kernel(double *c, const double *a, const double *b,
                                   GemmDesc d, double alpha, double beta) {
  GRID_STRIDE(i, d.batch * d.m * d.n) {
    int64_t bi = i / (d.m * d.n), r = (i / d.n) % d.m, j = i % d.n;
    const double *ab = a + bi * d.strideA, *bb = b + bi * d.strideB;
    double acc = 0.0;
    for (int64_t k = 0; k < d.k; ++k) {
      double av = d.transA ? ab[k * d.lda + r] : ab[r * d.lda + k];
      double bv = d.transB ? bb[j * d.ldb + k] : bb[k * d.ldb + j];
      acc += av * bv;
    }
    double *p = c + bi * d.strideC + r * d.ldc + j;
    double v = alpha * acc;
    if (beta != 0.0)
      v += beta * *p;
    *p = v;
  }
}

/// out (C's dtype) = epilogue(acc + bias[j]) over [batch, m, n] in f64.
__global__ void gemmEpilogueF64Kernel(Buf out, const double *acc, Buf bias,
                                      int64_t batch, int64_t m, int64_t n,
                                      int64_t ldc, int64_t strideC,
                                      ampc_epilogue epi) {
  GRID_STRIDE(i, batch * m * n) {
    int64_t b = i / (m * n), r = (i / n) % m, j = i % n;
    int64_t at = b * strideC + r * ldc + j;
    double v = acc[at];
    if (bias.data)
      v += loadF64(bias.data, bias.dtype, j);
    if (epi == AMPC_EPILOGUE_RELU)
      v = unaryForward(UnaryOp::Relu, v);
    else if (epi == AMPC_EPILOGUE_GELU)
      v = unaryForward(UnaryOp::Gelu, v);
    else if (epi == AMPC_EPILOGUE_GELU_TANH)
      v = unaryForward(UnaryOp::GeluTanh, v);
    storeF64(out.data, out.dtype, at, v);
  }
}

/// The elements an operand spans: (batch - 1) * stride + (rows - 1) * ld +
/// cols (the CPU's cpuwide::gemm extents).
int64_t extentOf(int64_t batch, int64_t stride, int64_t rows, int64_t ld,
                 int64_t cols) {
  return (batch - 1) * stride + (rows ? (rows - 1) * ld : 0) + cols;
}

} // namespace

template <typename... P, typename... A>
ampc_status CudaBackend::launchOver(int64_t n, const char *what,
                                    void (*kernel)(P...), A &&...args) {
  if (n == 0)
    return AMPC_OK;
  kernel<<<gridFor(n), kThreads, 0, stream_>>>(std::forward<A>(args)...);
  return launchStatusOf(what);
}

// ------------------------------------------------------------- refusals --

ampc_status CudaBackend::refuseWide(const char *what,
                                    std::initializer_list<Buf> bufs) {
  if (!anyF64(bufs))
    return AMPC_OK;
  return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                  "%s: f64 tensors have no kernel on the CUDA backend yet "
                  "(the CPU backend computes them in f64); never computed "
                  "in f32 instead",
                  what);
}

ampc_status CudaBackend::refuseNarrowF64Grads(const char *what,
                                              const TensorList &params,
                                              const TensorList &grads) {
  for (int32_t t = 0; t < params.count; ++t)
    if (params.numels[t] > 0 && params.dtypes[t] != AMPC_F64 &&
        grads.dtypes[t] == AMPC_F64)
      return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                      "%s: gradient %d is f64 for a param of dtype %d, which "
                      "has no kernel on the CUDA backend",
                      what, static_cast<int>(t),
                      static_cast<int>(params.dtypes[t]));
  return AMPC_OK;
}

// ------------------------------------------------------------ elementwise --

bool CudaBackend::fillWide(Buf y, int64_t n, double value, ampc_status &st) {
  // f64 holds the double itself; u8, i8 and i16 take it truncated and
  // wrapped (the CPU's storeF64). i32, i64 and bool keep fill's kernel.
  if (y.dtype != AMPC_F64 && y.dtype != AMPC_U8 && y.dtype != AMPC_I8 &&
      y.dtype != AMPC_I16)
    return false;
  st = launchOver(n, "fill kernel (wide)", fillWideKernel, y, n, value);
  return true;
}

bool CudaBackend::copyScaleWide(Buf dst, Buf src, const Walk &w0, float scale,
                                ampc_status &st) {
  if (scale == 1.0f || !anyF64({dst, src}))
    return false;
  int64_t n = w0.numel();
  Walk w = collapseWalk(w0, 2);
  st = launchOver(n, "copy kernel (f64)", copyScaleF64Kernel, dst, src, w,
                  static_cast<double>(scale), n);
  return true;
}

bool CudaBackend::unaryWide(UnaryOp op, const UnaryAttrs &attrs, Buf y, Buf x,
                            int64_t n, ampc_status &st) {
  bool f64 = anyF64({y, x});
  if (!f64 && (!isIntegerDtype(y.dtype) || !isIntOrBool(x) ||
               (op != UnaryOp::Neg && op != UnaryOp::Abs)))
    return false;
  st = AMPC_OK;
  if (n == 0)
    return true;
  if (f64)
    unaryF64Kernel<<<gridFor(n), kThreads, 0, stream_>>>(op, attrs, y, x, n);
  else
    unaryIntKernel<<<gridFor(n), kThreads, 0, stream_>>>(op == UnaryOp::Neg,
                                                         y, x, n);
  st = launchStatusOf(f64 ? "unary kernel (f64)" : "unary kernel (integer)");
  return true;
}

bool CudaBackend::unaryBwdWide(UnaryOp op, const UnaryAttrs &attrs, Buf dx,
                               Buf dy, Buf x, int64_t n, ampc_status &st) {
  if (!anyF64({dx, dy, x}))
    return false;
  st = launchOver(n, "unary backward kernel (f64)", unaryBwdF64Kernel, op,
                  attrs, dx, dy, x, n);
  return true;
}

bool CudaBackend::binaryWide(BinaryOp op, Buf y, Buf a, Buf b, const Walk &w0,
                             ampc_status &st) {
  bool f64 = anyF64({y, a, b});
  if (!f64) {
    // Integer operands: exact when the result is an integer (arithmetic,
    // where) or a comparison's bool.
    int64_t probe;
    if (!isIntOrBool(a) || !isIntOrBool(b) ||
        !(isIntegerDtype(y.dtype) || isComparison(op)) ||
        !intBinary(op, 0, 0, probe))
      return false;
  }
  st = AMPC_OK;
  int64_t n = w0.numel();
  if (n == 0)
    return true;
  Walk w = collapseWalk(w0, 3);
  if (f64)
    binaryF64Kernel<<<gridFor(n), kThreads, 0, stream_>>>(op, y, a, b, w, n);
  else
    binaryIntKernel<<<gridFor(n), kThreads, 0, stream_>>>(op, y, a, b, w, n);
  st = launchStatusOf(f64 ? "binary kernel (f64)" : "binary kernel (integer)");
  return true;
}

bool CudaBackend::binaryBwdWide(BinaryOp op, int which, Buf g, Buf dy, Buf a,
                                Buf b, const Walk &w0, ampc_status &st) {
  if (!anyF64({g, dy, a, b}))
    return false;
  int64_t n = w0.numel();
  Walk w = collapseWalk(w0, 3);
  st = launchOver(n, "binary backward kernel (f64)", binaryBwdF64Kernel, op,
                  which, g, dy, a, b, w, n);
  return true;
}

bool CudaBackend::nonfiniteWide(Buf x, int64_t n, int32_t site,
                                ampc_status &st) {
  if (!isF64(x))
    return false;
  st = launchOver(n, "non-finite check kernel (f64)", nonfiniteF64Kernel, x, n,
                  checkWords + AMPC_CHECK_NONFINITE, site);
  return true;
}

bool CudaBackend::embeddingWide(Buf y, Buf table, Buf ids, int64_t n,
                                int64_t vocab, int64_t dim, int32_t site,
                                ampc_status &st) {
  if (!anyF64({y, table}))
    return false;
  st = launchOver(n * dim, "embedding kernel (f64)", embeddingF64Kernel, y,
                  table, ids, n, vocab, dim, checkWords + AMPC_CHECK_INDEX,
                  site);
  return true;
}

// ------------------------------------------------------------- reductions --

bool CudaBackend::reduceWide(ReduceOp op, Buf y, Buf x, const Walk &outer,
                             const Walk &inner, ampc_status &st) {
  bool f64 = anyF64({y, x});
  if (!f64 && (!isIntOrBool(x) || !isIntOrBool(y) || op == ReduceOp::Mean))
    return false;
  st = AMPC_OK;
  int64_t nOut = outer.numel(), nIn = inner.numel();
  if (nOut == 0)
    return true;
  Walk o = collapseWalk(outer, 2), in = collapseWalk(inner, 2);
  if (f64)
    reduceWideKernel<false><<<blocksPerOutput(nOut), kThreads, 0, stream_>>>(
        op, y, x, o, in, nOut, nIn);
  else
    reduceWideKernel<true><<<blocksPerOutput(nOut), kThreads, 0, stream_>>>(
        op, y, x, o, in, nOut, nIn);
  st = launchStatusOf(f64 ? "reduce kernel (f64)" : "reduce kernel (integer)");
  return true;
}

bool CudaBackend::reduceMaxBwdWide(Buf dx, Buf dy, Buf x, Buf y,
                                   const Walk &outer, const Walk &inner,
                                   ampc_status &st) {
  if (!anyF64({dx, dy, x}))
    return false;
  int64_t nOut = outer.numel(), nIn = inner.numel();
  st = launchOver(nOut, "max backward kernel (f64)", reduceMaxBwdF64Kernel, dx,
                  dy, x, y, outer, inner, nOut, nIn);
  return true;
}

bool CudaBackend::argmaxWide(Buf y, Buf x, int64_t outer, int64_t dim,
                             int64_t inner, ampc_status &st) {
  bool ints = isIntOrBool(x);
  if (!ints && x.dtype != AMPC_F64)
    return false;
  st = launchOver(outer * inner, "argmax kernel (wide)", argmaxWideKernel, ints,
                  y, x, outer, dim, inner);
  return true;
}

bool CudaBackend::cumsumWide(Buf y, Buf x, int64_t outer, int64_t len,
                             int64_t inner, bool reverse, ampc_status &st) {
  bool f64 = anyF64({y, x});
  if (!f64 && !(isIntOrBool(x) && y.dtype == AMPC_I64))
    return false;
  if ((st = enter()) != AMPC_OK || outer * inner * len == 0)
    return true;
  cumsumWideKernel<<<gridFor(outer * inner), kThreads, 0, stream_>>>(
      f64, y, x, outer, len, inner, reverse);
  st = launchStatusOf("cumsum kernel (wide)");
  return true;
}

bool CudaBackend::softmaxWide(bool log, Buf y, Buf x, int64_t outer,
                              int64_t dim, int64_t inner, ampc_status &st) {
  if (!anyF64({y, x}))
    return false;
  st = launchOver(outer * inner, "softmax kernel (f64)", softmaxF64Kernel, log,
                  y, x, outer, dim, inner);
  return true;
}

bool CudaBackend::softmaxBwdWide(bool log, Buf dx, Buf dy, Buf y,
                                 int64_t outer, int64_t dim, int64_t inner,
                                 ampc_status &st) {
  if (!anyF64({dx, dy, y}))
    return false;
  st = launchOver(outer * inner, "softmax backward kernel (f64)",
                  softmaxBwdF64Kernel, log, dx, dy, y, outer, dim, inner);
  return true;
}

// ------------------------------------------------------------------ norms --

bool CudaBackend::normWide(bool rms, Buf y, Buf x, Buf w, Buf b, int64_t rows,
                           int64_t cols, float eps, ampc_status &st) {
  if (!anyF64({y, x, w, b}))
    return false;
  st = AMPC_OK;
  if (rows == 0 || cols == 0)
    return true;
  normF64Kernel<<<gridFor(rows), kThreads, 0, stream_>>>(
      rms, y, x, w, b, rows, cols, asWrittenDouble(eps));
  st = launchStatusOf("norm kernel (f64)");
  return true;
}

bool CudaBackend::normBwdWide(bool rms, Buf dx, Buf dw, Buf db, Buf dy, Buf x,
                              Buf w, int64_t rows, int64_t cols, float eps,
                              ampc_status &st) {
  if (!anyF64({dx, dw, db, dy, x, w}))
    return false;
  st = AMPC_OK;
  if (cols == 0)
    return true;
  if (rows == 0) {
    // No rows: dw and db are sums of nothing.
    if (dw.data)
      fillWideKernel<<<gridFor(cols), kThreads, 0, stream_>>>(dw, cols, 0.0);
    if (db.data)
      fillWideKernel<<<gridFor(cols), kThreads, 0, stream_>>>(db, cols, 0.0);
    st = launchStatusOf("norm backward kernel (f64)");
    return true;
  }
  Temp t(*this);
  st = t.alloc(2 * rows * sizeof(double));
  if (st != AMPC_OK)
    return true;
  double *stats = static_cast<double *>(t.get());
  rowStatsF64Kernel<<<gridFor(rows), kThreads, 0, stream_>>>(
      rms, x, rows, cols, asWrittenDouble(eps), stats);
  if ((st = launchStatusOf("norm statistics kernel (f64)")) != AMPC_OK)
    return true;
  if (dx.data) {
    normBwdDxF64Kernel<<<gridFor(rows), kThreads, 0, stream_>>>(
        rms, dx, dy, x, w, rows, cols, stats);
    if ((st = launchStatusOf("norm backward kernel (f64)")) != AMPC_OK)
      return true;
  }
  if (dw.data || db.data) {
    normBwdColsF64Kernel<<<gridFor(cols), kThreads, 0, stream_>>>(
        dw, db, dy, x, rows, cols, stats);
    st = launchStatusOf("norm weight gradient kernel (f64)");
  }
  return true;
}

// ------------------------------------------------------------- batch norm --

bool CudaBackend::batchNormWide(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv,
                                bool training, int64_t n, int64_t c,
                                int64_t inner, double eps, ampc_status &st) {
  if (!anyF64({y, x, w, b, rm, rv}))
    return false;
  if ((st = enter()) == AMPC_OK)
    st = launchOver(c, "batch norm kernel (f64)", batchNormF64Kernel, y, x, w,
                    b, rm, rv, training, n, c, inner, eps);
  return true;
}

bool CudaBackend::batchNormBwdWide(Buf dx, Buf dw, Buf db, Buf dy, Buf x,
                                   Buf w, Buf rm, Buf rv, bool training,
                                   int64_t n, int64_t c, int64_t inner,
                                   double eps, ampc_status &st) {
  if (!anyF64({dx, dw, db, dy, x, w, rm, rv}))
    return false;
  if ((st = enter()) == AMPC_OK)
    st = launchOver(c, "batch norm backward kernel (f64)",
                    batchNormBwdF64Kernel, dx, dw, db, dy, x, w, rm, rv,
                    training, n, c, inner, eps);
  return true;
}

bool CudaBackend::batchNormUpdateWide(Buf newMean, Buf newVar, Buf x, Buf rm,
                                      Buf rv, int64_t n, int64_t c,
                                      int64_t inner, double momentum,
                                      ampc_status &st) {
  if (!anyF64({newMean, newVar, x, rm, rv}))
    return false;
  if ((st = enter()) == AMPC_OK)
    st = launchOver(c, "batch norm update kernel (f64)",
                    batchNormUpdateF64Kernel, newMean, newVar, x, rm, rv, n, c,
                    inner, momentum);
  return true;
}

// ---------------------------------------------------------------- dropout --

bool CudaBackend::dropoutWide(Buf y, Buf x, const int32_t *step, uint64_t seed,
                              uint64_t key, float pMask, double p,
                              int64_t numel, DropoutShard shard,
                              ampc_status &st) {
  if (!isF64(y) && !isF64(x))
    return false;
  if ((st = enter()) == AMPC_OK)
    st = launchOver(numel, "dropout kernel (f64)", dropoutF64Kernel, y, x,
                    step, seed, key, pMask, 1.0 / (1.0 - p), numel, shard);
  return true;
}

// ---------------------------------------------------------------- pooling --

bool CudaBackend::poolWide(Buf y, Buf x, const PoolGeom &g, ampc_status &st) {
  if (!anyF64({y, x}))
    return false;
  int64_t n = g.planes * g.oh * g.ow;
  st = launchOver(n, "pool kernel (f64)", poolF64Kernel, y, x, g);
  return true;
}

bool CudaBackend::poolBwdWide(Buf dx, Buf dy, Buf x, const PoolGeom &g,
                              ampc_status &st) {
  if (!anyF64({dx, dy, x}))
    return false;
  int64_t n = g.planes * g.h * g.w;
  st = launchOver(n, "pool backward kernel (f64)", poolBwdF64Kernel, dx, dy, x,
                  g);
  return true;
}

// ------------------------------------------------------------------- loss --

bool CudaBackend::mseWide(Buf loss, Buf a, Buf b, int64_t n, ampc_status &st) {
  if (!anyF64({loss, a, b}))
    return false;
  mseF64Kernel<<<1, kThreads, 0, stream_>>>(loss, a, b, n);
  st = launchStatusOf("mse kernel (f64)");
  return true;
}

bool CudaBackend::mseBwdWide(Buf da, Buf db, Buf dloss, Buf a, Buf b,
                             int64_t n, ampc_status &st) {
  if (!anyF64({da, db, dloss, a, b}))
    return false;
  st = launchOver(n, "mse backward kernel (f64)", mseBwdF64Kernel, da, db,
                  dloss, a, b, n, 2.0 / static_cast<double>(n));
  return true;
}

bool CudaBackend::crossEntropyWide(Buf loss, Buf logits, Buf labels,
                                   int64_t rows, int64_t classes, int32_t site,
                                   ampc_status &st) {
  if (logits.dtype != AMPC_F64)
    return false; // as the CPU: f64 logits compute in f64
  Temp t(*this);
  if ((st = t.alloc((rows > 0 ? rows : 1) * sizeof(double))) != AMPC_OK)
    return true;
  double *terms = static_cast<double *>(t.get());
  if (rows > 0) {
    crossEntropyTermsF64Kernel<<<gridFor(rows), kThreads, 0, stream_>>>(
        logits, labels, rows, classes, terms);
    if ((st = launchStatusOf("cross-entropy kernel (f64)")) != AMPC_OK)
      return true;
  }
  crossEntropyFinishF64Kernel<<<1, 1, 0, stream_>>>(
      loss, labels, rows, classes, terms, checkWords + AMPC_CHECK_INDEX, site);
  st = launchStatusOf("cross-entropy finish kernel (f64)");
  return true;
}

bool CudaBackend::crossEntropyBwdWide(Buf dlogits, Buf dloss, Buf logits,
                                      Buf labels, int64_t rows,
                                      int64_t classes, ampc_status &st) {
  if (logits.dtype != AMPC_F64)
    return false;
  st = AMPC_OK;
  if (rows == 0)
    return true;
  Temp t(*this);
  if ((st = t.alloc(sizeof(double))) != AMPC_OK)
    return true;
  double *scale = static_cast<double *>(t.get());
  crossEntropyScaleF64Kernel<<<1, 1, 0, stream_>>>(dloss, labels, rows, scale);
  if ((st = launchStatusOf("cross-entropy backward scale (f64)")) != AMPC_OK)
    return true;
  crossEntropyBwdF64Kernel<<<gridFor(rows), kThreads, 0, stream_>>>(
      dlogits, logits, labels, rows, classes, scale);
  st = launchStatusOf("cross-entropy backward kernel (f64)");
  return true;
}

// -------------------------------------------------------------- optimizers --

/// Calls launch(t, n) for each f64 tensor t of `l` with n > 0 elements,
/// stopping at the first status that is not AMPC_OK; that status.
template <typename F>
static ampc_status forEachF64(const TensorList &l, F &&launch) {
  ampc_status st = AMPC_OK;
  for (int32_t t = 0; t < l.count && st == AMPC_OK; ++t)
    if (l.dtypes[t] == AMPC_F64 && l.numels[t] != 0)
      st = launch(t, l.numels[t]);
  return st;
}

/// Whether a list holds an f64 tensor; `rest` is then its numels with
/// those entries 0 (the multi-tensor f32 kernels skip them).
static bool splitF64(const TensorList &params, std::vector<int64_t> &rest) {
  bool any = false;
  for (int32_t t = 0; t < params.count; ++t)
    any |= params.dtypes[t] == AMPC_F64;
  if (any)
    for (int32_t t = 0; t < params.count; ++t)
      rest.push_back(params.dtypes[t] == AMPC_F64 ? 0 : params.numels[t]);
  return any;
}

bool CudaBackend::unscaleWide(const TensorList &g, float *flag,
                              const float *scale, std::vector<int64_t> &rest,
                              ampc_status &st) {
  if (!splitF64(g, rest))
    return false;
  st = forEachF64(g, [&](int32_t t, int64_t n) {
    return launchOver(n, "unscale kernel (f64)", unscaleF64Kernel,
                      static_cast<double *>(g.data[t]), n, flag, scale);
  });
  return true;
}

cudaError_t launchSumSquaresF64(cudaStream_t s, const double *g, int64_t n,
                                double *partial, Buf foundInf) {
  sumSquaresF64Kernel<<<1, kThreads, 0, s>>>(g, n, partial, foundInf);
  return cudaGetLastError();
}

cudaError_t launchClipCoefF64(cudaStream_t s, const double *partials,
                              int64_t count, float maxNorm, float *coef,
                              double *coef64, Buf foundInf) {
  clipCoefF64Kernel<<<1, 1, 0, s>>>(partials, count, asWrittenDouble(maxNorm),
                                    coef, coef64, foundInf);
  return cudaGetLastError();
}

cudaError_t launchScaleF64(cudaStream_t s, double *g, int64_t n,
                           const double *coef64, Buf foundInf) {
  scaleF64Kernel<<<gridFor(n), kThreads, 0, s>>>(g, n, coef64, foundInf);
  return cudaGetLastError();
}

bool CudaBackend::sgdWide(const TensorList &params, const TensorList &grads,
                          void *const *bufs, const SgdScalars &s,
                          Buf foundInf, std::vector<int64_t> &rest,
                          ampc_status &st) {
  if (!splitF64(params, rest))
    return false;
  st = forEachF64(params, [&](int32_t t, int64_t n) {
    return launchOver(n, "sgd kernel (f64)", sgdF64Kernel,
                      Buf{params.data[t], AMPC_F64},
                      Buf{grads.data[t], grads.dtypes[t]},
                      s.hasMomentum ? static_cast<double *>(bufs[t]) : nullptr,
                      s, foundInf, n);
  });
  return true;
}

bool CudaBackend::adamwWide(const TensorList &params, const TensorList &grads,
                            void *const *expAvgs, void *const *expAvgSqs,
                            const int32_t *step, double lr, double beta1,
                            double beta2, double eps, double weightDecay,
                            Buf foundInf, const float *lrScale,
                            std::vector<int64_t> &rest, ampc_status &st) {
  if (!splitF64(params, rest))
    return false;
  AdamwF64Args a{lr, beta1, beta2, eps, weightDecay, lrScale, step};
  st = forEachF64(params, [&](int32_t t, int64_t n) {
    return launchOver(
        n, "adamw kernel (f64)", adamwF64Kernel, Buf{params.data[t], AMPC_F64},
        Buf{grads.data[t], grads.dtypes[t]}, static_cast<double *>(expAvgs[t]),
        static_cast<double *>(expAvgSqs[t]), n, a, foundInf);
  });
  return true;
}

// ------------------------------------------------------------------- GEMM --

bool CudaBackend::gemmWide(const GemmDesc &d, ampc_status &st) {
  if (!anyF64({d.c, d.a, d.b, d.bias}))
    return false;
  st = gemmF64(d);
  return true;
}

/// An f64 GEMM (cpuwide::gemm's arithmetic): operands of another dtype
/// widened exactly into scratch, C = alpha op(A) op(B) + beta C through
/// cuBLASLt in f64 (CUBLAS_COMPUTE_64F; a plain kernel where it has no
/// algorithm), then bias and epilogue in f64 and one rounding to C's dtype.
ampc_status CudaBackend::gemmF64(const GemmDesc &d) {
  int64_t aRows = d.transA ? d.k : d.m, bRows = d.transB ? d.n : d.k;
  int64_t aN = extentOf(d.batch, d.strideA, aRows, d.lda, d.transA ? d.m : d.k);
  int64_t bN = extentOf(d.batch, d.strideB, bRows, d.ldb, d.transB ? d.k : d.n);
  int64_t cN = extentOf(d.batch, d.strideC, d.m, d.ldc, d.n);
  int64_t total = d.batch * d.m * d.n;
  if (total == 0)
    return AMPC_OK;
  Temp ta(*this), tb(*this), tc(*this);
  auto widen = [&](Buf b, int64_t n, Temp &t, double *&out) -> ampc_status {
    if (b.dtype == AMPC_F64) {
      out = static_cast<double *>(b.data);
      return AMPC_OK;
    }
    AMPC_TRY(t.alloc(n * sizeof(double)));
    out = static_cast<double *>(t.get());
    if (n > 0) {
      widenKernel<<<gridFor(n), kThreads, 0, stream_>>>(out, b, n);
      AMPC_TRY(launchStatusOf("gemm widen kernel (f64)"));
    }
    return AMPC_OK;
  };
  double *a = nullptr, *b = nullptr, *c = nullptr;
  bool useK = d.k > 0;
  if (useK) {
    AMPC_TRY(widen(d.a, aN, ta, a));
    AMPC_TRY(widen(d.b, bN, tb, b));
  }
  AMPC_TRY(widen(d.c, cN, tc, c));
  double alpha = d.alpha, beta = d.beta;
  if (!useK) {
    gemmScaleCKernel<<<gridFor(total), kThreads, 0, stream_>>>(
        c, d.batch, d.m, d.n, d.ldc, d.strideC, beta);
    AMPC_TRY(launchStatusOf("gemm k = 0 kernel (f64)"));
  } else {
    GemmDesc g = d;
    g.a = Buf{a, AMPC_F64};
    g.b = Buf{b, AMPC_F64};
    g.c = Buf{c, AMPC_F64};
    g.bias = Buf{nullptr, AMPC_F64};
    g.epilogue = AMPC_EPILOGUE_NONE;
    bool noAlgo = false;
    ampc_status s = lt.run(g, &noAlgo);
    if (s != AMPC_OK && !noAlgo)
      return s;
    if (s != AMPC_OK) {
      gemmNaiveF64Kernel<<<gridFor(total), kThreads, 0, stream_>>>(
          c, a, b, g, alpha, beta);
      AMPC_TRY(launchStatusOf("gemm kernel (f64)"));
    }
  }
  if (d.c.dtype != AMPC_F64 || d.bias.data ||
      d.epilogue != AMPC_EPILOGUE_NONE) {
    gemmEpilogueF64Kernel<<<gridFor(total), kThreads, 0, stream_>>>(
        d.c, c, d.bias, d.batch, d.m, d.n, d.ldc, d.strideC, d.epilogue);
    AMPC_TRY(launchStatusOf("gemm epilogue kernel (f64)"));
  }
  return AMPC_OK;
}

/// cudaGetLastError after a launch, as LAUNCH_CHECK, for code that returns
/// its status rather than from the entry point.
ampc_status CudaBackend::launchStatusOf(const char *what) {
  lastLaunch = what;
  cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? AMPC_OK : cudaFail(err, what);
}

} // namespace cuda
} // namespace ampc
