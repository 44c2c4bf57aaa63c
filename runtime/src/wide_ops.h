//===- wide_ops.h - The f64 kernels' row and channel bodies --*- C++ -*-===//
//
// The loop bodies of the f64 (and exact-integer) kernels, shared by the CPU
// backend's plain loops (cpu/cpu_wide.cpp) and the CUDA backend's kernels
// (cuda/cuda_wide.cu, one thread per row, channel or element); compiled by
// both, see hd.h. Each function is one row, channel, window or element of
// work, taking the tensors as Bufs (read with loadF64 / loadInt, written
// with storeF64 / storeInt) and its indices and sizes, so the two backends
// run the same f64 operations in the same order. The CPU builds with
// -ffp-contract=off and cuda_wide.cu with --fmad=false, so the IEEE
// operations (+ - * / sqrt) round alike; exp and log are each platform's.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_WIDE_OPS_H
#define AMPC_RUNTIME_SRC_WIDE_OPS_H

#include "backend.h"
#include "dropout_ops.h"
#include "half.h"
#include "hd.h"
#include "scalar_ops.h"
#include "select_ops.h"

#include <math.h>
#include <stdint.h>

namespace ampc {

// ------------------------------------------------ rows along a dimension --
// A row of an (outer, dim, inner) tensor: the `dim` values base + d * inner,
// base = o * dim * inner + i.

/// The index along the row of its first maximum (NaN counting as the
/// maximum for f64; plain > for integers and bool).
AMPC_HD int64_t wideArgmaxRow(bool ints, Buf x, int64_t base, int64_t dim,
                              int64_t inner) {
  int64_t at = 0;
  for (int64_t d = 1; d < dim; ++d) {
    int64_t p = base + d * inner, q = base + at * inner;
    bool takes = ints
                     ? loadInt(x.data, x.dtype, p) > loadInt(x.data, x.dtype, q)
                     : argmaxTakes(loadF64(x.data, x.dtype, p),
                                   loadF64(x.data, x.dtype, q));
    if (takes)
      at = d;
  }
  return at;
}

/// cumsum of row (o, i) of an (outer, len, inner) tensor: f64 in order, or
/// integers into i64 wrapping.
AMPC_HD void wideCumsumRow(bool f64, Buf y, Buf x, int64_t o, int64_t i,
                           int64_t len, int64_t inner, bool reverse) {
  double acc = 0.0;
  uint64_t iacc = 0;
  for (int64_t k = 0; k < len; ++k) {
    int64_t at = (o * len + (reverse ? len - 1 - k : k)) * inner + i;
    if (f64) {
      acc += loadF64(x.data, x.dtype, at);
      storeF64(y.data, y.dtype, at, acc);
    } else {
      iacc += static_cast<uint64_t>(loadInt(x.data, x.dtype, at));
      static_cast<int64_t *>(y.data)[at] = static_cast<int64_t>(iacc);
    }
  }
}

/// softmax (log_softmax when `log`) of one row in f64.
AMPC_HD void wideSoftmaxRow(bool log, Buf y, Buf x, int64_t base, int64_t dim,
                            int64_t inner) {
  double m = -INFINITY;
  for (int64_t d = 0; d < dim; ++d)
    m = fmax(m, loadF64(x.data, x.dtype, base + d * inner));
  double sum = 0.0;
  for (int64_t d = 0; d < dim; ++d)
    sum += exp(loadF64(x.data, x.dtype, base + d * inner) - m);
  double ls = ::log(sum);
  for (int64_t d = 0; d < dim; ++d) {
    double v = loadF64(x.data, x.dtype, base + d * inner) - m;
    storeF64(y.data, y.dtype, base + d * inner, log ? v - ls : exp(v) / sum);
  }
}

/// The softmax (log_softmax) backward of one row from its output y.
AMPC_HD void wideSoftmaxBwdRow(bool log, Buf dx, Buf dy, Buf y, int64_t base,
                               int64_t dim, int64_t inner) {
  double dot = 0.0;
  for (int64_t d = 0; d < dim; ++d) {
    int64_t at = base + d * inner;
    double g = loadF64(dy.data, dy.dtype, at);
    dot += log ? g : g * loadF64(y.data, y.dtype, at);
  }
  for (int64_t d = 0; d < dim; ++d) {
    int64_t at = base + d * inner;
    double g = loadF64(dy.data, dy.dtype, at), v = loadF64(y.data, y.dtype, at);
    storeF64(dx.data, dx.dtype, at, log ? g - exp(v) * dot : v * (g - dot));
  }
}

// ------------------------------------------------- layer and RMS norms --
// Row r of a (rows, cols) tensor; eps is the double the caller computes with.

/// Row r's mean (0 for RMS) and 1 / sqrt(var + eps), two passes in order.
AMPC_HD void wideRowStats(bool rms, Buf x, int64_t r, int64_t cols, double eps,
                          double &mean, double &rstd) {
  double s = 0.0;
  for (int64_t j = 0; j < cols; ++j)
    s += loadF64(x.data, x.dtype, r * cols + j);
  mean = rms ? 0.0 : s / static_cast<double>(cols);
  double v = 0.0;
  for (int64_t j = 0; j < cols; ++j) {
    double d = loadF64(x.data, x.dtype, r * cols + j) - mean;
    v += d * d;
  }
  rstd = 1.0 / sqrt(v / static_cast<double>(cols) + eps);
}

/// y of row r = (x - mean) rstd, times w[j] and plus b[j] where given.
AMPC_HD void wideNormRow(Buf y, Buf x, Buf w, Buf b, int64_t r, int64_t cols,
                         double mean, double rstd) {
  for (int64_t j = 0; j < cols; ++j) {
    double v = (loadF64(x.data, x.dtype, r * cols + j) - mean) * rstd;
    if (w.data)
      v *= loadF64(w.data, w.dtype, j);
    if (b.data)
      v += loadF64(b.data, b.dtype, j);
    storeF64(y.data, y.dtype, r * cols + j, v);
  }
}

/// dx of row r: rstd (g - mean(g) - xhat mean(g xhat)), g = dy w (mean(g)
/// 0 for RMS).
AMPC_HD void wideNormBwdDxRow(bool rms, Buf dx, Buf dy, Buf x, Buf w, int64_t r,
                              int64_t cols, double mean, double rstd) {
  double sumG = 0.0, sumGX = 0.0;
  for (int64_t j = 0; j < cols; ++j) {
    double d = loadF64(dy.data, dy.dtype, r * cols + j);
    double xhat = (loadF64(x.data, x.dtype, r * cols + j) - mean) * rstd;
    double g = w.data ? d * loadF64(w.data, w.dtype, j) : d;
    sumG += g;
    sumGX += g * xhat;
  }
  double meanG = rms ? 0.0 : sumG / static_cast<double>(cols);
  double meanGX = sumGX / static_cast<double>(cols);
  for (int64_t j = 0; j < cols; ++j) {
    double d = loadF64(dy.data, dy.dtype, r * cols + j);
    double xhat = (loadF64(x.data, x.dtype, r * cols + j) - mean) * rstd;
    double g = w.data ? d * loadF64(w.data, w.dtype, j) : d;
    storeF64(dx.data, dx.dtype, r * cols + j,
             rstd * (g - meanG - xhat * meanGX));
  }
}

/// Adds row r's terms of dw (dy xhat) and db (dy) at column j.
AMPC_HD void wideNormBwdColStep(Buf dy, Buf x, int64_t r, int64_t cols,
                                int64_t j, double mean, double rstd,
                                double &dwAcc, double &dbAcc) {
  double d = loadF64(dy.data, dy.dtype, r * cols + j);
  double xhat = (loadF64(x.data, x.dtype, r * cols + j) - mean) * rstd;
  dwAcc += d * xhat;
  dbAcc += d;
}

// ------------------------------------------------------------ batch norm --
// Channel ch of an (n, c, inner) tensor: the values (s0 * c + ch) * inner + j.

/// The batch mean and biased variance of channel ch (two passes, f64).
AMPC_HD void wideBnStats(Buf x, int64_t n, int64_t c, int64_t inner, int64_t ch,
                         double &mean, double &var) {
  double s = 0.0;
  for (int64_t s0 = 0; s0 < n; ++s0)
    for (int64_t j = 0; j < inner; ++j)
      s += loadF64(x.data, x.dtype, (s0 * c + ch) * inner + j);
  double m = static_cast<double>(n * inner);
  mean = s / m;
  double s2 = 0.0;
  for (int64_t s0 = 0; s0 < n; ++s0)
    for (int64_t j = 0; j < inner; ++j) {
      double d = loadF64(x.data, x.dtype, (s0 * c + ch) * inner + j) - mean;
      s2 += d * d;
    }
  var = s2 / m;
}

/// The mean and 1 / sqrt(var + eps) channel ch normalises with: the batch
/// statistics in training, the running ones otherwise.
AMPC_HD void wideBnChannel(Buf x, Buf rm, Buf rv, bool training, int64_t n,
                           int64_t c, int64_t inner, int64_t ch, double eps,
                           double &mean, double &invstd) {
  double var;
  if (training) {
    wideBnStats(x, n, c, inner, ch, mean, var);
  } else {
    mean = loadF64(rm.data, rm.dtype, ch);
    var = loadF64(rv.data, rv.dtype, ch);
  }
  invstd = 1.0 / sqrt(var + eps);
}

/// y of channel ch = (x - mean) invstd w + b.
AMPC_HD void wideBnForwardChannel(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv,
                                  bool training, int64_t n, int64_t c,
                                  int64_t inner, int64_t ch, double eps) {
  double mean, invstd;
  wideBnChannel(x, rm, rv, training, n, c, inner, ch, eps, mean, invstd);
  double wc = w.data ? loadF64(w.data, w.dtype, ch) : 1.0;
  double bc = b.data ? loadF64(b.data, b.dtype, ch) : 0.0;
  for (int64_t s0 = 0; s0 < n; ++s0)
    for (int64_t j = 0; j < inner; ++j) {
      int64_t i = (s0 * c + ch) * inner + j;
      storeF64(y.data, y.dtype, i,
               (loadF64(x.data, x.dtype, i) - mean) * invstd * wc + bc);
    }
}

/// dw[ch] = sum dy xhat, db[ch] = sum dy and dx of channel ch (each where
/// given).
AMPC_HD void wideBnBackwardChannel(Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
                                   Buf rm, Buf rv, bool training, int64_t n,
                                   int64_t c, int64_t inner, int64_t ch,
                                   double eps) {
  double m = static_cast<double>(n * inner);
  double mean, invstd;
  wideBnChannel(x, rm, rv, training, n, c, inner, ch, eps, mean, invstd);
  double sumDy = 0.0, sumDyX = 0.0;
  for (int64_t s0 = 0; s0 < n; ++s0)
    for (int64_t j = 0; j < inner; ++j) {
      int64_t i = (s0 * c + ch) * inner + j;
      double d = loadF64(dy.data, dy.dtype, i);
      sumDy += d;
      sumDyX += d * ((loadF64(x.data, x.dtype, i) - mean) * invstd);
    }
  if (dw.data)
    storeF64(dw.data, dw.dtype, ch, sumDyX);
  if (db.data)
    storeF64(db.data, db.dtype, ch, sumDy);
  if (!dx.data)
    return;
  double wc = w.data ? loadF64(w.data, w.dtype, ch) : 1.0;
  double meanDy = sumDy / m, meanDyX = sumDyX / m;
  for (int64_t s0 = 0; s0 < n; ++s0)
    for (int64_t j = 0; j < inner; ++j) {
      int64_t i = (s0 * c + ch) * inner + j;
      double d = loadF64(dy.data, dy.dtype, i);
      double v;
      if (training) {
        double xhat = (loadF64(x.data, x.dtype, i) - mean) * invstd;
        v = wc * invstd * (d - meanDy - xhat * meanDyX);
      } else {
        v = d * wc * invstd;
      }
      storeF64(dx.data, dx.dtype, i, v);
    }
}

/// PyTorch's running-statistics update of channel ch (unbiased batch
/// variance).
AMPC_HD void wideBnUpdateChannel(Buf newMean, Buf newVar, Buf x, Buf rm, Buf rv,
                                 int64_t n, int64_t c, int64_t inner,
                                 int64_t ch, double momentum) {
  double m = static_cast<double>(n * inner);
  double mean, var;
  wideBnStats(x, n, c, inner, ch, mean, var);
  double unbiased = var * m / (m - 1.0);
  storeF64(newMean.data, newMean.dtype, ch,
           (1.0 - momentum) * loadF64(rm.data, rm.dtype, ch) + momentum * mean);
  storeF64(newVar.data, newVar.dtype, ch,
           (1.0 - momentum) * loadF64(rv.data, rv.dtype, ch) +
               momentum * unbiased);
}

// ---------------------------------------------------------------- dropout --

/// y[i] = x[i] * scale where the uniform of draw r's word gi & 3 (gi the
/// element's global index) is >= pMask, else x[i] * 0 (NaN stays NaN).
AMPC_HD void wideDropoutAt(Buf y, Buf x, int64_t i, const Philox4 &r,
                           int64_t gi, float pMask, double scale) {
  bool keep = uniformFromBits(r.v[gi & 3]) >= static_cast<double>(pMask);
  storeF64(y.data, y.dtype, i,
           loadF64(x.data, x.dtype, i) * (keep ? scale : 0.0));
}

// ---------------------------------------------------------------- pooling --

/// The plane offset of the first maximum of window (oy, ox) of plane p
/// (-1: an empty window), NaN counting as the maximum; its value in best.
AMPC_HD int64_t widePoolArgmax(const PoolGeom &g, Buf x, int64_t p, int64_t oy,
                               int64_t ox, double &best) {
  int64_t at = -1;
  best = -INFINITY;
  g.forEachTap(oy, ox, [&](int64_t off) {
    double v = loadF64(x.data, x.dtype, p * g.h * g.w + off);
    if (at < 0 || v > best || (v != v && best == best)) {
      at = off;
      best = v;
    }
  });
  return at;
}

/// Output (oy, ox) of plane p: the window's maximum, or its sum over
/// kh * kw (padding counted).
AMPC_HD double widePoolOut(const PoolGeom &g, Buf x, int64_t p, int64_t oy,
                           int64_t ox) {
  double v = 0.0;
  if (g.isMax) {
    widePoolArgmax(g, x, p, oy, ox, v);
  } else {
    g.forEachTap(oy, ox, [&](int64_t off) {
      v += loadF64(x.data, x.dtype, p * g.h * g.w + off);
    });
    v /= static_cast<double>(g.kh * g.kw);
  }
  return v;
}

// ------------------------------------------------------------------- loss --

/// log-sum-exp of the `classes` f64 logits from base.
AMPC_HD double wideRowLse(Buf logits, int64_t base, int64_t classes) {
  double m = -INFINITY;
  for (int64_t c = 0; c < classes; ++c)
    m = fmax(m, loadF64(logits.data, logits.dtype, base + c));
  double sum = 0.0;
  for (int64_t c = 0; c < classes; ++c)
    sum += exp(loadF64(logits.data, logits.dtype, base + c) - m);
  return m + ::log(sum);
}

/// One row of dlogits = (softmax(row) - onehot(label)) * scale, zeros for
/// label -100.
AMPC_HD void wideCrossEntropyBwdRow(Buf dlogits, Buf logits, int64_t base,
                                    int64_t classes, int64_t label,
                                    double scale) {
  double lse = label == -100 ? 0.0 : wideRowLse(logits, base, classes);
  for (int64_t c = 0; c < classes; ++c) {
    double v = 0.0;
    if (label != -100)
      v = (exp(loadF64(logits.data, logits.dtype, base + c) - lse) -
           (c == label ? 1.0 : 0.0)) *
          scale;
    storeF64(dlogits.data, dlogits.dtype, base + c, v);
  }
}

/// The cross-entropy loss from the rows' terms: those of the rows whose
/// label is not -100, added in row order, over their count. A label outside
/// [0, classes) makes it NaN and sets badLabel (the caller records it).
/// Used by the f32 and the f64 paths alike.
AMPC_HD double crossEntropyMeanOfTerms(Buf labels, int64_t rows,
                                       int64_t classes, const double *terms,
                                       bool &badLabel) {
  double total = 0.0;
  int64_t valid = 0;
  badLabel = false;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label = loadIndex(labels.data, labels.dtype, r);
    if (label == -100)
      continue;
    ++valid;
    if (label < 0 || label >= classes) {
      badLabel = true;
      total = NAN;
      continue;
    }
    total += terms[r];
  }
  return total / static_cast<double>(valid);
}

/// The rows whose label is not -100.
AMPC_HD int64_t crossEntropyValidRows(Buf labels, int64_t rows) {
  int64_t valid = 0;
  for (int64_t r = 0; r < rows; ++r)
    valid += loadIndex(labels.data, labels.dtype, r) != -100;
  return valid;
}

/// Element i of the MSE backward: norm (a - b) g into da and its negation
/// into db (each where given).
AMPC_HD void wideMseBwdAt(Buf da, Buf db, Buf a, Buf b, int64_t i, double norm,
                          double g) {
  double v =
      norm * (loadF64(a.data, a.dtype, i) - loadF64(b.data, b.dtype, i)) * g;
  if (da.data)
    storeF64(da.data, da.dtype, i, v);
  if (db.data)
    storeF64(db.data, db.dtype, i, -v);
}

// ------------------------------------------------------------- optimizers --

/// SGD's f64 learning rate: lr as given times the schedule's factor.
AMPC_HD double wideSgdLr(const SgdScalars &s) {
  return s.lr64 * (s.lrScale ? static_cast<double>(*s.lrScale) : 1.0);
}

/// torch.optim.SGD on element i of an f64 parameter (buf: its f64 momentum
/// buffer, used when s.hasMomentum).
AMPC_HD void wideSgdAt(Buf param, Buf grad, double *buf, const SgdScalars &s,
                       double lr, int64_t i) {
  double p = loadF64(param.data, param.dtype, i);
  double d = loadF64(grad.data, grad.dtype, i);
  if (s.hasWeightDecay)
    d = d + s.weightDecay64 * p;
  if (s.hasMomentum) {
    double m = buf[i] * s.momentum64 + d;
    buf[i] = m;
    d = s.nesterov ? d + s.momentum64 * m : m;
  }
  storeF64(param.data, param.dtype, i, p + -lr * d);
}

/// The per-step constants of AdamW in f64.
struct WideAdamwStep {
  double decay, w, beta2, eps, bc2Sqrt, stepSize;
};

/// AdamW's constants for step `step` (the count after this update); lr
/// times *lrScale (a schedule's factor) where that is given.
AMPC_HD WideAdamwStep wideAdamwStep(double lr, const float *lrScale,
                                    double beta1, double beta2, double eps,
                                    double weightDecay, double step) {
  if (lrScale)
    lr *= static_cast<double>(*lrScale);
  WideAdamwStep a;
  a.decay = 1.0 - lr * weightDecay;
  a.w = 1.0 - beta1;
  a.beta2 = beta2;
  a.eps = eps;
  double bc1 = 1.0 - pow(beta1, step);
  a.bc2Sqrt = sqrt(1.0 - pow(beta2, step));
  a.stepSize = lr / bc1;
  return a;
}

/// torch.optim.AdamW on element i of an f64 parameter, m and v its f64
/// moments.
AMPC_HD void wideAdamwAt(Buf param, Buf grad, double *m, double *v, int64_t i,
                         const WideAdamwStep &a) {
  double p = loadF64(param.data, param.dtype, i) * a.decay;
  double g = loadF64(grad.data, grad.dtype, i);
  double w = a.w;
  // exp_avg.lerp_(grad, 1 - beta1), as torch.lerp computes it.
  m[i] = fabs(w) < 0.5 ? m[i] + w * (g - m[i]) : g - (g - m[i]) * (1.0 - w);
  v[i] = v[i] * a.beta2 + (1.0 - a.beta2) * g * g;
  double denom = sqrt(v[i]) / a.bc2Sqrt + a.eps;
  storeF64(param.data, param.dtype, i, p + -a.stepSize * (m[i] / denom));
}

/// GradScaler's unscale of element i of an f64 gradient: times the f32
/// inverse scale in f64 (unless it is 1); whether the element was
/// non-finite.
AMPC_HD bool wideUnscaleAt(double *g, int64_t i, float inv) {
  bool bad = !(g[i] - g[i] == 0.0);
  if (inv != 1.0f)
    g[i] = g[i] * static_cast<double>(inv);
  return bad;
}

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_WIDE_OPS_H
